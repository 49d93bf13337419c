/* test_remote.c: the console's node control against a node whose SSH
 * port is closed (no server needed): an action is told in the events when
 * asked and when it fails, a failed start leaves the node down, and the
 * node view's follow and facts fail into the log ring and the events.
 * Against a real sshd: tests/e2e/console_ssh.sh. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tui/cmd/app.h"
#include "tui/core/cluster.h"
#include "tui/ssh/remote.h"

/* A port on 127.0.0.1 with nothing listening (bound, then released). */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

struct fixture {
    struct cluster c;
    struct cluster_node node;
    state *st;
    remote *r;
    struct app_hooks h;
};

static void setup(struct fixture *fx)
{
    char err[256];
    memset(fx, 0, sizeof *fx);
    struct cluster_node *n = &fx->node;
    snprintf(n->name, sizeof n->name, "a");
    snprintf(n->ssh_host, sizeof n->ssh_host, "127.0.0.1");
    snprintf(n->ssh_user, sizeof n->ssh_user, "nobody");
    snprintf(n->known_hosts, sizeof n->known_hosts, "/nonexistent/known_hosts");
    snprintf(n->log, sizeof n->log, "/var/log/a.log");
    n->ssh_port = closed_port();
    n->accept_new = CLUSTER_UNSET;
    fx->c.n_nodes = 1;
    fx->c.nodes = n;
    fx->c.connect_timeout_s = 5;
    const char *names[] = {"a"};
    fx->st = state_new("test", 1, names);
    cr_assert_not_null(fx->st);
    cr_assert_eq(remote_new(&fx->c, fx->st, &fx->r, err, sizeof err), 0, "%s", err);
    remote_hooks(fx->r, &fx->h);
}

static void teardown(struct fixture *fx)
{
    remote_free(fx->r);
    state_free(fx->st);
}

/* The newest event of that kind, or NULL. */
static const struct state_event *event_of(const struct fixture *fx, const char *kind)
{
    struct state_event_filter f = {.node = -1, .kind = kind};
    const struct state_event *ev[1];
    return state_events(fx->st, &f, 0, 1, ev) == 1 && strcmp(ev[0]->kind, kind) == 0 ? ev[0] : NULL;
}

/* Runs the app's part (wait on the fd, tick) until an event of that kind
 * came; fails after 10 s. */
static const struct state_event *pump_until(struct fixture *fx, const char *kind)
{
    for (int i = 0; i < 50; i++) {
        struct pollfd pfd = {.fd = fx->h.fd(fx->h.ctx), .events = POLLIN};
        poll(&pfd, 1, 200);
        int changed = 0;
        fx->h.tick(fx->h.ctx, 2.0, &changed);
        const struct state_event *e = event_of(fx, kind);
        if (e)
            return e;
    }
    struct state_event_filter f = {.node = -1};
    const struct state_event *ev[1];
    cr_assert_fail("no %s event (the last: %s)", kind,
                   state_events(fx->st, &f, 0, 1, ev) == 1 ? ev[0]->message : "none");
    return NULL;
}

Test(remote, a_failed_start_is_told_and_leaves_the_node_down)
{
    struct fixture fx;
    char err[256];
    setup(&fx);
    cr_assert_eq(fx.h.node_action(fx.h.ctx, ACT_NODE_START, 0, 1.0, err, sizeof err), 0, "%s", err);
    const struct state_event *asked = event_of(&fx, "start");
    cr_assert_not_null(asked);
    cr_assert(strstr(asked->message, "asked over SSH (nobody@127.0.0.1:"), "%s", asked->message);
    cr_assert_eq(state_node_live(fx.st, 0, 1.0), STATE_STARTING);
    const struct state_event *failed = pump_until(&fx, "start_failed");
    cr_assert(strstr(failed->message, "cannot connect"), "%s", failed->message);
    cr_assert_eq(state_node_live(fx.st, 0, 2.0), STATE_DOWN);
    teardown(&fx);
}

