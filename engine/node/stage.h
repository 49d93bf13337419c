/* stage.h: this node's layers as one stage of the ring: admission
 * (stage_admit.c), a request's cache and its steps' telemetry
 * (stage_req.c), live config (stage_config.c), and the frames a non-head
 * stage handles (stage.c). The head drives its own stage through these;
 * serve.c creates the stage, reads its status and hands a non-head stage
 * its frames. What the stage holds (its forward pass, caches, sessions,
 * live config) is its own: the others reach it only through here. */
#ifndef STAGE_H
#define STAGE_H

#include "engine/compute/forward.h"
#include "node.h"

typedef struct stage stage;
/* This node's part of a request running on the ring (stage_state.h). */
typedef struct stage_req stage_req;

/* Sets up this node's layers (nd->o's first and last), its compute pool
 * and session table, and on the tail the logits of a decode batch. nd
 * must outlive the stage. */
int stage_create(stage **out, node *nd, char *err, size_t errlen);
/* Ends the requests still running and frees everything (NULL: nothing). */
void stage_free(stage *sg);
/* Fills status's live config, KV bytes, sessions, busy and requests
 * running here (the head counts its own: it overrides active). */
void stage_status(stage *sg, proto_status *s);
/* A session's context length here (-1: none) and its pending token. */
int stage_session(const stage *sg, const char *name, int *pending);
/* Frees a session's cache: 1 when it existed. */
int stage_drop_session(stage *sg, const char *name);
int stage_prefill_step(const stage *sg); /* PROTO_PREFILL_AUTO or positions */
/* The tail's logits buffer, [--max-seqs][vocab]: a step's rows to sample. */
float *stage_logits(stage *sg);
/* A running request's context position (its cache's length). */
int stage_req_pos(const stage_req *c);
/* A token drawn from one position's logits [vocab] by the request's
 * sampler (tail), and into lp the logprobs it asked for (n_top -1: none),
 * of the logits as they came. */
int stage_sample(stage_req *c, float *logits, int vocab, proto_logprobs *lp);

typedef struct stage_admission {
    proto_code code; /* PROTO_OK, KV_OOM, CTX_LIMIT or NOT_FOUND */
    char message[PROTO_MESSAGE_MAX];
    size_t needed, available, budget;
    int chunk; /* admitted: the largest prefill chunk whose step fits */
} stage_admission;

/* What the steps of a request hold for logits beyond a generate's: an
 * eval's steps hold a chunk of logits (every position's) on the tail and on
 * the head, and on the head a copy when the client asked for them raw. */
typedef enum stage_eval {
    STAGE_EVAL_NONE, /* a generate */
    STAGE_EVAL,      /* an eval */
    STAGE_EVAL_RAW,  /* an eval whose client wants the raw logits */
    STAGE_QUALITY    /* a quality request: the head holds a reference chunk beside the test's */
} stage_eval;

/* Checks that a request reaching context ctx (a quality request: two
 * caches of it, at quality_bits and 32), on session (may be "") whose
 * context the head holds at pos, fits this stage: its KV cache and the
 * memory of a step (scratch, frames, an eval's logits) of at least one
 * position; evicts idle sessions (appending their names to `evicted`)
 * when that makes it fit. Then finds the largest chunk, up to `chunk`,
 * whose steps fit too. */
void stage_admit(stage *sg, const char *session, int pos, int ctx, int chunk, stage_eval eval,
                 int quality_bits, json_t *evicted, stage_admission *out);
/* The running request of ring operation op, or NULL. */
stage_req *stage_find(stage *sg, uint64_t op);
/* Sets up a request running here (in a free place of the stage's). A
 * quality request (quality_bits, else 0) gets two caches: one at
 * quality_bits and the reference at 32. */
int stage_begin(stage *sg, uint64_t op, const char *req, const char *session, int pos, int ctx,
                int quality_bits, const proto_generate_args *sampling, uint64_t seed,
                proto_error *e);
/* The cache a step of c runs on, by its ring flags (RING_F_REF,
 * RING_F_RESET): a quality request's reference or test cache, emptied
 * at a window's start. Nothing for another request. */
void stage_req_select(stage_req *c, unsigned flags);
/* Ends a running request: a session keeps its cache (rolled back to
 * where it was when !ok), anything else is freed. */
void stage_end(stage *sg, stage_req *c, int ok, int pending_token);
/* The two phases of a set (PROTOCOL.md "Live config"). Each fills result
 * (this stage's entry, its verdict included) and returns 0, or -1 with e.
 * check: would the caches fit at the new kv_bits?
 * Changes nothing. apply: at this step boundary, checking again; remembers
 * what it changed under op. undo: puts back what the set of op changed
 * (nothing when this stage did not apply it). */
int stage_check_set(stage *sg, const proto_set_args *set, json_t *result, proto_error *e);
int stage_apply_set(stage *sg, uint64_t op, const proto_set_args *set, json_t *result,
                    proto_error *e);
int stage_undo_set(stage *sg, uint64_t op, json_t *result, proto_error *e);
/* Frees the caches of the sessions named. */
void stage_drop_sessions(stage *sg, const ring_ids *names);
/* Runs n positions of one request through this stage's layers. */
int stage_forward(stage *sg, stage_req *c, const int *tokens, const float *x_in, int n,
                  float *x_out, float *logits, fwd_stats *st, proto_error *e);
/* The same on the tail, with every position's row into out: its logits
 * [n][vocab], or (normed) the final norm's output [n][dim]. */
int stage_forward_rows(stage *sg, stage_req *c, const int *tokens, const float *x_in, int n,
                       int normed, float *out, fwd_stats *st, proto_error *e);
/* One decode position of each of b requests (fwd_step_batch): the
 * weights are read once for all of them. */
int stage_forward_batch(stage *sg, stage_req *const *cs, int b, const int *tokens,
                        const float *x_in, float *x_out, float *logits, fwd_stats *st,
                        proto_error *e);

/* A step this stage ran, for telemetry. */
typedef struct stage_step {
    double t0;    /* clock_ms when the stage started it */
    int64_t step; /* the request's step, or the batch's number */
    int decode;
    int seqs;  /* requests in it */
    int n;     /* positions, all requests together */
    int pos;   /* the (first) request's position before the step */
    int chunk; /* the prefill chunk in effect */
} stage_step;

/* Publishes and logs a step that ends now; c is its (first) request. */
void stage_publish(stage *sg, stage_req *c, const stage_step *p, const fwd_stats *st);
/* A frame on a non-head stage. */
void stage_on_frame(stage *sg, ring_frame *f);
/* A set's fields as a set frame carries them. */
json_t *stage_set_to_json(const proto_set_args *set);

#endif
