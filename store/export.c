/* export.c: a run's rows as CSV or JSON, and the JSON forms of the query
 * results. Rows are streamed: a run's steps may not fit in memory twice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

json_t *store_json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jdist(const store_dist *d)
{
    return json_pack("{sI sf sf sf sf}", "count", (json_int_t)d->count, "p50", d->p50, "p90",
                     d->p90, "p99", d->p99, "max", d->max);
}

/* A stored JSON text as a value; a damaged one is kept as a string. */
static json_t *jparsed(const char *text)
{
    json_t *v = json_loads(text ? text : "{}", JSON_DECODE_ANY, NULL);
    return v ? v : json_string(text);
}

static json_t *jopt_int(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

/* The JSON form of one run, an element of store_run_list_json's array. */
static json_t *store_run_json(const store_run *r)
{
    return json_pack("{sI ss ss ss ss ss ss so so so sf so so* so so sI sI sI sI}", "id",
                     (json_int_t)r->id, "name", r->name, "notes", r->notes, "mode", r->mode,
                     "status", r->status, "model", r->model, "engine", r->engine, "engine_version",
                     r->engine_version ? json_string(r->engine_version) : json_null(), "params",
                     jparsed(r->params), "cluster", jparsed(r->cluster), "started", r->started,
                     "ended", r->ended > 0 ? json_real(r->ended) : json_null(), "failure",
                     r->failure ? json_string(r->failure) : NULL, "max_context",
                     jopt_int(r->max_context), "last_context", jopt_int(r->last_context),
                     "dropped_rows", (json_int_t)r->dropped_rows, "legs", (json_int_t)r->n_legs,
                     "requests", (json_int_t)r->n_requests, "failed", (json_int_t)r->n_failed);
}

/* Appends v to arr; 0 ok, -1 when v is NULL (out of memory). */
static int jappend(json_t *arr, json_t *v)
{
    return v && json_array_append_new(arr, v) == 0 ? 0 : -1;
}

json_t *store_run_list_json(const store_run_list *l)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < l->n; i++)
        if (jappend(arr, store_run_json(&l->runs[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static json_t *leg_json(const store_leg_summary *l)
{
    return json_pack(
        "{si si si si ss so so sI sI so so so so so so}", "idx", l->idx, "kv_bits", l->kv_bits,
        "prefill_step", l->prefill_step, "concurrency", l->concurrency, "status", l->status,
        "max_context", jopt_int(l->max_context), "agg_tps", store_json_num(l->agg_tps), "requests",
        (json_int_t)l->requests, "failed", (json_int_t)l->failed, "ttft_ms", jdist(&l->ttft_ms),
        "ttft_p95_ms", store_json_num(l->ttft_p95_ms), "tpot_ms", jdist(&l->tpot_ms), "decode_tps",
        jdist(&l->decode_tps), "prefill_tps", jdist(&l->prefill_tps), "e2e_ms", jdist(&l->e2e_ms));
}

static json_t *group_json(const store_step_group *g)
{
    return json_pack("{si ss ss so so so}", "leg", g->leg, "node", g->node, "phase", g->phase,
                     "step_ms", jdist(&g->step_ms), "model_ms", jdist(&g->model_ms), "eval_ms",
                     jdist(&g->eval_ms));
}

json_t *store_summary_json(const store_summary *sum)
{
    json_t *legs = json_array(), *steps = json_array();
    for (size_t i = 0; legs && i < sum->n_legs; i++)
        if (jappend(legs, leg_json(&sum->legs[i])) != 0)
            goto fail;
    for (size_t i = 0; steps && i < sum->n_groups; i++)
        if (jappend(steps, group_json(&sum->groups[i])) != 0)
            goto fail;
    const store_failure *f = &sum->failure;
    json_t *failure =
        f->found ? json_pack("{si sI sI ss ss}", "leg", f->leg, "request", (json_int_t)f->request,
                             "ctx_before", (json_int_t)f->ctx_before, "code", f->code, "message",
                             f->message)
                 : json_null();
    return json_pack("{so so so so}", "run", store_run_json(&sum->run), "legs", legs, "steps",
                     steps, "failure", failure);
fail:
    json_decref(legs);
    json_decref(steps);
    return NULL;
}

/* A side of a pair: the leg's idx, or null. */
static json_t *jleg_of(const store_summary *s, int i)
{
    return i >= 0 ? json_integer(s->legs[i].idx) : json_null();
}

json_t *store_compare_json(const store_compare *c)
{
    json_t *pairs = json_array();
    for (size_t i = 0; pairs && i < c->n_pairs; i++) {
        const store_leg_pair *p = &c->pairs[i];
        if (jappend(pairs, json_pack("{so so}", "a_leg", jleg_of(&c->a, p->a), "b_leg",
                                     jleg_of(&c->b, p->b))) != 0) {
            json_decref(pairs);
            return NULL;
        }
    }
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < c->n; i++) {
        const store_delta *d = &c->rows[i];
        if (jappend(rows, json_pack("{ss ss so so so so}", "key", d->key, "metric", d->metric, "a",
                                    store_json_num(d->a), "b", store_json_num(d->b), "delta",
                                    store_json_num(d->delta), "ratio", store_json_num(d->ratio))) !=
            0) {
            json_decref(rows);
            json_decref(pairs);
            return NULL;
        }
    }
    return json_pack("{so so so so}", "a", store_summary_json(&c->a), "b",
                     store_summary_json(&c->b), "pairs", pairs, "deltas", rows);
}

static json_t *jopt_real(double v)
{
    return v >= 0 ? json_real(v) : json_null();
}

/* Each ranking's own figures: context and decode tok/s, or concurrency
 * and aggregate tok/s. */
static json_t *best_row_json(const store_best *b, const store_best_row *r)
{
    json_t *row =
        json_pack("{ss ss ss si si so sI}", "model", r->model, "cluster", r->cluster, "engine",
                  r->engine, "kv_bits", r->kv_bits, "prefill_step", r->prefill_step, "run",
                  r->run > 0 ? json_integer(r->run) : json_null(), "runs", (json_int_t)r->runs);
    int bad = !row;
    if (!bad && b->by == STORE_BEST_AGG_TPS)
        bad = json_object_set_new(row, "concurrency", json_integer(r->concurrency)) ||
              json_object_set_new(row, "agg_tps", jopt_real(r->agg_tps));
    else if (!bad)
        bad = json_object_set_new(row, "max_context", jopt_int(r->max_context)) ||
              json_object_set_new(row, "decode_tps", jopt_real(r->decode_tps));
    if (!bad)
        bad =
            json_object_set_new(row, "kl_mean", store_json_num(r->kl_mean)) ||
            json_object_set_new(row, "top1", store_json_num(r->top1)) ||
            json_object_set_new(row, "quality_run",
                                r->quality_run > 0 ? json_integer(r->quality_run) : json_null()) ||
            json_object_set_new(row, "quality_topk",
                                r->quality_topk > 0 ? json_integer(r->quality_topk) : json_null());
    if (bad) {
        json_decref(row);
        return NULL;
    }
    return row;
}

json_t *store_best_json(const store_best *b)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < b->n; i++) {
        json_t *row = best_row_json(b, &b->rows[i]);
        if (jappend(arr, row) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* ---- row streams ---- */

/* Column order of the exports is the table's, minus the run id. */
static const char requests_sql[] =
    "SELECT leg, idx, session, ctx_before, ctx_after, prompt_tokens, gen_tokens, ttft_ms,"
    " prefill_ms, prefill_tps, decode_tps, tpot_ms, e2e_ms, status, error_code, error_message, t,"
    " itl_p50_ms, itl_p99_ms, prefill_step_ms, decode_step_ms FROM requests WHERE run = ?"
    " ORDER BY idx";
static const char steps_sql[] =
    "SELECT seq, leg, req, node, step, phase, tokens, pos, step_ms, model_ms, eval_ms, wait_ms,"
    " kv_bytes, kv_bits, prefill_step, rss, headroom, t"
    " FROM steps WHERE run = ? ORDER BY seq";

static int each_sql(store *s, int64_t run, const char *sql, store_row_fn fn, void *ctx, char *err,
                    size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db, sql, &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    enum { MAXCOL = 24 };
    int ncol = sqlite3_column_count(st);
    const char *names[MAXCOL];
    store_cell cells[MAXCOL];
    for (int i = 0; i < ncol && i < MAXCOL; i++)
        names[i] = sqlite3_column_name(st, i);
    int rc = fn(ctx, ncol, names, NULL) ? SQLITE_ABORT : SQLITE_DONE;
    while (rc == SQLITE_DONE && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < ncol; i++) {
            store_cell *c = &cells[i];
            memset(c, 0, sizeof *c);
            switch (sqlite3_column_type(st, i)) {
            case SQLITE_INTEGER:
                c->type = STORE_INT;
                c->i = sqlite3_column_int64(st, i);
                break;
            case SQLITE_FLOAT:
                c->type = STORE_REAL;
                c->d = sqlite3_column_double(st, i);
                break;
            case SQLITE_NULL:
                c->type = STORE_NULL;
                break;
            default:
                c->type = STORE_TEXT;
                c->s = (const char *)sqlite3_column_text(st, i);
            }
        }
        rc = fn(ctx, ncol, names, cells) ? SQLITE_ABORT : SQLITE_DONE;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ABORT) {
        store_errf(err, errlen, "export of run %lld stopped by the consumer", (long long)run);
        return -1;
    }
    if (rc != SQLITE_DONE) {
        store_dberr(err, errlen, s->db, "exporting");
        return -1;
    }
    return 0;
}

static store_cell cell_int(int64_t v)
{
    return (store_cell){.type = STORE_INT, .i = v};
}

static store_cell cell_real(double v)
{
    return (store_cell){.type = STORE_REAL, .d = v};
}

static store_cell cell_text(const char *v)
{
    return (store_cell){.type = v ? STORE_TEXT : STORE_NULL, .s = v};
}

/* The summary flattened: one row per (section, leg, node, phase, metric). */
static const char *const summary_cols[] = {"section", "leg",   "kv_bits", "prefill_step",
                                           "node",    "phase", "metric",  "count",
                                           "p50",     "p90",   "p99",     "max"};
enum { SUMMARY_NCOL = 12 };

static int summary_row(store_row_fn fn, void *ctx, const char *section,
                       const store_leg_summary *leg, const store_step_group *g, const char *metric,
                       const store_dist *d)
{
    store_cell c[SUMMARY_NCOL] = {
        cell_text(section),
        cell_int(leg ? leg->idx : g->leg),
        leg ? cell_int(leg->kv_bits) : cell_text(NULL),
        leg ? cell_int(leg->prefill_step) : cell_text(NULL),
        cell_text(g ? g->node : NULL),
        cell_text(g ? g->phase : NULL),
        cell_text(metric),
        cell_int(d->count),
        cell_real(d->p50),
        cell_real(d->p90),
        cell_real(d->p99),
        cell_real(d->max),
    };
    return fn(ctx, SUMMARY_NCOL, summary_cols, c);
}

int store_summary_each(const store_summary *sum, store_row_fn fn, void *ctx)
{
    if (fn(ctx, SUMMARY_NCOL, summary_cols, NULL))
        return -1;
    for (size_t i = 0; i < sum->n_legs; i++) {
        const store_leg_summary *l = &sum->legs[i];
        const char *names[] = {"ttft_ms", "tpot_ms", "decode_tps", "prefill_tps", "e2e_ms"};
        const store_dist *d[] = {&l->ttft_ms, &l->tpot_ms, &l->decode_tps, &l->prefill_tps,
                                 &l->e2e_ms};
        for (int m = 0; m < 5; m++)
            if (summary_row(fn, ctx, "request", l, NULL, names[m], d[m]))
                return -1;
    }
    for (size_t i = 0; i < sum->n_groups; i++) {
        const store_step_group *g = &sum->groups[i];
        if (summary_row(fn, ctx, "step", NULL, g, "step_ms", &g->step_ms) ||
            summary_row(fn, ctx, "step", NULL, g, "model_ms", &g->model_ms) ||
            summary_row(fn, ctx, "step", NULL, g, "eval_ms", &g->eval_ms))
            return -1;
    }
    return 0;
}

int store_export_each(store *s, int64_t run, store_export_what what, store_row_fn fn, void *ctx,
                      char *err, size_t errlen)
{
    pthread_mutex_lock(&s->db_lock);
    int rc = store_run_exists(s, run, err, errlen);
    if (rc == 0) {
        if (what == STORE_EXPORT_SUMMARY) {
            store_summary sum;
            rc = store_summary_locked(s, run, &sum, err, errlen);
            if (rc == 0) {
                if (store_summary_each(&sum, fn, ctx) != 0) {
                    store_errf(err, errlen, "export of run %lld stopped by the consumer",
                               (long long)run);
                    rc = -1;
                }
                store_summary_free(&sum);
            }
        } else {
            rc = each_sql(s, run, what == STORE_EXPORT_STEPS ? steps_sql : requests_sql, fn, ctx,
                          err, errlen);
        }
    }
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}

/* ---- CSV and JSON writers over the row stream ---- */

typedef struct writer_ctx {
    FILE *out;
    size_t rows;
    int failed;
} writer_ctx;

static void csv_text(FILE *out, const char *t)
{
    if (!strpbrk(t, ",\"\r\n")) {
        fputs(t, out);
        return;
    }
    fputc('"', out);
    for (; *t; t++) {
        if (*t == '"')
            fputc('"', out);
        fputc(*t, out);
    }
    fputc('"', out);
}

static int csv_row(void *vctx, int ncol, const char *const *names, const store_cell *cells)
{
    writer_ctx *w = vctx;
    for (int i = 0; i < ncol; i++) {
        if (i)
            fputc(',', w->out);
        if (!cells) {
            csv_text(w->out, names[i]);
            continue;
        }
        switch (cells[i].type) {
        case STORE_INT:
            fprintf(w->out, "%lld", (long long)cells[i].i);
            break;
        case STORE_REAL:
            fprintf(w->out, "%.15g", cells[i].d);
            break;
        case STORE_TEXT:
            csv_text(w->out, cells[i].s);
            break;
        case STORE_NULL:
            break;
        }
    }
    fputs("\r\n", w->out);
    return ferror(w->out) ? (w->failed = 1) : 0;
}

static json_t *cell_json(const store_cell *c)
{
    switch (c->type) {
    case STORE_INT:
        return json_integer(c->i);
    case STORE_REAL:
        return store_json_num(c->d);
    case STORE_TEXT:
        return json_string(c->s);
    case STORE_NULL:
        break;
    }
    return json_null();
}

static int json_row(void *vctx, int ncol, const char *const *names, const store_cell *cells)
{
    writer_ctx *w = vctx;
    if (!cells)
        return 0;
    json_t *o = json_object();
    for (int i = 0; o && i < ncol; i++)
        if (json_object_set_new(o, names[i], cell_json(&cells[i])) != 0) {
            json_decref(o);
            o = NULL;
        }
    if (!o)
        return w->failed = 1;
    fputs(w->rows++ ? ",\n  " : "[\n  ", w->out);
    int rc = json_dumpf(o, w->out, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(o);
    return rc != 0 || ferror(w->out) ? (w->failed = 1) : 0;
}

int store_export(store *s, int64_t run, store_export_what what, store_format fmt, FILE *out,
                 char *err, size_t errlen)
{
    writer_ctx w = {.out = out};
    int rc;
    if (fmt == STORE_FORMAT_JSON && what == STORE_EXPORT_SUMMARY) {
        store_summary sum;
        rc = store_run_summary(s, run, &sum, err, errlen);
        if (rc != 0)
            return rc;
        json_t *j = store_summary_json(&sum);
        store_summary_free(&sum);
        w.failed = !j || json_dumpf(j, out, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0;
        json_decref(j);
        fputc('\n', out);
    } else {
        rc = store_export_each(s, run, what, fmt == STORE_FORMAT_JSON ? json_row : csv_row, &w, err,
                               errlen);
        if (rc != 0 && !w.failed)
            return rc;
        if (rc == 0 && fmt == STORE_FORMAT_JSON)
            fputs(w.rows ? "\n]\n" : "[]\n", out);
    }
    if (w.failed || fflush(out) != 0 || ferror(out)) {
        store_errf(err, errlen, "writing the export of run %lld failed", (long long)run);
        return -1;
    }
    return 0;
}
