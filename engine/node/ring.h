/* ring.h: the stage-to-stage transport of a pipeline ring.
 *
 * Every stage PULLs on its --listen endpoint and PUSHes to its --next one;
 * the tail's --next is the head's --listen, which closes the ring. A frame
 * is one ZeroMQ message: a fixed little-endian header (RING_HDR_BYTES), then
 * a payload that depends on the kind: raw float32 hidden states, nothing,
 * or a JSON object. engine/PROTOCOL.md, "Stage-to-stage frames", is the
 * reference.
 *
 * Besides the ring, a stage that knows the head's endpoint sends REPORT
 * frames straight to it after each frame it handled: the head uses them to
 * name the stage that fell silent when a step misses its deadline.
 */
#ifndef RING_H
#define RING_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <zmq.h>

#include "engine/proto/curve.h"
#include "ring_msg.h"

#define RING_VERSION 1
#define RING_HDR_BYTES 56

/* RING_HIDDEN flags. */
#define RING_F_SAMPLE 1u /* the tail computes logits and samples after this step */
#define RING_F_DECODE 2u /* a decode step (else a prefill chunk) */
#define RING_F_LOGITS 4u /* an eval step: the tail sends every position's logits back */
#define RING_F_EMBED 16u /* with 4, an embed step: the final norm's output instead */
#define RING_F_REF 32u   /* a quality step on the reference cache (else the test cache) */
#define RING_F_RESET 64u /* a quality step that starts a window: its cache is emptied first */
/* TOKEN, TOKENS flag: each token comes with its logprobs record
 * (RING_LP_BYTES: n_top i32, reserved u32, logprob f64, top i32[20],
 * top_lp f64[20]), one for a TOKEN frame, n for a TOKENS frame after its
 * ids; a request that did not ask has n_top -1 and the rest 0. */
#define RING_F_LOGPROBS 8u
#define RING_LP_BYTES 256

/* A batch frame carries one decode position of up to RING_BATCH_MAX
 * requests: a segment (RING_SEG_BYTES on the wire) names each one's
 * request operation, its step and its context position, in the order of
 * the rows of hidden states that follow. */
#define RING_BATCH_MAX 256
#define RING_SEG_BYTES 24

typedef struct ring_seg {
    uint64_t op;
    int64_t step;
    int pos;
} ring_seg;

typedef struct ring_hdr {
    ring_kind kind;
    uint64_t op;  /* the ring operation (a request, a set) the frame belongs to */
    int64_t step; /* the step within the request; -1 for frames outside steps */
    int pos;      /* HIDDEN, TOKEN: context position of the step's first token */
    int n;        /* HIDDEN, TOKEN: positions in the step; BATCH, TOKENS: requests */
    int dim;      /* HIDDEN: floats per position; LOGITS: the vocabulary */
    int token;    /* TOKEN: the sampled id, -1 when the step sampled none */
    unsigned flags;
    int chunk;      /* HIDDEN: the prefill chunk size in effect on the head */
    double down_ms; /* TOKEN: sum of step_ms of the stages after the head */
} ring_hdr;

/* A frame received: the header, the payload and what it decodes to. */
typedef struct ring_frame {
    ring_hdr h;
    zmq_msg_t msg;
    const float *x;     /* HIDDEN, LOGITS, BATCH: [n][dim] inside msg */
    ring_seg *segs;     /* BATCH: [n], decoded */
    int32_t *tokens;    /* TOKENS: [n], decoded (little-endian, as every host we run on) */
    proto_logprobs *lp; /* RING_F_LOGPROBS: TOKEN [1], TOKENS [n], decoded and checked */
    json_t *json;       /* JSON kinds: the payload object, only to pass on */
    ring_msg *m;        /* JSON kinds: the payload decoded, the member of its kind */
} ring_frame;

void ring_frame_free(ring_frame *f);

typedef struct ring ring;

/* CURVE on the ring's links: this node's key pair, and the public key of
 * the stage at --next. The PULL is a CURVE server admitting the keys the
 * context's ZAP handler allows; PUSH sockets are clients. */
typedef struct ring_curve {
    const curve_keypair *keys;
    const char *next_public; /* Z85 */
} ring_curve;

/* Binds a PULL socket on `listen` and connects a PUSH socket to `next`.
 * Either may be NULL (a single node has neither). A peer that sends a
 * message larger than max_frame bytes is disconnected by ZeroMQ. curve:
 * NULL for plain TCP. */
int ring_open(ring **out, void *zctx, const char *listen, const char *next, size_t max_frame,
              const ring_curve *curve, char *err, size_t errlen);
void ring_close(ring *r);

/* The PULL socket, for zmq_poll; NULL without --listen. */
void *ring_socket(ring *r);

/* A HIDDEN or LOGITS frame under construction: the caller writes n * dim
 * floats at the returned pointer (fwd_step writes its output there, no
 * copy), then ring_send_msg() sends it. NULL when out of memory. */
float *ring_hidden_init(zmq_msg_t *msg, const ring_hdr *h);

/* The same for a BATCH frame: h->n segments are written from segs, and
 * the caller writes h->n * h->dim floats at the returned pointer. */
float *ring_batch_init(zmq_msg_t *msg, const ring_hdr *h, const ring_seg *segs);
/* A TOKENS frame: the caller writes h->n ids at the returned pointer;
 * or a TOKEN frame (nothing to write there). With RING_F_LOGPROBS the
 * frame holds the records too, each written by ring_lp_put. */
int32_t *ring_tokens_init(zmq_msg_t *msg, const ring_hdr *h);
/* Record i (0 for a TOKEN frame) of a frame from ring_tokens_init; lp NULL
 * for a request that did not ask. */
void ring_lp_put(zmq_msg_t *msg, const ring_hdr *h, int i, const proto_logprobs *lp);

/* Sends a frame built by ring_hidden_init (the message is consumed, sent
 * or not). Never blocks: fails when the next stage's queue is full. */
int ring_send_msg(ring *r, zmq_msg_t *msg, char *err, size_t errlen);

/* Sends a header with a JSON payload (obj may be NULL for none). */
int ring_send(ring *r, const ring_hdr *h, const json_t *obj, char *err, size_t errlen);

/* Sends a REPORT frame straight to the head at head_ep (connecting to it
 * the first time, or again when it changed). With CURVE, head_key is the
 * head's public key (Z85), as its frames carry it. */
int ring_report(ring *r, const char *head_ep, const char *head_key, const ring_hdr *h,
                const json_t *obj, char *err, size_t errlen);

/* Takes one frame without waiting. Returns 1 with *f filled
 * (ring_frame_free it), 0 when none is queued, -1 with a message for a
 * malformed frame (which is dropped). */
int ring_recv(ring *r, ring_frame *f, char *err, size_t errlen);

/* Decodes and checks a frame held in buf: header, payload size, every
 * header field the kind uses in range and the others zero, and the JSON
 * payload (ring_msg.h). 0 with *f filled (f->x points into buf;
 * ring_frame_free it), or -1 with a message and nothing to free. */
int ring_frame_decode(const void *buf, size_t len, ring_frame *f, char *err, size_t errlen);

/* Header codec, exposed for the tests: encode writes RING_HDR_BYTES bytes;
 * decode checks magic, version and kind and returns -1 with a message. */
void ring_hdr_encode(const ring_hdr *h, unsigned char *buf);
int ring_hdr_decode(const unsigned char *buf, size_t len, ring_hdr *h, char *err, size_t errlen);

#endif
