/* ring.c: stage-to-stage frames over PUSH/PULL (see ring.h).
 *
 * The header is written byte by byte in little-endian order so that stages
 * on different machines agree whatever their compilers do with struct
 * padding; the hidden states that follow are float32 in host order, which
 * is little-endian on every machine the engine builds for (x86-64, arm64).
 */
#include "ring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char ring_magic[4] = {'I', 'F', 'R', 'M'};

/* Frames waiting for a dead next stage are held by ZeroMQ up to this many;
 * past it a send fails and the request with it, rather than queueing
 * without bound. Few ever wait: once a stage is silent, the head fails the
 * request and sends only admission rounds until the ring is whole again.
 * (ZeroMQ acknowledges reads in batches of half the mark, so a small mark
 * would throttle a healthy ring.) */
#define RING_SNDHWM 1000

/* Bounds a HIDDEN header may claim before its size is even checked. */
#define RING_N_MAX (1 << 20)
#define RING_DIM_MAX (1 << 16)

struct ring {
    void *zctx;
    void *pull;   /* bound on --listen, or NULL */
    void *push;   /* connected to --next, or NULL */
    void *report; /* connected to report_ep, or NULL */
    char *report_ep;
};

static const char *const kind_names[RING_KIND_COUNT] = {
    [RING_PREPARE] = "prepare", [RING_START] = "start",   [RING_HIDDEN] = "hidden",
    [RING_TOKEN] = "token",     [RING_END] = "end",       [RING_SET] = "set",
    [RING_DROP] = "drop",       [RING_REPORT] = "report",
};

const char *ring_kind_name(ring_kind kind)
{
    if (kind <= 0 || kind >= RING_KIND_COUNT)
        return "unknown";
    return kind_names[kind];
}

static void put_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static unsigned get_u16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void ring_hdr_encode(const ring_hdr *h, unsigned char *buf)
{
    uint64_t bits;
    memcpy(&bits, &h->down_ms, sizeof bits);
    memcpy(buf, ring_magic, 4);
    put_u16(buf + 4, RING_VERSION);
    put_u16(buf + 6, (unsigned)h->kind);
    put_u64(buf + 8, h->op);
    put_u64(buf + 16, (uint64_t)h->step);
    put_u32(buf + 24, (uint32_t)h->pos);
    put_u32(buf + 28, (uint32_t)h->n);
    put_u32(buf + 32, (uint32_t)h->dim);
    put_u32(buf + 36, (uint32_t)h->token);
    put_u32(buf + 40, h->flags);
    put_u32(buf + 44, (uint32_t)h->chunk);
    put_u64(buf + 48, bits);
}

int ring_hdr_decode(const unsigned char *buf, size_t len, ring_hdr *h, char *err, size_t errlen)
{
    if (len < RING_HDR_BYTES) {
        snprintf(err, errlen, "ring frame of %zu bytes, shorter than its %d-byte header", len,
                 RING_HDR_BYTES);
        return -1;
    }
    if (memcmp(buf, ring_magic, 4) != 0) {
        snprintf(err, errlen, "ring frame without the IFRM magic (not an inferd stage?)");
        return -1;
    }
    unsigned version = get_u16(buf + 4);
    if (version != RING_VERSION) {
        snprintf(err, errlen, "ring frame version %u, this node speaks %d", version, RING_VERSION);
        return -1;
    }
    unsigned kind = get_u16(buf + 6);
    if (kind == 0 || kind >= RING_KIND_COUNT) {
        snprintf(err, errlen, "ring frame of unknown kind %u", kind);
        return -1;
    }
    uint64_t bits = get_u64(buf + 48);
    h->kind = (ring_kind)kind;
    h->op = get_u64(buf + 8);
    h->step = (int64_t)get_u64(buf + 16);
    h->pos = (int32_t)get_u32(buf + 24);
    h->n = (int32_t)get_u32(buf + 28);
    h->dim = (int32_t)get_u32(buf + 32);
    h->token = (int32_t)get_u32(buf + 36);
    h->flags = get_u32(buf + 40);
    h->chunk = (int32_t)get_u32(buf + 44);
    memcpy(&h->down_ms, &bits, sizeof bits);
    return 0;
}

