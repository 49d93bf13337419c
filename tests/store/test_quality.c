/* test_quality.c: quality measurements (schema 8): a v7 database upgrades
 * with its runs intact and takes quality runs; a measurement and its
 * buckets are written and read back as given; the latest of a setting is
 * found; history best ranks under a quality floor. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "store/store_int.h"

static const char sha_a[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* A measurement of kv_bits with figures derived from kl, and two buckets:
 * the first unscored (positions 0, figures NaN), the second holding them. */
static void quality_add(store *s, int64_t run, int leg, int kv_bits, double kl, double top1,
                        double t)
{
    store_quality_bucket b[2] = {{.from = 0,
                                  .to = 256,
                                  .positions = 0,
                                  .kl_mean = NAN,
                                  .kl_p99 = NAN,
                                  .kl_max = NAN,
                                  .top1 = NAN,
                                  .ppl_ref = NAN,
                                  .ppl_test = NAN},
                                 {.from = 256,
                                  .to = 512,
                                  .positions = 768,
                                  .kl_mean = kl,
                                  .kl_p99 = 4 * kl,
                                  .kl_max = 8 * kl,
                                  .top1 = top1,
                                  .ppl_ref = 11.25,
                                  .ppl_test = 11.25 + kl}};
    store_quality q = {.run = run,
                       .leg = leg,
                       .kv_bits = kv_bits,
                       .ref_kv_bits = 32,
                       .ctx = 512,
                       .score_from = 256,
                       .windows = 3,
                       .positions = 768,
                       .kl_mean = kl,
                       .kl_p99 = 4 * kl,
                       .kl_max = 8 * kl,
                       .top1 = top1,
                       .ppl_ref = 11.25,
                       .ppl_test = 11.25 + kl,
                       .ppl_ref_err = 0.125,
                       .text_name = "text-en.txt",
                       .model = "m1",
                       .t = t,
                       .buckets = b,
                       .n_buckets = 2};
    memcpy(q.text_sha256, sha_a, sizeof sha_a);
    cr_assert_eq(store_quality_add(s, &q), 0);
}

/* A quality run of one leg per kv_bits value. */
static int64_t quality_run(store *s, const int *kv, const double *kl, int n, double t)
{
    int64_t run = fx_run(s, STORE_MODE_QUALITY, "quality", "m1");
    for (int i = 0; i < n; i++) {
        store_leg_info leg = {.kv_bits = kv[i], .prefill_step = 128, .concurrency = 1};
        cr_assert_eq(store_leg_start(s, run, i, &leg), 0);
        quality_add(s, run, i, kv[i], kl[i], 1.0 - 10 * kl[i], t);
        cr_assert_eq(store_leg_end(s, run, i, STORE_COMPLETED), 0);
    }
    cr_assert_eq(store_run_end(s, run, STORE_COMPLETED, NULL), 0);
    char err[256];
    cr_assert_eq(store_flush(s, err, sizeof err), 0, "%s", err);
    return run;
}

