/* test_stress.c: the stress runner's pure parts: the growth schedule and
 * the prompt sizes that follow it, Poisson arrivals, per-request
 * percentiles, the ETA, drift, the option checks, and the chart points
 * handed to watchers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
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
    o.concurrency[0] = OPT_CONCURRENCY_MAX + 1;
    expect_error(&o, "--concurrency: 65 is not a number of requests in 1..64");
    o.concurrency[0] = 0;
    expect_error(&o, "--concurrency: 0 is not");
    o.concurrency[0] = OPT_CONCURRENCY_MAX;
    char err[256];
    cr_expect_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
    o.n_concurrency = 2;
    o.concurrency[1] = 4;
    expect_error(&o, "--concurrency: fixed takes one value (a list is for sweep legs)");
    o.n_concurrency = 1;
    o.concurrency[0] = 4;
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
    cr_assert_eq(stress_points_since(r, &seen, got, STRESS_POINTS_MAX), 2,
                 "failed requests are no point");
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
    free(r->leg_decode);
    free(r);
}

/* ---- the sweep's concurrency axis ---- */

static void expect_list(const char *flag, const char *text, int n, const int *want)
{
    int v[STRESS_LIST_MAX], got = -1;
    char err[256] = "";
    cr_assert_eq(stress_parse_list(flag, text, v, &got, err, sizeof err), 0, "%s: %s", text, err);
    cr_assert_eq(got, n, "%s", text);
    for (int i = 0; i < n; i++)
        cr_expect_eq(v[i], want[i], "%s, value %d", text, i);
}

static void expect_list_error(const char *text, const char *needle)
{
    int v[STRESS_LIST_MAX], n;
    char err[256] = "";
    cr_assert_eq(stress_parse_list("--concurrency", text, v, &n, err, sizeof err), -1,
                 "\"%s\" was taken", text);
    cr_expect(strstr(err, "--concurrency") != NULL, "\"%s\" does not name the option", err);
    cr_expect(strstr(err, needle) != NULL, "\"%s\" does not say \"%s\"", err, needle);
}

Test(stress_sweep, lists_parse_and_bad_items_are_named)
{
    expect_list("--concurrency", "1,4,16", 3, (const int[]){1, 4, 16});
    expect_list("--concurrency", "64", 1, (const int[]){64});
    expect_list("--kv-bits", "16,8,4", 3, (const int[]){16, 8, 4});
    expect_list_error("1,x,4", "\"x\" in \"1,x,4\" is not a whole number");
    expect_list_error("", "\"\" in \"\" is not a whole number");
    expect_list_error("1,,4", "\"\" in \"1,,4\"");
    expect_list_error("1,4,", "\"\" in \"1,4,\"");
    expect_list_error("2.5", "\"2.5\"");
    expect_list_error("99999999999", "\"99999999999\"");
    expect_list_error("1,2,3,4,5,6,7,8,9", "at most 8 values");
}

static stress_opts sweep_fixed(void)
{
    stress_opts o;
    stress_opts_init(&o);
    o.mode = STORE_MODE_SWEEP;
    o.leg_mode = STORE_MODE_FIXED;
    o.n_kv_bits = 2;
    o.kv_bits[0] = 16;
    o.kv_bits[1] = 4;
    o.n_prefill_step = 1;
    o.prefill_step[0] = 256;
    o.n_concurrency = 3;
    o.concurrency[0] = 1;
    o.concurrency[1] = 4;
    o.concurrency[2] = 16;
    return o;
}

Test(stress_sweep, concurrency_values_are_checked_by_name)
{
    stress_opts o = sweep_fixed();
    char err[256];
    cr_expect_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
    o.concurrency[2] = 65;
    expect_error(&o, "--concurrency: 65 is not a number of requests in 1..64");
    o.concurrency[2] = -3;
    expect_error(&o, "--concurrency: -3 is not");
}

/* kv_bits outermost, concurrency innermost; growth legs have no
 * concurrency axis; a leg outside a sweep takes the ring's settings. */
