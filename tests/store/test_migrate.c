/* test_migrate.c: schema versions. A database of any older version
 * upgrades with its data intact; a newer one (or a non-database) is refused untouched. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "store/store_int.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    char *buf = malloc(*len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void make_dir(fx *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/infertop-store-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/history.db", f->dir);
    f->s = NULL;
}

/* A new database in a fresh directory at schema version `from`, holding
 * what sql inserts, then opened (so upgraded) by the store as f->s. */
static void open_upgraded(fx *f, int from, const char *sql)
{
    make_dir(f);
    sqlite3 *db;
    char err[512];
    cr_assert_eq(sqlite3_open(f->path, &db), SQLITE_OK);
    cr_assert_eq(store_migrate(db, from, err, sizeof err), 0, "%s", err);
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s", msg ? msg : "");
    sqlite3_close(db);
    cr_assert_eq(fx_int(f->path, "PRAGMA user_version"), from);
    f->s = store_open(f->path, NULL, err, sizeof err);
    cr_assert_not_null(f->s, "%s", err);
    cr_assert_eq(fx_int(f->path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
}

/* Fills a database at schema version `from` with a run of each kind, then
 * opens it with the store and checks that every row survived the upgrade. */
static void upgrade_keeps_data(int from)
{
    fx f;
    open_upgraded(
        &f, from,
        "INSERT INTO runs(id, name, mode, status, started, ended, cluster)"
        " VALUES (1, 'old', 'growth', 'completed', 100, 200, '{\"model\":\"m1\"}'),"
        " (2, 'cut short', 'fixed', 'running', 300, NULL, '{}');"
        "INSERT INTO legs VALUES (1, 0, 16, 512, 'completed', 100, 200, 2048);"
        "INSERT INTO requests(run, leg, idx, ctx_before, ctx_after, prompt_tokens, gen_tokens,"
        " ttft_ms, decode_tps, status, t) VALUES (1, 0, 0, 0, 2048, 2000, 48, 12.5, 40, 'ok', 150);"
        "INSERT INTO steps(run, seq, leg, node, phase, step_ms, model_ms, eval_ms, t)"
        " VALUES (1, 0, 0, 'n1', 'decode', 36, 7, 29, 150), (1, 1, 0, 'n1', 'decode', 38, 8, 30, "
        "151);"
        "INSERT INTO events(run, t, node, kind, detail)"
        " VALUES (1, 120, 'n1', 'config', '{\"kv_bits\":16}');"
        /* Before v5 a leg's concurrency was the run's parameter, if any:
         * a fixed run at 4, a sweep of fixed legs at 2, one of growth legs. */
        "INSERT INTO runs(id, name, mode, status, started, ended, params)"
        " VALUES (3, 'fixed', 'fixed', 'completed', 400, 410, '{\"concurrency\":4}'),"
        " (4, 'sweep', 'sweep', 'completed', 500, 510,"
        "  '{\"leg_mode\":\"fixed\",\"concurrency\":2}'),"
        " (5, 'grow', 'sweep', 'completed', 600, 610,"
        "  '{\"leg_mode\":\"growth\",\"concurrency\":2}');"
        "INSERT INTO legs VALUES (3, 0, 16, 512, 'completed', 400, 410, 80),"
        " (4, 0, 8, 256, 'completed', 500, 505, 80), (4, 1, 4, 256, 'completed', 505, 510, 80),"
        " (5, 0, 16, 512, 'completed', 600, 610, 80);"
        /* Run 3's leg: 12 + 20 tokens from 401 (402 less 1 s) to 403. */
        "INSERT INTO requests(run, leg, idx, ctx_before, ctx_after, prompt_tokens, gen_tokens,"
        " e2e_ms, status, t) VALUES (3, 0, 0, 0, 80, 68, 12, 1000, 'ok', 402),"
        " (3, 0, 1, 0, 80, 60, 20, 1500, 'failed', 403);");
    char err[512];
    store_summary sum;
    cr_assert_eq(store_run_summary(f.s, 1, &sum, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(sum.run.name, "old");
    cr_assert_str_eq(sum.run.model, "m1");
    cr_assert_eq(sum.run.dropped_rows, 0);
    cr_assert_eq(sum.legs[0].max_context, 2048);
    cr_assert_eq(sum.legs[0].ttft_ms.p50, 12.5);
    cr_assert_eq(sum.n_groups, 1);
    cr_assert_eq(sum.groups[0].step_ms.count, 2);
    cr_assert_eq(sum.groups[0].step_ms.p50, 36);
    cr_assert_eq(sum.groups[0].eval_ms.max, 30);
    store_summary_free(&sum);
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM events WHERE kind = 'config'"), 1);
    /* Requests recorded before v3 have no inter-token latencies, before
     * v4 no step times. */
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM requests WHERE run = 1"
                                " AND itl_p50_ms IS NULL AND itl_p99_ms IS NULL"
                                " AND prefill_step_ms IS NULL AND decode_step_ms IS NULL"),
                 1);
    /* v5: each leg's concurrency, and the aggregate tok/s of its requests. */
    store_summary leg;
    static const struct {
        int64_t run;
        int leg, conc;
    } conc[] = {{1, 0, 1}, {3, 0, 4}, {4, 0, 2}, {4, 1, 2}, {5, 0, 1}};
    for (size_t i = 0; i < sizeof conc / sizeof conc[0]; i++) {
        cr_assert_eq(store_run_summary(f.s, conc[i].run, &leg, err, sizeof err), 0, "%s", err);
        cr_expect_eq(leg.legs[conc[i].leg].concurrency, conc[i].conc, "run %lld leg %d",
                     (long long)conc[i].run, conc[i].leg);
        store_summary_free(&leg);
    }
    cr_assert_eq(store_run_summary(f.s, 3, &leg, err, sizeof err), 0, "%s", err);
    cr_expect_float_eq(leg.legs[0].agg_tps, 32.0 / 2, 1e-9);
    store_summary_free(&leg);
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM legs WHERE run = 3 AND agg_tps = 16"), 1,
                 "stored by the migration");
    cr_expect_eq(fx_int(f.path, "SELECT count(*) FROM legs WHERE run = 1 AND agg_tps IS NULL"), 1,
                 "run 1's request has no e2e_ms: no wall time to divide by");
    /* An older run left running has no owner to ask: it was interrupted. */
    store_run r;
    cr_assert_eq(store_run_get(f.s, 2, &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.status, "aborted");
    store_run_free(&r);
    fx_close(&f);
}

Test(store_migrate, version_1_upgrades_with_data_intact)
{
    upgrade_keeps_data(1);
}

Test(store_migrate, version_2_upgrades_with_data_intact)
{
    upgrade_keeps_data(2);
}

Test(store_migrate, version_3_upgrades_with_data_intact)
{
    upgrade_keeps_data(3);
}

Test(store_migrate, version_4_upgrades_with_data_intact)
{
    upgrade_keeps_data(4);
}

/* v6 drops steps.comm_ms: the steps of a v5 database, which carry it, are
 * all kept with every other column, and the store writes to the table. */
Test(store_migrate, version_6_drops_comm_ms_and_keeps_the_steps)
{
    fx f;
    open_upgraded(
        &f, 5,
        "INSERT INTO runs(id, name, mode, status, started, ended)"
        " VALUES (1, 'old', 'growth', 'completed', 100, 200);"
        "INSERT INTO steps(run, seq, leg, node, phase, step_ms, model_ms, eval_ms, req, step,"
        " tokens, pos, wait_ms, comm_ms, kv_bytes, kv_bits, prefill_step, rss, headroom, t)"
        " VALUES (1, 0, 0, 'n1', 'prefill', 40.5, 30.25, 10.25, 0, 0, 512, 512, 1.5, 10.25,"
        "  4096, 16, 512, 1048576, 1073741824, 150),"
        " (1, 1, 0, 'n1', 'decode', 36, 7, 29, 0, 1, 1, 513, NULL, 29,"
        "  4104, 8, 256, 2097152, -1024, 151.5);");
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM pragma_table_info('steps')"
                                " WHERE name = 'comm_ms'"),
                 0);
    char *csv = NULL, err[512];
    size_t len = 0;
    FILE *out = open_memstream(&csv, &len);
    cr_assert_not_null(out);
    cr_assert_eq(store_export(f.s, 1, STORE_EXPORT_STEPS, STORE_FORMAT_CSV, out, err, sizeof err),
                 0, "%s", err);
    fclose(out);
    cr_assert_str_eq(csv, "seq,leg,req,node,step,phase,tokens,pos,step_ms,model_ms,eval_ms,wait_ms,"
                          "kv_bytes,kv_bits,prefill_step,rss,headroom,t\r\n"
                          "0,0,0,n1,0,prefill,512,512,40.5,30.25,10.25,1.5,"
                          "4096,16,512,1048576,1073741824,150\r\n"
                          "1,0,0,n1,1,decode,1,513,36,7,29,,4104,8,256,2097152,-1024,151.5\r\n");
    free(csv);

    int64_t run = fx_run(f.s, STORE_MODE_GROWTH, "new", "m1");
    fx_step(f.s, run, 0, 0, "n1", STORE_PHASE_DECODE, 36, 7, 29, 600);
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld", (long long)run);
    cr_assert_eq(fx_int(f.path, sql), 1);
    fx_close(&f);
}

