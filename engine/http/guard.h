/* guard.h: the HTTP server's connections against slow, greedy and
 * malformed clients.
 *
 * The guard owns the listener: its thread accepts each connection and
 * holds it in its epoll set until the connection's first head has come
 * whole, peeks at it (reqhead.h) and only then hands the connection to
 * libmicrohttpd (MHD_add_connection); a head libmicrohttpd would answer
 * with its own HTML page gets the API's JSON error instead, and a
 * connection that sends nothing is closed after the idle timeout. Nothing
 * blocks: the sockets are non-blocking, the peek edge-triggered.
 *
 * libmicrohttpd's connection timeout restarts at each byte, so a client
 * sending one header byte a second would hold its connection for ever;
 * the guard keeps every connection's record and shuts those whose
 * request (from its request line to its last body byte) takes longer
 * than the header deadline, after writing a 408 on them. It also counts
 * connections by client address and in all, for the server to refuse
 * past the per-client limit (429) or past the general capacity (503),
 * keeping what is left for /health and /metrics.
 */
#ifndef GUARD_H
#define GUARD_H

#include <microhttpd.h>
#include <sys/socket.h>

typedef struct guard_cfg {
    double deadline_s;         /* a request's whole header and body */
    const char *deadline_flag; /* the option that sets it, for messages */
    double idle_s;             /* a new connection that sends nothing is closed after this */
    int per_client;            /* connections of one address; 0: no limit */
    int general;               /* connections past which only reserved routes are served */
    int capacity;              /* connections at once (accepted, not yet handed, included) */
    /* Called on the guard's thread for each error it answers itself: the
     * whole HTTP response (malloc'd; NULL: the connection just closes),
     * counted against tag. */
    char *(*reply)(void *ctx, int tag, int status, const char *code, const char *message);
    /* The tag of a request for path ("": not known). */
    int (*tag_of)(void *ctx, const char *path);
    void *ctx;
} guard_cfg;

typedef struct guard guard;

/* The cfg's strings are borrowed. */
int guard_start(guard **out, const guard_cfg *cfg);
/* Listens on addr and hands heads that prove sound to d (started with
 * MHD_USE_NO_LISTEN_SOCKET and MHD_USE_ITC). -1 with errno set. */
int guard_listen(guard *g, const struct sockaddr *addr, socklen_t len, int backlog,
                 struct MHD_Daemon *d);
/* No more connections: the listener closes, those not handed yet too.
 * Before the daemon stops. */
void guard_quiesce(guard *g);
/* After the daemon stopped. */
void guard_stop(guard *g);

/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the guard). */
void guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode code);

/* A request line came in: its deadline starts. */
void guard_begin(struct MHD_Connection *c, int tag);
/* The request is read, or answered before its body. */
void guard_read_done(struct MHD_Connection *c);

/* Whether the connection came past a limit. */
#define GUARD_OVER_CLIENT 1
#define GUARD_OVER_CAPACITY 2
int guard_over(struct MHD_Connection *c);

#endif
