/* test_forward.c: the forward pass beyond the reference continuation:
 * long contexts, pipeline stages, live KV conversion, bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fwd_harness.h"

#define SMALL "synth:dim=64,hidden=172,layers=4,heads=4,kv_heads=2,vocab=512"
/* Few heads and layers: 8K positions of attention must stay cheap. */
#define LONG "synth:dim=64,hidden=172,layers=2,heads=2,kv_heads=1,vocab=512"
#define VOCAB 512

/* Under ASan + UBSan at -O1 the attention loops run ~200x slower: there
 * the long-context test checks memory safety over a shorter context. */
#ifdef __SANITIZE_ADDRESS__
#define LONG_CTX 2048
#else
#define LONG_CTX 8192
#endif

static void fill_tokens(int *ids, int n, int salt)
{
    for (int i = 0; i < n; i++)
        ids[i] = (i * 7919 + salt * 104729 + 13) % VOCAB;
}

static void assert_finite(const float *x, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        cr_assert(isfinite(x[i]), "%s[%d] = %f", what, i, x[i]);
}

/* Synthetic weights keep hidden states O(1) far past seq_len; the scratch
 * does not grow with the context, only with the chunk. */
Test(forward, finite_at_8k_context)
{
    enum { CTX = LONG_CTX, CHUNK = 512 };
    harness h;
    harness_open(&h, LONG, 16);
    int *ids = malloc(CTX * sizeof *ids);
    cr_assert_not_null(ids);
    fill_tokens(ids, CTX, 1);
    char err[256];
    size_t scratch = 0;
    for (int start = 0; start < CTX; start += CHUNK) {
        fwd_stats st;
        cr_assert_eq(
            fwd_step(h.fwd, h.kv, ids + start, NULL, CHUNK, NULL, h.logits, &st, err, sizeof err),
            0, "%s", err);
        cr_assert_eq(st.nonfinite, 0, "at position %d", start);
        cr_assert(st.act_max > 0.0f && st.act_max < 100.0f, "act_max %f at %d", st.act_max, start);
        cr_assert(st.model_ms >= 0.0);
        if (start == 0)
            scratch = fwd_scratch_bytes(h.fwd);
        cr_assert_eq(fwd_scratch_bytes(h.fwd), scratch);
    }
    cr_assert_eq(kv_len(h.kv), CTX);
    assert_finite(h.logits, VOCAB, "logits");
    int next[4];
    harness_greedy(&h, next, 4);
    assert_finite(h.logits, VOCAB, "decode logits");
    cr_assert_eq(kv_len(h.kv), CTX + 4);
    free(ids);
    harness_close(&h);
}

/* Stages [0,2) + [2,4) chained through x_out / x_in compute what one
 * stage [0,4) does. */
