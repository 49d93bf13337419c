/* query.c: the history queries (list, one run, summary, compare, best
 * settings, prune) on the query connection, as plain structs. The step
 * part of a summary comes from stepstats.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* ---- runs ---- */

#define RUN_COLUMNS                                                                                \
    "SELECT r.id, r.name, r.notes, r.mode, r.status,"                                              \
    " coalesce(json_extract(r.cluster, '$.model'), ''), r.params, r.cluster, r.failure,"           \
    " r.started, coalesce(r.ended, 0),"                                                            \
    " coalesce((SELECT max(ctx_after) FROM requests q WHERE q.run = r.id"                          \
    "  AND q.status = 'ok'), -1),"                                                                 \
    " coalesce(r.last_context, -1), r.dropped_rows,"                                               \
    " (SELECT count(*) FROM legs l WHERE l.run = r.id),"                                           \
    " (SELECT count(*) FROM requests q WHERE q.run = r.id),"                                       \
    " (SELECT count(*) FROM requests q WHERE q.run = r.id AND q.status <> 'ok'),"                  \
    " r.engine, r.engine_version"                                                                  \
    " FROM runs r "

void store_run_free(store_run *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->notes);
    free(r->mode);
    free(r->status);
    free(r->model);
    free(r->params);
    free(r->cluster);
    free(r->failure);
    free(r->engine);
    free(r->engine_version);
    memset(r, 0, sizeof *r);
}

static int run_from_row(sqlite3_stmt *st, store_run *r)
{
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(st, 0);
    char **text[] = {&r->name, &r->notes, &r->mode, &r->status, &r->model, &r->params, &r->cluster};
    int oom = 0;
    for (int i = 0; i < 7; i++)
        oom |= !(*text[i] = store_col_strdup(st, 1 + i));
    if (sqlite3_column_type(st, 8) != SQLITE_NULL)
        oom |= !(r->failure = store_col_strdup(st, 8));
    r->started = sqlite3_column_double(st, 9);
    r->ended = sqlite3_column_double(st, 10);
    r->max_context = sqlite3_column_int64(st, 11);
    r->last_context = sqlite3_column_int64(st, 12);
    r->dropped_rows = sqlite3_column_int64(st, 13);
    r->n_legs = sqlite3_column_int64(st, 14);
    r->n_requests = sqlite3_column_int64(st, 15);
    r->n_failed = sqlite3_column_int64(st, 16);
    oom |= !(r->engine = store_col_strdup(st, 17));
    if (sqlite3_column_type(st, 18) != SQLITE_NULL)
        oom |= !(r->engine_version = store_col_strdup(st, 18));
    if (oom) {
        store_run_free(r);
        return -1;
    }
    return 0;
}

int store_run_exists(store *s, int64_t run, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db, "SELECT 1 FROM runs WHERE id = ?", &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc == SQLITE_DONE) {
        store_errf(err, errlen, "no run with id %lld in %s", (long long)run, s->path);
        return 1;
    }
    store_dberr(err, errlen, s->db, "looking up a run");
    return -1;
}

static int run_get_locked(store *s, int64_t id, store_run *out, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db, RUN_COLUMNS "WHERE r.id = ?", &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st), ret;
    if (rc == SQLITE_ROW) {
        ret = run_from_row(st, out);
        if (ret != 0)
            store_errf(err, errlen, "out of memory");
    } else if (rc == SQLITE_DONE) {
        store_errf(err, errlen, "no run with id %lld in %s", (long long)id, s->path);
        ret = 1;
    } else {
        store_dberr(err, errlen, s->db, "reading a run");
        ret = -1;
    }
    sqlite3_finalize(st);
    return ret;
}

int store_run_get(store *s, int64_t id, store_run *out, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->db_lock);
    int rc = run_get_locked(s, id, out, err, errlen);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

void store_run_list_free(store_run_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        store_run_free(&l->runs[i]);
    free(l->runs);
    l->runs = NULL;
    l->n = 0;
}

