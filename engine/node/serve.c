/* serve.c: an `inferd serve` node's sockets and main loop (see node.h for
 * how the server's files divide the work; engine/cmd/cmd_serve.c reads
 * its command line). It sets up what the parts share (node.h), the stage
 * (stage.h) and the head (head.h), and answers status from all three.
 *
 * The node binds a ROUTER for control requests and a PUB for telemetry,
 * and, when it is one stage of a pipeline, a PULL on --listen with a PUSH
 * to --next. One thread polls them all; compute runs on it one step at a
 * time, so no request waits behind more than one step.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "engine/compute/cpu.h"
#include "engine/model/chat.h"
#include "engine/model/gguf.h"
#include "engine/proto/version.h"
#include "engine/sys/clock.h"
#include "engine/sys/memstat.h"
#include "head.h"
#include "head_set.h"
#include "node.h"
#include "serve.h"
#include "stage.h"

#define HEARTBEAT_MS 1000.0

/* Control frames larger than the node allows (frame_limit) still get a
 * too_large reply up to this much more; past it ZeroMQ drops the
 * connection. */
#define CONTROL_MAXMSG ((int64_t)16 << 20)
/* How long the last replies may take to leave when the node stops. */
#define SHUTDOWN_LINGER_MS 1000
/* Where a companion (serve_opts.companion) reaches the node. */
#define INPROC_CONTROL "inproc://inferd-control"
#define INPROC_TELEMETRY "inproc://inferd-telemetry"
/* Reply messages ZeroMQ queues for one control peer before the outbox
 * (outbox.h) holds the rest: with the client's receive queue and the
 * kernel's buffers, what one slow client can leave in flight. */
#define CONTROL_SNDHWM 256
/* The same for the companion's (in-process) connections, and far fewer:
 * ZeroMQ lets a writer go on only each time its reader took half of what
 * the pipe holds, so a client reading slowly through the companion (an
 * HTTP stream) is seen taking replies in steps of that half, and with 256
 * a client taking 2 KB/s would be seen taking none for over --stall-limit. */
#define COMPANION_SNDHWM 16
/* How often replies waiting in the outbox are retried: ZeroMQ says when
 * a socket can take a message, not when one peer's pipe can. */
#define OUTBOX_RETRY_MS 5
/* ZMTP heartbeat on control connections; three missed close one. */
#define CONTROL_HEARTBEAT_MS 5000

/* The server's own state, around what its parts share (nd), the head of
 * its requests and its stage. */
typedef struct server {
    node nd;
    stage *st;
    head *hd;
    void *zctx;
    clients *clients; /* the control socket's connections */
    curve_keypair curve_keys;
    curve_allow *allow;
    curve_zap *zap;
    char warning[PROTO_MESSAGE_MAX];
    double t_start, next_heartbeat;
    unsigned health_seen; /* head_health_changes at the last heartbeat */
    proto_status shape;   /* model.shape and host_id, found once at load */
} server;

/* Set by the signal handler, read by the main loop: a signal handler can
 * only talk to the rest of the program through such a flag. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- replies, events, status ------------------------------------------ */

