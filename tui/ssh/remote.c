/* remote.c: the console's node control over SSH (remote.h).
 *
 * Every job submitted is remembered (its node and what it was for) until
 * its DONE event comes back, so that an outcome can be told in words. A
 * node's jobs run one after another on its connection, which shapes two
 * rules: a log follow (which never ends by itself) is cancelled before an
 * action on its node and started again after it, and facts are asked
 * before the follow starts.
 */
#include "remote.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"
#include "nodepool.h"
#include "tui/core/cluster.h"
#include "tui/core/hooks.h"
#include "tui/engine/eng_knob.h"

/* Lines of a node's log kept, and how many a follow starts with: enough
 * for a tall log pane. */
#define REMOTE_LOG_LINES 500
#define REMOTE_FOLLOW_LINES 100
/* Jobs in flight over the whole cluster. Jobs queue behind a node that is
 * slow to connect; an operator pressing keys faster than that is told to
 * wait rather than piling up work. */
#define REMOTE_JOBS_MAX 64
/* Events taken per turn of the loop: a chatty log must not starve the
 * keys. The rest keeps the pool's fd readable for the next turn. */
#define REMOTE_EVENTS_PER_TURN 256

enum job_kind { JOB_ACTION, JOB_FACTS, JOB_FOLLOW, JOB_KNOBS };

struct job {
    long id;
    int node;
    enum job_kind kind;
    enum action_kind action; /* JOB_ACTION only */
    proto_set_args want;     /* JOB_KNOBS: the set */
    char *line;              /* JOB_KNOBS: the start line it restarts with (owned) */
};

enum facts_state { FACTS_NONE, FACTS_ASKED, FACTS_KNOWN, FACTS_FAILED };

struct rnode {
    nodelog *log;
    long follow; /* the running or queued logs -f job, 0 when none */
    int fresh;   /* the follow's first output replaces what the log shows */
    enum facts_state facts_state;
    nodectl_facts facts;
    char facts_error[sizeof(((nodectl_result *)0)->error)];
    /* The start line the last set restarted the node with, which its
     * later starts and restarts use too; "" = the cluster file's. */
    char start[CLUSTER_START_MAX];
};

struct remote {
    const struct cluster *c;
    state *st;
    nodepool *pool;
    struct rnode *nodes;
    struct job jobs[REMOTE_JOBS_MAX];
    int n_jobs;
    int watched; /* the node the node view shows, -1 when none */
};

/* How each action is told in the events pane. */
struct action_words {
    nodectl_op op;
    const char *asked, *done, *failed; /* event kinds */
};

static const struct action_words *action_words(enum action_kind k)
{
    static const struct action_words start = {NODECTL_START, "start", "started", "start_failed"};
    static const struct action_words stop = {NODECTL_STOP, "stop", "stopped", "stop_failed"};
    static const struct action_words restart = {NODECTL_RESTART, "restart", "restarted",
                                                "restart_failed"};
    return k == ACT_NODE_START ? &start : k == ACT_NODE_STOP ? &stop : &restart;
}

/* ---- jobs ----------------------------------------------------------------- */

/* Submits req for what->node and remembers what it is for: the job id,
 * or -1 with err filled. */
static long submit(remote *r, const nodectl_req *req, struct job what, char *err, size_t errlen)
{
    if (r->n_jobs == REMOTE_JOBS_MAX) {
        snprintf(err, errlen, "%d SSH jobs are waiting already: let some finish", r->n_jobs);
        return -1;
    }
    what.id = nodepool_submit(r->pool, what.node, req, err, errlen);
    if (what.id > 0)
        r->jobs[r->n_jobs++] = what;
    return what.id;
}

/* Forgets job id; 1 with *j filled when it was known. */
static int untrack(remote *r, long id, struct job *j)
{
    for (int i = 0; i < r->n_jobs; i++) {
        if (r->jobs[i].id != id)
            continue;
        *j = r->jobs[i];
        r->jobs[i] = r->jobs[--r->n_jobs];
        return 1;
    }
    return 0;
}