Test(remote, a_failed_stop_changes_nothing)
{
    struct fixture fx;
    char err[256];
    setup(&fx);
    cr_assert_eq(fx.h.node_action(fx.h.ctx, ACT_NODE_STOP, 0, 1.0, err, sizeof err), 0);
    pump_until(&fx, "stop_failed");
    cr_assert_null(event_of(&fx, "stopped"));
    cr_assert_null(event_of(&fx, "node_down"), "no liveness change was made up");
    teardown(&fx);
}

Test(remote, an_action_needs_one_node)
{
    struct fixture fx;
    char err[256];
    setup(&fx);
    cr_assert_eq(fx.h.node_action(fx.h.ctx, ACT_NODE_RESTART, -1, 1.0, err, sizeof err), -1);
    cr_assert(strstr(err, "one node"), "%s", err);
    teardown(&fx);
}

Test(remote, the_node_view_follows_the_log_and_asks_for_facts)
{
    struct fixture fx;
    const char *why;
    int failed;
    char src[256], want[256];
    enum nodelog_mark m;
    setup(&fx);
    remote_log_source(fx.r, 0, src, sizeof src);
    snprintf(want, sizeof want, "ssh: nobody@127.0.0.1:%d:/var/log/a.log", fx.node.ssh_port);
    cr_assert_str_eq(src, want);
    cr_assert_null(remote_facts(fx.r, 0, &why, &failed));
    cr_assert_str_eq(why, "", "never asked before the view opens");

    fx.h.watch(fx.h.ctx, 0, 1.0);
    const nodelog *l = remote_log(fx.r, 0);
    cr_assert_eq(nodelog_count(l), 1);
    cr_assert(strstr(nodelog_line(l, 0, &m), "reading the log over SSH (nobody@127.0.0.1:"));
    cr_assert_eq(m, NODELOG_INFO);
    cr_assert_null(remote_facts(fx.r, 0, &why, &failed));
    cr_assert_str_eq(why, "asking");

    const struct state_event *e = pump_until(&fx, "log_failed");
    cr_assert(strstr(e->message, "cannot connect"), "%s", e->message);
    cr_assert_not_null(event_of(&fx, "facts_failed"), "facts are asked before the follow");
    cr_assert_null(remote_facts(fx.r, 0, &why, &failed));
    cr_assert_eq(failed, 1);
    cr_assert(strstr(why, "cannot connect"), "%s", why);
    int n = nodelog_count(l);
    cr_assert(strstr(nodelog_line(l, n - 1, &m), "cannot connect"));
    cr_assert_eq(m, NODELOG_ERROR, "the error shows in the log pane");
    fx.h.watch(fx.h.ctx, -1, 3.0);
    teardown(&fx);
}

/* A node with neither `ssh` nor `local`: the action is refused with the
 * reason and the node is left as it was; the node view says so once, in
 * its log pane, not as events at each opening. */
Test(remote, a_node_without_ssh_says_so_and_stays_as_it_was)
{
    struct fixture fx;
    char err[256];
    setup(&fx);
    fx.node.ssh_host[0] = fx.node.ssh_user[0] = '\0';
    cr_assert_eq(remote_update(fx.r), 0);
    state_mark_starting(fx.st, 0, 1.0); /* any state but down, to see it kept */
    int before = state_node_live(fx.st, 0, 1.0);
    cr_assert_eq(fx.h.node_action(fx.h.ctx, ACT_NODE_START, 0, 1.0, err, sizeof err), -1);
    cr_assert(strstr(err, "no ssh configured"), "%s", err);
    cr_assert(strstr(err, "local = yes"), "%s", err);
    cr_assert_null(event_of(&fx, "start"));
    cr_assert_eq(state_node_live(fx.st, 0, 1.0), before);
    for (int i = 0; i < 2; i++) {
        fx.h.watch(fx.h.ctx, 0, 1.0);
        fx.h.watch(fx.h.ctx, -1, 1.0);
    }
    const nodelog *l = remote_log(fx.r, 0);
    enum nodelog_mark m;
    cr_assert_eq(nodelog_count(l), 1);
    cr_assert(strstr(nodelog_line(l, 0, &m), "no ssh configured"));
    cr_assert_null(event_of(&fx, "log_failed"));
    cr_assert_null(event_of(&fx, "facts_failed"));
    char src[128];
    remote_log_source(fx.r, 0, src, sizeof src);
    cr_assert_str_eq(src, "no ssh configured");
    teardown(&fx);
}

