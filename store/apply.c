/* apply.c: the SQL of recording, run on the writer thread: its prepared
 * statements, and one function per kind of record. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define STEP_INSERT                                                                                \
    "INSERT INTO steps(run, seq, leg, node, phase, step_ms, model_ms, eval_ms, req, step,"         \
    " tokens, pos, wait_ms, kv_bytes, kv_bits, prefill_step, rss, headroom, t)"                    \
    " VALUES "
#define STEP_VALUES "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
enum { STEP_COLS = 19 };

int store_wstmts_prepare(sqlite3 *db, store_wstmts *w, char *err, size_t errlen)
{
    /* One statement inserts STORE_STEP_CHUNK steps: the per-statement cost
     * of sqlite (start, halt, reset) is then paid once per chunk. */
    char multi[sizeof STEP_INSERT + STORE_STEP_CHUNK * sizeof STEP_VALUES];
    size_t len = (size_t)snprintf(multi, sizeof multi, "%s", STEP_INSERT);
    for (int i = 0; i < STORE_STEP_CHUNK; i++)
        len += (size_t)snprintf(multi + len, sizeof multi - len, "%s" STEP_VALUES, i ? "," : "");
    struct {
        sqlite3_stmt **st;
        const char *sql;
    } all[] = {
        {&w->begin, "BEGIN"},
        {&w->commit, "COMMIT"},
        {&w->rollback, "ROLLBACK"},
        {&w->step, STEP_INSERT STEP_VALUES},
        {&w->steps, multi},
        {&w->request, "INSERT INTO requests(run, leg, idx, session, ctx_before, ctx_after,"
                      " prompt_tokens, gen_tokens, ttft_ms, prefill_ms, prefill_tps,"
                      " decode_tps, tpot_ms, e2e_ms, status, error_code, error_message, t,"
                      " itl_p50_ms, itl_p99_ms, prefill_step_ms, decode_step_ms)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&w->event, "INSERT INTO events(run, t, node, kind, detail) VALUES (?,?,?,?,?)"},
        {&w->leg_begin, "INSERT INTO legs(run, idx, kv_bits, prefill_step, concurrency, status,"
                        " started) VALUES (?,?,?,?,?,'running',?)"},
        /* Also closes the legs a run end finds still running (?2 NULL). */
        {&w->leg_end, "UPDATE legs SET status = ?3, ended = ?4, max_context = " LEG_OK_CONTEXT
                      ", agg_tps = " LEG_AGG_TPS
                      " WHERE run = ?1 AND status = 'running' AND (?2 IS NULL OR idx = ?2)"},
        {&w->run_end,
         "UPDATE runs SET status = ?2, ended = ?3, failure = ?4, max_context = " RUN_OK_CONTEXT
         " WHERE id = ?1"},
        {&w->progress, "UPDATE runs SET dropped_rows = ?2, last_context = ?3 WHERE id = ?1"},
        {&w->quality,
         "INSERT INTO quality(run, leg, kv_bits, ref_kv_bits, ctx, score_from, windows,"
         " positions, kl_mean, kl_p99, kl_max, top1, ppl_ref, ppl_test, ppl_ref_err,"
         " text_name, text_sha256, model, t, topk)"
         " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&w->quality_bucket, "INSERT INTO quality_buckets(run, leg, pos_from, pos_to, positions,"
                             " kl_mean, kl_p99, kl_max, top1, ppl_ref, ppl_test)"
                             " VALUES (?,?,?,?,?,?,?,?,?,?,?)"},
        {&w->savepoint, "SAVEPOINT quality"},
        {&w->release, "RELEASE quality"},
        {&w->rollback_to, "ROLLBACK TO quality"},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (store_prepare(db, all[i].sql, all[i].st, err, errlen) != 0)
            return -1;
    return 0;
}

void store_wstmts_finalize(store_wstmts *w)
{
    sqlite3_stmt **all[] = {&w->begin,          &w->commit,    &w->rollback, &w->step,
                            &w->steps,          &w->request,   &w->event,    &w->leg_begin,
                            &w->leg_end,        &w->run_end,   &w->progress, &w->quality,
                            &w->quality_bucket, &w->savepoint, &w->release,  &w->rollback_to};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(st, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

/* The writer's view of the active run; NULL for a run this handle does not
 * own (push refuses those, so this is a run ended in an earlier batch).
 * Only the writer removes runs, so its last answer stays valid until then. */
static store_active *writer_run(store *s, int64_t run)
{
    if (s->wlast && s->wlast->id == run)
        return s->wlast;
    pthread_mutex_lock(&s->lock);
    store_active *a = store_active_find(s, run);
    pthread_mutex_unlock(&s->lock);
    return s->wlast = a;
}

/* Binds one step as parameters base+1 .. base+STEP_COLS. Every parameter
 * is bound, so no clear_bindings is needed between rows. */
static void bind_step(sqlite3_stmt *st, int base, store_rec *r, store_active *a)
{
    const store_step *v = &r->u.step.v;
    sqlite3_bind_int64(st, base + 1, r->run);
    sqlite3_bind_int64(st, base + 2, a->next_seq++);
    sqlite3_bind_int(st, base + 3, v->leg);
    sqlite3_bind_text(st, base + 4, r->u.step.node, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, base + 5, store_phase_name(v->phase), -1, SQLITE_STATIC);
    store_bind_measure(st, base + 6, v->step_ms);
    store_bind_measure(st, base + 7, v->model_ms);
    store_bind_measure(st, base + 8, v->eval_ms);
    if (v->req >= 0)
        sqlite3_bind_int64(st, base + 9, v->req);
    else
        sqlite3_bind_null(st, base + 9);
    sqlite3_bind_int64(st, base + 10, v->step);
    sqlite3_bind_int64(st, base + 11, v->tokens);
    sqlite3_bind_int64(st, base + 12, v->pos);
    store_bind_measure(st, base + 13, v->wait_ms);
    sqlite3_bind_int64(st, base + 14, v->kv_bytes);
    sqlite3_bind_int(st, base + 15, v->kv_bits);
    sqlite3_bind_int(st, base + 16, v->prefill_step);
    sqlite3_bind_int64(st, base + 17, v->rss);
    sqlite3_bind_int64(st, base + 18, v->headroom);
    sqlite3_bind_double(st, base + 19, r->t);
}

static void note_context(store_active *a, const store_rec *r)
{
    const store_step *v = &r->u.step.v;
    if (v->pos > a->last_context)
        a->last_context = v->pos;
}

static int apply_step(store *s, store_rec *r, store_active *a)
{
    bind_step(s->ws.step, 0, r, a);
    int rc = sqlite3_step(s->ws.step);
    sqlite3_reset(s->ws.step);
    if (rc == SQLITE_DONE)
        note_context(a, r);
    return rc;
}

int store_steps_apply(store *s, store_rec *const *recs)
{
    store_active *a[STORE_STEP_CHUNK];
    for (int i = 0; i < STORE_STEP_CHUNK; i++)
        if (!(a[i] = writer_run(s, recs[i]->run)))
            return SQLITE_MISUSE;
    for (int i = 0; i < STORE_STEP_CHUNK; i++)
        bind_step(s->ws.steps, i * STEP_COLS, recs[i], a[i]);
    int rc = sqlite3_step(s->ws.steps);
    sqlite3_reset(s->ws.steps);
    for (int i = 0; rc == SQLITE_DONE && i < STORE_STEP_CHUNK; i++)
        note_context(a[i], recs[i]);
    return rc;
}

static int apply_request(store *s, store_rec *r)
{
    const store_request *q = &r->u.req;
    sqlite3_stmt *st = s->ws.request;
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int(st, 2, q->leg);
    sqlite3_bind_int64(st, 3, q->idx);
    bind_text_or_null(st, 4, q->session);
    sqlite3_bind_int64(st, 5, q->ctx_before);
    sqlite3_bind_int64(st, 6, q->ctx_after);
    sqlite3_bind_int64(st, 7, q->prompt_tokens);
    sqlite3_bind_int64(st, 8, q->gen_tokens);
    store_bind_measure(st, 9, q->ttft_ms);
    store_bind_measure(st, 10, q->prefill_ms);
    store_bind_measure(st, 11, q->prefill_tps);
    store_bind_measure(st, 12, q->decode_tps);
    store_bind_measure(st, 13, q->tpot_ms);
    store_bind_measure(st, 14, q->e2e_ms);
    sqlite3_bind_text(st, 15, q->ok ? "ok" : "failed", -1, SQLITE_STATIC);
    bind_text_or_null(st, 16, q->error_code);
    bind_text_or_null(st, 17, q->error_message);
    sqlite3_bind_double(st, 18, r->t);
    store_bind_measure(st, 19, q->itl_p50_ms);
    store_bind_measure(st, 20, q->itl_p99_ms);
    store_bind_measure(st, 21, q->prefill_step_ms);
    store_bind_measure(st, 22, q->decode_step_ms);
    return store_stmt_run(st);
}

static int apply_event(store *s, store_rec *r)
{
    sqlite3_stmt *st = s->ws.event;
    if (r->run)
        sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_double(st, 2, r->t);
    bind_text_or_null(st, 3, r->u.ev.node);
    sqlite3_bind_text(st, 4, r->u.ev.kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->u.ev.detail, -1, SQLITE_STATIC);
    return store_stmt_run(st);
}

static int apply_leg_begin(store *s, store_rec *r)
{
    sqlite3_stmt *st = s->ws.leg_begin;
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int(st, 2, r->u.leg.leg);
    sqlite3_bind_int(st, 3, r->u.leg.info.kv_bits);
    sqlite3_bind_int(st, 4, r->u.leg.info.prefill_step);
    sqlite3_bind_int(st, 5, r->u.leg.info.concurrency);
    sqlite3_bind_double(st, 6, r->t);
    return store_stmt_run(st);
}

/* Ends one leg, or (leg < 0) every leg still running. */
static int apply_leg_end(store *s, store_rec *r)
{
    sqlite3_stmt *st = s->ws.leg_end;
    sqlite3_bind_int64(st, 1, r->run);
    if (r->u.end.leg >= 0)
        sqlite3_bind_int(st, 2, r->u.end.leg);
    sqlite3_bind_text(st, 3, store_status_name(r->u.end.status), -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, r->t);
    return store_stmt_run(st);
}

/* Legs the runner left open end with the run. */
static int apply_run_end(store *s, store_rec *r, store_active *a)
{
    int rc = apply_leg_end(s, r);
    if (rc != SQLITE_DONE)
        return rc;
    sqlite3_stmt *st = s->ws.run_end;
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_text(st, 2, store_status_name(r->u.end.status), -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, r->t);
    bind_text_or_null(st, 4, r->u.end.failure);
    rc = store_stmt_run(st);
    if (rc != SQLITE_DONE)
        return rc;
    pthread_mutex_lock(&s->lock);
    a->ended = 1;
    pthread_mutex_unlock(&s->lock);
    /* Store the step aggregates now, while nobody waits for them: the first
     * summary of a long run is then as fast as any other. */
    store_step_group *groups;
    size_t n;
    if (store_step_stats(s->wdb, r->run, &groups, &n, NULL, 0) == 0)
        free(groups);
    return SQLITE_DONE;
}

int store_rec_apply(store *s, store_rec *r)
{
    store_active *a = r->run ? writer_run(s, r->run) : NULL;
    if (r->run && !a)
        return SQLITE_MISUSE;
    switch (r->kind) {
    case REC_STEP:
        return apply_step(s, r, a);
    case REC_REQUEST:
        return apply_request(s, r);
    case REC_EVENT:
        return apply_event(s, r);
    case REC_LEG_BEGIN:
        return apply_leg_begin(s, r);
    case REC_LEG_END:
        return apply_leg_end(s, r);
    case REC_RUN_END:
        return apply_run_end(s, r, a);
    case REC_QUALITY:
        return store_quality_apply(s, r);
    }
    return SQLITE_MISUSE;
}

int store_progress_save(store *s)
{
    pthread_mutex_lock(&s->lock);
    for (store_active *a = s->active; a; a = a->next) {
        if (a->dropped == a->saved_dropped && a->last_context == a->saved_context)
            continue;
        sqlite3_stmt *st = s->ws.progress;
        sqlite3_bind_int64(st, 1, a->id);
        sqlite3_bind_int64(st, 2, a->dropped);
        if (a->last_context >= 0)
            sqlite3_bind_int64(st, 3, a->last_context);
        if (store_stmt_run(st) != SQLITE_DONE) {
            pthread_mutex_unlock(&s->lock);
            return -1;
        }
        a->saved_dropped = a->dropped;
        a->saved_context = a->last_context;
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}
