/* test_links.c: the console's links against a fake node on loopback: a
 * ROUTER the test answers by hand and a PUB it publishes on. Deadlines are
 * driven with made-up `now` values, so nothing here depends on timing;
 * waits for sockets are bounded polls. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zmq.h>

#include "engine/proto/protocol.h"
#include "engine/sys/ports.h"
#include "tui/core/cluster.h"
#include "tui/core/links.h"
#include "tui/core/state.h"

/* Longest wait for a socket in a test: generous, it only bounds a hang. */
#define WAIT_MS 5000

static void *zctx, *router, *pub;
static struct cluster cl;
static struct cluster_node cn;
static state *st;
static links *lk;

/* What the callbacks saw. */
static int calls;
static struct {
    int node, ok;
    char code[PROTO_CODE_MAX];
    char message[PROTO_MESSAGE_MAX];
} last;

static void bind_any(void *sock, char *endpoint, size_t len)
{
    cr_assert_eq(zmq_bind(sock, "tcp://127.0.0.1:*"), 0);
    cr_assert_eq(zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, endpoint, &len), 0);
}

static void setup(void)
{
    static const char *const names[] = {"n0"};
    char err[256];
    zctx = zmq_ctx_new();
    router = zmq_socket(zctx, ZMQ_ROUTER);
    pub = zmq_socket(zctx, ZMQ_PUB);
    int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
    memset(&cn, 0, sizeof cn);
    strcpy(cn.name, "n0");
    bind_any(router, cn.control, sizeof cn.control);
    bind_any(pub, cn.telemetry, sizeof cn.telemetry);
    memset(&cl, 0, sizeof cl);
    strcpy(cl.name, "test");
    cl.n_nodes = 1;
    cl.nodes = &cn;
    st = state_new("test", 1, names);
    cr_assert_not_null(st);
    cr_assert_eq(links_open(&lk, &cl, st, 0.0, err, sizeof err), 0, "%s", err);
    calls = 0;
    memset(&last, 0, sizeof last);
}

static void teardown(void)
{
    links_close(lk);
    state_free(st);
    zmq_close(router);
    zmq_close(pub);
    zmq_ctx_term(zctx);
}

TestSuite(links, .init = setup, .fini = teardown);

static void on_done(void *ctx, const struct links_reply *r)
{
    (void)ctx;
    calls++;
    last.node = r->node;
    last.ok = r->ok;
    snprintf(last.code, sizeof last.code, "%s", r->code);
    snprintf(last.message, sizeof last.message, "%s", r->message);
}

/* The fake node takes one request: its ROUTER identity into id_frame, the
 * request's JSON returned (json_decref it). */
static json_t *node_take(zmq_msg_t *identity)
{
    zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
    cr_assert_eq(zmq_poll(&it, 1, WAIT_MS), 1, "the request never reached the node");
    zmq_msg_init(identity);
    cr_assert_geq(zmq_msg_recv(identity, router, 0), 0);
    zmq_msg_t body;
    zmq_msg_init(&body);
    cr_assert_geq(zmq_msg_recv(&body, router, 0), 0);
    json_t *req = json_loadb(zmq_msg_data(&body), zmq_msg_size(&body), 0, NULL);
    zmq_msg_close(&body);
    cr_assert_not_null(req);
    return req;
}

/* The fake node answers the request with `frame` (taken). */
static void node_answer(zmq_msg_t *identity, char *frame, int last_frame)
{
    zmq_msg_t copy;
    zmq_msg_init(&copy);
    zmq_msg_copy(&copy, identity);
    cr_assert_geq(zmq_msg_send(&copy, router, ZMQ_SNDMORE), 0);
    cr_assert_geq(zmq_send(router, frame, strlen(frame), 0), 0);
    free(frame);
    if (last_frame)
        zmq_msg_close(identity);
}

/* Runs the links' side until cond holds (each turn waits at most WAIT_MS
 * for a socket). */
