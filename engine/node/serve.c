/* serve.c: `inferd serve`, a node of an inference cluster (see node.h for
 * how the server's files divide the work).
 *
 * The node binds a ROUTER for control requests and a PUB for telemetry,
 * and, when it is one stage of a pipeline, a PULL on --listen with a PUSH
 * to --next. One thread polls them all; compute runs on it one step at a
 * time, so no request waits behind more than one step.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "args.h"
#include "clock.h"
#include "commands.h"
#include "memstat.h"
#include "node.h"
#include "version.h"

#define DEFAULT_CONTROL "tcp://127.0.0.1:5555"
#define DEFAULT_TELEMETRY "tcp://127.0.0.1:5556"
#define HEARTBEAT_MS 1000.0

/* Control frames larger than the protocol allows still get a too_large
 * reply up to this size; past it ZeroMQ drops the connection. */
#define CONTROL_MAXMSG ((int64_t)16 << 20)
/* How long the last replies may take to leave when the node stops. */
#define SHUTDOWN_LINGER_MS 1000

/* Set by the signal handler, read by the main loop: a signal handler can
 * only talk to the rest of the program through such a flag. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- options ---------------------------------------------------------- */

enum {
    OPT_NAME = 256,
    OPT_MODEL,
    OPT_TOKENIZER,
    OPT_LAYERS,
    OPT_CONTROL,
    OPT_TELEMETRY,
    OPT_LISTEN,
    OPT_NEXT,
    OPT_MEM_LIMIT,
    OPT_MAX_CTX,
    OPT_THREADS,
    OPT_PREFILL_STEP,
    OPT_KV_BITS,
    OPT_STEP_TIMEOUT,
    OPT_STEP_TARGET,
    OPT_LOG,
    OPT_PIDFILE,
    OPT_CURVE_SECRET,
    OPT_CURVE_CLIENTS,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"name", required_argument, NULL, OPT_NAME},
    {"model", required_argument, NULL, OPT_MODEL},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"control", required_argument, NULL, OPT_CONTROL},
    {"telemetry", required_argument, NULL, OPT_TELEMETRY},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"next", required_argument, NULL, OPT_NEXT},
    {"mem-limit", required_argument, NULL, OPT_MEM_LIMIT},
    {"max-ctx", required_argument, NULL, OPT_MAX_CTX},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"prefill-step", required_argument, NULL, OPT_PREFILL_STEP},
    {"kv-bits", required_argument, NULL, OPT_KV_BITS},
    {"step-timeout", required_argument, NULL, OPT_STEP_TIMEOUT},
    {"step-target-ms", required_argument, NULL, OPT_STEP_TARGET},
    {"log", required_argument, NULL, OPT_LOG},
    {"pidfile", required_argument, NULL, OPT_PIDFILE},
    {"curve-secret", required_argument, NULL, OPT_CURVE_SECRET},
    {"curve-clients", required_argument, NULL, OPT_CURVE_CLIENTS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd serve [OPTIONS]\n"
                 "\n"
                 "Runs an inference node: requests and live config on a ZeroMQ ROUTER,\n"
                 "telemetry on a PUB (engine/PROTOCOL.md). With --layers A:B the node is\n"
                 "one stage of a pipeline ring: it PULLs on --listen and PUSHes to --next;\n"
                 "the stage holding layer 0 (the head) takes the requests.\n"
                 "\n"
                 "  --name NAME          node name in telemetry and errors (default: host name)\n"
                 "  --model SPEC         checkpoint file, \"embedded\" (default), synth:110m,\n"
                 "                       synth:1b or synth:dim=..,hidden=..,layers=..,...\n"
                 "  --tokenizer PATH     llama2.c tokenizer (default: the embedded one)\n"
                 "  --layers A:B         hold layers [A, B) (default: all)\n"
                 "  --control EP         control ROUTER (default " DEFAULT_CONTROL ")\n"
                 "  --telemetry EP       telemetry PUB (default " DEFAULT_TELEMETRY ")\n"
                 "  --listen EP          ring input: hidden states (or, on the head, tokens)\n"
                 "  --next EP            ring output: the next stage's --listen (the tail's\n"
                 "                       --next is the head's --listen)\n"
                 "  --mem-limit N|auto   memory budget in bytes (K/M/G suffixes); the budget\n"
                 "                       is the least of this, the cgroup limit and RSS +\n"
                 "                       MemAvailable (default auto: the last two)\n"
                 "  --max-ctx N          refuse requests whose context would pass N (ctx_limit)\n"
                 "  --threads N          compute threads (default: online CPUs)\n"
                 "  --prefill-step N|auto  positions per prefill chunk (default 512); auto: the\n"
                 "                       largest chunk predicted to stay under --step-target-ms\n"
                 "  --step-target-ms MS  target step time for prefill-step auto (default 2000)\n"
                 "  --kv-bits B          KV cache precision: 32, 16, 8 or 4 (default 16)\n"
                 "  --step-timeout SEC   longest wait for any stage (default 30)\n"
                 "  --log FILE           one line per step ([STEP n] ...) and lifecycle lines\n"
                 "  --pidfile FILE       write the process id here while running\n"
                 "  --curve-secret FILE  node key (inferd keygen): CURVE on control and telemetry\n"
                 "  --curve-clients DIR  allowed client public keys (*.pub)\n"
                 "  --help               this text\n"
                 "\n"
                 "Memory guard: a request is refused (kv_oom) unless the KV bytes it will add\n"
                 "leave a reserve of max(32 MiB, budget/16) free; idle sessions are evicted,\n"
                 "least recently used first, when that makes it fit. SIGTERM stops the node\n"
                 "cleanly: requests in flight get a `shutdown` error.\n");
}