/* name_of(i) for i in [0, n) are the words v may be. */
static int check_name(const char *v, const char *what, const char *(*name_of)(int), int n,
                      char *err, size_t errlen)
{
    if (!v)
        return 0;
    char all[128] = "";
    for (int i = 0; i < n; i++) {
        if (strcmp(v, name_of(i)) == 0)
            return 0;
        size_t len = strlen(all);
        snprintf(all + len, sizeof all - len, "%s%s", i ? ", " : "", name_of(i));
    }
    store_errf(err, errlen, "%s \"%s\" is not one of %s", what, v, all);
    return -1;
}

static const char *mode_at(int i)
{
    return store_mode_name((store_mode)i);
}

static const char *status_at(int i)
{
    return store_status_name((store_status)i);
}

int store_runs_list(store *s, const store_run_filter *f, store_run_list *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_name(f->mode, "mode", mode_at, STORE_MODE_COUNT, err, errlen) != 0 ||
        check_name(f->status, "status", status_at, STORE_ABORTED + 1, err, errlen) != 0)
        return -1;
    if (f->limit < 0 || f->offset < 0) {
        store_errf(err, errlen, "limit and offset must not be negative");
        return -1;
    }
    pthread_mutex_lock(&s->db_lock);
    sqlite3_stmt *st;
    int ret = -1;
    if (store_prepare(s->db,
                      RUN_COLUMNS
                      "WHERE (?1 IS NULL OR r.mode = ?1) AND (?2 IS NULL OR r.status = ?2)"
                      " AND (?3 IS NULL OR json_extract(r.cluster, '$.model') = ?3)"
                      " AND (?4 IS NULL OR instr(lower(r.name || ' ' || r.notes), lower(?4)))"
                      " AND (?5 IS NULL OR r.started >= ?5) AND (?6 IS NULL OR r.started < ?6)"
                      " AND (?9 IS NULL OR r.engine = ?9)"
                      " ORDER BY r.started DESC, r.id DESC LIMIT ?7 OFFSET ?8",
                      &st, err, errlen) != 0)
        goto out;
    const char *texts[] = {f->mode, f->status, f->model, f->text};
    for (int i = 0; i < 4; i++)
        if (texts[i])
            sqlite3_bind_text(st, i + 1, texts[i], -1, SQLITE_STATIC);
    if (f->since > 0)
        sqlite3_bind_double(st, 5, f->since);
    if (f->until > 0)
        sqlite3_bind_double(st, 6, f->until);
    sqlite3_bind_int(st, 7, f->limit ? f->limit : 50);
    sqlite3_bind_int(st, 8, f->offset);
    if (f->engine)
        sqlite3_bind_text(st, 9, f->engine, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            store_run *grown = realloc(out->runs, ncap * sizeof *grown);
            if (!grown)
                break;
            out->runs = grown;
            cap = ncap;
        }
        if (run_from_row(st, &out->runs[out->n]) != 0)
            break;
        out->n++;
    }
    if (rc == SQLITE_DONE)
        ret = 0;
    else if (rc == SQLITE_ROW)
        store_errf(err, errlen, "out of memory listing runs");
    else
        store_dberr(err, errlen, s->db, "listing runs");
    sqlite3_finalize(st);
out:
    pthread_mutex_unlock(&s->db_lock);
    if (ret != 0)
        store_run_list_free(out);
    return ret;
}

/* ---- summary ---- */

enum { M_TTFT, M_TPOT, M_DECODE, M_PREFILL, M_E2E, N_REQ_METRICS };

void store_summary_free(store_summary *sum)
{
    if (!sum)
        return;
    store_run_free(&sum->run);
    free(sum->legs);
    free(sum->groups);
    free(sum->failure.code);
    free(sum->failure.message);
    memset(sum, 0, sizeof *sum);
}

