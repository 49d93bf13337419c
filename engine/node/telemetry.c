/* telemetry.c: the node's publisher (see telemetry.h). */
#include "telemetry.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "engine/sys/clock.h"
#include "subguard.h"

/* No message a subscriber sends is longer, handshake included (a plain
 * one's READY is some 30 bytes, CURVE's INITIATE some 300), let alone a
 * subscription to a topic: ZeroMQ drops the connection that sends one. */
#define TEL_SUB_BYTES 64
#define TEL_SUB_BYTES_CURVE 512
/* ZeroMQ keeps every subscription a connection sends, even those the node
 * ignores; after this many that match no topic the socket is reopened,
 * which frees them all (a few MiB of its tables at most). */
#define TEL_JUNK_MAX 256
/* With a queue of one, ZeroMQ takes a connection's subscriptions in about
 * as fast as the node reads them, so that what it holds stays near the
 * count above; a subscriber sends only a few. */
#define TEL_RCVHWM 1
/* How long reopening may retry binding the endpoint. */
#define TEL_REBIND_MS 1000.0

struct tel {
    void *zctx;
    char *endpoint;
    char *extra;        /* a second endpoint (tel_bind), or NULL */
    curve_keypair keys; /* public_key "": no CURVE */
    void *pub;
    subguard *guard; /* watches pub's connections */
    int bound;       /* 0: reopening could not bind the endpoint yet */
    int junk;        /* subscriptions matching no topic since the socket opened */
    proto_head head; /* node name; seq of the next message */
};