void ring_frame_free(ring_frame *f)
{
    if (f->json)
        json_decref(f->json);
    zmq_msg_close(&f->msg);
    memset(f, 0, sizeof *f);
}

static void *ring_socket_new(void *zctx, int type, char *err, size_t errlen)
{
    void *s = zmq_socket(zctx, type);
    if (!s) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        return NULL;
    }
    /* Closing must never wait for a dead peer to take queued frames. */
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (type == ZMQ_PUSH) {
        int hwm = RING_SNDHWM;
        zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    }
    return s;
}

int ring_open(ring **out, void *zctx, const char *listen, const char *next, size_t max_frame,
              char *err, size_t errlen)
{
    ring *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->zctx = zctx;
    if (listen) {
        r->pull = ring_socket_new(zctx, ZMQ_PULL, err, errlen);
        if (!r->pull)
            goto fail;
        int64_t max = (int64_t)max_frame;
        zmq_setsockopt(r->pull, ZMQ_MAXMSGSIZE, &max, sizeof max);
        if (zmq_bind(r->pull, listen) != 0) {
            snprintf(err, errlen, "--listen %s: %s", listen, zmq_strerror(errno));
            goto fail;
        }
    }
    if (next) {
        r->push = ring_socket_new(zctx, ZMQ_PUSH, err, errlen);
        if (!r->push)
            goto fail;
        if (zmq_connect(r->push, next) != 0) {
            snprintf(err, errlen, "--next %s: %s", next, zmq_strerror(errno));
            goto fail;
        }
    }
    *out = r;
    return 0;
fail:
    ring_close(r);
    return -1;
}

void ring_close(ring *r)
{
    if (!r)
        return;
    if (r->pull)
        zmq_close(r->pull);
    if (r->push)
        zmq_close(r->push);
    if (r->report)
        zmq_close(r->report);
    free(r->report_ep);
    free(r);
}

void *ring_socket(ring *r)
{
    return r ? r->pull : NULL;
}

float *ring_hidden_init(zmq_msg_t *msg, const ring_hdr *h)
{
    size_t bytes = RING_HDR_BYTES + (size_t)h->n * (size_t)h->dim * sizeof(float);
    if (zmq_msg_init_size(msg, bytes) != 0)
        return NULL;
    unsigned char *p = zmq_msg_data(msg);
    ring_hdr_encode(h, p);
    return (float *)(void *)(p + RING_HDR_BYTES);
}

static int ring_send_on(void *sock, zmq_msg_t *msg, const char *what, char *err, size_t errlen)
{
    if (!sock) {
        zmq_msg_close(msg);
        snprintf(err, errlen, "no %s socket to send on", what);
        return -1;
    }
    if (zmq_msg_send(msg, sock, ZMQ_DONTWAIT) < 0) {
        int e = errno;
        zmq_msg_close(msg);
        if (e == EAGAIN)
            snprintf(err, errlen,
                     "%s: %d frames already queued for a stage that does not take them", what,
                     RING_SNDHWM);
        else
            snprintf(err, errlen, "%s: %s", what, zmq_strerror(e));
        return -1;
    }
    return 0;
}

int ring_send_msg(ring *r, zmq_msg_t *msg, char *err, size_t errlen)
{
    return ring_send_on(r->push, msg, "--next", err, errlen);
}

/* Builds header + JSON text into one message. */
static int ring_msg_json(zmq_msg_t *msg, const ring_hdr *h, const json_t *obj, char *err,
                         size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    if (obj) {
        text = json_dumps(obj, JSON_COMPACT);
        if (!text) {
            snprintf(err, errlen, "out of memory encoding a %s frame", ring_kind_name(h->kind));
            return -1;
        }
        len = strlen(text);
    }
    if (zmq_msg_init_size(msg, RING_HDR_BYTES + len) != 0) {
        free(text);
        snprintf(err, errlen, "out of memory for a %s frame", ring_kind_name(h->kind));
        return -1;
    }
    unsigned char *p = zmq_msg_data(msg);
    ring_hdr_encode(h, p);
    if (len)
        memcpy(p + RING_HDR_BYTES, text, len);
    free(text);
    return 0;
}