static int summary_legs(store *s, int64_t run, store_summary *out, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    /* A leg still running has no stored agg_tps yet: it is computed as
     * far as the leg got. */
    if (store_prepare(s->db,
                      "SELECT idx, kv_bits, prefill_step, status,"
                      " (SELECT count(*) FROM requests q WHERE q.run = legs.run"
                      "  AND q.leg = legs.idx),"
                      " (SELECT count(*) FROM requests q WHERE q.run = legs.run"
                      "  AND q.leg = legs.idx AND q.status <> 'ok'),"
                      " coalesce(" LEG_OK_CONTEXT ", -1),"
                      " coalesce(concurrency, 1), coalesce(agg_tps, " LEG_AGG_TPS ")"
                      " FROM legs WHERE run = ? ORDER BY idx",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_leg_summary *grown = realloc(out->legs, (out->n_legs + 1) * sizeof *grown);
        if (!grown)
            break;
        out->legs = grown;
        store_leg_summary *l = &out->legs[out->n_legs++];
        memset(l, 0, sizeof *l);
        l->idx = sqlite3_column_int(st, 0);
        l->kv_bits = sqlite3_column_int(st, 1);
        l->prefill_step = sqlite3_column_int(st, 2);
        snprintf(l->status, sizeof l->status, "%s", sqlite3_column_text(st, 3));
        l->requests = sqlite3_column_int64(st, 4);
        l->failed = sqlite3_column_int64(st, 5);
        l->max_context = sqlite3_column_int64(st, 6);
        l->concurrency = sqlite3_column_int(st, 7);
        l->agg_tps = sqlite3_column_type(st, 8) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 8);
        l->ttft_p95_ms = NAN; /* summary_requests' */
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_dberr(err, errlen, rc == SQLITE_ROW ? NULL : s->db, "reading legs");
        return -1;
    }
    return 0;
}

static store_leg_summary *find_leg(store_summary *out, int idx)
{
    for (size_t i = 0; i < out->n_legs; i++)
        if (out->legs[i].idx == idx)
            return &out->legs[i];
    return NULL;
}

/* Request figures per leg, over the requests that succeeded. */
static int summary_requests(store *s, int64_t run, store_summary *out, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db,
                      "SELECT leg, ttft_ms, tpot_ms, decode_tps, prefill_tps, e2e_ms"
                      " FROM requests WHERE run = ? AND status = 'ok' ORDER BY leg",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    store_dvec v[N_REQ_METRICS] = {0};
    store_leg_summary *leg = NULL;
    int rc, oom = 0;
    for (;;) {
        rc = sqlite3_step(st);
        int idx = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
        if (leg && (rc != SQLITE_ROW || idx != leg->idx)) {
            store_dist *d[N_REQ_METRICS] = {&leg->ttft_ms, &leg->tpot_ms, &leg->decode_tps,
                                            &leg->prefill_tps, &leg->e2e_ms};
            if (v[M_TTFT].n)
                leg->ttft_p95_ms = store_percentile(v[M_TTFT].v, v[M_TTFT].n, 95);
            for (int m = 0; m < N_REQ_METRICS; m++) {
                store_dist_of(&v[m], d[m]);
                v[m].n = 0;
            }
            leg = NULL;
        }
        if (rc != SQLITE_ROW)
            break;
        if (!leg && !(leg = find_leg(out, idx)))
            continue;
        for (int m = 0; m < N_REQ_METRICS; m++)
            if (sqlite3_column_type(st, 1 + m) != SQLITE_NULL)
                oom |= store_dvec_push(&v[m], sqlite3_column_double(st, 1 + m)) != 0;
    }
    sqlite3_finalize(st);
    for (int m = 0; m < N_REQ_METRICS; m++)
        free(v[m].v);
    if (rc != SQLITE_DONE || oom) {
        store_dberr(err, errlen, oom ? NULL : s->db, "reading requests");
        return -1;
    }
    return 0;
}

static int summary_steps(store *s, int64_t run, store_summary *out, char *err, size_t errlen)
{
    return store_step_stats(s->db, run, &out->groups, &out->n_groups, err, errlen);
}

static int summary_failure(store *s, int64_t run, store_summary *out, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db,
                      "SELECT leg, idx, ctx_before, error_code, error_message FROM requests"
                      " WHERE run = ? AND status <> 'ok' ORDER BY idx LIMIT 1",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    int rc = sqlite3_step(st), ret = 0;
    if (rc == SQLITE_ROW) {
        store_failure *f = &out->failure;
        f->found = 1;
        f->leg = sqlite3_column_int(st, 0);
        f->request = sqlite3_column_int64(st, 1);
        f->ctx_before = sqlite3_column_int64(st, 2);
        f->code = store_col_strdup(st, 3);
        f->message = store_col_strdup(st, 4);
        if (!f->code || !f->message) {
            store_errf(err, errlen, "out of memory");
            ret = -1;
        }
    } else if (rc != SQLITE_DONE) {
        store_dberr(err, errlen, s->db, "reading the failure");
        ret = -1;
    }
    sqlite3_finalize(st);
    return ret;
}

