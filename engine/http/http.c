/* http.c: the HTTP server: listener, routes, authentication, bodies (see
 * http.h). One thread per connection (libmicrohttpd's), so that a handler
 * may block on the node while it streams; the connection limit bounds the
 * threads, and the node's own queue bound turns into 429. */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <zmq.h>

#include "embed.h"
#include "engine/proto/version.h"
#include "feed.h"
#include "gen.h"
#include "openai.h"
#include "sbuf.h"
#include "tokens.h"

#define KEY_MAX 256
/* Connections at once; past it the listener stops accepting for a while. */
#define CONNECTIONS_MAX 64
/* An idle keep-alive connection is closed after this long. */
#define IDLE_TIMEOUT_S 120
/* How long a request waits for the node's first heartbeat after a start. */
#define STATUS_WAIT_MS 3000
/* Streamed events are copied out in blocks of this size. */
#define STREAM_BLOCK 16384

/* HTTP requests answered, by route, method and status: a fixed table,
 * its cardinality bounded by the routes, four methods and the statuses
 * this server sends; past HTTP_COUNTS_MAX, the rest are dropped (counted
 * in `dropped`). */
#define HTTP_COUNTS_MAX 128
typedef struct http_count {
    int route, method; /* ROUTE_NONE: any other URL; a methods[] index */
    unsigned status;
    uint64_t n;
} http_count;

struct http {
    struct MHD_Daemon *d;
    pthread_mutex_t counts_lock;
    int n_counts;
    http_count counts[HTTP_COUNTS_MAX];
    uint64_t counts_dropped;
    void *zctx;
    int own_zctx;
    char *control;
    char key[KEY_MAX + 1];
    size_t key_len; /* 0: no key */
    feed *feed;
    char *(*metrics_more)(void *ctx);
    void *metrics_ctx;
    atomic_int stopping;
    /* CPU time of the connection threads within their requests: what the
     * HTTP server costs beside the node (make bench reads it per token). */
    atomic_ullong cpu_ns;
    long long started; /* unix seconds, for /v1/models */
    size_t max_body;   /* 0: from the node's context */
    char *names[OAI_NAMES_MAX];
    int n_names; /* 0: the model's own name */
    char *cors;  /* NULL: no CORS */
    const tokenizer *tok;
};

typedef enum route {
    ROUTE_METRICS,
    ROUTE_HEALTH,
    ROUTE_MODELS,
    ROUTE_MODEL,
    ROUTE_PROPS,
    ROUTE_VERSION,
    ROUTE_SLOTS,
    ROUTE_COMPLETIONS,
    ROUTE_CHAT,
    ROUTE_TOKENIZE,
    ROUTE_DETOKENIZE,
    ROUTE_EMBEDDINGS,
    ROUTE_NONE
} route;

static const struct {
    const char *path, *method;
    int prefix; /* path is a prefix: the rest of the URL is an argument */
} routes[ROUTE_NONE] = {
    [ROUTE_METRICS] = {"/metrics", "GET", 0},
    [ROUTE_HEALTH] = {"/health", "GET", 0},
    [ROUTE_MODELS] = {"/v1/models", "GET", 0},
    [ROUTE_MODEL] = {"/v1/models/", "GET", 1},
    [ROUTE_PROPS] = {"/props", "GET", 0},
    [ROUTE_VERSION] = {"/version", "GET", 0},
    [ROUTE_SLOTS] = {"/slots", "GET", 0},
    [ROUTE_COMPLETIONS] = {"/v1/completions", "POST", 0},
    [ROUTE_CHAT] = {"/v1/chat/completions", "POST", 0},
    [ROUTE_TOKENIZE] = {"/tokenize", "POST", 0},
    [ROUTE_DETOKENIZE] = {"/detokenize", "POST", 0},
    [ROUTE_EMBEDDINGS] = {"/v1/embeddings", "POST", 0},
};

/* The methods counted by name; anything else is "other". */
static const char *const methods[] = {"GET", "POST", "OPTIONS", "other"};
#define N_METHODS ((int)(sizeof methods / sizeof *methods))

/* One request on a connection, from its headers to its response. */
typedef struct exchange {
    route rt;
    int method; /* a methods[] index */
    sbuf body;
    size_t limit; /* the body's largest size */
    int too_large;
    uint64_t cpu0; /* the thread's CPU time when the request came */
} exchange;

/* The calling thread's CPU time: a connection's requests all run on its
 * thread (MHD_USE_THREAD_PER_CONNECTION). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- responses ---------------------------------------------------------- */

