/* clients.c: the control socket's connections, from its monitor (see
 * clients.h). */
#include "clients.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Descriptors past this are not followed (their messages get fd -1). */
#define CLIENTS_FD_MAX (1 << 20)

struct clients {
    void *mon;           /* PAIR connected to the monitor */
    unsigned *gen;       /* [cap] accepts seen per descriptor */
    unsigned char *open; /* [cap] 1 while that connection is open */
    int cap;
};

int clients_open(clients **out, void *zctx, void *control, char *err, size_t errlen)
{
    /* One control socket per context: the name need not be unique. */
    static const char ep[] = "inproc://inferd-control-monitor";
    clients *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (zmq_socket_monitor(control, ep, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(c->mon = zmq_socket(zctx, ZMQ_PAIR)) || zmq_connect(c->mon, ep) != 0) {
        snprintf(err, errlen, "monitoring the control socket: %s", zmq_strerror(errno));
        clients_close(c);
        return -1;
    }
    int linger = 0;
    zmq_setsockopt(c->mon, ZMQ_LINGER, &linger, sizeof linger);
    *out = c;
    return 0;
}

void clients_close(clients *c)
{
    if (!c)
        return;
    if (c->mon)
        zmq_close(c->mon);
    free(c->gen);
    free(c->open);
    free(c);
}

void *clients_socket(clients *c)
{
    return c->mon;
}

/* Makes room for descriptor fd; 0, or -1 when it is not followed. */
static int clients_grow(clients *c, int fd)
{
    if (fd < c->cap)
        return 0;
    if (fd >= CLIENTS_FD_MAX)
        return -1;
    int cap = c->cap ? c->cap : 64;
    while (cap <= fd)
        cap *= 2;
    unsigned *gen = realloc(c->gen, (size_t)cap * sizeof *gen);
    if (gen)
        c->gen = gen;
    unsigned char *open = realloc(c->open, (size_t)cap);
    if (open)
        c->open = open;
    if (!gen || !open)
        return -1;
    memset(gen + c->cap, 0, (size_t)(cap - c->cap) * sizeof *gen);
    memset(open + c->cap, 0, (size_t)(cap - c->cap));
    c->cap = cap;
    return 0;
}

void clients_events(clients *c, void (*gone)(client_tag tag, void *arg), void *arg)
{
    for (;;) {
        /* Two frames: the event (16-bit kind, 32-bit value: the
         * descriptor) and the endpoint. */
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        zmq_msg_init(&addr);
        int got = zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) >= 0;
        if (got && zmq_msg_more(&ev))
            zmq_msg_recv(&addr, c->mon, 0);
        uint16_t kind = 0;
        uint32_t value = 0;
        if (got && zmq_msg_size(&ev) >= 6) {
            memcpy(&kind, zmq_msg_data(&ev), sizeof kind);
            memcpy(&value, (const char *)zmq_msg_data(&ev) + 2, sizeof value);
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
        if (!got)
            return;
        int fd = (int)value;
        if (value > INT32_MAX || clients_grow(c, fd) != 0)
            continue;
        if (kind == ZMQ_EVENT_ACCEPTED) {
            c->gen[fd]++;
            c->open[fd] = 1;
        } else if (kind == ZMQ_EVENT_DISCONNECTED && c->open[fd]) {
            c->open[fd] = 0;
            gone((client_tag){.fd = fd, .gen = c->gen[fd]}, arg);
        }
    }
}

client_tag clients_tag(const clients *c, zmq_msg_t *frame)
{
    int fd = zmq_msg_get(frame, ZMQ_SRCFD);
    if (fd < 0 || fd >= c->cap)
        return (client_tag){.fd = -1};
    return (client_tag){.fd = fd, .gen = c->gen[fd]};
}

int clients_alive(const clients *c, client_tag tag)
{
    return tag.fd < 0 || (tag.fd < c->cap && c->open[tag.fd] && c->gen[tag.fd] == tag.gen);
}
