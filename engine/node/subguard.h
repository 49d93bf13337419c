/* subguard.h: cuts off telemetry subscribers that send more than a
 * subscriber ever needs.
 *
 * A subscriber sends a handshake and a few subscriptions, some hundred
 * bytes (CURVE's handshake is the longest), and then at most ZMTP
 * heartbeats. ZeroMQ keeps every subscription it receives, and takes them
 * in on the node's own thread as fast as they come, so only a watch from
 * outside that thread bounds what a connection can make it hold: a thread
 * of its own follows the socket's connections (its monitor) and reads how
 * many bytes each has received (TCP_INFO); one past SUBGUARD_BYTES, plus
 * SUBGUARD_BYTES_PER_S for each second it has been open, is shut down, and
 * ZeroMQ frees what it held when it sees the connection close.
 */
#ifndef SUBGUARD_H
#define SUBGUARD_H

#include <stddef.h>

#define SUBGUARD_BYTES 4096
#define SUBGUARD_BYTES_PER_S 64

typedef struct subguard subguard;

/* Watches the connections of sock, a socket of zctx about to be bound to
 * endpoint (only tcp:// endpoints are watched). */
int subguard_start(subguard **out, void *zctx, void *sock, const char *endpoint, char *err,
                   size_t errlen);
/* Stops the thread and the socket's monitor; call before closing sock. */
void subguard_stop(subguard *g);

#endif
