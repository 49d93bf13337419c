/* bench_protocol.c: the telemetry bar (SPEC section 7: publish <= 5 us per
 * step message) and the costs around it.
 *
 *   encode       proto_step_encode of a realistic step message, ns
 *   jansson      the same message built as a jansson tree and dumped: the
 *                alternative the hand-written encoder was chosen over
 *   publish      encode + proto_publish (topic and payload frames) on a
 *                real PUB socket bound to tcp://127.0.0.1, with a SUB
 *                connected and drained by another thread, so the messages
 *                really cross the socket (a PUB without subscribers drops
 *                them before any work). Mean over N_PUBLISH messages, us.
 *   decode       proto_tel_decode of the message, as the console does for
 *                every step message it ingests; messages/s on one core
 *
 *   share        publish / one decode step of synth:110m (fp32 weights, fp16
 *                KV, 64 positions of context, median of 16 steps): the
 *                spec's "< 1% of decode time"
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "benchlib.h"
#include "engine/compute/blas.h"
#include "engine/compute/forward.h"
#include "engine/proto/protocol.h"

#define N_ENCODE 1000000
#define N_JANSSON 200000
#define N_PUBLISH 200000
#define N_DECODE 200000

static proto_step sample_step(int64_t i)
{
    static const char req[] = "c4242-7f00aa-17";
    proto_step s = {
        .step = i,
        .phase = PROTO_PHASE_DECODE,
        .tokens = 1,
        .pos = 4096 + (int)(i & 1023),
        .step_ms = 36.125 + (double)(i & 7),
        .model_ms = 7.0431,
        .eval_ms = 29.0819,
        .wait_ms = 25.5,
        .kv_bytes = 1234567890ull + (uint64_t)i,
        .kv_bits = 16,
        .prefill_step = 512,
        .rss = 8589934592ull,
        .budget = 17179869184ull,
        .headroom = 8589934592ll,
        .act_max = 12.345678,
        .nonfinite = 0,
    };
    memcpy(s.req, req, sizeof req);
    return s;
}

static proto_head sample_head(void)
{
    proto_head h = {.seq = 1, .t_ms = 1700000000000};
    snprintf(h.node, sizeof h.node, "node-2");
    return h;
}

static double bench_encode(void)
{
    proto_head h = sample_head();
    char buf[PROTO_STEP_BUF];
    size_t total = 0;
    double t0 = bench_now();
    for (int i = 0; i < N_ENCODE; i++) {
        proto_step s = sample_step(i);
        h.seq++;
        total += (size_t)proto_step_encode(&h, &s, buf, sizeof buf);
    }
    double ns = (bench_now() - t0) * 1e9 / N_ENCODE;
    if (total == 0)
        fprintf(stderr, "bench_protocol: encoder wrote nothing\n");
    return ns;
}

/* The jansson way of writing the same message. */
static char *jansson_step(const proto_head *h, const proto_step *s)
{
    json_t *o = json_pack(
        "{s:i,s:s,s:I,s:I,s:s,s:I,s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:I,s:i,s:i,"
        "s:I,s:I,s:I,s:f,s:I}",
        "v", 1, "node", h->node, "seq", (json_int_t)h->seq, "t", (json_int_t)h->t_ms, "req", s->req,
        "step", (json_int_t)s->step, "phase", "decode", "tokens", s->tokens, "pos", s->pos,
        "step_ms", s->step_ms, "model_ms", s->model_ms, "eval_ms", s->eval_ms, "wait_ms",
        s->wait_ms, "kv_bytes", (json_int_t)s->kv_bytes, "kv_bits", s->kv_bits, "prefill_step",
        s->prefill_step, "rss", (json_int_t)s->rss, "budget", (json_int_t)s->budget, "headroom",
        (json_int_t)s->headroom, "act_max", s->act_max, "nonfinite", (json_int_t)s->nonfinite);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

static double bench_jansson(void)
{
    proto_head h = sample_head();
    double t0 = bench_now();
    for (int i = 0; i < N_JANSSON; i++) {
        proto_step s = sample_step(i);
        h.seq++;
        free(jansson_step(&h, &s));
    }
    return (bench_now() - t0) * 1e9 / N_JANSSON;
}

typedef struct drain {
    void *sub;
    atomic_int stop;
    atomic_long received;
} drain;

static void *drain_main(void *arg)
{
    drain *d = arg;
    char buf[2048];
    while (!atomic_load(&d->stop)) {
        zmq_pollitem_t item = {d->sub, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 100) <= 0)
            continue;
        while (zmq_recv(d->sub, buf, sizeof buf, ZMQ_DONTWAIT) >= 0) {
            int more = 0;
            size_t len = sizeof more;
            zmq_getsockopt(d->sub, ZMQ_RCVMORE, &more, &len);
            if (!more)
                atomic_fetch_add(&d->received, 1);
        }
    }
    return NULL;
}