/* --cors: the origin allowed on every response (browsers read the
 * response only then); Vary, so that caches keep one per origin. */
static void cors_headers(const http *h, struct MHD_Response *r)
{
    if (!h->cors)
        return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", h->cors);
    if (strcmp(h->cors, "*") != 0)
        MHD_add_response_header(r, "Vary", "Origin");
}

/* Queues body (malloc'd, taken; NULL: out of memory, a bare 500). */
static enum MHD_Result respond(const http *h, struct MHD_Connection *c, unsigned status,
                               const char *type, char *body, const char *header, const char *value)
{
    if (!body) {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        type = "text/plain";
        body = strdup("out of memory\n");
        if (!body)
            return MHD_NO;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    cors_headers(h, r);
    if (header)
        MHD_add_response_header(r, header, value);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* An error in OpenAI's shape, with the header its status calls for. */
static enum MHD_Result respond_error(const http *h, struct MHD_Connection *c, const oai_error *e)
{
    const char *header = NULL, *value = NULL;
    /* The node's queue is full (a step or two frees a place), or its ring
     * is down (the head probes it every second). */
    if (e->status == 429 || strcmp(e->code, "ring_down") == 0)
        header = MHD_HTTP_HEADER_RETRY_AFTER, value = "1";
    else if (e->status == 401)
        header = MHD_HTTP_HEADER_WWW_AUTHENTICATE, value = "Bearer";
    return respond(h, c, (unsigned)e->status, "application/json", oai_error_json(e), header, value);
}

static enum MHD_Result fail(const http *h, struct MHD_Connection *c, int status, const char *code,
                            const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum MHD_Result fail(const http *h, struct MHD_Connection *c, int status, const char *code,
                            const char *fmt, ...)
{
    oai_error e;
    char msg[PROTO_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    oai_fail(&e, status, code, NULL, "%s", msg);
    return respond_error(h, c, &e);
}

/* ---- routes ------------------------------------------------------------- */

static route find_route(const char *url)
{
    for (int r = 0; r < ROUTE_NONE; r++) {
        size_t n = strlen(routes[r].path);
        if (routes[r].prefix ? strncmp(url, routes[r].path, n) == 0 && url[n]
                             : strcmp(url, routes[r].path) == 0)
            return (route)r;
    }
    return ROUTE_NONE;
}

/* The node as the API needs it: it must be the head of its ring. */
static int node_model(http *h, proto_status *st, oai_error *e)
{
    if (!h->control)
        return oai_fail(e, 404, "not_found", NULL,
                        "this server exports /metrics only: the API is on the nodes");
    if (feed_status(h->feed, st, STATUS_WAIT_MS) != 0)
        return oai_fail(e, 503, "unavailable", NULL, "the node has not reported its status yet");
    if (st->model.layer_first != 0)
        return oai_fail(e, 404, "not_head", NULL,
                        "this node holds layers %d:%d; the API is served by the head of the ring "
                        "(the stage holding layer 0)",
                        st->model.layer_first, st->model.layer_last);
    return 0;
}

/* The names requests may use: the aliases, else the model's own. */
static oai_model api_model(const http *h, const proto_status *st)
{
    oai_model m = {.chat = CHAT_PLAIN,
                   .n_names = h->n_names ? h->n_names : 1,
                   .max_seqs = st->config.max_seqs};
    if (h->n_names)
        memcpy(m.names, h->names, sizeof m.names);
    else
        m.names[0] = st->model.name;
    chat_format_parse(st->model.chat_template, &m.chat);
    return m;
}

/* The context a request may fill: --max-ctx, else the model's. */
static int context_of(const proto_status *st)
{
    return st->config.max_ctx ? st->config.max_ctx : st->model.seq_len;
}

/* GET routes of the API: /v1/models, /v1/models/{name}, /props, /slots,
 * /version. */
static enum MHD_Result on_get(http *h, struct MHD_Connection *c, route rt, const char *url)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, c, &e);
    oai_model m = api_model(h, &st);
    char *body = NULL;
    if (rt == ROUTE_MODELS)
        body = oai_models(&m, h->started, context_of(&st));
    else if (rt == ROUTE_PROPS)
        body = oai_props(&m, &st, context_of(&st));
    else if (rt == ROUTE_SLOTS)
        body = feed_slots(h->feed);
    else if (rt == ROUTE_VERSION)
        body = json_dumps(json_pack("{s:s}", "version", INFERD_VERSION), JSON_COMPACT);
    else {
        const char *name = url + strlen(routes[ROUTE_MODEL].path);
        for (int i = 0; i < m.n_names && !body; i++)
            if (strcmp(name, m.names[i]) == 0)
                body = oai_model_info(name, h->started, context_of(&st));
        if (!body)
            return fail(h, c, 404, "model_not_found",
                        "The model '%.128s' does not exist: this node serves '%s'", name,
                        m.names[0]);
    }
    return respond(h, c, MHD_HTTP_OK, "application/json", body, NULL, NULL);
}

/* POST /tokenize and /detokenize, with the node's tokenizer. */
static enum MHD_Result on_tokens(http *h, struct MHD_Connection *c, route rt, const sbuf *body)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, c, &e);
    if (!h->tok)
        return fail(h, c, 404, "not_head", "this node holds no tokenizer");
    oai_model m = api_model(h, &st);
    const char *text = body->data ? body->data : "";
    char *out = rt == ROUTE_TOKENIZE ? tokens_tokenize(h->tok, &m, text, body->len, &e)
                                     : tokens_detokenize(h->tok, &m, text, body->len, &e);
    return out ? respond(h, c, MHD_HTTP_OK, "application/json", out, NULL, NULL)
               : respond_error(h, c, &e);
}

