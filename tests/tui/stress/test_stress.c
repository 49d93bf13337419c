/* test_stress.c: the stress runner's pure parts: the growth schedule and
 * the prompt sizes that follow it, Poisson arrivals, per-request
 * percentiles, the ETA, drift, the option checks, and the chart points
 * handed to watchers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tui/stress/stress_int.h"

/* The levels of a growth leg, as the runner walks them. */
static int levels_of(int64_t from, int64_t to, double factor, int64_t step, int64_t *out, int max)
{
    int n = 0;
    for (int64_t l = from; n < max; l = stress_growth_next(l, to, factor, step)) {
        out[n++] = l;
        if (l == to)
            break;
    }
    return n;
}

Test(stress_plan, growth_by_factor_doubles_to_the_target)
{
    int64_t v[32];
    int n = levels_of(64, 4096, 2.0, 0, v, 32);
    int64_t want[] = {64, 128, 256, 512, 1024, 2048, 4096};
    cr_assert_eq(n, 7);
    for (int i = 0; i < n; i++)
        cr_expect_eq(v[i], want[i], "level %d: %lld", i, (long long)v[i]);
}

Test(stress_plan, growth_clips_the_last_level_to_the_target)
{
    int64_t v[32];
    int n = levels_of(100, 1000, 2.0, 0, v, 32);
    int64_t want[] = {100, 200, 400, 800, 1000};
    cr_assert_eq(n, 5);
    for (int i = 0; i < n; i++)
        cr_expect_eq(v[i], want[i]);
}

Test(stress_plan, growth_by_step_and_a_single_level)
{
    int64_t v[32];
    int n = levels_of(1000, 4000, 0, 1500, v, 32);
    cr_assert_eq(n, 3);
    cr_expect_eq(v[1], 2500);
    cr_expect_eq(v[2], 4000);
    cr_expect_eq(levels_of(512, 512, 2.0, 0, v, 32), 1);
}

Test(stress_plan, growth_never_stalls_on_a_tiny_factor)
{
    cr_expect_eq(stress_growth_next(10, 100, 1.01, 0), 11);
}

/* A session that generated carries one pending token, and a request of
 * gen tokens feeds gen - 1 of them: what the node's ctx says after. */
Test(stress_plan, prompt_sizes_land_on_the_level)
{
    cr_expect_eq(stress_prompt_for(0, 64, 8), 57);      /* 57 + 7 = 64 */
    cr_expect_eq(stress_prompt_for(64, 128, 8), 56);    /* 64 + 1 + 56 + 7 = 128 */
    cr_expect_eq(stress_prompt_for(4096, 4106, 0), 10); /* prefill only: no pending */
    cr_expect_eq(stress_prompt_for(0, 1, 1), 1);
    cr_expect_lt(stress_prompt_for(64, 70, 8), 1);
}

Test(stress_plan, poisson_gaps_have_the_rate_as_mean)
{
    stress_rng g;
    stress_rng_seed(&g, 42);
    double sum = 0, sq = 0;
    int n = 20000;
    for (int i = 0; i < n; i++) {
        double x = stress_rng_gap(&g, 4.0);
        cr_assert(x > 0 && isfinite(x));
        sum += x;
        sq += x * x;
    }
    double mean = sum / n, var = sq / n - mean * mean;
    cr_expect(fabs(mean - 0.25) < 0.25 * 0.03, "mean %g", mean);
    /* exponential: the standard deviation equals the mean */
    cr_expect(fabs(sqrt(var) - 0.25) < 0.25 * 0.05, "sd %g", sqrt(var));
}

Test(stress_plan, arrivals_are_reproducible_from_the_seed)
{
    stress_rng a, b, c;
    stress_rng_seed(&a, 7);
    stress_rng_seed(&b, 7);
    stress_rng_seed(&c, 8);
    int differ = 0;
    for (int i = 0; i < 100; i++) {
        double x = stress_rng_gap(&a, 1.0);
        cr_assert_eq(x, stress_rng_gap(&b, 1.0));
        differ |= x != stress_rng_gap(&c, 1.0);
    }
    cr_expect(differ);
}

Test(stress_plan, eta_extrapolates_the_pace)
{
    cr_expect_eq(stress_eta(10, 0.25, 1.0), 30);
    cr_expect_eq(stress_eta(42, 4096, 8192), 42);
    cr_expect_eq(stress_eta(5, 1, 1), 0);
    cr_expect_lt(stress_eta(5, 0, 1), 0);
    cr_expect_lt(stress_eta(5, 1, 0), 0);
}

Test(stress_plan, drift_compares_first_and_last_decile)
{
    double ttft[20], e2e[20], dec[20];
    for (int i = 0; i < 20; i++) {
        ttft[i] = i;
        e2e[i] = 100 + i;
        dec[i] = 50 - i;
    }
    stress_drift d;
    stress_drift_of(ttft, e2e, dec, 20, &d);
    cr_assert(d.valid);
    cr_expect_eq(d.ttft_first, 0.5); /* mean of 0, 1 */
    cr_expect_eq(d.ttft_last, 18.5); /* mean of 18, 19 */
    cr_expect_eq(d.e2e_last, 118.5);
    cr_expect_eq(d.decode_first, 49.5);
    stress_drift_of(ttft, e2e, dec, 9, &d);
    cr_expect_not(d.valid);
}

