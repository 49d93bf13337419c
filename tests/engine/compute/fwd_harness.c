/* fwd_harness.c: see fwd_harness.h. */
#include "fwd_harness.h"

#include <criterion/criterion.h>
#include <stdlib.h>

void harness_open(harness *h, const char *spec, int kv_bits)
{
    char err[256];
    *h = (harness){0};
    cr_assert_eq(model_load(&h->m, spec, err, sizeof err), 0, "%s", err);
    int layers = model_config_of(h->m)->n_layers;
    cr_assert_eq(pool_create(&h->pool, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fwd_create(&h->fwd, h->m, 0, layers, h->pool, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_create(&h->kv, fwd_kv_shape(h->fwd), kv_bits, err, sizeof err), 0, "%s", err);
    h->logits = malloc(model_config_of(h->m)->vocab_size * sizeof(float));
    cr_assert_not_null(h->logits);
}

void harness_close(harness *h)
{
    free(h->logits);
    kv_free(h->kv);
    fwd_free(h->fwd);
    pool_free(h->pool);
    model_free(h->m);
}

void harness_prefill(harness *h, const int *ids, int n, int chunk)
{
    char err[256];
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        cr_assert_eq(
            fwd_step(h->fwd, h->kv, ids + start, NULL, len, NULL, h->logits, NULL, err, sizeof err),
            0, "%s", err);
    }
}

int harness_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

void harness_greedy(harness *h, int *out, int n)
{
    char err[256];
    int vocab = model_config_of(h->m)->vocab_size;
    for (int i = 0; i < n; i++) {
        out[i] = harness_argmax(h->logits, vocab);
        cr_assert_eq(
            fwd_step(h->fwd, h->kv, &out[i], NULL, 1, NULL, h->logits, NULL, err, sizeof err), 0,
            "%s", err);
    }
}
