/* writer.c: the thread that drains the queue (queue.c).
 *
 * The writer takes every row queued so far as one batch, applies it in one
 * transaction on its own connection (apply.c), and only then frees the
 * slots: the rows stay in place while being written, so nothing is copied
 * twice. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

static void note_error(store *s, const char *what, int rc)
{
    pthread_mutex_lock(&s->lock);
    if (!s->werr[0] && (rc & 0xff) == SQLITE_FULL)
        store_errf(s->werr, sizeof s->werr, "the disk holding %s is full (%s: %s)", s->path, what,
                   sqlite3_errmsg(s->wdb));
    else if (!s->werr[0])
        store_errf(s->werr, sizeof s->werr, "writing to %s: %s: %s", s->path, what,
                   sqlite3_errmsg(s->wdb));
    pthread_mutex_unlock(&s->lock);
}

/* What a full disk still gets written, from the reserve: how runs ended
 * (their events too: the runner's result is one). */
static int ends_a_run(const store_rec *r)
{
    return r->kind == REC_EVENT || r->kind == REC_LEG_END || r->kind == REC_RUN_END;
}

static void rollback(store *s)
{
    sqlite3_step(s->ws.rollback);
    sqlite3_reset(s->ws.rollback);
}

/* Marks row r lost and charges it to its run, so that the count commits
 * with the batch. */
static void lose(store *s, store_rec *r)
{
    r->lost = 1;
    pthread_mutex_lock(&s->lock);
    store_charge_run(s, r->run, 1);
    pthread_mutex_unlock(&s->lock);
}

/* One transaction over rows [head, head + n) of the ring (ends_only: the
 * rows ends_a_run keeps; the others are lost). SQLITE_DONE when it
 * committed; else the failing code, with everything it changed undone
 * (rows' lost marks, charges, ended runs) so that it can be tried again. */
static int try_batch(store *s, size_t head, size_t n, int ends_only)
{
    int rc = sqlite3_step(s->ws.begin);
    sqlite3_reset(s->ws.begin);
    if (rc != SQLITE_DONE) {
        note_error(s, "BEGIN", rc);
        return rc;
    }
    for (size_t i = 0; i < n;) {
        /* Runs of steps go in chunks; a chunk that fails is retried row by
         * row below, so that one bad row costs only itself. */
        store_rec *chunk[STORE_STEP_CHUNK];
        size_t k = 0;
        while (!ends_only && k < STORE_STEP_CHUNK && i + k < n &&
               (chunk[k] = &s->ring[(head + i + k) % s->ring_size])->kind == REC_STEP)
            k++;
        if (k == STORE_STEP_CHUNK && store_steps_apply(s, chunk) == SQLITE_DONE) {
            i += k;
            continue;
        }
        store_rec *r = &s->ring[(head + i++) % s->ring_size];
        if (ends_only && !ends_a_run(r)) {
            lose(s, r);
            continue;
        }
        rc = store_rec_apply(s, r);
        if (rc == SQLITE_DONE)
            continue;
        note_error(s, "a row", rc);
        /* Busy, I/O, full disk: the batch cannot go on (and each row would
         * wait the busy timeout again). */
        if ((rc & 0xff) != SQLITE_CONSTRAINT && rc != SQLITE_MISUSE)
            break;
        /* A constraint: sqlite undid just that statement and the batch goes
         * on. */
        lose(s, r);
        rc = SQLITE_DONE;
    }
    if (rc == SQLITE_DONE && store_progress_save(s) != 0) {
        rc = sqlite3_errcode(s->wdb);
        note_error(s, "run progress", rc);
    }
    if (rc == SQLITE_DONE) {
        rc = sqlite3_step(s->ws.commit);
        sqlite3_reset(s->ws.commit);
        if (rc != SQLITE_DONE)
            note_error(s, "COMMIT", rc);
    }
    if (rc == SQLITE_DONE)
        return rc;
    rollback(s);
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        store_rec *r = &s->ring[(head + i) % s->ring_size];
        if (r->lost)
            store_charge_run(s, r->run, -1);
        r->lost = 0;
    }
    /* The run ends and the progress rows went with the transaction. */
    for (store_active *a = s->active; a; a = a->next) {
        a->ended = 0;
        a->saved_dropped = -1;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Applies rows [head, head + n) of the ring in one transaction. Returns how
 * many were committed; the others are charged to their run. When the disk
 * is full, the reserve is freed and the ends of runs among the rows are
 * written from it. */
static size_t write_batch(store *s, size_t head, size_t n)
{
    pthread_mutex_lock(&s->lock);
    int ends_only = s->disk_full;
    pthread_mutex_unlock(&s->lock);
    int rc = try_batch(s, head, n, ends_only);
    if ((rc & 0xff) == SQLITE_FULL && !ends_only && store_reserve_release(s))
        rc = try_batch(s, head, n, ends_only = 1);

    size_t ok = 0;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        store_rec *r = &s->ring[(head + i) % s->ring_size];
        if (rc == SQLITE_DONE && !r->lost)
            ok++;
        else if (rc != SQLITE_DONE)
            store_charge_run(s, r->run, 1);
    }
    /* Runs whose end was applied need no state any more. */
    s->wlast = NULL;
    for (store_active **p = &s->active; *p;) {
        if ((*p)->ended) {
            store_active *dead = *p;
            *p = dead->next;
            free(dead);
        } else {
            p = &(*p)->next;
        }
    }
    pthread_mutex_unlock(&s->lock);

    for (size_t i = 0; i < n; i++)
        store_rec_release(&s->ring[(head + i) % s->ring_size]);
    return ok;
}