/* ---- option checks ---- */

static void expect_error(const stress_opts *o, const char *needle)
{
    char err[512] = "";
    cr_assert_eq(stress_opts_check(o, err, sizeof err), -1, "accepted, wanted \"%s\"", needle);
    cr_expect(strstr(err, needle) != NULL, "\"%s\" does not say \"%s\"", err, needle);
}

static stress_opts growth(void)
{
    stress_opts o;
    stress_opts_init(&o);
    o.to = 4096;
    return o;
}

Test(stress_opts, defaults_with_a_target_are_valid)
{
    stress_opts o = growth();
    char err[256];
    cr_expect_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
}

Test(stress_opts, growth_errors_name_the_option)
{
    stress_opts o = growth();
    o.to = 32;
    expect_error(&o, "--to 32");
    o = growth();
    o.step = 64; /* and the default factor */
    expect_error(&o, "one of --factor and --step");
    o = growth();
    o.factor = 1.0;
    expect_error(&o, "--factor 1");
    o = growth();
    o.gen = 100; /* 64 -> 128 cannot hold 100 generated tokens */
    expect_error(&o, "--gen 100");
    o = growth();
    o.timeout_s = 0;
    expect_error(&o, "--timeout");
}

Test(stress_opts, fixed_and_soak_errors)
{
    stress_opts o;
    stress_opts_init(&o);
    o.mode = STORE_MODE_FIXED;
    o.concurrency = 17;
    expect_error(&o, "--concurrency 17");
    o.concurrency = 4;
    o.rate = -1;
    expect_error(&o, "--rate");
    o.rate = 0;
    o.requests = 0;
    expect_error(&o, "--requests 0");
    o.mode = STORE_MODE_SOAK;
    expect_error(&o, "--duration");
    o.duration_s = 5;
    o.prompt_tokens = 0;
    expect_error(&o, "--prompt-tokens 0");
}

Test(stress_opts, sweep_checks_its_lists)
{
    stress_opts o = growth();
    o.mode = STORE_MODE_SWEEP;
    expect_error(&o, "--kv-bits");
    o.n_kv_bits = 2;
    o.kv_bits[0] = 16;
    o.kv_bits[1] = 5;
    expect_error(&o, "--kv-bits: 5 is not one of 32, 16, 8, 4");
    o.kv_bits[1] = 4;
    expect_error(&o, "--prefill-step");
    o.n_prefill_step = 1;
    o.prefill_step[0] = 70000;
    expect_error(&o, "--prefill-step: 70000");
    o.prefill_step[0] = 256;
    char err[256];
    cr_expect_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
    o.leg_mode = STORE_MODE_SOAK;
    expect_error(&o, "--leg");
}

/* The chart points a run hands its watchers: every ok request, in order,
 * the newest STRESS_POINTS_MAX once more have ended. */
static void end_request(stress_run *r, int64_t idx, int ok)
{
    st_outcome o = {.idx = idx, .ok = ok, .ctx_after = 64 * (idx + 1)};
    o.point = (store_point){.idx = idx, .ctx = o.ctx_after, .decode_tps = 100.0 + (double)idx};
    st_progress_request(r, &o, o.ctx_after);
}

Test(stress_points, watchers_get_each_ok_request_once_in_order)
{
    stress_run *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    pthread_mutex_init(&r->mu, NULL);
    store_point got[STRESS_POINTS_MAX];
    size_t seen = 0;
    end_request(r, 0, 1);
    end_request(r, 1, 0);
    end_request(r, 2, 1);
    cr_assert_eq(stress_points_since(r, &seen, got, STRESS_POINTS_MAX), 2, "failed requests are no point");
    cr_expect_eq(got[0].idx, 0);
    cr_expect_eq(got[1].idx, 2);
    cr_expect_eq(got[1].decode_tps, 102.0);
    cr_expect_eq(stress_points_since(r, &seen, got, STRESS_POINTS_MAX), 0, "nothing new");

    /* More than the ring holds end before the watcher looks again. */
    for (int64_t i = 3; i < 3 + STRESS_POINTS_MAX + 100; i++)
        end_request(r, i, 1);
    size_t n = stress_points_since(r, &seen, got, STRESS_POINTS_MAX);
    cr_assert_eq(n, STRESS_POINTS_MAX);
    cr_expect_eq(got[0].idx, 103, "the oldest kept");
    cr_expect_eq(got[n - 1].idx, 2 + STRESS_POINTS_MAX + 100, "the newest");
    for (size_t i = 1; i < n; i++)
        cr_expect_eq(got[i].idx, got[i - 1].idx + 1);

    /* A watcher taking fewer at a time goes on where it stopped. */
    size_t from = 0;
    cr_assert_eq(stress_points_since(r, &from, got, 10), 10);
    cr_expect_eq(got[0].idx, 103);
    cr_assert_eq(stress_points_since(r, &from, got, 10), 10);
    cr_expect_eq(got[0].idx, 113);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
