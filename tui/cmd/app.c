/* app.c: the console's main loop and `infertop` without a verb (app.h). */
#include "app.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "engine/sys/clock.h"
#include "tui/cli/cli.h"
#include "tui/core/cluster.h"
#include "tui/core/desired_sync.h"
#include "tui/engine/ewatch.h"
#include "tui/plan/plan_job.h"
#include "tui/ssh/remote.h"
#include "tui/stress/console_runs.h"

/* The longest the loop sleeps with nothing due: a resize that lands just
 * before zmq_poll is seen by then at the latest. */
#define APP_MAX_WAIT_S 1.0
/* Freed heap malloc keeps rather than returns to the kernel (see
 * keep_freed_heap): about 16 frames' worth of telemetry at 8 nodes x 100
 * steps/s. */
#define APP_MALLOC_KEEP (16 << 20)

double app_now(void)
{
    return clock_ms() / 1000.0;
}

void app_ui_options(const opt_vals *v, struct ui_options *o)
{
    o->no_color = opt_given(v, OPT_NO_COLOR);
    o->ascii = opt_given(v, OPT_ASCII);
    o->readonly = opt_given(v, OPT_READONLY);
    o->delay = opt_num(v, OPT_DELAY);
}

/* ---- signals -------------------------------------------------------------- */

/* The write end of the self-pipe. A signal handler can reach the loop only
 * through a global; this one is set while app_run runs and nowhere else. */
static int signal_pipe = -1;

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(signal_pipe, &b, 1) < 0) {
        /* The pipe is full: the loop has wake-ups queued already. */
    }
    errno = saved;
}

static const int app_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
#define N_SIGNALS ((int)(sizeof app_signals / sizeof app_signals[0]))

struct signals {
    int fd[2];
    struct sigaction old[N_SIGNALS];
};