static const args_spec spec;

static int parse_layers(const char *text, serve_opts *o)
{
    int a, b, n;
    if (sscanf(text, "%d:%d%n", &a, &b, &n) != 2 || text[n] != '\0' || a < 0 || b <= a)
        return args_bad(&spec, OPT_LAYERS, text, "A:B with 0 <= A < B");
    o->first = a;
    o->last = b;
    return 0;
}

static int take_option(void *ctx, int opt, const char *arg)
{
    serve_opts *o = ctx;
    unsigned long long v;
    switch (opt) {
    case OPT_NAME:
        if (!arg[0] || strlen(arg) > PROTO_NAME_MAX)
            return args_bad(&spec, opt, arg, "1..64 bytes");
        o->name = arg;
        return 0;
    case OPT_MODEL:
        o->model = arg;
        return 0;
    case OPT_TOKENIZER:
        o->tokenizer = arg;
        return 0;
    case OPT_LAYERS:
        return parse_layers(arg, o);
    case OPT_CONTROL:
        o->control = arg;
        return 0;
    case OPT_TELEMETRY:
        o->telemetry = arg;
        return 0;
    case OPT_LISTEN:
        o->listen = arg;
        return 0;
    case OPT_NEXT:
        o->next = arg;
        return 0;
    case OPT_LOG:
        o->log = arg;
        return 0;
    case OPT_PIDFILE:
        o->pidfile = arg;
        return 0;
    case OPT_CURVE_SECRET:
        o->curve_secret = arg;
        return 0;
    case OPT_CURVE_CLIENTS:
        o->curve_clients = arg;
        return 0;
    case OPT_MEM_LIMIT:
        if (strcmp(arg, "auto") == 0) {
            o->mem_limit = 0;
            return 0;
        }
        if (args_size(&spec, opt, arg, 1ull << 20, 1ull << 50, &v) != 0)
            return -1;
        o->mem_limit = (size_t)v;
        return 0;
    case OPT_MAX_CTX:
        return args_int(&spec, opt, arg, 1, 1 << 30, &o->max_ctx);
    case OPT_THREADS:
        return args_int(&spec, opt, arg, 1, 1024, &o->threads);
    case OPT_PREFILL_STEP:
        if (strcmp(arg, "auto") == 0) {
            o->prefill_step = PROTO_PREFILL_AUTO;
            return 0;
        }
        return args_int(&spec, opt, arg, 1, PROTO_PREFILL_STEP_MAX, &o->prefill_step);
    case OPT_KV_BITS:
        return args_kv_bits(&spec, opt, arg, &o->kv_bits);
    case OPT_STEP_TIMEOUT:
        if (args_double(&spec, opt, arg, 0.1, 86400.0, &o->step_timeout_ms) != 0)
            return -1;
        o->step_timeout_ms *= 1000.0;
        return 0;
    case OPT_STEP_TARGET:
        return args_double(&spec, opt, arg, 1.0, 86400000.0, &o->step_target_ms);
    }
    return -1;
}