int store_summary_locked(store *s, int64_t run, store_summary *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = run_get_locked(s, run, &out->run, err, errlen);
    if (rc != 0)
        return rc;
    /* No read transaction around the parts: the step part may store its
     * aggregates, and a run still being written moves on anyway. */
    rc = summary_legs(s, run, out, err, errlen);
    if (rc == 0)
        rc = summary_requests(s, run, out, err, errlen);
    if (rc == 0)
        rc = summary_steps(s, run, out, err, errlen);
    if (rc == 0)
        rc = summary_failure(s, run, out, err, errlen);
    if (rc != 0)
        store_summary_free(out);
    return rc;
}

int store_run_summary(store *s, int64_t run, store_summary *out, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->db_lock);
    int rc = store_summary_locked(s, run, out, err, errlen);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

/* ---- compare ---- */

typedef struct delta_list {
    store_delta *rows;
    size_t n, cap;
    int oom;
} delta_list;

static void delta_add(delta_list *l, const char *key, const char *metric, int has_a, double a,
                      int has_b, double b)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? 2 * l->cap : 64;
        store_delta *grown = realloc(l->rows, ncap * sizeof *grown);
        if (!grown) {
            l->oom = 1;
            return;
        }
        l->rows = grown;
        l->cap = ncap;
    }
    store_delta *d = &l->rows[l->n];
    d->key = strdup(key);
    d->metric = strdup(metric);
    if (!d->key || !d->metric) {
        free(d->key);
        free(d->metric);
        l->oom = 1;
        return;
    }
    l->n++;
    d->has_a = has_a;
    d->has_b = has_b;
    d->a = has_a ? a : NAN;
    d->b = has_b ? b : NAN;
    d->delta = has_a && has_b ? b - a : NAN;
    d->ratio = has_a && has_b && a != 0 ? b / a : NAN;
}

/* pN rows of a distribution; a side without values is missing. */
static void delta_dist(delta_list *l, const char *key, const char *name, const store_dist *a,
                       const store_dist *b, int with_max)
{
    char metric[64];
    const char *labels[] = {"p50", "p90", "p99", "max"};
    double va[] = {a ? a->p50 : 0, a ? a->p90 : 0, a ? a->p99 : 0, a ? a->max : 0};
    double vb[] = {b ? b->p50 : 0, b ? b->p90 : 0, b ? b->p99 : 0, b ? b->max : 0};
    int ha = a && a->count > 0, hb = b && b->count > 0;
    for (int i = 0; i < (with_max ? 4 : 3); i++) {
        snprintf(metric, sizeof metric, "%s %s", name, labels[i]);
        delta_add(l, key, metric, ha, va[i], hb, vb[i]);
    }
}

/* A pair's settings as the key of its rows. */
static void pair_key(const store_compare *c, const store_leg_pair *p, char *buf, size_t len)
{
    const store_leg_summary *l = p->a >= 0 ? &c->a.legs[p->a] : &c->b.legs[p->b];
    snprintf(buf, len, "kv %d prefill %d conc %d", l->kv_bits, l->prefill_step, l->concurrency);
}