Test(store_quality, version_7_upgrades_keeping_runs_and_their_references)
{
    fx f;
    snprintf(f.dir, sizeof f.dir, "/tmp/infertop-store-XXXXXX");
    cr_assert_not_null(mkdtemp(f.dir));
    snprintf(f.path, sizeof f.path, "%s/history.db", f.dir);
    sqlite3 *db;
    char err[512];
    cr_assert_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    cr_assert_eq(store_migrate(db, 7, err, sizeof err), 0, "%s", err);
    cr_assert_eq(sqlite3_exec(db,
                              "INSERT INTO runs(id, name, mode, status, started, ended, cluster,"
                              " dropped_rows, last_context, engine, engine_version)"
                              " VALUES (1, 'old', 'sweep', 'completed', 400, 500,"
                              " '{\"model\":\"m1\"}', 3, 2048, 'llama.cpp', 'b1'),"
                              " (2, 'other', 'fixed', 'failed', 300, 310, '{}', 0, NULL,"
                              " 'inferd', NULL);"
                              "INSERT INTO legs VALUES (1, 0, 16, 512, 'completed', 100, 200, 2048,"
                              " 1, 10), (2, 0, 4, 512, 'failed', 300, 310, 64, 1, 5);"
                              "INSERT INTO requests(run, leg, idx, ctx_before, ctx_after,"
                              " prompt_tokens, gen_tokens, status, t)"
                              " VALUES (1, 0, 0, 0, 2048, 2000, 48, 'ok', 150);"
                              "INSERT INTO events(run, t, kind) VALUES (1, 120, 'config');",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
    f.s = store_open(f.path, NULL, err, sizeof err);
    cr_assert_not_null(f.s, "%s", err);
    cr_assert_eq(fx_int(f.path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);

    store_run r;
    cr_assert_eq(store_run_get(f.s, 1, &r, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(r.name, "old");
    cr_expect_str_eq(r.mode, "sweep");
    cr_expect_str_eq(r.engine, "llama.cpp");
    cr_expect_str_eq(r.engine_version, "b1");
    cr_expect_eq(r.dropped_rows, 3);
    cr_expect_eq(r.last_context, 2048);
    cr_expect_eq(r.n_legs, 1);
    cr_expect_eq(r.n_requests, 1);
    store_run_free(&r);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
                                " AND name IN ('runs_started', 'runs_status', 'quality_model')"),
                 3);

    /* The rebuilt runs table is still the parent of the others: pruning
     * run 2 cascades to its leg; run 1's rows stay. */
    int64_t deleted;
    cr_assert_eq(store_prune(f.s, 350, 0, &deleted, err, sizeof err), 0, "%s", err);
    cr_expect_eq(deleted, 1, "runs started before 350: run 2 alone");
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM legs WHERE run = 2"), 0);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM legs WHERE run = 1"), 1);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM events WHERE run = 1"), 1);

    /* And it takes quality runs. */
    const int kv[] = {4};
    const double kl[] = {0.01};
    int64_t q = quality_run(f.s, kv, kl, 1, 500);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE id = %lld AND mode = 'quality'",
             (long long)q);
    cr_expect_eq(fx_int(f.path, sql), 1);
    fx_close(&f);
}

Test(store_quality, a_measurement_reads_back_as_written)
{
    fx f;
    fx_open(&f);
    const int kv[] = {32, 8, 4};
    const double kl[] = {0.0, 0.001, 0.0125};
    int64_t run = quality_run(f.s, kv, kl, 3, 1000);
    store_quality_list l;
    char err[256];
    cr_assert_eq(store_run_quality(f.s, run, &l, err, sizeof err), 0, "%s", err);
    cr_assert_eq(l.n, 3);
    for (size_t i = 0; i < 3; i++) {
        const store_quality *q = &l.q[i];
        cr_expect_eq(q->leg, (int)i);
        cr_expect_eq(q->kv_bits, kv[i]);
        cr_expect_eq(q->ref_kv_bits, 32);
        cr_expect_eq(q->ctx, 512);
        cr_expect_eq(q->score_from, 256);
        cr_expect_eq(q->windows, 3);
        cr_expect_eq(q->positions, 768);
        cr_expect_eq(q->kl_mean, kl[i]);
        cr_expect_eq(q->kl_p99, 4 * kl[i]);
        cr_expect_eq(q->kl_max, 8 * kl[i]);
        cr_expect_eq(q->top1, 1.0 - 10 * kl[i]);
        cr_expect_eq(q->ppl_test, 11.25 + kl[i]);
        cr_expect_eq(q->ppl_ref_err, 0.125);
        cr_expect_str_eq(q->text_name, "text-en.txt");
        cr_expect_str_eq(q->text_sha256, sha_a);
        cr_expect_str_eq(q->model, "m1");
        cr_expect_eq(q->t, 1000);
        cr_assert_eq(q->n_buckets, 2);
        cr_expect_eq(q->buckets[0].positions, 0);
        cr_expect(isnan(q->buckets[0].kl_mean), "an unscored bucket has no figures");
        cr_expect_eq(q->buckets[1].from, 256);
        cr_expect_eq(q->buckets[1].to, 512);
        cr_expect_eq(q->buckets[1].kl_max, 8 * kl[i]);
    }
    json_t *j = store_quality_json(&l.q[2]);
    cr_assert_not_null(j);
    cr_expect_eq(json_real_value(json_object_get(j, "kl_mean")), 0.0125);
    json_t *b0 = json_array_get(json_object_get(j, "buckets"), 0);
    cr_expect(json_is_null(json_object_get(b0, "kl_mean")));
    cr_expect_eq(json_integer_value(json_object_get(b0, "to")), 256);
    json_decref(j);
    store_quality_list_free(&l);

    cr_expect_eq(store_run_quality(f.s, run + 99, &l, err, sizeof err), 1, "no such run");

    /* Pruning the run takes its measurements and buckets with it. */
    int64_t deleted;
    cr_assert_eq(store_prune(f.s, 1e12, 0, &deleted, err, sizeof err), 0, "%s", err);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM quality"), 0);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM quality_buckets"), 0);
    fx_close(&f);
}