static void follow_start(remote *r, int node, double now)
{
    struct rnode *n = &r->nodes[node];
    nodectl_req req = {.op = NODECTL_LOGS, .lines = REMOTE_FOLLOW_LINES, .follow = 1};
    char err[256], how[CLUSTER_HOST_MAX + CLUSTER_NAME_MAX + 32];
    long id = submit(r, &req, (struct job){.node = node, .kind = JOB_FOLLOW}, err, sizeof err);
    if (id < 0) {
        nodelog_note(n->log, NODELOG_ERROR, "cannot follow the log: %s", err);
        state_event_add(r->st, node, "log_failed", now, "%s", err);
        return;
    }
    n->follow = id;
    n->fresh = 1;
    if (nodelog_count(n->log) == 0) {
        nodectl_describe_reach(&r->c->nodes[node], how, sizeof how);
        nodelog_note(n->log, NODELOG_INFO, "reading the log %s ...", how);
    }
}

static void follow_stop(remote *r, int node)
{
    struct rnode *n = &r->nodes[node];
    if (!n->follow)
        return;
    /* Its DONE comes later, and finds n->follow no longer naming it. */
    nodepool_cancel(r->pool, n->follow);
    n->follow = 0;
}

/* Once per opening of the node view: facts change slowly, and a node
 * that did not answer is asked again at the next opening. */
static void facts_fetch(remote *r, int node, double now)
{
    struct rnode *n = &r->nodes[node];
    nodectl_req req = {.op = NODECTL_FACTS};
    if (n->facts_state == FACTS_ASKED)
        return;
    struct job what = {.node = node, .kind = JOB_FACTS};
    if (submit(r, &req, what, n->facts_error, sizeof n->facts_error) < 0) {
        n->facts_state = FACTS_FAILED;
        state_event_add(r->st, node, "facts_failed", now, "%s", n->facts_error);
        return;
    }
    n->facts_state = FACTS_ASKED;
}

/* ---- results -------------------------------------------------------------- */

static void action_done(remote *r, const struct job *j, const nodectl_result *res, double now)
{
    const struct action_words *w = action_words(j->action);
    if (!res->ok) {
        state_event_add(r->st, j->node, w->failed, now, "%s", res->error);
        /* Only a start marks the node starting: undo that, unless a
         * heartbeat has shown the node up meanwhile. */
        if (state_node_live(r->st, j->node, now) == STATE_STARTING)
            state_mark_down(r->st, j->node, "the start failed", now);
        return;
    }
    state_event_add(r->st, j->node, w->done, now, "%s", res->detail);
    if (j->action == ACT_NODE_STOP)
        state_mark_down(r->st, j->node, "stopped by infertop", now);
    else if (j->action == ACT_NODE_RESTART)
        state_mark_starting(r->st, j->node, now);
}

static void knobs_done(remote *r, const struct job *j, const nodectl_result *res, double now)
{
    char what[sizeof res->error];
    if (!res->ok) {
        state_event_add(r->st, j->node, "set_failed", now, "%s", res->error);
        state_config_reply(r->st, j->node, 0, res->error, now);
        return;
    }
    snprintf(r->nodes[j->node].start, sizeof r->nodes[j->node].start, "%s", j->line);
    knobs_applied(&j->want, res->took_s, what, sizeof what);
    state_event_add(r->st, j->node, "set", now, "%s", what);
    state_config_reply(r->st, j->node, 1, NULL, now);
}

static void facts_done(remote *r, int node, const nodectl_result *res, double now)
{
    struct rnode *n = &r->nodes[node];
    if (res->ok && !res->cancelled) {
        n->facts = res->facts;
        n->facts_state = FACTS_KNOWN;
        return;
    }
    n->facts_state = FACTS_FAILED;
    snprintf(n->facts_error, sizeof n->facts_error, "%s", res->ok ? "cancelled" : res->error);
    if (!res->ok)
        state_event_add(r->st, node, "facts_failed", now, "%s", res->error);
}

static void follow_done(remote *r, long id, int node, const nodectl_result *res, double now)
{
    struct rnode *n = &r->nodes[node];
    if (id != n->follow)
        return; /* one the console cancelled */
    n->follow = 0;
    if (!res->ok) {
        nodelog_note(n->log, NODELOG_ERROR, "%s", res->error);
        state_event_add(r->st, node, "log_failed", now, "%s", res->error);
    } else {
        nodelog_note(n->log, NODELOG_INFO, "the log follow ended");
    }
}