static void delta_legs(delta_list *l, const char *key, const store_leg_summary *a,
                       const store_leg_summary *b)
{
    delta_add(l, key, "max_context", a && a->max_context >= 0, a ? a->max_context : 0,
              b && b->max_context >= 0, b ? b->max_context : 0);
    delta_add(l, key, "concurrency", a != NULL, a ? a->concurrency : 0, b != NULL,
              b ? b->concurrency : 0);
    delta_add(l, key, "agg_tps", a && !isnan(a->agg_tps), a ? a->agg_tps : 0,
              b && !isnan(b->agg_tps), b ? b->agg_tps : 0);
    delta_add(l, key, "requests", a != NULL, a ? a->requests : 0, b != NULL, b ? b->requests : 0);
    delta_add(l, key, "failed", a != NULL, a ? a->failed : 0, b != NULL, b ? b->failed : 0);
    delta_dist(l, key, "ttft_ms", a ? &a->ttft_ms : NULL, b ? &b->ttft_ms : NULL, 0);
    delta_add(l, key, "ttft_ms p95", a && !isnan(a->ttft_p95_ms), a ? a->ttft_p95_ms : 0,
              b && !isnan(b->ttft_p95_ms), b ? b->ttft_p95_ms : 0);
    delta_dist(l, key, "tpot_ms", a ? &a->tpot_ms : NULL, b ? &b->tpot_ms : NULL, 0);
    delta_dist(l, key, "decode_tps", a ? &a->decode_tps : NULL, b ? &b->decode_tps : NULL, 0);
    delta_dist(l, key, "prefill_tps", a ? &a->prefill_tps : NULL, b ? &b->prefill_tps : NULL, 0);
    delta_dist(l, key, "e2e_ms", a ? &a->e2e_ms : NULL, b ? &b->e2e_ms : NULL, 0);
}

static void delta_groups(delta_list *l, const char *pair, const store_step_group *a,
                         const store_step_group *b)
{
    const store_step_group *g = a ? a : b;
    char key[STORE_NODE_MAX + 64];
    snprintf(key, sizeof key, "%s %s %s", pair, g->node, g->phase);
    delta_add(l, key, "steps", a != NULL, a ? a->step_ms.count : 0, b != NULL,
              b ? b->step_ms.count : 0);
    delta_dist(l, key, "step_ms", a ? &a->step_ms : NULL, b ? &b->step_ms : NULL, 1);
    delta_dist(l, key, "model_ms", a ? &a->model_ms : NULL, b ? &b->model_ms : NULL, 0);
    delta_dist(l, key, "eval_ms", a ? &a->eval_ms : NULL, b ? &b->eval_ms : NULL, 0);
}

/* The step group of s for leg idx with g's node and phase. */
static const store_step_group *group_in(const store_summary *s, int leg, const store_step_group *g)
{
    for (size_t i = 0; i < s->n_groups; i++) {
        const store_step_group *h = &s->groups[i];
        if (h->leg == leg && strcmp(h->node, g->node) == 0 && strcmp(h->phase, g->phase) == 0)
            return h;
    }
    return NULL;
}

/* The step rows of a pair: A's groups of its leg with B's of the same
 * node and phase, then B's left over. */
static void delta_pair_groups(delta_list *l, const char *key, const store_summary *sa, int la,
                              const store_summary *sb, int lb)
{
    for (size_t i = 0; la >= 0 && i < sa->n_groups; i++)
        if (sa->groups[i].leg == la)
            delta_groups(l, key, &sa->groups[i], lb >= 0 ? group_in(sb, lb, &sa->groups[i]) : NULL);
    for (size_t i = 0; lb >= 0 && i < sb->n_groups; i++)
        if (sb->groups[i].leg == lb && (la < 0 || !group_in(sa, la, &sb->groups[i])))
            delta_groups(l, key, NULL, &sb->groups[i]);
}

static int same_settings(const store_leg_summary *a, const store_leg_summary *b, int knobs)
{
    return a->concurrency == b->concurrency &&
           (!knobs || (a->kv_bits == b->kv_bits && a->prefill_step == b->prefill_step));
}

/* Pairs each leg of A with the first unpaired leg of B of the same
 * settings; B's legs left over follow. */
static int pair_legs(store_compare *c)
{
    const store_summary *sa = &c->a, *sb = &c->b;
    int same_engine = strcmp(sa->run.engine, sb->run.engine) == 0;
    size_t cap = sa->n_legs + sb->n_legs;
    char *taken = calloc(sb->n_legs + 1, 1);
    c->pairs = calloc(cap + 1, sizeof *c->pairs);
    if (!taken || !c->pairs) {
        free(taken);
        return -1;
    }
    for (size_t i = 0; i < sa->n_legs; i++) {
        store_leg_pair *p = &c->pairs[c->n_pairs++];
        *p = (store_leg_pair){(int)i, -1};
        for (size_t j = 0; j < sb->n_legs && p->b < 0; j++)
            if (!taken[j] && same_settings(&sa->legs[i], &sb->legs[j], same_engine)) {
                taken[j] = 1;
                p->b = (int)j;
            }
    }
    for (size_t j = 0; j < sb->n_legs; j++)
        if (!taken[j])
            c->pairs[c->n_pairs++] = (store_leg_pair){-1, (int)j};
    free(taken);
    return 0;
}

