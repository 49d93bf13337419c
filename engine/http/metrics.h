/* metrics.h: Prometheus metrics computed from telemetry.
 *
 * Every figure is derived from the messages a node publishes anyway (step,
 * node, req, event; engine/PROTOCOL.md section 3), so serving metrics costs
 * the node's step path nothing: a subscriber takes the messages in here and
 * a scrape renders them in the text exposition format. One series per node
 * (`node` label): the same module serves one node's own /metrics and
 * `infertop metrics`, the merged view of a cluster. The names, units and
 * labels are listed in engine/http/README.md.
 *
 * Not thread-safe: the caller serialises metrics_take and metrics_render.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stddef.h>

#include "engine/proto/protocol.h"

/* Nodes tracked at most: telemetry is untrusted, and a flood of made-up
 * node names must not grow memory without bound. Later ones are ignored. */
#define METRICS_NODES_MAX 256
/* A node without a heartbeat for this long is down (inferd_up 0). */
#define METRICS_DOWN_S 3.0

typedef struct metrics metrics;

metrics *metrics_new(void); /* NULL when out of memory */
void metrics_free(metrics *m);

/* Takes in one decoded telemetry message; now: seconds on the caller's
 * monotonic clock. */
void metrics_take(metrics *m, const proto_tel *t, double now);

/* The exposition text (text/plain; version=0.0.4), NUL-terminated, for
 * the caller to free; NULL when out of memory. */
char *metrics_render(const metrics *m, double now, size_t *len);

#endif
