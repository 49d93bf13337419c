/* pool.h: a fixed set of worker threads that run one parallel-for at a time.
 *
 * They are the only compute threads of a forward pass: OpenBLAS runs
 * single-threaded inside the pool's tasks (qgemm.c), so the cores are
 * never oversubscribed.
 */
#ifndef POOL_H
#define POOL_H

#include <stddef.h>

typedef struct pool pool;

/* fn(arg, i) is called once for every i in [0, n). */
typedef void (*pool_fn)(void *arg, int i);

/* A pool of `threads` threads in all, the caller's included (threads - 1
 * workers). threads <= 1 makes a pool that runs everything inline. */
int pool_create(pool **out, int threads, char *err, size_t errlen);
void pool_free(pool *p);
int pool_threads(const pool *p);

/* Runs fn for i in [0, n), spread over the threads; returns when all are
 * done. Not reentrant: one pool_run at a time per pool. */
void pool_run(pool *p, int n, pool_fn fn, void *arg);

#endif
