/* subguard.c: the telemetry socket's watch thread (see subguard.h). */
#include "subguard.h"

#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <zmq.h>

#include "engine/sys/clock.h"

/* How often connections are looked at: what one can send in between is
 * what ZeroMQ can take in past the budget (a few hundred subscriptions). */
#define SUBGUARD_TICK_MS 10

typedef struct watched {
    int fd;
    double t_open; /* clock_ms */
} watched;

struct subguard {
    void *sock; /* the socket watched (the caller's thread's) */
    void *mon;  /* PAIR on the socket's monitor; the thread's alone */
    pthread_t thread;
    atomic_int stop;
    int port; /* the socket's local port: a descriptor reused by another socket is never cut */
    watched *conns;
    int n, cap;
};

/* The port of a tcp:// endpoint, 0 for any other. */
static int endpoint_port(const char *ep)
{
    const char *colon = strrchr(ep, ':');
    return strncmp(ep, "tcp://", 6) == 0 && colon ? atoi(colon + 1) : 0;
}

static void track(subguard *g, int fd)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        watched *grown = realloc(g->conns, (size_t)cap * sizeof *grown);
        if (!grown)
            return; /* unwatched: no worse than without the guard */
        g->conns = grown;
        g->cap = cap;
    }
    g->conns[g->n++] = (watched){.fd = fd, .t_open = clock_ms()};
}

static void untrack(subguard *g, int i)
{
    g->conns[i] = g->conns[--g->n];
}

static void read_events(subguard *g)
{
    for (;;) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        zmq_msg_init(&addr);
        int got = zmq_msg_recv(&ev, g->mon, ZMQ_DONTWAIT) >= 0;
        if (got && zmq_msg_more(&ev))
            zmq_msg_recv(&addr, g->mon, 0);
        uint16_t kind = 0;
        uint32_t fd = 0;
        if (got && zmq_msg_size(&ev) >= 6) {
            memcpy(&kind, zmq_msg_data(&ev), sizeof kind);
            memcpy(&fd, (const char *)zmq_msg_data(&ev) + 2, sizeof fd);
        }
        zmq_msg_close(&ev);
        zmq_msg_close(&addr);
        if (!got)
            return;
        if (kind == ZMQ_EVENT_ACCEPTED)
            track(g, (int)fd);
        for (int i = 0; kind == ZMQ_EVENT_DISCONNECTED && i < g->n; i++)
            if (g->conns[i].fd == (int)fd)
                untrack(g, i--);
    }
}

/* 1 when fd is a TCP connection to the guarded port that has received
 * more than its budget. */
static int over_budget(const subguard *g, const watched *w, double now)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(w->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
        return 0;
    double budget = SUBGUARD_BYTES + SUBGUARD_BYTES_PER_S * (now - w->t_open) / 1000.0;
    if ((double)ti.tcpi_bytes_received <= budget)
        return 0;
    struct sockaddr_storage local;
    socklen_t llen = sizeof local;
    if (getsockname(w->fd, (struct sockaddr *)&local, &llen) != 0)
        return 0;
    int port = local.ss_family == AF_INET    ? ntohs(((struct sockaddr_in *)&local)->sin_port)
               : local.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&local)->sin6_port)
                                             : -1;
    return port == g->port;
}

static void *watch(void *arg)
{
    subguard *g = arg;
    while (!atomic_load(&g->stop)) {
        zmq_pollitem_t item = {.socket = g->mon, .events = ZMQ_POLLIN};
        zmq_poll(&item, 1, SUBGUARD_TICK_MS);
        read_events(g);
        double now = clock_ms();
        for (int i = 0; i < g->n; i++) {
            if (!over_budget(g, &g->conns[i], now))
                continue;
            /* ZeroMQ's I/O thread sees the connection end and closes it. */
            shutdown(g->conns[i].fd, SHUT_RDWR);
            untrack(g, i--);
        }
    }
    return NULL;
}

int subguard_start(subguard **out, void *zctx, void *sock, const char *endpoint, char *err,
                   size_t errlen)
{
    static unsigned instances; /* sockets are made on one thread */
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://inferd-subguard-%u", instances++);
    subguard *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->sock = sock;
    g->port = endpoint_port(endpoint);
    atomic_init(&g->stop, 0);
    int linger = 0;
    if (zmq_socket_monitor(sock, ep, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0 ||
        !(g->mon = zmq_socket(zctx, ZMQ_PAIR)) ||
        zmq_setsockopt(g->mon, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_connect(g->mon, ep) != 0) {
        snprintf(err, errlen, "watching the telemetry socket: %s", zmq_strerror(errno));
        goto fail;
    }
    if (pthread_create(&g->thread, NULL, watch, g) != 0) {
        snprintf(err, errlen, "cannot start the telemetry watch thread");
        goto fail;
    }
    *out = g;
    return 0;
fail:
    if (g->mon)
        zmq_close(g->mon);
    zmq_socket_monitor(sock, NULL, 0);
    free(g);
    return -1;
}

void subguard_stop(subguard *g)
{
    if (!g)
        return;
    atomic_store(&g->stop, 1);
    pthread_join(g->thread, NULL);
    zmq_close(g->mon);
    zmq_socket_monitor(g->sock, NULL, 0);
    free(g->conns);
    free(g);
}
