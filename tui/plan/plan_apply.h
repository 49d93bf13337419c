/* plan_apply.h: putting a layout in place over SSH.
 *
 * A ring cannot change its stages while it runs, so the apply restarts it,
 * in an order that never lets a request into a half-built ring, and never
 * leaves the cluster file saying something else than what runs:
 *   1. the cluster file with the new layers is written beside the old
 *      one (synced) and loaded back (plan_file.h): the command lines to
 *      start are the new file's;
 *   2. every node is checked over SSH, all at once: the binary of its
 *      start line answers --version and the model file it names can be
 *      read. One failing (SSH refused, no binary, no model) stops the
 *      apply here: nothing was stopped, and the error names the node;
 *   3. every node is stopped, all at once;
 *   4. the nodes are started one by one from the tail to the head, so the
 *      head, which takes requests, comes up last;
 *   5. it waits until every node reports its new range and all report
 *      the same model fingerprint;
 *   6. only then does the new file replace the old (renamed, its folder
 *      synced).
 * Should 3 to 5 fail, the old file's layout is brought up the same way
 * (stop all, start tail to head, wait for the old ranges) and the old
 * file stays: the error says so, or, if that fails too, which node is in
 * which state. Each step is reported through `say` as it happens.
 */
#ifndef PLAN_APPLY_H
#define PLAN_APPLY_H

#include <stddef.h>

#include "tui/core/cluster.h"
#include "tui/ssh/nodepool.h"

/* One line of progress; node is the node it is about, or -1. */
typedef void (*plan_say_fn)(void *ctx, int node, const char *line);

/* Applies node i holding [first[i], last[i]) to the cluster c (c->path is
 * the file to update). o: the SSH options. On success *out (when not
 * NULL) is the new file loaded. -1 with err (the failing step and the
 * node, and whether the old layout runs again); the node states were said
 * by then. */
int plan_apply(const struct cluster *c, const int *first, const int *last, const nodepool_opts *o,
               int wait_s, plan_say_fn say, void *ctx, struct cluster **out, char *err,
               size_t errlen);

#endif