/* Alive and not a zombie (an orphan's reaper may be slow). */
static int process_runs(long pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    const char *p = ok ? strrchr(line, ')') : NULL;
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* A local node runs the same scripts on this machine: started (a real
 * process, its pidfile written), its log followed, stopped, with no SSH
 * server anywhere. */
Test(remote, a_local_node_starts_logs_and_stops_without_ssh)
{
    struct fixture fx;
    char err[256], dir[] = "/tmp/test_remote_localXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setup(&fx);
    struct cluster_node *n = &fx.node;
    n->ssh_host[0] = n->ssh_user[0] = '\0';
    n->local = 1;
    snprintf(n->log, sizeof n->log, "%s/sub/a.log", dir);
    snprintf(n->pidfile, sizeof n->pidfile, "%s/sub/a.pid", dir);
    snprintf(n->start, sizeof n->start, "sh -c 'echo hello from a local node; exec sleep 60'");
    cr_assert_eq(remote_update(fx.r), 0); /* the pool's copy of the node */
    cr_assert_eq(fx.h.node_action(fx.h.ctx, ACT_NODE_START, 0, 1.0, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(event_of(&fx, "start")->message, "asked on this machine"));
    const struct state_event *e = pump_until(&fx, "started");
    cr_assert(strstr(e->message, "started, pid"), "%s", e->message);
    long pid = atol(strstr(e->message, "pid ") + 4);
    cr_assert_gt(pid, 0);
    cr_assert(process_runs(pid), "the node's process runs");

    char src[1200], want[1200];
    remote_log_source(fx.r, 0, src, sizeof src);
    snprintf(want, sizeof want, "local: %s", n->log);
    cr_assert_str_eq(src, want);
    fx.h.watch(fx.h.ctx, 0, 1.0);
    const nodelog *l = remote_log(fx.r, 0);
    enum nodelog_mark m;
    int seen = 0;
    for (int i = 0; i < 50 && !seen; i++) {
        struct pollfd pfd = {.fd = fx.h.fd(fx.h.ctx), .events = POLLIN};
        poll(&pfd, 1, 200);
        int changed = 0;
        fx.h.tick(fx.h.ctx, 2.0, &changed);
        for (int k = 0; k < nodelog_count(l) && !seen; k++)
            seen = strstr(nodelog_line(l, k, &m), "hello from a local node") != NULL;
    }
    cr_assert(seen, "the log follow shows the node's output");
    const char *why;
    int failed;
    for (int i = 0; i < 50 && !remote_facts(fx.r, 0, &why, &failed) && !failed; i++) {
        struct pollfd pfd = {.fd = fx.h.fd(fx.h.ctx), .events = POLLIN};
        poll(&pfd, 1, 200);
        int changed = 0;
        fx.h.tick(fx.h.ctx, 2.0, &changed);
    }
    cr_assert_not_null(remote_facts(fx.r, 0, &why, &failed), "%s", why);
    cr_assert_gt(remote_facts(fx.r, 0, &why, &failed)->cores, 0);

    cr_assert_eq(fx.h.node_action(fx.h.ctx, ACT_NODE_STOP, 0, 3.0, err, sizeof err), 0, "%s", err);
    e = pump_until(&fx, "stopped");
    cr_assert(strstr(e->message, "stopped pid"), "%s", e->message);
    cr_assert_not(process_runs(pid), "the node's process is gone");
    cr_assert_neq(access(n->pidfile, F_OK), 0, "the pidfile is removed");
    teardown(&fx);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    cr_assert_eq(system(rm), 0);
}
