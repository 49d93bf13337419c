/* fwd_harness.h: one model on one stage with its KV cache, for the engine
 * tests that run the forward pass (prefill in chunks, greedy decode). The
 * helpers fail the current Criterion test on any engine error. */
#ifndef FWD_HARNESS_H
#define FWD_HARNESS_H

#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "engine/model/model.h"

typedef struct harness {
    model *m;
    pool *pool;
    fwd_stage *fwd;
    kv_cache *kv;
    float *logits;
} harness;

/* spec as for model_load (NULL: embedded); one thread, so results do not
 * depend on the machine. */
void harness_open(harness *h, const char *spec, int kv_bits);
void harness_close(harness *h);

/* Runs ids [n] in chunks of `chunk` positions; logits of the last one. */
void harness_prefill(harness *h, const int *ids, int n, int chunk);

/* Greedy-decodes n tokens after a prefill into out. */
void harness_greedy(harness *h, int *out, int n);

/* The index of the largest of x[0, n) (the first, on ties). */
int harness_argmax(const float *x, int n);

#endif