int ring_send(ring *r, const ring_hdr *h, const json_t *obj, char *err, size_t errlen)
{
    zmq_msg_t msg;
    if (ring_msg_json(&msg, h, obj, err, errlen) != 0)
        return -1;
    return ring_send_on(r->push, &msg, "--next", err, errlen);
}

int ring_report(ring *r, const char *head_ep, const ring_hdr *h, const json_t *obj, char *err,
                size_t errlen)
{
    if (!r->report_ep || strcmp(r->report_ep, head_ep) != 0) {
        if (r->report)
            zmq_close(r->report);
        free(r->report_ep);
        r->report_ep = NULL;
        r->report = ring_socket_new(r->zctx, ZMQ_PUSH, err, errlen);
        if (!r->report)
            return -1;
        if (zmq_connect(r->report, head_ep) != 0) {
            snprintf(err, errlen, "head endpoint %s: %s", head_ep, zmq_strerror(errno));
            zmq_close(r->report);
            r->report = NULL;
            return -1;
        }
        r->report_ep = strdup(head_ep);
        if (!r->report_ep) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    zmq_msg_t msg;
    if (ring_msg_json(&msg, h, obj, err, errlen) != 0)
        return -1;
    return ring_send_on(r->report, &msg, "report", err, errlen);
}

/* Checks that the payload fits the header's kind and decodes it. */
static int ring_payload(ring_frame *f, const unsigned char *p, size_t len, char *err, size_t errlen)
{
    switch (f->h.kind) {
    case RING_HIDDEN: {
        if (f->h.n < 1 || f->h.n > RING_N_MAX || f->h.dim < 1 || f->h.dim > RING_DIM_MAX) {
            snprintf(err, errlen, "hidden frame with n=%d dim=%d (expected 1..%d, 1..%d)", f->h.n,
                     f->h.dim, RING_N_MAX, RING_DIM_MAX);
            return -1;
        }
        size_t want = (size_t)f->h.n * (size_t)f->h.dim * sizeof(float);
        if (len != want) {
            snprintf(err, errlen, "hidden frame of %zu payload bytes, n=%d dim=%d needs %zu", len,
                     f->h.n, f->h.dim, want);
            return -1;
        }
        f->x = (const float *)(const void *)p;
        return 0;
    }
    case RING_TOKEN:
        if (len != 0) {
            snprintf(err, errlen, "token frame with %zu payload bytes (expected none)", len);
            return -1;
        }
        return 0;
    default: {
        json_error_t je;
        f->json = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
        if (!f->json || !json_is_object(f->json)) {
            snprintf(err, errlen, "%s frame: payload is not a JSON object%s%s",
                     ring_kind_name(f->h.kind), f->json ? "" : ": ", f->json ? "" : je.text);
            return -1;
        }
        return 0;
    }
    }
}

int ring_recv(ring *r, ring_frame *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    zmq_msg_init(&f->msg);
    if (!r || !r->pull)
        return 0;
    if (zmq_msg_recv(&f->msg, r->pull, ZMQ_DONTWAIT) < 0) {
        int e = errno;
        zmq_msg_close(&f->msg);
        if (e == EAGAIN || e == EINTR)
            return 0;
        snprintf(err, errlen, "--listen: %s", zmq_strerror(e));
        return -1;
    }
    const unsigned char *p = zmq_msg_data(&f->msg);
    size_t len = zmq_msg_size(&f->msg);
    if (zmq_msg_more(&f->msg)) {
        snprintf(err, errlen, "ring frame in several parts (expected one)");
        goto drop;
    }
    if (ring_hdr_decode(p, len, &f->h, err, errlen) != 0)
        goto drop;
    if (ring_payload(f, p + RING_HDR_BYTES, len - RING_HDR_BYTES, err, errlen) != 0)
        goto drop;
    return 1;
drop:
    /* A multi-part message's remaining parts are read and dropped too. */
    while (zmq_msg_more(&f->msg)) {
        zmq_msg_close(&f->msg);
        zmq_msg_init(&f->msg);
        if (zmq_msg_recv(&f->msg, r->pull, ZMQ_DONTWAIT) < 0)
            break;
    }
    ring_frame_free(f);
    return -1;
}