/* Returns us per message, or -1 when the sockets could not be set up. */
static double bench_publish(long *received)
{
    char ep[256];
    size_t eplen = sizeof ep;
    int zero = 0;
    void *ctx = zmq_ctx_new();
    void *pub = zmq_socket(ctx, ZMQ_PUB);
    void *sub = zmq_socket(ctx, ZMQ_SUB);
    drain d = {.sub = sub};
    pthread_t th;

    zmq_setsockopt(pub, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(sub, ZMQ_LINGER, &zero, sizeof zero);
    /* No high-water mark: a message dropped at the mark costs less than
     * one queued, and a node publishing a few hundred a second never
     * reaches it, so the figure is for messages that really go out. */
    zmq_setsockopt(pub, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(sub, ZMQ_RCVHWM, &zero, sizeof zero);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_bind(pub, "tcp://127.0.0.1:*") || zmq_getsockopt(pub, ZMQ_LAST_ENDPOINT, ep, &eplen) ||
        zmq_connect(sub, ep) || pthread_create(&th, NULL, drain_main, &d)) {
        fprintf(stderr, "bench_protocol: socket setup: %s\n", zmq_strerror(zmq_errno()));
        zmq_close(pub);
        zmq_close(sub);
        zmq_ctx_term(ctx);
        return -1;
    }
    /* Until the subscription has reached the PUB, messages are dropped
     * for free: wait for the first one to arrive. */
    proto_head h = sample_head();
    char buf[PROTO_STEP_BUF];
    for (int i = 0; i < 500 && atomic_load(&d.received) == 0; i++) {
        proto_step s = sample_step(0);
        int n = proto_step_encode(&h, &s, buf, sizeof buf);
        proto_publish(pub, PROTO_TOPIC_STEP, buf, (size_t)n);
        zmq_poll(NULL, 0, 10);
    }
    long before = atomic_load(&d.received);
    double t0 = bench_now();
    for (int i = 0; i < N_PUBLISH; i++) {
        proto_step s = sample_step(i);
        h.seq++;
        int n = proto_step_encode(&h, &s, buf, sizeof buf);
        proto_publish(pub, PROTO_TOPIC_STEP, buf, (size_t)n);
    }
    double us = (bench_now() - t0) * 1e6 / N_PUBLISH;
    /* Let the tail arrive (bounded: a lost message must not hang the bench). */
    for (int i = 0; i < 100 && atomic_load(&d.received) - before < N_PUBLISH; i++)
        zmq_poll(NULL, 0, 50);
    atomic_store(&d.stop, 1);
    pthread_join(th, NULL);
    *received = atomic_load(&d.received) - before;
    zmq_close(pub);
    zmq_close(sub);
    zmq_ctx_term(ctx);
    return us;
}

static double bench_decode(void)
{
    proto_head h = sample_head();
    proto_step s = sample_step(12345);
    char buf[PROTO_STEP_BUF], err[256];
    int n = proto_step_encode(&h, &s, buf, sizeof buf);
    double t0 = bench_now();
    for (int i = 0; i < N_DECODE; i++) {
        proto_tel t;
        if (proto_tel_decode("step", 4, buf, (size_t)n, &t, err, sizeof err)) {
            fprintf(stderr, "bench_protocol: decode: %s\n", err);
            return -1;
        }
        proto_tel_free(&t);
    }
    return N_DECODE / (bench_now() - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median wall time of a synth:110m decode step, in us; -1 on error. */
static double bench_decode_step(void)
{
    enum { CONTEXT = 64, STEPS = 16 };
    char err[256];
    model *m = NULL;
    pool *pl = NULL;
    fwd_stage *fwd = NULL;
    kv_cache *kv = NULL;
    float *logits = NULL;
    double us = -1, t[STEPS];
    int tokens[CONTEXT];
    for (int i = 0; i < CONTEXT; i++)
        tokens[i] = 1 + i;
    snprintf(err, sizeof err, "out of memory");
    if (model_load(&m, "synth:110m", err, sizeof err) || pool_create(&pl, 2, err, sizeof err) ||
        fwd_create(&fwd, m, 0, model_config_of(m)->n_layers, pl, err, sizeof err) ||
        kv_create(&kv, fwd_kv_shape(fwd), 16, err, sizeof err) ||
        !(logits = malloc(sizeof(float) * (size_t)model_config_of(m)->vocab_size)) ||
        fwd_step(fwd, kv, tokens, NULL, CONTEXT, NULL, logits, NULL, err, sizeof err)) {
        fprintf(stderr, "bench_protocol: decode step: %s\n", err);
        goto out;
    }
    for (int i = 0; i < STEPS; i++) {
        double t0 = bench_now();
        if (fwd_step(fwd, kv, &tokens[i], NULL, 1, NULL, logits, NULL, err, sizeof err)) {
            fprintf(stderr, "bench_protocol: decode step: %s\n", err);
            goto out;
        }
        t[i] = (bench_now() - t0) * 1e6;
    }
    qsort(t, STEPS, sizeof t[0], cmp_double);
    us = t[STEPS / 2];
out:
    free(logits);
    kv_free(kv);
    fwd_free(fwd);
    pool_free(pl);
    model_free(m);
    return us;
}

int main(int argc, char **argv)
{
    (void)argc;
    blas_select_core(argv);
    bench *b = bench_open("protocol");
    long received = 0;

    double enc = bench_encode();
    double jan = bench_jansson();
    double pub = bench_publish(&received);
    double dec = bench_decode();
    double step_us = bench_decode_step();
    double share = step_us > 0 && pub >= 0 ? 100.0 * pub / step_us : -1;

    bench_add(b, "step message encode", enc, "ns", NULL, -1);
    bench_add(b, "step message encode, jansson", jan, "ns", NULL, -1);
    bench_add(b, "step message encode + publish (tcp loopback)", pub, "us", "<= 5 us",
              pub >= 0 && pub <= 5.0);
    bench_add(b, "step messages received of those published", 100.0 * (double)received / N_PUBLISH,
              "%", NULL, -1);
    bench_add(b, "step message decode (one core)", dec, "msg/s", NULL, -1);
    bench_add(b, "decode step, synth:110m", step_us / 1000.0, "ms", NULL, -1);
    bench_add(b, "publish share of a decode step", share, "%", "< 1 %", share >= 0 && share < 1.0);
    return bench_close(b) == 0 && pub >= 0 && dec > 0 && share >= 0 ? 0 : 1;
}