static void node_status(server *sv, proto_status *s)
{
    const model_config *c = sv->nd.cfg;
    const guard_mem *g = node_mem(&sv->nd, 1);
    memset(s, 0, sizeof *s);
    snprintf(s->version, sizeof s->version, "%s", INFERD_VERSION);
    snprintf(s->cpu_path, sizeof s->cpu_path, "%s", cpu_path_name(cpu_active()));
    snprintf(s->model.name, sizeof s->model.name, "%s", model_name(sv->nd.m));
    snprintf(s->model.fingerprint, sizeof s->model.fingerprint, "%s", model_fingerprint(sv->nd.m));
    snprintf(s->model.format, sizeof s->model.format, "%s", model_format(sv->nd.m));
    snprintf(s->model.arch, sizeof s->model.arch, "llama");
    snprintf(s->model.weight_types, sizeof s->model.weight_types, "%s",
             model_weight_types(sv->nd.m));
    s->model.dim = c->dim;
    s->model.hidden_dim = c->hidden_dim;
    s->model.n_layers = c->n_layers;
    s->model.n_heads = c->n_heads;
    s->model.n_kv_heads = c->n_kv_heads;
    s->model.vocab_size = c->vocab_size;
    s->model.seq_len = c->seq_len;
    s->model.layer_first = sv->nd.o.first;
    s->model.layer_last = sv->nd.o.last;
    /* llama2.c checkpoints carry no chat template; a GGUF's
     * tokenizer.chat_template text is what chat_recognise reads. */
    const char *tmpl = NULL;
    size_t tmpl_len = 0;
    const struct gguf *file = model_gguf(sv->nd.m);
    if (file && gguf_get_str(file, "tokenizer.chat_template", &tmpl, &tmpl_len, NULL, 0) != 0)
        tmpl = NULL;
    snprintf(s->model.chat_template, sizeof s->model.chat_template, "%s",
             chat_format_name(chat_recognise(tmpl, tmpl ? tmpl_len : 0)));
    s->config.threads = sv->nd.o.threads;
    s->config.max_ctx = sv->nd.o.max_ctx;
    s->config.max_seqs = sv->nd.o.max_seqs;
    s->config.pipeline_depth = sv->nd.o.pipeline_depth;
    s->model.head_dim = sv->shape.model.head_dim;
    s->model.shared_classifier = sv->shape.model.shared_classifier;
    s->model.embed_bytes = sv->shape.model.embed_bytes;
    s->model.out_bytes = sv->shape.model.out_bytes;
    s->model.n_layer_bytes = sv->shape.model.n_layer_bytes;
    memcpy(s->model.layer_bytes, sv->shape.model.layer_bytes,
           (size_t)s->model.n_layer_bytes * sizeof s->model.layer_bytes[0]);
    memcpy(s->host_id, sv->shape.host_id, sizeof s->host_id);
    s->memory.budget = g->budget;
    s->memory.used = guard_used(g);
    s->memory.unpaged = g->unpaged;
    s->memory.limit = g->limit;
    s->memory.host_available = g->host_available;
    s->memory.headroom = guard_headroom(g);
    s->memory.weights_bytes = model_stage_bytes(sv->nd.m, sv->nd.o.first, sv->nd.o.last);
    s->memory.rss = g->rss;
    stage_status(sv->st, s);
    if (sv->nd.head) {
        s->active = head_active(sv->hd);
        s->queued = head_queued(sv->hd);
        head_ring_health(sv->hd, s);
    }
    s->uptime_s = (clock_ms() - sv->t_start) / 1000.0;
    s->n_stages = sv->nd.n_members > 0 ? sv->nd.n_members : 1;
    for (int i = 0; i < sv->nd.n_members; i++) {
        if (sv->nd.members[i].first == sv->nd.o.first)
            s->stage = i;
        /* A stage's endpoint is the --next of the stage before it. */
        const member *prev = &sv->nd.members[(i + sv->nd.n_members - 1) % sv->nd.n_members];
        snprintf(s->ring[i], sizeof s->ring[i], "%s", prev->next);
    }
    s->n_ring = sv->nd.n_members;
    s->curve = sv->nd.curve != NULL;
    snprintf(s->warning, sizeof s->warning, "%s", sv->warning);
}

static void node_heartbeat(server *sv)
{
    proto_status s;
    node_status(sv, &s);
    tel_node(sv->nd.tel, &s);
}

/* ---- control requests --------------------------------------------------- */

/* The largest control frame taken: --max-body, else what the context
 * (--max-ctx, else the model's) calls for, so that a prompt filling it
 * fits whether it comes as text or as token ids. */
static size_t frame_limit(const server *sv)
{
    if (sv->nd.o.max_body)
        return sv->nd.o.max_body;
    return proto_max_body(sv->nd.o.max_ctx ? sv->nd.o.max_ctx : sv->nd.cfg->seq_len);
}

