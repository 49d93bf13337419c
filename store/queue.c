/* queue.c: the bounded queue of records between the recording calls
 * (runs.c) and the writer thread (writer.c), and the runs this handle has
 * active. Producers copy a row into a ring under a mutex and return; they
 * never wait for the disk. A full ring drops the row and counts it against
 * its run. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

store_active *store_active_find(store *s, int64_t run)
{
    for (store_active *a = s->active; a; a = a->next)
        if (a->id == run)
            return a;
    return NULL;
}

/* A row that could not even be built is still a dropped row, and a loss
 * of its run while the run is going. */
int store_refuse(store *s, int64_t run)
{
    pthread_mutex_lock(&s->lock);
    s->dropped++;
    store_active *a = store_active_find(s, run);
    if (a && !a->closing)
        a->dropped++;
    pthread_mutex_unlock(&s->lock);
    return -1;
}

void store_quality_free(store_quality *q)
{
    if (!q)
        return;
    free(q->text_name);
    free(q->model);
    free(q->buckets);
    q->text_name = q->model = NULL;
    q->buckets = NULL;
    q->n_buckets = 0;
}

void store_quality_release(store_quality *q)
{
    store_quality_free(q);
    free(q);
}

void store_rec_release(store_rec *r)
{
    switch (r->kind) {
    case REC_REQUEST:
        free((char *)r->u.req.session);
        free((char *)r->u.req.error_code);
        free((char *)r->u.req.error_message);
        break;
    case REC_EVENT:
        free(r->u.ev.node);
        free(r->u.ev.kind);
        free(r->u.ev.detail);
        break;
    case REC_RUN_END:
        free(r->u.end.failure);
        break;
    case REC_QUALITY:
        store_quality_release(r->u.qual);
        break;
    default:
        break;
    }
}

void store_charge_run(store *s, int64_t run, int64_t n)
{
    store_active *a = run ? store_active_find(s, run) : NULL;
    if (a)
        a->dropped += n;
}

int store_queue_push(store *s, store_rec *r, int control)
{
    pthread_mutex_lock(&s->lock);
    store_active *a = r->run ? store_active_find(s, r->run) : NULL;
    size_t room = s->capacity + (control ? STORE_CONTROL_RESERVE : 0);
    /* A row for a run this handle did not begin, or already ended, has no
     * seq and no owner: refuse it rather than write an orphan. */
    int orphan = r->run && (!a || a->closing);
    if (orphan || s->count >= room || s->stop) {
        /* A row of an ended run is the caller's mistake, not a loss of
         * the run: it is counted globally only. */
        s->dropped++;
        if (!orphan)
            store_charge_run(s, r->run, 1);
        pthread_mutex_unlock(&s->lock);
        store_rec_release(r);
        return -1;
    }
    if (r->kind == REC_RUN_END)
        a->closing = 1;
    s->ring[(s->head + s->count) % s->ring_size] = *r;
    s->count++;
    s->queued++;
    pthread_cond_signal(&s->nonempty);
    pthread_mutex_unlock(&s->lock);
    return 0;
}