/* Another engine's measurement is a top-k estimate: its k reads back and
 * every output says so; inferd's are full (topk NULL in the table). */
Test(store_quality, a_topk_estimate_says_its_k)
{
    fx f;
    fx_open(&f);
    const int kv[] = {16};
    const double kl[] = {0.002};
    int64_t run = quality_run(f.s, kv, kl, 1, 1000);
    int64_t run2 = fx_run(f.s, STORE_MODE_QUALITY, "topk", "m1");
    store_leg_info leg = {.kv_bits = 4, .concurrency = 1};
    cr_assert_eq(store_leg_start(f.s, run2, 0, &leg), 0);
    store_quality q = {.run = run2,
                       .leg = 0,
                       .kv_bits = 4,
                       .ref_kv_bits = 16,
                       .ctx = 32,
                       .score_from = 16,
                       .windows = 2,
                       .positions = 30,
                       .kl_mean = 0.25,
                       .kl_p99 = 1,
                       .kl_max = 2,
                       .top1 = 0.75,
                       .ppl_ref = NAN,
                       .ppl_test = NAN,
                       .ppl_ref_err = NAN,
                       .topk = 20,
                       .text_name = "t.txt",
                       .model = "m1",
                       .t = 2000};
    memcpy(q.text_sha256, sha_a, sizeof sha_a);
    cr_assert_eq(store_quality_add(f.s, &q), 0);
    char err[256];
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM quality WHERE topk IS NULL"), 1);
    store_quality_list l;
    cr_assert_eq(store_run_quality(f.s, run2, &l, err, sizeof err), 0, "%s", err);
    cr_assert_eq(l.n, 1);
    cr_expect_eq(l.q[0].topk, 20);
    cr_expect(isnan(l.q[0].ppl_ref));
    json_t *j = store_quality_json(&l.q[0]);
    cr_expect_str_eq(json_string_value(json_object_get(j, "estimate")), "topk");
    cr_expect_eq(json_integer_value(json_object_get(j, "topk")), 20);
    json_decref(j);
    store_quality_list_free(&l);
    cr_assert_eq(store_run_quality(f.s, run, &l, err, sizeof err), 0, "%s", err);
    cr_expect_eq(l.q[0].topk, 0);
    j = store_quality_json(&l.q[0]);
    cr_expect_str_eq(json_string_value(json_object_get(j, "estimate")), "full");
    cr_expect(json_is_null(json_object_get(j, "topk")));
    json_decref(j);
    store_quality_list_free(&l);
    char buf[48];
    store_fmt_estimate(20, buf, sizeof buf);
    cr_expect_str_eq(buf, "top-k estimate (k=20)");
    store_fmt_estimate(0, buf, sizeof buf);
    cr_expect_str_eq(buf, "full");
    store_fmt_estimate(-1, buf, sizeof buf);
    cr_expect_str_eq(buf, "-");
    fx_close(&f);
}

