/* fixture.c: see fixture.h. */
#include "fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fx_open(fx *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/infertop-store-XXXXXX");
    cr_assert_not_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/history.db", f->dir);
    char err[512] = "";
    f->s = store_open(f->path, NULL, err, sizeof err);
    cr_assert_not_null(f->s, "store_open: %s", err);
}

void fx_close(fx *f)
{
    store_close(f->s);
    f->s = NULL;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    cr_assert_eq(system(cmd), 0);
}

int64_t fx_run(store *s, store_mode mode, const char *name, const char *model)
{
    char cluster[128];
    snprintf(cluster, sizeof cluster, "{\"name\":\"lab\",\"model\":\"%s\",\"engine\":\"0.1.0\"}",
             model);
    store_run_info info = {.name = name,
                           .notes = "notes mention kv tuning",
                           .mode = mode,
                           .params = "{\"target\":8192}",
                           .cluster = cluster};
    int64_t id = 0;
    char err[256];
    cr_assert_eq(store_run_begin(s, &info, &id, err, sizeof err), 0, "%s", err);
    return id;
}

void fx_step(store *s, int64_t run, int leg, int64_t req, const char *node, store_phase phase,
             double step_ms, double model_ms, double eval_ms, int64_t pos)
{
    store_step st = {.run = run,
                     .leg = leg,
                     .req = req,
                     .node = node,
                     .step = pos,
                     .phase = phase,
                     .tokens = 1,
                     .pos = pos + 1,
                     .step_ms = step_ms,
                     .model_ms = model_ms,
                     .eval_ms = eval_ms,
                     .wait_ms = -1,
                     .kv_bytes = pos * 1024,
                     .kv_bits = 16,
                     .prefill_step = 512,
                     .rss = 1 << 20,
                     .headroom = 1 << 30,
                     .t = 1.7e9 + pos};
    cr_assert_eq(store_step_add(s, &st), 0);
}

void fx_request(store *s, int64_t run, int leg, int64_t idx, int64_t ctx_before, int64_t ctx_after,
                int ok, double ttft, double tpot, double decode_tps)
{
    store_request r = {.run = run,
                       .leg = leg,
                       .idx = idx,
                       .session = "s1",
                       .ctx_before = ctx_before,
                       .ctx_after = ctx_after,
                       .prompt_tokens = ctx_after - ctx_before - 16,
                       .gen_tokens = 16,
                       .ttft_ms = ttft,
                       .prefill_ms = ttft - 1,
                       .prefill_tps = 1000 + idx,
                       .decode_tps = decode_tps,
                       .tpot_ms = tpot,
                       .itl_p50_ms = tpot > 0 ? tpot - 1 : -1,
                       .itl_p99_ms = tpot > 0 ? 2 * tpot : -1,
                       .prefill_step_ms = ok ? (double)ctx_after / 128 : -1,
                       .decode_step_ms = tpot > 0 ? tpot / 2 : -1,
                       .e2e_ms = ttft + 16 * tpot,
                       .ok = ok,
                       .error_code = ok ? NULL : "timeout",
                       .error_message = ok ? NULL : "node2 did not answer in 30 s",
                       .t = 1.7e9 + idx};
    cr_assert_eq(store_request_add(s, &r), 0);
}

void fx_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_close(db);
}

long long fx_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
                 sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: no row", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

double fx_value(unsigned seed, unsigned i, double lo, double span)
{
    unsigned x = seed * 2654435761u ^ (i + 1) * 2246822519u;
    x ^= x >> 15;
    x *= 2654435761u;
    x ^= x >> 13;
    return lo + (double)(x % 100000) / 100000.0 * span;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fx_pct(const double *v, size_t n, int pct)
{
    double *c = malloc(n * sizeof *c);
    cr_assert_not_null(c);
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    /* nearest rank: the ceil(pct/100 * n)-th smallest, in exact integers */
    size_t rank = ((size_t)pct * n + 99) / 100;
    double r = c[rank - 1];
    free(c);
    return r;
}

double fx_max(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}
