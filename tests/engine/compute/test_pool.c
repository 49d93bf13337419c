/* test_pool.c: the thread pool runs every index exactly once, run after
 * run, and a pool of one thread runs inline. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "engine/compute/pool.h"

#define MAX_N 1000

typedef struct counts {
    atomic_int hits[MAX_N + 1];
} counts;

static void count_index(void *arg, int i)
{
    counts *c = arg;
    atomic_fetch_add(&c->hits[i], 1);
}

/* Runs n indices and checks that each of [0, n] ran (n excluded) as
 * often as it should. */
static void check_once(pool *p, int n)
{
    static counts c;
    for (int i = 0; i <= n; i++)
        atomic_init(&c.hits[i], 0);
    pool_run(p, n, count_index, &c);
    for (int i = 0; i <= n; i++)
        cr_assert_eq(atomic_load(&c.hits[i]), i < n ? 1 : 0, "n %d: index %d ran %d times", n, i,
                     atomic_load(&c.hits[i]));
}

Test(pool, every_index_once)
{
    for (int threads = 2; threads <= 4; threads++) {
        pool *p;
        char err[256];
        cr_assert_eq(pool_create(&p, threads, err, sizeof err), 0, "%s", err);
        cr_assert_eq(pool_threads(p), threads);
        check_once(p, MAX_N);
        check_once(p, 0);
        check_once(p, 1);
        check_once(p, threads - 1);
        pool_free(p);
    }
}

Test(pool, many_runs)
{
    pool *p;
    char err[256];
    cr_assert_eq(pool_create(&p, 2, err, sizeof err), 0, "%s", err);
    /* Short runs back to back exercise the sleep/wake handshake. */
    for (int run = 0; run < 3000; run++)
        check_once(p, run % 9);
    pool_free(p);
}

typedef struct inline_record {
    pthread_t caller;
    int order[16];
    int count;
    int foreign;
} inline_record;

static void record_index(void *arg, int i)
{
    inline_record *r = arg;
    if (!pthread_equal(pthread_self(), r->caller))
        r->foreign++;
    r->order[r->count++] = i;
}

Test(pool, inline_single_thread)
{
    for (int threads = 0; threads <= 1; threads++) {
        pool *p;
        char err[256];
        cr_assert_eq(pool_create(&p, threads, err, sizeof err), 0, "%s", err);
        cr_assert_eq(pool_threads(p), 1);
        inline_record r = {.caller = pthread_self()};
        pool_run(p, 16, record_index, &r);
        cr_assert_eq(r.count, 16);
        cr_assert_eq(r.foreign, 0, "inline pool ran tasks on another thread");
        for (int i = 0; i < 16; i++)
            cr_assert_eq(r.order[i], i);
        pool_free(p);
    }
}
