/* test_kldiv.c: the quality measurement's arithmetic (engine/compute/kldiv.h)
 * against figures computed by hand, and kv_bits 32 against itself through
 * the forward pass. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compute/kldiv.h"
#include "fwd_harness.h"

/* Identical rows: every term of the sum is p * (a - a), exactly 0, and the
 * two log-sum-exps are the same double: KL 0 to the last bit. */
Test(kldiv, identical_rows_give_zero)
{
    float row[512];
    unsigned s = 12345;
    for (int v = 0; v < 512; v++) {
        s = s * 1103515245u + 12345u;
        row[v] = (float)((s >> 8) % 20000) / 1000.0f - 10.0f;
    }
    float copy[512];
    memcpy(copy, row, sizeof row);
    kld_pos r;
    kld_position(row, copy, 512, 7, &r);
    cr_assert(r.kl == 0.0, "KL %.17g", r.kl);
    cr_assert_eq(r.agree, 1);
    cr_assert(r.nll_ref == r.nll_test);
}

/* Logits that are logs of 1..4: the softmax is exactly p = (1,2,3,4)/10,
 * reversed for q. By hand: KL(p||q) = sum p ln(p/q)
 *   = 0.1 ln(1/4) + 0.2 ln(2/3) + 0.3 ln(3/2) + 0.4 ln(4)
 *   = 0.3 ln 4 + 0.1 ln 1.5 = 0.45643481914678363 (python3: math.log);
 * next token 2: nll_ref = -ln 0.3 = 1.2039728043259361, nll_test = -ln 0.2
 * = 1.6094379124341003. The rows are shifted by +5 and -3: a softmax does
 * not see a shift. float32 logs are within 1e-7 of the real ones. */
Test(kldiv, hand_computed_example)
{
    float ref[4], test[4];
    for (int v = 0; v < 4; v++) {
        ref[v] = (float)log(v + 1.0) + 5.0f;
        test[v] = (float)log(4.0 - v) - 3.0f;
    }
    kld_pos r;
    kld_position(ref, test, 4, 2, &r);
    cr_assert_float_eq(r.kl, 0.45643481914678363, 1e-6, "KL %.17g", r.kl);
    cr_assert_float_eq(r.nll_ref, 1.2039728043259361, 1e-6);
    cr_assert_float_eq(r.nll_test, 1.6094379124341003, 1e-6);
    /* argmax 3 against argmax 0. */
    cr_assert_eq(r.agree, 0);
}

/* Ties go to the lowest id on both sides, as eval's top1. */
Test(kldiv, ties_take_the_lowest_id)
{
    float ref[4] = {0, 2, 2, 1}, test[4] = {0, 2, 1, 2};
    kld_pos r;
    kld_position(ref, test, 4, 0, &r);
    cr_assert_eq(r.agree, 1);
}

/* 200 positions with KL i/1000 (i = 1..200), agreeing unless i % 4 == 0,
 * nll_ref ln 3 throughout, nll_test alternating ln 2 and ln 8. By hand:
 *   kl_mean = (200 * 201 / 2) / 1000 / 200 = 0.1005, kl_max = 0.2,
 *   kl_p99 = the ceil(0.99 * 200) = 198th smallest = 0.198,
 *   top1 = 150 / 200 = 0.75, ppl_ref = 3 (no spread: err 0),
 *   ppl_test = exp(mean(ln 2, ln 8)) = exp(ln 4) = 4, the nll's variance
 *   ((ln 2)^2 + (3 ln 2)^2) / 2 - (2 ln 2)^2 = (ln 2)^2, so
 *   ppl_test_err = 4 ln 2 / sqrt(199) = 0.19654... ;
 * depths i - 1: the bucket [0, 100) holds i = 1..100: mean 0.0505, p99
 * the 99th = 0.099, max 0.1. */
