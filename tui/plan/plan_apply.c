/* plan_apply.c: the restart that puts a layout in place (plan_apply.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/sys/clock.h"
#include "plan_apply.h"
#include "plan_file.h"
#include "plan_gather.h"
#include "plan_int.h"

/* Where each node is, for the report when a step fails. */
enum node_state { NS_OLD, NS_UNKNOWN, NS_STOPPED, NS_STARTED, NS_UP };

static const char *const state_words[] = {
    [NS_OLD] = "as before (not touched)",
    [NS_UNKNOWN] = "unknown (its stop failed)",
    [NS_STOPPED] = "stopped",
    [NS_STARTED] = "started, not reporting its new layers",
    [NS_UP] = "up with its new layers",
};

struct apply {
    const struct cluster *nc; /* the new file */
    const int *first, *last;
    enum node_state st[PLAN_NODES_MAX];
    plan_say_fn say;
    void *ctx;
};

static void say(const struct apply *a, int node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const struct apply *a, int node, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (a->say)
        a->say(a->ctx, node, line);
}

static void say_states(const struct apply *a)
{
    say(a, -1, "where the nodes are now:");
    for (int i = 0; i < a->nc->n_nodes; i++)
        say(a, i, "  %s: %s", a->nc->nodes[i].name, state_words[a->st[i]]);
}

static int fail(struct apply *a, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(struct apply *a, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    say(a, -1, "apply failed: %s", err);
    say_states(a);
    return -1;
}

/* Step 2: every node at once. */
static int stop_all(struct apply *a, nodepool *p, char *err, size_t errlen)
{
    int n = a->nc->n_nodes, nodes[PLAN_NODES_MAX], bad = -1;
    nodectl_result *res = calloc((size_t)n, sizeof *res);
    if (!res)
        return fail(a, err, errlen, "out of memory");
    for (int i = 0; i < n; i++)
        nodes[i] = i;
    say(a, -1, "stopping every node");
    plan_ssh_run(p, NODECTL_STOP, nodes, n, res);
    for (int i = 0; i < n; i++) {
        a->st[i] = res[i].ok ? NS_STOPPED : NS_UNKNOWN;
        if (res[i].ok)
            say(a, i, "  %s: %s", a->nc->nodes[i].name, res[i].detail);
        else if (bad < 0)
            bad = i;
    }
    int rc = 0;
    if (bad >= 0)
        rc = fail(a, err, errlen, "stopping %s: %s", a->nc->nodes[bad].name, res[bad].error);
    free(res);
    return rc;
}

/* Step 3: the tail first, the head last. */
static int start_all(struct apply *a, nodepool *p, char *err, size_t errlen)
{
    for (int i = a->nc->n_nodes - 1; i >= 0; i--) {
        const struct cluster_node *n = &a->nc->nodes[i];
        nodectl_result r;
        say(a, i, "starting %s with layers %d:%d", n->name, a->first[i], a->last[i]);
        plan_ssh_run(p, NODECTL_START, &i, 1, &r);
        if (!r.ok)
            return fail(a, err, errlen, "starting %s: %s", n->name, r.error);
        a->st[i] = NS_STARTED;
        say(a, i, "  %s: %s", n->name, r.detail);
    }
    return 0;
}

/* Step 4: polls the status of every node until each holds its new range
 * and all run the same weights. */
static int wait_up(struct apply *a, int wait_s, char *err, size_t errlen)
{
    int n = a->nc->n_nodes;
    plan_seen *seen = calloc((size_t)n, sizeof *seen);
    if (!seen)
        return fail(a, err, errlen, "out of memory");
    say(a, -1, "waiting for every node to report its new layers (up to %d s)", wait_s);
    double deadline = clock_ms() + wait_s * 1000.0;
    int ready = 0, same = 0;
    while (!(ready == n && same) && clock_ms() < deadline) {
        plan_ask_status(a->nc, 1000, seen);
        ready = 0;
        same = 1;
        for (int i = 0; i < n; i++) {
            const proto_status *s = &seen[i].status;
            int mine = seen[i].up && s->model.layer_first == a->first[i] &&
                       s->model.layer_last == a->last[i];
            if (mine && a->st[i] != NS_UP)
                say(a, i, "  %s: up, layers %d:%d", a->nc->nodes[i].name, a->first[i], a->last[i]);
            a->st[i] = mine ? NS_UP : NS_STARTED;
            ready += mine;
            same &=
                seen[i].up && strcmp(s->model.fingerprint, seen[0].status.model.fingerprint) == 0;
        }
        if (!(ready == n && same))
            usleep(300 * 1000);
    }
    int rc = 0;
    if (ready < n)
        rc = fail(a, err, errlen, "%d of %d nodes report their new layers after %d s", ready, n,
                  wait_s);
    else if (!same)
        rc = fail(a, err, errlen,
                  "the nodes report different model fingerprints: they do not "
                  "run the same weights");
    else
        say(a, -1, "every node runs its new layers, model fingerprint %.16s...",
            seen[0].status.model.fingerprint);
    free(seen);
    return rc;
}

int plan_apply(const struct cluster *c, const int *first, const int *last, const nodepool_opts *o,
               int wait_s, plan_say_fn say_fn, void *ctx, struct cluster **out, char *err,
               size_t errlen)
{
    if (c->n_nodes > PLAN_NODES_MAX) {
        snprintf(err, errlen, "%d nodes: the planner takes up to %d", c->n_nodes, PLAN_NODES_MAX);
        return -1;
    }
    for (int i = 0; i < c->n_nodes; i++)
        if (!c->nodes[i].ssh_host[0]) {
            snprintf(err, errlen,
                     "node %s has no SSH target (no `ssh` in its section): applying restarts "
                     "every node over SSH; write the plan with --write and restart the nodes "
                     "yourself",
                     c->nodes[i].name);
            return -1;
        }
    /* Step 1: the new file, beside the old until the ring is up. */
    char staged[CLUSTER_PATH_MAX + 8];
    if (snprintf(staged, sizeof staged, "%s.plan", c->path) >= (int)sizeof staged) {
        snprintf(err, errlen, "%s: path too long", c->path);
        return -1;
    }
    struct cluster *nc;
    if (plan_file_write(c, first, last, staged, &nc, err, errlen) != 0)
        return -1;
    struct apply a = {.nc = nc, .first = first, .last = last, .say = say_fn, .ctx = ctx};
    say(&a, -1, "new cluster file staged at %s", staged);
    nodepool *p;
    int rc = nodepool_new(nc, o, &p, err, errlen);
    if (rc == 0) {
        rc = stop_all(&a, p, err, errlen);
        if (rc == 0)
            rc = start_all(&a, p, err, errlen);
        nodepool_free(p);
    }
    if (rc == 0)
        rc = wait_up(&a, wait_s, err, errlen);
    if (rc != 0)
        unlink(staged);
    /* Step 5; should it fail, the new file stays where it was staged. */
    if (rc == 0 && rename(staged, c->path) != 0) {
        snprintf(err, errlen, "the ring runs the new layout, but %s cannot replace %s: %s", staged,
                 c->path, strerror(errno));
        say(&a, -1, "%s", err);
        rc = -1;
    }
    if (rc != 0) {
        cluster_free(nc);
        return -1;
    }
    say(&a, -1, "%s updated", c->path);
    snprintf(nc->path, sizeof nc->path, "%s", c->path);
    if (out)
        *out = nc;
    else
        cluster_free(nc);
    return 0;
}
