/* plan_gather.h: a plan's inputs from what can be known of a cluster.
 *
 * A node's budget is, in this order of preference:
 *   status     the budget a running node reports (its --mem-limit, cgroup
 *              limit and RSS + MemAvailable, whichever is least)
 *   facts      MemAvailable over SSH (`nodes facts`), capped by the file's
 *              mem_limit: what the node would have if started now
 *   mem_limit  the cluster file's
 * A running node also gives its runtime memory, prefill_step, threads and
 * current layers; otherwise the file's `threads` and `layers` are used,
 * and PLAN_RUNTIME_DEFAULT and PLAN_PREFILL_DEFAULT.
 *
 * Nodes on one host share its memory (plan_share_hosts): the host is the
 * boot id a running node reports (processes on one kernel share its
 * memory, containers included), else a down node's SSH host. Its pool is
 * its MemAvailable plus what its running nodes hold (RSS), counted once, and
 * each of its k nodes gets pool / k, capped by its own limit (mem_limit,
 * cgroup). An even split rather than one pooled constraint: the layout
 * search stays per node, and a node never plans on memory another one of
 * the same host was counted with.
 */
#ifndef PLAN_GATHER_H
#define PLAN_GATHER_H

#include <stddef.h>

#include "engine/proto/protocol.h"
#include "plan.h"
#include "tui/core/cluster.h"
#include "tui/ssh/nodepool.h"

/* What is known of one node. */
typedef struct plan_seen {
    int up; /* status holds its answer */
    proto_status status;
    int has_facts;
    nodectl_facts facts;
} plan_seen;

enum plan_from { PLAN_FROM_NONE, PLAN_FROM_STATUS, PLAN_FROM_FACTS, PLAN_FROM_FILE };

/* "status", "facts", "mem_limit" or "-". */
const char *plan_from_name(enum plan_from f);

/* Asks every node for its status at once and waits up to timeout_ms for
 * them all; a node that does not answer stays !up. seen[] has a slot per
 * node and is cleared first. */
void plan_ask_status(const struct cluster *c, int timeout_ms, plan_seen *seen);

/* Asks the nodes that are not up and have an SSH target for their facts,
 * over one pool (o: its options), and waits for them all. */
void plan_ask_facts(const struct cluster *c, const nodepool_opts *o, plan_seen *seen);

/* Fills in's nodes (and n_nodes) in the file's order, each host's memory
 * split between its nodes (host_nodes: how many); from[i] says where
 * node i's budget came from. -1 with err naming a node without any. */
int plan_fill_nodes(const struct cluster *c, const plan_seen *seen, plan_input *in,
                    enum plan_from *from, char *err, size_t errlen);

/* The model to plan for, into *m: `given` (probed) when not NULL, else
 * the shape the running nodes report in their status (no file needed;
 * -1 when they run different weights), else the file's `model` when
 * every node names the same one, else the embedded or synthetic model a
 * running node names. m holds the previous pick or zeros: a spec equal
 * to it is not read again. -1 with err when none of these says. */
int plan_pick_model(const struct cluster *c, const plan_seen *seen, const char *given,
                    plan_model *m, char *err, size_t errlen);

/* The kv_bits the running nodes share, else 16 (inferd's default). */
int plan_pick_kv_bits(const struct cluster *c, const plan_seen *seen);

#endif
