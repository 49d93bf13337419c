/* outbox.c: reply frames waiting for their peer to read (outbox.h). A
 * FIFO of every peer's frames: a peer's go in order, and one peer that
 * does not read never holds back another's. It holds a few frames per
 * paused request, so the scans by peer stay short. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "outbox.h"

typedef struct frame {
    struct frame *next;
    peer to;
    char *payload;
    void *data; /* NULL: no second frame */
    size_t len;
    double moved; /* the first of its peer's: when the peer last took one */
} frame;

struct outbox {
    void *sock;
    frame *head, **tail;
    int count;
    unsigned char gone[OUTBOX_GONE_MAX][256];
    size_t gone_len[OUTBOX_GONE_MAX];
    int n_gone, next_gone;
};

static int same_peer(const peer *a, const peer *b)
{
    return a->id_len == b->id_len && memcmp(a->id, b->id, a->id_len) == 0;
}

outbox *outbox_new(void *sock)
{
    outbox *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->sock = sock;
    o->tail = &o->head;
    int mandatory = 1;
    zmq_setsockopt(sock, ZMQ_ROUTER_MANDATORY, &mandatory, sizeof mandatory);
    return o;
}

static void frame_free(frame *f)
{
    free(f->payload);
    free(f->data);
    free(f);
}

void outbox_free(outbox *o)
{
    if (!o)
        return;
    while (o->head) {
        frame *f = o->head;
        o->head = f->next;
        frame_free(f);
    }
    free(o);
}

static void mark_gone(outbox *o, const peer *to)
{
    if (outbox_gone(o, to))
        return;
    memcpy(o->gone[o->next_gone], to->id, to->id_len);
    o->gone_len[o->next_gone] = to->id_len;
    o->next_gone = (o->next_gone + 1) % OUTBOX_GONE_MAX;
    if (o->n_gone < OUTBOX_GONE_MAX)
        o->n_gone++;
}

int outbox_gone(const outbox *o, const peer *to)
{
    for (int i = 0; i < o->n_gone; i++)
        if (o->gone_len[i] == to->id_len && memcmp(o->gone[i], to->id, to->id_len) == 0)
            return 1;
    return 0;
}

/* One reply onto the wire. Only the routing id's frame can meet the
 * high-water mark or a missing peer: once it is in, ZeroMQ takes the
 * message's other parts whatever the mark. */
static outbox_rc put(outbox *o, const peer *to, const char *payload, const void *data, size_t len)
{
    if (zmq_send(o->sock, to->id, to->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        if (errno == EAGAIN)
            return OUTBOX_HELD;
        mark_gone(o, to);
        return OUTBOX_GONE;
    }
    if (to->delimiter)
        zmq_send(o->sock, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT);
    zmq_send(o->sock, payload, strlen(payload), data ? ZMQ_SNDMORE | ZMQ_DONTWAIT : ZMQ_DONTWAIT);
    if (data)
        zmq_send(o->sock, data, len, ZMQ_DONTWAIT);
    return OUTBOX_SENT;
}

outbox_rc outbox_send(outbox *o, const peer *to, char *payload, const void *data, size_t len,
                      double now)
{
    int held = outbox_held(o, to, NULL);
    outbox_rc rc = held ? OUTBOX_HELD : put(o, to, payload, data, len);
    if (rc == OUTBOX_HELD && held >= OUTBOX_PEER_MAX)
        rc = OUTBOX_FULL;
    frame *f = rc == OUTBOX_HELD ? calloc(1, sizeof *f) : NULL;
    if (rc == OUTBOX_HELD && f && data && !(f->data = malloc(len ? len : 1))) {
        free(f);
        f = NULL;
    }
    if (rc != OUTBOX_HELD || !f) {
        free(payload);
        return rc == OUTBOX_HELD ? OUTBOX_FULL : rc;
    }
    f->to = *to;
    f->payload = payload;
    if (data)
        memcpy(f->data, data, len);
    f->len = len;
    f->moved = now;
    *o->tail = f;
    o->tail = &f->next;
    o->count++;
    return OUTBOX_HELD;
}

/* Takes *link's frame off the list; the next of its peer, if any, counts
 * the peer's waiting from `moved`. */
static void unlink_frame(outbox *o, frame **link, double moved)
{
    frame *f = *link;
    for (frame *n = f->next; n; n = n->next) {
        if (same_peer(&n->to, &f->to)) {
            n->moved = moved;
            break;
        }
    }
    *link = f->next;
    if (o->tail == &f->next)
        o->tail = link;
    o->count--;
    frame_free(f);
}

/* 1 when an earlier frame than *stop is the peer's: that one goes first. */
static int behind(const outbox *o, const frame *stop)
{
    for (const frame *f = o->head; f != stop; f = f->next)
        if (same_peer(&f->to, &stop->to))
            return 1;
    return 0;
}

int outbox_flush(outbox *o, double now, double discard_ms)
{
    int dropped = 0;
    for (frame **link = &o->head; *link;) {
        frame *f = *link;
        if (behind(o, f)) {
            link = &f->next;
            continue;
        }
        outbox_rc rc = put(o, &f->to, f->payload, f->data, f->len);
        if (rc == OUTBOX_HELD && now - f->moved < discard_ms) {
            link = &f->next;
            continue;
        }
        /* A peer's frames dropped for silence go one after another: the
         * next keeps the same time, so it goes in this same pass. */
        dropped += rc == OUTBOX_HELD;
        unlink_frame(o, link, rc == OUTBOX_HELD ? f->moved : now);
    }
    return dropped;
}

int outbox_held(const outbox *o, const peer *to, double *since)
{
    int n = 0;
    for (const frame *f = o->head; f; f = f->next) {
        if (!same_peer(&f->to, to))
            continue;
        if (n++ == 0 && since)
            *since = f->moved;
    }
    return n;
}

int outbox_count(const outbox *o)
{
    return o->count;
}
