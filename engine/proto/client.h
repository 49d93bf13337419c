/* client.h: the control side of the protocol as a client uses it: a DEALER
 * connected to one node's ROUTER, requests out, reply frames in, every wait
 * bounded. Used by infertop, the stress runner and the tests.
 */
#ifndef CLIENT_H
#define CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "curve.h"
#include "protocol.h"

typedef struct client client;

/* CURVE settings of a client: its own key pair and the node's public key. */
typedef struct client_curve {
    curve_keypair keys;
    char server_public[CURVE_Z85_LEN + 1];
} client_curve;

/* Connects to a control endpoint. zctx: a zmq context to share, or NULL
 * for one the client owns. curve: NULL for a plain connection. endpoint
 * NULL: not yet, until client_connect (to watch the socket first). */
int client_open(client **out, void *zctx, const char *endpoint, const client_curve *curve,
                char *err, size_t errlen);
int client_connect(client *c, const char *endpoint, char *err, size_t errlen);
void client_close(client *c);

/* The DEALER socket, to zmq_poll it together with others. */
void *client_socket(client *c);

/* Sends {"v":1,"id":<fresh id>,"op":op, ...every field of args}. The id
 * (unique within this client) is copied to id_out. args may be NULL. */
int client_send(client *c, const char *op, const json_t *args, char *id_out, size_t idlen,
                char *err, size_t errlen);

/* Sends len bytes as one frame, as they are (tests send malformed ones). */
int client_send_raw(client *c, const void *buf, size_t len, char *err, size_t errlen);

/* Waits at most timeout_ms for one reply frame. Returns 1 with *out filled
 * (proto_reply_free it), 0 on timeout, -1 on error (a frame that is not a
 * v1 reply included). */
int client_recv(client *c, proto_reply *out, int timeout_ms, char *err, size_t errlen);

/* Sends a request and waits for its final frame, skipping token frames,
 * with timeout_ms as the longest silence between frames. Returns 1 with
 * *out the final frame, 0 on timeout, -1 on error. */
int client_call(client *c, const char *op, const json_t *args, proto_reply *out, int timeout_ms,
                char *err, size_t errlen);

#endif
