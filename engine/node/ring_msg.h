/* ring_msg.h: what stage-to-stage frames say: their kinds, and their JSON
 * payloads, checked as strictly as control requests before any stage acts
 * on them: every field of its type and range, required fields present, no
 * field the kind does not take, lists bounded. A frame that fails is
 * dropped (ring_recv), so the handlers in head.c and stage.c read fields
 * that are known to be there and in range. Below ring.c, which frames
 * them. engine/PROTOCOL.md section 6 lists the fields.
 */
#ifndef RING_MSG_H
#define RING_MSG_H

#include <stddef.h>

#include <jansson.h>

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

/* 0 when the payload of a frame of this kind is well formed, else -1
 * with a message naming the field, what was expected and what came. */
int ring_msg_check(ring_kind kind, const json_t *o, char *err, size_t errlen);

#endif
