/* plan_file.h: a cluster file with new layer ranges.
 *
 * The file is rewritten line by line, so that comments and the order of
 * everything stay: each node's `layers` line gets its new range (a node
 * without one gets it right after its section header), and a `--layers
 * A:B` in an explicit `start` line is changed to match. The result goes
 * to a temporary file beside dst, is synced to disk, loaded back and
 * checked (every node's range, every start line's --layers), and only
 * then renamed over dst, whose folder is synced too: dst is either the
 * new file, whole, or untouched.
 */
#ifndef PLAN_FILE_H
#define PLAN_FILE_H

#include <stddef.h>

#include "tui/core/cluster.h"

/* Writes c's file (c->path) with node i holding [first[i], last[i]) to
 * dst, which may be c->path itself. On success *out (when not NULL) is
 * the new file loaded. -1 with err, and dst untouched. */
int plan_file_write(const struct cluster *c, const int *first, const int *last, const char *dst,
                    struct cluster **out, char *err, size_t errlen);

/* Renames from over to and syncs the folder of to, so that the rename
 * survives a crash. -1 with err. */
int plan_file_commit(const char *from, const char *to, char *err, size_t errlen);

#endif
