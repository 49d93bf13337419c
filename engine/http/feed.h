/* feed.h: the HTTP server's view of the nodes, from their telemetry.
 *
 * A thread of its own reads a SUB socket connected to one or more
 * telemetry endpoints and takes every message into the metrics
 * (metrics.h); it also keeps the last heartbeat's status, which tells the
 * API the model's name, its chat format and whether the node is the head.
 * The node pays nothing for it beyond publishing to one more subscriber.
 */
#ifndef FEED_H
#define FEED_H

#include <stddef.h>

#include "engine/proto/protocol.h"

typedef struct feed feed;

/* Subscribes to every endpoint (in zctx) and starts the thread. */
int feed_start(feed **out, void *zctx, const char *const *endpoints, int n, char *err,
               size_t errlen);
void feed_stop(feed *f);

/* The metrics' exposition text (free()), or NULL when out of memory. */
char *feed_metrics(feed *f, size_t *len);

/* GET /slots: the requests in flight on the node, from their `req`
 * telemetry (llama.cpp's shape, one entry a request rather than a place):
 * a JSON array (free()), or NULL when out of memory. */
char *feed_slots(feed *f);

/* The last heartbeat's status, waiting at most wait_ms for the first one.
 * Returns 0, or -1 when none came. */
int feed_status(feed *f, proto_status *out, int wait_ms);

#endif
