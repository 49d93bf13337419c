/* work.c: requests on worker threads, streams relayed at the client's
 * pace (see work.h). */
#include "work.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_acked (glibc's lacks it) */

#include "engine/sys/clock.h"
#include "sbuf.h"

/* A stream's bytes its client has not taken, at most: past it the worker
 * stops reading the node's replies (and the node pauses the sequence).
 * Counted to the client's acknowledgments (TCP_INFO), so what the kernel
 * holds is in it, and each of a slow client's reads lets as much more
 * come from the node at once, whatever steps the socket and
 * libmicrohttpd move in: the node sees its client take replies at the
 * client's own pace, not seconds apart. */
#define RELAY_BUF_MAX 65536
/* Copied out to libmicrohttpd in blocks of this size. */
#define RELAY_BLOCK 16384
/* A stream's socket send buffer (the kernel doubles it for bookkeeping):
 * autotuning grows it to tcp_wmem's max (4 MiB), thousands of events
 * waiting in the kernel per slow connection. The bound above counts them
 * anyway; this keeps them to half of it. One stream comes at one
 * sequence's pace (hundreds of tokens a second at most, < 100 KB/s),
 * which 32 KiB in flight carries over a 300 ms round trip. */
#define RELAY_SNDBUF (RELAY_BUF_MAX / 4)
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
    /* When the client last took bytes: the peer acknowledged more of the
     * stream, or libmicrohttpd took some of buf. */
    struct timespec last_drain;
    uint64_t pushed;        /* bytes put in buf in all */
    uint64_t acked, acked0; /* the socket's bytes acknowledged: now, and when the stream began */
    int has_acked;          /* the socket tells them (TCP) */
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

/* The bytes the peer acknowledged on the socket. -1 when it does not
 * tell (not TCP) or is gone. Under mu. */
static int peer_acked(work *w, uint64_t *out)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (atomic_load(&w->gone) || w->fd < 0 ||
        getsockopt(w->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked)
        return -1;
    *out = ti.tcpi_bytes_acked;
    return 0;
}

struct MHD_Response *work_stream_response(work *w, gen *g)
{
    w->g = g;
    int sndbuf = RELAY_SNDBUF;
    pthread_mutex_lock(&w->mu);
    /* Not fatal: an uncapped buffer only holds more in the kernel. */
    if (!atomic_load(&w->gone) && w->fd >= 0)
        (void)setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    w->has_acked = peer_acked(w, &w->acked0) == 0;
    w->acked = w->acked0;
    pthread_mutex_unlock(&w->mu);
    return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, RELAY_BLOCK, relay_read, w, NULL);
}

/* Appends the bytes (or the end: n < 0) for the client and wakes its
 * connection. */
static void push(work *w, const char *s, ssize_t n)
{
    pthread_mutex_lock(&w->mu);
    if (n > 0) {
        sbuf_put(&w->buf, s, (size_t)n);
        w->pushed += (uint64_t)n;
    } else
        w->ended = 1, w->aborted = n == GEN_ABORT || w->buf.failed;
    int resume = !atomic_load(&w->gone) && take_suspended(w);
    pthread_mutex_unlock(&w->mu);
    if (resume)
        MHD_resume_connection(w->c);
}

/* Moves the stall clock when the client took bytes since the last look:
 * what the kernel says the peer acknowledged, not only when
 * libmicrohttpd last took some of buf (which it does in steps, when the
 * socket has a third of its room free). Under mu. */
static void look_at_client(work *w)
{
    uint64_t acked;
    if (!w->has_acked || peer_acked(w, &acked) != 0 || acked == w->acked)
        return;
    w->acked = acked;
    clock_gettime(CLOCK_MONOTONIC, &w->last_drain);
}

/* The stream's bytes the client has not taken: sent and not acknowledged,
 * or still in buf (the acknowledged count includes the response's head
 * and chunk framing, so it can run a little ahead). Under mu. */
static size_t in_flight(const work *w)
{
    uint64_t taken = w->acked - w->acked0;
    size_t ahead = w->has_acked && w->pushed > taken ? (size_t)(w->pushed - taken) : 0;
    return ahead > w->buf.len ? ahead : w->buf.len;
}

/* Whether the client took nothing for the stall limit. Under mu. */
static int stalled(work *w)
{
    return since_ms(&w->last_drain) >= w->pool->stall_s * 1e3;
}

/* Waits while the buffer is full. Returns 0 to go on, 1 when the
 * connection is gone or the server stops, 2 when the client stalled. */
static int wait_room(work *w)
{
    int why = 0;
    pthread_mutex_lock(&w->mu);
    look_at_client(w);
    while (in_flight(w) >= RELAY_BUF_MAX && !why) {
        if (atomic_load(&w->gone) || atomic_load(w->pool->stopping))
            why = 1;
        else if (stalled(w))
            why = 2;
        else {
            struct timespec until = clock_deadline(WAKE_MS);
            pthread_cond_timedwait(&w->drained, &w->mu, &until);
            look_at_client(w);
        }
    }
    if (atomic_load(&w->gone))
        why = 1;
    pthread_mutex_unlock(&w->mu);
    return why;
}

/* A stalled client: its request ends and the stream's last events (the
 * stall error) are queued past the bound, for a client that reads again
 * to see why it ended. They wait as long as it keeps taking bytes; once
 * it takes none for another stall limit its connection is shut, which
 * ends it on the server thread. */
static void end_stalled(work *w, char *tmp, size_t cap)
{
    gen_stall(w->g, w->pool->stall_s);
    ssize_t n;
    while ((n = gen_stream(w->g, tmp, cap)) > 0)
        push(w, tmp, n);
    push(w, NULL, n);
    pthread_mutex_lock(&w->mu);
    clock_gettime(CLOCK_MONOTONIC, &w->last_drain);
    while (!atomic_load(&w->gone) && !atomic_load(w->pool->stopping) && !stalled(w)) {
        struct timespec until = clock_deadline(WAKE_MS);
        pthread_cond_timedwait(&w->drained, &w->mu, &until);
        look_at_client(w);
    }
    if (!atomic_load(&w->gone) && w->fd >= 0)
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
