/* stepstats.c: the step part of a run summary, per (leg, node, phase):
 * count and percentiles of step_ms, model_ms and eval_ms.
 *
 * Computing it reads every step of the run (about half a second per
 * million rows), so the result is stored in step_stats together with the
 * seq of the last step it covers (runs.stats_seq). Steps are append-only
 * per run, so the stored rows are exact as long as that seq is still the
 * run's last; otherwise they are computed again. The writer stores them
 * when a run ends; a summary stores them for runs that are not running. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

enum { M_STEP, M_MODEL, M_EVAL, N_METRICS };
static const char *const metric_names[N_METRICS] = {"step_ms", "model_ms", "eval_ms"};

typedef struct group_acc {
    store_step_group g;
    store_dvec v[N_METRICS];
} group_acc;

static store_dist *group_metric(store_step_group *g, int m)
{
    return m == M_STEP ? &g->step_ms : m == M_MODEL ? &g->model_ms : &g->eval_ms;
}

static int phase_rank(const char *p)
{
    return strcmp(p, "prefill") == 0 ? 0 : strcmp(p, "decode") == 0 ? 1 : 2;
}

/* The order of a summary's groups: by leg, node, then phase in the order
 * a request runs them. */
static int group_cmp(const store_step_group *a, const store_step_group *b)
{
    if (a->leg != b->leg)
        return a->leg < b->leg ? -1 : 1;
    int c = strcmp(a->node, b->node);
    if (c)
        return c;
    c = phase_rank(a->phase) - phase_rank(b->phase);
    return c ? c : strcmp(a->phase, b->phase);
}

static int group_qsort_cmp(const void *a, const void *b)
{
    return group_cmp(a, b);
}

static int same_group(const store_step_group *g, int leg, const char *node, const char *phase)
{
    return g->leg == leg && strcmp(g->node, node) == 0 && strcmp(g->phase, phase) == 0;
}

