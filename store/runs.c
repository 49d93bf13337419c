/* runs.c: recording a run. The producer half turns calls into queued
 * records; the writer half (store_rec_apply) turns records into SQL on the
 * writer's connection. store_recover closes runs whose process died. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"

static const char *const mode_names[] = {"growth", "fixed", "soak", "sweep"};
static const char *const status_names[] = {"running", "completed", "failed", "aborted"};
static const char *const phase_names[] = {"prefill", "decode"};

const char *store_mode_name(store_mode m)
{
    return (unsigned)m < 4 ? mode_names[m] : NULL;
}

const char *store_status_name(store_status st)
{
    return (unsigned)st < 4 ? status_names[st] : NULL;
}

const char *store_phase_name(store_phase p)
{
    return (unsigned)p < 2 ? phase_names[p] : NULL;
}

/* ---- process identity: a pid plus its start time, which pid reuse
 * cannot repeat ---- */

/* Field 22 of /proc/PID/stat (clock ticks after boot); -1 when unknown. */
static int64_t process_start(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parens: skip past the
     * last ')' and count the fields after it (state is field 3). */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (field == 22)
            return strtoll(p, NULL, 10);
        while (*p && *p != ' ')
            p++;
    }
    return -1;
}

static int process_alive(int64_t pid, int64_t start)
{
    if (pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 0;
    int64_t now = process_start((pid_t)pid);
    /* Without /proc, kill() is all there is to go on. */
    return now < 0 || start < 0 || now == start;
}

/* ---- producer side ---- */

store_active *store_active_find(store *s, int64_t run)
{
    for (store_active *a = s->active; a; a = a->next)
        if (a->id == run)
            return a;
    return NULL;
}

static int valid_object(const char *json, const char *what, char *err, size_t errlen)
{
    if (!json)
        return 0;
    json_error_t je;
    json_t *v = json_loads(json, 0, &je);
    int ok = v && json_is_object(v);
    json_decref(v);
    if (!ok)
        store_errf(err, errlen, "%s is not a JSON object: %s", what,
                   v ? "another JSON type" : je.text);
    return ok ? 0 : -1;
}

int store_run_begin(store *s, const store_run_info *info, int64_t *run_id, char *err, size_t errlen)
{
    if (!store_mode_name(info->mode)) {
        store_errf(err, errlen, "run mode %d is not one of growth, fixed, soak, sweep",
                   (int)info->mode);
        return -1;
    }
    if (valid_object(info->params, "run params", err, errlen) != 0 ||
        valid_object(info->cluster, "run cluster", err, errlen) != 0)
        return -1;
    store_active *a = calloc(1, sizeof *a);
    if (!a) {
        store_errf(err, errlen, "out of memory");
        return -1;
    }
    a->last_context = a->saved_context = -1;

    pthread_mutex_lock(&s->db_lock);
    sqlite3_stmt *st;
    int rc = -1;
    if (store_prepare(s->db,
                      "INSERT INTO runs(name, notes, mode, status, started, params, cluster,"
                      " owner_pid, owner_start) VALUES (?,?,?,'running',?,?,?,?,?)",
                      &st, err, errlen) == 0) {
        sqlite3_bind_text(st, 1, info->name ? info->name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, info->notes ? info->notes : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, store_mode_name(info->mode), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, store_now());
        sqlite3_bind_text(st, 5, info->params ? info->params : "{}", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, info->cluster ? info->cluster : "{}", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, getpid());
        sqlite3_bind_int64(st, 8, process_start(getpid()));
        if (sqlite3_step(st) == SQLITE_DONE) {
            a->id = sqlite3_last_insert_rowid(s->db);
            rc = 0;
        } else {
            store_dberr(err, errlen, s->db, "recording the start of a run");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->db_lock);
    if (rc != 0) {
        free(a);
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    a->next = s->active;
    s->active = a;
    pthread_mutex_unlock(&s->lock);
    *run_id = a->id;
    return 0;
}

static char *dup_or_null(const char *t, int *oom)
{
    if (!t)
        return NULL;
    char *d = strdup(t);
    if (!d)
        *oom = 1;
    return d;
}

/* A row that could not even be built is still a dropped row, and a loss
 * of its run while the run is going. */
static int refuse(store *s, int64_t run)
{
    pthread_mutex_lock(&s->lock);
    s->dropped++;
    store_active *a = store_active_find(s, run);
    if (a && !a->closing)
        a->dropped++;
    pthread_mutex_unlock(&s->lock);
    return -1;
}

int store_leg_begin(store *s, int64_t run, int leg, int kv_bits, int prefill_step)
{
    store_rec r = {.kind = REC_LEG_BEGIN, .run = run, .t = store_now()};
    r.u.leg.leg = leg;
    r.u.leg.kv_bits = kv_bits;
    r.u.leg.prefill_step = prefill_step;
    return store_queue_push(s, &r, 1);
}

int store_leg_end(store *s, int64_t run, int leg, store_status status)
{
    if (!store_status_name(status) || leg < 0)
        return refuse(s, run);
    store_rec r = {.kind = REC_LEG_END, .run = run, .t = store_now()};
    r.u.end.leg = leg;
    r.u.end.status = status;
    return store_queue_push(s, &r, 1);
}

int store_run_end(store *s, int64_t run, store_status status, const char *failure)
{
    if (!store_status_name(status) || status == STORE_RUNNING)
        return refuse(s, run);
    store_rec r = {.kind = REC_RUN_END, .run = run, .t = store_now()};
    int oom = 0;
    r.u.end.leg = -1;
    r.u.end.status = status;
    r.u.end.failure = dup_or_null(failure, &oom);
    if (oom) {
        store_rec_release(&r);
        return refuse(s, run);
    }
    return store_queue_push(s, &r, 1);
}

int store_request_add(store *s, const store_request *q)
{
    store_rec r = {.kind = REC_REQUEST, .run = q->run, .t = q->t > 0 ? q->t : store_now()};
    int oom = 0;
    r.u.req = *q;
    r.u.req.session = dup_or_null(q->session, &oom);
    r.u.req.error_code = dup_or_null(q->error_code, &oom);
    r.u.req.error_message = dup_or_null(q->error_message, &oom);
    if (oom) {
        store_rec_release(&r);
        return refuse(s, q->run);
    }
    return store_queue_push(s, &r, 1);
}

int store_step_add(store *s, const store_step *st)
{
    size_t len = st->node ? strlen(st->node) : 0;
    /* A step belongs to a run (the writer keeps the run's step sequence):
     * one with run 0 would have nowhere to go. */
    if (st->run <= 0 || len == 0 || len >= STORE_NODE_MAX || !store_phase_name(st->phase))
        return refuse(s, st->run);
    store_rec r = {.kind = REC_STEP, .run = st->run, .t = st->t > 0 ? st->t : store_now()};
    r.u.step.v = *st;
    r.u.step.v.node = NULL;
    memcpy(r.u.step.node, st->node, len + 1);
    return store_queue_push(s, &r, 0);
}

int store_event_add(store *s, const store_event *e)
{
    if (!e->kind || !e->kind[0] || valid_object(e->detail, "event detail", NULL, 0) != 0)
        return refuse(s, e->run);
    store_rec r = {.kind = REC_EVENT, .run = e->run, .t = e->t > 0 ? e->t : store_now()};
    int oom = 0;
    r.u.ev.node = dup_or_null(e->node, &oom);
    r.u.ev.kind = dup_or_null(e->kind, &oom);
    r.u.ev.detail = dup_or_null(e->detail ? e->detail : "{}", &oom);
    if (oom) {
        store_rec_release(&r);
        return refuse(s, e->run);
    }
    return store_queue_push(s, &r, 0);
}

/* ---- writer side ---- */

/* The largest context an ok request reached: of the run ?1, and of the
 * leg being updated. */
#define RUN_OK_CONTEXT                                                                             \
    "(SELECT max(ctx_after) FROM requests q WHERE q.run = ?1 AND q.status = 'ok')"
#define LEG_OK_CONTEXT                                                                             \
    "(SELECT max(ctx_after) FROM requests q WHERE q.run = legs.run AND q.leg = legs.idx"           \
    " AND q.status = 'ok')"

#define STEP_INSERT                                                                                \
    "INSERT INTO steps(run, seq, leg, node, phase, step_ms, model_ms, eval_ms, req, step,"         \
    " tokens, pos, wait_ms, comm_ms, kv_bytes, kv_bits, prefill_step, rss, headroom, t)"           \
    " VALUES "
#define STEP_VALUES "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
enum { STEP_COLS = 20 };

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
        {&w->leg_begin, "INSERT INTO legs(run, idx, kv_bits, prefill_step, status, started)"
                        " VALUES (?,?,?,?,'running',?)"},
        /* Also closes the legs a run end finds still running (?2 NULL). */
        {&w->leg_end, "UPDATE legs SET status = ?3, ended = ?4, max_context = " LEG_OK_CONTEXT
                      " WHERE run = ?1 AND status = 'running' AND (?2 IS NULL OR idx = ?2)"},
        {&w->run_end,
         "UPDATE runs SET status = ?2, ended = ?3, failure = ?4, max_context = " RUN_OK_CONTEXT
         " WHERE id = ?1"},
        {&w->progress, "UPDATE runs SET dropped_rows = ?2, last_context = ?3 WHERE id = ?1"},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (store_prepare(db, all[i].sql, all[i].st, err, errlen) != 0)
            return -1;
    return 0;
}

void store_wstmts_finalize(store_wstmts *w)
{
    sqlite3_stmt **all[] = {&w->begin,   &w->commit,  &w->rollback, &w->step,
                            &w->steps,   &w->request, &w->event,    &w->leg_begin,
                            &w->leg_end, &w->run_end, &w->progress};
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

static int run_stmt(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
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
    store_bind_measure(st, base + 14, v->comm_ms);
    sqlite3_bind_int64(st, base + 15, v->kv_bytes);
    sqlite3_bind_int(st, base + 16, v->kv_bits);
    sqlite3_bind_int(st, base + 17, v->prefill_step);
    sqlite3_bind_int64(st, base + 18, v->rss);
    sqlite3_bind_int64(st, base + 19, v->headroom);
    sqlite3_bind_double(st, base + 20, r->t);
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
    return run_stmt(st);
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
    return run_stmt(st);
}

static int apply_leg_begin(store *s, store_rec *r)
{
    sqlite3_stmt *st = s->ws.leg_begin;
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int(st, 2, r->u.leg.leg);
    sqlite3_bind_int(st, 3, r->u.leg.kv_bits);
    sqlite3_bind_int(st, 4, r->u.leg.prefill_step);
    sqlite3_bind_double(st, 5, r->t);
    return run_stmt(st);
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
    return run_stmt(st);
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
    rc = run_stmt(st);
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
        if (run_stmt(st) != SQLITE_DONE) {
            pthread_mutex_unlock(&s->lock);
            return -1;
        }
        a->saved_dropped = a->dropped;
        a->saved_context = a->last_context;
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* ---- recovery ---- */

static int abort_run(store *s, int64_t run, int64_t pid, char *err, size_t errlen)
{
    char failure[128];
    snprintf(failure, sizeof failure,
             "aborted: process %lld died while the run was going (found on reopen)",
             (long long)pid);
    /* ended: the time of the last row committed, the best we know. */
    static const char *const sql[] = {
        "UPDATE legs SET status = 'aborted', max_context = " LEG_OK_CONTEXT ","
        " ended = (SELECT max(t) FROM requests q WHERE q.run = ?1 AND q.leg = legs.idx)"
        " WHERE run = ?1 AND status = 'running'",
        "UPDATE runs SET status = 'aborted', failure = ?2, max_context = " RUN_OK_CONTEXT ","
        " ended = max(started, coalesce((SELECT t FROM steps WHERE run = ?1"
        " ORDER BY seq DESC LIMIT 1), started),"
        " coalesce((SELECT max(t) FROM requests WHERE run = ?1), started))"
        " WHERE id = ?1 AND status = 'running'",
    };
    for (size_t i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        if (store_prepare(s->db, sql[i], &st, err, errlen) != 0)
            return -1;
        sqlite3_bind_int64(st, 1, run);
        if (i == 1)
            sqlite3_bind_text(st, 2, failure, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            store_dberr(err, errlen, s->db, "marking a dead run aborted");
            return -1;
        }
    }
    return 0;
}

typedef struct dead_run {
    int64_t id, pid;
} dead_run;

int store_recover(store *s, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db,
                      "SELECT id, owner_pid, coalesce(owner_start, -1) FROM runs"
                      " WHERE status = 'running'",
                      &st, err, errlen) != 0)
        return -1;
    dead_run *dead = NULL;
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(st, 1);
        if (process_alive(pid, sqlite3_column_int64(st, 2)))
            continue;
        dead_run *grown = realloc(dead, (n + 1) * sizeof *grown);
        if (!grown) {
            rc = SQLITE_NOMEM;
            break;
        }
        dead = grown;
        dead[n++] = (dead_run){sqlite3_column_int64(st, 0), pid};
    }
    sqlite3_finalize(st);
    int ret = 0;
    if (rc != SQLITE_DONE) {
        store_errf(err, errlen, "looking for interrupted runs: %s",
                   rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(s->db));
        ret = -1;
    }
    if (ret == 0 && n > 0) {
        ret = store_exec(s->db, "BEGIN IMMEDIATE", err, errlen);
        for (size_t i = 0; ret == 0 && i < n; i++)
            ret = abort_run(s, dead[i].id, dead[i].pid, err, errlen);
        if (ret == 0)
            ret = store_exec(s->db, "COMMIT", err, errlen);
        else
            store_exec(s->db, "ROLLBACK", NULL, 0);
    }
    free(dead);
    return ret;
}
