/* test_query.c: every history query on a database the test builds, with
 * exact expected values; percentiles against a sort-based reference. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

enum { F_STEPS = 70, F_PREFILL = 13, S_STEPS = 20 };
static const char *const f_nodes[2] = {"n1", "n2"};

/* The database: an empty run (E), a growth run that fails at 8192 (F), a
 * sweep of 4 legs whose last leg fails (S), and a run of another model (G).
 * started times are set so that the order is G, S, F, E. */
typedef struct history {
    fx f;
    int64_t e, fr, sw, g;
    /* F's step values per node and phase, for the reference percentiles */
    double f_vals[2][2][3][F_STEPS];
    size_t f_n[2][2];
} history;

static double f_metric(int node, int k, int m)
{
    return fx_value(100 + node * 10 + m, k, m == 0 ? 30 : m == 1 ? 7 : 20, 10);
}

static void build(history *h)
{
    memset(h, 0, sizeof *h);
    fx_open(&h->f);
    store *s = h->f.s;

    h->e = fx_run(s, STORE_MODE_FIXED, "empty", "m1");
    store_run_end(s, h->e, STORE_COMPLETED, NULL);

    h->fr = fx_run(s, STORE_MODE_GROWTH, "growth-fail", "m1");
    store_leg_start(s, h->fr, 0,
                    &(store_leg_info){.kv_bits = 16, .prefill_step = 512, .concurrency = 1});
    for (int i = 0; i < 4; i++)
        fx_request(s, h->fr, 0, i, i ? 1024 << (i - 1) : 0, 1024 << i, 1, 10 + i, 5 + i, 100 - i);
    fx_request(s, h->fr, 0, 4, 8192, 8192, 0, -1, -1, -1);
    for (int k = 0; k < F_STEPS; k++) {
        for (int node = 0; node < 2; node++) {
            int ph = k < F_PREFILL ? 0 : 1;
            double v[3] = {f_metric(node, k, 0), f_metric(node, k, 1), f_metric(node, k, 2)};
            fx_step(s, h->fr, 0, k / 14, f_nodes[node],
                    ph ? STORE_PHASE_DECODE : STORE_PHASE_PREFILL, v[0], v[1], v[2], k);
            size_t n = h->f_n[node][ph]++;
            for (int m = 0; m < 3; m++)
                h->f_vals[node][ph][m][n] = v[m];
        }
    }
    store_leg_end(s, h->fr, 0, STORE_FAILED);
    store_run_end(s, h->fr, STORE_FAILED, "node2 timed out");

    h->sw = fx_run(s, STORE_MODE_SWEEP, "sweep-4", "m1");
    static const int kv[4] = {16, 16, 4, 4}, ps[4] = {256, 512, 256, 512};
    for (int leg = 0; leg < 4; leg++) {
        store_leg_start(
            s, h->sw, leg,
            &(store_leg_info){.kv_bits = kv[leg], .prefill_step = ps[leg], .concurrency = 1});
        for (int j = 0; j < 3; j++) {
            int ok = !(leg == 3 && j == 2);
            fx_request(s, h->sw, leg, 3 * leg + j, 0, 1000 * (leg + 1) + 100 * j, ok, 20 + j, 8 + j,
                       50 + 10 * leg + j);
        }
        for (int k = 0; k < S_STEPS; k++)
            fx_step(s, h->sw, leg, 3 * leg, "n1", STORE_PHASE_DECODE, fx_value(leg, k, 40, 5),
                    fx_value(leg + 7, k, 8, 2), -1, k);
        store_leg_end(s, h->sw, leg, leg == 3 ? STORE_FAILED : STORE_COMPLETED);
    }
    store_run_end(s, h->sw, STORE_COMPLETED, NULL);

    h->g = fx_run(s, STORE_MODE_GROWTH, "growth-m2", "m2");
    store_leg_start(s, h->g, 0,
                    &(store_leg_info){.kv_bits = 8, .prefill_step = 1024, .concurrency = 1});
    fx_request(s, h->g, 0, 0, 0, 512, 1, 1, 1, 1);
    store_run_end(s, h->g, STORE_COMPLETED, NULL);

    char err[256];
    cr_assert_eq(store_flush(s, err, sizeof err), 0, "%s", err);
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE runs SET started = 1000 * id, ended = 1000 * id + 10 WHERE id IN "
             "(%lld, %lld, %lld, %lld)",
             (long long)h->e, (long long)h->fr, (long long)h->sw, (long long)h->g);
    fx_sql(h->f.path, sql);
}

static void list_ids(store *s, const store_run_filter *f, int64_t *ids, size_t *n)
{
    store_run_list l;
    char err[256];
    cr_assert_eq(store_runs_list(s, f, &l, err, sizeof err), 0, "%s", err);
    *n = l.n;
    for (size_t i = 0; i < l.n; i++)
        ids[i] = l.runs[i].id;
    store_run_list_free(&l);
}