static void *writer_main(void *arg)
{
    store *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->count == 0 && !s->stop)
            pthread_cond_wait(&s->nonempty, &s->lock);
        if (s->count == 0)
            break;
        size_t head = s->head, n = s->count;
        pthread_mutex_unlock(&s->lock);
        size_t ok = write_batch(s, head, n);
        pthread_mutex_lock(&s->lock);
        s->head = (head + n) % s->ring_size;
        s->count -= n;
        s->written += ok;
        s->dropped += n - ok;
        s->done += n;
        pthread_cond_broadcast(&s->drained);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int store_writer_start(store *s, char *err, size_t errlen)
{
    s->ring_size = s->capacity + STORE_CONTROL_RESERVE;
    s->ring = calloc(s->ring_size, sizeof *s->ring);
    if (!s->ring) {
        store_errf(err, errlen, "out of memory for a writer queue of %zu rows", s->ring_size);
        return -1;
    }
    if (store_wstmts_prepare(s->wdb, &s->ws, err, errlen) != 0)
        return -1;
    if (pthread_create(&s->thread, NULL, writer_main, s) != 0) {
        store_errf(err, errlen, "cannot start the writer thread");
        return -1;
    }
    s->thread_started = 1;
    return 0;
}

void store_writer_stop(store *s)
{
    if (!s->thread_started)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_signal(&s->nonempty);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->thread_started = 0;
}

int store_flush(store *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    uint64_t target = s->queued;
    while (s->done < target)
        pthread_cond_wait(&s->drained, &s->lock);
    int rc = 0;
    if (s->werr[0]) {
        store_errf(err, errlen, "%s", s->werr);
        s->werr[0] = '\0';
        rc = -1;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int store_write_error(store *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    int failed = s->werr[0] != '\0';
    if (failed)
        store_errf(err, errlen, "%s", s->werr);
    pthread_mutex_unlock(&s->lock);
    return failed;
}

void store_stats_get(store *s, store_stats *st)
{
    pthread_mutex_lock(&s->lock);
    st->queued = s->queued;
    st->written = s->written;
    st->dropped = s->dropped;
    st->pending = s->count;
    st->capacity = s->capacity;
    pthread_mutex_unlock(&s->lock);
}
