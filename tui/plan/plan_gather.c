/* plan_gather.c: budgets, runtime memory, ranges and the model, from a
 * cluster's live status, its facts over SSH and its file (plan_gather.h). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/client.h"
#include "engine/sys/clock.h"
#include "plan_gather.h"
#include "plan_int.h"

const char *plan_from_name(enum plan_from f)
{
    static const char *const names[] = {"-", "status", "facts", "mem_limit"};
    return names[f];
}

/* ---- status ---- */

/* Takes node i's answer, if it comes before the deadline. */
static void take_status(client *cl, double deadline_ms, plan_seen *seen)
{
    char err[256];
    for (;;) {
        double left = deadline_ms - clock_ms();
        proto_reply rep;
        if (left <= 0 || client_recv(cl, &rep, (int)left + 1, err, sizeof err) != 1)
            return;
        int done = rep.done, ok = rep.ok;
        if (done && ok && proto_status_from_json(rep.json, &seen->status, err, sizeof err) == 0)
            seen->up = 1;
        proto_reply_free(&rep);
        if (done)
            return;
    }
}

void plan_ask_status(const struct cluster *c, int timeout_ms, plan_seen *seen)
{
    client *cl[PLAN_NODES_MAX] = {0};
    char err[256];
    int n = c->n_nodes < PLAN_NODES_MAX ? c->n_nodes : PLAN_NODES_MAX;
    memset(seen, 0, (size_t)c->n_nodes * sizeof *seen);
    for (int i = 0; i < n; i++)
        if (client_open(&cl[i], NULL, c->nodes[i].control, NULL, err, sizeof err) != 0 ||
            client_send(cl[i], "status", NULL, NULL, 0, err, sizeof err) != 0) {
            client_close(cl[i]);
            cl[i] = NULL;
        }
    /* The requests went out together: one deadline bounds every wait. */
    double deadline = clock_ms() + timeout_ms;
    for (int i = 0; i < n; i++)
        if (cl[i])
            take_status(cl[i], deadline, &seen[i]);
    for (int i = 0; i < n; i++)
        client_close(cl[i]);
}

/* ---- facts ---- */

void plan_ssh_each(nodepool *p, const nodectl_req *reqs, const int *nodes, int n,
                   nodectl_result *res)
{
    long jobs[PLAN_NODES_MAX];
    char err[256];
    int left = 0;
    for (int k = 0; k < n; k++) {
        memset(&res[k], 0, sizeof res[k]);
        jobs[k] = nodepool_submit(p, nodes[k], &reqs[k], err, sizeof err);
        if (jobs[k] < 0)
            snprintf(res[k].error, sizeof res[k].error, "%s", err);
        else
            left++;
    }
    while (left > 0) {
        struct pollfd pfd = {.fd = nodepool_fd(p), .events = POLLIN};
        poll(&pfd, 1, 1000);
        nodepool_event ev;
        while (nodepool_next(p, &ev)) {
            for (int k = 0; k < n; k++)
                if (ev.kind == NODEPOOL_DONE && ev.job == jobs[k]) {
                    res[k] = ev.result;
                    left--;
                }
            nodepool_event_free(&ev);
        }
    }
}

void plan_ssh_run(nodepool *p, nodectl_op op, const int *nodes, int n, nodectl_result *res)
{
    nodectl_req reqs[PLAN_NODES_MAX];
    for (int k = 0; k < n; k++)
        reqs[k] = (nodectl_req){.op = op};
    plan_ssh_each(p, reqs, nodes, n, res);
}

void plan_ask_facts(const struct cluster *c, const nodepool_opts *o, plan_seen *seen)
{
    int nodes[PLAN_NODES_MAX], n = 0;
    for (int i = 0; i < c->n_nodes && i < PLAN_NODES_MAX; i++)
        if (!seen[i].up && c->nodes[i].ssh_host[0])
            nodes[n++] = i;
    nodepool *p;
    char err[256];
    if (n == 0 || nodepool_new(c, o, &p, err, sizeof err) != 0)
        return;
    nodectl_result *res = calloc((size_t)n, sizeof *res);
    if (res) {
        plan_ssh_run(p, NODECTL_FACTS, nodes, n, res);
        for (int k = 0; k < n; k++)
            if (res[k].ok && res[k].facts.mem_available_kb > 0) {
                seen[nodes[k]].has_facts = 1;
                seen[nodes[k]].facts = res[k].facts;
            }
    }
    free(res);
    nodepool_free(p);
}

