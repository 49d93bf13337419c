/* work.h: a request carried out off the server's thread.
 *
 * The server runs every connection on one event thread (epoll), so a
 * handler must never block. A request that waits on the node (a
 * completion, an embedding, a GET that needs the node's status) suspends
 * its connection and runs on a worker thread of its own; the worker hands
 * back a response and resumes the connection, whose handler then queues
 * it. A stream goes on after that: the worker reads the node's replies
 * only as fast as the HTTP client drains them, through a bounded buffer,
 * and ends the request when the client takes nothing for the stall limit.
 */
#ifndef WORK_H
#define WORK_H

#include <microhttpd.h>
#include <stdatomic.h>

#include "gen.h"

/* Bounds the workers and lets http_stop wait for them. */
typedef struct work_pool {
    pthread_mutex_t mu;
    pthread_cond_t idle; /* signalled when a worker ends */
    int active, max;
    double stall_s;             /* a stream whose client takes nothing this long ends */
    const atomic_int *stopping; /* the server stops */
} work_pool;

typedef struct work work;
typedef void (*work_fn)(work *w, void *arg);

/* Suspends c and runs fn(w, arg) on a new worker thread. -1 when the pool
 * is full or a thread cannot start (c is not suspended then). */
int work_start(work **out, work_pool *p, struct MHD_Connection *c, work_fn fn, void *arg);

/* On the worker: the response to queue (taken), then the connection
 * resumes. Only the first call counts (a later response is dropped). */
void work_answer(work *w, struct MHD_Response *r, unsigned status);

/* On the worker: answers a stream of g's events (200, text/event-stream;
 * extra headers added by the caller on the response it gets) and relays
 * them until the end, the client leaves or stalls. Frees g. Returns the
 * response for headers before relaying: call work_relay after. */
struct MHD_Response *work_stream_response(work *w, gen *g);
void work_relay(work *w);

/* The flag set when the connection is gone (for gen_env.gone), and the
 * connection's socket (to watch while suspended). */
const atomic_int *work_gone(const work *w);
int work_fd(const work *w);

/* On the server thread, when the handler runs again: the response handed
 * back (NULL: not yet, or already taken) and its status. */
struct MHD_Response *work_take(work *w, unsigned *status);

/* The connection is done with w (its request completed or failed). */
void work_release(work *w);

/* Waits until every worker has ended. */
void work_pool_drain(work_pool *p);

#endif
