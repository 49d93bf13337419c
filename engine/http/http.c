/* http.c: the HTTP server: listener, routes, authentication, bodies (see
 * http.h). Every connection is on libmicrohttpd's one epoll thread, which
 * never blocks: what waits on the node runs on a worker (work.h) while its
 * connection is suspended, and the guard (guard.h) bounds slow and greedy
 * clients. */
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
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "embed.h"
#include "engine/proto/opt.h"
#include "engine/proto/version.h"
#include "feed.h"
#include "gen.h"
#include "guard.h"
#include "openai.h"
#include "reqhead.h"
#include "sbuf.h"
#include "tokens.h"
#include "work.h"

#define KEY_MAX 256
/* Connections at once, at most (fewer when RLIMIT_NOFILE allows fewer:
 * http_start); past it the listener stops accepting and new clients wait
 * in its backlog. */
#define CONNECTIONS_MAX 16384
/* File descriptors kept for everything but connections (the node's
 * sockets, the model, logs), and per connection (its socket; a request's
 * DEALER and ZeroMQ's own). */
#define FDS_KEPT 256
#define FDS_PER_CONNECTION 2
/* Connections kept for /health and /metrics past the general capacity. */
#define RESERVED_CONNECTIONS 64
/* Requests at once on worker threads (waiting on the node). */
#define WORKERS_MAX 1024
#define LISTEN_BACKLOG 1024
/* An idle keep-alive connection is closed after this long. */
#define IDLE_TIMEOUT_S 120
/* Before the node's first heartbeat, a body is read up to the limit of
 * a context this long (its worker checks the node's own). */
#define CTX_UNKNOWN (1 << 20)
/* How long a request waits for the node's first heartbeat after a start. */
#define STATUS_WAIT_MS 3000

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
    guard *guard;
    work_pool pool;
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
    /* CPU time of the workers, and of the server's thread (its total so
     * far): what the HTTP server costs beside the node (make bench reads
     * it per token). */
    atomic_ullong cpu_ns, server_cpu_ns;
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

/* One request on a connection, from its request line to its response. */
typedef struct exchange {
    http *h;
    route rt;
    int method;   /* a methods[] index */
    int bad_path; /* the raw path has a control character (%00..%1f, %7f) */
    int headed;   /* the headers were taken: the body comes */
    char *url;    /* the decoded path, for a worker (a copy) */
    sbuf body;
    size_t limit; /* the body's largest size */
    int too_large;
    work *w; /* the request's worker, once it has one */
} exchange;

/* What a handler answers: a response to queue, or none (NULL: close). */
typedef struct answer {
    struct MHD_Response *r;
    unsigned status;
} answer;

/* The calling thread's CPU time: a worker's since it began (a thread a
 * request), the server thread's in all. */
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

/* The answer of body (malloc'd, taken; NULL: out of memory, a bare 500).
 * Returns 0 (out of memory: no answer, the connection closes). */
static int respond(const http *h, answer *a, unsigned status, const char *type, char *body,
                   const char *header, const char *value)
{
    if (!body) {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        type = "application/json";
        body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                      "\"param\":null,\"code\":\"internal\"}}");
        if (!body)
            return 0;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return 0;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    cors_headers(h, r);
    if (header)
        MHD_add_response_header(r, header, value);
    a->r = r;
    a->status = status;
    return 0;
}

/* An error in OpenAI's shape, with the header its status calls for. */
static int respond_error(const http *h, answer *a, const oai_error *e)
{
    const char *header = NULL, *value = NULL;
    /* The node's queue is full (a step or two frees a place), its KV
     * cache is (a request ending frees some), its ring is down (the head
     * probes it every second), or the server is at capacity: all
     * temporary, so that clients retry. */
    if (e->status == 429 || e->status == 503)
        header = MHD_HTTP_HEADER_RETRY_AFTER, value = "1";
    else if (e->status == 401)
        header = MHD_HTTP_HEADER_WWW_AUTHENTICATE, value = "Bearer";
    return respond(h, a, (unsigned)e->status, "application/json", oai_error_json(e), header, value);
}

