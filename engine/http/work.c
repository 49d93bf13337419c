/* work.c: requests on worker threads, streams relayed at the client's
 * pace (see work.h). */
#include "work.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "engine/sys/clock.h"
#include "sbuf.h"

/* A stream's events waiting for its client, at most: past it the worker
 * stops reading the node's replies (and the node pauses the sequence). */
#define RELAY_BUF_MAX 65536
/* Copied out to libmicrohttpd in blocks of this size. */
#define RELAY_BLOCK 16384
/* How long a stalled stream's last events get to go out before the
 * connection is shut. */
#define STALL_GRACE_MS 1000
/* How often a waiting worker looks at the stop flag. */
#define WAKE_MS 100

struct work {
    work_pool *pool;
    struct MHD_Connection *c;
    int fd; /* the connection's socket, valid while !gone (under mu) */
    work_fn fn;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t drained; /* the client took bytes, or left */
    int refs;               /* the connection's and the worker's */
    /* Under mu. */
    int suspended; /* the connection is suspended and waits for us */
    int answered;
    struct MHD_Response *resp;
    unsigned status;
    atomic_int gone; /* the connection completed: nobody reads any more */
    gen *g;
    sbuf buf;
    int ended, aborted;
    struct timespec last_drain;
};

static double since_ms(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

static void unref(work *w)
{
    pthread_mutex_lock(&w->mu);
    int left = --w->refs;
    pthread_mutex_unlock(&w->mu);
    if (left > 0)
        return;
    if (w->resp)
        MHD_destroy_response(w->resp);
    sbuf_free(&w->buf);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->drained);
    free(w);
}

/* Resumes the connection when we suspended it (under mu: the decision;
 * the call after, so that libmicrohttpd's lock is never taken inside
 * ours). */
static int take_suspended(work *w)
{
    int was = w->suspended;
    w->suspended = 0;
    return was;
}

static void *worker(void *arg)
{
    work *w = arg;
    w->fn(w, w->arg);
    pthread_mutex_lock(&w->mu);
    int unanswered = !w->answered;
    pthread_mutex_unlock(&w->mu);
    if (unanswered)
        work_answer(w, NULL, 0);
    work_pool *p = w->pool;
    unref(w);
    pthread_mutex_lock(&p->mu);
    p->active--;
    pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int work_start(work **out, work_pool *p, struct MHD_Connection *c, work_fn fn, void *arg)
{
    pthread_mutex_lock(&p->mu);
    int full = p->active >= p->max;
    if (!full)
        p->active++;
    pthread_mutex_unlock(&p->mu);
    work *w = full ? NULL : calloc(1, sizeof *w);
    if (!w)
        goto fail;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    *w = (work){.pool = p,
                .c = c,
                .fd = ci ? ci->connect_fd : -1,
                .fn = fn,
                .arg = arg,
                .refs = 2,
                .suspended = 1};
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->drained, NULL);
    clock_gettime(CLOCK_MONOTONIC, &w->last_drain);
    MHD_suspend_connection(c);
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &at, worker, w);
    pthread_attr_destroy(&at);
    if (rc == 0) {
        *out = w;
        return 0;
    }
    MHD_resume_connection(c);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->drained);
    free(w);
fail:
    if (!full) {
        pthread_mutex_lock(&p->mu);
        p->active--;
        pthread_mutex_unlock(&p->mu);
    }
    return -1;
}

void work_answer(work *w, struct MHD_Response *r, unsigned status)
{
    pthread_mutex_lock(&w->mu);
    if (w->answered) {
        pthread_mutex_unlock(&w->mu);
        if (r)
            MHD_destroy_response(r);
        return;
    }
    w->resp = r;
    w->status = status;
    w->answered = 1;
    int resume = take_suspended(w);
    pthread_mutex_unlock(&w->mu);
    if (resume)
        MHD_resume_connection(w->c);
}

struct MHD_Response *work_take(work *w, unsigned *status)
{
    pthread_mutex_lock(&w->mu);
    struct MHD_Response *r = w->resp;
    w->resp = NULL;
    *status = w->status;
    pthread_mutex_unlock(&w->mu);
    return r;
}

const atomic_int *work_gone(const work *w)
{
    return &w->gone;
}

