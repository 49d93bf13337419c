/* desired.h: the settings the operator set, kept beside the cluster file.
 *
 * `infertop set` and the console's Config view record each setting a
 * node accepted in FILE.state next to the cluster file FILE (an INI file,
 * one section per node):
 *
 *   [node a]
 *   kv_bits = 8
 *   prefill_step = auto
 *
 * Keys are the live rows of the settings table (engine/proto/opt.h), each
 * value checked by its row. The console re-applies them to a node that
 * comes back with other values, and every view shows the difference
 * (drift). Writing is atomic: a temporary file, fsync, rename, fsync of
 * the folder. A file that does not parse is an error naming file and line,
 * and is never written over.
 */
#ifndef DESIRED_H
#define DESIRED_H

#include <stddef.h>

#include "cluster.h"
#include "engine/proto/opt.h"
#include "engine/proto/protocol.h"

struct desired_node {
    char name[CLUSTER_NAME_MAX];
    proto_set_args set; /* the settings recorded (has_* for each) */
};

struct desired {
    char path[CLUSTER_PATH_MAX + 8];
    int n;
    struct desired_node *nodes;
};

/* The state file of the cluster file `cluster_path`. -1 when too long. */
int desired_path(const char *cluster_path, char *out, size_t len);

/* Reads `path` into *d (which then owns memory: desired_free). A missing
 * file is an empty one. -1 with "FILE:LINE: why" in err when it does not
 * parse; *d is then empty. */
int desired_load(const char *path, struct desired *d, char *err, size_t errlen);
void desired_free(struct desired *d);
/* *dst becomes a copy of *src (dst's old memory is not freed). -1 when
 * out of memory, dst then empty. */
int desired_copy(struct desired *dst, const struct desired *src);

/* Writes *d to d->path atomically. -1 with err naming the file. */
int desired_save(const struct desired *d, char *err, size_t errlen);

/* Adds what `set` holds to node's record (a key given replaces the old
 * value, one not given stays). -1 when out of memory. */
int desired_record(struct desired *d, const char *node, const proto_set_args *set);

/* The node's record, NULL when it has none. */
const proto_set_args *desired_get(const struct desired *d, const char *node);

/* One SETTING of `set` (a live row of the settings table), its value
 * checked by the row into *a; -1 with err when bad or given twice. */
int desired_setting(opt_id id, const char *value, proto_set_args *a, char *err, size_t errlen);

/* The settings of `want` a node whose config is kv_bits and prefill_step
 * (0 resp. -1 when not known) does not have, into *drift. Returns 1 when
 * it lacks any, 0 when it has them all or is not known yet. */
int desired_drift(const proto_set_args *want, int kv_bits, int prefill_step, proto_set_args *drift);

/* "kv_bits=8 prefill_step=auto": the keys of `set` that are given. */
void desired_describe(const proto_set_args *set, char *buf, size_t len);

#endif
