/* links.h: the console's connections to the nodes of a cluster.
 *
 * One SUB socket connected to every node's telemetry endpoint, and a
 * DEALER (engine/proto/client.h) per node's control endpoint. Telemetry goes
 * straight into the state (state.h); control requests are tracked by id
 * with a deadline, and each ends exactly once in its callback: with the
 * node's final frame, or with a timeout when the node stays silent.
 *
 * Nothing here waits: the caller polls the sockets (links_poll_items) with
 * its other file descriptors and hands the ready ones back to
 * links_process. Time is passed in (`now`, seconds on the caller's
 * monotonic clock), never read, so that deadlines can be tested.
 *
 * Telemetry names its node in the payload (`node`). That is normally the
 * cluster file's node name (the demo and the example start commands pass
 * it as --name); a node started under another name is recognised by the
 * name its status reply gives (see links_identify).
 */
#ifndef LINKS_H
#define LINKS_H

#include <stddef.h>

#include <jansson.h>
#include <zmq.h>

#include "engine/proto/protocol.h"
#include "state.h"

struct cluster;

typedef struct links links;

/* How long a request may go without a frame from its node. */
#define LINKS_TIMEOUT_S 10.0
/* A node whose status reply is still missing is asked again this often. */
#define LINKS_HELLO_PERIOD_S 10.0

/* How a request ended. */
struct links_reply {
    int node;            /* the node it was sent to */
    int ok;              /* 1 the node said ok, 0 it refused, -1 no answer in time */
    const char *code;    /* "" when ok; the node's error code, or "timeout" */
    const char *message; /* "" when ok; why not, for humans */
    const json_t *json;  /* the final frame (borrowed for the call), NULL on timeout */
    double now;          /* when it ended */
};

typedef void (*links_done_fn)(void *ctx, const struct links_reply *r);

/* Connects to every node of the cluster; the state's nodes are the
 * cluster's, in the same order. Both are borrowed and must outlive the
 * links. Connecting never waits: ZeroMQ reconnects on its own, so a node
 * that is down now is picked up when it comes up. */
int links_open(links **out, const struct cluster *c, state *st, double now, char *err,
               size_t errlen);
/* Ends every request in flight without calling its callback. NULL is fine. */
void links_close(links *l);

/* The items for zmq_poll: the telemetry SUB first when `telemetry` is 1,
 * then the DEALER of each node with a request in flight. Returns how many
 * were written, at most links_poll_max(). */
int links_poll_items(const links *l, int telemetry, zmq_pollitem_t *items, int max);
int links_poll_max(const links *l);

/* Reads, without waiting, every message on the sockets zmq_poll found
 * ready among items (as links_poll_items filled them): telemetry into the
 * state, replies to their requests' callbacks. Returns how many messages
 * were taken in; more than 0 means the state may have changed. */
int links_process(links *l, const zmq_pollitem_t *items, int n, double now);

/* Reads the telemetry queued now, without polling for it first (a caller
 * that reads on a clock rather than when the SUB is ready). Returns how
 * many messages were taken in. */
int links_read_telemetry(links *l, double now);

/* From now on, asks every node not yet identified for its status: at once
 * (at the next links_tick), then every LINKS_HELLO_PERIOD_S while it stays
 * silent. The dashboard wants this; a one-shot CLI verb does not. */
void links_identify(links *l);

/* Ends the requests whose deadline has passed (their callbacks get a
 * timeout), logs the connections to themselves the sockets dropped (a
 * `self_connect` event: selfconn.h) and sends the identification requests
 * that are due. Returns how many requests ended plus events logged. */
int links_tick(links *l, double now);

/* The earliest time links_tick has something to do; INFINITY when never. */
double links_next_deadline(const links *l);

/* Sends {"op": op, ...args} to a node. done(ctx, reply) is called once
 * when it ends (never from within this call). timeout_s: the longest
 * silence from the node (token frames of a generate count as signs of
 * life). -1 with err filled when it could not be sent; then done is not
 * called. */
int links_request(links *l, int node, const char *op, const json_t *args, double timeout_s,
                  double now, links_done_fn done, void *ctx, char *err, size_t errlen);

/* Sends `set` to one node, or to every node when node is -1, and records
 * it in the state (state_config_request, then state_config_reply when the
 * node answers). node < 0: every inferd node, a ring through one door: a
 * stage that does not hold layer 0 is sent nothing when a ring's head is
 * among the nodes, whose two rounds check the set on every stage before
 * any applies; the head's answer is the stages' too (a stage's own
 * request would apply a set another stage refused, and twice).
 * Returns how many nodes it could not send to (each also marked failed in
 * the state). */
int links_set(links *l, int node, const proto_set_args *want, double now);

/* The arguments of a `set` request: {"prefill_step": N|"auto", "kv_bits": B},
 * each when given. NULL when out of memory. */
json_t *links_set_args_json(const proto_set_args *want);

/* Requests still waiting for their end. */
int links_pending(const links *l);

/* The name a node's status reply gave, "" until one came. */
const char *links_node_reported_name(const links *l, int node);

#endif
