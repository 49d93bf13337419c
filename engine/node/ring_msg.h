/* ring_msg.h: what stage-to-stage frames say: their kinds, and their JSON
 * payloads, checked as strictly as control requests before any stage acts
 * on them: every field of its type and range, required fields present, no
 * field the kind does not take, lists bounded, and decoded in the same
 * pass into a struct of its kind. A frame that fails is dropped
 * (ring_recv), so the handlers in head*.c and stage*.c read fields that
 * are known to be there and in range. Below ring.c, which frames
 * them. engine/PROTOCOL.md section 6 lists the fields.
 */
#ifndef RING_MSG_H
#define RING_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/proto/curve.h"
#include "engine/proto/protocol.h"

typedef enum ring_kind {
    RING_PREPARE = 1, /* JSON, round trip: ring check and admission of a request */
    RING_START,       /* JSON, head to tail: a request's parameters */
    RING_HIDDEN,      /* float32 [n][dim]: one step's hidden states */
    RING_TOKEN,       /* empty, tail to head: a step is done (and its token) */
    RING_END,         /* JSON, head to tail: the request is over */
    RING_SET,         /* JSON, round trip: live config for every stage */
    RING_DROP,        /* JSON, head to tail: drop sessions */
    RING_REPORT,      /* JSON, a stage straight to the head: handled a frame */
    RING_SET_CHECK,   /* JSON, round trip: would a set fit every stage? */
    RING_SET_UNDO,    /* JSON, round trip: put back what a set changed */
    RING_LOGITS,      /* float32 [n][vocab], tail to head: an eval step's logits */
    RING_BATCH,       /* n segments, float32 [n][dim]: one decode position of n requests */
    RING_TOKENS,      /* int32 [n], tail to head: a batch's sampled tokens, in its order */
    RING_PROBE,       /* JSON, round trip: does the ring answer? (the head's ring health) */
    RING_KIND_COUNT
} ring_kind;

const char *ring_kind_name(ring_kind kind);

/* Bounds of stage-frame values that no request can exceed: the context
 * (--max-ctx's own bound), layers of a model, sessions dropped at once. */
#define RING_CTX_MAX (1 << 30)
#define RING_LAYERS_MAX (1 << 16)
#define RING_DROP_MAX 4096
/* Requests a head runs at once (--max-seqs), which a prepare frame lists. */
#define RING_RUNNING_MAX 256
/* A model's fingerprint (lowercase hex) and its name, in a stage's entry. */
#define RING_FINGERPRINT_LEN 64
#define RING_MODEL_MAX 255

/* What a frame's payload says, decoded by the same walk over a table of
 * fields per kind that checks it (ring_msg.c): the handlers read these,
 * never the JSON, which a stage only passes on (adding its entry). A
 * field the handlers do not read is checked and not stored. */

/* An entry of "stages": a prepare's stage identity and verdict, a start's
 * ring member, a set's verdict. */
typedef struct ring_stage {
    char name[PROTO_NAME_MAX + 1];
    char fingerprint[RING_FINGERPRINT_LEN + 1];
    char model[RING_MODEL_MAX + 1];
    int first, last;
    char next[PROTO_TEXT_MAX]; /* "" on a single node */
    int ok;
    proto_code code;                 /* PROTO_OK when the entry has none */
    char message[PROTO_MESSAGE_MAX]; /* "" when the entry has none */
    int chunk;                       /* prepare: the largest chunk it admits; 0: none said */
} ring_stage;

typedef struct ring_stages {
    int n;
    ring_stage v[PROTO_RING_MAX];
} ring_stages;

/* Session names (allocated: up to RING_DROP_MAX of them). */
typedef struct ring_ids {
    int n;
    char (*v)[PROTO_ID_MAX + 1];
} ring_ids;

/* Ring operations. */
typedef struct ring_ops {
    int n;
    uint64_t v[RING_RUNNING_MAX];
} ring_ops;

/* Frames from the head carry its endpoint and key ("" until it knows them). */
typedef struct ring_msg_prepare {
    char head[PROTO_TEXT_MAX];
    char head_key[CURVE_Z85_LEN + 1];
    char req[PROTO_ID_MAX + 1];
    char session[PROTO_ID_MAX + 1]; /* "" for none */
    int pos, ctx, chunk;
    int eval;
    int quality_bits; /* a quality request's test bits; 0 for another request */
    ring_ids drop;
    ring_ops running; /* none when the frame lists none */
    ring_stages stages;
} ring_msg_prepare;

typedef struct ring_bias {
    int n;
    proto_bias v[PROTO_BIAS_MAX];
} ring_bias;

typedef struct ring_msg_start {
    char head[PROTO_TEXT_MAX];
    char head_key[CURVE_Z85_LEN + 1];
    char req[PROTO_ID_MAX + 1];
    char session[PROTO_ID_MAX + 1];
    int pos, ctx;
    int quality_bits; /* as prepare's */
    float temperature, top_p;
    int64_t seed; /* the bits of the 64-bit seed */
    int top_k;    /* the rest of proto_generate_args' sampling; 0 when absent */
    float min_p, repeat_penalty, presence_penalty, frequency_penalty;
    int has_logprobs, logprobs; /* the tail sends them with each token */
    ring_bias logit_bias;
    ring_stages stages;
} ring_msg_start;

typedef struct ring_msg_end {
    int ok;
} ring_msg_end;

/* set, set_check and set_undo. */
typedef struct ring_msg_set {
    char head[PROTO_TEXT_MAX];
    char head_key[CURVE_Z85_LEN + 1];
    proto_set_args args;
    ring_stages stages;
} ring_msg_set;

/* A probe: the stages it passed, each adding who it is. */
typedef struct ring_msg_probe {
    char head[PROTO_TEXT_MAX];
    char head_key[CURVE_Z85_LEN + 1];
    ring_stages stages;
} ring_msg_probe;

typedef struct ring_msg_drop {
    ring_ids sessions;
} ring_msg_drop;

typedef struct ring_msg_report {
    char name[PROTO_NAME_MAX + 1];
    int first;
    ring_kind of;
    int ok;
    proto_code code;                 /* PROTO_OK when it has none */
    char message[PROTO_MESSAGE_MAX]; /* "" when it has none */
} ring_msg_report;

/* A JSON frame's payload: the member of its kind. */
typedef union ring_msg {
    ring_msg_prepare prepare;
    ring_msg_start start;
    ring_msg_end end;
    ring_msg_set set;
    ring_msg_drop drop;
    ring_msg_report report;
    ring_msg_probe probe;
} ring_msg;

/* Checks the payload of a frame of this kind and decodes it into *out
 * (ring_msg_free it): 0, or -1 with a message naming the field, what was
 * expected and what came, and nothing to free. */
int ring_msg_decode(ring_kind kind, const json_t *o, ring_msg **out, char *err, size_t errlen);
/* Frees a decoded payload of this kind (NULL: nothing). */
void ring_msg_free(ring_kind kind, ring_msg *m);

#endif
