/* cli_metrics.c: `infertop metrics`, the cluster's Prometheus exporter.
 *
 * For clusters whose nodes cannot be scraped directly (no --http on them,
 * or a network Prometheus does not reach): subscribes to the telemetry of
 * every inferd node of the cluster file and serves the merged metrics,
 * one series per node (`node` label), with the same module and the same
 * names as a node's own /metrics (engine/http).
 *
 * After them come the infertop_node_* families, one schema for every node
 * of every engine (`node` and `engine` labels), so that one scrape covers
 * a mixed cluster: the inferd nodes as their telemetry says, the others
 * as their HTTP polls (ewatch.h) find them, every second. A number an
 * engine does not report has no series (never 0). The main thread keeps
 * that state; the server's threads render it under the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "cli.h"
#include "cli_engine.h"
#include "engine/http/http.h"
#include "engine/http/sbuf.h"
#include "engine/sys/clock.h"
#include "tui/core/cluster.h"
#include "tui/core/links.h"
#include "tui/core/state.h"
#include "tui/engine/ewatch.h"

/* The HTTP nodes' poll interval, and the longest the loop sleeps (the
 * liveness tick). */
#define METRICS_POLL_S 1.0
#define METRICS_TICK_S 0.5

struct exporter {
    pthread_mutex_t mu; /* over st and the links that feed it */
    const struct cluster *c;
    state *st;
    links *l;
    ewatch *w; /* NULL without HTTP nodes */
};

static double now_s(void)
{
    return clock_ms() / 1000.0;
}

static void put_series(sbuf *b, const char *family, const state *st, int i,
                       const struct eng_view *v, double value)
{
    sbuf_printf(b, "%s{node=\"%s\",engine=\"%s\"} %.10g\n", family, state_node_name(st, i),
                eng_name(v->kind), value);
}

/* http_opts.metrics_more: the infertop_node_* families. */
static char *render(void *ctx)
{
    struct exporter *x = ctx;
    int n = state_node_count(x->st);
    struct eng_view *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    pthread_mutex_lock(&x->mu);
    double now = now_s();
    for (int i = 0; i < n; i++)
        state_node_summary(x->st, i, now, &v[i]);
    sbuf b = {0};
    sbuf_puts(&b, "# HELP infertop_node_up 1 when the node is up (inferd: heartbeats; other "
                  "engines: their last poll).\n# TYPE infertop_node_up gauge\n");
    for (int i = 0; i < n; i++)
        put_series(&b, "infertop_node_up", x->st, i, &v[i], v[i].health == ENG_UP);
    for (int f = 0; f < cli_eng_nfields; f++) {
        char family[96];
        snprintf(family, sizeof family, "infertop_node_%s", cli_eng_fields[f].metric);
        sbuf_printf(&b, "# HELP %s %s\n# TYPE %s gauge\n", family, cli_eng_fields[f].help, family);
        for (int i = 0; i < n; i++) {
            double value = cli_eng_value(&v[i], &cli_eng_fields[f]);
            if (isfinite(value))
                put_series(&b, family, x->st, i, &v[i], value * cli_eng_fields[f].scale);
        }
    }
    pthread_mutex_unlock(&x->mu);
    free(v);
    return sbuf_take(&b, NULL);
}

static int exporter_open(struct exporter *x, const struct cluster *c, char *err, size_t errlen)
{
    const char *names[c->n_nodes > 0 ? c->n_nodes : 1];
    struct ewatch_target t[c->n_nodes > 0 ? c->n_nodes : 1];
    memset(x, 0, sizeof *x);
    pthread_mutex_init(&x->mu, NULL);
    x->c = c;
    for (int i = 0; i < c->n_nodes; i++) {
        names[i] = c->nodes[i].name;
        t[i] =
            (struct ewatch_target){c->nodes[i].engine, c->nodes[i].url, c->nodes[i].api_key_file};
    }
    if (!(x->st = state_new(c->name, c->n_nodes, names))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < c->n_nodes; i++)
        state_node_set_engine(x->st, i, c->nodes[i].engine);
    state_alert_settings(x->st, &c->alerts);
    if (links_open(&x->l, c, x->st, now_s(), err, errlen) != 0)
        return -1;
    if (cluster_ring_size(c) < c->n_nodes &&
        ewatch_start(&x->w, t, c->n_nodes, METRICS_POLL_S, err, errlen) != 0)
        return -1;
    return 0;
}

static void exporter_close(struct exporter *x)
{
    ewatch_stop(x->w);
    links_close(x->l);
    state_free(x->st);
    pthread_mutex_destroy(&x->mu);
}

