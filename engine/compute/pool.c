/* pool.c: a fixed set of worker threads that run one parallel-for at a time.
 *
 * A run publishes (fn, arg, n) under a new generation number; every
 * thread, the caller included, claims indices from a shared atomic counter
 * until none are left, so uneven tasks balance themselves.
 *
 * A decode step is some eighty short runs one after another (a matrix
 * product or an attention pass each, tens to hundreds of microseconds),
 * and waking a thread asleep on a condition variable costs tens of
 * microseconds itself: measured on 2 cores, a third of a 110M model's
 * decode step went to wake-ups. So between runs the workers spin on the
 * generation for a while (SPIN_ROUNDS, some 100 us) before sleeping, and
 * the caller spins for the last worker to leave. A worker asleep is woken
 * through the condition variable as before; the sleepers count tells the
 * caller whether any is (see wait_for_run for the ordering that makes the
 * check safe).
 */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Busy-wait rounds before a worker sleeps or the caller yields: one
 * round is a pause instruction (some 10 to 140 cycles by CPU) and a
 * load, so a few thousand rounds are on the order of 100 us. */
#define SPIN_ROUNDS 4096

struct pool {
    int threads;
    pthread_t *workers; /* threads - 1 of them */
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* a new run or shutdown, for sleeping workers */
    atomic_ulong generation; /* bumped by each run */
    atomic_int stop;
    atomic_int sleepers; /* workers inside (or about to enter) the wait on wake */
    atomic_int busy;     /* workers still inside the current run */
    pool_fn fn;
    void *arg;
    int n;
    atomic_int next; /* next index to claim */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void run_indices(pool *p)
{
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            return;
        p->fn(p->arg, i);
    }
}

/* Returns when a generation other than `seen` is published or the pool
 * stops: spinning first, then asleep. The sleeper's store to sleepers and
 * its load of generation, and pool_run's store to generation and load of
 * sleepers, are all sequentially consistent: of two such pairs at least
 * one thread sees the other's store, so either the worker sees the new
 * run and does not sleep, or pool_run sees a sleeper and wakes it. */
static void wait_for_run(pool *p, unsigned long seen)
{
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load(&p->generation) != seen || atomic_load(&p->stop))
            return;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    unsigned long seen = 0;
    for (;;) {
        wait_for_run(p, seen);
        if (atomic_load(&p->stop))
            break;
        seen = atomic_load(&p->generation);
        run_indices(p);
        atomic_fetch_sub(&p->busy, 1);
    }
    return NULL;
}

/* Wakes the workers asleep on `wake`, if any. */
static void wake_sleepers(pool *p)
{
    if (atomic_load(&p->sleepers) == 0)
        return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

/* Stops and joins the first `started` workers. */
static void stop_workers(pool *p, int started)
{
    atomic_store(&p->stop, 1);
    wake_sleepers(p);
    for (int i = 0; i < started; i++)
        pthread_join(p->workers[i], NULL);
}

int pool_create(pool **out, int threads, char *err, size_t errlen)
{
    *out = NULL;
    pool *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "pool: out of memory");
        return -1;
    }
    p->threads = threads < 1 ? 1 : threads;
    atomic_init(&p->next, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->busy, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);

    int nworkers = p->threads - 1;
    if (nworkers > 0) {
        p->workers = calloc((size_t)nworkers, sizeof *p->workers);
        if (!p->workers) {
            snprintf(err, errlen, "pool: out of memory for %d threads", p->threads);
            p->threads = 1;
            pool_free(p);
            return -1;
        }
    }
    for (int i = 0; i < nworkers; i++) {
        int rc = pthread_create(&p->workers[i], NULL, worker_main, p);
        if (rc != 0) {
            snprintf(err, errlen, "pool: cannot start thread %d of %d: %s", i + 2, p->threads,
                     strerror(rc));
            stop_workers(p, i);
            p->threads = 1; /* the workers are gone: pool_free must not join them */
            pool_free(p);
            return -1;
        }
    }
    *out = p;
    return 0;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    if (p->threads > 1)
        stop_workers(p, p->threads - 1);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

int pool_threads(const pool *p)
{
    return p->threads;
}

void pool_run(pool *p, int n, pool_fn fn, void *arg)
{
    /* Waking workers costs more than running a single task here. */
    if (p->threads <= 1 || n <= 1) {
        for (int i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    atomic_store(&p->next, 0);
    atomic_store(&p->busy, p->threads - 1);
    atomic_fetch_add(&p->generation, 1); /* publishes the fields above */
    wake_sleepers(p);

    run_indices(p);

    /* The workers finish their last tasks at about the time the caller
     * does; yield now and then in case one was descheduled. */
    for (int i = 1; atomic_load(&p->busy) > 0; i++) {
        cpu_relax();
        if (i % SPIN_ROUNDS == 0)
            sched_yield();
    }
}