static void on_request(server *sv, const peer *from, const void *buf, size_t len)
{
    proto_request req;
    proto_error e;
    if (proto_request_decode_max(buf, len, frame_limit(sv), &req, &e) != 0) {
        node_reply(&sv->nd, from, proto_reply_error(req.id, &e));
        return;
    }
    switch (req.op) {
    case PROTO_OP_STATUS: {
        proto_status s;
        node_status(sv, &s);
        json_t *res = proto_status_json(sv->nd.o.name, &s);
        node_reply(&sv->nd, from, proto_reply_ok(req.id, res));
        json_decref(res);
        break;
    }
    case PROTO_OP_SET:
        head_set(sv->hd, from, &req);
        break;
    case PROTO_OP_GENERATE:
    case PROTO_OP_EVAL:
    case PROTO_OP_QUALITY:
    case PROTO_OP_EMBED:
        /* Nobody would read the tokens of a client already gone. */
        if (!clients_alive(sv->clients, from->conn)) {
            steplog_line(sv->nd.log, "REQ",
                         "%s dropped: its client disconnected before it was read", req.id);
            break;
        }
        head_enqueue(sv->hd, from, &req);
        return; /* req is the job's now */
    case PROTO_OP_CANCEL:
        head_cancel(sv->hd, from, &req);
        break;
    case PROTO_OP_DROP_SESSION:
        head_drop(sv->hd, from, &req);
        break;
    default:
        node_reply_error(&sv->nd, from, req.id, PROTO_E_UNKNOWN_OP, "op %d is not served",
                         (int)req.op);
        break;
    }
    proto_request_free(&req);
}

static void on_client_gone(client_tag conn, void *arg)
{
    server *sv = arg;
    if (sv->nd.head)
        head_client_gone(sv->hd, conn);
}

/* Reads one control message: routing id, an optional empty delimiter
 * (REQ clients), the payload. Only the first parts are kept, but every
 * part is counted, so that the error names the real count. Returns 0 when
 * none is waiting. */
static int control_recv(server *sv)
{
    zmq_msg_t parts[4];
    int n = 0, total = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sv->nd.control, total == 0 ? ZMQ_DONTWAIT : 0) < 0) {
            zmq_msg_close(&m);
            break;
        }
        more = zmq_msg_more(&m);
        total++;
        if (n < 4)
            parts[n++] = m;
        else
            zmq_msg_close(&m);
    }
    if (n == 0)
        return 0;
    /* Connections that closed before this message came are known now
     * (clients.h), so its own is told apart from an earlier one. */
    clients_events(sv->clients, on_client_gone, sv);
    peer from = {.conn = clients_tag(sv->clients, &parts[n - 1])};
    size_t id_len = zmq_msg_size(&parts[0]);
    from.id_len = id_len < sizeof from.id ? id_len : sizeof from.id;
    memcpy(from.id, zmq_msg_data(&parts[0]), from.id_len);
    from.delimiter = total == 3 && zmq_msg_size(&parts[1]) == 0;
    if (total == 2 || from.delimiter) {
        zmq_msg_t *p = &parts[n - 1];
        on_request(sv, &from, zmq_msg_data(p), zmq_msg_size(p));
    } else if (total > 1) {
        node_reply_error(&sv->nd, &from, "", PROTO_E_BAD_JSON,
                         "expected one JSON frame after the routing id, got %d frames", total - 1);
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&parts[i]);
    return 1;
}

/* ---- setup and teardown ------------------------------------------------- */

static void node_close(server *sv)
{
    tel_close(sv->nd.tel);
    ring_close(sv->nd.ring);
    clients_close(sv->clients);
    outbox_free(sv->nd.out);
    if (sv->nd.control)
        zmq_close(sv->nd.control);
    curve_zap_stop(sv->zap);
    if (sv->zctx)
        zmq_ctx_term(sv->zctx);
    curve_allow_free(sv->allow);
    head_free(sv->hd);
    stage_free(sv->st);
    model_free(sv->nd.m);
    steplog_close(sv->nd.log);
}