static int fail(const http *h, answer *a, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(const http *h, answer *a, int status, const char *code, const char *fmt, ...)
{
    oai_error e;
    char msg[PROTO_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    oai_fail(&e, status, code, NULL, "%s", msg);
    return respond_error(h, a, &e);
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
static int node_model_within(http *h, proto_status *st, int wait_ms, oai_error *e)
{
    if (!h->control)
        return oai_fail(e, 404, "not_found", NULL,
                        "this server exports /metrics only: the API is on the nodes");
    if (feed_status(h->feed, st, wait_ms) != 0)
        return oai_fail(e, 503, "unavailable", NULL, "the node has not reported its status yet");
    if (st->model.layer_first != 0)
        return oai_fail(e, 404, "not_head", NULL,
                        "this node holds layers %d:%d; the API is served by the head of the ring "
                        "(the stage holding layer 0)",
                        st->model.layer_first, st->model.layer_last);
    return 0;
}

/* On a worker: waits, briefly, for the node's first heartbeat. */
static int node_model(http *h, proto_status *st, oai_error *e)
{
    return node_model_within(h, st, STATUS_WAIT_MS, e);
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
static int on_get(http *h, answer *a, route rt, const char *url)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, a, &e);
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
            return fail(h, a, 404, "model_not_found",
                        "The model '%.128s' does not exist: this node serves '%s'", name,
                        m.names[0]);
    }
    return respond(h, a, MHD_HTTP_OK, "application/json", body, NULL, NULL);
}

/* POST /tokenize and /detokenize, with the node's tokenizer. */
static int on_tokens(http *h, answer *a, route rt, const sbuf *body)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, a, &e);
    if (!h->tok)
        return fail(h, a, 404, "not_head", "this node holds no tokenizer");
    oai_model m = api_model(h, &st);
    const char *text = body->data ? body->data : "";
    char *out = rt == ROUTE_TOKENIZE ? tokens_tokenize(h->tok, &m, text, body->len, &e)
                                     : tokens_detokenize(h->tok, &m, text, body->len, &e);
    return out ? respond(h, a, MHD_HTTP_OK, "application/json", out, NULL, NULL)
               : respond_error(h, a, &e);
}

/* POST /v1/embeddings: each input an embed request to the node. */
static int on_embeddings(http *h, work *w, answer *a, const sbuf *body)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0)
        return respond_error(h, a, &e);
    oai_model m = api_model(h, &st);
    embed_req req;
    if (embed_parse(body->data ? body->data : "", body->len, &m, st.model.dim, &req, &e) != 0)
        return respond_error(h, a, &e);
    gen_env env = {h->zctx, h->control, &h->stopping, h->tok, work_gone(w)};
    char *out = embed_run(&env, &req, st.model.dim, &e);
    embed_req_free(&req);
    if (!out && !e.status)
        return 0; /* the client went away */
    return out ? respond(h, a, MHD_HTTP_OK, "application/json", out, NULL, NULL)
               : respond_error(h, a, &e);
}

/* The largest body taken: --max-body, else what the node's context calls
 * for (the node's own frame limit is the same: engine/node/serve.c). */
static size_t body_limit(const http *h, const proto_status *st)
{
    if (h->max_body)
        return h->max_body;
    return proto_max_body(st->config.max_ctx ? st->config.max_ctx : st->model.seq_len);
}

static int too_large(const http *h, answer *a, const exchange *x, const char *size)
{
    char why[128] = "--max-body";
    if (!h->max_body)
        snprintf(why, sizeof why,
                 "--max-body auto: %d bytes a token of the node's context, plus %d",
                 PROTO_BODY_PER_TOKEN, PROTO_MAX_FRAME);
    return fail(h, a, 413, "too_large", "the body is %s bytes; this node takes at most %zu (%s)",
                size, x->limit, why);
}

