/* clients.h: which connections of the control socket are still there, so
 * that the node drops the work of a client that went away instead of
 * computing for nobody.
 *
 * A ROUTER says nothing when a peer leaves, so the socket's monitor
 * reports each connection accepted and closed, by its file descriptor,
 * and every control message carries the descriptor it came in on
 * (ZMQ_SRCFD). Descriptors are reused; a connection is its descriptor and
 * a generation, counted up at each accept on that descriptor. A message
 * is tagged after the monitor's events that came before it are read:
 * ZeroMQ reports a connection closed before its descriptor can be reused,
 * so a message is never taken for an earlier connection's.
 */
#ifndef CLIENTS_H
#define CLIENTS_H

#include <stddef.h>

#include <zmq.h>

typedef struct client_tag {
    int fd;       /* -1: not known (inproc), never reported gone */
    unsigned gen; /* accepts seen on fd */
} client_tag;

typedef struct clients clients;

/* Starts monitoring the control socket (a ROUTER of zctx). */
int clients_open(clients **out, void *zctx, void *control, char *err, size_t errlen);
void clients_close(clients *c);

/* The monitor's socket, for zmq_poll. */
void *clients_socket(clients *c);

/* Reads every event waiting; calls gone(tag, arg) for each connection that
 * closed. */
void clients_events(clients *c, void (*gone)(client_tag tag, void *arg), void *arg);

/* The connection a message (any frame but the routing id) came in on, and
 * whether it is still open. Read clients_events first. */
client_tag clients_tag(const clients *c, zmq_msg_t *frame);
int clients_alive(const clients *c, client_tag tag);

#endif
