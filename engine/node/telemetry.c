/* telemetry.c: the node's publisher (see telemetry.h). */
#include "telemetry.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

struct tel {
    void *pub;
    proto_head head; /* node name; seq of the next message */
};

int tel_open(tel **out, void *zctx, const char *endpoint, const char *node,
             const curve_keypair *curve, char *err, size_t errlen)
{
    tel *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(t->head.node, sizeof t->head.node, "%s", node);
    t->pub = zmq_socket(zctx, ZMQ_PUB);
    if (!t->pub) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        free(t);
        return -1;
    }
    int linger = 0;
    zmq_setsockopt(t->pub, ZMQ_LINGER, &linger, sizeof linger);
    if (curve && curve_server_apply(t->pub, curve, err, errlen) != 0)
        goto fail;
    if (zmq_bind(t->pub, endpoint) != 0) {
        snprintf(err, errlen, "--telemetry %s: %s", endpoint, zmq_strerror(errno));
        goto fail;
    }
    *out = t;
    return 0;
fail:
    zmq_close(t->pub);
    free(t);
    return -1;
}

void tel_close(tel *t)
{
    if (!t)
        return;
    zmq_close(t->pub);
    free(t);
}

unsigned long long tel_seq(const tel *t)
{
    return t->head.seq;
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