/* The whole model's bytes, for planners asking the status (from the
 * header alone: nothing more is paged in), and the host's id. What
 * cannot be read is left out of the status, which then says less. */
static void load_shape(server *sv)
{
    proto_status *s = &sv->shape;
    model_config cfg;
    size_t embed, out, *layers = calloc(PROTO_LAYERS_MAX, sizeof *layers);
    char err[256];
    if (layers &&
        model_probe_bytes(sv->nd.o.model, &cfg, &embed, layers, PROTO_LAYERS_MAX, &out, err,
                          sizeof err) == 0 &&
        cfg.n_layers <= PROTO_LAYERS_MAX) {
        s->model.head_dim = cfg.head_dim;
        s->model.shared_classifier = cfg.shared_classifier;
        s->model.embed_bytes = embed;
        s->model.out_bytes = out;
        s->model.n_layer_bytes = cfg.n_layers;
        for (int l = 0; l < cfg.n_layers; l++)
            s->model.layer_bytes[l] = layers[l];
    }
    free(layers);
    if (mem_host_id(s->host_id, sizeof s->host_id) != 0)
        s->host_id[0] = '\0';
}

/* Loads the model and this stage's layers; checks the ring options fit. */
static int node_load(server *sv, char *err, size_t errlen)
{
    serve_opts *o = &sv->nd.o;
    /* Only this stage's layers: a GGUF file's other tensors stay unread. */
    if (model_load_stage(&sv->nd.m, o->model, o->first, o->last, err, errlen) != 0)
        return -1;
    sv->nd.cfg = model_config_of(sv->nd.m);
    int n_layers = sv->nd.cfg->n_layers;
    if (o->last < 0)
        o->last = n_layers;
    if (o->last > n_layers) {
        snprintf(err, errlen, "--layers %d:%d: the model has %d layers", o->first, o->last,
                 n_layers);
        return -1;
    }
    sv->nd.head = o->first == 0;
    sv->nd.tail = o->last == n_layers;
    load_shape(sv);
    if (sv->nd.head && sv->nd.tail && (o->listen || o->next)) {
        snprintf(err, errlen,
                 "this node holds every layer (0:%d): --listen/--next are for "
                 "pipeline stages",
                 n_layers);
        return -1;
    }
    if (!(sv->nd.head && sv->nd.tail) && (!o->listen || !o->next)) {
        snprintf(err, errlen,
                 "layers %d:%d of %d make this node a pipeline stage: it needs "
                 "--listen and --next",
                 o->first, o->last, n_layers);
        return -1;
    }
    if (o->listen && o->curve_secret && !o->next_key) {
        snprintf(err, errlen,
                 "with CURVE a pipeline stage needs --next-key: the public key of "
                 "the stage at --next");
        return -1;
    }
    if (stage_create(&sv->st, &sv->nd, err, errlen) != 0)
        return -1;
    return head_create(&sv->hd, &sv->nd, sv->st, err, errlen);
}

/* A loud warning, also kept for status (security.warning). */
static void node_warn(server *sv, const char *what)
{
    size_t len = strlen(sv->warning);
    snprintf(sv->warning + len, sizeof sv->warning - len, "%s%s", len ? "; " : "", what);
    fprintf(stderr, "\n*** WARNING: %s ***\n\n", what);
    steplog_line(sv->nd.log, "WARNING", "%s", what);
}