#define EXPECT_IDS(flt, ...)                                                                       \
    do {                                                                                           \
        int64_t want[] = {__VA_ARGS__}, got[8];                                                    \
        size_t n;                                                                                  \
        list_ids(h.f.s, flt, got, &n);                                                             \
        cr_assert_eq(n, sizeof want / sizeof want[0], "got %zu runs", n);                          \
        for (size_t i = 0; i < n; i++)                                                             \
            cr_assert_eq(got[i], want[i], "row %zu: run %lld, want %lld", i, (long long)got[i],    \
                         (long long)want[i]);                                                      \
    } while (0)

Test(store_query, list_filters_and_pages)
{
    history h;
    build(&h);
    store_run_filter all = {0};
    EXPECT_IDS(&all, h.g, h.sw, h.fr, h.e);
    store_run_filter mode = {.mode = "sweep"};
    EXPECT_IDS(&mode, h.sw);
    store_run_filter status = {.status = "failed"};
    EXPECT_IDS(&status, h.fr);
    store_run_filter model = {.model = "m2"};
    EXPECT_IDS(&model, h.g);
    store_run_filter text = {.text = "FAIL"};
    EXPECT_IDS(&text, h.fr);
    store_run_filter notes = {.text = "kv tuning", .limit = 1};
    EXPECT_IDS(&notes, h.g);
    store_run_filter range = {.since = 1000.0 * h.fr, .until = 1000.0 * h.sw + 1};
    EXPECT_IDS(&range, h.sw, h.fr);
    store_run_filter page = {.limit = 2, .offset = 2};
    EXPECT_IDS(&page, h.fr, h.e);
    store_run_filter past = {.offset = 4};
    int64_t none[1];
    size_t n_none;
    list_ids(h.f.s, &past, none, &n_none);
    cr_assert_eq(n_none, 0);

    store_run_list l;
    char err[256] = "";
    store_run_filter bad = {.mode = "grwoth"};
    cr_assert_eq(store_runs_list(h.f.s, &bad, &l, err, sizeof err), -1);
    cr_assert(strstr(err, "grwoth"), "%s", err);
    fx_close(&h.f);
}