static int signals_catch(struct signals *s, char *err, size_t errlen)
{
    if (pipe2(s->fd, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    signal_pipe = s->fd[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < N_SIGNALS; i++)
        sigaction(app_signals[i], &sa, &s->old[i]);
    return 0;
}

static void signals_release(struct signals *s)
{
    for (int i = 0; i < N_SIGNALS; i++)
        sigaction(app_signals[i], &s->old[i], NULL);
    signal_pipe = -1;
    close(s->fd[0]);
    close(s->fd[1]);
}

/* Empties the pipe. Returns 1 when a signal asks to quit. SIGCHLD only
 * has to wake the loop: the hooks reap on every turn. */
static int signals_read(struct signals *s)
{
    unsigned char buf[64];
    int quit = 0;
    ssize_t n;
    while ((n = read(s->fd[0], buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            quit |= buf[i] != SIGCHLD;
    return quit;
}

/* ---- the loop ------------------------------------------------------------- */

/* Telemetry waits in ZeroMQ's queue for up to a frame (app.h). Meanwhile
 * ZeroMQ's I/O thread reads each message from its node's TCP stream into a
 * new buffer of its malloc arena (the messages still queued point into the
 * previous one), and the loop frees a frame's worth (~1 MB at 8 nodes x
 * 100 steps/s) at once when it reads them. With the default threshold
 * (128 KB) glibc hands that back to the kernel at every frame and the I/O
 * thread faults it in again, page by page, before the next one: a tenth of
 * the console's CPU. */
static void keep_freed_heap(void)
{
    mallopt(M_TRIM_THRESHOLD, APP_MALLOC_KEEP);
}

struct loop {
    const struct ui_options *uo;
    state *st;
    links *l;
    const struct app_hooks *hooks;
    ewatch *w; /* NULL when the cluster has no HTTP node */
    ui *u;
    double next_tick;  /* state_tick */
    double next_hook;  /* the latest next turn hooks->tick asked for */
    double next_tel;   /* telemetry is read again from then on */
    int watched;       /* the node the node view showed at the last turn, -1 none */
    int stress_active; /* a stress run of the Stress view is going */
    int plan_active;   /* a plan of the Plan view is being applied */
    int quit;
};

static void apply_plan(struct loop *lp)
{
    char err[256];
    const struct cluster *c = lp->uo->cluster;
    nodepool_opts o = {.timeout_ms = c && c->connect_timeout_s ? c->connect_timeout_s * 1000 : 0};
    if (lp->uo->readonly)
        ui_message(lp->u, "read-only console (--readonly): applying a plan is off");
    else if (!lp->uo->plan)
        ui_message(lp->u, "applying a plan is not available for this cluster");
    else if (plan_job_start(lp->uo->plan, &o, err, sizeof err) != 0)
        ui_message(lp->u, "%s", err);
    else
        ui_message(lp->u, "applying the plan: every node restarts; progress in the Plan view");
}

/* inferd nodes take a set live over their links; the nodes of other
 * engines by restart over SSH, through the hooks (tui/ssh/knobs.h). */
static void set_config(struct loop *lp, const struct action *a, double now)
{
    const struct cluster *c = lp->uo->cluster;
    char err[256] = "";
    int failed = 0;
    /* All the inferd nodes at once: a ring's stages take it from its head. */
    if (a->node == ACT_ALL_NODES)
        failed += links_set(lp->l, -1, &a->set, now) > 0;
    for (int i = 0; i < state_node_count(lp->st); i++) {
        if (a->node != ACT_ALL_NODES && a->node != i)
            continue;
        int inferd = !c || cluster_node_is_inferd(c, i);
        if (inferd && a->node == ACT_ALL_NODES)
            continue; /* sent above, with the others */
        if (inferd)
            failed += links_set(lp->l, i, &a->set, now) > 0;
        else if (!lp->hooks || !lp->hooks->set_knobs)
            snprintf(err, sizeof err,
                     "node %s takes a set by restart, which is not available "
                     "for this cluster",
                     c->nodes[i].name);
        else
            lp->hooks->set_knobs(lp->hooks->ctx, i, &a->set, now, err, sizeof err);
    }
    if (err[0])
        ui_message(lp->u, "%s", err);
    else if (failed)
        ui_message(lp->u, "set could not be sent to every node: see the events");
}

static void act(struct loop *lp, const struct action *a, double now)
{
    char err[256];
    switch (a->kind) {
    case ACT_QUIT:
        lp->quit = 1;
        return;
    case ACT_SET_CONFIG:
        if (lp->uo->readonly) {
            ui_message(lp->u, "read-only console (--readonly): config changes are off");
            return;
        }
        set_config(lp, a, now);
        ui_mark_dirty(lp->u);
        return;
    case ACT_NODE_START:
    case ACT_NODE_STOP:
    case ACT_NODE_RESTART:
        if (lp->uo->readonly) {
            ui_message(lp->u, "read-only console (--readonly): node actions are off");
        } else if (!lp->hooks || !lp->hooks->node_action) {
            ui_message(lp->u, "starting and stopping nodes is not available for this cluster");
        } else if (lp->hooks->node_action(lp->hooks->ctx, a->kind, a->node, now, err, sizeof err) !=
                   0) {
            ui_message(lp->u, "%s", err);
        }
        ui_mark_dirty(lp->u);
        return;
    case ACT_PLAN_APPLY:
        apply_plan(lp);
        ui_mark_dirty(lp->u);
        return;
    }
}

/* Tells the hooks when the node view opened, closed or moved to another
 * node. */
static void watch(struct loop *lp, double now)
{
    int shown = ui_node_shown(lp->u);
    if (shown == lp->watched)
        return;
    lp->watched = shown;
    if (lp->hooks && lp->hooks->watch)
        lp->hooks->watch(lp->hooks->ctx, shown, now);
    ui_mark_dirty(lp->u);
}

/* Files the views of the HTTP nodes polled since the last turn. Returns
 * 1 when there was one. */
static int take_polls(struct loop *lp, double now)
{
    struct eng_view v;
    int got = 0;
    for (int i = 0; i < state_node_count(lp->st); i++)
        if (ewatch_take(lp->w, i, &v)) {
            state_ingest_engine(lp->st, i, &v, now);
            got = 1;
        }
    return got;
}

/* Starts polling the cluster's HTTP nodes every interval_s (the
 * dashboard's refresh, -d), if it has any (the demo's has none). -1 with err when a node's key file
 * cannot be read. */
static int watch_start(const struct cluster *c, double interval_s, ewatch **w, char *err,
                       size_t errlen)
{
    *w = NULL;
    if (!c || cluster_ring_size(c) == c->n_nodes)
        return 0;
    struct ewatch_target t[c->n_nodes];
    for (int i = 0; i < c->n_nodes; i++)
        t[i] =
            (struct ewatch_target){c->nodes[i].engine, c->nodes[i].url, c->nodes[i].api_key_file};
    return ewatch_start(w, t, c->n_nodes, interval_s, err, errlen);
}

/* The poll timeout: up to the first thing due, at most APP_MAX_WAIT_S. */
static long poll_timeout_ms(const struct loop *lp, int telemetry, double now)
{
    double wake = now + APP_MAX_WAIT_S;
    wake = fmin(wake, lp->next_hook);
    wake = fmin(wake, links_next_deadline(lp->l));
    /* With a telemetry read coming (at most a frame away), the liveness
     * tick waits for that wake-up rather than making one of its own. */
    wake = fmin(wake, telemetry ? lp->next_tick : lp->next_tel);
    /* A stress run or an apply going: its progress is taken in every frame. */
    if (lp->stress_active || lp->plan_active)
        wake = fmin(wake, now + 1.0 / UI_FPS);
    double due = ui_frame_due(lp->u, now);
    if (due >= 0)
        wake = fmin(wake, now + due);
    double ms = ceil((wake - now) * 1000.0);
    return ms > 0 ? (long)ms : 0;
}

/* One turn: wait for something, take it in, draw. 0, or -1 when polling
 * failed. */
static int turn(struct loop *lp, struct signals *sig, zmq_pollitem_t *items, int max, char *err,
                size_t errlen)
{
    double now = app_now();
    int telemetry = now >= lp->next_tel;
    items[0] = (zmq_pollitem_t){NULL, STDIN_FILENO, ZMQ_POLLIN, 0};
    items[1] = (zmq_pollitem_t){NULL, sig->fd[0], ZMQ_POLLIN, 0};
    int nl = links_poll_items(lp->l, telemetry, items + 2, max - 3);
    int n = 2 + nl;
    int hook_fd = lp->hooks && lp->hooks->fd ? lp->hooks->fd(lp->hooks->ctx) : -1;
    if (hook_fd >= 0)
        items[n++] = (zmq_pollitem_t){NULL, hook_fd, ZMQ_POLLIN, 0};
    int watch_item = lp->w ? n++ : -1;
    if (lp->w)
        items[watch_item] = (zmq_pollitem_t){NULL, ewatch_fd(lp->w), ZMQ_POLLIN, 0};
    if (zmq_poll(items, n, poll_timeout_ms(lp, telemetry, now)) < 0 && errno != EINTR) {
        snprintf(err, errlen, "poll: %s", zmq_strerror(errno));
        return -1;
    }
    now = app_now();
    int changed = 0;
    if (signals_read(sig))
        lp->quit = 1;
    if (links_process(lp->l, items + 2, nl, now) > 0)
        changed = 1;
    int tel_read = telemetry && nl > 0 && (items[2].revents & ZMQ_POLLIN);
    /* Telemetry fell due while the poll waited (the usual case under load):
     * read it in this turn, rather than in one more whose zmq_poll would
     * only find it queued. */
    if (!telemetry && now >= lp->next_tel && links_read_telemetry(lp->l, now) > 0) {
        changed = 1;
        tel_read = 1;
    }
    /* Read again one frame later: see the header. */
    if (tel_read)
        lp->next_tel = now + 1.0 / UI_FPS;
    if (links_tick(lp->l, now) > 0)
        changed = 1;
    if (watch_item >= 0 && (items[watch_item].revents & ZMQ_POLLIN))
        changed |= take_polls(lp, now);
    if (now >= lp->next_tick) {
        state_tick(lp->st, now);
        lp->next_tick = now + APP_TICK_S;
        changed = 1;
    }
    /* Every turn: a reply taken in above may have freed the hook to act. */
    if (lp->hooks && lp->hooks->tick) {
        int hook_changed = 0;
        lp->next_hook = lp->hooks->tick(lp->hooks->ctx, now, &hook_changed);
        changed |= hook_changed;
    }
    if (lp->uo->desired)
        desired_sync_tick(lp->uo->desired, lp->st, lp->l, !lp->uo->readonly && !lp->stress_active,
                          now);
    lp->stress_active = console_runs_tick(lp->uo->runs);
    changed |= lp->stress_active;
    lp->plan_active = lp->uo->plan && plan_job_tick(lp->uo->plan, lp->st, now) != PLAN_JOB_IDLE;
    changed |= lp->plan_active;
    struct action acts[UI_ACTIONS_MAX];
    int na = ui_handle_input(lp->u, lp->st, now, acts, UI_ACTIONS_MAX);
    for (int i = 0; i < na; i++)
        act(lp, &acts[i], now);
    watch(lp, now);
    if (changed)
        ui_mark_dirty(lp->u);
    /* Once a frame is drawn, telemetry is next read when the next frame is
     * due, so that one wake-up serves both. */
    if (ui_draw(lp->u, lp->st, now))
        lp->next_tel = now + 1.0 / UI_FPS;
    return 0;
}

int app_run(const struct ui_options *uo, state *st, links *l, const struct app_hooks *hooks,
            char *err, size_t errlen)
{
    struct signals sig;
    double now = app_now();
    struct loop lp = {uo, st, l, hooks, NULL, NULL, now, now, now, -1, 0, 0, 0};
    if (!hooks || !hooks->tick)
        lp.next_hook = INFINITY;
    /* stdin, the signals, the links, the hooks' fd, the HTTP watcher's. */
    int max = 4 + links_poll_max(l);
    zmq_pollitem_t items[max];

    keep_freed_heap();

    if (watch_start(uo->cluster, uo->delay, &lp.w, err, errlen) != 0)
        return -1;
    /* Before ui_open: curses installs its own SIGINT and SIGTERM handlers
     * only where it finds the default one, so these stay ours. */
    if (signals_catch(&sig, err, errlen) != 0) {
        ewatch_stop(lp.w);
        return -1;
    }
    if (!(lp.u = ui_open(uo, err, errlen))) {
        signals_release(&sig);
        ewatch_stop(lp.w);
        return -1;
    }
    int rc = 0;
    while (!lp.quit && rc == 0)
        rc = turn(&lp, &sig, items, max, err, errlen);
    ui_close(lp.u);
    signals_release(&sig);
    ewatch_stop(lp.w);
    return rc;
}

int app_open_runs(const char *db, const struct cluster *c, struct ui_options *uo, char *err,
                  size_t errlen)
{
    uo->runs = console_runs_open(db, c, err, errlen);
    return uo->runs || !db ? 0 : -1;
}

int app_connect(const struct cluster *c, double now, state **st, links **l, char *err,
                size_t errlen)
{
    const char *names[c->n_nodes > 0 ? c->n_nodes : 1];
    for (int i = 0; i < c->n_nodes; i++)
        names[i] = c->nodes[i].name;
    *l = NULL;
    if (!(*st = state_new(c->name, c->n_nodes, names))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < c->n_nodes; i++)
        state_node_set_engine(*st, i, c->nodes[i].engine);
    state_alert_settings(*st, &c->alerts);
    if (links_open(l, c, *st, now, err, errlen) != 0) {
        state_free(*st);
        *st = NULL;
        return -1;
    }
    links_identify(*l);
    return 0;
}

/* ---- infertop without a verb ---------------------------------------------- */

int app_main(const opt_vals *v)
{
    struct ui_options uo = {.mouse = 1};
    const char *given = opt_str(v, OPT_CONFIG), *db = opt_str(v, OPT_DB);
    char path[CLUSTER_PATH_MAX], err[1024];

    app_ui_options(v, &uo);
    struct cluster *c = NULL;
    if (cluster_locate(given, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop: %s\n", err);
        return CLI_ERROR;
    }
    uo.cluster = c;
    if (app_open_runs(db, c, &uo, err, sizeof err) != 0) {
        fprintf(stderr, "infertop: %s\n", err);
        cluster_free(c);
        return CLI_NO_DB;
    }
    state *st;
    links *l;
    int rc = app_connect(c, app_now(), &st, &l, err, sizeof err);
    if (rc == 0) {
        remote *r = NULL;
        struct app_hooks hooks;
        /* The flags given over the cluster file's. */
        struct alert_settings alerts = c->alerts;
        alerts_read(v, &alerts);
        state_alert_settings(st, &alerts);
        rc = remote_new(c, st, &r, err, sizeof err);
        if (rc == 0 && (!(uo.plan = plan_job_new(c, r)) || !(uo.desired = desired_sync_new(c)))) {
            snprintf(err, sizeof err, "out of memory");
            rc = -1;
        }
        if (rc == 0) {
            remote_hooks(r, &hooks);
            uo.remote = r;
            rc = app_run(&uo, st, l, &hooks, err, sizeof err);
        }
        /* An apply still going ends first: it restarts the nodes. */
        plan_job_free(uo.plan);
        desired_sync_free(uo.desired);
        /* Before the state it writes to; may wait for a connect in
         * progress to time out, with the terminal already given back. */
        remote_free(r);
        links_close(l);
        state_free(st);
    }
    if (rc != 0)
        fprintf(stderr, "infertop: %s\n", err);
    console_runs_free(uo.runs);
    cluster_free(c);
    return rc == 0 ? CLI_OK : CLI_ERROR;
}