Test(store_quality, bad_measurements_are_refused_whole)
{
    fx f;
    fx_open(&f);
    int64_t run = fx_run(f.s, STORE_MODE_QUALITY, "q", "m1");
    store_leg_info leg = {.kv_bits = 4, .prefill_step = 128, .concurrency = 1};
    store_leg_start(f.s, run, 0, &leg);
    store_quality q = {.run = run, .leg = 0, .kv_bits = 4, .text_name = "t", .model = "m1"};
    snprintf(q.text_sha256, sizeof q.text_sha256, "short");
    cr_expect_eq(store_quality_add(f.s, &q), -1, "a sha256 is 64 hex digits");
    memcpy(q.text_sha256, sha_a, sizeof sha_a);
    q.n_buckets = 1;
    cr_expect_eq(store_quality_add(f.s, &q), -1, "buckets counted but not given");
    /* Two buckets from the same position: the second breaks the key, and
     * the measurement is not kept in part. */
    store_quality_bucket b[2] = {{.from = 0, .to = 8, .positions = 4, .kl_mean = 0.1},
                                 {.from = 0, .to = 8, .positions = 4, .kl_mean = 0.2}};
    q.buckets = b;
    q.n_buckets = 2;
    cr_expect_eq(store_quality_add(f.s, &q), 0, "queued");
    char err[256];
    store_flush(f.s, err, sizeof err);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM quality"), 0);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM quality_buckets"), 0);
    store_run_end(f.s, run, STORE_COMPLETED, NULL);
    store_flush(f.s, err, sizeof err);
    store_run r;
    cr_assert_eq(store_run_get(f.s, run, &r, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.dropped_rows, 3, "each refused measurement is a dropped row of its run");
    store_run_free(&r);
    fx_close(&f);
}

Test(store_quality, the_latest_measurement_of_a_setting)
{
    fx f;
    fx_open(&f);
    const int kv[] = {4, 8};
    const double old_kl[] = {0.05, 0.002}, new_kl[] = {0.03};
    quality_run(f.s, kv, old_kl, 2, 1000);
    int64_t newer = quality_run(f.s, kv, new_kl, 1, 2000);
    store_quality q;
    char err[256];
    cr_assert_eq(store_quality_last(f.s, "m1", NULL, 4, &q, err, sizeof err), 0, "%s", err);
    cr_expect_eq(q.run, newer);
    cr_expect_eq(q.kl_mean, 0.03);
    cr_expect_eq(q.n_buckets, 2);
    store_quality_free(&q);
    cr_assert_eq(store_quality_last(f.s, "m1", NULL, 8, &q, err, sizeof err), 0, "%s", err);
    cr_expect_eq(q.kl_mean, 0.002);
    store_quality_free(&q);
    cr_expect_eq(store_quality_last(f.s, "m1", NULL, 16, &q, err, sizeof err), 1, "never measured");
    cr_expect_eq(store_quality_last(f.s, "m2", NULL, 4, &q, err, sizeof err), 1, "another model");
    cr_expect_eq(store_quality_last(f.s, "m1", "vllm", 4, &q, err, sizeof err), 1,
                 "another engine");
    fx_close(&f);
}

/* A fixed run with one leg per kv_bits whose one request decodes at the
 * given tok/s. */