/* The write end of the pipe SIGINT and SIGTERM write to: a handler can
 * reach the loop only through a global. A handler rather than a blocked
 * signal read from a descriptor: OpenBLAS starts threads of its own before
 * main, with no signal blocked, and one of them would take the signal and
 * die of it. */
static int stop_pipe = -1;

static void on_stop(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t wrote = write(stop_pipe, &b, 1); /* full: a wake-up is queued already */
    (void)wrote;
    errno = saved;
}

/* Feeds the state until the stop pipe is readable: telemetry, polls and
 * liveness, each under the lock the renderer takes. */
static int exporter_run(struct exporter *x, int stop_fd, char *err, size_t errlen)
{
    int max = links_poll_max(x->l) + 2;
    zmq_pollitem_t items[max];
    for (;;) {
        int n = links_poll_items(x->l, 1, items, max - 2);
        int sig = n++;
        items[sig] = (zmq_pollitem_t){NULL, stop_fd, ZMQ_POLLIN, 0};
        int watch = x->w ? n++ : -1;
        if (x->w)
            items[watch] = (zmq_pollitem_t){NULL, ewatch_fd(x->w), ZMQ_POLLIN, 0};
        if (zmq_poll(items, n, (long)(METRICS_TICK_S * 1000)) < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll: %s", zmq_strerror(errno));
            return -1;
        }
        if (items[sig].revents & ZMQ_POLLIN)
            return 0;
        pthread_mutex_lock(&x->mu);
        double now = now_s();
        links_process(x->l, items, n, now);
        struct eng_view v;
        for (int i = 0; watch >= 0 && (items[watch].revents & ZMQ_POLLIN) && i < x->c->n_nodes; i++)
            if (ewatch_take(x->w, i, &v))
                state_ingest_engine(x->st, i, &v, now);
        state_tick(x->st, now);
        pthread_mutex_unlock(&x->mu);
    }
}

int cli_metrics(int argc, char **argv)
{
    opt_vals v;
    int rc = cli_parse(OPT_V_METRICS, argc, argv, &v);
    if (rc >= 0)
        return rc;
    const char *listen = opt_str(&v, OPT_METRICS_LISTEN);
    char path[CLUSTER_PATH_MAX], err[1024], warning[512];
    struct cluster *c = NULL;
    if (cluster_locate(opt_str(&v, OPT_CONFIG), path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop metrics: %s\n", err);
        return CLI_ERROR;
    }
    const char **endpoints = calloc((size_t)c->n_nodes + 1, sizeof *endpoints);
    if (!endpoints) {
        fprintf(stderr, "infertop metrics: out of memory\n");
        cluster_free(c);
        return CLI_ERROR;
    }
    int n_tel = 0;
    for (int i = 0; i < c->n_nodes; i++)
        if (cluster_node_is_inferd(c, i))
            endpoints[n_tel++] = c->nodes[i].telemetry;
    /* Blocked while the threads start, so that none of them is
     * interrupted by one; then only the loop's thread takes them. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        fprintf(stderr, "infertop metrics: pipe: %s\n", strerror(errno));
        free(endpoints);
        cluster_free(c);
        return CLI_ERROR;
    }
    stop_pipe = fds[1];
    struct sigaction sa = {.sa_handler = on_stop, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct exporter x;
    http *h = NULL;
    rc = CLI_ERROR;
    if (exporter_open(&x, c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop metrics: %s\n", err);
    } else {
        http_opts o = {.listen = listen,
                       .api_key_file = opt_str(&v, OPT_API_KEY),
                       .telemetry = endpoints,
                       .n_telemetry = n_tel,
                       .metrics_more = render,
                       .metrics_ctx = &x};
        if (http_start(&h, &o, warning, sizeof warning, err, sizeof err) != 0) {
            fprintf(stderr, "infertop metrics: --listen %s\n", err);
        } else {
            if (warning[0])
                fprintf(stderr, "\n*** WARNING: %s ***\n\n", warning);
            fprintf(stderr, "infertop metrics: %d node%s of %s on http://%s/metrics\n", c->n_nodes,
                    c->n_nodes == 1 ? "" : "s", c->name, listen);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            if (exporter_run(&x, fds[0], err, sizeof err) == 0)
                rc = CLI_OK;
            else
                fprintf(stderr, "infertop metrics: %s\n", err);
            pthread_sigmask(SIG_BLOCK, &stop, NULL);
            http_stop(h);
        }
    }
    exporter_close(&x);
    stop_pipe = -1;
    close(fds[0]);
    close(fds[1]);
    free(endpoints);
    cluster_free(c);
    return rc;
}
