/* nodepool.c: a worker thread per node, one lock for the pool, and an
 * eventfd that is readable exactly while the event queue is not empty. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "nodepool.h"

typedef struct job {
    long id;
    nodectl_req req;
    char *command;            /* req.command points here */
    char *start;              /* req.start points here */
    struct cluster_node node; /* the node as it was when the job was asked for */
    atomic_int cancel;
    struct job *next;
} job;

typedef struct event_node {
    nodepool_event ev;
    struct event_node *next;
} event_node;

typedef struct worker {
    nodepool *pool;
    int node;
    int started;
    pthread_t thread;
    pthread_cond_t wake;
    job *head, *tail; /* queued jobs */
    job *current;     /* the job running, NULL when idle */
    sshconn *conn;    /* touched by the worker thread only */
} worker;

struct nodepool {
    pthread_mutex_t mu;
    int stopping;
    long next_id;
    int efd;
    event_node *ev_head, *ev_tail;
    nodepool_opts opts;
    struct cluster_node *nodes;
    int n_nodes;
    worker *workers;
};

static void job_free(job *j)
{
    if (!j)
        return;
    free(j->command);
    free(j->start);
    free(j);
}

/* ---- events ------------------------------------------------------------- */

/* Called with the lock held. The eventfd counter is non-zero while the
 * queue is not empty: written on each push, drained when the queue
 * empties. */
static void post_locked(nodepool *p, event_node *e)
{
    e->next = NULL;
    if (p->ev_tail)
        p->ev_tail->next = e;
    else
        p->ev_head = e;
    p->ev_tail = e;
    uint64_t one = 1;
    if (write(p->efd, &one, sizeof one) != sizeof one)
        return; /* the counter is already non-zero: the fd stays readable */
}

static void post(nodepool *p, event_node *e)
{
    pthread_mutex_lock(&p->mu);
    post_locked(p, e);
    pthread_mutex_unlock(&p->mu);
}

/* A DONE event for a job that never ran (cancelled while queued); called
 * with the lock held. Out of memory drops it: the pool is going down or
 * the process is about to fail anyway, and nothing may block here. */
static void post_cancelled_locked(nodepool *p, int node, const job *j)
{
    event_node *e = calloc(1, sizeof *e);
    if (!e)
        return;
    e->ev.job = j->id;
    e->ev.node = node;
    e->ev.kind = NODEPOOL_DONE;
    e->ev.result.ok = 1;
    e->ev.result.cancelled = 1;
    e->ev.result.exit_status = -1;
    snprintf(e->ev.result.detail, sizeof e->ev.result.detail, "cancelled before it ran");
    post_locked(p, e);
}

int nodepool_next(nodepool *p, nodepool_event *ev)
{
    pthread_mutex_lock(&p->mu);
    event_node *e = p->ev_head;
    if (e) {
        p->ev_head = e->next;
        if (!p->ev_head) {
            p->ev_tail = NULL;
            uint64_t n;
            if (read(p->efd, &n, sizeof n) != sizeof n)
                n = 0; /* EAGAIN: nothing to drain */
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (!e)
        return 0;
    *ev = e->ev;
    free(e);
    return 1;
}

void nodepool_event_free(nodepool_event *ev)
{
    free(ev->data);
    ev->data = NULL;
}

int nodepool_fd(const nodepool *p)
{
    return p->efd;
}

/* ---- the worker --------------------------------------------------------- */

typedef struct job_io {
    nodepool *pool;
    int node;
    job *j;
} job_io;

static int job_output(void *ctx, int fd, const char *data, size_t n)
{
    job_io *io = ctx;
    event_node *e = calloc(1, sizeof *e);
    char *copy = malloc(n);
    if (!e || !copy) {
        free(e);
        free(copy);
        return 1; /* out of memory: stop the stream rather than lose output silently */
    }
    memcpy(copy, data, n);
    e->ev = (nodepool_event){.job = io->j->id,
                             .node = io->node,
                             .kind = NODEPOOL_OUTPUT,
                             .fd = fd,
                             .data = copy,
                             .len = n};
    post(io->pool, e);
    return 0;
}

static int job_cancelled(void *ctx)
{
    job_io *io = ctx;
    return atomic_load(&io->j->cancel);
}

static void connect_node(worker *w, const struct cluster_node *n, nodectl_result *r)
{
    const nodepool *p = w->pool;
    nodectl_connect(n, p->opts.ssh_config, p->opts.accept_new, p->opts.timeout_ms, &w->conn,
                    r->error, sizeof r->error);
}

/* Runs a job on the node's connection, opening it first when there is
 * none, and once more on a fresh connection when a reused one turns out
 * to have died before the command started. */
static void run_job(worker *w, job *j, nodectl_result *r)
{
    const struct cluster_node *n = &j->node;
    job_io ctx = {.pool = w->pool, .node = w->node, .j = j};
    /* nodectl_run lets a cancel cut short only what may be: a stream, a
     * wait for readiness, never a start or stop script. */
    sshconn_io io = {.output = job_output, .cancelled = job_cancelled, .ctx = &ctx};
    if (nodectl_reach(n) == NODECTL_LOCAL) {
        nodectl_run(NULL, n, &j->req, &io, r);
        return;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int fresh = 0;
        if (w->conn && !sshconn_alive(w->conn)) {
            sshconn_close(w->conn);
            w->conn = NULL;
        }
        if (!w->conn) {
            memset(r, 0, sizeof *r);
            r->exit_status = -1;
            connect_node(w, n, r);
            if (!w->conn)
                return;
            fresh = 1;
        }
        int rc = nodectl_run(w->conn, n, &j->req, &io, r);
        if (rc != NODECTL_NOT_RUN)
            return;
        sshconn_close(w->conn);
        w->conn = NULL;
        if (fresh)
            return;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    nodepool *p = w->pool;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && !w->head)
            pthread_cond_wait(&w->wake, &p->mu);
        if (p->stopping)
            break;
        job *j = w->head;
        w->head = j->next;
        if (!w->head)
            w->tail = NULL;
        w->current = j;
        pthread_mutex_unlock(&p->mu);

        /* Without memory for its DONE event the job is not run: a result
         * nobody could see must not change a node. */
        event_node *e = calloc(1, sizeof *e);
        if (e) {
            run_job(w, j, &e->ev.result);
            e->ev.job = j->id;
            e->ev.node = w->node;
            e->ev.kind = NODEPOOL_DONE;
        }

        pthread_mutex_lock(&p->mu);
        w->current = NULL;
        if (e)
            post_locked(p, e);
        job_free(j);
    }
    pthread_mutex_unlock(&p->mu);
    sshconn_close(w->conn);
    w->conn = NULL;
    return NULL;
}

/* ---- the pool ----------------------------------------------------------- */

int nodepool_new(const struct cluster *c, const nodepool_opts *o, nodepool **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    nodepool *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory for the node pool");
        return -1;
    }
    p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    p->nodes = calloc((size_t)c->n_nodes, sizeof *p->nodes);
    p->workers = calloc((size_t)c->n_nodes, sizeof *p->workers);
    if (p->efd < 0 || !p->nodes || !p->workers) {
        snprintf(err, errlen, "node pool: %s", p->efd < 0 ? strerror(errno) : "out of memory");
        if (p->efd >= 0)
            close(p->efd);
        free(p->nodes);
        free(p->workers);
        free(p);
        return -1;
    }
    /* libssh's global state, set up before any worker uses it. */
    ssh_init();
    pthread_mutex_init(&p->mu, NULL);
    p->opts = *o;
    p->n_nodes = c->n_nodes;
    p->next_id = 1;
    memcpy(p->nodes, c->nodes, (size_t)c->n_nodes * sizeof *p->nodes);
    for (int i = 0; i < p->n_nodes; i++) {
        p->workers[i].pool = p;
        p->workers[i].node = i;
        pthread_cond_init(&p->workers[i].wake, NULL);
    }
    *out = p;
    return 0;
}