/* v7: runs say which engine they drove. Older runs are inferd's, their
 * version taken from the cluster; a run recorded now keeps its engine and
 * version, and list and best filter by engine. */
Test(store_migrate, version_7_records_the_engine)
{
    fx f;
    open_upgraded(&f, 6,
                  "INSERT INTO runs(id, name, mode, status, started, ended, cluster)"
                  " VALUES (1, 'old', 'fixed', 'completed', 100, 200,"
                  "  '{\"model\":\"m1\",\"engine\":\"inferd 0.9\"}'),"
                  " (2, 'bare', 'fixed', 'completed', 300, 400, '{}');"
                  "INSERT INTO legs VALUES (1, 0, 4, 512, 'completed', 100, 200, 80, 1, 10);");
    char err[512];
    store_run run;
    cr_assert_eq(store_run_get(f.s, 1, &run, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(run.engine, "inferd");
    cr_expect_str_eq(run.engine_version, "inferd 0.9");
    store_run_free(&run);
    cr_assert_eq(store_run_get(f.s, 2, &run, err, sizeof err), 0, "%s", err);
    cr_expect_null(run.engine_version);
    store_run_free(&run);

    store_run_info info = {.mode = STORE_MODE_FIXED,
                           .cluster = "{\"model\":\"m1\"}",
                           .engine = "llama.cpp",
                           .engine_version = "b4321"};
    int64_t id;
    cr_assert_eq(store_run_begin(f.s, &info, &id, err, sizeof err), 0, "%s", err);
    store_leg_info leg = {.kv_bits = 4, .prefill_step = 512, .concurrency = 1};
    store_leg_start(f.s, id, 0, &leg);
    store_leg_end(f.s, id, 0, STORE_COMPLETED);
    store_run_end(f.s, id, STORE_COMPLETED, NULL);
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);

    store_run_filter filter = {.engine = "llama.cpp"};
    store_run_list l;
    cr_assert_eq(store_runs_list(f.s, &filter, &l, err, sizeof err), 0, "%s", err);
    cr_assert_eq(l.n, 1);
    cr_expect_eq(l.runs[0].id, id);
    cr_expect_str_eq(l.runs[0].engine_version, "b4321");
    json_t *j = store_run_list_json(&l);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(j, 0), "engine")),
                     "llama.cpp");
    json_decref(j);
    store_run_list_free(&l);

    /* The same kv_bits on two engines are two settings. */
    store_best b;
    cr_assert_eq(
        store_best_settings(f.s, "m1", NULL, NULL, STORE_BEST_CONTEXT, NULL, &b, err, sizeof err),
        0, "%s", err);
    cr_assert_eq(b.n, 2);
    cr_expect_neq(strcmp(b.rows[0].engine, b.rows[1].engine), 0);
    store_best_free(&b);
    cr_assert_eq(store_best_settings(f.s, "m1", NULL, "inferd", STORE_BEST_CONTEXT, NULL, &b, err,
                                     sizeof err),
                 0, "%s", err);
    cr_assert_eq(b.n, 1);
    cr_expect_str_eq(b.rows[0].engine, "inferd");
    store_best_free(&b);
    fx_close(&f);
}

