/* stress_wire.c: the stress runner's side of the wire. One DEALER to the
 * head carries every request (replies are matched by id), one SUB hears
 * every node's telemetry. What comes back is recorded as it arrives: each
 * step message as a step row (attributed to the runner's request by its
 * id), each event, each ended request with its client-side timings and the
 * node's stats. Silence is a failure too: a request that hears nothing
 * (no frame, no step) for the timeout ends as `timeout`, and a node
 * without a heartbeat for 3 s is down. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "clock.h"
#include "stress_int.h"

/* ---- connecting ---- */

static int node_status(stress_run *r, st_node *n, char *err, size_t errlen)
{
    client *c;
    proto_reply rep;
    char why[512];
    if (client_open(&c, r->zctx, n->ep.control, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "node at %s: %s", n->ep.control, why);
        return -1;
    }
    int got = client_call(c, "status", NULL, &rep, 3000, why, sizeof why);
    client_close(c);
    if (got <= 0) {
        snprintf(err, errlen, "node at %s: %s", n->ep.control,
                 got == 0 ? "no answer to status within 3 s" : why);
        return -1;
    }
    int rc = 0;
    const char *name = json_string_value(json_object_get(rep.json, "node"));
    if (!rep.ok) {
        snprintf(err, errlen, "node at %s: status: %s: %s", n->ep.control, rep.code, rep.message);
        rc = -1;
    } else if (!name || proto_status_from_json(rep.json, &n->status, why, sizeof why) != 0) {
        snprintf(err, errlen, "node at %s: status reply: %s", n->ep.control,
                 name ? why : "no node name");
        rc = -1;
    } else {
        snprintf(n->name, sizeof n->name, "%s", name);
    }
    proto_reply_free(&rep);
    return rc;
}

static int by_first_layer(const void *a, const void *b)
{
    const st_node *x = a, *y = b;
    return (x->status.model.layer_first > y->status.model.layer_first) -
           (x->status.model.layer_first < y->status.model.layer_first);
}

/* The nodes must be one whole ring: their layer ranges chain from 0 to the
 * model's last layer (a node learns its stage index only from its first
 * request, so layers are what orders them), under distinct names
 * (telemetry is told apart by name). */
static int check_ring(stress_run *r, char *err, size_t errlen)
{
    qsort(r->nodes, (size_t)r->n_nodes, sizeof r->nodes[0], by_first_layer);
    int next = 0;
    for (int i = 0; i < r->n_nodes; i++) {
        const st_node *n = &r->nodes[i];
        if (n->status.model.layer_first != next) {
            snprintf(err, errlen,
                     next == 0 ? "no node given holds layer 0 (the head); the first is '%s' "
                                 "(layers %d:%d)"
                               : "node '%s' holds layers %d:%d, expected layers from %d: the "
                                 "nodes given are not one whole ring",
                     n->name, n->status.model.layer_first, n->status.model.layer_last, next);
            return -1;
        }
        next = n->status.model.layer_last;
        for (int j = 0; j < i; j++)
            if (strcmp(n->name, r->nodes[j].name) == 0) {
                snprintf(err, errlen, "two nodes are named '%s'", n->name);
                return -1;
            }
    }
    if (next != r->nodes[0].status.model.n_layers) {
        snprintf(err, errlen,
                 "the nodes given hold layers 0:%d of a model of %d: every stage of the ring "
                 "is needed",
                 next, r->nodes[0].status.model.n_layers);
        return -1;
    }
    return 0;
}