long nodepool_submit(nodepool *p, int node, const nodectl_req *req, char *err, size_t errlen)
{
    if (node < 0 || node >= p->n_nodes) {
        snprintf(err, errlen, "no node %d (the cluster has %d)", node, p->n_nodes);
        return -1;
    }
    job *j = calloc(1, sizeof *j);
    if (!j || (req->command && !(j->command = strdup(req->command))) ||
        (req->start && !(j->start = strdup(req->start)))) {
        job_free(j);
        snprintf(err, errlen, "out of memory for a job");
        return -1;
    }
    j->req = *req;
    j->req.command = j->command;
    j->req.start = j->start;
    worker *w = &p->workers[node];
    pthread_mutex_lock(&p->mu);
    j->node = p->nodes[node];
    if (!w->started) {
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            pthread_mutex_unlock(&p->mu);
            snprintf(err, errlen, "cannot start the worker of node %s: %s", p->nodes[node].name,
                     strerror(rc));
            job_free(j);
            return -1;
        }
        w->started = 1;
    }
    j->id = p->next_id++;
    if (w->tail)
        w->tail->next = j;
    else
        w->head = j;
    w->tail = j;
    long id = j->id;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&p->mu);
    return id;
}

int nodepool_update(nodepool *p, const struct cluster *c)
{
    if (c->n_nodes != p->n_nodes)
        return -1;
    for (int i = 0; i < c->n_nodes; i++)
        if (strcmp(c->nodes[i].name, p->nodes[i].name) != 0)
            return -1;
    pthread_mutex_lock(&p->mu);
    memcpy(p->nodes, c->nodes, (size_t)c->n_nodes * sizeof *p->nodes);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void nodepool_cancel(nodepool *p, long id)
{
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n_nodes; i++) {
        worker *w = &p->workers[i];
        if (w->current && w->current->id == id)
            atomic_store(&w->current->cancel, 1);
        for (job **pj = &w->head, *prev = NULL; *pj; prev = *pj, pj = &(*pj)->next) {
            if ((*pj)->id != id)
                continue;
            job *j = *pj;
            *pj = j->next;
            if (w->tail == j)
                w->tail = prev;
            post_cancelled_locked(p, i, j);
            job_free(j);
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
}

void nodepool_free(nodepool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    for (int i = 0; i < p->n_nodes; i++) {
        worker *w = &p->workers[i];
        if (w->current)
            atomic_store(&w->current->cancel, 1);
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_nodes; i++) {
        worker *w = &p->workers[i];
        if (w->started)
            pthread_join(w->thread, NULL);
        while (w->head) {
            job *j = w->head;
            w->head = j->next;
            job_free(j);
        }
        pthread_cond_destroy(&w->wake);
    }
    nodepool_event ev;
    while (nodepool_next(p, &ev))
        nodepool_event_free(&ev);
    pthread_mutex_destroy(&p->mu);
    close(p->efd);
    free(p->nodes);
    free(p->workers);
    free(p);
    ssh_finalize();
}
