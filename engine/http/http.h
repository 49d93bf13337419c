/* http.h: the HTTP server of a node (`inferd serve --http`) and of
 * `infertop metrics`, on libmicrohttpd's epoll thread and workers.
 *
 * It serves the OpenAI-compatible API (GET /v1/models[/NAME], POST
 * /v1/completions and /v1/chat/completions) by sending ordinary protocol
 * requests to the node's control socket, llama.cpp's /tokenize,
 * /detokenize, /props and /slots, /version, and GET /metrics (Prometheus)
 * from the telemetry it subscribes to. It knows the node as a client
 * does, through those two sockets, and reads its tokenizer.
 * engine/http/README.md documents the routes, the statuses and the
 * metrics.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>

typedef struct http_opts {
    const char *listen;           /* HOST:PORT: 127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080 */
    const char *api_key_file;     /* NULL: no key; else requests need Authorization: Bearer KEY */
    void *zctx;                   /* the ZeroMQ context of the endpoints; NULL: one of its own */
    const char *control;          /* the node's control endpoint; NULL: /metrics only */
    const char *const *telemetry; /* telemetry endpoints to subscribe to */
    int n_telemetry;
    /* Called at each GET /metrics, on a server thread: more exposition
     * text (malloc'd; NULL when out of memory), served after the
     * telemetry's. NULL: nothing more (`infertop metrics` adds its nodes
     * of other engines). */
    char *(*metrics_more)(void *ctx);
    void *metrics_ctx;
    size_t max_body;            /* --max-body; 0: proto_max_body of the node's context */
    const char *const *aliases; /* --alias: the model's names for the API
                                 * (at most 16); none: its own */
    int n_aliases;
    const char *cors; /* --cors ORIGIN or "*"; NULL: no CORS */
    /* The node's tokenizer, only read (NULL: /tokenize and /detokenize
     * answer not_head): the one in-process thing the server uses beside
     * the node's two sockets, as tokenizing needs no model. */
    const struct tokenizer *tok;
    double header_timeout_s; /* --http-header-timeout: a request's header and body; 0: the idle
                              * timeout */
    int per_client;          /* --http-per-client: connections of one address; 0: no limit */
    double stall_limit_s;    /* --stall-limit: a stream whose client takes nothing this long
                              * ends; 0: the setting's default */
} http_opts;

typedef struct http http;

/* Reads the key, binds and starts serving. A listener other nodes can
 * reach without an API key gets a warning in `warning` ("" otherwise),
 * for the caller to print loudly. Returns 0, or -1 with err filled
 * ("HOST:PORT: why", for the caller to prefix with its flag). */
int http_start(http **out, const http_opts *o, char *warning, size_t warnlen, char *err,
               size_t errlen);
/* Ends every request (those waiting on the node end with 503), then
 * returns when every thread is gone. NULL is fine. */
void http_stop(http *h);

#endif