#define PUMP_UNTIL(cond, now)                                                                      \
    do {                                                                                           \
        zmq_pollitem_t items_[4];                                                                  \
        for (int turn_ = 0; turn_ < 50 && !(cond); turn_++) {                                      \
            int n_ = links_poll_items(lk, 1, items_, 4);                                           \
            zmq_poll(items_, n_, WAIT_MS / 50);                                                    \
            links_process(lk, items_, n_, (now));                                                  \
        }                                                                                          \
        cr_assert((cond), "gave up waiting for: %s", #cond);                                       \
    } while (0)

static const char *id_of(const json_t *req)
{
    return json_string_value(json_object_get(req, "id"));
}

Test(links, a_reply_ends_its_request_once_and_names_the_node)
{
    char err[256];
    zmq_msg_t who;
    cr_assert_eq(links_request(lk, 0, "status", NULL, 5.0, 0.0, on_done, NULL, err, sizeof err), 0);
    cr_assert_eq(links_pending(lk), 1);
    json_t *req = node_take(&who);
    cr_assert_str_eq(json_string_value(json_object_get(req, "op")), "status");
    json_t *res = json_pack("{s:s}", "node", "alias-of-n0");
    node_answer(&who, proto_reply_ok(id_of(req), res), 1);
    json_decref(res);
    json_decref(req);
    PUMP_UNTIL(calls == 1, 1.0);
    cr_assert_eq(last.ok, 1);
    cr_assert_eq(links_pending(lk), 0);
    cr_assert_str_eq(links_node_reported_name(lk, 0), "alias-of-n0");
    /* Nothing is left to expire: the callback does not run twice. */
    links_tick(lk, 100.0);
    cr_assert_eq(calls, 1);
}

Test(links, a_silent_node_times_out_at_the_deadline_not_before)
{
    char err[256];
    cr_assert_eq(links_request(lk, 0, "status", NULL, 2.0, 10.0, on_done, NULL, err, sizeof err),
                 0);
    cr_assert_float_eq(links_next_deadline(lk), 12.0, 1e-9);
    cr_assert_eq(links_tick(lk, 11.9), 0);
    cr_assert_eq(calls, 0);
    cr_assert_eq(links_tick(lk, 12.0), 1);
    cr_assert_eq(calls, 1);
    cr_assert_eq(last.ok, -1);
    cr_assert_str_eq(last.code, "timeout");
    cr_assert_eq(links_pending(lk), 0);
}

Test(links, token_frames_push_the_deadline_and_late_replies_are_ignored)
{
    char err[256];
    zmq_msg_t who;
    cr_assert_eq(links_request(lk, 0, "generate", NULL, 2.0, 0.0, on_done, NULL, err, sizeof err),
                 0);
    json_t *req = node_take(&who);
    char id[PROTO_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", id_of(req));
    json_decref(req);
    node_answer(&who, proto_reply_token(id, 42, " once", NULL), 0);
    PUMP_UNTIL(links_next_deadline(lk) > 2.5, 1.5);
    cr_assert_float_eq(links_next_deadline(lk), 3.5, 1e-9);
    cr_assert_eq(links_tick(lk, 3.0), 0);
    cr_assert_eq(links_tick(lk, 3.5), 1);
    cr_assert_eq(last.ok, -1);
    /* The final frame after the timeout finds no request: with nothing in
     * flight the node's socket is not even polled, and the frame is read,
     * and dropped, with the next request's reply. That one is a refusal:
     * had the late ok ended it, last.ok would say 1. */
    node_answer(&who, proto_reply_ok(id, NULL), 1);
    zmq_pollitem_t items[4];
    cr_assert_eq(links_poll_items(lk, 0, items, 4), 0);
    cr_assert_eq(links_request(lk, 0, "status", NULL, 5.0, 4.0, on_done, NULL, err, sizeof err), 0);
    cr_assert_eq(links_poll_items(lk, 0, items, 4), 1);
    req = node_take(&who);
    proto_error e = {.code = PROTO_E_BUSY};
    snprintf(e.message, sizeof e.message, "busy");
    node_answer(&who, proto_reply_error(id_of(req), &e), 1);
    json_decref(req);
    PUMP_UNTIL(calls == 2, 4.0);
    cr_assert_eq(last.ok, 0);
    cr_assert_eq(links_pending(lk), 0);
}

Test(links, set_is_recorded_in_the_state_and_a_refusal_says_why)
{
    proto_set_args want = {.has_kv_bits = 1, .kv_bits = 4};
    zmq_msg_t who;
    cr_assert_eq(links_set(lk, -1, &want, 0.0), 0);
    cr_assert_eq(state_node_config(st, 0)->stage, STATE_CFG_REQUESTED);
    json_t *req = node_take(&who);
    cr_assert_str_eq(json_string_value(json_object_get(req, "op")), "set");
    cr_assert_eq(json_integer_value(json_object_get(req, "kv_bits")), 4);
    cr_assert_null(json_object_get(req, "prefill_step"));
    proto_error e = {.code = PROTO_E_KV_OOM};
    snprintf(e.message, sizeof e.message, "stage 'n0' would need 9 GiB");
    node_answer(&who, proto_reply_error(id_of(req), &e), 1);
    json_decref(req);
    PUMP_UNTIL(state_node_config(st, 0)->stage != STATE_CFG_REQUESTED, 1.0);
    const struct state_config *c = state_node_config(st, 0);
    cr_assert_eq(c->stage, STATE_CFG_FAILED);
    cr_assert(strstr(c->error, "kv_oom") && strstr(c->error, "9 GiB"), "error: %s", c->error);
}

Test(links, set_args_carry_auto_as_a_string)
{
    proto_set_args want = {.has_prefill_step = 1, .prefill_step = PROTO_PREFILL_AUTO};
    json_t *o = links_set_args_json(&want);
    cr_assert_str_eq(json_string_value(json_object_get(o, "prefill_step")), "auto");
    cr_assert_null(json_object_get(o, "kv_bits"));
    json_decref(o);
}

/* Publishes heartbeats as `name` until the state hears one (a SUB misses
 * what is published before its connection is up). */
static void publish_until_up(const char *name)
{
    proto_head h = {.seq = 0};
    proto_status s = {0};
    snprintf(h.node, sizeof h.node, "%s", name);
    s.config.kv_bits = 8;
    zmq_pollitem_t items[4];
    for (int turn = 0; turn < 50 && state_node_status(st, 0) == NULL; turn++) {
        h.seq++;
        char *msg = proto_node_encode(&h, &s);
        cr_assert_not_null(msg);
        cr_assert_eq(proto_publish(pub, PROTO_TOPIC_NODE, msg, strlen(msg)), 0);
        free(msg);
        int n = links_poll_items(lk, 1, items, 4);
        zmq_poll(items, n, WAIT_MS / 50);
        links_process(lk, items, n, 1.0);
    }
}

Test(links, telemetry_reaches_the_node_it_names)
{
    publish_until_up("n0");
    cr_assert_not_null(state_node_status(st, 0));
    cr_assert_eq(state_node_live(st, 0, 1.0), STATE_UP);
    cr_assert_eq(state_node_config(st, 0)->kv_bits, 8);
}

/* The console's loop reads telemetry on its frame clock, without polling
 * the SUB first: what is queued by then is taken in all the same. */
Test(links, telemetry_is_read_on_a_clock_without_a_poll)
{
    proto_head h = {.seq = 0};
    proto_status s = {0};
    strcpy(h.node, "n0");
    int got = 0;
    for (int turn = 0; turn < 50 && got == 0; turn++) {
        h.seq++;
        char *msg = proto_node_encode(&h, &s);
        cr_assert_not_null(msg);
        cr_assert_eq(proto_publish(pub, PROTO_TOPIC_NODE, msg, strlen(msg)), 0);
        free(msg);
        zmq_poll(NULL, 0, WAIT_MS / 50); /* a frame's wait, on nothing */
        got = links_read_telemetry(lk, 1.0);
    }
    cr_assert_gt(got, 0);
    cr_assert_not_null(state_node_status(st, 0));
}

Test(links, telemetry_under_an_unknown_name_is_logged_once_and_ignored)
{
    proto_head h = {.seq = 0};
    proto_status s = {0};
    strcpy(h.node, "stranger");
    zmq_pollitem_t items[4];
    struct state_event_filter f = {.node = -1, .kind = "telemetry"};
    for (int turn = 0; turn < 50 && state_event_count(st, &f) == 0; turn++) {
        h.seq++;
        char *msg = proto_node_encode(&h, &s);
        proto_publish(pub, PROTO_TOPIC_NODE, msg, strlen(msg));
        free(msg);
        int n = links_poll_items(lk, 1, items, 4);
        zmq_poll(items, n, WAIT_MS / 50);
        links_process(lk, items, n, 1.0);
    }
    cr_assert_eq(state_event_count(st, &f), 1);
    cr_assert_null(state_node_status(st, 0));
}

Test(links, a_node_known_by_its_status_name_gets_its_telemetry)
{
    char err[256];
    zmq_msg_t who;
    links_identify(lk);
    cr_assert_eq(links_tick(lk, 0.0), 0);
    cr_assert_eq(links_pending(lk), 1, "links_identify sends a status request");
    json_t *req = node_take(&who);
    json_t *res = json_pack("{s:s}", "node", "renamed");
    node_answer(&who, proto_reply_ok(id_of(req), res), 1);
    json_decref(res);
    json_decref(req);
    PUMP_UNTIL(links_pending(lk) == 0, 1.0);
    cr_assert_str_eq(links_node_reported_name(lk, 0), "renamed");
    /* Identified: no further status requests. */
    links_tick(lk, 1000.0);
    cr_assert_eq(links_pending(lk), 0);
    (void)err;
    publish_until_up("renamed");
    cr_assert_eq(state_node_live(st, 0, 1.0), STATE_UP);
}

Test(links, a_shutdown_event_marks_the_node_down_at_once)
{
    publish_until_up("n0");
    proto_head h = {.seq = 1000};
    strcpy(h.node, "n0");
    proto_event ev = {.kind = PROTO_EV_SHUTDOWN};
    strcpy(ev.message, "SIGTERM");
    char *msg = proto_event_encode(&h, &ev, NULL);
    cr_assert_eq(proto_publish(pub, PROTO_TOPIC_EVENT, msg, strlen(msg)), 0);
    free(msg);
    PUMP_UNTIL(state_node_live(st, 0, 1.0) == STATE_DOWN, 1.0);
}

/* A node on loopback that nothing listens for answers a request at once
 * with why, instead of after the request's timeout. */
Test(links, a_refused_loopback_node_is_told_at_once)
{
    char err[256] = "";
    int port;
    cr_assert_eq(ports_free_run(2, &port, err, sizeof err), 0, "%s", err);
    struct cluster_node dead = cn;
    struct cluster one = cl;
    snprintf(dead.control, sizeof dead.control, "tcp://127.0.0.1:%d", port);
    snprintf(dead.telemetry, sizeof dead.telemetry, "tcp://127.0.0.1:%d", port + 1);
    one.nodes = &dead;
    links *l2;
    cr_assert_eq(links_open(&l2, &one, st, 0.0, err, sizeof err), 0, "%s", err);
    int rc =
        links_request(l2, 0, "status", NULL, LINKS_TIMEOUT_S, 1.0, on_done, NULL, err, sizeof err);
    cr_assert_eq(rc, -1, "sent to a node that is not there");
    cr_assert(strstr(err, "connection refused"), "%s", err);
    cr_assert(strstr(err, dead.control), "%s", err);
    cr_assert_eq(links_pending(l2), 0);
    cr_assert_eq(calls, 0, "a request that was not sent has no callback");
    links_close(l2);
}

/* A DEALER that reached itself (forced here: ZeroMQ's "SOURCE;DEST"
 * endpoint gives it the node's port as its source port, as the kernel
 * sometimes does when it reconnects to a dead node on loopback) has that
 * connection dropped, and logged, at once: ZeroMQ then reconnects (the
 * same way here, so it is dropped again), and a restarting node finds its
 * port free between. Without the drop the connection stays (one
 * connect, no second). */
Test(links, a_connection_to_itself_is_dropped_and_logged)
{
    char err[256] = "";
    int port;
    cr_assert_eq(ports_free_run(2, &port, err, sizeof err), 0, "%s", err);
    struct cluster_node self = cn;
    struct cluster one = cl;
    snprintf(self.control, sizeof self.control, "tcp://127.0.0.1:%d;127.0.0.1:%d", port, port);
    snprintf(self.telemetry, sizeof self.telemetry, "tcp://127.0.0.1:%d", port + 1);
    one.nodes = &self;
    links *l2;
    cr_assert_eq(links_open(&l2, &one, st, 0.0, err, sizeof err), 0, "%s", err);
    struct state_event_filter f = {.node = 0, .kind = "self_connect"};
    for (int i = 0; i < WAIT_MS / 10 && state_event_count(st, &f) < 2; i++) {
        links_tick(l2, 1.0);
        zmq_poll(NULL, 0, 10);
    }
    cr_assert_geq(state_event_count(st, &f), 2,
                  "%d self_connect events, not a drop and a reconnect", state_event_count(st, &f));
    const struct state_event *e;
    char ep[64];
    snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d ", port);
    cr_assert_eq(state_events(st, &f, 0, 1, &e), 1);
    cr_assert(strstr(e->message, "reached itself") && strstr(e->message, ep), "%s", e->message);
    links_close(l2);
}
