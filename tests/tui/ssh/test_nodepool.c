/* test_nodepool.c: the non-blocking layer without an SSH server: jobs
 * against a closed port and against a listener that never answers end
 * with one DONE event each, announced on the pool's fd; a queued job can
 * be cancelled. The SSH operations themselves: tests/e2e/ssh_nodes.sh. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tui/ssh/nodepool.h"

/* A TCP listener on 127.0.0.1 that never accepts: the kernel completes
 * the connection, and the client then waits for a banner that never
 * comes. Returns the socket; *port gets its port. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(listen(fd, 4), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* A port on 127.0.0.1 with nothing listening (bound, then released). */
static int closed_port(void)
{
    int port;
    int fd = silent_listener(&port);
    close(fd);
    return port;
}

static struct cluster_node make_node(const char *name, int port)
{
    struct cluster_node n;
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "%s", name);
    snprintf(n.ssh_host, sizeof n.ssh_host, "127.0.0.1");
    snprintf(n.ssh_user, sizeof n.ssh_user, "nobody");
    snprintf(n.known_hosts, sizeof n.known_hosts, "/nonexistent/known_hosts");
    n.ssh_port = port;
    n.accept_new = CLUSTER_UNSET;
    return n;
}

/* Waits on the pool's fd and returns the next DONE event. */
static nodepool_event next_done(nodepool *p)
{
    for (;;) {
        struct pollfd pfd = {.fd = nodepool_fd(p), .events = POLLIN};
        cr_assert_geq(poll(&pfd, 1, 20000), 1, "the pool's fd became readable");
        nodepool_event ev;
        while (nodepool_next(p, &ev)) {
            if (ev.kind == NODEPOOL_DONE)
                return ev;
            nodepool_event_free(&ev);
        }
    }
}

Test(nodepool, unreachable_nodes_fail_through_events)
{
    int port;
    int quiet = silent_listener(&port);
    struct cluster_node nodes[2] = {make_node("closed", closed_port()), make_node("quiet", port)};
    struct cluster c = {.n_nodes = 2, .nodes = nodes};
    nodepool *p;
    char err[256];
    nodepool_opts o = {.timeout_ms = 500, .ssh_config = "/dev/null"};
    cr_assert_eq(nodepool_new(&c, &o, &p, err, sizeof err), 0, "%s", err);
    nodectl_req req = {.op = NODECTL_STATUS};
    long j0 = nodepool_submit(p, 0, &req, err, sizeof err);
    long j1 = nodepool_submit(p, 1, &req, err, sizeof err);
    cr_assert_gt(j0, 0);
    cr_assert_gt(j1, j0);
    for (int k = 0; k < 2; k++) {
        nodepool_event ev = next_done(p);
        cr_assert(!ev.result.ok);
        if (ev.job == j0) {
            cr_assert_eq(ev.node, 0);
            cr_assert(strstr(ev.result.error, "Connection refused"), "%s", ev.result.error);
        } else {
            cr_assert_eq(ev.job, j1);
            cr_assert_eq(ev.node, 1);
            cr_assert(strstr(ev.result.error, "Timeout"), "%s", ev.result.error);
        }
    }
    nodepool_event ev;
    cr_assert_eq(nodepool_next(p, &ev), 0, "one DONE per job, nothing more");
    struct pollfd pfd = {.fd = nodepool_fd(p), .events = POLLIN};
    cr_assert_eq(poll(&pfd, 1, 0), 0, "the fd is quiet once the queue is empty");
    nodepool_free(p);
    close(quiet);
}

/* A job queued behind one that is still connecting is cancelled at once. */
Test(nodepool, queued_job_cancels)
{
    int port;
    int quiet = silent_listener(&port);
    struct cluster_node node = make_node("quiet", port);
    struct cluster c = {.n_nodes = 1, .nodes = &node};
    nodepool *p;
    char err[256];
    nodepool_opts o = {.timeout_ms = 1000, .ssh_config = "/dev/null"};
    cr_assert_eq(nodepool_new(&c, &o, &p, err, sizeof err), 0, "%s", err);
    nodectl_req status = {.op = NODECTL_STATUS}, exec = {.op = NODECTL_EXEC, .command = "true"};
    long first = nodepool_submit(p, 0, &status, err, sizeof err);
    long second = nodepool_submit(p, 0, &exec, err, sizeof err);
    nodepool_cancel(p, second);
    nodepool_event ev = next_done(p);
    cr_assert_eq(ev.job, second, "the cancelled job ends first");
    cr_assert(ev.result.cancelled && ev.result.ok);
    ev = next_done(p);
    cr_assert_eq(ev.job, first);
    cr_assert(!ev.result.ok);
    cr_assert_eq(nodepool_submit(p, 3, &status, err, sizeof err), -1);
    cr_assert(strstr(err, "no node 3"), "%s", err);
    nodepool_free(p);
    close(quiet);
}