int work_fd(const work *w)
{
    return w->fd;
}

void work_release(work *w)
{
    pthread_mutex_lock(&w->mu);
    atomic_store(&w->gone, 1);
    pthread_cond_broadcast(&w->drained);
    pthread_mutex_unlock(&w->mu);
    unref(w);
}

/* libmicrohttpd asks for the stream's next bytes (on the server thread).
 * None yet: the connection is suspended until the worker has some. */
static ssize_t relay_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    work *w = cls;
    ssize_t n = 0;
    pthread_mutex_lock(&w->mu);
    if (w->buf.len > 0) {
        n = (ssize_t)(w->buf.len < max ? w->buf.len : max);
        memcpy(out, w->buf.data, (size_t)n);
        sbuf_drop(&w->buf, (size_t)n);
        clock_gettime(CLOCK_MONOTONIC, &w->last_drain);
        pthread_cond_broadcast(&w->drained);
    } else if (w->ended) {
        n = w->aborted ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        w->suspended = 1;
        MHD_suspend_connection(w->c);
    }
    pthread_mutex_unlock(&w->mu);
    return n;
}

struct MHD_Response *work_stream_response(work *w, gen *g)
{
    w->g = g;
    return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, RELAY_BLOCK, relay_read, w, NULL);
}

/* Appends the bytes (or the end: n < 0) for the client and wakes its
 * connection. */
static void push(work *w, const char *s, ssize_t n)
{
    pthread_mutex_lock(&w->mu);
    if (n > 0)
        sbuf_put(&w->buf, s, (size_t)n);
    else
        w->ended = 1, w->aborted = n == GEN_ABORT || w->buf.failed;
    int resume = !atomic_load(&w->gone) && take_suspended(w);
    pthread_mutex_unlock(&w->mu);
    if (resume)
        MHD_resume_connection(w->c);
}

/* Waits while the buffer is full. Returns 0 to go on, 1 when the
 * connection is gone or the server stops, 2 when the client stalled. */
static int wait_room(work *w)
{
    int why = 0;
    pthread_mutex_lock(&w->mu);
    while (w->buf.len >= RELAY_BUF_MAX && !why) {
        if (atomic_load(&w->gone) || atomic_load(w->pool->stopping))
            why = 1;
        else if (since_ms(&w->last_drain) >= w->pool->stall_s * 1e3)
            why = 2;
        else {
            struct timespec until = clock_deadline(WAKE_MS);
            pthread_cond_timedwait(&w->drained, &w->mu, &until);
        }
    }
    if (atomic_load(&w->gone))
        why = 1;
    pthread_mutex_unlock(&w->mu);
    return why;
}

/* A stalled client: its last events are queued past the bound (best
 * effort), and if it takes none of them within the grace its connection
 * is shut, which ends it on the server thread. */
static void end_stalled(work *w, char *tmp, size_t cap)
{
    gen_stall(w->g, w->pool->stall_s);
    ssize_t n;
    while ((n = gen_stream(w->g, tmp, cap)) > 0)
        push(w, tmp, n);
    push(w, NULL, n);
    pthread_mutex_lock(&w->mu);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (w->buf.len > 0 && !atomic_load(&w->gone) && since_ms(&t0) < STALL_GRACE_MS) {
        struct timespec until = clock_deadline(WAKE_MS);
        pthread_cond_timedwait(&w->drained, &w->mu, &until);
    }
    if (w->buf.len > 0 && !atomic_load(&w->gone) && w->fd >= 0)
        shutdown(w->fd, SHUT_RDWR);
    pthread_mutex_unlock(&w->mu);
}

void work_relay(work *w)
{
    char *tmp = malloc(RELAY_BLOCK);
    for (;;) {
        int why = tmp ? wait_room(w) : 1;
        if (why == 2) {
            end_stalled(w, tmp, RELAY_BLOCK);
            break;
        }
        if (why == 1) {
            push(w, NULL, GEN_ABORT);
            break;
        }
        ssize_t n = gen_stream(w->g, tmp, RELAY_BLOCK);
        push(w, tmp, n);
        if (n < 0)
            break;
    }
    free(tmp);
    gen_free(w->g);
    w->g = NULL;
}

void work_pool_drain(work_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->active > 0)
        pthread_cond_wait(&p->idle, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