/* POST /v1/embeddings: each input an embed request to the node. */
static enum MHD_Result on_embeddings(http *h, struct MHD_Connection *c, const sbuf *body)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, c, &e);
    oai_model m = api_model(h, &st);
    embed_req req;
    if (embed_parse(body->data ? body->data : "", body->len, &m, st.model.dim, &req, &e) != 0)
        return respond_error(h, c, &e);
    gen_env env = {h->zctx, h->control, &h->stopping, h->tok};
    char *out = embed_run(&env, &req, st.model.dim, &e);
    embed_req_free(&req);
    return out ? respond(h, c, MHD_HTTP_OK, "application/json", out, NULL, NULL)
               : respond_error(h, c, &e);
}

/* The largest body taken: --max-body, else what the node's context calls
 * for (the node's own frame limit is the same: engine/node/serve.c). */
static size_t body_limit(const http *h, const proto_status *st)
{
    if (h->max_body)
        return h->max_body;
    return proto_max_body(st->config.max_ctx ? st->config.max_ctx : st->model.seq_len);
}

static enum MHD_Result too_large(const http *h, struct MHD_Connection *c, const exchange *x,
                                 const char *size)
{
    char why[128] = "--max-body";
    if (!h->max_body)
        snprintf(why, sizeof why,
                 "--max-body auto: %d bytes a token of the node's context, plus %d",
                 PROTO_BODY_PER_TOKEN, PROTO_MAX_FRAME);
    return fail(h, c, 413, "too_large", "the body is %s bytes; this node takes at most %zu (%s)",
                size, x->limit, why);
}

static void count_request(http *h, const exchange *x, unsigned status)
{
    pthread_mutex_lock(&h->counts_lock);
    int i = 0;
    while (i < h->n_counts && (h->counts[i].route != (int)x->rt ||
                               h->counts[i].method != x->method || h->counts[i].status != status))
        i++;
    if (i == h->n_counts && i < HTTP_COUNTS_MAX)
        h->counts[h->n_counts++] = (http_count){(int)x->rt, x->method, status, 0};
    if (i < HTTP_COUNTS_MAX)
        h->counts[i].n++;
    else
        h->counts_dropped++;
    pthread_mutex_unlock(&h->counts_lock);
}

/* inferd_http_requests_total: the server's own, so no node label. */
static void put_counts(http *h, sbuf *b)
{
    sbuf_puts(b, "# HELP inferd_http_requests_total HTTP requests answered, by route, method and "
                 "status code (refused ones included).\n"
                 "# TYPE inferd_http_requests_total counter\n");
    pthread_mutex_lock(&h->counts_lock);
    for (int i = 0; i < h->n_counts; i++) {
        const http_count *k = &h->counts[i];
        sbuf_printf(b, "inferd_http_requests_total{route=\"%s\",method=\"%s\",code=\"%u\"} %llu\n",
                    k->route == ROUTE_NONE    ? "other"
                    : k->route == ROUTE_MODEL ? "/v1/models/{name}"
                                              : routes[k->route].path,
                    methods[k->method], k->status, (unsigned long long)k->n);
    }
    sbuf_printf(b,
                "# HELP inferd_http_requests_uncounted_total HTTP requests past the counters' "
                "table.\n# TYPE inferd_http_requests_uncounted_total counter\n"
                "inferd_http_requests_uncounted_total %llu\n"
                "# HELP inferd_http_cpu_seconds_total CPU time the HTTP server's connection "
                "threads spent on requests.\n# TYPE inferd_http_cpu_seconds_total counter\n"
                "inferd_http_cpu_seconds_total %.6f\n",
                (unsigned long long)h->counts_dropped, (double)atomic_load(&h->cpu_ns) / 1e9);
    pthread_mutex_unlock(&h->counts_lock);
}

