/* desired_sync.h: the console keeps the nodes at their desired settings.
 *
 * Each turn of the console's loop: the state file (desired.h) is read
 * again when it changed on disk (another `infertop set`); a set the
 * console itself sent and a node accepted is recorded in it; and a node
 * that comes back (it restarted, at its command line's defaults) and
 * lacks a desired setting is sent it. Other drift is shown, not undone:
 * a sweep run elsewhere changes settings on purpose. On a ring
 * whose stages all want the same, that set goes through the head's two
 * rounds (links_set to every node), not stage by stage.
 */
#ifndef DESIRED_SYNC_H
#define DESIRED_SYNC_H

#include "cluster.h"
#include "desired.h"
#include "links.h"
#include "state.h"

typedef struct desired_sync desired_sync;

/* For the cluster file c->path (borrowed, must outlive it). NULL when out
 * of memory or no thread. A thread of its own reads the file (at once,
 * then when it changes) and writes it, so that the loop never waits for
 * the disk; freeing waits for a write still queued. */
desired_sync *desired_sync_new(const struct cluster *c);
void desired_sync_free(desired_sync *ds);

/* reapplying 0: record and watch only (a read-only console, a stress run
 * of its own going). */
void desired_sync_tick(desired_sync *ds, state *st, links *l, int reapplying, double now);

/* What the views show: the desired settings node's config lacks (1 when
 * any, into *drift). */
int desired_sync_drift(const desired_sync *ds, const state *st, int node, proto_set_args *drift);

#endif
