/* ewatch.c: the HTTP watcher of engine nodes (ewatch.h).
 *
 * A round adds one easy handle per endpoint of every node to the multi
 * handle and drives them until all have ended; a node's view is made and
 * posted as soon as its own requests have ended, so a slow node does not
 * hold the others back. The easy handles live as long as the watcher: the
 * multi handle's connection cache then keeps each node's connection open
 * between rounds (no new TCP handshake every second).
 *
 * The eventfd is readable exactly while some node has a view not taken:
 * written on each post, drained by the take that leaves none, both under
 * the lock.
 */
#include "ewatch.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/sys/clock.h"

/* An answer larger than this is cut off and counts as a failed request:
 * vLLM's /metrics is some 100 KB. */
#define EWATCH_BODY_MAX (8u << 20)

struct ereq {
    CURL *easy;
    struct wnode *node;
    int ep;       /* index in eng_endpoints */
    int answered; /* a `once` endpoint that answered 200 */
    char *body;
    size_t len, cap;
    char err[CURL_ERROR_SIZE];
};

struct wnode {
    eng_kind kind;
    eng_poll *poll; /* NULL for an inferd node: not watched here */
    const struct eng_endpoint *eps;
    int n_ep;
    struct ereq *reqs;
    struct curl_slist *headers; /* the bearer token, NULL without one */
    int running;                /* requests of this round not ended yet */
    /* Under the lock: the last view and whether it was taken. */
    struct eng_view view;
    int fresh;
};

struct ewatch {
    int n;
    struct wnode *nodes;
    double interval_s;
    CURLM *multi;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    int stop;  /* under mu */
    int fresh; /* nodes with fresh set, under mu */
    int efd;
};

static double now_s(void)
{
    return clock_ms() / 1000.0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct ereq *r = ctx;
    size_t len = size * nmemb;
    if (r->len + len + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 16384;
        while (cap < r->len + len + 1)
            cap *= 2;
        char *b = cap <= EWATCH_BODY_MAX ? realloc(r->body, cap) : NULL;
        if (!b) {
            snprintf(r->err, sizeof r->err, "answer larger than %u bytes", EWATCH_BODY_MAX);
            return 0; /* libcurl ends the transfer with an error */
        }
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

/* The key is the file's first line, without surrounding blanks. */
static int read_key(const char *path, struct curl_slist **out, char *err, size_t errlen)
{
    char line[1024];
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "api_key_file %s: %s", path, strerror(errno));
        return -1;
    }
    const char *got = fgets(line, sizeof line, f);
    fclose(f);
    char *k = line;
    while (got && (*k == ' ' || *k == '\t'))
        k++;
    size_t len = got ? strcspn(k, " \t\r\n") : 0;
    if (!len) {
        snprintf(err, errlen, "api_key_file %s: no key on its first line", path);
        return -1;
    }
    char header[1100];
    snprintf(header, sizeof header, "Authorization: Bearer %.*s", (int)len, k);
    if (!(*out = curl_slist_append(NULL, header))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int setup_req(struct ereq *r, const char *url, const struct eng_endpoint *ep,
                     struct curl_slist *headers, long timeout_ms)
{
    char full[1024];
    /* "http://h:p/" + "/metrics" would be asked as "//metrics". */
    size_t ulen = strlen(url);
    while (ulen && url[ulen - 1] == '/')
        ulen--;
    snprintf(full, sizeof full, "%.*s%s", (int)ulen, url, ep->path);
    if (!(r->easy = curl_easy_init()))
        return -1;
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, full);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->err);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    if (headers)
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    return 0;
}

