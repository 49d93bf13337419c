/* knobs.c: a set applied by restart (knobs.h). */
#include "knobs.h"

#include <stdio.h>

#include "nodectl.h"
#include "tui/core/knobline.h"
#include "tui/engine/eng_knob.h"

int knobs_start_line(const struct cluster_node *n, const char *from, const proto_set_args *want,
                     char *out, size_t outlen, char *err, size_t errlen)
{
    char why[512], what[64];
    const char *line = from ? from : n->start;
    eng_knob_describe(want, what, sizeof what);
    if (knobline_rewrite((eng_kind)n->engine, line, want, out, outlen, why, sizeof why) != 0) {
        snprintf(err, errlen, "node %s: %s", n->name, why);
        return -1;
    }
    if (!n->ssh_host[0] || !line[0]) {
        snprintf(err, errlen,
                 "node %s: %s is applied by restart on %s, and the node has no %s in the "
                 "cluster file",
                 n->name, what, eng_name((eng_kind)n->engine),
                 n->ssh_host[0] ? "`start` line" : "`ssh` key");
        return -1;
    }
    return 0;
}

void knobs_applied(const proto_set_args *want, double took_s, char *buf, size_t len)
{
    char what[64];
    eng_knob_describe(want, what, sizeof what);
    snprintf(buf, len, "%s applied by restart in %.1f s", what, took_s);
}

int knobs_apply(const struct cluster *c, int node, const proto_set_args *want, double *took_s,
                char *err, size_t errlen)
{
    const struct cluster_node *n = &c->nodes[node];
    char line[CLUSTER_START_MAX];
    sshconn *conn;
    if (knobs_start_line(n, NULL, want, line, sizeof line, err, errlen) != 0 ||
        nodectl_connect(n, NULL, 0, c->connect_timeout_s * 1000, &conn, err, errlen) != 0)
        return -1;
    nodectl_req req = {.op = NODECTL_RESTART, .start = line};
    nodectl_result r;
    int rc = nodectl_run(conn, n, &req, NULL, &r);
    sshconn_close(conn);
    *took_s = r.took_s;
    if (rc != 0 || !r.ok) {
        snprintf(err, errlen, "node %s: the restart with the new start line failed: %s", n->name,
                 r.error[0] ? r.error : "the connection was lost");
        return -1;
    }
    return 0;
}