static const args_spec spec = {
    .verb = "serve",
    .options = long_options,
    .help = OPT_HELP,
    .usage = usage,
    .take = take_option,
};

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, serve_opts *o)
{
    *o = (serve_opts){
        .control = DEFAULT_CONTROL,
        .telemetry = DEFAULT_TELEMETRY,
        .first = 0,
        .last = -1,
        .threads = args_default_threads(),
        .prefill_step = 512,
        .kv_bits = 16,
        .step_timeout_ms = 30000.0,
        .step_target_ms = 2000.0,
    };
    int rc = args_parse(&spec, argc, argv, o);
    if (rc != 0)
        return rc;
    if (!o->curve_secret != !o->curve_clients) {
        fprintf(stderr, "inferd serve: --curve-secret and --curve-clients go together\n");
        return -1;
    }
    return 0;
}

/* ---- replies, events, status ------------------------------------------ */

void node_reply(node *nd, const peer *to, char *payload)
{
    if (!payload) {
        steplog_line(nd->log, "CONTROL", "out of memory encoding a reply");
        return;
    }
    /* A client that went away is no reason to block: a ROUTER drops what
     * it cannot route. */
    zmq_send(nd->control, to->id, to->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    if (to->delimiter)
        zmq_send(nd->control, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(nd->control, payload, strlen(payload), ZMQ_DONTWAIT);
    free(payload);
}

void node_reply_error(node *nd, const peer *to, const char *id, proto_code code, const char *fmt,
                      ...)
{
    proto_error e = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    node_reply(nd, to, proto_reply_error(id, &e));
}

void node_event(node *nd, proto_event_kind kind, const char *req, const char *code,
                const json_t *detail, const char *fmt, ...)
{
    char msg[PROTO_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tel_event(nd->tel, kind, req, code, detail, "%s", msg);
    steplog_line(nd->log, "EVENT", "%s%s%s: %s", proto_event_name(kind),
                 req && req[0] ? " req=" : "", req ? req : "", msg);
}

const guard_mem *node_mem(node *nd, int fresh)
{
    /* Step messages read memory at most every 100 ms: /proc reads cost
     * more than the rest of a step message. Admission always reads. */
    double now = clock_ms();
    if (fresh || now - nd->mem_t >= 100.0) {
        guard_measure(nd->o.mem_limit, &nd->mem);
        nd->mem_t = now;
    }
    return &nd->mem;
}

json_t *node_identity(const node *nd)
{
    return json_pack("{ss ss ss si si si ss}", "name", nd->o.name, "fingerprint",
                     model_fingerprint(nd->m), "model", model_name(nd->m), "first",
                     fwd_first(nd->fwd), "last", fwd_last(nd->fwd), "n_layers", nd->cfg->n_layers,
                     "next", nd->o.next ? nd->o.next : "");
}

static void node_status(node *nd, proto_status *s)
{
    const model_config *c = nd->cfg;
    const guard_mem *g = node_mem(nd, 1);
    memset(s, 0, sizeof *s);
    snprintf(s->version, sizeof s->version, "%s", INFERD_VERSION);
    snprintf(s->model.name, sizeof s->model.name, "%s", model_name(nd->m));
    snprintf(s->model.fingerprint, sizeof s->model.fingerprint, "%s", model_fingerprint(nd->m));
    s->model.dim = c->dim;
    s->model.hidden_dim = c->hidden_dim;
    s->model.n_layers = c->n_layers;
    s->model.n_heads = c->n_heads;
    s->model.n_kv_heads = c->n_kv_heads;
    s->model.vocab_size = c->vocab_size;
    s->model.seq_len = c->seq_len;
    s->model.layer_first = fwd_first(nd->fwd);
    s->model.layer_last = fwd_last(nd->fwd);
    s->config.prefill_step = nd->prefill_step;
    s->config.kv_bits = nd->kv_bits;
    s->config.threads = nd->o.threads;
    s->config.max_ctx = nd->o.max_ctx;
    s->memory.budget = g->budget;
    s->memory.used = g->rss;
    s->memory.headroom = guard_headroom(g);
    s->memory.weights_bytes = model_stage_bytes(nd->m, fwd_first(nd->fwd), fwd_last(nd->fwd));
    s->memory.kv_bytes = stage_kv_bytes(nd);
    s->memory.rss = g->rss;
    s->sessions = sess_count(nd->sessions) + (nd->cur.live && nd->cur.session[0]);
    s->active = nd->head ? head_active(nd) : nd->cur.live;
    s->uptime_s = (clock_ms() - nd->t_start) / 1000.0;
    s->n_stages = nd->n_members > 0 ? nd->n_members : 1;
    for (int i = 0; i < nd->n_members; i++) {
        if (nd->members[i].first == fwd_first(nd->fwd))
            s->stage = i;
        /* A stage's endpoint is the --next of the stage before it. */
        const member *prev = &nd->members[(i + nd->n_members - 1) % nd->n_members];
        snprintf(s->ring[i], sizeof s->ring[i], "%s", prev->next);
    }
    s->n_ring = nd->n_members;
    s->curve = nd->curve;
    snprintf(s->warning, sizeof s->warning, "%s", nd->warning);
}

static void node_heartbeat(node *nd)
{
    proto_status s;
    node_status(nd, &s);
    tel_node(nd->tel, &s);
}

/* ---- control requests --------------------------------------------------- */

static void on_request(node *nd, const peer *from, const void *buf, size_t len)
{
    proto_request req;
    proto_error e;
    if (proto_request_decode(buf, len, &req, &e) != 0) {
        node_reply(nd, from, proto_reply_error(req.id, &e));
        return;
    }
    switch (req.op) {
    case PROTO_OP_STATUS: {
        proto_status s;
        node_status(nd, &s);
        json_t *res = proto_status_json(nd->o.name, &s);
        node_reply(nd, from, proto_reply_ok(req.id, res));
        json_decref(res);
        break;
    }
    case PROTO_OP_SET:
        head_set(nd, from, &req);
        break;
    case PROTO_OP_GENERATE:
        head_generate(nd, from, &req);
        return; /* req is the job's now */
    case PROTO_OP_CANCEL:
        head_cancel(nd, from, &req);
        break;
    case PROTO_OP_DROP_SESSION:
        head_drop(nd, from, &req);
        break;
    default:
        node_reply_error(nd, from, req.id, PROTO_E_UNKNOWN_OP, "op %d is not served", (int)req.op);
        break;
    }
    proto_request_free(&req);
}

/* Reads one control message: routing id, an optional empty delimiter
 * (REQ clients), the payload. Returns 0 when none is waiting. */
static int control_recv(node *nd)
{
    zmq_msg_t parts[4];
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, nd->control, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            zmq_msg_close(&m);
            break;
        }
        more = zmq_msg_more(&m);
        if (n < 4)
            parts[n++] = m;
        else
            zmq_msg_close(&m);
    }
    if (n == 0)
        return 0;
    peer from = {0};
    size_t id_len = zmq_msg_size(&parts[0]);
    from.id_len = id_len < sizeof from.id ? id_len : sizeof from.id;
    memcpy(from.id, zmq_msg_data(&parts[0]), from.id_len);
    from.delimiter = n == 3 && zmq_msg_size(&parts[1]) == 0;
    if (n == 2 || from.delimiter) {
        zmq_msg_t *p = &parts[n - 1];
        on_request(nd, &from, zmq_msg_data(p), zmq_msg_size(p));
    } else if (n > 1) {
        node_reply_error(nd, &from, "", PROTO_E_BAD_JSON,
                         "expected one JSON frame after the routing id, got %d frames", n - 1);
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&parts[i]);
    return 1;
}

/* ---- setup and teardown ------------------------------------------------- */

static void node_close(node *nd)
{
    tel_close(nd->tel);
    ring_close(nd->ring);
    if (nd->control)
        zmq_close(nd->control);
    curve_zap_stop(nd->zap);
    if (nd->zctx)
        zmq_ctx_term(nd->zctx);
    curve_allow_free(nd->allow);
    if (nd->cur.live)
        stage_end(nd, 0, -1);
    sess_table_free(nd->sessions);
    free(nd->logits);
    fwd_free(nd->fwd);
    pool_free(nd->pool);
    tok_free(nd->tok);
    model_free(nd->m);
    steplog_close(nd->log);
}

/* Loads the model and this stage's layers; checks the ring options fit. */
static int node_load(node *nd, char *err, size_t errlen)
{
    serve_opts *o = &nd->o;
    if (model_load(&nd->m, o->model, err, errlen) != 0)
        return -1;
    nd->cfg = model_config_of(nd->m);
    int n_layers = nd->cfg->n_layers;
    if (o->last < 0)
        o->last = n_layers;
    if (o->last > n_layers) {
        snprintf(err, errlen, "--layers %d:%d: the model has %d layers", o->first, o->last,
                 n_layers);
        return -1;
    }
    nd->head = o->first == 0;
    nd->tail = o->last == n_layers;
    if (nd->head && nd->tail && (o->listen || o->next)) {
        snprintf(err, errlen,
                 "this node holds every layer (0:%d): --listen/--next are for "
                 "pipeline stages",
                 n_layers);
        return -1;
    }
    if (!(nd->head && nd->tail) && (!o->listen || !o->next)) {
        snprintf(err, errlen,
                 "layers %d:%d of %d make this node a pipeline stage: it needs "
                 "--listen and --next",
                 o->first, o->last, n_layers);
        return -1;
    }
    if (nd->head && tok_load(&nd->tok, o->tokenizer, err, errlen) != 0)
        return -1;
    if (pool_create(&nd->pool, o->threads, err, errlen) != 0 ||
        fwd_create(&nd->fwd, nd->m, o->first, o->last, nd->pool, err, errlen) != 0 ||
        sess_table_create(&nd->sessions, err, errlen) != 0)
        return -1;
    /* A shape the KV cache cannot hold is found now, not by each request. */
    kv_cache *probe;
    if (kv_create(&probe, fwd_kv_shape(nd->fwd), o->kv_bits, err, errlen) != 0)
        return -1;
    kv_free(probe);
    if (nd->tail) {
        nd->logits = malloc((size_t)nd->cfg->vocab_size * sizeof *nd->logits);
        if (!nd->logits) {
            snprintf(err, errlen, "out of memory for logits");
            return -1;
        }
    }
    return 0;
}

/* A loud warning for sockets anyone on the network can reach. */
static void node_warn_exposed(node *nd)
{
    const char *exposed = NULL;
    if (!nd->curve && !proto_endpoint_is_loopback(nd->o.control))
        exposed = nd->o.control;
    if (!exposed)
        return;
    snprintf(nd->warning, sizeof nd->warning,
             "control socket %s is not loopback and CURVE is off: anyone who reaches it can run "
             "requests and change config (use --curve-secret and --curve-clients)",
             exposed);
    fprintf(stderr, "\n*** WARNING: %s ***\n\n", nd->warning);
    steplog_line(nd->log, "WARNING", "%s", nd->warning);
}

static int node_sockets(node *nd, char *err, size_t errlen)
{
    serve_opts *o = &nd->o;
    nd->zctx = zmq_ctx_new();
    if (!nd->zctx) {
        snprintf(err, errlen, "zmq_ctx_new: %s", zmq_strerror(errno));
        return -1;
    }
    if (o->curve_secret) {
        if (curve_keypair_load(o->curve_secret, 1, &nd->curve_keys, err, errlen) != 0 ||
            curve_allow_load(&nd->allow, o->curve_clients, err, errlen) != 0 ||
            curve_zap_start(&nd->zap, nd->zctx, nd->allow, err, errlen) != 0)
            return -1;
        nd->curve = 1;
    }
    nd->control = zmq_socket(nd->zctx, ZMQ_ROUTER);
    if (!nd->control) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        return -1;
    }
    int linger = 0;
    int64_t maxmsg = CONTROL_MAXMSG;
    zmq_setsockopt(nd->control, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(nd->control, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (nd->curve && curve_server_apply(nd->control, &nd->curve_keys, err, errlen) != 0)
        return -1;
    if (zmq_bind(nd->control, o->control) != 0) {
        snprintf(err, errlen, "--control %s: %s", o->control, zmq_strerror(errno));
        return -1;
    }
    if (tel_open(&nd->tel, nd->zctx, o->telemetry, o->name, nd->curve ? &nd->curve_keys : NULL, err,
                 errlen) != 0)
        return -1;
    if (o->listen) {
        size_t max_frame =
            RING_HDR_BYTES + (size_t)PROTO_PREFILL_STEP_MAX * (size_t)nd->cfg->dim * sizeof(float);
        if (ring_open(&nd->ring, nd->zctx, o->listen, o->next, max_frame, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static int write_pidfile(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0) {
        snprintf(err, errlen, "--pidfile %s: %s", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    return 0;
}

/* ---- the main loop ------------------------------------------------------ */

/* Returns 0 when a signal stopped it, -1 on a socket error. */
static int node_loop(node *nd)
{
    while (!stop_signal) {
        double now = clock_ms();
        if (now >= nd->next_heartbeat) {
            node_heartbeat(nd);
            nd->next_heartbeat = now + HEARTBEAT_MS;
        }
        double wake = nd->next_heartbeat;
        if (nd->head && head_deadline(nd) < wake)
            wake = head_deadline(nd);
        long timeout = nd->head && head_busy(nd) ? 0 : (long)ceil(wake - now);
        if (timeout < 0)
            timeout = 0;
        zmq_pollitem_t items[2] = {
            {.socket = nd->control, .events = ZMQ_POLLIN},
            {.socket = ring_socket(nd->ring), .events = ZMQ_POLLIN},
        };
        if (zmq_poll(items, nd->ring ? 2 : 1, timeout) < 0) {
            if (errno == EINTR)
                continue;
            steplog_line(nd->log, "NODE", "zmq_poll: %s", zmq_strerror(errno));
            fprintf(stderr, "inferd serve: zmq_poll: %s\n", zmq_strerror(errno));
            return -1;
        }
        while (control_recv(nd))
            ;
        for (;;) {
            ring_frame f;
            char err[256];
            int rc = ring_recv(nd->ring, &f, err, sizeof err);
            if (rc == 0)
                break;
            if (rc < 0) {
                steplog_line(nd->log, "RING", "dropped a frame: %s", err);
                continue;
            }
            if (nd->head)
                head_on_frame(nd, &f);
            else
                stage_on_frame(nd, &f);
            ring_frame_free(&f);
        }
        if (nd->head)
            head_tick(nd);
    }
    return 0;
}

static void node_shutdown(node *nd)
{
    const char *why = stop_signal == SIGINT ? "SIGINT" : stop_signal ? "SIGTERM" : "an error";
    if (nd->head)
        head_shutdown(nd);
    node_event(nd, PROTO_EV_SHUTDOWN, "", "", NULL, "node '%s' is shutting down (%s)", nd->o.name,
               why);
    steplog_line(nd->log, "NODE", "stop (%s)", why);
    /* Replies queued just now (the shutdown errors) get a bounded time to
     * leave; everything else closes at once. */
    int linger = SHUTDOWN_LINGER_MS;
    zmq_setsockopt(nd->control, ZMQ_LINGER, &linger, sizeof linger);
}

int cmd_serve(int argc, char **argv)
{
    node nd;
    memset(&nd, 0, sizeof nd);
    int rc = parse_options(argc, argv, &nd.o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char host[PROTO_NAME_MAX + 1] = "inferd";
    if (!nd.o.name) {
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        nd.o.name = host;
    }
    char err[512];
    if (nd.o.log && steplog_open(&nd.log, nd.o.log, err, sizeof err) != 0) {
        fprintf(stderr, "inferd serve: %s\n", err);
        return 1;
    }
    nd.kv_bits = nd.o.kv_bits;
    nd.prefill_step = nd.o.prefill_step;
    pf_init(&nd.pf);
    nd.t_start = clock_ms();
    /* Ring operation ids start from the clock so that frames a restarted
     * head's predecessor left in flight never match a new operation. */
    nd.next_op = (uint64_t)time(NULL) << 20;
    if (node_load(&nd, err, sizeof err) != 0 || node_sockets(&nd, err, sizeof err) != 0 ||
        (nd.o.pidfile && write_pidfile(nd.o.pidfile, err, sizeof err) != 0)) {
        fprintf(stderr, "inferd serve: %s\n", err);
        steplog_line(nd.log, "NODE", "failed to start: %s", err);
        node_close(&nd);
        return 1;
    }
    node_warn_exposed(&nd);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    steplog_line(nd.log, "NODE",
                 "start name=%s pid=%ld model=%s fingerprint=%s layers=%d:%d control=%s "
                 "telemetry=%s listen=%s next=%s kv_bits=%d threads=%d",
                 nd.o.name, (long)getpid(), model_name(nd.m), model_fingerprint(nd.m), nd.o.first,
                 nd.o.last, nd.o.control, nd.o.telemetry, nd.o.listen ? nd.o.listen : "-",
                 nd.o.next ? nd.o.next : "-", nd.kv_bits, nd.o.threads);
    fprintf(stderr, "inferd serve: '%s' ready: layers %d:%d of %s, control %s, telemetry %s\n",
            nd.o.name, nd.o.first, nd.o.last, model_name(nd.m), nd.o.control, nd.o.telemetry);

    rc = node_loop(&nd);
    node_shutdown(&nd);
    node_close(&nd);
    if (nd.o.pidfile)
        unlink(nd.o.pidfile);
    return rc == 0 ? 0 : 1;
}
