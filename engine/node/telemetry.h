/* telemetry.h: a node's publisher and the sequence number its messages
 * carry (a subscriber counts gaps in seq as lost messages).
 *
 * Publishing never blocks the node: the socket drops messages for a
 * subscriber that does not keep up, which is what seq makes visible.
 *
 * The socket is an XPUB that applies subscriptions itself: only a prefix
 * of a topic the node publishes ("", "s", ..., "step", "event") is
 * applied, so that a connection holds at most TEL_PREFIXES subscriptions,
 * shared by all. Anything else could never match a message, but ZeroMQ
 * keeps every subscription it receives: a connection that sends a message
 * over 64 bytes (512 with CURVE, whose handshake is longer) is dropped
 * (ZMQ_MAXMSGSIZE), one that sends more than a subscriber needs is cut
 * off (subguard.h), and after 256 that match no topic the socket is
 * reopened, which frees them (subscribers reconnect and subscribe again by
 * themselves).
 */
#ifndef TELEMETRY_H
#define TELEMETRY_H

#include <stddef.h>

#include <jansson.h>

#include "engine/proto/curve.h"
#include "engine/proto/protocol.h"

typedef struct tel tel;

/* "" and every prefix of step, node, req and event. */
#define TEL_PREFIXES 18

/* Binds the socket on endpoint. curve: the node's key pair to make it a
 * CURVE server, or NULL. */
int tel_open(tel **out, void *zctx, const char *endpoint, const char *node,
             const curve_keypair *curve, char *err, size_t errlen);
void tel_close(tel *t);
/* Binds the PUB on one more endpoint (an inproc one for a companion). */
int tel_bind(tel *t, const char *endpoint, char *err, size_t errlen);

/* The socket, for zmq_poll: readable when subscriptions wait. NULL while
 * reopening it has failed (tel_subscriptions tries again). */
void *tel_socket(tel *t);
/* Applies (or ignores) every subscription and unsubscription waiting.
 * Returns 0, or 1 when it reopened the socket and -1 when that failed,
 * with a message for the log. */
int tel_subscriptions(tel *t, char *err, size_t errlen);

void tel_step(tel *t, const proto_step *s);
void tel_node(tel *t, const proto_status *s);
void tel_req(tel *t, const proto_req_msg *m);

/* An event: req and code may be "" (or NULL); detail: kind-specific
 * fields, or NULL. The message is printf-style. */
void tel_event(tel *t, proto_event_kind kind, const char *req, const char *code,
               const json_t *detail, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