Test(store_query, run_fields)
{
    history h;
    build(&h);
    store_run r;
    char err[256];
    cr_assert_eq(store_run_get(h.f.s, h.fr, &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.name, "growth-fail");
    cr_assert_str_eq(r.mode, "growth");
    cr_assert_str_eq(r.status, "failed");
    cr_assert_str_eq(r.model, "m1");
    cr_assert_str_eq(r.failure, "node2 timed out");
    cr_assert_eq(r.max_context, 8192);
    cr_assert_eq(r.last_context, F_STEPS);
    cr_assert_eq(r.n_legs, 1);
    cr_assert_eq(r.n_requests, 5);
    cr_assert_eq(r.n_failed, 1);
    cr_assert_eq(r.dropped_rows, 0);
    cr_assert_eq(r.started, 1000.0 * h.fr);
    store_run_free(&r);
    cr_assert_eq(store_run_get(h.f.s, 999, &r, err, sizeof err), 1);
    cr_assert(strstr(err, "no run with id 999"), "%s", err);
    fx_close(&h.f);
}

static void expect_dist(const store_dist *d, const double *v, size_t n)
{
    cr_assert_eq(d->count, (int64_t)n);
    cr_assert_eq(d->p50, fx_pct(v, n, 50));
    cr_assert_eq(d->p90, fx_pct(v, n, 90));
    cr_assert_eq(d->p99, fx_pct(v, n, 99));
    cr_assert_eq(d->max, fx_max(v, n));
}

Test(store_query, summary_of_a_failed_run)
{
    history h;
    build(&h);
    store_summary sum;
    char err[256];
    cr_assert_eq(store_run_summary(h.f.s, h.fr, &sum, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sum.n_legs, 1);
    const store_leg_summary *l = &sum.legs[0];
    cr_assert_eq(l->kv_bits, 16);
    cr_assert_eq(l->prefill_step, 512);
    cr_assert_str_eq(l->status, "failed");
    cr_assert_eq(l->requests, 5);
    cr_assert_eq(l->failed, 1);
    cr_assert_eq(l->max_context, 8192);
    /* ok requests: ttft 10..13, tpot 5..8, decode 100..97 */
    cr_assert_eq(l->ttft_ms.count, 4);
    cr_assert_eq(l->ttft_ms.p50, 11);
    cr_assert_eq(l->ttft_ms.p90, 13);
    cr_assert_eq(l->ttft_ms.p99, 13);
    cr_assert_eq(l->ttft_ms.max, 13);
    cr_assert_eq(l->tpot_ms.p50, 6);
    cr_assert_eq(l->decode_tps.p50, 98);
    cr_assert_eq(l->decode_tps.max, 100);
    cr_assert_eq(l->e2e_ms.p50, 11 + 16 * 6);

    cr_assert_eq(sum.n_groups, 4);
    for (int node = 0; node < 2; node++) {
        for (int ph = 0; ph < 2; ph++) {
            const store_step_group *g = &sum.groups[node * 2 + ph];
            cr_assert_eq(g->leg, 0);
            cr_assert_str_eq(g->node, f_nodes[node]);
            cr_assert_str_eq(g->phase, ph ? "decode" : "prefill");
            size_t n = h.f_n[node][ph];
            expect_dist(&g->step_ms, h.f_vals[node][ph][0], n);
            expect_dist(&g->model_ms, h.f_vals[node][ph][1], n);
            expect_dist(&g->eval_ms, h.f_vals[node][ph][2], n);
        }
    }
    cr_assert(sum.failure.found);
    cr_assert_eq(sum.failure.leg, 0);
    cr_assert_eq(sum.failure.request, 4);
    cr_assert_eq(sum.failure.ctx_before, 8192);
    cr_assert_str_eq(sum.failure.code, "timeout");
    cr_assert_str_eq(sum.failure.message, "node2 did not answer in 30 s");
    store_summary_free(&sum);
    fx_close(&h.f);
}

Test(store_query, summary_of_an_empty_run)
{
    history h;
    build(&h);
    store_summary sum;
    char err[256];
    cr_assert_eq(store_run_summary(h.f.s, h.e, &sum, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sum.n_legs, 0);
    cr_assert_eq(sum.n_groups, 0);
    cr_assert_eq(sum.failure.found, 0);
    cr_assert_eq(sum.run.max_context, -1);
    cr_assert_eq(sum.run.last_context, -1);
    cr_assert_str_eq(sum.run.status, "completed");
    store_summary_free(&sum);
    cr_assert_eq(store_run_summary(h.f.s, 424242, &sum, err, sizeof err), 1);
    fx_close(&h.f);
}

Test(store_query, summary_of_a_sweep_with_four_legs)
{
    history h;
    build(&h);
    store_summary sum;
    char err[256];
    cr_assert_eq(store_run_summary(h.f.s, h.sw, &sum, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sum.n_legs, 4);
    static const int kv[4] = {16, 16, 4, 4}, ps[4] = {256, 512, 256, 512};
    for (int leg = 0; leg < 4; leg++) {
        const store_leg_summary *l = &sum.legs[leg];
        cr_assert_eq(l->idx, leg);
        cr_assert_eq(l->kv_bits, kv[leg]);
        cr_assert_eq(l->prefill_step, ps[leg]);
        cr_assert_eq(l->requests, 3);
        cr_assert_eq(l->failed, leg == 3);
        cr_assert_eq(l->max_context, 1000 * (leg + 1) + (leg == 3 ? 100 : 200));
        cr_assert_str_eq(l->status, leg == 3 ? "failed" : "completed");
        cr_assert_eq(l->decode_tps.count, leg == 3 ? 2 : 3);
        cr_assert_eq(l->decode_tps.p50, 50 + 10 * leg + (leg == 3 ? 0 : 1));

        const store_step_group *g = &sum.groups[leg];
        cr_assert_eq(g->leg, leg);
        double step[S_STEPS], model[S_STEPS];
        for (int k = 0; k < S_STEPS; k++) {
            step[k] = fx_value(leg, k, 40, 5);
            model[k] = fx_value(leg + 7, k, 8, 2);
        }
        expect_dist(&g->step_ms, step, S_STEPS);
        expect_dist(&g->model_ms, model, S_STEPS);
        cr_assert_eq(g->eval_ms.count, 0, "unknown eval_ms is not a value");
    }
    cr_assert(sum.failure.found);
    cr_assert_eq(sum.failure.leg, 3);
    cr_assert_eq(sum.failure.request, 11);
    store_summary_free(&sum);
    fx_close(&h.f);
}

/* The aggregates stored at run end give the same summary as the steps. */
Test(store_query, stored_aggregates_match_the_steps)
{
    fx f;
    fx_open(&f);
    int64_t run = fx_run(f.s, STORE_MODE_SOAK, "soak", "m1");
    store_leg_start(f.s, run, 0,
                    &(store_leg_info){.kv_bits = 8, .prefill_step = 256, .concurrency = 1});
    for (int k = 0; k < 500; k++)
        fx_step(f.s, run, 0, 0, k % 3 ? "a" : "b", STORE_PHASE_DECODE, fx_value(1, k, 10, 90),
                fx_value(2, k, 1, 9), fx_value(3, k, 5, 5), k);
    char err[256];
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    store_summary live, ended;
    cr_assert_eq(store_run_summary(f.s, run, &live, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM step_stats"), 0);
    store_run_end(f.s, run, STORE_COMPLETED, NULL);
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM step_stats"), 2 * 3);
    cr_assert_eq(store_run_summary(f.s, run, &ended, err, sizeof err), 0, "%s", err);
    cr_assert_eq(live.n_groups, 2);
    cr_assert_eq(ended.n_groups, 2);
    cr_assert_eq(memcmp(live.groups, ended.groups, 2 * sizeof *live.groups), 0);
    store_summary_free(&live);
    store_summary_free(&ended);

    /* A stale aggregate (a step arrived after it) is not used. */
    fx_sql(f.path, "UPDATE step_stats SET p50 = -1");
    fx_sql(f.path, "UPDATE runs SET stats_seq = stats_seq - 1");
    cr_assert_eq(store_run_summary(f.s, run, &ended, err, sizeof err), 0, "%s", err);
    cr_assert_neq(ended.groups[0].step_ms.p50, -1);
    store_summary_free(&ended);
    fx_close(&f);
}

static const store_delta *delta(const store_compare *c, const char *key, const char *metric)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].key, key) == 0 && strcmp(c->rows[i].metric, metric) == 0)
            return &c->rows[i];
    cr_assert_fail("no compare row %s / %s", key, metric);
    return NULL;
}

Test(store_query, compare_two_runs)
{
    history h;
    build(&h);
    store_compare c;
    char err[256];
    cr_assert_eq(store_run_compare(h.f.s, h.fr, h.sw, &c, err, sizeof err), 0, "%s", err);
    const store_delta *d = delta(&c, "run", "max_context");
    cr_assert_eq(d->a, 8192);
    cr_assert_eq(d->b, 4100);
    cr_assert_eq(d->delta, 4100 - 8192);
    cr_assert_eq(d->ratio, 4100.0 / 8192);
    /* The growth leg (kv 16, prefill 512) pairs the sweep's leg 1, not
     * its leg 0; the sweep's other legs have no partner. */
    cr_assert_eq(c.n_pairs, 4);
    cr_expect(c.pairs[0].a == 0 && c.pairs[0].b == 1);
    for (int i = 1; i < 4; i++)
        cr_expect(c.pairs[i].a == -1 && c.pairs[i].b == (i == 1 ? 0 : i), "pair %d", i);
    d = delta(&c, "kv 16 prefill 512 conc 1", "requests");
    cr_assert_eq(d->a, 5);
    cr_assert_eq(d->b, 3);
    d = delta(&c, "kv 16 prefill 512 conc 1", "ttft_ms p50");
    cr_assert_eq(d->a, 11);
    cr_assert_eq(d->b, 21);
    cr_assert_eq(d->ratio, 21.0 / 11);
    d = delta(&c, "kv 4 prefill 256 conc 1", "max_context");
    cr_assert_eq(d->has_a, 0);
    cr_assert_eq(d->has_b, 1);
    cr_assert(isnan(d->delta) && isnan(d->ratio));
    d = delta(&c, "kv 16 prefill 512 conc 1 n2 decode", "step_ms p50");
    cr_assert_eq(d->has_a, 1);
    cr_assert_eq(d->has_b, 0);
    d = delta(&c, "kv 16 prefill 512 conc 1 n1 decode", "steps");
    cr_assert_eq(d->a, F_STEPS - F_PREFILL);
    cr_assert_eq(d->b, S_STEPS);
    store_compare_free(&c);
    cr_assert_eq(store_run_compare(h.f.s, h.fr, 777, &c, err, sizeof err), 1);
    cr_assert(strstr(err, "777"), "%s", err);
    fx_close(&h.f);
}

/* A sweep of the legs in `order` (indices into kv/ps), each leg's figures
 * a function of its settings, so that a leg paired with another of the
 * same settings has the same numbers. */
static int64_t sweep_in(store *s, const char *name, const int *order)
{
    static const int kv[4] = {16, 16, 4, 4}, ps[4] = {256, 512, 256, 512};
    int64_t run = fx_run(s, STORE_MODE_SWEEP, name, "m1");
    for (int leg = 0; leg < 4; leg++) {
        int k = order[leg];
        store_leg_start(
            s, run, leg,
            &(store_leg_info){.kv_bits = kv[k], .prefill_step = ps[k], .concurrency = 1 + k % 2});
        for (int j = 0; j < 3; j++)
            fx_request(s, run, leg, 3 * leg + j, 0, 1000 + j, 1, 10 * (k + 1) + j, 5, 100 + 10 * k);
        store_leg_end(s, run, leg, STORE_COMPLETED);
    }
    store_run_end(s, run, STORE_COMPLETED, NULL);
    return run;
}

Test(store_query, compare_pairs_legs_by_their_settings)
{
    fx f;
    fx_open(&f);
    static const int fwd[4] = {0, 1, 2, 3}, rev[4] = {3, 1, 0, 2};
    int64_t a = sweep_in(f.s, "forward", fwd), b = sweep_in(f.s, "shuffled", rev);
    char err[256];
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    store_compare c;
    cr_assert_eq(store_run_compare(f.s, a, b, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n_pairs, 4, "every leg has a partner");
    for (size_t i = 0; i < c.n_pairs; i++) {
        const store_leg_summary *la = &c.a.legs[c.pairs[i].a], *lb = &c.b.legs[c.pairs[i].b];
        cr_expect(la->kv_bits == lb->kv_bits && la->prefill_step == lb->prefill_step &&
                      la->concurrency == lb->concurrency,
                  "pair %zu: kv %d/%d prefill %d/%d conc %d/%d", i, la->kv_bits, lb->kv_bits,
                  la->prefill_step, lb->prefill_step, la->concurrency, lb->concurrency);
        cr_expect_eq(la->ttft_ms.p50, lb->ttft_ms.p50, "pair %zu", i);
        cr_expect_eq(la->decode_tps.p50, lb->decode_tps.p50, "pair %zu", i);
        cr_expect_eq(la->ttft_p95_ms, la->ttft_ms.max, "pair %zu: p95 of 3 is the largest", i);
    }
    cr_expect_eq(c.pairs[0].b, 2, "A's leg 0 (kv 16, prefill 256) is B's leg 2");
    const store_delta *d = delta(&c, "kv 4 prefill 512 conc 2", "decode_tps p50");
    cr_expect_eq(d->ratio, 1.0);
    store_compare_free(&c);

    /* Runs of two engines: kv_bits and prefill_step are each engine's
     * own, so legs pair by concurrency alone. */
    fx_sql(f.path, "UPDATE runs SET engine = 'llama.cpp' WHERE id = 2");
    fx_sql(f.path, "UPDATE legs SET kv_bits = 8 WHERE run = 2");
    cr_assert_eq(store_run_compare(f.s, a, b, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n_pairs, 4);
    for (size_t i = 0; i < c.n_pairs; i++)
        cr_expect(c.pairs[i].a >= 0 && c.pairs[i].b >= 0 &&
                      c.a.legs[c.pairs[i].a].concurrency == c.b.legs[c.pairs[i].b].concurrency,
                  "pair %zu", i);
    store_compare_free(&c);
    /* The same engine with other knobs: nothing pairs. */
    fx_sql(f.path, "UPDATE runs SET engine = 'inferd' WHERE id = 2");
    cr_assert_eq(store_run_compare(f.s, a, b, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n_pairs, 8);
    for (size_t i = 0; i < c.n_pairs; i++)
        cr_expect(c.pairs[i].a < 0 || c.pairs[i].b < 0, "pair %zu", i);
    store_compare_free(&c);
    fx_close(&f);
}

Test(store_query, best_settings)
{
    history h;
    build(&h);
    store_best b;
    char err[256];
    cr_assert_eq(store_best_settings(h.f.s, "m1", "lab", NULL, STORE_BEST_CONTEXT, NULL, &b, err,
                                     sizeof err),
                 0, "%s", err);
    struct {
        int kv, ps;
        int64_t ctx;
        double tps;
        int64_t run, runs;
    } want[] = {
        {16, 512, 8192, 97, h.fr, 2},
        {4, 512, 4100, 81, h.sw, 1},
        {4, 256, 3200, 72, h.sw, 1},
        {16, 256, 1200, 52, h.sw, 1},
    };
    cr_assert_eq(b.n, 4);
    for (size_t i = 0; i < 4; i++) {
        cr_assert_str_eq(b.rows[i].model, "m1");
        cr_assert_str_eq(b.rows[i].cluster, "lab");
        cr_assert_eq(b.rows[i].kv_bits, want[i].kv, "row %zu", i);
        cr_assert_eq(b.rows[i].prefill_step, want[i].ps, "row %zu", i);
        cr_assert_eq(b.rows[i].max_context, want[i].ctx, "row %zu", i);
        cr_assert_eq(b.rows[i].decode_tps, want[i].tps, "row %zu", i);
        cr_assert_eq(b.rows[i].run, want[i].run, "row %zu", i);
        cr_assert_eq(b.rows[i].runs, want[i].runs, "row %zu", i);
    }
    store_best_free(&b);
    cr_assert_eq(
        store_best_settings(h.f.s, NULL, NULL, NULL, STORE_BEST_CONTEXT, NULL, &b, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(b.n, 5, "m2's one setting joins");
    store_best_free(&b);
    cr_assert_eq(store_best_settings(h.f.s, "nope", NULL, NULL, STORE_BEST_CONTEXT, NULL, &b, err,
                                     sizeof err),
                 0, "%s", err);
    cr_assert_eq(b.n, 0);
    store_best_free(&b);
    fx_close(&h.f);
}

/* ---- legs of many requests in flight: concurrency and aggregate tok/s ---- */

/* A request that ended at t after e2e_ms, having generated gen tokens. */
static void agg_request(store *s, int64_t run, int leg, int64_t idx, double t, double e2e_ms,
                        int gen, int ok)
{
    store_request r = {.run = run,
                       .leg = leg,
                       .idx = idx,
                       .ctx_before = 0,
                       .ctx_after = 64 + gen,
                       .prompt_tokens = 64,
                       .gen_tokens = gen,
                       .ttft_ms = -1,
                       .prefill_ms = -1,
                       .prefill_tps = -1,
                       .decode_tps = ok ? 50 : -1,
                       .tpot_ms = -1,
                       .itl_p50_ms = -1,
                       .itl_p99_ms = -1,
                       .prefill_step_ms = -1,
                       .decode_step_ms = -1,
                       .e2e_ms = e2e_ms,
                       .ok = ok,
                       .error_code = ok ? NULL : "busy",
                       .error_message = ok ? NULL : "queue full",
                       .t = t};
    cr_assert_eq(store_request_add(s, &r), 0);
}

static void agg_leg(store *s, int64_t run, int leg, int concurrency)
{
    store_leg_info info = {.kv_bits = 16, .prefill_step = 256, .concurrency = concurrency};
    cr_assert_eq(store_leg_start(s, run, leg, &info), 0);
}

/* Run A: three fixed legs at concurrency 1, 2, 4 of 10, 13.33 and 40
 * tok/s; run B: one leg at concurrency 2 of 30 tok/s; run C: a leg still
 * running, of 8 tok/s so far. */
typedef struct agg_db {
    fx f;
    int64_t a, b, c;
} agg_db;

static void agg_build(agg_db *d)
{
    fx_open(&d->f);
    store *s = d->f.s;
    d->a = fx_run(s, STORE_MODE_SWEEP, "conc", "m1");
    agg_leg(s, d->a, 0, 1);
    agg_request(s, d->a, 0, 0, 100, 1000, 10, 1); /* sent at 99 */
    agg_request(s, d->a, 0, 1, 101, 1000, 10, 1); /* 20 tokens over 99..101 */
    store_leg_end(s, d->a, 0, STORE_COMPLETED);
    agg_leg(s, d->a, 1, 2);
    agg_request(s, d->a, 1, 2, 200, 1000, 10, 1);
    agg_request(s, d->a, 1, 3, 200.5, 1500, 10, 1); /* 20 over 199..200.5 */
    store_leg_end(s, d->a, 1, STORE_COMPLETED);
    agg_leg(s, d->a, 2, 4);
    agg_request(s, d->a, 2, 4, 300, 500, 15, 1);
    agg_request(s, d->a, 2, 5, 300, 500, 5, 0); /* a failed request's tokens count too */
    store_leg_end(s, d->a, 2, STORE_FAILED);
    store_run_end(s, d->a, STORE_FAILED, "busy");
    d->b = fx_run(s, STORE_MODE_FIXED, "conc again", "m1");
    agg_leg(s, d->b, 0, 2);
    agg_request(s, d->b, 0, 0, 400, 1000, 30, 1);
    store_leg_end(s, d->b, 0, STORE_COMPLETED);
    store_run_end(s, d->b, STORE_COMPLETED, NULL);
    d->c = fx_run(s, STORE_MODE_FIXED, "going", "m1");
    agg_leg(s, d->c, 0, 8);
    agg_request(s, d->c, 0, 0, 500, 2000, 16, 1);
    char err[256];
    cr_assert_eq(store_flush(s, err, sizeof err), 0, "%s", err);
}

Test(store_query, legs_keep_concurrency_and_aggregate_throughput)
{
    agg_db d;
    agg_build(&d);
    /* Stored when a leg ends; a leg still running has none yet. */
    cr_expect_eq(fx_int(d.f.path, "SELECT count(*) FROM legs WHERE run = 1"
                                  " AND round(agg_tps, 6) IN (10, 13.333333, 40)"),
                 3);
    cr_expect_eq(fx_int(d.f.path, "SELECT count(*) FROM legs WHERE run = 3 AND agg_tps IS NULL"
                                  " AND concurrency = 8"),
                 1);
    store_summary sum;
    char err[256];
    cr_assert_eq(store_run_summary(d.f.s, d.a, &sum, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sum.n_legs, 3);
    static const int conc[3] = {1, 2, 4};
    static const double agg[3] = {10.0, 20.0 / 1.5, 40.0};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(sum.legs[i].concurrency, conc[i], "leg %d", i);
        cr_expect_float_eq(sum.legs[i].agg_tps, agg[i], 1e-9, "leg %d: %g", i, sum.legs[i].agg_tps);
    }
    json_t *j = store_summary_json(&sum);
    cr_assert_not_null(j);
    json_t *leg2 = json_array_get(json_object_get(j, "legs"), 2);
    cr_expect_eq(json_integer_value(json_object_get(leg2, "concurrency")), 4);
    cr_expect_float_eq(json_real_value(json_object_get(leg2, "agg_tps")), 40.0, 1e-9);
    json_decref(j);
    store_summary_free(&sum);
    /* A leg still running: as far as it got (16 tokens over 2 s). */
    cr_assert_eq(store_run_summary(d.f.s, d.c, &sum, err, sizeof err), 0, "%s", err);
    cr_expect_eq(sum.legs[0].concurrency, 8);
    cr_expect_float_eq(sum.legs[0].agg_tps, 8.0, 1e-9);
    store_summary_free(&sum);
    /* A leg with no request has no throughput. */
    int64_t e = fx_run(d.f.s, STORE_MODE_FIXED, "empty", "m1");
    agg_leg(d.f.s, e, 0, 3);
    store_leg_end(d.f.s, e, 0, STORE_FAILED);
    cr_assert_eq(store_flush(d.f.s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_run_summary(d.f.s, e, &sum, err, sizeof err), 0, "%s", err);
    cr_expect(isnan(sum.legs[0].agg_tps));
    store_summary_free(&sum);
    fx_close(&d.f);
}

Test(store_query, compare_shows_concurrency_and_aggregate_throughput)
{
    agg_db d;
    agg_build(&d);
    store_compare c;
    char err[256];
    cr_assert_eq(store_run_compare(d.f.s, d.a, d.b, &c, err, sizeof err), 0, "%s", err);
    /* B's one leg, at concurrency 2, pairs A's leg at concurrency 2. */
    const store_delta *agg = delta(&c, "kv 16 prefill 256 conc 2", "agg_tps");
    const store_delta *conc = delta(&c, "kv 16 prefill 256 conc 2", "concurrency");
    const store_delta *agg1 = delta(&c, "kv 16 prefill 256 conc 1", "agg_tps");
    cr_expect_float_eq(agg->a, 20.0 / 1.5, 1e-9);
    cr_expect_float_eq(agg->b, 30.0, 1e-9);
    cr_expect_float_eq(agg->ratio, 30.0 / (20.0 / 1.5), 1e-9);
    cr_expect(conc->a == 2 && conc->b == 2);
    cr_expect(agg1->has_a && !agg1->has_b, "B has no leg at concurrency 1");
    store_compare_free(&c);
    fx_close(&d.f);
}

/* By aggregate tok/s: one row per (kv_bits, prefill_step, concurrency),
 * the best leg's figure, highest first; the default ranking is untouched. */
Test(store_query, best_by_aggregate_throughput)
{
    agg_db d;
    agg_build(&d);
    store_best b;
    char err[256];
    cr_assert_eq(
        store_best_settings(d.f.s, "m1", NULL, NULL, STORE_BEST_AGG_TPS, NULL, &b, err, sizeof err),
        0, "%s", err);
    struct {
        int conc;
        double agg;
        int64_t run, runs;
    } want[] = {{4, 40.0, d.a, 1}, {2, 30.0, d.b, 2}, {1, 10.0, d.a, 1}, {8, 8.0, d.c, 1}};
    cr_assert_eq(b.n, 4);
    for (size_t i = 0; i < 4; i++) {
        cr_expect_eq(b.rows[i].concurrency, want[i].conc, "row %zu", i);
        cr_expect_float_eq(b.rows[i].agg_tps, want[i].agg, 1e-9, "row %zu", i);
        cr_expect_eq(b.rows[i].run, want[i].run, "row %zu", i);
        cr_expect_eq(b.rows[i].runs, want[i].runs, "row %zu", i);
        cr_expect_eq(b.rows[i].kv_bits, 16);
        cr_expect_eq(b.rows[i].prefill_step, 256);
    }
    json_t *j = store_best_json(&b);
    cr_assert_not_null(j);
    json_t *first = json_array_get(j, 0);
    cr_expect_eq(json_integer_value(json_object_get(first, "concurrency")), 4);
    cr_expect_float_eq(json_real_value(json_object_get(first, "agg_tps")), 40.0, 1e-9);
    cr_expect_null(json_object_get(first, "max_context"), "the other ranking's figures stay out");
    json_decref(j);
    store_best_free(&b);

    cr_assert_eq(
        store_best_settings(d.f.s, "m1", NULL, NULL, STORE_BEST_CONTEXT, NULL, &b, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(b.n, 1, "one (kv_bits, prefill_step) whatever the concurrency");
    cr_expect_eq(b.rows[0].runs, 3);
    cr_expect_eq(b.rows[0].max_context, 64 + 30);
    store_best_free(&b);
    fx_close(&d.f);
}

static char *export_text(store *s, int64_t run, store_export_what what, store_format fmt)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(store_export(s, run, what, fmt, f, err, sizeof err), 0, "%s", err);
    fclose(f);
    return buf;
}

/* The chart points are the ok requests, in order, with their figures. */
Test(store_query, curve_has_the_ok_requests_in_order)
{
    history h;
    build(&h);
    store_curve c;
    char err[256];
    cr_assert_eq(store_run_curve(h.f.s, h.fr, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n, 4, "the failed request is not a point");
    for (size_t i = 0; i < c.n; i++) {
        const store_point *p = &c.points[i];
        cr_assert_eq(p->idx, (int64_t)i);
        cr_assert_eq(p->ctx, 1024 << i);
        cr_assert_eq(p->decode_tps, 100.0 - (double)i);
        cr_assert_eq(p->prefill_tps, 1000.0 + (double)i);
        cr_assert_eq(p->prefill_step_ms, (double)(1024 << i) / 128);
        cr_assert_eq(p->decode_step_ms, (5.0 + (double)i) / 2);
    }
    store_curve_free(&c);

    cr_assert_eq(store_run_curve(h.f.s, h.sw, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n, 11);
    cr_assert_eq(c.points[10].leg, 3);
    store_curve_free(&c);

    cr_assert_eq(store_run_curve(h.f.s, h.e, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n, 0);
    cr_assert_eq(store_run_curve(h.f.s, 999, &c, err, sizeof err), 1);
    cr_assert(strstr(err, "999"), "%s", err);
    fx_close(&h.f);
}

Test(store_query, export_csv_and_json)
{
    history h;
    build(&h);
    char *csv = export_text(h.f.s, h.fr, STORE_EXPORT_REQUESTS, STORE_FORMAT_CSV);
    const char *want_head = "leg,idx,session,ctx_before,ctx_after,prompt_tokens,gen_tokens,"
                            "ttft_ms,prefill_ms,prefill_tps,decode_tps,tpot_ms,e2e_ms,status,"
                            "error_code,error_message,t,itl_p50_ms,itl_p99_ms,prefill_step_ms,"
                            "decode_step_ms\r\n";
    cr_assert_eq(strncmp(csv, want_head, strlen(want_head)), 0, "%s", csv);
    cr_assert(
        strstr(csv,
               "\r\n0,1,s1,1024,2048,1008,16,11,10,1001,99,6,107,ok,,,1700000001,5,12,16,3\r\n"),
        "%s", csv);
    cr_assert(strstr(csv, "\r\n0,4,s1,8192,8192,-16,16,,,1004,,,,failed,timeout,"
                          "node2 did not answer in 30 s,1700000004,,,,\r\n"),
              "%s", csv);
    free(csv);

    char *js = export_text(h.f.s, h.fr, STORE_EXPORT_STEPS, STORE_FORMAT_JSON);
    json_error_t je;
    json_t *arr = json_loads(js, 0, &je);
    cr_assert_not_null(arr, "%s: %s", je.text, js);
    cr_assert_eq(json_array_size(arr), 2 * F_STEPS);
    json_t *first = json_array_get(arr, 0);
    cr_assert_eq(json_integer_value(json_object_get(first, "seq")), 0);
    cr_assert_str_eq(json_string_value(json_object_get(first, "node")), "n1");
    cr_assert_str_eq(json_string_value(json_object_get(first, "phase")), "prefill");
    cr_assert(json_is_null(json_object_get(first, "wait_ms")));
    cr_assert_eq(json_real_value(json_object_get(first, "step_ms")), f_metric(0, 0, 0));
    json_decref(arr);
    free(js);

    char *sum = export_text(h.f.s, h.sw, STORE_EXPORT_SUMMARY, STORE_FORMAT_CSV);
    cr_assert(strstr(sum, "section,leg,kv_bits,prefill_step,node,phase,metric,count,p50,p90,"
                          "p99,max\r\n"),
              "%s", sum);
    cr_assert(strstr(sum, "request,3,4,512,,,decode_tps,2,80,81,81,81\r\n"), "%s", sum);
    free(sum);

    char *empty = export_text(h.f.s, h.e, STORE_EXPORT_STEPS, STORE_FORMAT_JSON);
    cr_assert_str_eq(empty, "[]\n");
    free(empty);

    char err[256];
    cr_assert_eq(
        store_export(h.f.s, 555, STORE_EXPORT_STEPS, STORE_FORMAT_CSV, stdout, err, sizeof err), 1);
    fx_close(&h.f);
}

Test(store_query, prune_old_finished_runs)
{
    history h;
    build(&h);
    int64_t live = fx_run(h.f.s, STORE_MODE_SOAK, "still going", "m1");
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE runs SET started = 10 WHERE id = %lld", (long long)live);
    fx_sql(h.f.path, sql);
    int64_t deleted = -1;
    char err[256];
    /* before S started: E and F go, S and G stay, the live run stays */
    cr_assert_eq(store_prune(h.f.s, 1000.0 * h.sw, 1, &deleted, err, sizeof err), 0, "%s", err);
    cr_assert_eq(deleted, 2);
    cr_assert_eq(fx_int(h.f.path, "SELECT count(*) FROM runs"), 3);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld", (long long)h.fr);
    cr_assert_eq(fx_int(h.f.path, sql), 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM requests WHERE run = %lld", (long long)h.fr);
    cr_assert_eq(fx_int(h.f.path, sql), 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM step_stats WHERE run = %lld", (long long)h.fr);
    cr_assert_eq(fx_int(h.f.path, sql), 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld", (long long)h.sw);
    cr_assert_eq(fx_int(h.f.path, sql), 4 * S_STEPS);
    fx_close(&h.f);
}