/* The group (leg, node, phase) of gs, added when new; NULL when out of memory. */
static group_acc *group_of(group_acc **gs, size_t *n, int leg, const char *node, const char *phase)
{
    for (size_t i = 0; i < *n; i++)
        if (same_group(&(*gs)[i].g, leg, node, phase))
            return &(*gs)[i];
    group_acc *grown = realloc(*gs, (*n + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    *gs = grown;
    group_acc *g = &grown[(*n)++];
    memset(g, 0, sizeof *g);
    g->g.leg = leg;
    snprintf(g->g.node, sizeof g->g.node, "%s", node);
    snprintf(g->g.phase, sizeof g->g.phase, "%s", phase);
    return g;
}

static void groups_free(group_acc *gs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int m = 0; m < N_METRICS; m++)
            free(gs[i].v[m].v);
    free(gs);
}

/* Moves the groups' results into a plain sorted array. */
static int groups_finish(group_acc *gs, size_t n, store_step_group **out, size_t *nout, char *err,
                         size_t errlen)
{
    *out = NULL;
    *nout = 0;
    if (n > 0 && !(*out = malloc(n * sizeof **out))) {
        store_errf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        (*out)[i] = gs[i].g;
    if (n > 1)
        qsort(*out, n, sizeof **out, group_qsort_cmp);
    *nout = n;
    return 0;
}

/* One pass over the run's steps, a range of the (run, seq) key. Rows
 * alternate between a few groups, so the last group used is tried first. */
static int compute(sqlite3 *db, int64_t run, group_acc **gs, size_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(db,
                      "SELECT leg, node, phase, step_ms, model_ms, eval_ms FROM steps"
                      " WHERE run = ?",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    group_acc *last = NULL;
    int rc, oom = 0;
    while (!oom && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int leg = sqlite3_column_int(st, 0);
        const char *node = (const char *)sqlite3_column_text(st, 1);
        const char *phase = (const char *)sqlite3_column_text(st, 2);
        if (!node || !phase)
            continue;
        if (!last || !same_group(&last->g, leg, node, phase))
            last = group_of(gs, n, leg, node, phase);
        if (!last) {
            oom = 1;
            break;
        }
        for (int m = 0; m < N_METRICS; m++)
            if (sqlite3_column_type(st, 3 + m) != SQLITE_NULL)
                oom |= store_dvec_push(&last->v[m], sqlite3_column_double(st, 3 + m)) != 0;
    }
    sqlite3_finalize(st);
    if (oom || rc != SQLITE_DONE) {
        store_dberr(err, errlen, oom ? NULL : db, "reading steps");
        return -1;
    }
    for (size_t i = 0; i < *n; i++)
        for (int m = 0; m < N_METRICS; m++)
            store_dist_of(&(*gs)[i].v[m], group_metric(&(*gs)[i].g, m));
    return 0;
}

static int load(sqlite3 *db, int64_t run, group_acc **gs, size_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(db,
                      "SELECT leg, node, phase, metric, count, p50, p90, p99, max"
                      " FROM step_stats WHERE run = ?",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        group_acc *g =
            group_of(gs, n, sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1),
                     (const char *)sqlite3_column_text(st, 2));
        if (!g) {
            rc = SQLITE_NOMEM;
            break;
        }
        const char *metric = (const char *)sqlite3_column_text(st, 3);
        for (int m = 0; m < N_METRICS; m++) {
            if (strcmp(metric, metric_names[m]) != 0)
                continue;
            store_dist *d = group_metric(&g->g, m);
            d->count = sqlite3_column_int64(st, 4);
            d->p50 = sqlite3_column_double(st, 5);
            d->p90 = sqlite3_column_double(st, 6);
            d->p99 = sqlite3_column_double(st, 7);
            d->max = sqlite3_column_double(st, 8);
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_dberr(err, errlen, rc == SQLITE_NOMEM ? NULL : db, "reading step_stats");
        return -1;
    }
    return 0;
}

/* Replaces the run's stored aggregates, all or nothing. A savepoint works
 * both inside the writer's batch transaction and on its own. */
static int save(sqlite3 *db, int64_t run, int64_t seq, const group_acc *gs, size_t n)
{
    if (store_exec(db, "SAVEPOINT step_stats", NULL, 0) != 0)
        return -1;
    sqlite3_stmt *del = NULL, *ins = NULL, *mark = NULL;
    int ok = store_prepare(db, "DELETE FROM step_stats WHERE run = ?", &del, NULL, 0) == 0 &&
             store_prepare(db,
                           "INSERT INTO step_stats(run, leg, node, phase, metric, count, p50,"
                           " p90, p99, max) VALUES (?,?,?,?,?,?,?,?,?,?)",
                           &ins, NULL, 0) == 0 &&
             store_prepare(db, "UPDATE runs SET stats_seq = ? WHERE id = ?", &mark, NULL, 0) == 0;
    if (ok) {
        sqlite3_bind_int64(del, 1, run);
        ok = sqlite3_step(del) == SQLITE_DONE;
    }
    for (size_t i = 0; ok && i < n; i++) {
        for (int m = 0; ok && m < N_METRICS; m++) {
            const store_dist *d = group_metric((store_step_group *)&gs[i].g, m);
            sqlite3_bind_int64(ins, 1, run);
            sqlite3_bind_int(ins, 2, gs[i].g.leg);
            sqlite3_bind_text(ins, 3, gs[i].g.node, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 4, gs[i].g.phase, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 5, metric_names[m], -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 6, d->count);
            sqlite3_bind_double(ins, 7, d->p50);
            sqlite3_bind_double(ins, 8, d->p90);
            sqlite3_bind_double(ins, 9, d->p99);
            sqlite3_bind_double(ins, 10, d->max);
            ok = sqlite3_step(ins) == SQLITE_DONE;
            sqlite3_reset(ins);
        }
    }
    if (ok) {
        sqlite3_bind_int64(mark, 1, seq);
        sqlite3_bind_int64(mark, 2, run);
        ok = sqlite3_step(mark) == SQLITE_DONE;
    }
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    sqlite3_finalize(mark);
    if (!ok)
        store_exec(db, "ROLLBACK TO step_stats", NULL, 0);
    store_exec(db, "RELEASE step_stats", NULL, 0);
    return ok ? 0 : -1;
}

/* The run's last step seq (-1: none), the seq its stored aggregates cover
 * (-2: none) and whether it is still running. */
static int freshness(sqlite3 *db, int64_t run, int64_t *last, int64_t *stored, int *running,
                     char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(db,
                      "SELECT coalesce((SELECT seq FROM steps WHERE run = ?1"
                      " ORDER BY seq DESC LIMIT 1), -1), coalesce(stats_seq, -2),"
                      " status = 'running' FROM runs WHERE id = ?1",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *last = sqlite3_column_int64(st, 0);
        *stored = sqlite3_column_int64(st, 1);
        *running = sqlite3_column_int(st, 2);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        store_dberr(err, errlen, db, "reading a run's step count");
        return -1;
    }
    return 0;
}

int store_step_stats(sqlite3 *db, int64_t run, store_step_group **groups, size_t *n, char *err,
                     size_t errlen)
{
    int64_t last, stored;
    int running;
    *groups = NULL;
    *n = 0;
    if (freshness(db, run, &last, &stored, &running, err, errlen) != 0)
        return -1;
    group_acc *gs = NULL;
    size_t ng = 0;
    int rc;
    if (stored == last) {
        rc = load(db, run, &gs, &ng, err, errlen);
    } else {
        rc = compute(db, run, &gs, &ng, err, errlen);
        /* A failed save only costs the next summary a recomputation. */
        if (rc == 0 && !running)
            save(db, run, last, gs, ng);
    }
    if (rc == 0)
        rc = groups_finish(gs, ng, groups, n, err, errlen);
    groups_free(gs, ng);
    return rc;
}