void store_compare_free(store_compare *c)
{
    if (!c)
        return;
    store_summary_free(&c->a);
    store_summary_free(&c->b);
    free(c->pairs);
    for (size_t i = 0; i < c->n; i++) {
        free(c->rows[i].key);
        free(c->rows[i].metric);
    }
    free(c->rows);
    memset(c, 0, sizeof *c);
}

int store_run_compare(store *s, int64_t a, int64_t b, store_compare *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = store_run_summary(s, a, &out->a, err, errlen);
    if (rc == 0)
        rc = store_run_summary(s, b, &out->b, err, errlen);
    if (rc != 0) {
        store_compare_free(out);
        return rc;
    }
    const store_summary *sa = &out->a, *sb = &out->b;
    delta_list l = {0};
    l.oom = pair_legs(out) != 0;
    delta_add(&l, "run", "max_context", sa->run.max_context >= 0, sa->run.max_context,
              sb->run.max_context >= 0, sb->run.max_context);
    delta_add(&l, "run", "last_context", sa->run.last_context >= 0, sa->run.last_context,
              sb->run.last_context >= 0, sb->run.last_context);
    delta_add(&l, "run", "requests", 1, sa->run.n_requests, 1, sb->run.n_requests);
    delta_add(&l, "run", "failed", 1, sa->run.n_failed, 1, sb->run.n_failed);
    for (size_t i = 0; i < out->n_pairs; i++) {
        const store_leg_pair *p = &out->pairs[i];
        char key[64];
        pair_key(out, p, key, sizeof key);
        delta_legs(&l, key, p->a >= 0 ? &sa->legs[p->a] : NULL, p->b >= 0 ? &sb->legs[p->b] : NULL);
    }
    for (size_t i = 0; i < out->n_pairs; i++) {
        const store_leg_pair *p = &out->pairs[i];
        char key[64];
        pair_key(out, p, key, sizeof key);
        delta_pair_groups(&l, key, sa, p->a >= 0 ? sa->legs[p->a].idx : -1, sb,
                          p->b >= 0 ? sb->legs[p->b].idx : -1);
    }
    out->rows = l.rows;
    out->n = l.n;
    if (l.oom) {
        store_errf(err, errlen, "out of memory comparing runs");
        store_compare_free(out);
        return -1;
    }
    return 0;
}

/* ---- best settings ---- */

void store_best_free(store_best *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->rows[i].model);
        free(b->rows[i].cluster);
        free(b->rows[i].engine);
    }
    free(b->rows);
    b->rows = NULL;
    b->n = 0;
}

/* Every leg with its run's model, cluster name and engine, filtered by ?1,
 * ?2 and ?3. */
#define BEST_LEGS                                                                                  \
    "WITH legs_of AS ("                                                                            \
    " SELECT coalesce(json_extract(r.cluster, '$.model'), '') AS model,"                           \
    "  coalesce(json_extract(r.cluster, '$.name'), '') AS cluster, r.engine,"                      \
    "  legs.run, legs.idx, legs.kv_bits, legs.prefill_step,"                                       \
    "  coalesce(legs.concurrency, 1) AS concurrency,"                                              \
    "  coalesce(legs.agg_tps, " LEG_AGG_TPS ") AS agg_tps"                                         \
    " FROM legs JOIN runs r ON r.id = legs.run WHERE r.mode <> 'quality'),"                        \
    "f AS (SELECT * FROM legs_of WHERE (?1 IS NULL OR model = ?1)"                                 \
    " AND (?2 IS NULL OR cluster = ?2) AND (?3 IS NULL OR engine = ?3)),"                          \
    "qual AS (SELECT q.model, r.engine, q.kv_bits, q.kl_mean, q.top1, q.run, q.topk,"              \
    " row_number() OVER (PARTITION BY q.model, r.engine, q.kv_bits ORDER BY q.t DESC, q.run DESC)" \
    " AS rn FROM quality q JOIN runs r ON r.id = q.run),"

