/* test_outbox.c: reply frames a peer has no room for wait in order and
 * go once it reads, another peer is never held back, a gone peer is
 * noticed, and frames a peer leaves untaken past the limit are dropped;
 * over a real ROUTER and DEALERs on inproc with small high-water marks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "engine/node/outbox.h"

#define HWM 2

typedef struct rig {
    void *ctx, *router, *dealer[2];
    peer who[2];
    outbox *o;
} rig;

/* A ROUTER and two DEALERs that each sent one message, so the ROUTER
 * knows their routing ids. */
static void rig_open(rig *r)
{
    int hwm = HWM, linger = 0;
    r->ctx = zmq_ctx_new();
    r->router = zmq_socket(r->ctx, ZMQ_ROUTER);
    zmq_setsockopt(r->router, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(r->router, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_bind(r->router, "inproc://outbox"), 0);
    r->o = outbox_new(r->router);
    cr_assert_not_null(r->o);
    for (int i = 0; i < 2; i++) {
        r->dealer[i] = zmq_socket(r->ctx, ZMQ_DEALER);
        zmq_setsockopt(r->dealer[i], ZMQ_RCVHWM, &hwm, sizeof hwm);
        zmq_setsockopt(r->dealer[i], ZMQ_LINGER, &linger, sizeof linger);
        cr_assert_eq(zmq_connect(r->dealer[i], "inproc://outbox"), 0);
        cr_assert_eq(zmq_send(r->dealer[i], "hi", 2, 0), 2);
        memset(&r->who[i], 0, sizeof r->who[i]);
        int n = zmq_recv(r->router, r->who[i].id, sizeof r->who[i].id, 0);
        cr_assert_gt(n, 0);
        r->who[i].id_len = (size_t)n;
        char hi[8];
        cr_assert_eq(zmq_recv(r->router, hi, sizeof hi, 0), 2);
    }
}

static void rig_close(rig *r)
{
    outbox_free(r->o);
    for (int i = 0; i < 2; i++)
        if (r->dealer[i])
            zmq_close(r->dealer[i]);
    zmq_close(r->router);
    zmq_ctx_term(r->ctx);
}

static char *text(int i)
{
    char *s = malloc(16);
    snprintf(s, 16, "m%d", i);
    return s;
}

/* The next message of dealer d, as a string; "" when none is waiting. */
static const char *take(rig *r, int d)
{
    static char buf[32];
    int n = zmq_recv(r->dealer[d], buf, sizeof buf - 1, ZMQ_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

Test(outbox, holds_in_order_and_never_drops)
{
    rig r;
    rig_open(&r);
    /* inproc queues up to both marks together, then holds */
    int sent = 0, i = 0;
    for (; i < 20; i++) {
        outbox_rc rc = outbox_send(r.o, &r.who[0], text(i), NULL, 0, 0.0);
        cr_assert(rc == OUTBOX_SENT || rc == OUTBOX_HELD);
        sent += rc == OUTBOX_SENT;
    }
    cr_assert_lt(sent, 20, "the high-water mark was met");
    cr_assert_eq(outbox_held(r.o, &r.who[0], NULL), 20 - sent);
    cr_assert_eq(outbox_held(r.o, &r.who[1], NULL), 0);
    /* the other peer is not held back */
    cr_assert_eq(outbox_send(r.o, &r.who[1], text(99), NULL, 0, 0.0), OUTBOX_SENT);
    cr_assert_str_eq(take(&r, 1), "m99");
    /* reading and flushing delivers every frame, in order */
    for (int want = 0; want < 20;) {
        const char *got = take(&r, 0);
        if (!got[0]) {
            cr_assert_eq(outbox_flush(r.o, 1.0, 1e9), 0);
            continue;
        }
        char w[16];
        snprintf(w, sizeof w, "m%d", want++);
        cr_assert_str_eq(got, w);
    }
    cr_assert_eq(outbox_count(r.o), 0);
    rig_close(&r);
}

Test(outbox, second_frame_travels_with_its_reply)
{
    rig r;
    rig_open(&r);
    float data[4] = {1, 2, 3, 4};
    for (int i = 0; i < 8; i++)
        outbox_send(r.o, &r.who[0], text(i), data, sizeof data, 0.0);
    cr_assert_gt(outbox_count(r.o), 0);
    for (int i = 0; i < 8;) {
        char buf[32];
        int n = zmq_recv(r.dealer[0], buf, sizeof buf, ZMQ_DONTWAIT);
        if (n < 0) {
            outbox_flush(r.o, 1.0, 1e9);
            continue;
        }
        int more = 0;
        size_t sz = sizeof more;
        zmq_getsockopt(r.dealer[0], ZMQ_RCVMORE, &more, &sz);
        cr_assert(more, "reply %d has its data frame", i);
        float back[4];
        cr_assert_eq(zmq_recv(r.dealer[0], back, sizeof back, 0), (int)sizeof back);
        cr_assert_eq(memcmp(back, data, sizeof data), 0);
        i++;
    }
    rig_close(&r);
}

Test(outbox, since_counts_from_the_last_frame_taken)
{
    rig r;
    rig_open(&r);
    int i = 0;
    while (outbox_send(r.o, &r.who[0], text(i), NULL, 0, 100.0) != OUTBOX_HELD)
        i++;
    outbox_send(r.o, &r.who[0], text(++i), NULL, 0, 300.0);
    double since = 0;
    cr_assert_eq(outbox_held(r.o, &r.who[0], &since), 2);
    cr_assert_float_eq(since, 100.0, 1e-9, "the first frame waiting started the clock");
    outbox_flush(r.o, 500.0, 1e9);
    cr_assert_eq(outbox_held(r.o, &r.who[0], &since), 2, "nothing read: nothing moved");
    cr_assert_float_eq(since, 100.0, 1e-9);
    /* the ROUTER hears of the reads asynchronously: read and retry */
    for (int k = 0; k < 1000 && outbox_held(r.o, &r.who[0], NULL) > 0; k++) {
        while (take(&r, 0)[0])
            ;
        outbox_flush(r.o, 700.0, 1e9);
        zmq_poll(NULL, 0, 1);
    }
    cr_assert_eq(outbox_held(r.o, &r.who[0], NULL), 0);
    rig_close(&r);
}

Test(outbox, a_silent_peer_is_dropped_after_the_limit)
{
    rig r;
    rig_open(&r);
    for (int i = 0; i < 10; i++)
        outbox_send(r.o, &r.who[0], text(i), NULL, 0, 0.0);
    int held = outbox_held(r.o, &r.who[0], NULL);
    cr_assert_gt(held, 0);
    cr_assert_eq(outbox_flush(r.o, 999.0, 1000.0), 0, "before the limit nothing goes");
    cr_assert_eq(outbox_flush(r.o, 1000.0, 1000.0), held, "at it every waiting frame goes");
    cr_assert_eq(outbox_count(r.o), 0);
    rig_close(&r);
}

Test(outbox, a_gone_peer_is_noticed)
{
    rig r;
    rig_open(&r);
    zmq_close(r.dealer[1]);
    r.dealer[1] = NULL;
    /* the ROUTER learns of the close asynchronously: a frame may be
     * taken, or held, before a send or a retry finds no route. If the
     * pipe filled first, ZeroMQ ends it only once the ROUTER reads up to
     * the closing peer's delimiter, so poll it for input as the node's
     * loop does (without, a loaded machine failed 1 run in 6). */
    zmq_pollitem_t in = {.socket = r.router, .events = ZMQ_POLLIN};
    for (int i = 0; i < 1000 && !outbox_gone(r.o, &r.who[1]); i++) {
        outbox_send(r.o, &r.who[1], text(i), NULL, 0, 0.0);
        outbox_flush(r.o, 0.0, 1e9);
        zmq_poll(&in, 1, 1);
    }
    cr_assert(outbox_gone(r.o, &r.who[1]));
    cr_assert_eq(outbox_held(r.o, &r.who[1], NULL), 0, "its frames are dropped");
    cr_assert(!outbox_gone(r.o, &r.who[0]));
    rig_close(&r);
}

Test(outbox, a_peer_past_its_bound_gets_full)
{
    rig r;
    rig_open(&r);
    outbox_rc rc = OUTBOX_SENT;
    for (int i = 0; i < OUTBOX_PEER_MAX + 16 && rc != OUTBOX_FULL; i++)
        rc = outbox_send(r.o, &r.who[0], text(i), NULL, 0, 0.0);
    cr_assert_eq(rc, OUTBOX_FULL);
    cr_assert_eq(outbox_held(r.o, &r.who[0], NULL), OUTBOX_PEER_MAX);
    rig_close(&r);
}
