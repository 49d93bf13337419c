/* guard.c: the listener, new connections' heads, connection records,
 * the request deadline, per-client and general counts (see guard.h). */
#include "guard.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "reqhead.h"

/* How often the deadlines are checked: a request is shut at most this late. */
#define SWEEP_MS 200
/* An answered connection not yet handed to libmicrohttpd is read (and
 * what comes dropped) this long before it is closed, so that its client
 * reads the answer rather than a reset (nginx's lingering_timeout). */
#define LINGER_S 5.0
#define EVENTS_MAX 64

/* A connection the guard accepted whose first head has not come whole:
 * only the guard's thread touches it. */
typedef struct pend {
    struct pend *prev, *next;
    int fd;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    double since; /* accepted, or answered when closing */
    double first; /* its first byte came: the head's deadline runs; 0: none yet */
    int closing;  /* answered: read and dropped until the client closes or LINGER_S */
} pend;

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
    pthread_cond_t quiet; /* the thread let go of the listener */
    pthread_t thread;
    atomic_int stop, quiesce;
    int quiesced; /* under mu */
    int ep, wake; /* the thread's epoll and eventfd */
    int lfd;      /* the listener (-1: none yet, or let go) */
    int paused;   /* the listener is out of the epoll set: at capacity */
    struct MHD_Daemon *d;
    rec *head; /* every connection libmicrohttpd holds, under mu */
    int n;
    pend *pending; /* the thread's own */
    int n_pending; /* written under mu by the thread */
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

/* The whole response of an error the guard answers itself, written at
 * once (a fresh socket's send buffer holds it). */
static void write_reply(guard *g, int fd, int tag, int status, const char *code, const char *msg)
{
    char *reply = g->cfg.reply(g->cfg.ctx, tag, status, code, msg);
    if (reply)
        (void)!send(fd, reply, strlen(reply), MSG_DONTWAIT | MSG_NOSIGNAL);
    free(reply);
}

static void timeout_message(const guard *g, char *msg, size_t len)
{
    snprintf(msg, len, "the request's header and body took longer than %g s (%s)",
             g->cfg.deadline_s, g->cfg.deadline_flag);
}

/* ---- connections not yet handed to libmicrohttpd ---------------------- */

static void set_pending(guard *g, int delta)
{
    pthread_mutex_lock(&g->mu);
    g->n_pending += delta;
    pthread_mutex_unlock(&g->mu);
}

static void unlink_pend(guard *g, pend *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        g->pending = p->next;
    if (p->next)
        p->next->prev = p->prev;
    epoll_ctl(g->ep, EPOLL_CTL_DEL, p->fd, NULL);
    set_pending(g, -1);
}

/* Reads and drops what came (bounded: the next bytes raise an event
 * again). Returns 1 when the client closed. */
static int drain(int fd)
{
    char scratch[16384];
    for (int i = 0; i < 16; i++) {
        ssize_t n = recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return 1;
        if (n < 0)
            return 0;
    }
    return 0;
}

/* Closes it; what came is read first, so that closing sends no reset
 * while the client reads an answer. */
static void drop(guard *g, pend *p)
{
    unlink_pend(g, p);
    drain(p->fd);
    close(p->fd);
    free(p);
}

/* The answer, then the write side shut: the client sees it end. */
static void answer(guard *g, pend *p, const reqhead *rh, int status, const char *code,
                   const char *msg, double now)
{
    write_reply(g, p->fd, g->cfg.tag_of(g->cfg.ctx, rh->path), status, code, msg);
    shutdown(p->fd, SHUT_WR);
    p->closing = 1;
    p->since = now;
}

static void hand(guard *g, pend *p)
{
    unlink_pend(g, p);
    /* libmicrohttpd closes the socket when it cannot take it. */
    MHD_add_connection(g->d, p->fd, (const struct sockaddr *)&p->addr, p->addr_len);
    free(p);
}

