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
#include "tui/core/shellword.h"

/* Where each node is, for the report when a step fails. */
enum node_state { NS_OLD, NS_UNKNOWN, NS_STOPPED, NS_STARTED, NS_UP, NS_BACK };

static const char *const state_words[] = {
    [NS_OLD] = "as before (not touched)",
    [NS_UNKNOWN] = "unknown (its stop failed)",
    [NS_STOPPED] = "stopped",
    [NS_STARTED] = "started, not reporting its layers",
    [NS_UP] = "up with its new layers",
    [NS_BACK] = "up with its old layers again",
};

/* One layout to bring up: the file whose command lines start it, and the
 * range each node must report (-1: the file gives none, any will do). */
struct target {
    const struct cluster *c;
    int first[PLAN_NODES_MAX], last[PLAN_NODES_MAX];
    enum node_state up_state; /* NS_UP or NS_BACK */
};

struct apply {
    const struct cluster *nc; /* the new file */
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

/* Fills err; the caller says it, with the states, once it is done. */
static int failed(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failed(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- step 1: every node can be restarted ---- */

/* The binary and the model a start line runs: its first word and its
 * --model (the table's flag) when it names a file. */
static void start_parts(const char *start, char *bin, size_t blen, char *model, size_t mlen)
{
    const char *p = start, *from, *to, *word_start;
    bin[0] = model[0] = '\0';
    if (shellword_next(&p, bin, blen, &word_start) != 1)
        bin[0] = '\0';
    p = start;
    if (plan_flag_next(&p, opt_defs[OPT_MODEL].flag, &from, &to, model, mlen) == 0 ||
        strcmp(model, "embedded") == 0 || strncmp(model, "synth:", 6) == 0)
        model[0] = '\0';
}

/* A path for the node's shell: "~/x" as "$HOME"/'x', else quoted. */
static void put_path(FILE *f, const char *path)
{
    if (strncmp(path, "~/", 2) == 0) {
        fputs("\"$HOME\"/", f);
        nodectl_shquote(f, path + 2);
    } else {
        nodectl_shquote(f, path);
    }
}

/* Exit statuses of the check, and what each means. */
enum { CHECK_NO_BINARY = 3, CHECK_NO_VERSION = 4, CHECK_NO_MODEL = 5, CHECK_NO_START = 6 };

static char *check_command(const struct cluster_node *n)
{
    char bin[CLUSTER_PATH_MAX], model[CLUSTER_PATH_MAX];
    start_parts(n->start, bin, sizeof bin, model, sizeof model);
    char *cmd = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&cmd, &len);
    if (!f)
        return NULL;
    if (!bin[0]) {
        fprintf(f, "exit %d", CHECK_NO_START);
    } else {
        fputs("b=", f);
        put_path(f, bin);
        fprintf(f,
                "; command -v \"$b\" >/dev/null 2>&1 || exit %d; \"$b\" --version >/dev/null "
                "2>&1 || exit %d",
                CHECK_NO_BINARY, CHECK_NO_VERSION);
        if (model[0]) {
            fputs("; [ -r ", f);
            put_path(f, model);
            fprintf(f, " ] || exit %d", CHECK_NO_MODEL);
        }
    }
    if (fclose(f) != 0) {
        free(cmd);
        return NULL;
    }
    return cmd;
}

static void check_words(const struct cluster_node *n, const nodectl_result *r, char *buf,
                        size_t len)
{
    char bin[CLUSTER_PATH_MAX], model[CLUSTER_PATH_MAX];
    start_parts(n->start, bin, sizeof bin, model, sizeof model);
    if (!r->ok && r->exit_status < 0)
        snprintf(buf, len, "%s", r->error); /* SSH itself */
    else if (r->exit_status == CHECK_NO_BINARY)
        snprintf(buf, len, "its start command's binary %s is not there", bin);
    else if (r->exit_status == CHECK_NO_VERSION)
        snprintf(buf, len, "`%s --version` fails there", bin);
    else if (r->exit_status == CHECK_NO_MODEL)
        snprintf(buf, len, "its start command's model %s cannot be read there", model);
    else if (r->exit_status == CHECK_NO_START)
        snprintf(buf, len, "it has no start command: %s", "give it `start`, or `port` and `model`");
    else
        snprintf(buf, len, "%s", r->error);
}

/* Every node's SSH, and the binary and model of the line that will start
 * it, before anything is stopped. */
static int check_all(struct apply *a, nodepool *p, char *err, size_t errlen)
{
    int n = a->nc->n_nodes, nodes[PLAN_NODES_MAX], rc = 0;
    nodectl_req *reqs = calloc((size_t)n, sizeof *reqs);
    char **cmds = calloc((size_t)n, sizeof *cmds);
    nodectl_result *res = calloc((size_t)n, sizeof *res);
    for (int i = 0; reqs && cmds && res && i < n; i++) {
        nodes[i] = i;
        cmds[i] = check_command(&a->nc->nodes[i]);
        reqs[i] = (nodectl_req){.op = NODECTL_EXEC, .command = cmds[i]};
        if (!cmds[i])
            rc = -1;
    }
    if (!reqs || !cmds || !res || rc != 0) {
        rc = failed(err, errlen, "out of memory");
        goto done;
    }
    say(a, -1, "checking every node over SSH (inferd --version, the model) before stopping any");
    plan_ssh_each(p, reqs, nodes, n, res);
    for (int i = 0; i < n; i++) {
        if (res[i].ok)
            continue;
        char why[1200];
        check_words(&a->nc->nodes[i], &res[i], why, sizeof why);
        if (rc == 0)
            rc = failed(err, errlen, "checking %s: %s", a->nc->nodes[i].name, why);
        say(a, i, "  %s: %s", a->nc->nodes[i].name, why);
    }
done:
    for (int i = 0; cmds && i < n; i++)
        free(cmds[i]);
    free(cmds);
    free(reqs);
    free(res);
    return rc;
}

/* ---- steps 2 to 4, for the new layout and for the old ---- */

static int stop_all(struct apply *a, nodepool *p, char *err, size_t errlen)
{
    int n = a->nc->n_nodes, nodes[PLAN_NODES_MAX], rc = 0;
    nodectl_result *res = calloc((size_t)n, sizeof *res);
    if (!res)
        return failed(err, errlen, "out of memory");
    for (int i = 0; i < n; i++)
        nodes[i] = i;
    say(a, -1, "stopping every node");
    plan_ssh_run(p, NODECTL_STOP, nodes, n, res);
    for (int i = 0; i < n; i++) {
        a->st[i] = res[i].ok ? NS_STOPPED : NS_UNKNOWN;
        if (res[i].ok)
            say(a, i, "  %s: %s", a->nc->nodes[i].name, res[i].detail);
        else if (rc == 0)
            rc = failed(err, errlen, "stopping %s: %s", a->nc->nodes[i].name, res[i].error);
    }
    free(res);
    return rc;
}

/* The tail first, the head last. */
static int start_all(struct apply *a, nodepool *p, const struct target *t, char *err, size_t errlen)
{
    for (int i = t->c->n_nodes - 1; i >= 0; i--) {
        const struct cluster_node *n = &t->c->nodes[i];
        nodectl_result r;
        if (t->first[i] >= 0)
            say(a, i, "starting %s with layers %d:%d", n->name, t->first[i], t->last[i]);
        else
            say(a, i, "starting %s", n->name);
        plan_ssh_run(p, NODECTL_START, &i, 1, &r);
        if (!r.ok)
            return failed(err, errlen, "starting %s: %s", n->name, r.error);
        a->st[i] = NS_STARTED;
        say(a, i, "  %s: %s", n->name, r.detail);
    }
    return 0;
}

/* Polls the status of every node until each holds its range and all run
 * the same weights. */
static int wait_up(struct apply *a, const struct target *t, int wait_s, char *err, size_t errlen)
{
    int n = t->c->n_nodes;
    plan_seen *seen = calloc((size_t)n, sizeof *seen);
    if (!seen)
        return failed(err, errlen, "out of memory");
    say(a, -1, "waiting for every node to report its layers (up to %d s)", wait_s);
    double deadline = clock_ms() + wait_s * 1000.0;
    int ready = 0, same = 0;
    while (!(ready == n && same) && clock_ms() < deadline) {
        plan_ask_status(t->c, 1000, seen);
        ready = 0;
        same = 1;
        for (int i = 0; i < n; i++) {
            const proto_status *s = &seen[i].status;
            int mine = seen[i].up && (t->first[i] < 0 || (s->model.layer_first == t->first[i] &&
                                                          s->model.layer_last == t->last[i]));
            if (mine && a->st[i] != t->up_state)
                say(a, i, "  %s: up, layers %d:%d", t->c->nodes[i].name, s->model.layer_first,
                    s->model.layer_last);
            a->st[i] = mine ? t->up_state : NS_STARTED;
            ready += mine;
            same &=
                seen[i].up && strcmp(s->model.fingerprint, seen[0].status.model.fingerprint) == 0;
        }
        if (!(ready == n && same))
            usleep(300 * 1000);
    }
    int rc = 0;
    if (ready < n)
        rc = failed(err, errlen, "%d of %d nodes report their layers after %d s", ready, n, wait_s);
    else if (!same)
        rc = failed(err, errlen,
                    "the nodes report different model fingerprints: they do not run the same "
                    "weights");
    else
        say(a, -1, "every node runs its layers, model fingerprint %.16s...",
            seen[0].status.model.fingerprint);
    free(seen);
    return rc;
}

/* Stops every node and brings up t, tail to head. */
static int bring_up(struct apply *a, const struct target *t, const nodepool_opts *o, int wait_s,
                    char *err, size_t errlen)
{
    nodepool *p;
    int rc = nodepool_new(t->c, o, &p, err, errlen);
    if (rc == 0) {
        rc = stop_all(a, p, err, errlen);
        if (rc == 0)
            rc = start_all(a, p, t, err, errlen);
        nodepool_free(p);
    }
    return rc == 0 ? wait_up(a, t, wait_s, err, errlen) : rc;
}

/* After a failed start: the old file's layout again, so that what runs is
 * what the file (left as it was) says. */
static int restore(struct apply *a, const struct cluster *c, const nodepool_opts *o, int wait_s,
                   const char *why, char *err, size_t errlen)
{
    struct target old = {.c = c, .up_state = NS_BACK};
    for (int i = 0; i < c->n_nodes; i++) {
        int given = c->nodes[i].layer_first != CLUSTER_UNSET;
        old.first[i] = given ? c->nodes[i].layer_first : -1;
        old.last[i] = given ? c->nodes[i].layer_last : -1;
    }
    say(a, -1, "apply failed: %s", why);
    say(a, -1, "restarting the old layout of %s", c->path);
    char again[1024];
    if (bring_up(a, &old, o, wait_s, again, sizeof again) != 0) {
        snprintf(err, errlen, "%s; restarting the old layout failed too: %s", why, again);
        say(a, -1, "%s", err);
        say_states(a);
        return -1;
    }
    snprintf(err, errlen, "%s; the old layout runs again and %s is as it was", why, c->path);
    say(a, -1, "the old layout runs again; %s is as it was", c->path);
    return -1;
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
    /* The new file, beside the old until the ring is up. */
    char staged[CLUSTER_PATH_MAX + 8];
    if (snprintf(staged, sizeof staged, "%s.plan", c->path) >= (int)sizeof staged) {
        snprintf(err, errlen, "%s: path too long", c->path);
        return -1;
    }
    struct cluster *nc;
    if (plan_file_write(c, first, last, staged, &nc, err, errlen) != 0)
        return -1;
    struct apply a = {.nc = nc, .say = say_fn, .ctx = ctx};
    struct target new = {.c = nc, .up_state = NS_UP};
    memcpy(new.first, first, (size_t)c->n_nodes * sizeof *first);
    memcpy(new.last, last, (size_t)c->n_nodes * sizeof *last);
    say(&a, -1, "new cluster file staged at %s", staged);
    nodepool *p;
    int rc = nodepool_new(nc, o, &p, err, errlen);
    if (rc == 0) {
        rc = check_all(&a, p, err, errlen);
        nodepool_free(p);
        if (rc != 0) {
            say(&a, -1, "apply failed: %s", err);
            say(&a, -1, "nothing was stopped: every node runs as before");
        }
    }
    int checked = rc == 0;
    if (checked && bring_up(&a, &new, o, wait_s, err, errlen) != 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", err);
        rc = restore(&a, c, o, wait_s, why, err, errlen);
    }
    if (rc != 0)
        unlink(staged);
    /* Should this fail, the new file stays where it was staged. */
    if (rc == 0) {
        char why[1024];
        if (plan_file_commit(staged, c->path, why, sizeof why) != 0) {
            snprintf(err, errlen, "the ring runs the new layout, but the file at %s is not %s: %s",
                     staged, c->path, why);
            say(&a, -1, "%s", err);
            rc = -1;
        }
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
