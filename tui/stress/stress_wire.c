/* stress_wire.c: the stress runner's side of the wire. One DEALER to the
 * head carries every request (replies are matched by id), one SUB hears
 * every node's telemetry; stress_record.c records what comes back. Silence
 * is a failure too: a request that hears nothing (no frame, no step) for
 * the timeout ends as `timeout`, and a node without a heartbeat for 3 s is
 * down. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "engine/sys/clock.h"
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
    if (r->target.http)
        return st_http_connect(r, err, errlen);
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
    if (r->target.http) {
        st_http_disconnect(r);
        return;
    }
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
    if (r->target.http)
        return st_http_cluster_json(r);
    json_t *nodes = json_array();
    for (int i = 0; nodes && i < r->n_nodes; i++) {
        const st_node *n = &r->nodes[i];
        json_array_append_new(nodes,
                              json_pack("{ss s[ii] ss ss}", "name", n->name, "layers",
                                        n->status.model.layer_first, n->status.model.layer_last,
                                        "control", n->ep.control, "telemetry", n->ep.telemetry));
    }
    const proto_status *h = &r->nodes[0].status;
    json_t *o = json_pack(
        "{ss ss ss ss so*}", "name", r->target.cluster[0] ? r->target.cluster : "local", "model",
        h->model.name, "fingerprint", h->model.fingerprint, "engine", h->version, "nodes", nodes);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* ---- requests ---- */

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
    if (r->target.http) {
        st_http_end_all(r, code, message);
        return;
    }
    while (r->n_inflight > 0) {
        cancel(r, r->inflight[0].id);
        st_finish(r, 0, 0, NULL, code, message);
    }
}

int st_send(stress_run *r, json_t *args, int64_t ctx_before, int64_t ctx_target, int prompt_tokens,
            int gen, char *err, size_t errlen)
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
    if (r->leg_t_first == 0)
        r->leg_t_first = q->t_sent;
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
    /* A frame of the awaited call: its progress (a quality request sends
     * one a chunk) keeps it alive, its final frame is the caller's. */
    if (r->call_id[0] && !r->call_done && strcmp(rep->id, r->call_id) == 0) {
        r->call_seen = clock_ms();
        if (rep->done) {
            r->call_reply = *rep; /* owned by the caller of st_call now */
            r->call_done = 1;
            return;
        }
        proto_reply_free(rep);
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
        if (rep->has_token && q->n_tokens < q->gen)
            st_token(q, now);
        if (rep->done) {
            json_t *stats = json_object_get(rep->json, "stats");
            st_finish(r, i, rep->ok, stats, rep->code, rep->message);
        }
    }
    proto_reply_free(rep);
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
    if (more && proto_tel_decode(zmq_msg_data(&topic), zmq_msg_size(&topic), zmq_msg_data(&payload),
                                 zmq_msg_size(&payload), &t, err, sizeof err) == 0) {
        st_on_telemetry(r, &t);
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
        st_finish(r, i, 0, NULL, "timeout", msg);
    }
}

int st_pump(stress_run *r, int timeout_ms, char *err, size_t errlen)
{
    if (r->target.http)
        return st_http_pump(r, timeout_ms, err, errlen);
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
    if (st_store_failed(r)) {
        snprintf(err, errlen, "%s", r->failure);
        return -1;
    }
    return 0;
}

int st_call(stress_run *r, const char *op, json_t *args, proto_reply *out, int timeout_ms,
            char *err, size_t errlen)
{
    if (client_send(r->ctl, op, args, r->call_id, sizeof r->call_id, err, errlen) != 0)
        return -1;
    r->call_done = 0;
    r->call_seen = clock_ms();
    int rc = 0;
    while (!r->call_done && clock_ms() - r->call_seen < timeout_ms) {
        if (st_aborted(r)) {
            cancel(r, r->call_id);
            snprintf(err, errlen, "%s: the run was aborted", op);
            rc = -1;
            break;
        }
        if (st_pump(r, 50, err, errlen) != 0) {
            rc = -1;
            break;
        }
    }
    if (r->call_done) {
        *out = r->call_reply;
        rc = 1;
    } else if (rc == 0) {
        snprintf(err, errlen, "no answer to %s within %.1f s", op, timeout_ms / 1000.0);
        cancel(r, r->call_id);
    }
    r->call_id[0] = '\0';
    r->call_done = 0;
    return rc;
}