Test(store_migrate, newer_database_is_refused_untouched)
{
    fx f;
    fx_open(&f);
    store_close(f.s);
    f.s = NULL;
    fx_sql(f.path, "PRAGMA journal_mode=DELETE; PRAGMA user_version=99");
    size_t len0, len1;
    char *before = slurp(f.path, &len0);
    char err[512] = "";
    cr_assert_null(store_open(f.path, NULL, err, sizeof err));
    cr_assert(strstr(err, "schema version 99") && strstr(err, "newer"), "%s", err);
    char *after = slurp(f.path, &len1);
    cr_assert_eq(len0, len1);
    cr_assert_eq(memcmp(before, after, len0), 0, "the database was modified");
    cr_assert_eq(fx_int(f.path, "PRAGMA user_version"), 99);
    free(before);
    free(after);
    fx_close(&f);
}

Test(store_migrate, bad_paths_are_named)
{
    fx f;
    make_dir(&f);
    FILE *junk = fopen(f.path, "w");
    cr_assert_not_null(junk);
    fputs("this is not a database, it is a text file long enough to have a header.....", junk);
    fclose(junk);
    char err[512] = "";
    cr_assert_null(store_open(f.path, NULL, err, sizeof err));
    cr_assert(strstr(err, f.path) && strstr(err, "not a database"), "%s", err);

    char missing[256];
    snprintf(missing, sizeof missing, "%s/no/such/dir/h.db", f.dir);
    cr_assert_null(store_open(missing, NULL, err, sizeof err));
    cr_assert(strstr(err, "no/such/dir"), "%s", err);
    cr_assert_null(store_open(f.dir, NULL, err, sizeof err));
    cr_assert(strstr(err, "is a directory"), "%s", err);
    fx_close(&f);
}

Test(store_migrate, default_path)
{
    char buf[256], err[256];
    setenv("XDG_DATA_HOME", "/xdg/data", 1);
    cr_assert_eq(store_default_path(buf, sizeof buf, err, sizeof err), 0);
    cr_assert_str_eq(buf, "/xdg/data/infertop/history.db");
    unsetenv("XDG_DATA_HOME");
    setenv("HOME", "/home/op", 1);
    cr_assert_eq(store_default_path(buf, sizeof buf, err, sizeof err), 0);
    cr_assert_str_eq(buf, "/home/op/.local/share/infertop/history.db");
}