/* Sockets anyone on the network can reach. */
static void node_warn_exposed(server *sv)
{
    const char *what[] = {"control socket", "telemetry socket", "ring input (--listen)"};
    const char *eps[] = {sv->nd.o.control, sv->nd.o.telemetry, sv->nd.o.listen};
    char exposed[3 * PROTO_TEXT_MAX];
    size_t used = 0;
    for (int i = 0; i < 3 && !sv->nd.curve; i++)
        if (eps[i] && !proto_endpoint_is_loopback(eps[i]) && used < sizeof exposed)
            used += (size_t)snprintf(exposed + used, sizeof exposed - used, "%s%s %.100s",
                                     used ? ", " : "", what[i], eps[i]);
    if (!used)
        return;
    char warning[PROTO_MESSAGE_MAX];
    snprintf(warning, sizeof warning,
             "%.320s: not loopback and CURVE is off: anyone who reaches it can run requests, "
             "change config, read telemetry or send stage frames (use --curve-secret and "
             "--curve-clients)",
             exposed);
    node_warn(sv, warning);
}

static int node_companion_start(server *sv, char *err, size_t errlen)
{
    const serve_companion *c = sv->nd.o.companion;
    char warning[PROTO_MESSAGE_MAX] = "";
    if (c->start(c->arg, sv->zctx, INPROC_CONTROL, INPROC_TELEMETRY, head_tok(sv->hd), warning,
                 sizeof warning, err, errlen) != 0)
        return -1;
    if (warning[0])
        node_warn(sv, warning);
    return 0;
}