Test(kldiv, aggregates_by_hand)
{
    char err[128];
    kld_acc *a;
    cr_assert_eq(kld_acc_create(&a, 200, err, sizeof err), 0, "%s", err);
    for (int i = 1; i <= 200; i++) {
        kld_pos p = {.kl = i / 1000.0,
                     .agree = i % 4 != 0,
                     .nll_ref = log(3.0),
                     .nll_test = i % 2 ? log(2.0) : log(8.0)};
        kld_acc_add(a, i - 1, &p);
    }
    kld_figures f;
    cr_assert_eq(kld_acc_figures(a, 0, 200, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.positions, 200);
    cr_assert_float_eq(f.kl_mean, 0.1005, 1e-12);
    cr_assert_float_eq(f.kl_p99, 0.198, 1e-12);
    cr_assert_float_eq(f.kl_max, 0.2, 1e-12);
    cr_assert_float_eq(f.top1, 0.75, 1e-12);
    cr_assert_float_eq(f.ppl_ref, 3.0, 1e-9);
    cr_assert_float_eq(f.ppl_ref_err, 0.0, 1e-6);
    cr_assert_float_eq(f.ppl_test, 4.0, 1e-9);
    cr_assert_float_eq(f.ppl_test_err, 4.0 * log(2.0) / sqrt(199.0), 1e-6);
    cr_assert_eq(kld_acc_figures(a, 0, 100, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.positions, 100);
    cr_assert_float_eq(f.kl_mean, 0.0505, 1e-12);
    cr_assert_float_eq(f.kl_p99, 0.099, 1e-12);
    cr_assert_float_eq(f.kl_max, 0.1, 1e-12);
    /* A bucket with no positions says only that. */
    cr_assert_eq(kld_acc_figures(a, 500, 600, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.positions, 0);
    cr_assert(f.kl_mean == 0.0);
    kld_acc_free(a);
}

/* llama-perplexity's windows: 1000 tokens at ctx 300 are 3 windows (the
 * last 100 dropped), each starting with BOS, positions 150..298 scored:
 * 3 * 149 = 447. */
Test(kldiv, windows)
{
    char err[256];
    int ids[1000];
    for (int i = 0; i < 1000; i++)
        ids[i] = 1000 + i;
    kld_plan p;
    cr_assert_eq(kld_plan_make(&p, 1000, 300, -1, 100, 0, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.windows, 3);
    cr_assert_eq(p.len, 300);
    cr_assert_eq(p.score_from, 150);
    cr_assert_eq(kld_positions(&p), 447);
    cr_assert_eq(kld_buckets(&p), 3);
    cr_assert_eq(kld_token(&p, ids, 1, 0), 1);
    cr_assert_eq(kld_token(&p, ids, 1, 5), 1305);
    cr_assert(!kld_scored(&p, 149) && kld_scored(&p, 150) && kld_scored(&p, 298) &&
              !kld_scored(&p, 299));
    /* Without ctx: the whole text, its own first token, scored from 0,
     * capped at max_ctx. */
    cr_assert_eq(kld_plan_make(&p, 1000, 0, -1, 100, 640, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.windows, 1);
    cr_assert_eq(p.len, 640);
    cr_assert_eq(p.score_from, 0);
    cr_assert_eq(kld_token(&p, ids, 0, 0), 1000);
    /* Fewer tokens than one window, or nothing left to score. */
    cr_assert_eq(kld_plan_make(&p, 200, 300, -1, 100, 0, 1, err, sizeof err), -1);
    cr_assert(strstr(err, "200 tokens"), "%s", err);
    cr_assert_eq(kld_plan_make(&p, 1000, 300, 299, 100, 0, 1, err, sizeof err), -1);
    cr_assert(strstr(err, "score_from 299"), "%s", err);
}

/* kv_bits 32 against itself through the forward pass, chunk by chunk in
 * two caches: the same logits, KL exactly 0 and top-1 1.0. And kv_bits 4
 * is measurably not free. */
static void self_check(int bits, double *kl_sum, int *agree, int *n)
{
    harness h;
    harness_open(&h, "embedded", 32);
    char err[256];
    kv_cache *test;
    cr_assert_eq(kv_create(&test, fwd_kv_shape(h.fwd), bits, err, sizeof err), 0, "%s", err);
    int vocab = model_config_of(h.m)->vocab_size, chunk = 16, len = 64;
    float *ref = malloc((size_t)chunk * vocab * sizeof *ref);
    float *got = malloc((size_t)chunk * vocab * sizeof *got);
    int ids[64];
    for (int i = 0; i < len; i++)
        ids[i] = i == 0 ? 1 : 3 + (i * 37) % (vocab - 3);
    *kl_sum = 0.0;
    *agree = *n = 0;
    for (int pos = 0; pos < len; pos += chunk) {
        cr_assert_eq(
            fwd_step_logits(h.fwd, h.kv, ids + pos, NULL, chunk, ref, NULL, err, sizeof err), 0,
            "%s", err);
        cr_assert_eq(
            fwd_step_logits(h.fwd, test, ids + pos, NULL, chunk, got, NULL, err, sizeof err), 0,
            "%s", err);
        for (int i = 0; i < chunk && pos + i + 1 < len; i++) {
            kld_pos r;
            kld_position(ref + (size_t)i * vocab, got + (size_t)i * vocab, vocab, ids[pos + i + 1],
                         &r);
            *kl_sum += r.kl;
            *agree += r.agree;
            (*n)++;
        }
    }
    free(ref);
    free(got);
    kv_free(test);
    harness_close(&h);
}

Test(kldiv, kv32_against_itself_through_the_forward_pass)
{
    double kl;
    int agree, n;
    self_check(32, &kl, &agree, &n);
    cr_assert_eq(n, 63);
    cr_assert(kl == 0.0, "KL %.17g", kl);
    cr_assert_eq(agree, n);
    self_check(4, &kl, &agree, &n);
    cr_assert(kl > 0.0, "KL %.17g at kv_bits 4", kl);
}
