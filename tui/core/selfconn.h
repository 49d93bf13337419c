/* selfconn.h: drops the TCP connections of ZeroMQ sockets that reached
 * themselves.
 *
 * A socket reconnecting to a dead node on this machine may pick the
 * node's port as its own source port: the kernel then connects it to
 * itself (TCP's simultaneous open), ZeroMQ takes it for the node, and the
 * restarted node cannot bind its port for as long as that lasts. A thread
 * watches each socket's connections (zmq_socket_monitor) and shuts down at
 * once any whose two ends are one address; ZeroMQ sees it end and
 * reconnects later. The owner takes the counts to log them.
 */
#ifndef SELFCONN_H
#define SELFCONN_H

#include <stddef.h>

typedef struct selfconn selfconn;

/* Watches socks[0..n) (borrowed: they outlive the watch; NULL entries are
 * skipped), made in zctx. -1 with err. */
int selfconn_start(selfconn **out, void *zctx, void *const *socks, int n, char *err, size_t errlen);
/* Connections of socks[i] dropped since the last call; the endpoint of the
 * last into ep. */
int selfconn_take(selfconn *g, int i, char *ep, size_t eplen);
/* Stops the thread and the monitors. NULL is fine. */
void selfconn_stop(selfconn *g);

/* 1 when fd is a connected socket whose local and peer addresses are the
 * same. */
int selfconn_is_self(int fd);

#endif
