/* options.h: how an `inferd serve` node is set up: what its command line
 * (engine/cmd/cmd_serve.c) fills in and the server (serve.c) runs with.
 * Apart from node.h so that the command line sees none of the server's
 * internals. */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>

/* A companion that runs beside the node on threads of its own and talks
 * to it only as a client does (the HTTP server of engine/http): started
 * once the sockets are bound, with the node's ZeroMQ context and the
 * inproc endpoints its control ROUTER and telemetry PUB also bind (no
 * CURVE there: inproc never leaves the process); stopped after the last
 * replies went out and before the sockets close. start may put a warning
 * for `status` (security.warning) in `warning`. */
struct tokenizer;
/* tok: the head's tokenizer (NULL on other stages), only read, valid
 * until stop: the HTTP server's /tokenize and /detokenize. */
typedef struct serve_companion {
    int (*start)(void *arg, void *zctx, const char *control, const char *telemetry,
                 const struct tokenizer *tok, char *warning, size_t warnlen, char *err,
                 size_t errlen);
    void (*stop)(void *arg);
    void *arg;
} serve_companion;

typedef struct serve_opts {
    const char *name;
    const char *model;     /* NULL: embedded */
    const char *tokenizer; /* NULL: embedded */
    const char *control;
    const char *telemetry;
    const char *listen; /* NULL: no ring */
    const char *next;
    const char *log;
    const char *pidfile;
    const char *curve_secret;  /* the node's key file: CURVE on both sockets */
    const char *curve_clients; /* directory of allowed client keys */
    const char *next_key;      /* with CURVE: the --next stage's public key file */
    int first, last;           /* layers held; last -1: to the end */
    size_t mem_limit;          /* 0: auto */
    int max_ctx;               /* 0: no cap */
    size_t max_body;           /* control frames' limit; 0: proto_max_body of the context */
    int threads;
    int prefill_step; /* PROTO_PREFILL_AUTO or positions */
    int kv_bits;
    int max_seqs;       /* requests running at once */
    int pipeline_depth; /* steps in flight around a ring; 0: one per stage */
    double step_timeout_ms;
    double step_target_ms;
    const serve_companion *companion; /* NULL: none */
    double queue_timeout_ms;          /* 0: a queued request waits as long as it takes */
    double stall_limit_ms;            /* a client that takes no frame this long stalls */
} serve_opts;

#endif