static uint64_t least(uint64_t a, uint64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

/* ---- hosts ---- */

/* What node i says of the memory of its host: its key (the boot id a
 * running node reports, else its SSH host), the host's MemAvailable,
 * what the node holds of it now, and its own limit. 0 when it cannot say
 * (an older node, no facts). */
struct host_view {
    char key[CLUSTER_HOST_MAX + 8];
    uint64_t available, held, limit;
};

static int host_of(const struct cluster *c, const plan_seen *seen, int i, struct host_view *h)
{
    const plan_seen *s = &seen[i];
    memset(h, 0, sizeof *h);
    if (s->up) {
        const proto_status *st = &s->status;
        if (!st->host_id[0] || !st->memory.host_available)
            return 0;
        snprintf(h->key, sizeof h->key, "boot:%s", st->host_id);
        h->available = st->memory.host_available;
        /* RSS, not used: weights not paged in yet are still part of
         * MemAvailable, and the plan counts every weight itself. */
        h->held = st->memory.rss;
        h->limit = st->memory.limit;
        return 1;
    }
    if (!s->has_facts || !c->nodes[i].ssh_host[0])
        return 0;
    snprintf(h->key, sizeof h->key, "ssh:%s", c->nodes[i].ssh_host);
    h->available = (uint64_t)s->facts.mem_available_kb * 1024;
    h->limit = c->nodes[i].mem_limit;
    return 1;
}

/* Each host's memory split between its nodes (plan_gather.h). */
static void share_hosts(const struct cluster *c, const plan_seen *seen, plan_input *in)
{
    struct host_view h[PLAN_NODES_MAX];
    int known[PLAN_NODES_MAX];
    for (int i = 0; i < in->n_nodes; i++) {
        known[i] = host_of(c, seen, i, &h[i]);
        in->nodes[i].host_nodes = 1;
    }
    for (int i = 0; i < in->n_nodes; i++) {
        if (!known[i])
            continue;
        /* The host's pool: its MemAvailable (the least the nodes saw: the
         * most recent use is the safer guess) and what each of its nodes
         * holds now, once. */
        uint64_t available = h[i].available, held = 0;
        int k = 0;
        for (int j = 0; j < in->n_nodes; j++)
            if (known[j] && strcmp(h[j].key, h[i].key) == 0) {
                available = h[j].available < available ? h[j].available : available;
                held += h[j].held;
                k++;
            }
        uint64_t share = (available + held) / (uint64_t)k;
        in->nodes[i].budget = least(share, h[i].limit);
        in->nodes[i].host_nodes = k;
    }
}

/* ---- the plan's nodes ---- */

/* Memory a running node holds besides its weights and KV (its scratch
 * included): used (RSS and the weights not paged in yet; an older node
 * says RSS alone) - weights - KV. */
static uint64_t runtime_of(const proto_status *s)
{
    uint64_t model = s->memory.weights_bytes + s->memory.kv_bytes;
    uint64_t used = s->memory.used > s->memory.rss ? s->memory.used : s->memory.rss;
    return used > model ? used - model : 0;
}

int plan_fill_nodes(const struct cluster *c, const plan_seen *seen, plan_input *in,
                    enum plan_from *from, char *err, size_t errlen)
{
    if (c->n_nodes > PLAN_NODES_MAX) {
        snprintf(err, errlen, "%d nodes: the planner takes up to %d", c->n_nodes, PLAN_NODES_MAX);
        return -1;
    }
    /* Layers are inferd's to place: another engine splits its model its own
     * way, and the console's node indexes are the file's, so the planner
     * does not quietly plan a part of the file. */
    for (int i = 0; i < c->n_nodes; i++)
        if (!cluster_node_is_inferd(c, i)) {
            snprintf(err, errlen,
                     "node %s runs %s: the planner places the layers of an inferd ring; plan "
                     "with a cluster file of the ring's nodes alone",
                     c->nodes[i].name, eng_name(c->nodes[i].engine));
            return -1;
        }
    in->n_nodes = c->n_nodes;
    for (int i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *cn = &c->nodes[i];
        const plan_seen *s = &seen[i];
        plan_node *n = &in->nodes[i];
        memset(n, 0, sizeof *n);
        snprintf(n->name, sizeof n->name, "%s", cn->name);
        from[i] = PLAN_FROM_NONE;
        if (s->up && s->status.memory.budget) {
            n->budget = s->status.memory.budget;
            from[i] = PLAN_FROM_STATUS;
        } else if (s->has_facts) {
            n->budget = least((uint64_t)s->facts.mem_available_kb * 1024, cn->mem_limit);
            from[i] = PLAN_FROM_FACTS;
        } else if (cn->mem_limit) {
            n->budget = cn->mem_limit;
            from[i] = PLAN_FROM_FILE;
        } else {
            snprintf(err, errlen,
                     "node %s: its memory budget is unknown: it does not answer status, %s, and "
                     "its section has no `mem_limit`",
                     cn->name, cn->ssh_host[0] ? "its facts over SSH failed" : "it has no `ssh`");
            return -1;
        }
        n->runtime = s->up ? runtime_of(&s->status) : PLAN_RUNTIME_DEFAULT;
        n->prefill_step = s->up && s->status.config.prefill_step > 0 ? s->status.config.prefill_step
                                                                     : PLAN_PREFILL_DEFAULT;
        n->threads = s->up && s->status.config.threads > 0 ? s->status.config.threads
                     : cn->threads                         ? cn->threads
                     : s->has_facts && s->facts.cores > 0  ? s->facts.cores
                                                           : 1;
        n->cur_first = s->up ? s->status.model.layer_first : cn->layer_first;
        n->cur_last = s->up ? s->status.model.layer_last : cn->layer_last;
    }
    share_hosts(c, seen, in);
    return 0;
}

/* ---- the model ---- */

/* The first running node that reports its shape; -1 when none does, -2
 * when the running nodes report different weights. */
static int shape_node(const struct cluster *c, const plan_seen *seen)
{
    int pick = -1;
    for (int i = 0; i < c->n_nodes; i++) {
        if (!seen[i].up || seen[i].status.model.n_layer_bytes <= 0)
            continue;
        if (pick < 0)
            pick = i;
        else if (strcmp(seen[i].status.model.fingerprint, seen[pick].status.model.fingerprint) != 0)
            return -2;
    }
    return pick;
}

/* The spec to probe when no node reports a shape: the file's `model` when
 * every node names the same one, else a running node's embedded or
 * synthetic model. NULL when none says. */
static const char *spec_to_probe(const struct cluster *c, const plan_seen *seen)
{
    const char *file = c->nodes[0].model[0] ? c->nodes[0].model : NULL;
    for (int i = 1; file && i < c->n_nodes; i++)
        if (strcmp(c->nodes[i].model, file) != 0)
            file = NULL;
    if (file)
        return file;
    for (int i = 0; i < c->n_nodes; i++) {
        if (!seen[i].up)
            continue;
        const char *name = seen[i].status.model.name;
        if (strcmp(name, "stories260K") == 0)
            return "embedded";
        if (strncmp(name, "synth:", 6) == 0)
            return name;
        return NULL;
    }
    return NULL;
}

int plan_pick_model(const struct cluster *c, const plan_seen *seen, const char *given,
                    plan_model *m, char *err, size_t errlen)
{
    int from = given ? -1 : shape_node(c, seen);
    if (from == -2) {
        snprintf(err, errlen,
                 "the running nodes report different model fingerprints: they do not run the "
                 "same weights; give --model SPEC to plan for one");
        return -1;
    }
    if (from >= 0)
        return plan_model_from_status(&seen[from].status, m, err, errlen);
    const char *pick = given ? given : spec_to_probe(c, seen);
    if (!pick) {
        snprintf(err, errlen,
                 "which model? no running node reports its shape: give --model SPEC (a copy of "
                 "the model file on this machine, or synth:...), or `model` in the cluster file");
        return -1;
    }
    /* The same file again: its header was read already. */
    if (strcmp(pick, m->spec) == 0 && m->cfg.n_layers > 0)
        return 0;
    return plan_model_probe(pick, m, err, errlen);
}

int plan_pick_kv_bits(const struct cluster *c, const plan_seen *seen)
{
    int bits = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        if (!seen[i].up)
            continue;
        if (bits && seen[i].status.config.kv_bits != bits)
            return 16;
        bits = seen[i].status.config.kv_bits;
    }
    return bits ? bits : 16;
}
