/* bench_http.c: what the HTTP server (engine/http) costs.
 *
 *   publish, plain / with the metrics feed
 *                encode + publish of a step message on a PUB with a TCP
 *                subscriber (a console), and the same with the HTTP server's
 *                metrics feed (feed.c) subscribed too on inproc, as a node
 *                started with --http has it: what /metrics costs the step
 *                path, us per message.
 *   streaming overhead per token
 *                a node (`inferd serve --http`, a small synthetic model so
 *                that steps are short and no end of text comes early)
 *                generates the same greedy tokens for a ZeroMQ client
 *                (engine/proto/client.h) and for a streaming HTTP client
 *                (/v1/completions, server-sent events, read off a raw
 *                socket); the difference of the two per-token slopes,
 *                measured between two lengths so that fixed per-request
 *                costs cancel out (best of REPEAT runs each), us per token.
 *   per-request overhead
 *                the same for a request of one token (best of N_ONE): the
 *                connection, parsing, a DEALER per request, headers; ms.
 *   decode step  the ZeroMQ client's time per token, for scale.
 *   16 concurrent streams
 *                16 clients at once (the node's --max-seqs: one batch), each
 *                streaming N_CONC_TOKENS tokens of synth:110m (steps as a
 *                small real model's), over HTTP and over ZeroMQ, in
 *                N_CONC_PAIRS pairs of one run each, taken in turns (ABBA)
 *                so that a slow spell of a shared machine hits both alike.
 *                The figure that holds still on a loaded machine is CPU
 *                time: the HTTP server's connection threads' per streamed
 *                token (its /metrics counter inferd_http_cpu_seconds_total,
 *                less one scrape's own), against the node's whole CPU time
 *                per token over the control socket (/proc/PID/stat);
 *                medians over the pairs. Wall time too: per pair the
 *                difference per streamed token (us) and in % of the ZeroMQ
 *                run, the median and the spread of the %, and the ZeroMQ
 *                run's time per token and per decode step.
 *   /metrics scrape, 8 nodes
 *                GET /metrics on a connection of its own, from a server fed
 *                the telemetry of 8 nodes (heartbeats, 2000 steps each,
 *                requests, events); ms per scrape, and the size.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "benchlib.h"
#include "engine/http/feed.h"
#include "engine/http/http.h"
#include "engine/proto/client.h"
#include "engine/proto/protocol.h"

#define N_PUBLISH 200000
#define N_SHORT 64
#define N_LONG 512
#define REPEAT 15
#define N_ONE 50
#define N_NODES 8
#define N_SCRAPES 200
/* 16 streams at once (the node's --max-seqs: one batch) of a model whose
 * steps are a real model's, so that the % means what it would in use. */
#define N_CONC 16
#define N_CONC_TOKENS 48
#define N_CONC_PAIRS 9
/* The wider load: 64 streams at --max-seqs 64, fewer pairs (each run is
 * four times as long). */
#define N_WIDE 64
#define N_WIDE_PAIRS 3
/* Streamed tokens/s over HTTP, in % of the control socket's: the target. */
#define RATE_TARGET_PCT 95.0
#define CONC_MODEL "synth:110m"
#define MODEL "synth:dim=64,hidden=128,layers=1,heads=2,kv_heads=2,vocab=512,seed=2"

/* ---- publish, with and without the feed --------------------------------- */

static proto_step sample_step(int64_t i)
{
    proto_step s = {.step = i,
                    .phase = (i & 15) ? PROTO_PHASE_DECODE : PROTO_PHASE_PREFILL,
                    .tokens = 1,
                    .pos = 100 + (int)(i & 1023),
                    .step_ms = 3.125 + (double)(i & 7),
                    .model_ms = 2.5,
                    .eval_ms = 0.625 + (double)(i & 7),
                    .kv_bytes = 1u << 20,
                    .kv_bits = 16,
                    .prefill_step = 512,
                    .rss = 1u << 30,
                    .budget = 1ull << 34,
                    .headroom = 1ll << 33,
                    .act_max = 3.5};
    snprintf(s.req, sizeof s.req, "r%lld", (long long)(i >> 8));
    return s;
}

