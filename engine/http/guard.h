/* guard.h: the HTTP server's connections against slow and greedy clients.
 *
 * libmicrohttpd's connection timeout restarts at each byte, so a client
 * sending one header byte a second holds its connection for ever; the
 * guard keeps every connection's record and a thread that shuts those
 * whose request (from its request line to its last body byte) takes
 * longer than the header deadline, after writing a 408 on them. It also
 * counts connections by client address and in all, for the server to
 * refuse past the per-client limit (429) or past the general capacity
 * (503), keeping what is left for /health and /metrics.
 */
#ifndef GUARD_H
#define GUARD_H

#include <microhttpd.h>

typedef struct guard_cfg {
    double deadline_s;         /* a request's whole header and body */
    int per_client;            /* connections of one address; 0: no limit */
    int general;               /* connections past which only reserved routes are served */
    const char *timeout_reply; /* the whole HTTP response written at the deadline */
    /* Called (on the guard's thread) for each request timed out, with the
     * tag given at guard_begin. */
    void (*timed_out)(void *ctx, int tag);
    void *ctx;
} guard_cfg;

typedef struct guard guard;

/* The cfg's strings are borrowed. */
int guard_start(guard **out, const guard_cfg *cfg);
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