/* A setting's latest quality (kv_bits 32 on inferd is the reference
 * itself), and the floor ?4 (max KL) and ?5 (min top-1) on it. */
#define BEST_KL "coalesce(k.kl_mean, CASE WHEN t.kv_bits = 32 AND t.engine = 'inferd' THEN 0 END)"
#define BEST_TOP1 "coalesce(k.top1, CASE WHEN t.kv_bits = 32 AND t.engine = 'inferd' THEN 1 END)"
#define BEST_QUALITY                                                                               \
    " LEFT JOIN qual k ON k.rn = 1 AND k.model = t.model AND k.engine = t.engine"                  \
    " AND k.kv_bits = t.kv_bits"                                                                   \
    " WHERE (?4 IS NULL OR " BEST_KL " <= ?4) AND (?5 IS NULL OR " BEST_TOP1 " >= ?5)"
#define BEST_QUALITY_COLS ", " BEST_KL ", " BEST_TOP1 ", coalesce(k.run, 0), coalesce(k.topk, 0)"

/* Both rankings return: model, cluster, kv_bits, prefill_step,
 * concurrency, max_context, decode_tps, agg_tps, run, runs, engine,
 * kl_mean, top1, quality run, its top-k (0: a full measurement). A
 * setting is one per engine: q4_0 KV on llama.cpp is not kv_bits 4 on
 * inferd. */
static const char best_context_sql[] =
    /* tried: every setting a leg ran with; ranked: the requests that
     * succeeded, per setting by context reached, then decode speed. */
    BEST_LEGS
    "tried AS (SELECT model, cluster, engine, kv_bits, prefill_step,"
    " count(DISTINCT run) AS runs FROM f GROUP BY 1, 2, 3, 4, 5),"
    "ranked AS (SELECT f.model, f.cluster, f.engine, f.kv_bits, f.prefill_step, q.ctx_after,"
    "  q.decode_tps, q.run, row_number() OVER (PARTITION BY f.model, f.cluster, f.engine,"
    "  f.kv_bits, f.prefill_step ORDER BY q.ctx_after DESC, q.decode_tps DESC, q.run DESC) AS rn"
    " FROM f JOIN requests q ON q.run = f.run AND q.leg = f.idx WHERE q.status = 'ok')"
    "SELECT t.model, t.cluster, t.kv_bits, t.prefill_step, 0, coalesce(b.ctx_after, -1),"
    " coalesce(b.decode_tps, -1), -1, coalesce(b.run, 0), t.runs, t.engine" BEST_QUALITY_COLS
    " FROM tried t LEFT JOIN ranked b ON b.rn = 1 AND b.model = t.model"
    " AND b.cluster = t.cluster AND b.engine = t.engine AND b.kv_bits = t.kv_bits"
    " AND b.prefill_step = t.prefill_step" BEST_QUALITY
    " ORDER BY t.model, t.cluster, 6 DESC, 7 DESC, t.engine, t.kv_bits, t.prefill_step";

static const char best_agg_sql[] =
    /* ranked: the legs of each setting, concurrency included (it is what
     * moves aggregate throughput most), by aggregate tok/s. */
    BEST_LEGS
    "tried AS (SELECT model, cluster, engine, kv_bits, prefill_step, concurrency,"
    " count(DISTINCT run) AS runs FROM f GROUP BY 1, 2, 3, 4, 5, 6),"
    "ranked AS (SELECT model, cluster, engine, kv_bits, prefill_step, concurrency, agg_tps, run,"
    "  row_number() OVER (PARTITION BY model, cluster, engine, kv_bits, prefill_step,"
    "  concurrency ORDER BY agg_tps DESC, run DESC) AS rn FROM f WHERE agg_tps IS NOT NULL)"
    "SELECT t.model, t.cluster, t.kv_bits, t.prefill_step, t.concurrency, -1, -1,"
    " coalesce(b.agg_tps, -1), coalesce(b.run, 0), t.runs, t.engine" BEST_QUALITY_COLS
    " FROM tried t LEFT JOIN ranked b ON b.rn = 1 AND b.model = t.model"
    " AND b.cluster = t.cluster AND b.engine = t.engine AND b.kv_bits = t.kv_bits"
    " AND b.prefill_step = t.prefill_step AND b.concurrency = t.concurrency" BEST_QUALITY
    " ORDER BY t.model, t.cluster, 8 DESC, t.engine, t.kv_bits, t.prefill_step, t.concurrency";

