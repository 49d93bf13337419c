/* forward.h: the forward pass of one pipeline stage, layers [first, last).
 *
 * A step runs n consecutive positions of one sequence through the stage's
 * layers: a prefill chunk (n = prefill_step or what is left of the prompt)
 * or one decode token (n = 1); or a batch step runs one decode position of
 * each of b sequences, reading every weight once for all of them. The
 * first stage embeds token ids; other stages take the previous stage's
 * hidden states. The last stage applies the final norm and computes
 * logits of the step's last position (of every sequence's, in a batch).
 */
#ifndef FORWARD_H
#define FORWARD_H

#include <stddef.h>

#include "engine/model/model.h"
#include "kvcache.h"
#include "pool.h"

typedef struct fwd_stage fwd_stage;

typedef struct fwd_stats {
    double model_ms; /* wall time of this stage's compute for the step */
    float act_max;   /* largest |x| of the hidden state the stage outputs */
    int nonfinite;   /* NaN/Inf count in that hidden state */
} fwd_stats;

/* pool: the engine's threads (also sets OpenBLAS to the same count). */
int fwd_create(fwd_stage **out, const model *m, int first, int last, pool *pool, char *err,
               size_t errlen);
void fwd_free(fwd_stage *s);

int fwd_first(const fwd_stage *s);
int fwd_last(const fwd_stage *s);
int fwd_is_head(const fwd_stage *s); /* first == 0 */
int fwd_is_tail(const fwd_stage *s); /* last == n_layers */

/* Shape of the KV cache this stage needs (its layers only). */
kv_shape fwd_kv_shape(const fwd_stage *s);

/* Scratch held now that grows with the chunk or batch (activations,
 * product inputs and tiles, attention tiles): what the largest steps
 * since the last release needed. */
size_t fwd_scratch_bytes(const fwd_stage *s);
/* The most that scratch can be for chunks of up to n positions and
 * batches of up to n sequences over caches of this shape: what a memory
 * guard must count before admitting such steps. */
size_t fwd_scratch_bytes_for(const fwd_stage *s, kv_shape shape, int n);
/* The same for a stage of a model of this shape on `threads` threads,
 * without the weights: all but a chunk's product tiles, which depend on
 * the weights' types (fp32 weights take none; qgemm.h). For a planner
 * that has no model loaded. */
size_t fwd_scratch_bytes_of(const model_config *c, kv_shape shape, int n, int threads);
/* Frees the scratch (the next step allocates what it needs again), so that
 * the memory of a large chunk goes back once its request is over. */
void fwd_scratch_release(fwd_stage *s);

/* Runs positions [kv_len(kv), kv_len(kv) + n). Input: `tokens` [n] on the
 * head stage, else `x_in` [n][dim]. Output: on the tail stage, logits of
 * the last position into `logits` [vocab] when logits != NULL; on other
 * stages, hidden states into `x_out` [n][dim]. Reserves KV blocks as
 * needed and commits kv_len += n. On error (allocation) returns -1 with a
 * message and the cache keeps its previous length. */
int fwd_step(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n, float *x_out,
             float *logits, fwd_stats *st, char *err, size_t errlen);

/* The same on the tail stage, with the logits of all n positions into
 * `logits` [n][vocab]: a teacher-forced evaluation of a prompt. */
int fwd_step_logits(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                    float *logits, fwd_stats *st, char *err, size_t errlen);

/* The same on the tail stage, with the final norm's output of all n
 * positions (the model's last hidden states, before the classifier) into
 * `x_out` [n][dim]: what an embedding pools. */
int fwd_step_normed(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                    float *x_out, fwd_stats *st, char *err, size_t errlen);

/* Runs one decode position of each of b sequences: sequence i's position
 * kv_len(kvs[i]) through this stage's layers, over its own cache. Caches
 * may be at different lengths and bits; they hold the stage's layers and
 * heads (fwd_kv_shape), share one block size and appear once each. Input:
 * tokens[b] on the head stage, else x_in [b][dim]. Output: hidden states
 * x_out [b][dim] on non-tail stages; on the tail, when logits != NULL,
 * logits [b][vocab] (row i: sequence i). Commits kv_len += 1 on every
 * cache. Every row is bit-identical to what fwd_step(..., n = 1, ...)
 * gives for that sequence alone: the weights are read once per step for
 * the whole batch, and each (row, sequence) dot product is summed in the
 * same order as alone. st gets the batch's time and the hidden-state
 * figures over all rows. On error returns -1 with a message, and no
 * cache's length changes. */
int fwd_step_batch(fwd_stage *s, kv_cache *const *kvs, int b, const int *tokens, const float *x_in,
                   float *x_out, float *logits, fwd_stats *st, char *err, size_t errlen);

#endif
