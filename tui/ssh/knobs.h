/* knobs.h: kv_bits and prefill_step on a node of an engine that takes them
 * by restart (tui/engine/eng_knob.h): its start line rewritten
 * (tui/core/knobline.h), then a restart over SSH with that line, which
 * ends when the engine's URL answers again (nodectl.h).
 *
 * The cluster file is never written: a set is the running node's, as an
 * inferd node's live set is, and `nodes restart` from a shell runs the
 * file's line again. Within one console the line a set restarted with is
 * the one the node's later restarts use (remote.h).
 */
#ifndef KNOBS_H
#define KNOBS_H

#include <stddef.h>

#include "engine/proto/protocol.h"
#include "tui/core/cluster.h"

/* The start line node n runs with want (from its line `from`, NULL: its
 * `start`), to out. -1 with err naming the node, the knob and what its
 * engine supports, or what the node lacks to be restarted (`ssh`, a
 * `start` line). */
int knobs_start_line(const struct cluster_node *n, const char *from, const proto_set_args *want,
                     char *out, size_t outlen, char *err, size_t errlen);

/* "kv_bits 8 applied by restart in 4.2 s" */
void knobs_applied(const proto_set_args *want, double took_s, char *buf, size_t len);

/* Blocking: applies want to node `node` of c by restart (a connection of
 * its own, c's connect timeout) and returns when the engine answers again,
 * with *took_s the stop, start and wait. -1 with err when the set is
 * refused or the restart failed (the node may then be down: err says how
 * far it got). For the stress runner's sweeps, between legs. */
int knobs_apply(const struct cluster *c, int node, const proto_set_args *want, double *took_s,
                char *err, size_t errlen);

#endif