static int open_telemetry(stress_run *r, char *err, size_t errlen)
{
    int linger = 0, hwm = 200000;
    r->sub = zmq_socket(r->zctx, ZMQ_SUB);
    if (!r->sub) {
        snprintf(err, errlen, "zmq: %s", zmq_strerror(errno));
        return -1;
    }
    /* A deep queue: a burst of steps must not be lost while the runner
     * is busy recording. */
    zmq_setsockopt(r->sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(r->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(r->sub, ZMQ_SUBSCRIBE, "", 0);
    for (int i = 0; i < r->n_nodes; i++)
        if (zmq_connect(r->sub, r->nodes[i].ep.telemetry) != 0) {
            snprintf(err, errlen, "telemetry %s: %s", r->nodes[i].ep.telemetry,
                     zmq_strerror(errno));
            return -1;
        }
    return 0;
}

int st_connect(stress_run *r, char *err, size_t errlen)
{
    r->zctx = zmq_ctx_new();
    if (!r->zctx) {
        snprintf(err, errlen, "zmq: %s", zmq_strerror(errno));
        return -1;
    }
    r->n_nodes = r->target.n_nodes;
    for (int i = 0; i < r->n_nodes; i++) {
        r->nodes[i].ep = r->target.nodes[i];
        if (node_status(r, &r->nodes[i], err, errlen) != 0)
            return -1;
        r->nodes[i].kv_bits = r->nodes[i].status.config.kv_bits;
        r->nodes[i].prefill_step = r->nodes[i].status.config.prefill_step;
    }
    if (check_ring(r, err, errlen) != 0 || open_telemetry(r, err, errlen) != 0)
        return -1;
    char why[512];
    if (client_open(&r->ctl, r->zctx, r->nodes[0].ep.control, NULL, why, sizeof why) != 0) {
        snprintf(err, errlen, "head at %s: %s", r->nodes[0].ep.control, why);
        return -1;
    }
    /* A SUB hears nothing until its subscription has reached the PUB:
     * wait for a heartbeat of every node before anything is sent. */
    double deadline = clock_ms() + 5000.0;
    for (;;) {
        int missing = -1;
        for (int i = 0; i < r->n_nodes && missing < 0; i++)
            if (r->nodes[i].seen_ms == 0)
                missing = i;
        if (missing < 0)
            return 0;
        if (clock_ms() > deadline) {
            snprintf(err, errlen, "no telemetry from node '%s' at %s within 5 s",
                     r->nodes[missing].name, r->nodes[missing].ep.telemetry);
            return -1;
        }
        if (st_aborted(r)) {
            snprintf(err, errlen, "aborted while connecting");
            return -1;
        }
        if (st_pump(r, 100, err, errlen) != 0)
            return -1;
    }
}

void st_disconnect(stress_run *r)
{
    for (int i = 0; i < r->n_inflight; i++)
        free(r->inflight[i].itl);
    r->n_inflight = 0;
    client_close(r->ctl);
    r->ctl = NULL;
    if (r->sub)
        zmq_close(r->sub);
    r->sub = NULL;
    if (r->zctx)
        zmq_ctx_term(r->zctx);
    r->zctx = NULL;
}

char *st_cluster_json(const stress_run *r)
{
    json_t *nodes = json_array();
    for (int i = 0; nodes && i < r->n_nodes; i++) {
        const st_node *n = &r->nodes[i];
        json_array_append_new(nodes, json_pack("{ss s[ii] ss ss}", "name", n->name, "layers",
                                               n->status.model.layer_first,
                                               n->status.model.layer_last, "control",
                                               n->ep.control, "telemetry", n->ep.telemetry));
    }
    const proto_status *h = &r->nodes[0].status;
    json_t *o = json_pack("{ss ss ss ss so*}", "name", r->target.cluster[0] ? r->target.cluster : "local",
                          "model", h->model.name, "fingerprint", h->model.fingerprint, "engine",
                          h->version, "nodes", nodes);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* ---- recording ---- */

static st_node *node_named(stress_run *r, const char *name)
{
    for (int i = 0; i < r->n_nodes; i++)
        if (strcmp(r->nodes[i].name, name) == 0)
            return &r->nodes[i];
    return NULL;
}

void st_event(stress_run *r, const char *node, const char *kind, json_t *detail)
{
    char *text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
    store_event e = {.run = r->run, .node = node, .kind = kind, .detail = text};
    if (r->run > 0)
        store_event_add(r->db, &e);
    free(text);
    json_decref(detail);
}

static const st_req *req_by_id(const stress_run *r, const char *id)
{
    for (int i = 0; i < r->n_inflight; i++)
        if (strcmp(r->inflight[i].id, id) == 0)
            return &r->inflight[i];
    return NULL;
}

/* The runner's request index and leg of a request id; 0 when not ours. */
static int idmap_find(const stress_run *r, const char *id, int64_t *idx, int *leg)
{
    for (int i = 0; i < ST_IDMAP; i++)
        if (r->idmap[i].id[0] && strcmp(r->idmap[i].id, id) == 0) {
            *idx = r->idmap[i].idx;
            *leg = r->idmap[i].leg;
            return 1;
        }
    return 0;
}

static double or_unknown(const json_t *stats, const char *key)
{
    const json_t *v = json_object_get(stats, key);
    return json_is_number(v) ? json_number_value(v) : -1.0;
}

static double mean_itl(const st_req *q)
{
    double s = 0.0;
    for (int i = 0; i < q->n_tokens - 1; i++)
        s += q->itl[i];
    return q->n_tokens > 1 ? s / (q->n_tokens - 1) : -1.0;
}

/* The inter-token latencies of one request, which the requests table has
 * no columns for: p50/p99 go in a `request` event. */
static void record_itl(stress_run *r, st_req *q, const json_t *stats)
{
    int n = q->n_tokens - 1;
    if (n < 1)
        return;
    double p50 = stress_percentile(q->itl, (size_t)n, 50);
    double p99 = stress_percentile(q->itl, (size_t)n, 99);
    double max = q->itl[n - 1]; /* sorted by the percentiles */
    json_t *d = json_pack("{sI si sf sf sf}", "request", (json_int_t)q->idx, "itl_count", n,
                          "itl_p50_ms", p50, "itl_p99_ms", p99, "itl_max_ms", max);
    if (d && stats)
        json_object_set(d, "node_stats", (json_t *)stats);
    st_event(r, r->nodes[0].name, "request", d);
}

/* Ends inflight[i]: records its row and hands its outcome to the leg. ok:
 * stats is the node's; else code and message say why. */
static void finish(stress_run *r, int i, int ok, const json_t *stats, const char *code,
                   const char *message)
{
    st_req *q = &r->inflight[i];
    double now = clock_ms();
    st_outcome out = {.idx = q->idx, .ok = ok, .ctx_before = q->ctx_before};
    json_int_t ctx = json_integer_value(json_object_get(stats, "ctx"));
    out.ctx_after = ok && ctx > 0 ? ctx : q->ctx_target;
    out.gen_tokens = q->n_tokens;
    out.ttft_ms = q->t_first > 0 ? q->t_first - q->t_sent : -1.0;
    out.e2e_ms = now - q->t_sent;
    out.decode_tps = ok ? or_unknown(stats, "decode_tps") : -1.0;
    snprintf(out.code, sizeof out.code, "%s", ok ? "" : code);
    snprintf(out.message, sizeof out.message, "%s", ok ? "" : message);

    store_request row = {
        .run = r->run,
        .leg = q->leg,
        .idx = q->idx,
        .session = q->session[0] ? q->session : NULL,
        .ctx_before = q->ctx_before,
        .ctx_after = out.ctx_after,
        .prompt_tokens = ok ? json_integer_value(json_object_get(stats, "prompt_tokens"))
                            : q->prompt_tokens,
        .gen_tokens = q->n_tokens,
        .ttft_ms = out.ttft_ms,
        .prefill_ms = ok ? or_unknown(stats, "prefill_ms") : -1.0,
        .prefill_tps = ok ? or_unknown(stats, "prefill_tps") : -1.0,
        .decode_tps = out.decode_tps,
        .tpot_ms = mean_itl(q),
        .e2e_ms = out.e2e_ms,
        .ok = ok,
        .error_code = ok ? NULL : code,
        .error_message = ok ? NULL : message,
    };
    store_request_add(r->db, &row);
    record_itl(r, q, stats);

    if (ok) {
        r->ok_requests++;
        r->gen_tokens_ok += q->n_tokens;
    } else {
        r->failed_requests++;
    }
    r->t_last_end = now;
    if (r->n_done < ST_INFLIGHT_MAX)
        r->done[r->n_done++] = out;
    free(q->itl);
    r->inflight[i] = r->inflight[--r->n_inflight];
}

/* Asks the head to drop a request the runner gave up on; its late reply
 * is ignored (no request in flight has its id). */
static void cancel(stress_run *r, const char *id)
{
    char err[256];
    json_t *a = json_pack("{ss}", "target", id);
    if (a)
        client_send(r->ctl, "cancel", a, NULL, 0, err, sizeof err);
    json_decref(a);
}

void st_end_all(stress_run *r, const char *code, const char *message)
{
    while (r->n_inflight > 0) {
        cancel(r, r->inflight[0].id);
        finish(r, 0, 0, NULL, code, message);
    }
}

int st_send(stress_run *r, json_t *args, int64_t ctx_before, int64_t ctx_target,
            int prompt_tokens, int gen, char *err, size_t errlen)
{
    if (r->n_inflight == ST_INFLIGHT_MAX) {
        snprintf(err, errlen, "%d requests already in flight", ST_INFLIGHT_MAX);
        return -1;
    }
    st_req *q = &r->inflight[r->n_inflight];
    memset(q, 0, sizeof *q);
    q->itl = malloc((size_t)(gen > 0 ? gen : 1) * sizeof *q->itl);
    if (!q->itl) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (client_send(r->ctl, "generate", args, q->id, sizeof q->id, err, errlen) != 0) {
        free(q->itl);
        return -1;
    }
    q->idx = r->next_idx++;
    q->leg = r->leg;
    q->ctx_before = ctx_before;
    q->ctx_target = ctx_target;
    q->prompt_tokens = prompt_tokens;
    q->gen = gen;
    const char *session = json_string_value(json_object_get(args, "session"));
    snprintf(q->session, sizeof q->session, "%s", session ? session : "");
    q->t_sent = q->t_activity = clock_ms();
    if (r->t_first_sent == 0)
        r->t_first_sent = q->t_sent;
    r->n_inflight++;
    memcpy(r->idmap[r->idmap_next].id, q->id, sizeof q->id);
    r->idmap[r->idmap_next].idx = q->idx;
    r->idmap[r->idmap_next].leg = q->leg;
    r->idmap_next = (r->idmap_next + 1) % ST_IDMAP;
    return 0;
}

int st_take(stress_run *r, st_outcome *out)
{
    if (r->n_done == 0)
        return 0;
    *out = r->done[0];
    memmove(&r->done[0], &r->done[1], (size_t)(r->n_done - 1) * sizeof r->done[0]);
    r->n_done--;
    return 1;
}

/* ---- replies ---- */

static void on_reply(stress_run *r, proto_reply *rep)
{
    if (r->call_id[0] && !r->call_done && rep->done && strcmp(rep->id, r->call_id) == 0) {
        r->call_reply = *rep; /* owned by the caller of st_call now */
        r->call_done = 1;
        return;
    }
    int i;
    for (i = 0; i < r->n_inflight; i++)
        if (strcmp(r->inflight[i].id, rep->id) == 0)
            break;
    if (i < r->n_inflight) {
        st_req *q = &r->inflight[i];
        double now = clock_ms();
        q->t_activity = now;
        if (rep->has_token && q->n_tokens < q->gen) {
            if (q->n_tokens == 0)
                q->t_first = now;
            else
                q->itl[q->n_tokens - 1] = now - q->t_prev;
            q->t_prev = now;
            q->n_tokens++;
        }
        if (rep->done) {
            json_t *stats = json_object_get(rep->json, "stats");
            finish(r, i, rep->ok, stats, rep->code, rep->message);
        }
    }
    proto_reply_free(rep);
}

/* ---- telemetry ---- */

/* The stage a head's error message names ("stage 'b' (layers 2:4) ..."). */
static void stage_named(const char *message, char *out, size_t len)
{
    const char *p = strstr(message, "stage '");
    out[0] = '\0';
    if (!p)
        return;
    p += strlen("stage '");
    const char *q = strchr(p, '\'');
    if (q && (size_t)(q - p) < len)
        snprintf(out, len, "%.*s", (int)(q - p), p);
}

static void on_step(stress_run *r, const proto_tel *t)
{
    const proto_step *s = &t->step;
    int64_t idx = -1;
    int leg = r->leg;
    idmap_find(r, s->req, &idx, &leg);
    st_req *q = (st_req *)req_by_id(r, s->req);
    if (q)
        q->t_activity = clock_ms(); /* a long prefill is not silence */
    st_node *n = node_named(r, t->head.node);
    if (n) {
        n->kv_bits = s->kv_bits;
        n->prefill_step = s->prefill_step;
        if (s->step_ms > n->slowest_ms)
            n->slowest_ms = s->step_ms;
    }
    /* The store's pos is the step's first position; telemetry's is the
     * context after the step. */
    store_step row = {
        .run = r->run,
        .leg = leg,
        .req = idx,
        .node = t->head.node,
        .step = s->step,
        .phase = s->phase == PROTO_PHASE_PREFILL ? STORE_PHASE_PREFILL : STORE_PHASE_DECODE,
        .tokens = s->tokens,
        .pos = s->pos - s->tokens,
        .step_ms = s->step_ms,
        .model_ms = s->model_ms,
        .eval_ms = s->eval_ms,
        .wait_ms = s->wait_ms,
        .comm_ms = s->comm_ms,
        .kv_bytes = (int64_t)s->kv_bytes,
        .kv_bits = s->kv_bits,
        .prefill_step = s->prefill_step,
        .rss = (int64_t)s->rss,
        .headroom = s->headroom,
        .t = (double)t->head.t_ms / 1000.0,
    };
    store_step_add(r->db, &row);
}

static const char *store_kind(const proto_event *e)
{
    switch (e->kind) {
    case PROTO_EV_CONFIG_APPLIED:
        return "config";
    case PROTO_EV_REFUSED:
        return "refusal";
    case PROTO_EV_STAGE_TIMEOUT:
        return "timeout";
    default:
        return e->kind_name;
    }
}

static void on_event(stress_run *r, const proto_tel *t)
{
    const proto_event *e = &t->event;
    st_node *n = node_named(r, t->head.node);
    if (n && e->kind == PROTO_EV_CONFIG_APPLIED) {
        json_t *kb = json_object_get(t->json, "kv_bits");
        json_t *ps = json_object_get(t->json, "prefill_step");
        if (json_is_integer(kb))
            n->kv_bits = (int)json_integer_value(kb);
        if (json_is_integer(ps))
            n->prefill_step = (int)json_integer_value(ps);
        else if (json_is_string(ps))
            n->prefill_step = PROTO_PREFILL_AUTO;
    }
    json_t *d = json_deep_copy(t->json);
    int64_t idx;
    int leg;
    if (d && e->req[0] && idmap_find(r, e->req, &idx, &leg))
        json_object_set_new(d, "request", json_integer(idx));
    /* Which stage refused or fell silent: the head reports for the ring. */
    char stage[PROTO_NAME_MAX + 1] = "";
    if (e->kind == PROTO_EV_REFUSED || e->kind == PROTO_EV_STAGE_TIMEOUT ||
        e->kind == PROTO_EV_ERROR)
        stage_named(e->message, stage, sizeof stage);
    if (d && stage[0])
        json_object_set_new(d, "stage", json_string(stage));
    st_event(r, stage[0] ? stage : t->head.node, store_kind(e), d);
}

static void on_heartbeat(stress_run *r, const proto_tel *t)
{
    st_node *n = node_named(r, t->head.node);
    if (!n)
        return;
    n->kv_bits = t->status.config.kv_bits;
    n->prefill_step = t->status.config.prefill_step;
}

static void on_telemetry(stress_run *r, const proto_tel *t)
{
    st_node *n = node_named(r, t->head.node);
    if (n) {
        if (n->has_seq && t->head.seq > n->seq + 1)
            r->telemetry_lost += (int64_t)(t->head.seq - n->seq - 1);
        n->has_seq = 1;
        n->seq = t->head.seq;
        n->seen_ms = clock_ms();
        if (n->down) {
            n->down = 0;
            st_event(r, n->name, "node_up", json_pack("{ss}", "node", n->name));
        }
    }
    switch (t->topic) {
    case PROTO_TOPIC_STEP:
        on_step(r, t);
        break;
    case PROTO_TOPIC_EVENT:
        on_event(r, t);
        break;
    case PROTO_TOPIC_NODE:
        on_heartbeat(r, t);
        break;
    default:
        break;
    }
}

/* Reads one telemetry message if there is one: 1, 0 when none. */
static int read_telemetry(stress_run *r)
{
    zmq_msg_t topic, payload;
    zmq_msg_init(&topic);
    if (zmq_msg_recv(&topic, r->sub, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&topic);
        return 0;
    }
    zmq_msg_init(&payload);
    int more = zmq_msg_more(&topic) && zmq_msg_recv(&payload, r->sub, ZMQ_DONTWAIT) >= 0;
    /* Frames beyond the two of a message are not v1's: skip them. */
    while (zmq_msg_more(more ? &payload : &topic)) {
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        int got = zmq_msg_recv(&extra, r->sub, ZMQ_DONTWAIT);
        int again = got >= 0 && zmq_msg_more(&extra);
        zmq_msg_close(&extra);
        if (!again)
            break;
    }
    proto_tel t;
    char err[256];
    if (more && proto_tel_decode(zmq_msg_data(&topic), zmq_msg_size(&topic),
                                 zmq_msg_data(&payload), zmq_msg_size(&payload), &t, err,
                                 sizeof err) == 0) {
        on_telemetry(r, &t);
        proto_tel_free(&t);
    }
    zmq_msg_close(&topic);
    zmq_msg_close(&payload);
    return 1;
}

/* ---- timers ---- */

static void check_timers(stress_run *r)
{
    double now = clock_ms();
    char msg[PROTO_MESSAGE_MAX];
    for (int i = 0; i < r->n_nodes; i++) {
        st_node *n = &r->nodes[i];
        /* A node publishes between steps: one step longer than the limit is
         * not a death, hence the allowance for the slowest step seen. */
        if (n->down || n->seen_ms == 0 || now - n->seen_ms < ST_NODE_DOWN_MS + 2 * n->slowest_ms)
            continue;
        n->down = 1;
        double silent = (now - n->seen_ms) / 1000.0;
        st_event(r, n->name, "node_down",
                 json_pack("{ss sf}", "node", n->name, "silent_s", silent));
        /* Every request needs every stage: none in flight can finish. */
        snprintf(msg, sizeof msg, "node '%s' sent no heartbeat for %.1f s", n->name, silent);
        st_end_all(r, "node_down", msg);
    }
    double limit = r->o.timeout_s * 1000.0;
    for (int i = 0; i < r->n_inflight;) {
        st_req *q = &r->inflight[i];
        if (now - q->t_activity < limit) {
            i++;
            continue;
        }
        snprintf(msg, sizeof msg, "no reply and no step for %.1f s (--timeout)",
                 (now - q->t_activity) / 1000.0);
        cancel(r, q->id);
        finish(r, i, 0, NULL, "timeout", msg);
    }
}

int st_pump(stress_run *r, int timeout_ms, char *err, size_t errlen)
{
    zmq_pollitem_t items[2] = {{r->sub, 0, ZMQ_POLLIN, 0}, {NULL, 0, ZMQ_POLLIN, 0}};
    int n_items = 1;
    if (r->ctl) {
        items[1].socket = client_socket(r->ctl);
        n_items = 2;
    }
    if (zmq_poll(items, n_items, timeout_ms) < 0 && errno != EINTR) {
        snprintf(err, errlen, "poll: %s", zmq_strerror(errno));
        return -1;
    }
    /* Bounded, so that the timers are looked at under a flood too. */
    for (int k = 0; k < 10000; k++) {
        int got = read_telemetry(r);
        if (r->ctl) {
            proto_reply rep;
            char why[256];
            int rc = client_recv(r->ctl, &rep, 0, why, sizeof why);
            if (rc > 0)
                on_reply(r, &rep);
            got |= rc != 0;
        }
        if (!got)
            break;
    }
    check_timers(r);
    return 0;
}

int st_call(stress_run *r, const char *op, json_t *args, proto_reply *out, int timeout_ms,
            char *err, size_t errlen)
{
    if (client_send(r->ctl, op, args, r->call_id, sizeof r->call_id, err, errlen) != 0)
        return -1;
    r->call_done = 0;
    double deadline = clock_ms() + timeout_ms;
    int rc = 0;
    while (!r->call_done && clock_ms() < deadline)
        if (st_pump(r, 50, err, errlen) != 0) {
            rc = -1;
            break;
        }
    if (r->call_done) {
        *out = r->call_reply;
        rc = 1;
    } else if (rc == 0) {
        snprintf(err, errlen, "no answer to %s within %.1f s", op, timeout_ms / 1000.0);
    }
    r->call_id[0] = '\0';
    r->call_done = 0;
    return rc;
}
