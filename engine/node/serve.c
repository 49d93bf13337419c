/* serve.c: an `inferd serve` node's sockets and main loop (see node.h for
 * how the server's files divide the work; engine/cmd/cmd_serve.c reads
 * its command line).
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

/* Control frames larger than the protocol allows still get a too_large
 * reply up to this size; past it ZeroMQ drops the connection. */
#define CONTROL_MAXMSG ((int64_t)16 << 20)
/* How long the last replies may take to leave when the node stops. */
#define SHUTDOWN_LINGER_MS 1000
/* Where a companion (serve_opts.companion) reaches the node. */
#define INPROC_CONTROL "inproc://inferd-control"
#define INPROC_TELEMETRY "inproc://inferd-telemetry"
/* ZMTP heartbeat on control connections; three missed close one. */
#define CONTROL_HEARTBEAT_MS 5000

/* Set by the signal handler, read by the main loop: a signal handler can
 * only talk to the rest of the program through such a flag. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* ---- replies, events, status ------------------------------------------ */

static void node_status(node *nd, proto_status *s)
{
    const model_config *c = nd->cfg;
    const guard_mem *g = node_mem(nd, 1);
    memset(s, 0, sizeof *s);
    snprintf(s->version, sizeof s->version, "%s", INFERD_VERSION);
    snprintf(s->model.name, sizeof s->model.name, "%s", model_name(nd->m));
    snprintf(s->model.fingerprint, sizeof s->model.fingerprint, "%s", model_fingerprint(nd->m));
    snprintf(s->model.format, sizeof s->model.format, "%s", model_format(nd->m));
    snprintf(s->model.arch, sizeof s->model.arch, "llama");
    snprintf(s->model.weight_types, sizeof s->model.weight_types, "%s", model_weight_types(nd->m));
    s->model.dim = c->dim;
    s->model.hidden_dim = c->hidden_dim;
    s->model.n_layers = c->n_layers;
    s->model.n_heads = c->n_heads;
    s->model.n_kv_heads = c->n_kv_heads;
    s->model.vocab_size = c->vocab_size;
    s->model.seq_len = c->seq_len;
    s->model.layer_first = fwd_first(nd->fwd);
    s->model.layer_last = fwd_last(nd->fwd);
    /* llama2.c checkpoints carry no chat template; a GGUF's
     * tokenizer.chat_template text is what chat_recognise reads. */
    const char *tmpl = NULL;
    size_t tmpl_len = 0;
    const struct gguf *file = model_gguf(nd->m);
    if (file && gguf_get_str(file, "tokenizer.chat_template", &tmpl, &tmpl_len, NULL, 0) != 0)
        tmpl = NULL;
    snprintf(s->model.chat_template, sizeof s->model.chat_template, "%s",
             chat_format_name(chat_recognise(tmpl, tmpl ? tmpl_len : 0)));
    s->config.prefill_step = nd->prefill_step;
    s->config.kv_bits = nd->kv_bits;
    s->config.threads = nd->o.threads;
    s->config.max_ctx = nd->o.max_ctx;
    s->config.max_seqs = nd->max_seqs;
    s->config.pipeline_depth = nd->o.pipeline_depth;
    s->memory.budget = g->budget;
    s->memory.used = g->rss;
    s->memory.headroom = guard_headroom(g);
    s->memory.weights_bytes = model_stage_bytes(nd->m, fwd_first(nd->fwd), fwd_last(nd->fwd));
    s->memory.kv_bytes = stage_kv_bytes(nd);
    s->memory.rss = g->rss;
    s->sessions = sess_count(nd->sessions);
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        s->sessions += nd->reqs[i].live && nd->reqs[i].session[0];
    s->active = nd->head ? head_active(nd) : nd->n_reqs;
    s->queued = nd->head ? head_queued(nd) : 0;
    s->busy = busy_ratio(&nd->busy, clock_ms());
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
    case PROTO_OP_EVAL:
        /* Nobody would read the tokens of a client already gone. */
        if (!clients_alive(nd->clients, from->conn)) {
            steplog_line(nd->log, "REQ", "%s dropped: its client disconnected before it was read",
                         req.id);
            break;
        }
        head_enqueue(nd, from, &req);
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

static void on_client_gone(client_tag conn, void *arg)
{
    node *nd = arg;
    if (nd->head)
        head_client_gone(nd, conn);
}

/* Reads one control message: routing id, an optional empty delimiter
 * (REQ clients), the payload. Only the first parts are kept, but every
 * part is counted, so that the error names the real count. Returns 0 when
 * none is waiting. */
static int control_recv(node *nd)
{
    zmq_msg_t parts[4];
    int n = 0, total = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, nd->control, total == 0 ? ZMQ_DONTWAIT : 0) < 0) {
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
    clients_events(nd->clients, on_client_gone, nd);
    peer from = {.conn = clients_tag(nd->clients, &parts[n - 1])};
    size_t id_len = zmq_msg_size(&parts[0]);
    from.id_len = id_len < sizeof from.id ? id_len : sizeof from.id;
    memcpy(from.id, zmq_msg_data(&parts[0]), from.id_len);
    from.delimiter = total == 3 && zmq_msg_size(&parts[1]) == 0;
    if (total == 2 || from.delimiter) {
        zmq_msg_t *p = &parts[n - 1];
        on_request(nd, &from, zmq_msg_data(p), zmq_msg_size(p));
    } else if (total > 1) {
        node_reply_error(nd, &from, "", PROTO_E_BAD_JSON,
                         "expected one JSON frame after the routing id, got %d frames", total - 1);
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
    clients_close(nd->clients);
    if (nd->control)
        zmq_close(nd->control);
    curve_zap_stop(nd->zap);
    if (nd->zctx)
        zmq_ctx_term(nd->zctx);
    curve_allow_free(nd->allow);
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        stage_end(nd, &nd->reqs[i], 0, -1);
    sess_table_free(nd->sessions);
    free(nd->logits);
    fwd_free(nd->fwd);
    pool_free(nd->pool);
    /* A prompt still being tokenized keeps the tokenizer until exit. */
    if (tokwork_stop(nd->tokw) == 0)
        tok_free(nd->tok);
    model_free(nd->m);
    steplog_close(nd->log);
}

/* Loads the model and this stage's layers; checks the ring options fit. */
static int node_load(node *nd, char *err, size_t errlen)
{
    serve_opts *o = &nd->o;
    /* Only this stage's layers: a GGUF file's other tensors stay unread. */
    if (model_load_stage(&nd->m, o->model, o->first, o->last, err, errlen) != 0)
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
    if (o->listen && o->curve_secret && !o->next_key) {
        snprintf(err, errlen,
                 "with CURVE a pipeline stage needs --next-key: the public key of "
                 "the stage at --next");
        return -1;
    }
    /* A GGUF file carries its own vocabulary; --tokenizer still wins. */
    const struct gguf *g = model_gguf(nd->m);
    if (nd->head && ((!o->tokenizer && g ? tok_load_gguf(&nd->tok, g, err, errlen)
                                         : tok_load(&nd->tok, o->tokenizer, err, errlen)) != 0 ||
                     tokwork_start(&nd->tokw, nd->tok, err, errlen) != 0))
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
        /* A decode batch's: one row per running request. */
        nd->logits =
            malloc((size_t)nd->max_seqs * (size_t)nd->cfg->vocab_size * sizeof *nd->logits);
        if (!nd->logits) {
            snprintf(err, errlen, "out of memory for logits");
            return -1;
        }
    }
    return 0;
}

