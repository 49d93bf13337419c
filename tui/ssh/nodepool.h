/* nodepool.h: node operations off the caller's thread, for a UI loop that
 * must never block on the network.
 *
 * Each node gets a worker thread (started at its first job) that owns the
 * node's SSH connection: opened at the first job, reused by the next ones,
 * opened again when it has dropped. Jobs of one node run in the order they
 * were submitted; nodes run in parallel. A job whose command could not
 * even start because the reused connection had died is run once more on a
 * fresh connection. A local node's jobs run on this machine, on its
 * worker too, with no connection (localexec.h).
 *
 * Results come back as events on a queue that the loop drains with
 * nodepool_next whenever nodepool_fd is readable (put it in poll() or
 * zmq_poll()). Streaming jobs (logs, exec) send their output as OUTPUT
 * events while they run; every job ends with exactly one DONE event. */
#ifndef NODEPOOL_H
#define NODEPOOL_H

#include <stddef.h>

#include "nodectl.h"
#include "tui/core/cluster.h"

typedef struct nodepool nodepool;

typedef struct nodepool_opts {
    int timeout_ms;         /* SSH connect timeout; <= 0 means 5000 */
    int accept_new;         /* 1: accept new host keys on every node (--accept-new) */
    const char *ssh_config; /* NULL: ~/.ssh/config */
} nodepool_opts;

typedef enum nodepool_kind {
    NODEPOOL_OUTPUT, /* a chunk of a logs or exec job's output */
    NODEPOOL_DONE,   /* the job ended; result says how */
} nodepool_kind;

typedef struct nodepool_event {
    long job;
    int node; /* index in the cluster's nodes */
    nodepool_kind kind;
    int fd;     /* OUTPUT: 1 stdout, 2 stderr */
    char *data; /* OUTPUT: owned by the event */
    size_t len;
    nodectl_result result; /* DONE */
} nodepool_event;

/* The pool keeps its own copy of the cluster's nodes. */
int nodepool_new(const struct cluster *c, const nodepool_opts *o, nodepool **out, char *err,
                 size_t errlen);

/* Cancels every job, waits for the workers (one still connecting ends at
 * its connect timeout) and closes the connections. */
void nodepool_free(nodepool *p);

/* Readable while events wait. */
int nodepool_fd(const nodepool *p);

/* Takes the nodes of c (the same nodes, in the same order, e.g. the file
 * rewritten with other layers) for the jobs asked for from now on; a job
 * runs with the node as it was when asked for. -1 when c has other nodes. */
int nodepool_update(nodepool *p, const struct cluster *c);

/* Queues `req` for node index `node`. Returns the job id (> 0), or -1 with
 * err filled. req->command is copied. */
long nodepool_submit(nodepool *p, int node, const nodectl_req *req, char *err, size_t errlen);

/* Stops a job: one still queued ends at once, a running one at its next
 * poll (a follow or a command stops; a start or stop script runs to its
 * end, so the node is never left half-changed). Its DONE event says
 * cancelled. Unknown or finished ids are ignored. */
void nodepool_cancel(nodepool *p, long job);

/* Takes the oldest event: 1 when *ev was filled (release it with
 * nodepool_event_free), 0 when none waits. Never blocks. */
int nodepool_next(nodepool *p, nodepool_event *ev);

void nodepool_event_free(nodepool_event *ev);

#endif
