/* selfconn.c: see selfconn.h. */
#include "selfconn.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <zmq.h>

#include "tui/core/cluster.h"

/* How often the thread looks at its stop flag. */
#define WATCH_MS 100

struct watched {
    void *sock; /* the watched socket; NULL: none */
    void *mon;  /* PAIR reading its monitor's events */
    atomic_int dropped;
    pthread_mutex_t lock; /* guards ep */
    char ep[CLUSTER_ENDPOINT_MAX];
};

struct selfconn {
    struct watched *w;
    int n;
    pthread_t thread;
    int started;
    atomic_int stop;
};

int selfconn_is_self(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    return getsockname(fd, (struct sockaddr *)&me, &ml) == 0 &&
           getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && ml == pl &&
           memcmp(&me, &peer, ml) == 0;
}

/* One monitor event: a 6-byte frame (event, value: the fd for CONNECTED)
 * and the endpoint. */
static void take_event(struct watched *w)
{
    uint8_t head[6];
    char ep[CLUSTER_ENDPOINT_MAX];
    int n = zmq_recv(w->mon, head, sizeof head, ZMQ_DONTWAIT);
    if (n < 0)
        return;
    int more = 0;
    size_t ml = sizeof more;
    int el = 0;
    if (zmq_getsockopt(w->mon, ZMQ_RCVMORE, &more, &ml) == 0 && more)
        el = zmq_recv(w->mon, ep, sizeof ep - 1, 0);
    ep[el > 0 ? (el < (int)sizeof ep ? el : (int)sizeof ep - 1) : 0] = '\0';
    uint16_t event;
    uint32_t value;
    memcpy(&event, head, sizeof event);
    memcpy(&value, head + 2, sizeof value);
    if (n != 6 || event != ZMQ_EVENT_CONNECTED || !selfconn_is_self((int)value))
        return;
    /* Not close: the descriptor is ZeroMQ's, which closes it on seeing the
     * connection end. */
    shutdown((int)value, SHUT_RDWR);
    pthread_mutex_lock(&w->lock);
    snprintf(w->ep, sizeof w->ep, "%s", ep);
    pthread_mutex_unlock(&w->lock);
    atomic_fetch_add(&w->dropped, 1);
}

static void *watch(void *arg)
{
    selfconn *g = arg;
    zmq_pollitem_t items[g->n];
    int k = 0;
    struct watched *of[g->n];
    for (int i = 0; i < g->n; i++)
        if (g->w[i].mon) {
            of[k] = &g->w[i];
            items[k++] = (zmq_pollitem_t){g->w[i].mon, 0, ZMQ_POLLIN, 0};
        }
    while (!atomic_load(&g->stop)) {
        if (zmq_poll(items, k, WATCH_MS) <= 0)
            continue;
        for (int i = 0; i < k; i++)
            if (items[i].revents & ZMQ_POLLIN)
                take_event(of[i]);
    }
    return NULL;
}

int selfconn_start(selfconn **out, void *zctx, void *const *socks, int n, char *err, size_t errlen)
{
    *out = NULL;
    selfconn *g = calloc(1, sizeof *g);
    if (!g || !(g->w = calloc((size_t)(n > 0 ? n : 1), sizeof *g->w))) {
        free(g);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    g->n = n;
    atomic_init(&g->stop, 0);
    for (int i = 0; i < n; i++) {
        struct watched *w = &g->w[i];
        atomic_init(&w->dropped, 0);
        pthread_mutex_init(&w->lock, NULL);
        if (!socks[i])
            continue;
        char ep[64];
        int linger = 0;
        /* The address makes the monitor's endpoint unique in the context. */
        snprintf(ep, sizeof ep, "inproc://infertop-selfconn-%p", (void *)w);
        w->sock = socks[i];
        if (zmq_socket_monitor(w->sock, ep, ZMQ_EVENT_CONNECTED) != 0 ||
            !(w->mon = zmq_socket(zctx, ZMQ_PAIR)) ||
            zmq_setsockopt(w->mon, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
            zmq_connect(w->mon, ep) != 0) {
            snprintf(err, errlen, "watching a socket's connections: %s", zmq_strerror(errno));
            selfconn_stop(g);
            return -1;
        }
    }
    if (pthread_create(&g->thread, NULL, watch, g) != 0) {
        snprintf(err, errlen, "cannot start the connection watch thread");
        selfconn_stop(g);
        return -1;
    }
    g->started = 1;
    *out = g;
    return 0;
}

int selfconn_take(selfconn *g, int i, char *ep, size_t eplen)
{
    struct watched *w = &g->w[i];
    int n = atomic_exchange(&w->dropped, 0);
    if (n > 0 && ep) {
        pthread_mutex_lock(&w->lock);
        snprintf(ep, eplen, "%s", w->ep);
        pthread_mutex_unlock(&w->lock);
    }
    return n;
}

void selfconn_stop(selfconn *g)
{
    if (!g)
        return;
    atomic_store(&g->stop, 1);
    if (g->started)
        pthread_join(g->thread, NULL);
    for (int i = 0; i < g->n; i++) {
        struct watched *w = &g->w[i];
        if (w->mon)
            zmq_close(w->mon);
        if (w->sock)
            zmq_socket_monitor(w->sock, NULL, 0);
        pthread_mutex_destroy(&w->lock);
    }
    free(g->w);
    free(g);
}
