/* runs.c: recording a run: the calls producers make turn into records on
 * the queue (queue.c); the writer thread turns them into SQL (apply.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"

static const char *const mode_names[STORE_MODE_COUNT] = {"growth", "fixed", "soak", "sweep",
                                                         "quality"};
static const char *const status_names[] = {"running", "completed", "failed", "aborted"};
static const char *const phase_names[] = {"prefill", "decode"};

const char *store_mode_name(store_mode m)
{
    return (unsigned)m < STORE_MODE_COUNT ? mode_names[m] : NULL;
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

/* ---- producer side ---- */

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
        store_errf(err, errlen, "run mode %d is not one of growth, fixed, soak, sweep, quality",
                   (int)info->mode);
        return -1;
    }
    if (valid_object(info->params, "run params", err, errlen) != 0 ||
        valid_object(info->cluster, "run cluster", err, errlen) != 0)
        return -1;
    if (store_reserve_take(s, err, errlen) != 0)
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
                      " owner_pid, owner_start, engine, engine_version)"
                      " VALUES (?,?,?,'running',?,?,?,?,?,?,?)",
                      &st, err, errlen) == 0) {
        sqlite3_bind_text(st, 1, info->name ? info->name : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, info->notes ? info->notes : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, store_mode_name(info->mode), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, store_now());
        sqlite3_bind_text(st, 5, info->params ? info->params : "{}", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, info->cluster ? info->cluster : "{}", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, getpid());
        sqlite3_bind_int64(st, 8, store_process_start(getpid()));
        sqlite3_bind_text(st, 9, info->engine ? info->engine : "inferd", -1, SQLITE_STATIC);
        if (info->engine_version)
            sqlite3_bind_text(st, 10, info->engine_version, -1, SQLITE_STATIC);
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

int store_leg_start(store *s, int64_t run, int leg, const store_leg_info *info)
{
    if (leg < 0 || info->concurrency < 1)
        return store_refuse(s, run);
    store_rec r = {.kind = REC_LEG_BEGIN, .run = run, .t = store_now()};
    r.u.leg.leg = leg;
    r.u.leg.info = *info;
    return store_queue_push(s, &r, 1);
}

int store_leg_end(store *s, int64_t run, int leg, store_status status)
{
    if (!store_status_name(status) || leg < 0)
        return store_refuse(s, run);
    store_rec r = {.kind = REC_LEG_END, .run = run, .t = store_now()};
    r.u.end.leg = leg;
    r.u.end.status = status;
    return store_queue_push(s, &r, 1);
}

int store_run_end(store *s, int64_t run, store_status status, const char *failure)
{
    if (!store_status_name(status) || status == STORE_RUNNING)
        return store_refuse(s, run);
    store_rec r = {.kind = REC_RUN_END, .run = run, .t = store_now()};
    int oom = 0;
    r.u.end.leg = -1;
    r.u.end.status = status;
    r.u.end.failure = dup_or_null(failure, &oom);
    if (oom) {
        store_rec_release(&r);
        return store_refuse(s, run);
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
        return store_refuse(s, q->run);
    }
    return store_queue_push(s, &r, 1);
}

int store_step_add(store *s, const store_step *st)
{
    size_t len = st->node ? strlen(st->node) : 0;
    /* A step belongs to a run (the writer keeps the run's step sequence):
     * one with run 0 would have nowhere to go. */
    if (st->run <= 0 || len == 0 || len >= STORE_NODE_MAX || !store_phase_name(st->phase))
        return store_refuse(s, st->run);
    store_rec r = {.kind = REC_STEP, .run = st->run, .t = st->t > 0 ? st->t : store_now()};
    r.u.step.v = *st;
    r.u.step.v.node = NULL;
    memcpy(r.u.step.node, st->node, len + 1);
    return store_queue_push(s, &r, 0);
}

int store_event_add(store *s, const store_event *e)
{
    if (!e->kind || !e->kind[0] || valid_object(e->detail, "event detail", NULL, 0) != 0)
        return store_refuse(s, e->run);
    store_rec r = {.kind = REC_EVENT, .run = e->run, .t = e->t > 0 ? e->t : store_now()};
    int oom = 0;
    r.u.ev.node = dup_or_null(e->node, &oom);
    r.u.ev.kind = dup_or_null(e->kind, &oom);
    r.u.ev.detail = dup_or_null(e->detail ? e->detail : "{}", &oom);
    if (oom) {
        store_rec_release(&r);
        return store_refuse(s, e->run);
    }
    return store_queue_push(s, &r, 0);
}
