/* action.h: what the operator asked for, as the console's views hand it
 * to the loop that carries it out (tui/cmd/app.c) and to the hooks beside
 * it (hooks.h): quit, a live config change, a node action over SSH. */
#ifndef ACTION_H
#define ACTION_H

#include "engine/proto/protocol.h"

/* The node field of an action aimed at every node. */
#define ACT_ALL_NODES (-1)

enum action_kind {
    ACT_QUIT,       /* the operator pressed q */
    ACT_SET_CONFIG, /* send `set` with .set to .node (or every node for ACT_ALL_NODES) */
    /* Node process control over SSH, already confirmed by the operator. */
    ACT_NODE_START,
    ACT_NODE_STOP,
    ACT_NODE_RESTART,
    ACT_PLAN_APPLY /* apply the layout the Plan view proposed, already confirmed */
};

struct action {
    enum action_kind kind;
    int node;           /* node index, or ACT_ALL_NODES */
    proto_set_args set; /* ACT_SET_CONFIG */
};

#endif