Test(forward, two_stages_match_one)
{
    char err[256];
    harness one;
    harness_open(&one, SMALL, 32);
    fwd_stage *head, *tail;
    kv_cache *kv_head, *kv_tail;
    cr_assert_eq(fwd_create(&head, one.m, 0, 2, one.pool, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fwd_create(&tail, one.m, 2, 4, one.pool, err, sizeof err), 0, "%s", err);
    cr_assert(fwd_is_head(head) && !fwd_is_tail(head));
    cr_assert(!fwd_is_head(tail) && fwd_is_tail(tail));
    cr_assert_eq(fwd_kv_shape(tail).n_layers, 2);
    cr_assert_eq(kv_create(&kv_head, fwd_kv_shape(head), 32, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_create(&kv_tail, fwd_kv_shape(tail), 32, err, sizeof err), 0, "%s", err);

    int ids[24];
    fill_tokens(ids, 24, 2);
    float x[16 * 64], logits[VOCAB];
    /* A chunk of 16, then single positions. */
    for (int start = 0; start < 24; start += start < 16 ? 16 : 1) {
        int n = start < 16 ? 16 : 1;
        cr_assert_eq(fwd_step(one.fwd, one.kv, ids + start, NULL, n, NULL, one.logits, NULL, err,
                              sizeof err),
                     0, "%s", err);
        cr_assert_eq(fwd_step(head, kv_head, ids + start, NULL, n, x, NULL, NULL, err, sizeof err),
                     0, "%s", err);
        cr_assert_eq(fwd_step(tail, kv_tail, NULL, x, n, NULL, logits, NULL, err, sizeof err), 0,
                     "%s", err);
        for (int i = 0; i < VOCAB; i++)
            cr_assert(fabsf(logits[i] - one.logits[i]) <= 1e-6f * (1.0f + fabsf(logits[i])),
                      "position %d logit %d: %.9g vs %.9g", start, i, logits[i], one.logits[i]);
    }
    cr_assert_eq(kv_len(kv_tail), 24);
    kv_free(kv_head);
    kv_free(kv_tail);
    fwd_free(head);
    fwd_free(tail);
    harness_close(&one);
}

static const int prompt_ids[] = {1, 403, 407, 261, 378};
static const int reference[32] = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
                                  338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
                                  265, 282, 295, 433, 426, 385, 328, 432, 358, 394};

/* Greedy decoding of the embedded model with the cache converted from
 * `from` to `to` bits after 12 tokens; returns how many of the 32 tokens
 * match the reference. */
static int matches_after_convert(int from, int to)
{
    char err[256];
    harness h;
    harness_open(&h, NULL, from);
    harness_prefill(&h, prompt_ids, 5, 5);
    int out[32];
    harness_greedy(&h, out, 12);
    int len = kv_len(h.kv);
    cr_assert_eq(kv_convert(h.kv, to, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_bits(h.kv), to);
    cr_assert_eq(kv_len(h.kv), len);
    harness_greedy(&h, out + 12, 20);
    harness_close(&h);
    int same = 0;
    for (int i = 0; i < 32; i++)
        same += out[i] == reference[i];
    return same;
}

Test(forward, live_kv_convert)
{
    cr_assert_eq(matches_after_convert(32, 16), 32);
    cr_assert_eq(matches_after_convert(16, 32), 32);
    int q8 = matches_after_convert(16, 8);
    cr_assert(q8 >= 24, "16->8: only %d of 32 tokens match", q8);
}

Test(forward, bad_steps_change_nothing)
{
    char err[256];
    harness h;
    harness_open(&h, SMALL, 16);
    int ids[3] = {1, 2, 3};
    harness_prefill(&h, ids, 3, 3);
    int bad[2] = {5, VOCAB};
    cr_assert_eq(fwd_step(h.fwd, h.kv, bad, NULL, 2, NULL, h.logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "token 512 at position 1 is out of range"), "%s", err);
    cr_assert_eq(fwd_step(h.fwd, h.kv, ids, NULL, 0, NULL, h.logits, NULL, err, sizeof err), -1);
    cr_assert_eq(kv_len(h.kv), 3);

    fwd_stage *s;
    cr_assert_eq(fwd_create(&s, h.m, 2, 5, h.pool, err, sizeof err), -1);
    cr_assert(strstr(err, "layers 2:5"), "%s", err);
    cr_assert_eq(fwd_create(&s, h.m, 0, 2, h.pool, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fwd_step(s, h.kv, ids, NULL, 1, NULL, NULL, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "non-tail stage needs an x_out"), "%s", err);
    float x[64];
    cr_assert_eq(fwd_step(s, h.kv, ids, NULL, 1, x, NULL, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "kv cache holds 4 layers"), "%s", err);
    cr_assert_eq(kv_len(h.kv), 3);
    fwd_free(s);
    harness_close(&h);
}

/* The memory guard admits a chunk by fwd_scratch_bytes_for: after a step
 * of n positions the scratch held is exactly that, and a release gives it
 * all back. */
Test(forward, scratch_is_predicted_and_released)
{
    harness h;
    harness_open(&h, SMALL, 16);
    int ids[300];
    fill_tokens(ids, 300, 3);
    kv_shape shape = fwd_kv_shape(h.fwd);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), 0);
    harness_prefill(&h, ids, 300, 300);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), fwd_scratch_bytes_for(h.fwd, shape, 300));
    cr_assert_gt(fwd_scratch_bytes_for(h.fwd, shape, 300), fwd_scratch_bytes_for(h.fwd, shape, 30));
    fwd_scratch_release(h.fwd);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), 0);
    int next[2];
    harness_greedy(&h, next, 2);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), fwd_scratch_bytes_for(h.fwd, shape, 1));
    harness_close(&h);
}