static void count_request(http *h, route rt, int method, unsigned status)
{
    pthread_mutex_lock(&h->counts_lock);
    int i = 0;
    while (i < h->n_counts && (h->counts[i].route != (int)rt || h->counts[i].method != method ||
                               h->counts[i].status != status))
        i++;
    if (i == h->n_counts && i < HTTP_COUNTS_MAX)
        h->counts[h->n_counts++] = (http_count){(int)rt, method, status, 0};
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
                "# HELP inferd_http_cpu_seconds_total CPU time the HTTP server's threads "
                "spent (its workers and its connections' thread).\n"
                "# TYPE inferd_http_cpu_seconds_total counter\n"
                "inferd_http_cpu_seconds_total %.6f\n",
                (unsigned long long)h->counts_dropped,
                (double)(atomic_load(&h->cpu_ns) + atomic_load(&h->server_cpu_ns)) / 1e9);
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

static int on_metrics(http *h, answer *a)
{
    return respond(h, a, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", metrics_text(h),
                   NULL, NULL);
}

/* GET /health, from the node's last heartbeat: 200 while it serves; 503
 * before its first heartbeat or its ring's first answer (loading), and
 * while the head's ring is broken (ring_down: STAGE). */
static int on_health(http *h, answer *a)
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
    return respond(h, a, status, "application/json", body,
                   status == MHD_HTTP_OK ? NULL : MHD_HTTP_HEADER_RETRY_AFTER,
                   status == MHD_HTTP_OK ? NULL : "1");
}

