/* plan_apply.h: putting a layout in place over SSH.
 *
 * A ring cannot change its stages while it runs, so the apply restarts it,
 * in an order that never lets a request into a half-built ring:
 *   1. the cluster file with the new layers is written beside the old
 *      one and loaded back (plan_file.h): the command lines to start are
 *      the new file's;
 *   2. every node is stopped, all at once;
 *   3. the nodes are started one by one from the tail to the head, so the
 *      head, which takes requests, comes up last;
 *   4. it waits until every node reports its new range and all report
 *      the same model fingerprint;
 *   5. only then does the new file replace the old.
 * Each step is reported through `say` as it happens. A failure stops the
 * apply where it is: the report says which node is in which state
 * (running the old layout, stopped, started, up with the new layout) and
 * the old file is left as it was.
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
 * NULL) is the new file loaded. -1 with err (the failing step); the node
 * states were said by then. */
int plan_apply(const struct cluster *c, const int *first, const int *last, const nodepool_opts *o,
               int wait_s, plan_say_fn say, void *ctx, struct cluster **out, char *err,
               size_t errlen);

#endif
