/* pool.c: a fixed set of worker threads that run one parallel-for at a time.
 *
 * Workers sleep on a condition variable between runs. A run publishes
 * (fn, arg, n) under a new generation number; every thread, the caller
 * included, claims indices from a shared atomic counter until none are
 * left, so uneven tasks balance themselves.
 */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pool {
    int threads;
    pthread_t *workers; /* threads - 1 of them */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a new run or shutdown */
    pthread_cond_t done; /* the last worker left the run */
    unsigned long generation;
    int stop;
    int busy; /* workers still inside the current run */
    pool_fn fn;
    void *arg;
    int n;
    atomic_int next; /* next index to claim */
};

static void run_indices(pool *p)
{
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            return;
        p->fn(p->arg, i);
    }
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    unsigned long seen = 0;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);

        run_indices(p);

        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Stops and joins the first `started` workers. */
static void stop_workers(pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
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
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);

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
    pthread_cond_destroy(&p->done);
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

    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    atomic_store(&p->next, 0);
    p->busy = p->threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_indices(p);

    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