Test(stress_sweep, legs_walk_the_grid)
{
    stress_opts o = sweep_fixed();
    cr_assert_eq(stress_leg_count(&o), 6);
    static const int want[6][3] = {{16, 256, 1}, {16, 256, 4}, {16, 256, 16},
                                   {4, 256, 1},  {4, 256, 4},  {4, 256, 16}};
    for (int leg = 0; leg < 6; leg++) {
        store_leg_info l;
        stress_leg_at(&o, leg, &l);
        cr_expect_eq(l.kv_bits, want[leg][0], "leg %d", leg);
        cr_expect_eq(l.prefill_step, want[leg][1], "leg %d", leg);
        cr_expect_eq(l.concurrency, want[leg][2], "leg %d", leg);
    }
    o.n_prefill_step = 2;
    o.prefill_step[1] = 512;
    cr_assert_eq(stress_leg_count(&o), 12);
    store_leg_info l;
    stress_leg_at(&o, 4, &l);
    cr_expect(l.kv_bits == 16 && l.prefill_step == 512 && l.concurrency == 4);
    stress_leg_at(&o, 11, &l);
    cr_expect(l.kv_bits == 4 && l.prefill_step == 512 && l.concurrency == 16);

    o.leg_mode = STORE_MODE_GROWTH;
    cr_assert_eq(stress_leg_count(&o), 4, "growth legs grow one session");
    stress_leg_at(&o, 3, &l);
    cr_expect(l.kv_bits == 4 && l.prefill_step == 512 && l.concurrency == 1);

    stress_opts_init(&o);
    o.mode = STORE_MODE_FIXED;
    o.concurrency[0] = 8;
    cr_assert_eq(stress_leg_count(&o), 1);
    stress_leg_at(&o, 0, &l);
    cr_expect(l.kv_bits == 0 && l.prefill_step == 0 && l.concurrency == 8);
}

/* A leg's aggregate tok/s counts the tokens of every ended request, failed
 * ones too, over the time since its first request was sent. */
Test(stress_sweep, progress_reports_the_legs_aggregate_throughput)
{
    stress_run *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    pthread_mutex_init(&r->mu, NULL);
    r->concurrency = 4;
    st_progress_leg(r, 8, -1);
    r->leg_t_first = clock_ms() - 2000.0;
    st_outcome ok = {.ok = 1, .gen_tokens = 30}, bad = {.ok = 0, .gen_tokens = 10};
    st_progress_request(r, &ok, 0);
    st_progress_request(r, &bad, 0);
    stress_progress p;
    stress_progress_get(r, &p);
    cr_expect_eq(p.concurrency, 4);
    /* At least 2 s have passed since the first request: at most 40 / 2. */
    cr_expect(p.agg_tps > 0 && p.agg_tps <= 20.0, "%g", p.agg_tps);
    st_progress_leg(r, 8, -1);
    stress_progress_get(r, &p);
    cr_expect_eq(p.agg_tps, 0, "a new leg starts from nothing");
    pthread_mutex_destroy(&r->mu);
    free(r->leg_decode);
    free(r);
}

/* The Stress view's decode tok/s is the p50 of the leg's ok requests,
 * computed as the History's summary computes its DEC_TPS (store_dist),
 * and not the last request's (which is what made them differ). */
Test(stress_sweep, progress_decode_is_the_legs_p50_as_history_gives_it)
{
    stress_run *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    pthread_mutex_init(&r->mu, NULL);
    st_progress_leg(r, 8, -1);
    static const double tps[] = {300.0, 100.0, 218.9, 150.5, 325.3};
    double v[5];
    for (int i = 0; i < 5; i++) {
        st_progress_request(r, &(st_outcome){.ok = 1, .decode_tps = tps[i]}, 0);
        v[i] = tps[i];
    }
    st_progress_request(r, &(st_outcome){.ok = 0, .decode_tps = 1.0}, 0);
    store_dist d;
    store_dist_compute(v, 5, &d);
    stress_progress p;
    stress_progress_get(r, &p);
    cr_expect_eq(p.decode_p50, d.p50, "%g against History's %g", p.decode_p50, d.p50);
    cr_expect_eq(p.decode_p50, 218.9);
    st_progress_leg(r, 8, -1);
    stress_progress_get(r, &p);
    cr_expect_eq(p.decode_p50, 0, "a new leg starts from nothing");
    st_progress_request(r, &(st_outcome){.ok = 1, .decode_tps = 50.0}, 0);
    stress_progress_get(r, &p);
    cr_expect_eq(p.decode_p50, 50.0, "the new leg's requests only");
    pthread_mutex_destroy(&r->mu);
    free(r->leg_decode);
    free(r);
}

/* A ring may have as many stages as a ring frame carries (it was 16). */
Test(stress_opts, a_ring_of_up_to_proto_ring_max_nodes)
{
    stress_opts o = growth();
    static stress_target t;
    char err[256] = "";
    stress_run *r = NULL;
    cr_assert_eq(STRESS_NODES_MAX, PROTO_RING_MAX);
    cr_assert_geq(STRESS_NODES_MAX, 24);
    t.n_nodes = STRESS_NODES_MAX + 1;
    cr_assert_eq(stress_start(&r, &o, &t, NULL, err, sizeof err), -1);
    char want[64];
    snprintf(want, sizeof want, "expected 1..%d", PROTO_RING_MAX);
    cr_assert(strstr(err, want), "%s", err);
    cr_assert_null(r);
}