/* A new socket for t->pub, not bound yet. */
static int tel_socket_new(tel *t, char *err, size_t errlen)
{
    t->pub = zmq_socket(t->zctx, ZMQ_XPUB);
    if (!t->pub) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        return -1;
    }
    int linger = 0, manual = 1, hwm = TEL_RCVHWM;
    int64_t max = t->keys.public_key[0] ? TEL_SUB_BYTES_CURVE : TEL_SUB_BYTES;
    zmq_setsockopt(t->pub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(t->pub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(t->pub, ZMQ_XPUB_MANUAL, &manual, sizeof manual);
    zmq_setsockopt(t->pub, ZMQ_MAXMSGSIZE, &max, sizeof max);
    if (t->keys.public_key[0] && curve_server_apply(t->pub, &t->keys, err, errlen) != 0)
        return -1;
    return subguard_start(&t->guard, t->zctx, t->pub, t->endpoint, err, errlen);
}

static void tel_socket_close(tel *t)
{
    subguard_stop(t->guard);
    t->guard = NULL;
    if (t->pub)
        zmq_close(t->pub);
    t->pub = NULL;
}

/* Binds t->pub to the endpoint and the extra one, if any. */
static int bind_all(tel *t, char *err, size_t errlen)
{
    t->bound = zmq_bind(t->pub, t->endpoint) == 0;
    if (!t->bound)
        snprintf(err, errlen, "--telemetry %s: %s", t->endpoint, zmq_strerror(errno));
    else if (t->extra && zmq_bind(t->pub, t->extra) != 0) {
        snprintf(err, errlen, "telemetry %s: %s", t->extra, zmq_strerror(errno));
        t->bound = 0;
    }
    return t->bound ? 0 : -1;
}

int tel_open(tel **out, void *zctx, const char *endpoint, const char *node,
             const curve_keypair *curve, char *err, size_t errlen)
{
    tel *t = calloc(1, sizeof *t);
    if (!t || !(t->endpoint = strdup(endpoint))) {
        free(t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->zctx = zctx;
    if (curve)
        t->keys = *curve;
    snprintf(t->head.node, sizeof t->head.node, "%s", node);
    if (tel_socket_new(t, err, errlen) != 0 || bind_all(t, err, errlen) != 0) {
        tel_close(t);
        return -1;
    }
    *out = t;
    return 0;
}

void tel_close(tel *t)
{
    if (!t)
        return;
    tel_socket_close(t);
    free(t->endpoint);
    free(t->extra);
    free(t);
}

int tel_bind(tel *t, const char *endpoint, char *err, size_t errlen)
{
    if (t->extra) {
        snprintf(err, errlen, "telemetry %s: the socket has a second endpoint already", endpoint);
        return -1;
    }
    if (!(t->extra = strdup(endpoint))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (zmq_bind(t->pub, endpoint) != 0) {
        snprintf(err, errlen, "telemetry %s: %s", endpoint, zmq_strerror(errno));
        free(t->extra);
        t->extra = NULL;
        return -1;
    }
    return 0;
}

void *tel_socket(tel *t)
{
    return t->pub;
}

/* Closes the socket and binds a new one: subscribers reconnect and
 * subscribe again by themselves; what is published meanwhile is lost. */
static int tel_reopen(tel *t, char *err, size_t errlen)
{
    tel_socket_close(t);
    t->junk = 0;
    if (tel_socket_new(t, err, errlen) != 0) {
        tel_socket_close(t);
        return -1;
    }
    double until = clock_ms() + TEL_REBIND_MS;
    /* The old listener closes on ZeroMQ's I/O thread: the port may take a
     * moment to be free again. */
    while (bind_all(t, err, errlen) != 0 && clock_ms() < until)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    return t->bound ? 0 : -1;
}

/* 1 when a subscription of len bytes is "" or a prefix of a topic. */
static int topic_prefix(const unsigned char *s, size_t len)
{
    for (int k = PROTO_TOPIC_STEP; k < PROTO_TOPIC_UNKNOWN; k++) {
        const char *name = proto_topic_name((proto_topic)k);
        if (len <= strlen(name) && memcmp(name, s, len) == 0)
            return 1;
    }
    return 0;
}

int tel_subscriptions(tel *t, char *err, size_t errlen)
{
    if (!t->bound) {
        /* A reopening that failed: one more try, without waiting. */
        if ((!t->pub && tel_socket_new(t, err, errlen) != 0) || bind_all(t, err, errlen) != 0)
            return 0;
        snprintf(err, errlen, "the telemetry socket is bound again");
        return 1;
    }
    char from[64] = "?";
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, t->pub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            break;
        }
        /* A byte 1 (subscribe) or 0 (unsubscribe), then the prefix; it
         * applies to the connection that sent it, read last. */
        const unsigned char *p = zmq_msg_data(&m);
        size_t len = zmq_msg_size(&m);
        if (len >= 1 && p[0] <= 1 && topic_prefix(p + 1, len - 1)) {
            zmq_setsockopt(t->pub, p[0] ? ZMQ_SUBSCRIBE : ZMQ_UNSUBSCRIBE, p + 1, len - 1);
        } else if (len >= 1 && p[0] == 1) {
            const char *peer = zmq_msg_gets(&m, "Peer-Address");
            snprintf(from, sizeof from, "%s", peer ? peer : "?");
            t->junk++;
        }
        zmq_msg_close(&m);
    }
    if (t->junk < TEL_JUNK_MAX)
        return 0;
    char why[256] = "";
    if (tel_reopen(t, why, sizeof why) != 0) {
        snprintf(err, errlen, "cannot reopen the telemetry socket: %s", why);
        return -1;
    }
    snprintf(err, errlen,
             "reopened the telemetry socket after %d subscriptions that match no topic (the last "
             "from %s); subscribers reconnect by themselves",
             TEL_JUNK_MAX, from);
    return 1;
}

/* Stamps the envelope of the next message. */
static const proto_head *tel_stamp(tel *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    t->head.t_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return &t->head;
}

/* Publishes an encoded payload; seq moves on even when the PUB drops it,
 * since a dropped message is exactly what a subscriber must see as a gap. */
static void tel_send(tel *t, proto_topic topic, const char *payload, size_t len)
{
    if (payload)
        proto_publish(t->pub, topic, payload, len);
    t->head.seq++;
}

void tel_step(tel *t, const proto_step *s)
{
    char buf[PROTO_STEP_BUF];
    int len = proto_step_encode(tel_stamp(t), s, buf, sizeof buf);
    tel_send(t, PROTO_TOPIC_STEP, len < 0 ? NULL : buf, len < 0 ? 0 : (size_t)len);
}

static void tel_send_owned(tel *t, proto_topic topic, char *payload)
{
    tel_send(t, topic, payload, payload ? strlen(payload) : 0);
    free(payload);
}

void tel_node(tel *t, const proto_status *s)
{
    tel_send_owned(t, PROTO_TOPIC_NODE, proto_node_encode(tel_stamp(t), s));
}

void tel_req(tel *t, const proto_req_msg *m)
{
    tel_send_owned(t, PROTO_TOPIC_REQ, proto_req_encode(tel_stamp(t), m));
}

void tel_event(tel *t, proto_event_kind kind, const char *req, const char *code,
               const json_t *detail, const char *fmt, ...)
{
    proto_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    snprintf(ev.req, sizeof ev.req, "%s", req ? req : "");
    snprintf(ev.code, sizeof ev.code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.message, sizeof ev.message, fmt, ap);
    va_end(ap);
    tel_send_owned(t, PROTO_TOPIC_EVENT, proto_event_encode(tel_stamp(t), &ev, detail));
}
