/* forward.h: the forward pass of one pipeline stage, layers [first, last).
 *
 * A step runs n consecutive positions through the stage's layers: a
 * prefill chunk (n = prefill_step or what is left of the prompt) or one
 * decode token (n = 1). The first stage embeds token ids; other stages take
 * the previous stage's hidden states. The last stage applies the final norm
 * and computes logits of the step's last position.
 */
#ifndef FORWARD_H
#define FORWARD_H

#include <stddef.h>

#include "kvcache.h"
#include "engine/model/model.h"
#include "pool.h"

typedef struct fwd_stage fwd_stage;

typedef struct fwd_stats {
    double model_ms;  /* wall time of this stage's compute for the step */
    float act_max;    /* largest |x| of the hidden state the stage outputs */
    int nonfinite;    /* NaN/Inf count in that hidden state */
} fwd_stats;

/* pool: the engine's threads (also sets OpenBLAS to the same count). */
int fwd_create(fwd_stage **out, const model *m, int first, int last, pool *pool, char *err,
               size_t errlen);
void fwd_free(fwd_stage *s);

int fwd_first(const fwd_stage *s);
int fwd_last(const fwd_stage *s);
int fwd_is_head(const fwd_stage *s);   /* first == 0 */
int fwd_is_tail(const fwd_stage *s);   /* last == n_layers */

/* Shape of the KV cache this stage needs (its layers only). */
kv_shape fwd_kv_shape(const fwd_stage *s);

/* Scratch held now that grows with the chunk (activations, attention
 * tiles): what the largest step since the last release needed. */
size_t fwd_scratch_bytes(const fwd_stage *s);
/* What that scratch is for steps of up to n positions over a cache of this
 * shape: what a memory guard must count before admitting such steps. */
size_t fwd_scratch_bytes_for(const fwd_stage *s, kv_shape shape, int n);
/* Frees the scratch (the next step allocates what it needs again), so that
 * the memory of a large chunk goes back once its request is over. */
void fwd_scratch_release(fwd_stage *s);

/* Runs positions [kv_len(kv), kv_len(kv) + n). Input: `tokens` [n] on the
 * head stage, else `x_in` [n][dim]. Output: on the tail stage, logits of
 * the last position into `logits` [vocab] when logits != NULL; on other
 * stages, hidden states into `x_out` [n][dim]. Reserves KV blocks as
 * needed and commits kv_len += n. On error (allocation) returns -1 with a
 * message and the cache keeps its previous length. */
int fwd_step(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
             float *x_out, float *logits, fwd_stats *st, char *err, size_t errlen);

/* The same on the tail stage, with the logits of all n positions into
 * `logits` [n][vocab]: a teacher-forced evaluation of a prompt. */
int fwd_step_logits(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                    float *logits, fwd_stats *st, char *err, size_t errlen);

#endif