static void free_watch(ewatch *w)
{
    for (int i = 0; i < w->n; i++) {
        struct wnode *nd = &w->nodes[i];
        for (int k = 0; nd->reqs && k < nd->n_ep; k++) {
            if (nd->reqs[k].easy) {
                curl_multi_remove_handle(w->multi, nd->reqs[k].easy);
                curl_easy_cleanup(nd->reqs[k].easy);
            }
            free(nd->reqs[k].body);
        }
        free(nd->reqs);
        curl_slist_free_all(nd->headers);
        eng_poll_free(nd->poll);
    }
    if (w->multi)
        curl_multi_cleanup(w->multi);
    if (w->efd >= 0)
        close(w->efd);
    pthread_mutex_destroy(&w->mu);
    free(w->nodes);
    free(w);
}

static void init_curl(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int new_watch(ewatch **out, const struct ewatch_target *t, int n, double interval_s,
                     char *err, size_t errlen)
{
    static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
    pthread_once(&curl_once, init_curl);
    *out = NULL;
    ewatch *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&w->mu, NULL);
    w->efd = -1;
    w->n = n;
    w->interval_s = interval_s;
    /* 0 would mean no timeout to libcurl. */
    long timeout_ms =
        (long)(1000 * (interval_s > 0 ? fmin(interval_s, EWATCH_TIMEOUT_S) : EWATCH_TIMEOUT_S));
    if (!(w->nodes = calloc((size_t)(n > 0 ? n : 1), sizeof *w->nodes)) ||
        !(w->multi = curl_multi_init())) {
        snprintf(err, errlen, "out of memory");
        free_watch(w);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct wnode *nd = &w->nodes[i];
        nd->kind = t[i].kind;
        eng_view_init(&nd->view, t[i].kind);
        const struct eng_endpoint *eps = nd->eps = eng_endpoints(t[i].kind, &nd->n_ep);
        if (!nd->n_ep)
            continue;
        if (t[i].api_key_file && t[i].api_key_file[0] &&
            read_key(t[i].api_key_file, &nd->headers, err, errlen) != 0) {
            free_watch(w);
            return -1;
        }
        if (!(nd->poll = eng_poll_new(t[i].kind)) ||
            !(nd->reqs = calloc((size_t)nd->n_ep, sizeof *nd->reqs))) {
            snprintf(err, errlen, "out of memory");
            free_watch(w);
            return -1;
        }
        for (int k = 0; k < nd->n_ep; k++) {
            nd->reqs[k].node = nd;
            nd->reqs[k].ep = k;
            if (setup_req(&nd->reqs[k], t[i].url, &eps[k], nd->headers, timeout_ms) != 0) {
                snprintf(err, errlen, "out of memory");
                free_watch(w);
                return -1;
            }
        }
    }
    *out = w;
    return 0;
}

/* Files node i's view and says so on the eventfd. */
static void post(ewatch *w, struct wnode *nd, const struct eng_view *v)
{
    pthread_mutex_lock(&w->mu);
    nd->view = *v;
    if (!nd->fresh) {
        nd->fresh = 1;
        w->fresh++;
    }
    uint64_t one = 1;
    /* A failed write means the counter is already non-zero: still readable. */
    if (w->efd >= 0) {
        ssize_t wrote = write(w->efd, &one, sizeof one);
        (void)wrote;
    }
    pthread_mutex_unlock(&w->mu);
}

static void answer(ewatch *w, struct ereq *r, CURLcode rc)
{
    struct wnode *nd = r->node;
    long status = 0;
    curl_off_t us = 0;
    curl_easy_getinfo(r->easy, CURLINFO_TOTAL_TIME_T, &us);
    if (rc == CURLE_OK) {
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        eng_poll_answer(nd->poll, r->ep, status, r->body ? r->body : "", r->len, us / 1000.0);
    } else {
        const char *why = r->err[0] ? r->err : curl_easy_strerror(rc);
        eng_poll_answer(nd->poll, r->ep, 0, why, strlen(why), us / 1000.0);
    }
    if (status == 200 && nd->eps[r->ep].once)
        r->answered = 1;
    curl_multi_remove_handle(w->multi, r->easy);
    if (--nd->running == 0) {
        struct eng_view v;
        eng_poll_end(nd->poll, now_s(), &v);
        post(w, nd, &v);
    }
}