static void on_event(remote *r, const nodepool_event *ev, double now)
{
    struct rnode *n = &r->nodes[ev->node];
    struct job j;
    if (ev->kind == NODEPOOL_OUTPUT) {
        if (!n->follow || ev->job != n->follow)
            return;
        if (n->fresh) {
            nodelog_clear(n->log);
            n->fresh = 0;
        }
        nodelog_feed(n->log, ev->data, ev->len);
        return;
    }
    if (!untrack(r, ev->job, &j))
        return;
    switch (j.kind) {
    case JOB_ACTION:
        action_done(r, &j, &ev->result, now);
        break;
    case JOB_FACTS:
        facts_done(r, j.node, &ev->result, now);
        break;
    case JOB_FOLLOW:
        follow_done(r, j.id, j.node, &ev->result, now);
        break;
    case JOB_KNOBS:
        knobs_done(r, &j, &ev->result, now);
        break;
    }
    free(j.line);
}

/* ---- the app's hooks ------------------------------------------------------ */

static double remote_tick(void *ctx, double now, int *changed)
{
    remote *r = ctx;
    nodepool_event ev;
    for (int i = 0; i < REMOTE_EVENTS_PER_TURN && nodepool_next(r->pool, &ev); i++) {
        on_event(r, &ev, now);
        nodepool_event_free(&ev);
        *changed = 1;
    }
    return INFINITY;
}

/* Submits a job that changes the node's process: the log follow, which
 * would hold it back for ever, is cancelled, and started again behind
 * it, to show what the job did. The job id, or -1 with err filled. */
static long submit_change(remote *r, const nodectl_req *req, struct job what, double now, char *err,
                          size_t errlen)
{
    if (what.node < 0 || what.node >= r->c->n_nodes) {
        snprintf(err, errlen, "pick one node for this action");
        return -1;
    }
    int refollow = what.node == r->watched;
    if (r->n_jobs + 1 + refollow > REMOTE_JOBS_MAX) {
        snprintf(err, errlen, "%d SSH jobs are waiting already: let some finish", r->n_jobs);
        return -1;
    }
    follow_stop(r, what.node);
    long id = submit(r, req, what, err, errlen);
    if (refollow)
        follow_start(r, what.node, now);
    return id;
}

/* 1 with err filled when node cannot be acted on: none picked, or one
 * with neither SSH nor `local` (its state is left as it is). */
static int unreachable(const remote *r, int node, char *err, size_t errlen)
{
    if (node < 0 || node >= r->c->n_nodes) {
        snprintf(err, errlen, "pick one node for this action");
        return 1;
    }
    if (nodectl_reach(&r->c->nodes[node]) != NODECTL_NONE)
        return 0;
    nodectl_no_reach(&r->c->nodes[node], err, errlen);
    return 1;
}

static int remote_action(void *ctx, enum action_kind kind, int node, double now, char *err,
                         size_t errlen)
{
    remote *r = ctx;
    const struct action_words *w = action_words(kind);
    char how[CLUSTER_HOST_MAX + CLUSTER_NAME_MAX + 32];
    nodectl_req req = {.op = w->op};
    if (unreachable(r, node, err, errlen))
        return -1;
    if (node >= 0 && node < r->c->n_nodes && r->nodes[node].start[0])
        req.start = r->nodes[node].start;
    long id = submit_change(r, &req, (struct job){.node = node, .kind = JOB_ACTION, .action = kind},
                            now, err, errlen);
    if (id < 0)
        return -1;
    nodectl_describe_reach(&r->c->nodes[node], how, sizeof how);
    state_event_add(r->st, node, w->asked, now, "asked %s", how);
    if (kind == ACT_NODE_START)
        state_mark_starting(r->st, node, now);
    return 0;
}