static void pend_event(guard *g, pend *p, uint32_t events, double now)
{
    if (p->closing) {
        if (drain(p->fd))
            drop(g, p);
        return;
    }
    /* Peeked, not read: libmicrohttpd reads the same bytes once the head
     * proves sound. Edge-triggered, so a head that is not whole yet
     * raises nothing until more comes. */
    char buf[REQHEAD_MAX + 1];
    ssize_t n = recv(p->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            drop(g, p);
        return;
    }
    if (n <= 0) {
        drop(g, p);
        return;
    }
    if (!p->first)
        p->first = now;
    reqhead rh;
    switch (reqhead_check(buf, (size_t)n, (events & (EPOLLRDHUP | EPOLLHUP)) != 0, &rh)) {
    case REQHEAD_MORE:
        break;
    case REQHEAD_DROP:
        drop(g, p);
        break;
    case REQHEAD_OK:
        hand(g, p);
        break;
    case REQHEAD_REFUSE:
        answer(g, p, &rh, rh.status, rh.code, rh.message, now);
        break;
    }
}

static int total(guard *g)
{
    pthread_mutex_lock(&g->mu);
    int n = g->n + g->n_pending;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static void listen_pause(guard *g, int pause)
{
    struct epoll_event ev = {.events = pause ? 0 : EPOLLIN, .data.ptr = &g->lfd};
    if (g->paused != pause && epoll_ctl(g->ep, EPOLL_CTL_MOD, g->lfd, &ev) == 0)
        g->paused = pause;
}

/* New connections, up to the capacity (past it they wait in the
 * backlog): each waits in the epoll set for its head. */
static void accept_all(guard *g, double now)
{
    while (total(g) < g->cfg.capacity) {
        pend *p = calloc(1, sizeof *p);
        if (!p)
            break;
        p->addr_len = sizeof p->addr;
        p->fd = accept4(g->lfd, (struct sockaddr *)&p->addr, &p->addr_len,
                        SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (p->fd < 0) {
            int e = errno;
            free(p);
            if (e == EINTR || e == ECONNABORTED)
                continue;
            /* Out of descriptors: the sweep tries again. */
            if (e != EAGAIN && e != EWOULDBLOCK)
                listen_pause(g, 1);
            return;
        }
        p->since = now;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = p};
        if (epoll_ctl(g->ep, EPOLL_CTL_ADD, p->fd, &ev) != 0) {
            close(p->fd);
            free(p);
            continue;
        }
        p->next = g->pending;
        if (g->pending)
            g->pending->prev = p;
        g->pending = p;
        set_pending(g, +1);
    }
    listen_pause(g, 1);
}

/* Deadlines of the connections not handed yet: closing ones end, those
 * that sent nothing for the idle timeout close, those whose head takes
 * longer than the deadline get a 408. */
static void sweep_pending(guard *g, double now)
{
    char msg[160];
    for (pend *p = g->pending, *next; p; p = next) {
        next = p->next;
        if (p->closing ? now - p->since >= LINGER_S : !p->first && now - p->since >= g->cfg.idle_s)
            drop(g, p);
        else if (!p->closing && p->first && now - p->first >= g->cfg.deadline_s) {
            char buf[REQHEAD_LINE_MAX + 1];
            ssize_t n = recv(p->fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
            reqhead rh;
            reqhead_check(buf, n > 0 ? (size_t)n : 0, 0, &rh); /* for its path */
            timeout_message(g, msg, sizeof msg);
            answer(g, p, &rh, 408, "timeout", msg, now);
        }
    }
    if (g->paused && total(g) < g->cfg.capacity)
        listen_pause(g, 0);
}

/* The requests libmicrohttpd holds whose header and body take longer
 * than the deadline: a 408 and their socket shut. */
static void sweep_held(guard *g, double now)
{
    char msg[160];
    timeout_message(g, msg, sizeof msg);
    pthread_mutex_lock(&g->mu);
    for (rec *r = g->head; r; r = r->next) {
        if (!r->reading || now - r->begun < g->cfg.deadline_s)
            continue;
        /* Nothing is written on a connection whose request is still
         * read (its response is queued only once reading is done,
         * under this lock), and its socket is open while its record
         * is listed. The shut socket makes libmicrohttpd close it. */
        r->reading = 0;
        write_reply(g, r->fd, r->tag, 408, "timeout", msg);
        shutdown(r->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&g->mu);
}

/* The listener and the pending connections go (guard_quiesce). */
static void let_go(guard *g)
{
    while (g->pending)
        drop(g, g->pending);
    if (g->lfd >= 0) {
        epoll_ctl(g->ep, EPOLL_CTL_DEL, g->lfd, NULL);
        close(g->lfd);
        g->lfd = -1;
    }
    pthread_mutex_lock(&g->mu);
    g->quiesced = 1;
    pthread_cond_broadcast(&g->quiet);
    pthread_mutex_unlock(&g->mu);
}

static void *run(void *arg)
{
    guard *g = arg;
    struct epoll_event ev[EVENTS_MAX];
    double swept = now_s();
    while (!atomic_load(&g->stop)) {
        int n = epoll_wait(g->ep, ev, EVENTS_MAX, SWEEP_MS);
        double now = now_s();
        if (atomic_load(&g->quiesce) && !g->quiesced)
            let_go(g);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &g->wake) {
                uint64_t v;
                (void)!read(g->wake, &v, sizeof v);
            } else if (ev[i].data.ptr == &g->lfd) {
                if (g->lfd >= 0)
                    accept_all(g, now);
            } else if (!g->quiesced) {
                pend_event(g, ev[i].data.ptr, ev[i].events, now);
            }
        }
        if (now - swept >= SWEEP_MS / 1000.0) {
            swept = now;
            if (!g->quiesced)
                sweep_pending(g, now);
            sweep_held(g, now);
        }
    }
    return NULL;
}

static void wake(guard *g)
{
    uint64_t one = 1;
    (void)!write(g->wake, &one, sizeof one);
}

int guard_start(guard **out, const guard_cfg *cfg)
{
    guard *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->cfg = *cfg;
    g->lfd = -1;
    g->ep = epoll_create1(EPOLL_CLOEXEC);
    g->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &g->wake};
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->quiet, NULL);
    if (g->ep < 0 || g->wake < 0 || epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake, &ev) != 0 ||
        pthread_create(&g->thread, NULL, run, g) != 0) {
        if (g->ep >= 0)
            close(g->ep);
        if (g->wake >= 0)
            close(g->wake);
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->quiet);
        free(g);
        return -1;
    }
    *out = g;
    return 0;
}

int guard_listen(guard *g, const struct sockaddr *addr, socklen_t len, int backlog,
                 struct MHD_Daemon *d)
{
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0)
        return -1;
    /* A restarted server binds at once, as libmicrohttpd's own listener
     * does; IPv6 listens on IPv6 only, as it does without dual stack. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (addr->sa_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) ||
        bind(fd, addr, len) != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    g->d = d;
    g->lfd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &g->lfd};
    if (epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int e = errno;
        g->lfd = -1;
        close(fd);
        errno = e;
        return -1;
    }
    return 0;
}

void guard_quiesce(guard *g)
{
    if (!g)
        return;
    atomic_store(&g->quiesce, 1);
    wake(g);
    pthread_mutex_lock(&g->mu);
    while (!g->quiesced)
        pthread_cond_wait(&g->quiet, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void guard_stop(guard *g)
{
    if (!g)
        return;
    guard_quiesce(g);
    atomic_store(&g->stop, 1);
    wake(g);
    pthread_join(g->thread, NULL);
    while (g->head) {
        rec *r = g->head;
        g->head = r->next;
        free(r);
    }
    close(g->ep);
    close(g->wake);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->quiet);
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
    if (g->n + g->n_pending > g->cfg.general)
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