static int node_sockets(server *sv, char *err, size_t errlen)
{
    serve_opts *o = &sv->nd.o;
    sv->zctx = zmq_ctx_new();
    if (!sv->zctx) {
        snprintf(err, errlen, "zmq_ctx_new: %s", zmq_strerror(errno));
        return -1;
    }
    if (o->curve_secret) {
        if (curve_keypair_load(o->curve_secret, 1, &sv->curve_keys, err, errlen) != 0 ||
            curve_allow_load(&sv->allow, o->curve_clients, err, errlen) != 0 ||
            curve_zap_start(&sv->zap, sv->zctx, sv->allow, err, errlen) != 0)
            return -1;
        sv->nd.curve = &sv->curve_keys;
    }
    sv->nd.control = zmq_socket(sv->zctx, ZMQ_ROUTER);
    if (!sv->nd.control) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        return -1;
    }
    int linger = 0, ivl = CONTROL_HEARTBEAT_MS, ttl = 3 * CONTROL_HEARTBEAT_MS;
    int hwm = CONTROL_SNDHWM;
    int64_t maxmsg = CONTROL_MAXMSG + (int64_t)frame_limit(sv);
    if (!(sv->nd.out = outbox_new(sv->nd.control))) {
        snprintf(err, errlen, "out of memory for the control socket's outbox");
        return -1;
    }
    zmq_setsockopt(sv->nd.control, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sv->nd.control, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sv->nd.control, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* A client whose host vanished closes no connection: ZMTP heartbeats
     * notice it (clients answer them by themselves). */
    zmq_setsockopt(sv->nd.control, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(sv->nd.control, ZMQ_HEARTBEAT_TIMEOUT, &ttl, sizeof ttl);
    if (clients_open(&sv->clients, sv->zctx, sv->nd.control, err, errlen) != 0)
        return -1;
    if (sv->nd.curve && curve_server_apply(sv->nd.control, &sv->curve_keys, err, errlen) != 0)
        return -1;
    if (zmq_bind(sv->nd.control, o->control) != 0) {
        snprintf(err, errlen, "--control %s: %s", o->control, zmq_strerror(errno));
        return -1;
    }
    if (tel_open(&sv->nd.tel, sv->zctx, o->telemetry, o->name, sv->nd.curve, err, errlen) != 0)
        return -1;
    if (o->companion) {
        /* An inproc connection takes the mark its endpoint was bound with;
         * setting it back leaves the other connections at theirs. */
        int companion_hwm = COMPANION_SNDHWM;
        zmq_setsockopt(sv->nd.control, ZMQ_SNDHWM, &companion_hwm, sizeof companion_hwm);
        int rc = zmq_bind(sv->nd.control, INPROC_CONTROL), why = errno;
        zmq_setsockopt(sv->nd.control, ZMQ_SNDHWM, &hwm, sizeof hwm);
        if (rc != 0) {
            snprintf(err, errlen, "control %s: %s", INPROC_CONTROL, zmq_strerror(why));
            return -1;
        }
        if (tel_bind(sv->nd.tel, INPROC_TELEMETRY, err, errlen) != 0)
            return -1;
    }
    if (o->listen) {
        /* The widest rows a frame carries: hidden states, and on the head
         * an eval's logits coming back from the tail. */
        int row = sv->nd.head && sv->nd.cfg->vocab_size > sv->nd.cfg->dim ? sv->nd.cfg->vocab_size
                                                                          : sv->nd.cfg->dim;
        size_t max_frame =
            RING_HDR_BYTES + (size_t)PROTO_PREFILL_STEP_MAX * (size_t)row * sizeof(float);
        curve_keypair next;
        ring_curve rc = {.keys = &sv->curve_keys, .next_public = next.public_key};
        if (sv->nd.curve && curve_keypair_load(o->next_key, 0, &next, err, errlen) != 0)
            return -1;
        if (ring_open(&sv->nd.ring, sv->zctx, o->listen, o->next, max_frame,
                      sv->nd.curve ? &rc : NULL, err, errlen) != 0)
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
static int node_loop(server *sv)
{
    while (!stop_signal) {
        double now = clock_ms();
        /* A change of the ring's health goes out at once: consoles and
         * /health see a broken ring without waiting for the second. */
        if (sv->nd.head && head_health_changes(sv->hd) != sv->health_seen) {
            sv->health_seen = head_health_changes(sv->hd);
            sv->next_heartbeat = now;
        }
        if (now >= sv->next_heartbeat) {
            node_heartbeat(sv);
            sv->next_heartbeat = now + HEARTBEAT_MS;
        }
        double wake = sv->next_heartbeat;
        if (sv->nd.head && head_deadline(sv->hd) < wake)
            wake = head_deadline(sv->hd);
        long timeout = sv->nd.head && head_busy(sv->hd) ? 0 : (long)ceil(wake - now);
        if (timeout < 0)
            timeout = 0;
        if (outbox_count(sv->nd.out) > 0 && timeout > OUTBOX_RETRY_MS)
            timeout = OUTBOX_RETRY_MS;
        zmq_pollitem_t items[5] = {
            {.socket = sv->nd.control, .events = ZMQ_POLLIN},
            {.socket = clients_socket(sv->clients), .events = ZMQ_POLLIN},
        };
        int n_items = 2;
        if (tel_socket(sv->nd.tel))
            items[n_items++] =
                (zmq_pollitem_t){.socket = tel_socket(sv->nd.tel), .events = ZMQ_POLLIN};
        if (head_tokenizer_fd(sv->hd) >= 0)
            items[n_items++] =
                (zmq_pollitem_t){.fd = head_tokenizer_fd(sv->hd), .events = ZMQ_POLLIN};
        if (sv->nd.ring)
            items[n_items++] =
                (zmq_pollitem_t){.socket = ring_socket(sv->nd.ring), .events = ZMQ_POLLIN};
        if (zmq_poll(items, n_items, timeout) < 0) {
            if (errno == EINTR)
                continue;
            steplog_line(sv->nd.log, "NODE", "zmq_poll: %s", zmq_strerror(errno));
            fprintf(stderr, "inferd serve: zmq_poll: %s\n", zmq_strerror(errno));
            return -1;
        }
        clients_events(sv->clients, on_client_gone, sv);
        int dropped = outbox_flush(sv->nd.out, clock_ms(), 2.0 * sv->nd.o.stall_limit_ms);
        if (dropped)
            steplog_line(sv->nd.log, "CONTROL",
                         "dropped %d reply frames of clients that took none for %.1f s", dropped,
                         2.0 * sv->nd.o.stall_limit_ms / 1000.0);
        while (control_recv(sv))
            ;
        char why[512];
        if (tel_subscriptions(sv->nd.tel, why, sizeof why) != 0)
            steplog_line(sv->nd.log, "TELEMETRY", "%s", why);
        for (;;) {
            ring_frame f;
            char err[256];
            int rc = ring_recv(sv->nd.ring, &f, err, sizeof err);
            if (rc == 0)
                break;
            if (rc < 0) {
                steplog_line(sv->nd.log, "RING", "dropped a frame: %s", err);
                continue;
            }
            if (sv->nd.head)
                head_on_frame(sv->hd, &f);
            else
                stage_on_frame(sv->st, &f);
            ring_frame_free(&f);
        }
        if (sv->nd.head)
            head_tick(sv->hd);
    }
    return 0;
}

static void node_shutdown(server *sv)
{
    const char *why = stop_signal == SIGINT ? "SIGINT" : stop_signal ? "SIGTERM" : "an error";
    if (sv->nd.head)
        head_shutdown(sv->hd);
    node_event(&sv->nd, PROTO_EV_SHUTDOWN, "", "", NULL, "node '%s' is shutting down (%s)",
               sv->nd.o.name, why);
    steplog_line(sv->nd.log, "NODE", "stop (%s)", why);
    /* Replies queued just now (the shutdown errors) get a bounded time to
     * leave; everything else closes at once. */
    int linger = SHUTDOWN_LINGER_MS;
    zmq_setsockopt(sv->nd.control, ZMQ_LINGER, &linger, sizeof linger);
}

/* A node that could not start: says why and releases what it holds,
 * including the pidfile it wrote. Returns serve_run's status. */
static int start_failed(server *sv, const char *err, const char *pidfile)
{
    fprintf(stderr, "inferd serve: %s\n", err);
    steplog_line(sv->nd.log, "NODE", "failed to start: %s", err);
    node_close(sv);
    if (pidfile)
        unlink(pidfile);
    return 1;
}

int serve_run(const serve_opts *o)
{
    server sv;
    memset(&sv, 0, sizeof sv);
    sv.nd.o = *o;
    char err[512];
    if (sv.nd.o.log && steplog_open(&sv.nd.log, sv.nd.o.log, err, sizeof err) != 0) {
        fprintf(stderr, "inferd serve: %s\n", err);
        return 1;
    }
    sv.t_start = clock_ms();
    if (node_load(&sv, err, sizeof err) != 0 || node_sockets(&sv, err, sizeof err) != 0 ||
        (sv.nd.o.pidfile && write_pidfile(sv.nd.o.pidfile, err, sizeof err) != 0))
        return start_failed(&sv, err, NULL);
    if (sv.nd.o.companion && node_companion_start(&sv, err, sizeof err) != 0)
        return start_failed(&sv, err, sv.nd.o.pidfile);
    node_warn_exposed(&sv);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    steplog_line(sv.nd.log, "NODE",
                 "start name=%s pid=%ld model=%s fingerprint=%s layers=%d:%d control=%s "
                 "telemetry=%s listen=%s next=%s kv_bits=%d threads=%d",
                 sv.nd.o.name, (long)getpid(), model_name(sv.nd.m), model_fingerprint(sv.nd.m),
                 sv.nd.o.first, sv.nd.o.last, sv.nd.o.control, sv.nd.o.telemetry,
                 sv.nd.o.listen ? sv.nd.o.listen : "-", sv.nd.o.next ? sv.nd.o.next : "-",
                 sv.nd.o.kv_bits, sv.nd.o.threads);
    fprintf(stderr, "inferd serve: '%s' ready: layers %d:%d of %s, control %s, telemetry %s\n",
            sv.nd.o.name, sv.nd.o.first, sv.nd.o.last, model_name(sv.nd.m), sv.nd.o.control,
            sv.nd.o.telemetry);

    int rc = node_loop(&sv);
    node_shutdown(&sv);
    if (sv.nd.o.companion)
        sv.nd.o.companion->stop(sv.nd.o.companion->arg);
    node_close(&sv);
    if (sv.nd.o.pidfile)
        unlink(sv.nd.o.pidfile);
    return rc == 0 ? 0 : 1;
}
