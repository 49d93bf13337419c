/* poolctl: drives one node through the node pool the console uses, so an
 * end-to-end test can see its connection being reused and re-established.
 *
 *   poolctl CLUSTER_FILE NODE [--accept-new]
 *
 * Reads operations from stdin, one per line ("status", "facts", or
 * "exec COMMAND"), runs each through one nodepool (one worker, one
 * connection kept between lines) and prints one line per operation:
 * "ok DETAIL" or "failed ERROR". Exits 0 at the end of input. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/core/cluster.h"
#include "tui/ssh/nodepool.h"

/* Runs one request and waits for its DONE event. */
static void run(nodepool *p, int node, const nodectl_req *req)
{
    char err[512];
    long job = nodepool_submit(p, node, req, err, sizeof err);
    if (job < 0) {
        printf("failed %s\n", err);
        return;
    }
    for (;;) {
        struct pollfd pfd = {.fd = nodepool_fd(p), .events = POLLIN};
        poll(&pfd, 1, 1000);
        nodepool_event ev;
        while (nodepool_next(p, &ev)) {
            int done = ev.job == job && ev.kind == NODEPOOL_DONE;
            if (done)
                printf("%s %s\n", ev.result.ok ? "ok" : "failed",
                       ev.result.ok ? ev.result.detail : ev.result.error);
            nodepool_event_free(&ev);
            if (done)
                return;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--accept-new") != 0)) {
        fprintf(stderr, "usage: poolctl CLUSTER_FILE NODE [--accept-new]\n");
        return 2;
    }
    char err[1024];
    struct cluster *c;
    if (cluster_load(argv[1], &c, err, sizeof err) != 0) {
        fprintf(stderr, "poolctl: %s\n", err);
        return 1;
    }
    const struct cluster_node *n = cluster_node_find(c, argv[2]);
    nodepool *p;
    nodepool_opts o = {.timeout_ms = 5000, .accept_new = argc == 4};
    if (!n || nodepool_new(c, &o, &p, err, sizeof err) != 0) {
        fprintf(stderr, "poolctl: %s\n", n ? err : "no such node");
        cluster_free(c);
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        nodectl_req req = {.op = NODECTL_STATUS};
        if (strncmp(line, "exec ", 5) == 0) {
            req.op = NODECTL_EXEC;
            req.command = line + 5;
        } else if (nodectl_op_parse(line, &req.op) != 0 || req.op == NODECTL_EXEC) {
            printf("failed unknown operation '%s'\n", line);
            continue;
        }
        run(p, (int)(n - c->nodes), &req);
    }
    nodepool_free(p);
    cluster_free(c);
    return 0;
}