static int remote_set_knobs(void *ctx, int node, const proto_set_args *want, double now, char *err,
                            size_t errlen)
{
    remote *r = ctx;
    char how[CLUSTER_HOST_MAX + CLUSTER_NAME_MAX + 32], what[64];
    struct job j = {.node = node, .kind = JOB_KNOBS, .want = *want};
    if (unreachable(r, node, err, errlen))
        return -1;
    const char *from = r->nodes[node].start[0] ? r->nodes[node].start : NULL;
    if (!(j.line = malloc(CLUSTER_START_MAX))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    nodectl_req req = {.op = NODECTL_RESTART, .start = j.line};
    if (knobs_start_line(&r->c->nodes[node], from, want, j.line, CLUSTER_START_MAX, err, errlen) !=
            0 ||
        submit_change(r, &req, j, now, err, errlen) < 0) {
        free(j.line);
        return -1;
    }
    nodectl_describe_reach(&r->c->nodes[node], how, sizeof how);
    eng_knob_describe(want, what, sizeof what);
    state_event_add(r->st, node, "set", now, "%s by restart, %s", what, how);
    state_config_request(r->st, node, want, now);
    return 0;
}

static int remote_fd(void *ctx)
{
    remote *r = ctx;
    return nodepool_fd(r->pool);
}

static void remote_watch(void *ctx, int node, double now)
{
    remote *r = ctx;
    if (r->watched >= 0)
        follow_stop(r, r->watched);
    r->watched = node;
    if (node < 0)
        return;
    if (nodectl_reach(&r->c->nodes[node]) == NODECTL_NONE) {
        /* Said in the log pane once, not as events at each opening. */
        char why[256];
        nodectl_no_reach(&r->c->nodes[node], why, sizeof why);
        if (nodelog_count(r->nodes[node].log) == 0)
            nodelog_note(r->nodes[node].log, NODELOG_INFO, "%s", why);
        snprintf(r->nodes[node].facts_error, sizeof r->nodes[node].facts_error, "%s", why);
        r->nodes[node].facts_state = FACTS_FAILED;
        return;
    }
    facts_fetch(r, node, now);
    follow_start(r, node, now);
}

void remote_hooks(remote *r, struct app_hooks *h)
{
    *h = (struct app_hooks){
        .ctx = r,
        .tick = remote_tick,
        .node_action = remote_action,
        .set_knobs = remote_set_knobs,
        .fd = remote_fd,
        .watch = remote_watch,
    };
}

/* ---- setting up ----------------------------------------------------------- */

int remote_new(const struct cluster *c, state *st, remote **out, char *err, size_t errlen)
{
    *out = NULL;
    remote *r = calloc(1, sizeof *r);
    if (!r || !(r->nodes = calloc((size_t)c->n_nodes, sizeof *r->nodes))) {
        free(r);
        snprintf(err, errlen, "out of memory for node control");
        return -1;
    }
    r->c = c;
    r->st = st;
    r->watched = -1;
    for (int i = 0; i < c->n_nodes; i++) {
        if (!(r->nodes[i].log = nodelog_new(REMOTE_LOG_LINES))) {
            snprintf(err, errlen, "out of memory for the nodes' logs");
            remote_free(r);
            return -1;
        }
    }
    /* The pool's threads start with their node's first job: nothing
     * connects until the operator asks for something. */
    nodepool_opts o = {.timeout_ms = c->connect_timeout_s * 1000};
    if (nodepool_new(c, &o, &r->pool, err, errlen) != 0) {
        remote_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

int remote_update(remote *r)
{
    return nodepool_update(r->pool, r->c);
}

void remote_free(remote *r)
{
    if (!r)
        return;
    nodepool_free(r->pool);
    for (int i = 0; i < r->n_jobs; i++)
        free(r->jobs[i].line);
    for (int i = 0; i < r->c->n_nodes; i++)
        nodelog_free(r->nodes[i].log);
    free(r->nodes);
    free(r);
}

/* ---- for the node view ---------------------------------------------------- */

const nodelog *remote_log(const remote *r, int node)
{
    return r->nodes[node].log;
}

void remote_log_source(const remote *r, int node, char *buf, size_t len)
{
    const struct cluster_node *n = &r->c->nodes[node];
    char log[CLUSTER_PATH_MAX + CLUSTER_NAME_MAX + 32];
    if (n->log[0])
        snprintf(log, sizeof log, "%s", n->log);
    else
        snprintf(log, sizeof log, CLUSTER_LOG_DEFAULT_DIR "/%s.log", n->name);
    switch (nodectl_reach(n)) {
    case NODECTL_LOCAL:
        snprintf(buf, len, "local: %s", log);
        break;
    case NODECTL_SSH: {
        char port[16] = "";
        if (n->ssh_port)
            snprintf(port, sizeof port, ":%d", n->ssh_port);
        snprintf(buf, len, "ssh: %s%s%s%s:%s", n->ssh_user, n->ssh_user[0] ? "@" : "", n->ssh_host,
                 port, log);
        break;
    }
    default:
        snprintf(buf, len, "no ssh configured");
    }
}

const nodectl_facts *remote_facts(const remote *r, int node, const char **why, int *failed)
{
    const struct rnode *n = &r->nodes[node];
    *failed = n->facts_state == FACTS_FAILED;
    *why = n->facts_state == FACTS_ASKED ? "asking" : *failed ? n->facts_error : "";
    return n->facts_state == FACTS_KNOWN ? &n->facts : NULL;
}
