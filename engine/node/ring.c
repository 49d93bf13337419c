/* ring.c: stage-to-stage frames over PUSH/PULL (see ring.h).
 *
 * The header is written byte by byte in little-endian order so that stages
 * on different machines agree whatever their compilers do with struct
 * padding; the hidden states that follow are float32 in host order, which
 * is little-endian on every machine the engine builds for (x86-64, arm64).
 */
#include "ring.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/protocol.h"
#include "ring_msg.h"

static const unsigned char ring_magic[4] = {'I', 'F', 'R', 'M'};

/* Frames waiting for a dead next stage are held by ZeroMQ up to this many;
 * past it a send fails and the request with it, rather than queueing
 * without bound. Few ever wait: once a stage is silent, the head fails the
 * request and sends only admission rounds until the ring is whole again.
 * (ZeroMQ acknowledges reads in batches of half the mark, so a small mark
 * would throttle a healthy ring.) */
#define RING_SNDHWM 1000

/* The widest hidden state a frame may claim (floats per position), and
 * the longest time a stage may add to down_ms. */
#define RING_DIM_MAX (1 << 16)
#define RING_MS_MAX 1e9

struct ring {
    void *zctx;
    void *pull;   /* bound on --listen, or NULL */
    void *push;   /* connected to --next, or NULL */
    void *report; /* connected to report_ep, or NULL */
    char *report_ep;
    curve_keypair keys; /* with CURVE: this node's; else public_key "" */
};

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
    ring_msg_free(f->h.kind, f->m);
    free(f->segs);
    free(f->tokens);
    free(f->lp);
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
              const ring_curve *curve, char *err, size_t errlen)
{
    ring *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->zctx = zctx;
    if (curve)
        r->keys = *curve->keys;
    if (listen) {
        r->pull = ring_socket_new(zctx, ZMQ_PULL, err, errlen);
        if (!r->pull)
            goto fail;
        int64_t max = (int64_t)max_frame;
        zmq_setsockopt(r->pull, ZMQ_MAXMSGSIZE, &max, sizeof max);
        if (curve && curve_server_apply(r->pull, curve->keys, err, errlen) != 0)
            goto fail;
        if (zmq_bind(r->pull, listen) != 0) {
            snprintf(err, errlen, "--listen %s: %s", listen, zmq_strerror(errno));
            goto fail;
        }
    }
    if (next) {
        r->push = ring_socket_new(zctx, ZMQ_PUSH, err, errlen);
        if (!r->push)
            goto fail;
        if (curve && curve_client_apply(r->push, curve->keys, curve->next_public, err, errlen) != 0)
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

float *ring_batch_init(zmq_msg_t *msg, const ring_hdr *h, const ring_seg *segs)
{
    size_t segs_bytes = (size_t)h->n * RING_SEG_BYTES;
    size_t bytes = RING_HDR_BYTES + segs_bytes + (size_t)h->n * (size_t)h->dim * sizeof(float);
    if (zmq_msg_init_size(msg, bytes) != 0)
        return NULL;
    unsigned char *p = zmq_msg_data(msg);
    ring_hdr_encode(h, p);
    for (int i = 0; i < h->n; i++) {
        unsigned char *q = p + RING_HDR_BYTES + (size_t)i * RING_SEG_BYTES;
        put_u64(q, segs[i].op);
        put_u64(q + 8, (uint64_t)segs[i].step);
        put_u32(q + 16, (uint32_t)segs[i].pos);
        put_u32(q + 20, 0);
    }
    return (float *)(void *)(p + RING_HDR_BYTES + segs_bytes);
}

/* A TOKEN or TOKENS frame's ids, then its logprobs records. */
static size_t ids_bytes(const ring_hdr *h)
{
    return h->kind == RING_TOKENS ? (size_t)h->n * sizeof(int32_t) : 0;
}

static size_t lp_count(const ring_hdr *h)
{
    if (!(h->flags & RING_F_LOGPROBS))
        return 0;
    return h->kind == RING_TOKENS ? (size_t)h->n : 1;
}

int32_t *ring_tokens_init(zmq_msg_t *msg, const ring_hdr *h)
{
    if (zmq_msg_init_size(msg, RING_HDR_BYTES + ids_bytes(h) + lp_count(h) * RING_LP_BYTES) != 0)
        return NULL;
    unsigned char *p = zmq_msg_data(msg);
    ring_hdr_encode(h, p);
    return (int32_t *)(void *)(p + RING_HDR_BYTES);
}

static void put_f64(unsigned char *p, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_u64(p, bits);
}

static double get_f64(const unsigned char *p)
{
    uint64_t bits = get_u64(p);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Where a record's fields are. */
#define LP_LOGPROB 8
#define LP_TOP 16
#define LP_TOP_LP (LP_TOP + 4 * PROTO_LOGPROBS_MAX)

void ring_lp_put(zmq_msg_t *msg, const ring_hdr *h, int i, const proto_logprobs *lp)
{
    unsigned char *q = (unsigned char *)zmq_msg_data(msg) + RING_HDR_BYTES + ids_bytes(h) +
                       (size_t)i * RING_LP_BYTES;
    memset(q, 0, RING_LP_BYTES);
    int n = lp ? lp->n_top : -1;
    put_u32(q, (uint32_t)n);
    if (n < 0)
        return;
    put_f64(q + LP_LOGPROB, lp->logprob);
    for (int k = 0; k < n; k++) {
        put_u32(q + LP_TOP + 4 * k, (uint32_t)lp->top[k]);
        put_f64(q + LP_TOP_LP + 8 * k, lp->top_lp[k]);
    }
}

/* One record, checked: n_top -1..20 with what it does not use zero, the
 * values as proto_logprobs_check wants them. */
static int lp_get(const unsigned char *q, proto_logprobs *lp, char *err, size_t errlen)
{
    static const unsigned char zero[RING_LP_BYTES];
    memset(lp, 0, sizeof *lp);
    lp->n_top = (int32_t)get_u32(q);
    int n = lp->n_top;
    if (n < -1 || n > PROTO_LOGPROBS_MAX || get_u32(q + 4) != 0) {
        snprintf(err, errlen, "logprobs record with n_top %d (expected -1..%d, reserved 0)", n,
                 PROTO_LOGPROBS_MAX);
        return -1;
    }
    if (n >= 0) {
        lp->logprob = get_f64(q + LP_LOGPROB);
        for (int k = 0; k < n; k++) {
            lp->top[k] = (int32_t)get_u32(q + LP_TOP + 4 * k);
            lp->top_lp[k] = get_f64(q + LP_TOP_LP + 8 * k);
        }
    }
    int used = n < 0 ? 0 : n;
    if ((n < 0 && memcmp(q + LP_LOGPROB, zero, 8) != 0) ||
        memcmp(q + LP_TOP + 4 * used, zero, 4 * (size_t)(PROTO_LOGPROBS_MAX - used)) != 0 ||
        memcmp(q + LP_TOP_LP + 8 * used, zero, 8 * (size_t)(PROTO_LOGPROBS_MAX - used)) != 0) {
        snprintf(err, errlen, "logprobs record with %d alternatives and other bytes not zero", n);
        return -1;
    }
    return n < 0 ? 0 : proto_logprobs_check(lp, n, PROTO_TOKEN_ID_MAX + 1, err, errlen);
}

/* The records after a TOKEN or TOKENS frame's ids (p, len: the payload),
 * into f->lp; a TOKEN frame's is for its token, never -1. */
static int lp_records(ring_frame *f, const unsigned char *p, size_t len, char *err, size_t errlen)
{
    size_t n = lp_count(&f->h), want = ids_bytes(&f->h) + n * RING_LP_BYTES;
    if (len != want) {
        snprintf(err, errlen, "%s frame of %zu payload bytes, n=%d flags %u needs %zu",
                 ring_kind_name(f->h.kind), len, f->h.n, f->h.flags, want);
        return -1;
    }
    if (n == 0)
        return 0;
    if (!(f->lp = malloc(n * sizeof *f->lp))) {
        snprintf(err, errlen, "out of memory for %zu logprobs records", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char why[PROTO_MESSAGE_MAX];
        if (lp_get(p + ids_bytes(&f->h) + i * RING_LP_BYTES, &f->lp[i], why, sizeof why) != 0 ||
            (f->h.kind == RING_TOKEN && f->lp[i].n_top < 0 &&
             snprintf(why, sizeof why, "no logprobs for its token") > 0)) {
            snprintf(err, errlen, "%s frame: token %zu: %s", ring_kind_name(f->h.kind), i, why);
            return -1;
        }
    }
    return 0;
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

int ring_report(ring *r, const char *head_ep, const char *head_key, const ring_hdr *h,
                const json_t *obj, char *err, size_t errlen)
{
    int curve = r->keys.public_key[0] != '\0';
    if (curve && !head_key[0]) {
        snprintf(err, errlen, "the head has not said its CURVE key yet");
        return -1;
    }
    if (!r->report_ep || strcmp(r->report_ep, head_ep) != 0) {
        if (r->report)
            zmq_close(r->report);
        free(r->report_ep);
        r->report_ep = NULL;
        r->report = ring_socket_new(r->zctx, ZMQ_PUSH, err, errlen);
        if (!r->report)
            return -1;
        if ((curve && curve_client_apply(r->report, &r->keys, head_key, err, errlen) != 0) ||
            zmq_connect(r->report, head_ep) != 0) {
            if (!curve || err[0] == '\0')
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

/* A step's header (hidden, token): where it is and what it carries. */
static int step_hdr_check(const ring_hdr *h, char *err, size_t errlen)
{
    const char *what = ring_kind_name(h->kind);
    if (h->step < 0 || h->n < 1 || h->n > PROTO_PREFILL_STEP_MAX || h->pos < 0 ||
        h->pos > RING_CTX_MAX - h->n) {
        snprintf(err, errlen,
                 "%s frame with step %lld, pos %d, n %d (expected step >= 0, n 1..%d, "
                 "pos + n <= %d)",
                 what, (long long)h->step, h->pos, h->n, PROTO_PREFILL_STEP_MAX, RING_CTX_MAX);
        return -1;
    }
    /* An eval step is a prefill chunk that samples nothing; a quality
     * step and an embed step are eval steps. */
    unsigned quality = RING_F_REF | RING_F_RESET;
    if ((h->flags & ~(RING_F_SAMPLE | RING_F_DECODE | RING_F_LOGITS | RING_F_LOGPROBS |
                      RING_F_EMBED | quality)) ||
        ((h->flags & RING_F_EMBED) && !(h->flags & RING_F_LOGITS)) ||
        ((h->flags & RING_F_EMBED) && (h->flags & quality)) ||
        ((h->flags & RING_F_LOGPROBS) && (h->kind != RING_TOKEN || h->token < 0)) ||
        ((h->flags & RING_F_DECODE) && h->n != 1) ||
        ((h->flags & RING_F_LOGITS) && (h->flags & (RING_F_SAMPLE | RING_F_DECODE))) ||
        ((h->flags & quality) && !(h->flags & RING_F_LOGITS))) {
        snprintf(err, errlen, "%s frame with flags %u and n %d", what, h->flags, h->n);
        return -1;
    }
    if (h->chunk < 0 || h->chunk > PROTO_PREFILL_STEP_MAX || !(h->down_ms >= 0.0) ||
        h->down_ms > RING_MS_MAX) {
        snprintf(err, errlen, "%s frame with chunk %d, down_ms %g", what, h->chunk, h->down_ms);
        return -1;
    }
    int dim_ok = h->kind == RING_HIDDEN   ? h->dim >= 1 && h->dim <= RING_DIM_MAX
                 : h->kind == RING_LOGITS ? h->dim >= 1 && h->dim <= PROTO_TOKEN_ID_MAX + 1
                                          : h->dim == 0;
    int token_ok =
        h->kind == RING_TOKEN ? h->token >= -1 && h->token <= PROTO_TOKEN_ID_MAX : h->token == -1;
    if (!dim_ok || !token_ok) {
        snprintf(err, errlen, "%s frame with dim %d, token %d", what, h->dim, h->token);
        return -1;
    }
    return 0;
}

/* A batch (hidden states of n requests) or its tokens: n requests, one
 * position each, every per-request field in the segments. */
static int batch_hdr_check(const ring_hdr *h, char *err, size_t errlen)
{
    int dim_ok = h->kind == RING_BATCH ? h->dim >= 1 && h->dim <= RING_DIM_MAX : h->dim == 0;
    unsigned flags_ok = h->kind == RING_TOKENS ? RING_F_LOGPROBS : 0u;
    if (h->step < 0 || h->n < 1 || h->n > RING_BATCH_MAX || h->pos || !dim_ok || h->token != -1 ||
        (h->flags & ~flags_ok) || h->chunk < 0 || h->chunk > PROTO_PREFILL_STEP_MAX ||
        !(h->down_ms >= 0.0) || h->down_ms > RING_MS_MAX) {
        snprintf(err, errlen,
                 "%s frame with step %lld, n %d, pos %d, dim %d, token %d, flags %u, chunk %d, "
                 "down_ms %g (expected step >= 0, n 1..%d, pos 0, token -1, no flags but "
                 "logprobs on tokens)",
                 ring_kind_name(h->kind), (long long)h->step, h->n, h->pos, h->dim, h->token,
                 h->flags, h->chunk, h->down_ms, RING_BATCH_MAX);
        return -1;
    }
    return 0;
}

/* The segments of a batch frame, each checked, into f->segs. */
static int batch_segs(ring_frame *f, const unsigned char *p, char *err, size_t errlen)
{
    f->segs = malloc((size_t)f->h.n * sizeof *f->segs);
    if (!f->segs) {
        snprintf(err, errlen, "out of memory for a batch of %d", f->h.n);
        return -1;
    }
    for (int i = 0; i < f->h.n; i++) {
        const unsigned char *q = p + (size_t)i * RING_SEG_BYTES;
        ring_seg *g = &f->segs[i];
        g->op = get_u64(q);
        g->step = (int64_t)get_u64(q + 8);
        g->pos = (int32_t)get_u32(q + 16);
        if (g->op == 0 || g->step < 0 || g->pos < 0 || g->pos >= RING_CTX_MAX ||
            get_u32(q + 20) != 0) {
            snprintf(err, errlen,
                     "batch frame: segment %d with op %llu, step %lld, pos %d (expected op >= 1, "
                     "step >= 0, pos 0..%d, reserved 0)",
                     i, (unsigned long long)g->op, (long long)g->step, g->pos, RING_CTX_MAX - 1);
            return -1;
        }
    }
    return 0;
}

/* Frames outside steps use op and, for reports, the step reported; the
 * other header fields must be zero (token -1). */
static int json_hdr_check(const ring_hdr *h, char *err, size_t errlen)
{
    int step_ok = h->kind == RING_REPORT ? h->step >= -1 : h->step == -1;
    if (!step_ok || h->pos || h->n || h->dim || h->token != -1 || h->flags || h->chunk ||
        h->down_ms != 0.0) {
        snprintf(err, errlen,
                 "%s frame with step %lld, pos %d, n %d, dim %d, token %d, flags %u, chunk %d "
                 "(expected step -1 and the rest unset)",
                 ring_kind_name(h->kind), (long long)h->step, h->pos, h->n, h->dim, h->token,
                 h->flags, h->chunk);
        return -1;
    }
    return 0;
}

/* Checks that the header and payload fit the kind and decodes the payload. */
static int ring_payload(ring_frame *f, const unsigned char *p, size_t len, char *err, size_t errlen)
{
    int step = f->h.kind == RING_HIDDEN || f->h.kind == RING_TOKEN || f->h.kind == RING_LOGITS;
    int batch = f->h.kind == RING_BATCH || f->h.kind == RING_TOKENS;
    if ((step ? step_hdr_check : batch ? batch_hdr_check : json_hdr_check)(&f->h, err, errlen) != 0)
        return -1;
    switch (f->h.kind) {
    case RING_BATCH: {
        size_t segs = (size_t)f->h.n * RING_SEG_BYTES;
        size_t want = segs + (size_t)f->h.n * (size_t)f->h.dim * sizeof(float);
        if (len != want) {
            snprintf(err, errlen, "batch frame of %zu payload bytes, n=%d dim=%d needs %zu", len,
                     f->h.n, f->h.dim, want);
            return -1;
        }
        f->x = (const float *)(const void *)(p + segs);
        return batch_segs(f, p, err, errlen);
    }
    case RING_TOKENS: {
        size_t want = ids_bytes(&f->h);
        if (len < want) {
            snprintf(err, errlen, "tokens frame of %zu payload bytes, n=%d needs %zu", len, f->h.n,
                     want);
            return -1;
        }
        /* Copied out: ZeroMQ may hand a small message at any offset of its
         * receive buffer, which an int32_t cannot be read from in place. */
        f->tokens = malloc(want);
        if (!f->tokens) {
            snprintf(err, errlen, "out of memory for a tokens frame of %d", f->h.n);
            return -1;
        }
        memcpy(f->tokens, p, want);
        for (int i = 0; i < f->h.n; i++) {
            if (f->tokens[i] < 0 || f->tokens[i] > PROTO_TOKEN_ID_MAX) {
                snprintf(err, errlen, "tokens frame: token %d is %d (expected 0..%d)", i,
                         f->tokens[i], PROTO_TOKEN_ID_MAX);
                return -1;
            }
        }
        return lp_records(f, p, len, err, errlen);
    }
    case RING_HIDDEN:
    case RING_LOGITS: {
        size_t want = (size_t)f->h.n * (size_t)f->h.dim * sizeof(float);
        if (len != want) {
            snprintf(err, errlen, "%s frame of %zu payload bytes, n=%d dim=%d needs %zu",
                     ring_kind_name(f->h.kind), len, f->h.n, f->h.dim, want);
            return -1;
        }
        f->x = (const float *)(const void *)p;
        return 0;
    }
    case RING_TOKEN:
        return lp_records(f, p, len, err, errlen);
    default: {
        json_error_t je;
        f->json = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
        if (!f->json || !json_is_object(f->json)) {
            snprintf(err, errlen, "%s frame: payload is not a JSON object%s%s",
                     ring_kind_name(f->h.kind), f->json ? "" : ": ", f->json ? "" : je.text);
            return -1;
        }
        return ring_msg_decode(f->h.kind, f->json, &f->m, err, errlen);
    }
    }
}

int ring_frame_decode(const void *buf, size_t len, ring_frame *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    zmq_msg_init(&f->msg);
    if (ring_hdr_decode(buf, len, &f->h, err, errlen) != 0 ||
        ring_payload(f, (const unsigned char *)buf + RING_HDR_BYTES, len - RING_HDR_BYTES, err,
                     errlen) != 0) {
        ring_frame_free(f);
        return -1;
    }
    return 0;
}

int ring_recv(ring *r, ring_frame *f, char *err, size_t errlen)
{
    zmq_msg_t msg;
    memset(f, 0, sizeof *f);
    if (!r || !r->pull)
        return 0;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, r->pull, ZMQ_DONTWAIT) < 0) {
        int e = errno;
        zmq_msg_close(&msg);
        if (e == EAGAIN || e == EINTR)
            return 0;
        snprintf(err, errlen, "--listen: %s", zmq_strerror(e));
        return -1;
    }
    if (zmq_msg_more(&msg)) {
        snprintf(err, errlen, "ring frame in several parts (expected one)");
        /* The remaining parts are read and dropped too. */
        while (zmq_msg_more(&msg)) {
            zmq_msg_close(&msg);
            zmq_msg_init(&msg);
            if (zmq_msg_recv(&msg, r->pull, ZMQ_DONTWAIT) < 0)
                break;
        }
        zmq_msg_close(&msg);
        return -1;
    }
    /* ZeroMQ may hand a small message at any offset of its receive
     * buffer; payloads are read in place as floats, so such a message is
     * copied to memory of its own first. */
    if ((uintptr_t)zmq_msg_data(&msg) % sizeof(float) != 0) {
        zmq_msg_t copy;
        if (zmq_msg_init_size(&copy, zmq_msg_size(&msg)) != 0) {
            zmq_msg_close(&msg);
            snprintf(err, errlen, "out of memory for a ring frame of %zu bytes",
                     zmq_msg_size(&msg));
            return -1;
        }
        memcpy(zmq_msg_data(&copy), zmq_msg_data(&msg), zmq_msg_size(&msg));
        zmq_msg_close(&msg);
        msg = copy;
    }
    if (ring_frame_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), f, err, errlen) != 0) {
        zmq_msg_close(&msg);
        return -1;
    }
    /* f->x points into the message: the frame keeps it until freed. */
    zmq_msg_close(&f->msg);
    f->msg = msg;
    return 1;
}