static void speed_run(store *s, const int *kv, const double *tps, int n)
{
    int64_t run = fx_run(s, STORE_MODE_SWEEP, "speed", "m1");
    for (int i = 0; i < n; i++) {
        store_leg_info leg = {.kv_bits = kv[i], .prefill_step = 512, .concurrency = 1};
        store_leg_start(s, run, i, &leg);
        fx_request(s, run, i, i, 0, 1024, 1, 10, 5, tps[i]);
        store_leg_end(s, run, i, STORE_COMPLETED);
    }
    store_run_end(s, run, STORE_COMPLETED, NULL);
    char err[256];
    cr_assert_eq(store_flush(s, err, sizeof err), 0, "%s", err);
}

Test(store_quality, best_ranks_speed_under_a_quality_floor)
{
    fx f;
    fx_open(&f);
    /* Same context everywhere: decode speed ranks, fastest at 4 bits. */
    const int kv[] = {32, 16, 8, 4};
    const double tps[] = {10, 20, 30, 40};
    speed_run(f.s, kv, tps, 4);
    const int qkv[] = {16, 8, 4};
    const double kl[] = {0.0001, 0.004, 0.02};
    quality_run(f.s, qkv, kl, 3, 1000);

    store_best b;
    char err[256];
    cr_assert_eq(
        store_best_settings(f.s, "m1", NULL, NULL, STORE_BEST_CONTEXT, NULL, &b, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(b.n, 4, "the quality run's legs are no speed settings");
    cr_expect_eq(b.rows[0].kv_bits, 4);
    cr_expect_eq(b.rows[0].kl_mean, 0.02);
    cr_expect_eq(b.rows[3].kv_bits, 32);
    cr_expect_eq(b.rows[3].kl_mean, 0.0, "the reference itself");
    cr_expect_eq(b.rows[3].top1, 1.0);
    store_best_free(&b);

    store_quality_floor floor = {.max_kl = 0.005, .min_top1 = NAN};
    cr_assert_eq(
        store_best_settings(f.s, "m1", NULL, NULL, STORE_BEST_CONTEXT, &floor, &b, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(b.n, 3, "4 bits is over the floor");
    cr_expect_eq(b.rows[0].kv_bits, 8);
    cr_expect_eq(b.rows[0].decode_tps, 30);
    cr_expect_eq(b.rows[1].kv_bits, 16);
    cr_expect_eq(b.rows[2].kv_bits, 32);
    store_best_free(&b);

    /* top1 = 1 - 10 KL: 0.999 at 16 bits, 0.96 at 8. */
    floor = (store_quality_floor){.max_kl = NAN, .min_top1 = 0.99};
    cr_assert_eq(
        store_best_settings(f.s, "m1", NULL, NULL, STORE_BEST_AGG_TPS, &floor, &b, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(b.n, 2);
    cr_expect_eq(b.rows[0].kv_bits, 16);
    cr_expect_eq(b.rows[1].kv_bits, 32);
    json_t *j = store_best_json(&b);
    cr_expect_eq(json_real_value(json_object_get(json_array_get(j, 0), "top1")), 1.0 - 0.001);
    json_decref(j);
    store_best_free(&b);
    fx_close(&f);
}

Test(store_quality, list_filters_quality_runs)
{
    fx f;
    fx_open(&f);
    const int kv[] = {4};
    const double kl[] = {0.01};
    quality_run(f.s, kv, kl, 1, 1000);
    fx_run(f.s, STORE_MODE_FIXED, "fixed", "m1");
    store_run_filter filter = {.mode = "quality"};
    store_run_list l;
    char err[256];
    cr_assert_eq(store_runs_list(f.s, &filter, &l, err, sizeof err), 0, "%s", err);
    cr_expect_eq(l.n, 1);
    store_run_list_free(&l);
    filter.mode = "kl";
    cr_expect_eq(store_runs_list(f.s, &filter, &l, err, sizeof err), -1);
    cr_expect(strstr(err, "growth, fixed, soak, sweep, quality"), "%s", err);
    fx_close(&f);
}