int store_best_settings(store *s, const char *model, const char *cluster, const char *engine,
                        store_best_by by, const store_quality_floor *floor, store_best *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->by = by;
    pthread_mutex_lock(&s->db_lock);
    sqlite3_stmt *st;
    int ret = -1, rc = SQLITE_ERROR;
    if (store_prepare(s->db, by == STORE_BEST_AGG_TPS ? best_agg_sql : best_context_sql, &st, err,
                      errlen) != 0)
        goto out;
    if (model)
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    if (cluster)
        sqlite3_bind_text(st, 2, cluster, -1, SQLITE_STATIC);
    if (engine)
        sqlite3_bind_text(st, 3, engine, -1, SQLITE_STATIC);
    if (floor && isfinite(floor->max_kl))
        sqlite3_bind_double(st, 4, floor->max_kl);
    if (floor && isfinite(floor->min_top1))
        sqlite3_bind_double(st, 5, floor->min_top1);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_best_row *grown = realloc(out->rows, (out->n + 1) * sizeof *grown);
        if (!grown)
            break;
        out->rows = grown;
        store_best_row *r = &out->rows[out->n];
        r->model = store_col_strdup(st, 0);
        r->cluster = store_col_strdup(st, 1);
        r->engine = store_col_strdup(st, 10);
        if (!r->model || !r->cluster || !r->engine) {
            free(r->model);
            free(r->cluster);
            free(r->engine);
            break;
        }
        out->n++;
        r->kv_bits = sqlite3_column_int(st, 2);
        r->prefill_step = sqlite3_column_int(st, 3);
        r->concurrency = sqlite3_column_int(st, 4);
        r->max_context = sqlite3_column_int64(st, 5);
        r->decode_tps = sqlite3_column_double(st, 6);
        r->agg_tps = sqlite3_column_double(st, 7);
        r->run = sqlite3_column_int64(st, 8);
        r->runs = sqlite3_column_int64(st, 9);
        r->kl_mean = store_col_num(st, 11);
        r->top1 = store_col_num(st, 12);
        r->quality_run = sqlite3_column_int64(st, 13);
        r->quality_topk = sqlite3_column_int(st, 14);
    }
    if (rc == SQLITE_DONE)
        ret = 0;
    else
        store_dberr(err, errlen, rc == SQLITE_ROW ? NULL : s->db, "finding best settings");
    sqlite3_finalize(st);
out:
    pthread_mutex_unlock(&s->db_lock);
    if (ret != 0)
        store_best_free(out);
    return ret;
}

/* ---- prune ---- */

int store_prune(store *s, double before, int vacuum, int64_t *deleted, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->db_lock);
    int ret = -1;
    *deleted = 0;
    /* Runs still going are kept whatever their age; events outside any run
     * age out with the runs. Foreign keys cascade to legs, requests, steps
     * and events. */
    if (store_exec(s->db, "BEGIN IMMEDIATE", err, errlen) != 0)
        goto out;
    sqlite3_stmt *st;
    const char *sql[] = {"DELETE FROM runs WHERE started < ?1 AND status <> 'running'",
                         "DELETE FROM events WHERE run IS NULL AND t < ?1"};
    for (int i = 0; i < 2; i++) {
        if (store_prepare(s->db, sql[i], &st, err, errlen) != 0)
            goto rollback;
        sqlite3_bind_double(st, 1, before);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            store_dberr(err, errlen, s->db, "pruning runs");
            goto rollback;
        }
        if (i == 0)
            *deleted = sqlite3_changes(s->db);
    }
    if (store_exec(s->db, "COMMIT", err, errlen) != 0)
        goto rollback;
    if (vacuum && store_exec(s->db, "VACUUM", err, errlen) != 0)
        goto out;
    ret = 0;
    goto out;
rollback:
    store_exec(s->db, "ROLLBACK", NULL, 0);
out:
    pthread_mutex_unlock(&s->db_lock);
    return ret;
}