/* The telemetry's metrics, the server's own, then the caller's
 * (http_opts.metrics_more). */
static char *metrics_text(http *h)
{
    size_t len;
    char *text = feed_metrics(h->feed, &len);
    if (!text)
        return NULL;
    sbuf b = {.data = text, .len = len, .cap = len + 1};
    put_counts(h, &b);
    char *more = h->metrics_more ? h->metrics_more(h->metrics_ctx) : NULL;
    if (more)
        sbuf_puts(&b, more);
    if (h->metrics_more && !more)
        b.failed = 1;
    free(more);
    return sbuf_take(&b, NULL);
}

static enum MHD_Result on_metrics(http *h, struct MHD_Connection *c)
{
    return respond(h, c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", metrics_text(h),
                   NULL, NULL);
}

/* GET /health, from the node's last heartbeat: 200 while it serves; 503
 * before its first heartbeat or its ring's first answer (loading), and
 * while the head's ring is broken (ring_down: STAGE). */
static enum MHD_Result on_health(http *h, struct MHD_Connection *c)
{
    proto_status st;
    json_t *o;
    unsigned status = MHD_HTTP_SERVICE_UNAVAILABLE;
    if (feed_status(h->feed, &st, 0) != 0 ||
        (st.ring_health.known && st.ring_health.state == PROTO_RING_LOADING)) {
        o = json_pack("{s:s}", "status", "loading");
    } else if (st.ring_health.known && st.ring_health.state == PROTO_RING_DOWN) {
        char what[PROTO_NAME_MAX + 16];
        snprintf(what, sizeof what, "ring_down: %s", st.ring_health.stage);
        o = json_pack("{s:s, s:s, s:s}", "status", what, "stage", st.ring_health.stage, "message",
                      st.ring_health.message);
    } else {
        o = json_pack("{s:s}", "status", "ok");
        status = MHD_HTTP_OK;
    }
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return respond(h, c, status, "application/json", body,
                   status == MHD_HTTP_OK ? NULL : MHD_HTTP_HEADER_RETRY_AFTER,
                   status == MHD_HTTP_OK ? NULL : "1");
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    ssize_t n = gen_stream(cls, buf, max);
    if (n == GEN_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return n == GEN_ABORT ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void stream_free(void *cls)
{
    gen_free(cls);
}

static enum MHD_Result stream(const http *h, struct MHD_Connection *c, gen *g)
{
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
                                                               stream_read, g, stream_free);
    if (!r) {
        gen_free(g);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    cors_headers(h, r);
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_completion(http *h, struct MHD_Connection *c, oai_kind kind,
                                     const sbuf *body)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, c, &e);
    oai_model model = api_model(h, &st);
    oai_req req;
    if (oai_parse(kind, body->data ? body->data : "", body->len, &model, &req, &e) != 0)
        return respond_error(h, c, &e);
    int streaming = req.stream;
    oai_reply reply = {kind, kind == OAI_CHAT ? "chatcmpl-" : "cmpl-", req.model,
                       (long long)time(NULL)};
    gen_env env = {h->zctx, h->control, &h->stopping, h->tok};
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    gen *g = NULL;
    if (gen_begin(&g, &env, &req, &reply, ci ? ci->connect_fd : -1, &e) != 0) {
        gen_free(g);
        return e.status ? respond_error(h, c, &e) : MHD_NO;
    }
    if (streaming)
        return stream(h, c, g);
    char *text = gen_complete(g, &e);
    gen_free(g);
    if (!text)
        return e.status ? respond_error(h, c, &e) : MHD_NO;
    return respond(h, c, MHD_HTTP_OK, "application/json", text, NULL, NULL);
}

/* ---- requests ----------------------------------------------------------- */

static int authorised(const http *h, struct MHD_Connection *c)
{
    if (h->key_len == 0)
        return 1;
    const char *auth =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!auth || strncmp(auth, "Bearer ", 7) != 0)
        return 0;
    const char *given = auth + 7;
    size_t len = strlen(given);
    /* Compared in time independent of where the first difference is. */
    unsigned char diff = len != h->key_len;
    for (size_t i = 0; i < h->key_len; i++)
        diff |= (unsigned char)(h->key[i] ^ (i < len ? given[i] : 0));
    return diff == 0;
}