/* On the worker: the generation, whole or streamed. */
static void on_completion(http *h, work *w, answer *a, oai_kind kind, const sbuf *body)
{
    proto_status st;
    oai_error e;
    if (node_model(h, &st, &e) != 0) {
        respond_error(h, a, &e);
        return;
    }
    oai_model model = api_model(h, &st);
    oai_req req;
    if (oai_parse(kind, body->data ? body->data : "", body->len, &model, &req, &e) != 0) {
        respond_error(h, a, &e);
        return;
    }
    int streaming = req.stream;
    oai_reply reply = {kind, kind == OAI_CHAT ? "chatcmpl-" : "cmpl-", req.model,
                       (long long)time(NULL)};
    gen_env env = {h->zctx, h->control, &h->stopping, h->tok, work_gone(w)};
    gen *g = NULL;
    if (gen_begin(&g, &env, &req, &reply, work_fd(w), &e) != 0) {
        gen_free(g);
        if (e.status)
            respond_error(h, a, &e);
        return;
    }
    if (!streaming) {
        char *text = gen_complete(g, &e);
        gen_free(g);
        if (text)
            respond(h, a, MHD_HTTP_OK, "application/json", text, NULL, NULL);
        else if (e.status)
            respond_error(h, a, &e);
        return;
    }
    struct MHD_Response *r = work_stream_response(w, g);
    if (!r) {
        gen_free(g);
        return;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    cors_headers(h, r);
    work_answer(w, r, MHD_HTTP_OK);
    work_relay(w);
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
static int preflight(const http *h, answer *a, route rt)
{
    if (!h->cors) {
        oai_error e;
        oai_fail(&e, 405, "method_not_allowed", NULL,
                 "%s takes %s; OPTIONS (CORS preflight) needs --cors", routes[rt].path,
                 routes[rt].method);
        return respond(h, a, 405, "application/json", oai_error_json(&e), MHD_HTTP_HEADER_ALLOW,
                       routes[rt].method);
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return 0;
    cors_headers(h, r);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", routes[rt].method);
    MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    *a = (answer){r, MHD_HTTP_NO_CONTENT};
    return 0;
}

/* Queues the answer (none: the connection closes); close: the connection
 * closes after it. The request's deadline ends here. */
static enum MHD_Result queue(struct MHD_Connection *c, answer *a, int close)
{
    guard_read_done(c);
    if (!a->r)
        return MHD_NO;
    if (close)
        MHD_add_response_header(a->r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(c, a->status, a->r);
    MHD_destroy_response(a->r);
    a->r = NULL;
    return rc;
}

/* On a worker: everything that waits on the node. x is the connection's
 * and may be gone once the answer is handed back. */
static void job(work *w, void *arg)
{
    exchange *x = arg;
    http *h = x->h;
    answer a = {0};
    proto_status st;
    oai_error e;
    int post = strcmp(routes[x->rt].method, "POST") == 0;
    if (post && node_model(h, &st, &e) != 0)
        respond_error(h, &a, &e);
    else if (post && x->body.len > (x->limit = body_limit(h, &st))) {
        char size[32];
        snprintf(size, sizeof size, "%zu", x->body.len);
        too_large(h, &a, x, size);
    } else if (x->rt == ROUTE_TOKENIZE || x->rt == ROUTE_DETOKENIZE)
        on_tokens(h, &a, x->rt, &x->body);
    else if (x->rt == ROUTE_EMBEDDINGS)
        on_embeddings(h, w, &a, &x->body);
    else if (x->rt == ROUTE_COMPLETIONS || x->rt == ROUTE_CHAT)
        on_completion(h, w, &a, x->rt == ROUTE_CHAT ? OAI_CHAT : OAI_COMPLETION, &x->body);
    else
        on_get(h, &a, x->rt, x->url);
    work_answer(w, a.r, a.status); /* a stream's was handed back already */
    atomic_fetch_add(&h->cpu_ns, thread_cpu_ns());
}

static enum MHD_Result to_worker(http *h, struct MHD_Connection *c, exchange *x, const char *url)
{
    guard_read_done(c);
    if (!(x->url = strdup(url)) || work_start(&x->w, &h->pool, c, job, x) != 0) {
        answer a = {0};
        fail(h, &a, 503, "over_capacity",
             "the server has %d requests waiting on the node (or is out of memory); retry",
             WORKERS_MAX);
        return queue(c, &a, 0);
    }
    return MHD_YES;
}

/* A raw path with a control character (%00 would cut the decoded one). */
static int bad_path(const char *uri)
{
    for (const char *p = uri; *p && *p != '?'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 1;
        if (p[0] == '%' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0}, *end;
            unsigned long v = strtoul(hex, &end, 16);
            if (!*end && (v < 0x20 || v == 0x7f))
                return 1;
        }
    }
    return 0;
}

/* Framing the server refuses before anything else. 0: none. Sets *close
 * when the connection cannot go on (a body of unknown framing). */
static int bad_framing(const http *h, struct MHD_Connection *c, answer *a, int *close)
{
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!te)
        return 0;
    *close = 1;
    if (cl)
        return fail(h, a, 400, "bad_request",
                    "both Content-Length and Transfer-Encoding: a request has one or the other "
                    "(RFC 9112 6.3)"),
               1;
    if (strcasecmp(te, "chunked") != 0)
        return fail(h, a, 501, "not_implemented",
                    "Transfer-Encoding '%.64s': only chunked is taken", te),
               1;
    *close = 0;
    return 0;
}

/* Past the per-client limit or the general capacity, only /health and
 * /metrics are served. */
static int over_limit(const http *h, struct MHD_Connection *c, const exchange *x, answer *a)
{
    if (x->rt == ROUTE_HEALTH || x->rt == ROUTE_METRICS)
        return 0;
    int over = guard_over(c);
    if (over & GUARD_OVER_CLIENT)
        return fail(h, a, 429, "too_many_connections",
                    "this client has more connections open than --http-per-client allows"),
               1;
    if (over & GUARD_OVER_CAPACITY)
        return fail(h, a, 503, "over_capacity",
                    "the server holds as many connections as it takes; retry"),
               1;
    return 0;
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
    answer a = {0};
    int close = 0;
    if (x->bad_path) {
        fail(h, &a, 400, "bad_path", "the path has a control character (%%00-%%1F or %%7F)");
        return queue(c, &a, 1);
    }
    if (bad_framing(h, c, &a, &close) || over_limit(h, c, x, &a))
        return queue(c, &a, 1);
    if (x->rt != ROUTE_NONE && strcmp(method, "OPTIONS") == 0)
        preflight(h, &a, x->rt);
    else if (x->rt == ROUTE_NONE)
        fail(h, &a, 404, "unknown_url", "Invalid URL (%.8s %.200s)", method, url);
    else if (strcmp(method, routes[x->rt].method) != 0) {
        oai_error e;
        oai_fail(&e, 405, "method_not_allowed", NULL, "%s takes %s, not %.16s", routes[x->rt].path,
                 routes[x->rt].method, method);
        respond(h, &a, 405, "application/json", oai_error_json(&e), MHD_HTTP_HEADER_ALLOW,
                routes[x->rt].method);
    }
    /* A load balancer's health check carries no key: /health says only
     * whether the node serves. */
    else if (x->rt == ROUTE_HEALTH)
        on_health(h, &a);
    else if (!authorised(h, c))
        fail(h, &a, 401, "invalid_api_key",
             "missing or wrong API key: send 'Authorization: Bearer KEY' (--api-key)");
    else if (x->rt == ROUTE_METRICS)
        on_metrics(h, &a);
    else if (!strcmp(routes[x->rt].method, "GET"))
        return to_worker(h, c, x, url);
    else {
        proto_status st;
        oai_error e;
        /* The server's thread does not wait for the first heartbeat:
         * before it, the body is read up to the largest context's limit
         * and the worker checks it again. */
        if (node_model_within(h, &st, 0, &e) == 0)
            x->limit = body_limit(h, &st);
        else if (e.status == 503)
            x->limit = h->max_body ? h->max_body : proto_max_body(CTX_UNKNOWN);
        else {
            respond_error(h, &a, &e);
            return queue(c, &a, 0);
        }
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long announced = cl ? strtoull(cl, NULL, 10) : 0;
        if (announced > x->limit) {
            too_large(h, &a, x, cl);
            return queue(c, &a, 0);
        }
        /* Read into one buffer of the announced size: the body is never
         * copied as it grows. */
        sbuf_reserve(&x->body, (size_t)announced);
        return MHD_YES;
    }
    return queue(c, &a, 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    http *h = cls;
    exchange *x = *con_cls;
    if (!x) /* on_uri was out of memory */
        return MHD_NO;
    /* Stopping: a new request on a kept-alive connection finds the
     * server gone, as one on a new connection does. */
    if (!x->w && atomic_load(&h->stopping))
        return MHD_NO;
    if (x->w) { /* resumed: the worker's answer */
        answer a = {0};
        a.r = work_take(x->w, &a.status);
        return queue(c, &a, 0);
    }
    if (!x->headed) {
        x->headed = 1;
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
    answer a = {0};
    if (x->too_large)
        too_large(h, &a, x, "more than that");
    else if (x->body.failed)
        fail(h, &a, 500, "internal", "out of memory for the body");
    else
        return to_worker(h, c, x, url);
    return queue(c, &a, 0);
}

/* A request line came: the request's record, and its deadline starts. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    exchange *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->h = cls;
    x->bad_path = bad_path(uri);
    char path[64];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(uri, "?"), uri);
    guard_begin(c, (int)find_route(path));
    return x;
}

/* The guard's tag of a request: its route. */
static int guard_tag(void *ctx, const char *path)
{
    (void)ctx;
    return (int)find_route(path);
}

/* A whole response the guard writes itself (a 408, a head refused before
 * libmicrohttpd parses it), counted: no method is known by then. */
static char *guard_reply(void *ctx, int tag, int status, const char *code, const char *message)
{
    http *h = ctx;
    count_request(h, (route)tag, N_METHODS - 1, (unsigned)status);
    oai_error e;
    oai_fail(&e, status, code, NULL, "%s", message);
    char *body = oai_error_json(&e);
    if (!body)
        return NULL;
    sbuf b = {0};
    const char *reason = MHD_get_reason_phrase_for((unsigned)status);
    sbuf_printf(&b, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n", status,
                reason && reason[0] ? reason : "Error");
    if (h->cors)
        sbuf_printf(&b, "Access-Control-Allow-Origin: %s\r\n", h->cors);
    sbuf_printf(&b, "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", strlen(body), body);
    free(body);
    return sbuf_take(&b, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)why;
    http *h = cls;
    exchange *x = *con_cls;
    atomic_store(&h->server_cpu_ns, thread_cpu_ns());
    if (!x)
        return;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (ci && ci->http_status)
        count_request(h, x->rt, x->method, ci->http_status);
    if (x->w)
        work_release(x->w);
    free(x->url);
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

/* Connections the descriptors allow: the soft RLIMIT_NOFILE raised
 * toward the hard one as far as CONNECTIONS_MAX needs. */
static unsigned connections_max(void)
{
    struct rlimit rl;
    rlim_t want = FDS_KEPT + (rlim_t)CONNECTIONS_MAX * FDS_PER_CONNECTION;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 2 * RESERVED_CONNECTIONS;
    if (rl.rlim_cur < want && rl.rlim_cur != RLIM_INFINITY) {
        struct rlimit up = {rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max,
                            rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = up.rlim_cur;
    }
    rlim_t n = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want
                   ? CONNECTIONS_MAX
                   : (rl.rlim_cur > FDS_KEPT ? (rl.rlim_cur - FDS_KEPT) / FDS_PER_CONNECTION : 0);
    return n < 2 * RESERVED_CONNECTIONS ? 2 * RESERVED_CONNECTIONS : (unsigned)n;
}

static int start_daemon(http *h, const http_opts *o, const struct sockaddr_storage *ss, char *err,
                        size_t errlen)
{
    unsigned limit = connections_max();
    guard_cfg gc = {
        .deadline_s = o->header_timeout_s > 0 ? o->header_timeout_s : IDLE_TIMEOUT_S,
        .deadline_flag = "--http-header-timeout",
        .idle_s = IDLE_TIMEOUT_S,
        .per_client = o->per_client,
        .general = (int)(limit - RESERVED_CONNECTIONS),
        .capacity = (int)limit,
        .reply = guard_reply,
        .tag_of = guard_tag,
        .ctx = h,
    };
    if (guard_start(&h->guard, &gc) != 0) {
        snprintf(err, errlen, "cannot start the connection guard's thread");
        return -1;
    }
    /* The guard listens and hands libmicrohttpd each connection once its
     * first head proved sound (guard.h), so libmicrohttpd has no listener
     * of its own and is woken (ITC) for each connection handed. Its memory
     * a connection is what the guard's head limits leave room in. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQHEAD_MHD_MEMORY,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, guard_notify, h->guard,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, h, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot start libmicrohttpd");
        return -1;
    }
    socklen_t len =
        ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (guard_listen(h->guard, (const struct sockaddr *)ss, len, LISTEN_BACKLOG, h->d) != 0) {
        snprintf(err, errlen, "cannot listen: %s", strerror(errno));
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
    pthread_mutex_init(&h->pool.mu, NULL);
    pthread_cond_init(&h->pool.idle, NULL);
    h->pool.max = WORKERS_MAX;
    h->pool.stall_s = o->stall_limit_s > 0 ? o->stall_limit_s : opt_default_num(OPT_STALL_LIMIT);
    h->pool.stopping = &h->stopping;
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
        start_daemon(h, o, &ss, why, sizeof why) != 0) {
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
    /* No new connection (clients see the server gone at once); the
     * workers end (their waits see the flag) and resume their
     * connections, so that none is left suspended when the daemon stops. */
    guard_quiesce(h->guard);
    work_pool_drain(&h->pool);
    if (h->d)
        MHD_stop_daemon(h->d);
    guard_stop(h->guard);
    feed_stop(h->feed);
    if (h->own_zctx && h->zctx)
        zmq_ctx_term(h->zctx);
    free(h->control);
    for (int i = 0; i < h->n_names; i++)
        free(h->names[i]);
    free(h->cors);
    pthread_mutex_destroy(&h->counts_lock);
    pthread_mutex_destroy(&h->pool.mu);
    pthread_cond_destroy(&h->pool.idle);
    free(h);
}
