/* plan_job.c: an apply on its own thread, its progress handed over under
 * a lock (plan_job.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_apply.h"
#include "plan_job.h"

#define LINE_MAX_LEN 256

struct line {
    int node;
    char text[LINE_MAX_LEN];
};

struct plan_job {
    struct cluster *console; /* the console's, updated after an apply */
    remote *remote;
    pthread_mutex_t mu;
    pthread_t thread;
    int running;  /* a thread was started and not joined yet (loop thread only) */
    int finished; /* the thread has ended (under mu) */
    int n_nodes;  /* the proposal's */
    int first[PLAN_NODES_MAX], last[PLAN_NODES_MAX];
    struct cluster *c; /* the apply's copy */
    nodepool_opts opts;
    struct cluster *applied; /* the result, NULL when it failed */
    char err[1024];
    struct line *lines; /* said, not yet moved to the events (under mu) */
    int n_lines, cap_lines;
};

plan_job *plan_job_new(struct cluster *c, remote *r)
{
    plan_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->console = c;
    j->remote = r;
    pthread_mutex_init(&j->mu, NULL);
    return j;
}

static void join(plan_job *j)
{
    pthread_join(j->thread, NULL);
    j->running = 0;
    cluster_free(j->c);
    j->c = NULL;
}

void plan_job_free(plan_job *j)
{
    if (!j)
        return;
    if (j->running)
        join(j);
    cluster_free(j->applied);
    free(j->lines);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

void plan_job_propose(plan_job *j, const int *first, const int *last, int n_nodes)
{
    if (j->running) /* its thread reads the proposal it started with */
        return;
    j->n_nodes = n_nodes < PLAN_NODES_MAX ? n_nodes : PLAN_NODES_MAX;
    memcpy(j->first, first, (size_t)j->n_nodes * sizeof *first);
    memcpy(j->last, last, (size_t)j->n_nodes * sizeof *last);
}

int plan_job_running(const plan_job *j)
{
    return j->running;
}

/* The apply's `say`, on its thread. A line that finds no memory is lost
 * from the events; the apply goes on. */
static void say(void *ctx, int node, const char *text)
{
    plan_job *j = ctx;
    pthread_mutex_lock(&j->mu);
    if (j->n_lines == j->cap_lines) {
        int cap = j->cap_lines ? 2 * j->cap_lines : 32;
        struct line *l = realloc(j->lines, (size_t)cap * sizeof *l);
        if (l) {
            j->lines = l;
            j->cap_lines = cap;
        }
    }
    if (j->n_lines < j->cap_lines) {
        struct line *l = &j->lines[j->n_lines++];
        l->node = node;
        snprintf(l->text, sizeof l->text, "%s", text);
    }
    pthread_mutex_unlock(&j->mu);
}

static void *apply_main(void *arg)
{
    plan_job *j = arg;
    struct cluster *applied = NULL;
    char err[sizeof j->err];
    int rc = plan_apply(j->c, j->first, j->last, &j->opts, (int)opt_default_int(OPT_WAIT), say, j,
                        &applied, err, sizeof err);
    pthread_mutex_lock(&j->mu);
    j->applied = rc == 0 ? applied : NULL;
    snprintf(j->err, sizeof j->err, "%s", rc == 0 ? "" : err);
    j->finished = 1;
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* A deep copy: the apply reads it on its thread while the app may change
 * its own. */
static struct cluster *copy_cluster(const struct cluster *c)
{
    struct cluster *d = malloc(sizeof *d);
    struct cluster_node *nodes = malloc((size_t)c->n_nodes * sizeof *nodes);
    if (!d || !nodes) {
        free(d);
        free(nodes);
        return NULL;
    }
    *d = *c;
    memcpy(nodes, c->nodes, (size_t)c->n_nodes * sizeof *nodes);
    d->nodes = nodes;
    return d;
}

int plan_job_start(plan_job *j, const nodepool_opts *o, char *err, size_t errlen)
{
    const struct cluster *c = j->console;
    if (j->running) {
        snprintf(err, errlen, "a plan is being applied already");
        return -1;
    }
    if (j->n_nodes != c->n_nodes) {
        snprintf(err, errlen, "no plan for these %d nodes to apply", c->n_nodes);
        return -1;
    }
    if (!(j->c = copy_cluster(c))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    j->opts = *o;
    j->finished = 0;
    int rc = pthread_create(&j->thread, NULL, apply_main, j);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the apply: %s", strerror(rc));
        cluster_free(j->c);
        j->c = NULL;
        return -1;
    }
    j->running = 1;
    return 0;
}

/* The console's nodes take the layers and command lines of the file as
 * the apply rewrote it (endpoints and names are the same). */
static void follow(plan_job *j, const struct cluster *applied)
{
    for (int i = 0; i < j->console->n_nodes && i < applied->n_nodes; i++) {
        struct cluster_node *n = &j->console->nodes[i];
        n->layer_first = applied->nodes[i].layer_first;
        n->layer_last = applied->nodes[i].layer_last;
        n->start_given = applied->nodes[i].start_given;
        memcpy(n->start, applied->nodes[i].start, sizeof n->start);
    }
    if (j->remote)
        remote_update(j->remote);
}

enum plan_job_state plan_job_tick(plan_job *j, state *st, double now)
{
    if (!j->running)
        return PLAN_JOB_IDLE;
    pthread_mutex_lock(&j->mu);
    for (int i = 0; i < j->n_lines; i++)
        state_event_add(st, j->lines[i].node, "plan", now, "%s", j->lines[i].text);
    j->n_lines = 0;
    int finished = j->finished;
    pthread_mutex_unlock(&j->mu);
    if (!finished)
        return PLAN_JOB_RUNNING;
    join(j);
    if (j->applied) {
        follow(j, j->applied);
        state_event_add(st, -1, "plan", now, "the plan is applied");
    } else {
        state_event_add(st, -1, "plan_failed", now, "%s", j->err);
    }
    cluster_free(j->applied);
    j->applied = NULL;
    return PLAN_JOB_DONE;
}