/* A loud warning, also kept for status (security.warning). */
static void node_warn(node *nd, const char *what)
{
    size_t len = strlen(nd->warning);
    snprintf(nd->warning + len, sizeof nd->warning - len, "%s%s", len ? "; " : "", what);
    fprintf(stderr, "\n*** WARNING: %s ***\n\n", what);
    steplog_line(nd->log, "WARNING", "%s", what);
}

/* Sockets anyone on the network can reach. */
static void node_warn_exposed(node *nd)
{
    const char *what[] = {"control socket", "telemetry socket", "ring input (--listen)"};
    const char *eps[] = {nd->o.control, nd->o.telemetry, nd->o.listen};
    char exposed[3 * PROTO_TEXT_MAX];
    size_t used = 0;
    for (int i = 0; i < 3 && !nd->curve; i++)
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
    node_warn(nd, warning);
}

static int node_companion_start(node *nd, char *err, size_t errlen)
{
    const serve_companion *c = nd->o.companion;
    char warning[PROTO_MESSAGE_MAX] = "";
    if (c->start(c->arg, nd->zctx, INPROC_CONTROL, INPROC_TELEMETRY, warning, sizeof warning, err,
                 errlen) != 0)
        return -1;
    if (warning[0])
        node_warn(nd, warning);
    return 0;
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
    int linger = 0, ivl = CONTROL_HEARTBEAT_MS, ttl = 3 * CONTROL_HEARTBEAT_MS;
    int64_t maxmsg = CONTROL_MAXMSG;
    zmq_setsockopt(nd->control, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(nd->control, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* A client whose host vanished closes no connection: ZMTP heartbeats
     * notice it (clients answer them by themselves). */
    zmq_setsockopt(nd->control, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(nd->control, ZMQ_HEARTBEAT_TIMEOUT, &ttl, sizeof ttl);
    if (clients_open(&nd->clients, nd->zctx, nd->control, err, errlen) != 0)
        return -1;
    if (nd->curve && curve_server_apply(nd->control, &nd->curve_keys, err, errlen) != 0)
        return -1;
    if (zmq_bind(nd->control, o->control) != 0) {
        snprintf(err, errlen, "--control %s: %s", o->control, zmq_strerror(errno));
        return -1;
    }
    if (tel_open(&nd->tel, nd->zctx, o->telemetry, o->name, nd->curve ? &nd->curve_keys : NULL, err,
                 errlen) != 0)
        return -1;
    if (o->companion) {
        if (zmq_bind(nd->control, INPROC_CONTROL) != 0) {
            snprintf(err, errlen, "control %s: %s", INPROC_CONTROL, zmq_strerror(errno));
            return -1;
        }
        if (tel_bind(nd->tel, INPROC_TELEMETRY, err, errlen) != 0)
            return -1;
    }
    if (o->listen) {
        /* The widest rows a frame carries: hidden states, and on the head
         * an eval's logits coming back from the tail. */
        int row =
            nd->head && nd->cfg->vocab_size > nd->cfg->dim ? nd->cfg->vocab_size : nd->cfg->dim;
        size_t max_frame =
            RING_HDR_BYTES + (size_t)PROTO_PREFILL_STEP_MAX * (size_t)row * sizeof(float);
        curve_keypair next;
        ring_curve rc = {.keys = &nd->curve_keys, .next_public = next.public_key};
        if (nd->curve && curve_keypair_load(o->next_key, 0, &next, err, errlen) != 0)
            return -1;
        if (ring_open(&nd->ring, nd->zctx, o->listen, o->next, max_frame, nd->curve ? &rc : NULL,
                      err, errlen) != 0)
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
        zmq_pollitem_t items[5] = {
            {.socket = nd->control, .events = ZMQ_POLLIN},
            {.socket = clients_socket(nd->clients), .events = ZMQ_POLLIN},
        };
        int n_items = 2;
        if (tel_socket(nd->tel))
            items[n_items++] =
                (zmq_pollitem_t){.socket = tel_socket(nd->tel), .events = ZMQ_POLLIN};
        if (nd->tokw)
            items[n_items++] = (zmq_pollitem_t){.fd = tokwork_fd(nd->tokw), .events = ZMQ_POLLIN};
        if (nd->ring)
            items[n_items++] =
                (zmq_pollitem_t){.socket = ring_socket(nd->ring), .events = ZMQ_POLLIN};
        if (zmq_poll(items, n_items, timeout) < 0) {
            if (errno == EINTR)
                continue;
            steplog_line(nd->log, "NODE", "zmq_poll: %s", zmq_strerror(errno));
            fprintf(stderr, "inferd serve: zmq_poll: %s\n", zmq_strerror(errno));
            return -1;
        }
        clients_events(nd->clients, on_client_gone, nd);
        while (control_recv(nd))
            ;
        char why[512];
        if (tel_subscriptions(nd->tel, why, sizeof why) != 0)
            steplog_line(nd->log, "TELEMETRY", "%s", why);
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

/* A node that could not start: says why and releases what it holds,
 * including the pidfile it wrote. Returns serve_run's status. */
static int start_failed(node *nd, const char *err, const char *pidfile)
{
    fprintf(stderr, "inferd serve: %s\n", err);
    steplog_line(nd->log, "NODE", "failed to start: %s", err);
    node_close(nd);
    if (pidfile)
        unlink(pidfile);
    return 1;
}

int serve_run(const serve_opts *o)
{
    node nd;
    memset(&nd, 0, sizeof nd);
    nd.o = *o;
    char err[512];
    if (nd.o.log && steplog_open(&nd.log, nd.o.log, err, sizeof err) != 0) {
        fprintf(stderr, "inferd serve: %s\n", err);
        return 1;
    }
    nd.kv_bits = nd.o.kv_bits;
    nd.prefill_step = nd.o.prefill_step;
    nd.max_seqs = nd.o.max_seqs;
    pf_init(&nd.pf);
    nd.t_start = clock_ms();
    busy_init(&nd.busy, nd.t_start);
    /* Ring operation ids start from the clock so that frames a restarted
     * head's predecessor left in flight never match a new operation. */
    nd.next_op = (uint64_t)time(NULL) << 20;
    if (node_load(&nd, err, sizeof err) != 0 || node_sockets(&nd, err, sizeof err) != 0 ||
        (nd.o.pidfile && write_pidfile(nd.o.pidfile, err, sizeof err) != 0))
        return start_failed(&nd, err, NULL);
    if (nd.o.companion && node_companion_start(&nd, err, sizeof err) != 0)
        return start_failed(&nd, err, nd.o.pidfile);
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

    int rc = node_loop(&nd);
    node_shutdown(&nd);
    if (nd.o.companion)
        nd.o.companion->stop(nd.o.companion->arg);
    node_close(&nd);
    if (nd.o.pidfile)
        unlink(nd.o.pidfile);
    return rc == 0 ? 0 : 1;
}