static int stopping(ewatch *w)
{
    pthread_mutex_lock(&w->mu);
    int s = w->stop;
    pthread_mutex_unlock(&w->mu);
    return s;
}

/* One round over every node; returns when all its requests have ended
 * (each is bounded by its timeout) or the watcher is stopping. */
static void round_once(ewatch *w)
{
    int active = 0;
    for (int i = 0; i < w->n; i++) {
        struct wnode *nd = &w->nodes[i];
        if (!nd->poll)
            continue;
        eng_poll_begin(nd->poll, now_s());
        nd->running = 0;
        for (int k = 0; k < nd->n_ep; k++) {
            struct ereq *r = &nd->reqs[k];
            if (nd->eps[k].once && r->answered)
                continue;
            r->len = 0;
            r->err[0] = '\0';
            if (curl_multi_add_handle(w->multi, r->easy) == CURLM_OK)
                nd->running++;
        }
        active += nd->running;
        if (!nd->running) { /* every endpoint was a `once` one, answered */
            struct eng_view v;
            eng_poll_end(nd->poll, now_s(), &v);
            post(w, nd, &v);
        }
    }
    while (active > 0 && !stopping(w)) {
        int still;
        curl_multi_perform(w->multi, &still);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(w->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            char *r;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &r);
            answer(w, (struct ereq *)r, m->data.result);
            active--;
        }
        if (active > 0)
            curl_multi_poll(w->multi, NULL, 0, 1000, NULL);
    }
}

/* Sleeps until `until` (the poller's clock) unless woken to stop. */
static void pause_until(ewatch *w, double until)
{
    double left;
    while (!stopping(w) && (left = until - now_s()) > 0)
        curl_multi_poll(w->multi, NULL, 0, (int)ceil(left * 1000), NULL);
}

static void *run(void *arg)
{
    ewatch *w = arg;
    while (!stopping(w)) {
        double start = now_s();
        round_once(w);
        pause_until(w, start + w->interval_s);
    }
    return NULL;
}

int ewatch_start(ewatch **out, const struct ewatch_target *t, int n, double interval_s, char *err,
                 size_t errlen)
{
    ewatch *w;
    if (new_watch(&w, t, n, interval_s, err, errlen) != 0)
        return -1;
    if ((w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        free_watch(w);
        return -1;
    }
    /* The caller's signals are its own business: the thread takes none. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, run, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the HTTP watcher: %s", strerror(rc));
        free_watch(w);
        return -1;
    }
    w->started = 1;
    *out = w;
    return 0;
}

int ewatch_fd(const ewatch *w)
{
    return w->efd;
}

int ewatch_take(ewatch *w, int i, struct eng_view *out)
{
    int got = 0;
    pthread_mutex_lock(&w->mu);
    struct wnode *nd = &w->nodes[i];
    if (nd->fresh) {
        *out = nd->view;
        nd->fresh = 0;
        got = 1;
        if (--w->fresh == 0) {
            uint64_t count;
            /* Nothing to read means it was drained already. */
            ssize_t got_n = read(w->efd, &count, sizeof count);
            (void)got_n;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return got;
}

void ewatch_stop(ewatch *w)
{
    if (!w)
        return;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_mutex_unlock(&w->mu);
        curl_multi_wakeup(w->multi);
        pthread_join(w->thread, NULL);
    }
    free_watch(w);
}

int ewatch_once(const struct ewatch_target *t, int n, int rounds, double gap_s,
                struct eng_view *out, char *err, size_t errlen)
{
    ewatch *w;
    if (new_watch(&w, t, n, gap_s, err, errlen) != 0)
        return -1;
    for (int r = 0; r < rounds; r++) {
        double start = now_s();
        round_once(w);
        if (r + 1 < rounds)
            pause_until(w, start + gap_s);
    }
    for (int i = 0; i < n; i++)
        out[i] = w->nodes[i].view;
    free_watch(w);
    return 0;
}
