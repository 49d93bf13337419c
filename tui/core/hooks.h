/* hooks.h: how what runs beside the console plugs into its loop
 * (tui/cmd/app.c) without the loop knowing it: the demo's processes, the
 * SSH driver of a cluster file's nodes (tui/ssh/remote.h). */
#ifndef HOOKS_H
#define HOOKS_H

#include <stddef.h>

#include "action.h"

/* What the caller adds to the loop: node control and whatever runs beside
 * the console (the demo: its child processes and its load; a cluster file:
 * its nodes over SSH, remote.h). Every field may be NULL. */
struct app_hooks {
    void *ctx;
    /* Called on every turn of the loop; a child process that changes
     * state (SIGCHLD) or a readable fd (below) makes a turn at once.
     * Returns when it wants the next turn at the latest (INFINITY: no
     * wish), and 1 in *changed when it changed the state. */
    double (*tick)(void *ctx, double now, int *changed);
    /* A node action the operator asked for (ACT_NODE_START, _STOP,
     * _RESTART; stop and restart confirmed). 0, or -1 with err filled.
     * NULL: node control is not available for this cluster. */
    int (*node_action)(void *ctx, enum action_kind kind, int node, double now, char *err,
                       size_t errlen);
    /* A set of the Config view for a node that takes it by restart (an
     * engine other than inferd, tui/ssh/knobs.h): 0 once asked (the outcome
     * goes to the node's events), or -1 with err filled (a value the engine
     * cannot express, no `ssh` or `start`). NULL: not available. */
    int (*set_knobs)(void *ctx, int node, const proto_set_args *want, double now, char *err,
                     size_t errlen);
    /* A descriptor polled with the rest, for results that other threads
     * post; -1 when there is none. Asked on every turn. */
    int (*fd)(void *ctx);
    /* The node view shows `node` now, or no node at all (-1). Called when
     * that changes. */
    void (*watch)(void *ctx, int node, double now);
};

#endif
