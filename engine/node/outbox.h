/* outbox.h: reply frames the control ROUTER could not take yet, so that
 * none is ever dropped (PROTOCOL.md "Flow control").
 *
 * The ROUTER runs with ZMQ_ROUTER_MANDATORY: a send to a peer whose pipe
 * is at its high-water mark fails with EAGAIN instead of being dropped,
 * and one to a peer that is gone fails with EHOSTUNREACH. A reply that
 * cannot go now waits here, behind any earlier one to the same peer, and
 * goes when the peer has read enough (outbox_flush, every loop turn). The
 * head pauses a request while its peer has frames waiting (outbox_held),
 * which keeps what waits here to about one step's frames per request;
 * the per-peer bound (OUTBOX_PEER_MAX) only meets a client that sends
 * many requests and never reads a reply. */
#ifndef OUTBOX_H
#define OUTBOX_H

#include <stddef.h>

#include "clients.h"

/* Where a control request came from: the ROUTER's routing id, whether
 * the client put an empty delimiter frame before the payload (REQ does),
 * and the connection, to notice when it closes. */
typedef struct peer {
    unsigned char id[256];
    size_t id_len;
    int delimiter;
    client_tag conn;
} peer;

/* Frames one peer may have waiting; a reply past it is dropped (and the
 * caller says so). */
#define OUTBOX_PEER_MAX 256
/* The last peers found gone, remembered for outbox_gone: ZeroMQ never
 * reuses a routing id it made, so an old one cannot name a new peer. */
#define OUTBOX_GONE_MAX 64

typedef enum outbox_rc {
    OUTBOX_SENT,
    OUTBOX_HELD, /* waits for the peer to read */
    OUTBOX_GONE, /* the peer is gone: dropped, nobody can read it */
    OUTBOX_FULL  /* OUTBOX_PEER_MAX frames already wait: dropped */
} outbox_rc;

typedef struct outbox outbox;

/* An outbox for the ROUTER sock (which outbox_new makes mandatory). NULL:
 * out of memory. */
outbox *outbox_new(void *sock);
void outbox_free(outbox *o);

/* Sends payload (a string, taken and freed) and, when data is not NULL,
 * len bytes of data as a second frame, to the peer; now is clock_ms. */
outbox_rc outbox_send(outbox *o, const peer *to, char *payload, const void *data, size_t len,
                      double now);
/* Sends what the peers have made room for. A peer that took nothing for
 * discard_ms has its frames dropped (the head ended its requests at the
 * stall limit, half that). Returns the frames dropped so. */
int outbox_flush(outbox *o, double now, double discard_ms);
/* Frames waiting for the peer; *since (when not NULL): when it last took
 * one, or when the first began to wait. */
int outbox_held(const outbox *o, const peer *to, double *since);
/* Frames waiting for every peer. */
int outbox_count(const outbox *o);
/* 1 when a send to the peer found it gone. */
int outbox_gone(const outbox *o, const peer *to);

#endif
