/* guard.c: connection records, the request deadline, per-client and
 * general counts (see guard.h). */
#include "guard.h"

#include "engine/sys/clock.h"
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* How often the deadline is checked: a request is shut at most this late. */
#define SWEEP_MS 200

typedef struct rec {
    struct rec *prev, *next;
    guard *g;
    int fd;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    int reading; /* a request is being read: its deadline runs */
    int tag;
    double begun;
    int over;
} rec;

struct guard {
    guard_cfg cfg;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t sweeper;
    int stop;
    rec *head; /* every connection, under mu */
    int n;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The host part of an address (the port differs between connections). */
static int same_host(const rec *a, const rec *b)
{
    if (a->addr.ss_family != b->addr.ss_family)
        return 0;
    if (a->addr.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->addr)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)&b->addr)->sin_addr.s_addr;
    if (a->addr.ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)&a->addr)->sin6_addr,
                      &((const struct sockaddr_in6 *)&b->addr)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return 1;
}

static void *sweep(void *arg)
{
    guard *g = arg;
    size_t reply_len = strlen(g->cfg.timeout_reply);
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec until = clock_deadline(SWEEP_MS);
        pthread_cond_timedwait(&g->wake, &g->mu, &until);
        double now = now_s();
        for (rec *r = g->head; r; r = r->next) {
            if (!r->reading || now - r->begun < g->cfg.deadline_s)
                continue;
            /* Nothing is written on a connection whose request is still
             * read (its response is queued only once reading is done,
             * under this lock), and its socket is open while its record
             * is listed. The shut socket makes libmicrohttpd close it. */
            r->reading = 0;
            (void)!send(r->fd, g->cfg.timeout_reply, reply_len, MSG_DONTWAIT | MSG_NOSIGNAL);
            shutdown(r->fd, SHUT_RDWR);
            if (g->cfg.timed_out)
                g->cfg.timed_out(g->cfg.ctx, r->tag);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int guard_start(guard **out, const guard_cfg *cfg)
{
    guard *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->cfg = *cfg;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->wake, NULL);
    if (pthread_create(&g->sweeper, NULL, sweep, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->wake);
        free(g);
        return -1;
    }
    *out = g;
    return 0;
}

void guard_stop(guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->sweeper, NULL);
    while (g->head) {
        rec *r = g->head;
        g->head = r->next;
        free(r);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->wake);
    free(g);
}

static void opened(guard *g, struct MHD_Connection *c, void **ctx)
{
    rec *r = calloc(1, sizeof *r);
    if (!r)
        return; /* unguarded: only the idle timeout bounds it */
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ad =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    r->g = g;
    r->fd = fd ? fd->connect_fd : -1;
    if (ad && ad->client_addr) {
        r->addr_len = ad->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                             : sizeof(struct sockaddr_in);
        memcpy(&r->addr, ad->client_addr, r->addr_len);
    }
    pthread_mutex_lock(&g->mu);
    int same = 1;
    for (rec *o = g->head; o; o = o->next)
        same += same_host(o, r);
    g->n++;
    if (g->cfg.per_client > 0 && same > g->cfg.per_client)
        r->over |= GUARD_OVER_CLIENT;
    if (g->n > g->cfg.general)
        r->over |= GUARD_OVER_CAPACITY;
    r->next = g->head;
    if (g->head)
        g->head->prev = r;
    g->head = r;
    pthread_mutex_unlock(&g->mu);
    *ctx = r;
}

static void closed(guard *g, rec *r)
{
    pthread_mutex_lock(&g->mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        g->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    g->n--;
    pthread_mutex_unlock(&g->mu);
    free(r);
}

void guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode code)
{
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        opened(cls, c, socket_context);
    else if (*socket_context) {
        closed(cls, *socket_context);
        *socket_context = NULL;
    }
}

static rec *rec_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void guard_begin(struct MHD_Connection *c, int tag)
{
    rec *r = rec_of(c);
    if (!r)
        return;
    pthread_mutex_lock(&r->g->mu);
    r->reading = 1;
    r->tag = tag;
    r->begun = now_s();
    pthread_mutex_unlock(&r->g->mu);
}

void guard_read_done(struct MHD_Connection *c)
{
    rec *r = rec_of(c);
    if (!r)
        return;
    pthread_mutex_lock(&r->g->mu);
    r->reading = 0;
    pthread_mutex_unlock(&r->g->mu);
}

int guard_over(struct MHD_Connection *c)
{
    rec *r = rec_of(c);
    return r ? r->over : 0;
}