/* A browser's CORS preflight: with --cors, the route's method and the
 * headers clients send (a key, JSON) are allowed for a day; without, it
 * is refused like any method the route does not take. No key is asked:
 * browsers send none with a preflight. */
static enum MHD_Result preflight(const http *h, struct MHD_Connection *c, route rt)
{
    if (!h->cors) {
        oai_error e;
        oai_fail(&e, 405, "method_not_allowed", NULL,
                 "%s takes %s; OPTIONS (CORS preflight) needs --cors", routes[rt].path,
                 routes[rt].method);
        return respond(h, c, 405, "application/json", oai_error_json(&e), MHD_HTTP_HEADER_ALLOW,
                       routes[rt].method);
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    cors_headers(h, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", routes[rt].method);
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, r);
    MHD_destroy_response(r);
    return rc;
}

/* The headers are in: route, method, key, announced size. Returns MHD_YES
 * to read the body, or the verdict already queued. */
static enum MHD_Result on_headers(http *h, struct MHD_Connection *c, exchange *x, const char *url,
                                  const char *method)
{
    x->rt = find_route(url);
    x->method = 0;
    while (x->method < N_METHODS - 1 && strcmp(method, methods[x->method]) != 0)
        x->method++;
    if (x->rt != ROUTE_NONE && strcmp(method, "OPTIONS") == 0)
        return preflight(h, c, x->rt);
    if (x->rt == ROUTE_NONE)
        return fail(h, c, 404, "unknown_url", "Invalid URL (%.8s %.200s)", method, url);
    if (strcmp(method, routes[x->rt].method) != 0) {
        oai_error e;
        oai_fail(&e, 405, "method_not_allowed", NULL, "%s takes %s, not %.16s", routes[x->rt].path,
                 routes[x->rt].method, method);
        return respond(h, c, 405, "application/json", oai_error_json(&e), MHD_HTTP_HEADER_ALLOW,
                       routes[x->rt].method);
    }
    /* A load balancer's health check carries no key: /health says only
     * whether the node serves. */
    if (x->rt == ROUTE_HEALTH)
        return on_health(h, c);
    if (!authorised(h, c))
        return fail(h, c, 401, "invalid_api_key",
                    "missing or wrong API key: send 'Authorization: Bearer KEY' (--api-key)");
    if (x->rt == ROUTE_METRICS)
        return on_metrics(h, c);
    if (!strcmp(routes[x->rt].method, "GET"))
        return on_get(h, c, x->rt, url);
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, c, &e);
    x->limit = body_limit(h, &st);
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
    if (announced > x->limit)
        return too_large(h, c, x, cl);
    /* Read into one buffer of the announced size: the body is never
     * copied as it grows. */
    sbuf_reserve(&x->body, (size_t)announced);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    http *h = cls;
    exchange *x = *con_cls;
    if (!x) {
        if (!(x = calloc(1, sizeof *x)))
            return MHD_NO;
        x->cpu0 = thread_cpu_ns();
        *con_cls = x;
        return on_headers(h, c, x, url, method);
    }
    if (*upload_data_size > 0) {
        if (x->body.len + *upload_data_size > x->limit)
            x->too_large = 1;
        else if (!x->too_large)
            sbuf_put(&x->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (x->too_large)
        return too_large(h, c, x, "more than that");
    if (x->body.failed)
        return fail(h, c, 500, "internal", "out of memory for the body");
    if (x->rt == ROUTE_TOKENIZE || x->rt == ROUTE_DETOKENIZE)
        return on_tokens(h, c, x->rt, &x->body);
    if (x->rt == ROUTE_EMBEDDINGS)
        return on_embeddings(h, c, &x->body);
    return on_completion(h, c, x->rt == ROUTE_CHAT ? OAI_CHAT : OAI_COMPLETION, &x->body);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    exchange *x = *con_cls;
    if (!x)
        return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (ci && ci->http_status)
        count_request(cls, x, ci->http_status);
    uint64_t now = thread_cpu_ns();
    if (now > x->cpu0)
        atomic_fetch_add(&((http *)cls)->cpu_ns, now - x->cpu0);
    sbuf_free(&x->body);
    free(x);
    *con_cls = NULL;
}

/* ---- setup -------------------------------------------------------------- */

/* HOST:PORT into an address; [..] around an IPv6 host. */
static int parse_listen(const char *text, struct sockaddr_storage *ss, char *err, size_t errlen)
{
    const char *colon = strrchr(text, ':');
    char host[256];
    if (!colon || colon == text || strlen(text) >= sizeof host || !colon[1]) {
        snprintf(err, errlen, "%s: expected HOST:PORT (127.0.0.1:8080, [::1]:8080)", text);
        return -1;
    }
    size_t hl = (size_t)(colon - text);
    if (text[0] == '[' && hl >= 2 && text[hl - 1] == ']')
        memcpy(host, text + 1, hl - 2), host[hl - 2] = '\0';
    else
        memcpy(host, text, hl), host[hl] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai;
    int rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", text, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    return 0;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* The key: the file's first line. Like a CURVE secret key, the file must
 * not be readable by group or others. */
static int load_key(http *h, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    FILE *f = fopen(path, "r");
    if (!f || fstat(fileno(f), &sb) != 0) {
        snprintf(err, errlen, "--api-key %s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    if (sb.st_mode & 077) {
        fclose(f);
        snprintf(err, errlen, "--api-key %s: readable by group or others (mode %03o); chmod 600 it",
                 path, (unsigned)(sb.st_mode & 0777));
        return -1;
    }
    char line[KEY_MAX + 2] = "";
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    size_t n = got ? strcspn(line, "\r\n") : 0;
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    if (n == 0 || n > KEY_MAX) {
        snprintf(err, errlen, "--api-key %s: expected the key on the first line (1..%d bytes)",
                 path, KEY_MAX);
        return -1;
    }
    memcpy(h->key, line, n);
    h->key_len = n;
    return 0;
}

static int start_daemon(http *h, const struct sockaddr_storage *ss, char *err, size_t errlen)
{
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, ss,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTIONS_MAX,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen (in use, or not an address of this host)");
        return -1;
    }
    return 0;
}

int http_start(http **out, const http_opts *o, char *warning, size_t warnlen, char *err,
               size_t errlen)
{
    struct sockaddr_storage ss;
    if (warning && warnlen)
        warning[0] = '\0';
    if (parse_listen(o->listen, &ss, err, errlen) != 0)
        return -1;
    http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->started = (long long)time(NULL);
    pthread_mutex_init(&h->counts_lock, NULL);
    h->zctx = o->zctx;
    h->metrics_more = o->metrics_more;
    h->metrics_ctx = o->metrics_ctx;
    h->max_body = o->max_body;
    h->tok = o->tok;
    if (o->n_aliases > OAI_NAMES_MAX) {
        snprintf(err, errlen, "%s: at most %d aliases", o->listen, OAI_NAMES_MAX);
        free(h);
        return -1;
    }
    int oom = 0;
    for (int i = 0; i < o->n_aliases; i++)
        oom |= !(h->names[h->n_names++] = strdup(o->aliases[i]));
    oom |= o->cors && !(h->cors = strdup(o->cors));
    if (!h->zctx) {
        h->zctx = zmq_ctx_new();
        h->own_zctx = 1;
    }
    char why[256] = "out of memory";
    if (oom || !h->zctx || (o->control && !(h->control = strdup(o->control))) ||
        (o->api_key_file && load_key(h, o->api_key_file, why, sizeof why) != 0) ||
        feed_start(&h->feed, h->zctx, o->telemetry, o->n_telemetry, why, sizeof why) != 0 ||
        start_daemon(h, &ss, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", o->listen, why);
        http_stop(h);
        return -1;
    }
    if (!is_loopback(&ss) && h->key_len == 0 && warning)
        snprintf(warning, warnlen,
                 "HTTP listener %s is not loopback and has no --api-key: anyone who reaches it "
                 "can run requests and read metrics",
                 o->listen);
    *out = h;
    return 0;
}

void http_stop(http *h)
{
    if (!h)
        return;
    atomic_store(&h->stopping, 1);
    if (h->d)
        MHD_stop_daemon(h->d);
    feed_stop(h->feed);
    if (h->own_zctx && h->zctx)
        zmq_ctx_term(h->zctx);
    free(h->control);
    for (int i = 0; i < h->n_names; i++)
        free(h->names[i]);
    free(h->cors);
    pthread_mutex_destroy(&h->counts_lock);
    free(h);
}