/* A console: a TCP subscriber a thread of its own keeps drained. */
typedef struct drain {
    void *sub;
    atomic_int stop;
} drain;

static void *drain_main(void *arg)
{
    drain *d = arg;
    char buf[2048];
    while (!atomic_load(&d->stop)) {
        zmq_pollitem_t item = {d->sub, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 100) > 0)
            while (zmq_recv(d->sub, buf, sizeof buf, ZMQ_DONTWAIT) >= 0)
                ;
    }
    return NULL;
}

/* Publishes N_PUBLISH step messages on pub; us per message. */
static double publish(void *pub, const char *node)
{
    proto_head h = {.t_ms = 1700000000000};
    snprintf(h.node, sizeof h.node, "%s", node);
    char buf[PROTO_STEP_BUF];
    double t0 = bench_now();
    for (int i = 0; i < N_PUBLISH; i++) {
        proto_step s = sample_step(i);
        h.seq++;
        int n = proto_step_encode(&h, &s, buf, sizeof buf);
        proto_publish(pub, PROTO_TOPIC_STEP, buf, (size_t)n);
    }
    return (bench_now() - t0) * 1e6 / N_PUBLISH;
}

/* plain and fed: us per message without and with the feed, a console
 * subscribed in both. */
static int bench_publish(double *plain, double *fed)
{
    char ep[256], err[256];
    size_t eplen = sizeof ep;
    void *ctx = zmq_ctx_new();
    void *pub = zmq_socket(ctx, ZMQ_PUB);
    drain d = {.sub = zmq_socket(ctx, ZMQ_SUB)};
    pthread_t th;
    int zero = 0;
    zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(d.sub, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(d.sub, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_bind(pub, "tcp://127.0.0.1:*") || zmq_getsockopt(pub, ZMQ_LAST_ENDPOINT, ep, &eplen) ||
        zmq_connect(d.sub, ep) || zmq_bind(pub, "inproc://bench-telemetry") ||
        pthread_create(&th, NULL, drain_main, &d)) {
        fprintf(stderr, "bench_http: sockets: %s\n", zmq_strerror(zmq_errno()));
        return -1;
    }
    zmq_poll(NULL, 0, 200); /* the subscription reaches the PUB */
    *plain = publish(pub, "plain");
    const char *eps[] = {"inproc://bench-telemetry"};
    feed *f = NULL;
    int rc = feed_start(&f, ctx, eps, 1, err, sizeof err);
    if (rc == 0) {
        zmq_poll(NULL, 0, 200);
        *fed = publish(pub, "fed");
        feed_stop(f);
    } else {
        fprintf(stderr, "bench_http: feed: %s\n", err);
    }
    atomic_store(&d.stop, 1);
    pthread_join(th, NULL);
    zmq_close(d.sub);
    zmq_close(pub);
    zmq_ctx_term(ctx);
    return rc;
}

/* ---- a node, and its two kinds of client -------------------------------- */

/* A free loopback port outside the ephemeral range (benchlib's: inferd
 * serve refuses the others), -1 when none. */
static int free_port(void)
{
    int port;
    return bench_free_ports(1, &port) == 0 ? port : -1;
}

static int connect_port(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends an HTTP request and reads the response until `until` shows up
 * (*seen set) or the server closes; returns the bytes read, -1 on failure.
 * Callable from several threads at once. */
static long http_exchange(int port, const char *request, const char *until, int *seen)
{
    *seen = 0;
    int fd = connect_port(port);
    if (fd < 0 || send_all(fd, request, strlen(request)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    char buf[1 << 16];
    size_t got = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
        if (until && strstr(buf + (got > (size_t)r + 16 ? got - (size_t)r - 16 : 0), until)) {
            *seen = 1;
            break;
        }
        if (got == sizeof buf - 1)
            got = 0; /* only the end matters */
    }
    close(fd);
    return (long)got;
}

/* Seconds for one streamed completion of n tokens over HTTP, -1 when it
 * did not end with [DONE]. */
static double http_run(int port, const char *model, int n)
{
    char body[512], req[1024];
    snprintf(body, sizeof body,
             "{\"model\":\"%s\",\"prompt\":\"x\",\"max_tokens\":%d,\"temperature\":0,"
             "\"stream\":true}",
             model, n);
    snprintf(req, sizeof req,
             "POST /v1/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
             strlen(body), body);
    double t0 = bench_now();
    int seen;
    long got = http_exchange(port, req, "data: [DONE]", &seen);
    return got > 0 && seen ? bench_now() - t0 : -1;
}

/* Seconds for the same over the protocol; *tokens: how many came. */
static double zmq_run(client *c, int n, int *tokens)
{
    char id[PROTO_ID_MAX + 1], err[256];
    json_t *args = json_pack("{s:s,s:i,s:f}", "prompt", "x", "max_tokens", n, "temperature", 0.0);
    double t0 = bench_now();
    int rc = client_send(c, "generate", args, id, sizeof id, err, sizeof err);
    json_decref(args);
    *tokens = 0;
    while (rc == 0) {
        proto_reply r;
        if (client_recv(c, &r, 30000, err, sizeof err) != 1)
            return -1;
        int done = r.done, ok = r.ok;
        *tokens += r.has_token;
        proto_reply_free(&r);
        if (done)
            return ok ? bench_now() - t0 : -1;
    }
    return -1;
}

static double best(double a, double b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* One of the concurrent clients streaming N_CONC_TOKENS tokens: over
 * HTTP when port > 0, else over ZeroMQ on a client of its own. */
typedef struct conc_arg {
    int port;
    const char *model;
    client *c; /* connected before the clock starts, as an HTTP client needs no setup */
    int ok;
} conc_arg;

static void *conc_main(void *p)
{
    conc_arg *a = p;
    a->ok = 0;
    if (a->port > 0) {
        a->ok = http_run(a->port, a->model, N_CONC_TOKENS) >= 0;
        return NULL;
    }
    int tokens;
    a->ok = zmq_run(a->c, N_CONC_TOKENS, &tokens) >= 0 && tokens == N_CONC_TOKENS;
    return NULL;
}

/* Wall seconds of n (<= N_WIDE) streams at once, -1 when one failed. */
static double concurrent(int port, const char *model, const char *control, int n)
{
    pthread_t t[N_WIDE];
    conc_arg a[N_WIDE];
    char err[256];
    int opened = 0, started = 0, ok = 1;
    for (; port <= 0 && opened < n; opened++)
        if (client_open(&a[opened].c, NULL, control, NULL, err, sizeof err) != 0)
            break;
    double t0 = bench_now();
    for (; started < n && (port > 0 || opened == n); started++) {
        a[started] = (conc_arg){port, model, port > 0 ? NULL : a[started].c, 0};
        if (pthread_create(&t[started], NULL, conc_main, &a[started]) != 0)
            break;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        ok &= a[i].ok;
    }
    double wall = bench_now() - t0;
    for (int i = 0; i < opened; i++)
        client_close(a[i].c);
    return ok && started == n ? wall : -1;
}

/* A node (`inferd serve --http`) of `model`, and a ZeroMQ client of it. */
typedef struct node_run {
    pid_t pid;
    client *c;
    int port;
    int streams; /* its --max-seqs: the concurrent runs' clients */
    char control[64], model[PROTO_TEXT_MAX];
} node_run;

static int node_start(node_run *nr, const char *model, int max_seqs)
{
    int control = free_port(), telemetry = free_port();
    char ep_t[64], hp[64], seqs[16], err[256] = "no status reply within 60 s (is inferd on PATH?)";
    memset(nr, 0, sizeof *nr);
    nr->port = free_port();
    snprintf(nr->control, sizeof nr->control, "tcp://127.0.0.1:%d", control);
    snprintf(ep_t, sizeof ep_t, "tcp://127.0.0.1:%d", telemetry);
    snprintf(hp, sizeof hp, "127.0.0.1:%d", nr->port);
    snprintf(seqs, sizeof seqs, "%d", max_seqs);
    nr->streams = max_seqs;
    nr->pid = fork();
    if (nr->pid == 0) {
        execlp("inferd", "inferd", "serve", "--name", "bench", "--model", model, "--threads", "1",
               "--max-seqs", seqs, "--control", nr->control, "--telemetry", ep_t, "--http", hp,
               (char *)NULL);
        _exit(127);
    }
    proto_reply r;
    if (nr->pid < 0 || client_open(&nr->c, NULL, nr->control, NULL, err, sizeof err) != 0 ||
        client_call(nr->c, "status", NULL, &r, 60000, err, sizeof err) != 1) {
        fprintf(stderr, "bench_http: the node did not start: %s\n", err);
        return -1;
    }
    snprintf(nr->model, sizeof nr->model, "%s",
             json_string_value(json_object_get(json_object_get(r.json, "model"), "name")));
    proto_reply_free(&r);
    return 0;
}

static void node_stop(node_run *nr)
{
    client_close(nr->c);
    if (nr->pid > 0) {
        kill(nr->pid, SIGTERM);
        waitpid(nr->pid, NULL, 0);
    }
}

/* The per-token difference and the per-request one (at zero tokens). */
static int bench_stream(double *per_token_us, double *per_request_ms, double *step_us)
{
    node_run nr;
    int rc = -1, tokens[2] = {0, 0};
    if (node_start(&nr, MODEL, N_CONC) != 0)
        goto out;
    double z[2] = {-1, -1}, h[2] = {-1, -1};
    const int n[2] = {N_SHORT, N_LONG};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < REPEAT; i++) {
            z[k] = best(z[k], zmq_run(nr.c, n[k], &tokens[k]));
            h[k] = best(h[k], http_run(nr.port, nr.model, n[k]));
        }
    }
    if (z[0] < 0 || z[1] < 0 || h[0] < 0 || h[1] < 0 || tokens[1] <= tokens[0]) {
        fprintf(stderr, "bench_http: a run failed\n");
        goto out;
    }
    double slope_z = (z[1] - z[0]) / (tokens[1] - tokens[0]);
    double slope_h = (h[1] - h[0]) / (tokens[1] - tokens[0]);
    *step_us = slope_z * 1e6;
    *per_token_us = (slope_h - slope_z) * 1e6;
    double z1 = -1, h1 = -1;
    int one;
    for (int i = 0; i < N_ONE; i++) {
        z1 = best(z1, zmq_run(nr.c, 1, &one));
        h1 = best(h1, http_run(nr.port, nr.model, 1));
    }
    *per_request_ms = z1 >= 0 && h1 >= 0 ? (h1 - z1) * 1e3 : -1;
    rc = 0;
out:
    node_stop(&nr);
    return rc;
}

/* What the pairs of concurrent runs give: medians over the pairs. */
typedef struct conc_figures {
    double http_tps, zmq_tps;        /* streamed tokens/s, all clients together */
    double rate_pct;                 /* the first in % of the second */
    double us;                       /* HTTP's extra time per streamed token */
    double pct;                      /* ... in % of the ZeroMQ run */
    double lo, hi;                   /* the pairs' smallest and largest % */
    double token_us;                 /* the ZeroMQ run's wall time per streamed token */
    double step_ms;                  /* ... per decode step (16 tokens) */
    double http_cpu_us, node_cpu_us; /* CPU per streamed token: HTTP server's, node's */
    double cpu_pct, cpu_lo, cpu_hi;  /* the first in % of the second; the pairs' range */
} conc_figures;

/* The server's inferd_http_cpu_seconds_total, -1 when unreadable. A
 * scrape's own CPU time is counted once its connection ends: after a
 * pause, by the next scrape. */
static double http_cpu_s(int port)
{
    const char *get = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    const char *key = "\ninferd_http_cpu_seconds_total ";
    size_t cap = 1 << 20, got = 0;
    char *buf = malloc(cap);
    int fd = buf ? connect_port(port) : -1;
    double v = -1;
    if (fd >= 0 && send_all(fd, get, strlen(get)) == 0) {
        ssize_t r;
        while (got < cap - 1 && (r = recv(fd, buf + got, cap - 1 - got, 0)) > 0)
            got += (size_t)r;
        buf[got] = '\0';
        const char *at = strstr(buf, key);
        if (at)
            v = strtod(at + strlen(key), NULL);
    }
    if (fd >= 0)
        close(fd);
    free(buf);
    zmq_poll(NULL, 0, 20);
    return v;
}

/* The CPU seconds process pid has used (user + system), -1 if unknown. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(line, 1, sizeof line - 1, f) : 0;
    if (f)
        fclose(f);
    line[n] = '\0';
    const char *p = strrchr(line, ')');
    unsigned long ut, st;
    /* After the name: state, then fields 4..13, then utime and stime. */
    if (!p || sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* One HTTP run of the node's streams: its wall seconds (-1: failed) and
 * the HTTP server's CPU seconds within it, into *cpu. */
static double http_conc(const node_run *nr, double *cpu)
{
    double a = http_cpu_s(nr->port), b = http_cpu_s(nr->port);
    double wall = concurrent(nr->port, nr->model, nr->control, nr->streams);
    double c = http_cpu_s(nr->port);
    *cpu = a < 0 || b < 0 || c < 0 ? -1 : (c - b) - (b - a);
    return wall;
}

/* One ZeroMQ run: its wall seconds and the node's CPU seconds, *cpu. */
static double zmq_conc(const node_run *nr, double *cpu)
{
    double a = proc_cpu_s(nr->pid);
    double wall = concurrent(0, nr->model, nr->control, nr->streams);
    double b = proc_cpu_s(nr->pid);
    *cpu = a < 0 || b < 0 ? -1 : b - a;
    return wall;
}

/* streams at once (the node's --max-seqs) on a node of CONC_MODEL, over
 * ZeroMQ and over HTTP, pair by pair (pairs <= N_CONC_PAIRS). */
static int bench_concurrent(conc_figures *out, int streams, int pairs)
{
    node_run nr;
    int rc = -1;
    double us[N_CONC_PAIRS], pct[N_CONC_PAIRS], tok[N_CONC_PAIRS], step[N_CONC_PAIRS];
    double hcpu[N_CONC_PAIRS], zcpu[N_CONC_PAIRS], cpct[N_CONC_PAIRS];
    double htps[N_CONC_PAIRS], ztps[N_CONC_PAIRS], rpct[N_CONC_PAIRS];
    const double tokens = (double)streams * N_CONC_TOKENS;
    if (node_start(&nr, CONC_MODEL, streams) != 0)
        goto out;
    /* A warm-up of each, then the pairs, the first of each pair alternating. */
    concurrent(0, nr.model, nr.control, streams);
    concurrent(nr.port, nr.model, nr.control, streams);
    for (int i = 0; i < pairs; i++) {
        double z = -1, h = -1, hc = -1, zc = -1;
        if (i % 2)
            h = http_conc(&nr, &hc);
        z = zmq_conc(&nr, &zc);
        if (i % 2 == 0)
            h = http_conc(&nr, &hc);
        if (z <= 0 || h <= 0 || hc < 0 || zc <= 0) {
            fprintf(stderr, "bench_http: a concurrent run failed\n");
            goto out;
        }
        us[i] = (h - z) / tokens * 1e6;
        pct[i] = (h - z) / z * 100.0;
        tok[i] = z / tokens * 1e6;
        step[i] = z / N_CONC_TOKENS * 1e3;
        hcpu[i] = hc / tokens * 1e6;
        zcpu[i] = zc / tokens * 1e6;
        cpct[i] = hc / zc * 100.0;
        htps[i] = tokens / h;
        ztps[i] = tokens / z;
        rpct[i] = z / h * 100.0;
    }
    out->http_cpu_us = bench_median(hcpu, pairs);
    out->node_cpu_us = bench_median(zcpu, pairs);
    out->cpu_pct = bench_median(cpct, pairs);
    out->cpu_lo = cpct[0]; /* bench_median sorted them */
    out->cpu_hi = cpct[pairs - 1];
    out->us = bench_median(us, pairs);
    out->pct = bench_median(pct, pairs);
    out->lo = pct[0]; /* sorted too */
    out->hi = pct[pairs - 1];
    out->token_us = bench_median(tok, pairs);
    out->step_ms = bench_median(step, pairs);
    out->http_tps = bench_median(htps, pairs);
    out->zmq_tps = bench_median(ztps, pairs);
    out->rate_pct = bench_median(rpct, pairs);
    rc = 0;
out:
    node_stop(&nr);
    return rc;
}

/* ---- /metrics of 8 nodes ------------------------------------------------ */

static void send_tel(void *pub, proto_topic topic, char *text)
{
    if (text)
        proto_publish(pub, topic, text, strlen(text));
    free(text);
}

/* Publishes a history like a ring of N_NODES stages would; returns how
 * many messages. */
static long feed_history(void *pub)
{
    long sent = 0;
    char buf[PROTO_STEP_BUF];
    for (int node = 0; node < N_NODES; node++) {
        proto_head h = {.t_ms = 1700000000000};
        snprintf(h.node, sizeof h.node, "node-%d", node);
        proto_status st = {.config = {.prefill_step = 512, .kv_bits = 16, .threads = 2}};
        snprintf(st.model.name, sizeof st.model.name, "synth:1b");
        snprintf(st.model.fingerprint, sizeof st.model.fingerprint, "%064d", node);
        snprintf(st.model.chat_template, sizeof st.model.chat_template, "llama3");
        st.model.layer_first = node * 2;
        st.model.layer_last = node * 2 + 2;
        h.seq++;
        send_tel(pub, PROTO_TOPIC_NODE, proto_node_encode(&h, &st));
        sent++;
        for (int i = 0; i < 2000; i++) {
            proto_step s = sample_step(i);
            h.seq++;
            int n = proto_step_encode(&h, &s, buf, sizeof buf);
            proto_publish(pub, PROTO_TOPIC_STEP, buf, (size_t)n);
            sent++;
        }
        for (int i = 0; i < 50 && node == 0; i++) {
            proto_req_msg m = {.end = 1, .ok = i % 10 != 0, .stats = {.ttft_ms = 40.0 + i}};
            snprintf(m.req, sizeof m.req, "r%d", i);
            snprintf(m.code, sizeof m.code, "%s", m.ok ? "" : "kv_oom");
            h.seq++;
            send_tel(pub, PROTO_TOPIC_REQ, proto_req_encode(&h, &m));
            sent++;
        }
        proto_event ev = {.kind = PROTO_EV_CONFIG_APPLIED};
        snprintf(ev.message, sizeof ev.message, "set");
        h.seq++;
        send_tel(pub, PROTO_TOPIC_EVENT, proto_event_encode(&h, &ev, NULL));
        sent++;
    }
    return sent;
}

/* ms per scrape and the size of one, in KiB. */
static int bench_scrape(double *ms, double *kib)
{
    void *ctx = zmq_ctx_new();
    void *pub = zmq_socket(ctx, ZMQ_PUB);
    int zero = 0, port = free_port();
    zmq_setsockopt(pub, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof zero);
    zmq_bind(pub, "inproc://bench-nodes");
    char listen[64], warning[256], err[256];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    const char *eps[] = {"inproc://bench-nodes"};
    http_opts o = {.listen = listen, .zctx = ctx, .telemetry = eps, .n_telemetry = 1};
    http *h = NULL;
    int rc = -1;
    if (http_start(&h, &o, warning, sizeof warning, err, sizeof err) != 0) {
        fprintf(stderr, "bench_http: %s\n", err);
        goto out;
    }
    zmq_poll(NULL, 0, 200);
    feed_history(pub);
    const char *get = "GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n";
    zmq_poll(NULL, 0, 500); /* the feed takes the history in */
    int seen;
    long size = http_exchange(port, get, NULL, &seen);
    double t0 = bench_now();
    for (int i = 0; i < N_SCRAPES; i++)
        if (http_exchange(port, get, NULL, &seen) <= 0)
            goto out;
    *ms = (bench_now() - t0) * 1e3 / N_SCRAPES;
    *kib = size / 1024.0;
    rc = size > 0 ? 0 : -1;
out:
    http_stop(h);
    zmq_close(pub);
    zmq_ctx_term(ctx);
    return rc;
}

/* Streamed tokens/s of streams at once (pairs of runs), over HTTP
 * against the control socket. */
static void rate_rows(bench *b, int streams, int pairs, const conc_figures *f)
{
    char name[160], target[32];
    snprintf(name, sizeof name,
             "%d streams of %s at --max-seqs %d: streamed tokens/s over HTTP (median of %d "
             "pairs)",
             streams, CONC_MODEL, streams, pairs);
    snprintf(target, sizeof target, ">= %g %%", RATE_TARGET_PCT);
    bench_add(b, name, f->http_tps, "tok/s", NULL, -1);
    bench_add(b, "... over the control socket", f->zmq_tps, "tok/s", NULL, -1);
    bench_add(b, "... HTTP's rate in % of the control socket's", f->rate_pct, "%", target,
              f->rate_pct != -1 && f->rate_pct >= RATE_TARGET_PCT);
}

int main(void)
{
    bench *b = bench_open("http");
    double plain = -1, fed = -1, per_token = -1, per_request = -1, step = -1, scrape = -1, kib = -1;
    conc_figures cf = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    conc_figures wide = cf;
    int ok = bench_publish(&plain, &fed) == 0;
    ok &= bench_stream(&per_token, &per_request, &step) == 0;
    ok &= bench_concurrent(&cf, N_CONC, N_CONC_PAIRS) == 0;
    ok &= bench_concurrent(&wide, N_WIDE, N_WIDE_PAIRS) == 0;
    ok &= bench_scrape(&scrape, &kib) == 0;
    bench_add(b, "step message publish, no /metrics feed", plain, "us", NULL, -1);
    bench_add(b, "step message publish, /metrics feed subscribed", fed, "us", "<= 5 us",
              fed >= 0 && fed <= 5.0);
    bench_add(b, "HTTP streaming overhead per token vs ZeroMQ", per_token, "us", NULL, -1);
    bench_add(b, "token time through the ZeroMQ client (small synth model)", step, "us", NULL, -1);
    bench_add(b, "HTTP per-request overhead vs ZeroMQ (1 token)", per_request, "ms", NULL, -1);
    bench_add(b, "16 streams of synth:110m: HTTP server CPU per streamed token", cf.http_cpu_us,
              "us", NULL, -1);
    bench_add(b, "... the node's CPU per token over the control socket", cf.node_cpu_us, "us", NULL,
              -1);
    bench_add(b, "... HTTP's CPU in % of it (median of 9 pairs)", cf.cpu_pct, "%", "< 5 %",
              cf.cpu_pct != -1 && cf.cpu_pct < 5.0);
    bench_add(b, "... the pairs' spread of that % (largest - smallest)", cf.cpu_hi - cf.cpu_lo, "%",
              NULL, -1);
    bench_add(b, "... wall: control socket's time per streamed token", cf.token_us, "us", NULL, -1);
    bench_add(b, "... wall: its decode step (16 tokens)", cf.step_ms, "ms", NULL, -1);
    bench_add(b, "... wall: HTTP's extra per streamed token (median)", cf.us, "us", NULL, -1);
    bench_add(b, "... wall: in % of the control socket's (median)", cf.pct, "%", NULL, -1);
    bench_add(b, "... wall: the pairs' spread of that % (largest - smallest)", cf.hi - cf.lo, "%",
              NULL, -1);
    if (cf.us != -1)
        bench_note(b,
                   "16 streams: the HTTP server takes %.1f us of CPU a streamed token (median; "
                   "pairs %.2f%% to %.2f%% of the node's %.0f us), against a decode step of "
                   "%.2f ms wall (%.0f us a token) over the control socket; wall time's %% "
                   "from %.1f to %.1f",
                   cf.http_cpu_us, cf.cpu_lo, cf.cpu_hi, cf.node_cpu_us, cf.step_ms, cf.token_us,
                   cf.lo, cf.hi);
    rate_rows(b, N_CONC, N_CONC_PAIRS, &cf);
    rate_rows(b, N_WIDE, N_WIDE_PAIRS, &wide);
    bench_add(b, "/metrics scrape, 8 nodes", scrape, "ms", "< 10 ms", scrape >= 0 && scrape < 10);
    bench_add(b, "/metrics size, 8 nodes", kib, "KiB", NULL, -1);
    return bench_close(b) == 0 && ok ? 0 : 1;
}
