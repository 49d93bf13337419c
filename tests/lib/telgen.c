/* telgen.c: a telemetry load generator that stands in for inference nodes.
 *
 *   telgen --nodes N --rate R --config PATH
 *
 * Binds, for each of N fake nodes tel0..tel{N-1}, a PUB on a free loopback
 * port publishing R step messages a second plus a heartbeat every second
 * (encoded by the protocol module, as a real node does), and a ROUTER
 * answering `status` (anything else gets an error). Writes a cluster file
 * for them to PATH, prints "ready PATH" on stdout, and runs until SIGTERM
 * or SIGINT; then prints "steps S heartbeats H seconds T" and exits 0.
 *
 * Messages go out in batches every TICK_MS, as many as the clock says are
 * due: the rate holds on average even when a tick comes late.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "engine/proto/protocol.h"
#include "engine/sys/clock.h"

#define TICK_MS 10
#define MAX_NODES 64

struct fake {
    char name[PROTO_NAME_MAX + 1];
    char pub_ep[128], ctl_ep[128];
    void *pub, *ctl;
    proto_head head;
    uint64_t steps;
};

/* Set by the signal handler, read by the loop. */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int bind_any(void *sock, char *ep, size_t len)
{
    if (zmq_bind(sock, "tcp://127.0.0.1:*") != 0)
        return -1;
    return zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &len);
}

static void fake_status(proto_status *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->version, sizeof s->version, "telgen");
    snprintf(s->model.name, sizeof s->model.name, "telgen");
    s->model.n_layers = 1;
    s->model.layer_last = 1;
    s->config.prefill_step = 512;
    s->config.kv_bits = 16;
    s->config.threads = 1;
    s->memory.budget = 16ull << 30;
    s->memory.used = 4ull << 30;
    s->memory.headroom = 12ll << 30;
    s->memory.weights_bytes = 3ull << 30;
    s->memory.kv_bytes = 512ull << 20;
    s->memory.rss = 4ull << 30;
    s->n_stages = 1;
}

static void publish_step(struct fake *f)
{
    proto_step s = {0};
    char buf[PROTO_STEP_BUF];
    uint64_t k = f->steps++;
    snprintf(s.req, sizeof s.req, "telgen-%llu", (unsigned long long)(k / 256));
    s.step = (int64_t)(k % 256);
    s.phase = s.step == 0 ? PROTO_PHASE_PREFILL : PROTO_PHASE_DECODE;
    s.tokens = s.phase == PROTO_PHASE_PREFILL ? 512 : 1;
    s.pos = 512 + (int)s.step;
    s.model_ms = 5.0 + (double)(k * 37 % 100) / 10.0;
    s.eval_ms = 1.0 + (double)(k * 53 % 300) / 10.0;
    s.step_ms = s.model_ms + s.eval_ms;
    s.wait_ms = s.eval_ms / 2;
    s.kv_bytes = (512ull << 20) + k;
    s.kv_bits = 16;
    s.prefill_step = 512;
    s.rss = 4ull << 30;
    s.budget = 16ull << 30;
    s.headroom = 12ll << 30;
    s.act_max = 3.0 + (double)(k % 10) / 10.0;
    f->head.seq++;
    int n = proto_step_encode(&f->head, &s, buf, sizeof buf);
    if (n > 0)
        proto_publish(f->pub, PROTO_TOPIC_STEP, buf, (size_t)n);
}

static void publish_heartbeat(struct fake *f)
{
    proto_status s;
    fake_status(&s);
    f->head.seq++;
    char *msg = proto_node_encode(&f->head, &s);
    if (msg)
        proto_publish(f->pub, PROTO_TOPIC_NODE, msg, strlen(msg));
    free(msg);
}

/* Answers every pending request: status, or an error for anything else. */
static void serve_control(struct fake *f)
{
    for (;;) {
        zmq_msg_t who, body;
        zmq_msg_init(&who);
        if (zmq_msg_recv(&who, f->ctl, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&who);
            return;
        }
        zmq_msg_init(&body);
        if (!zmq_msg_more(&who) || zmq_msg_recv(&body, f->ctl, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&body);
            zmq_msg_close(&who);
            continue;
        }
        proto_request req;
        proto_error e;
        char *reply;
        if (proto_request_decode(zmq_msg_data(&body), zmq_msg_size(&body), &req, &e) != 0) {
            reply = proto_reply_error(req.id, &e);
        } else if (req.op != PROTO_OP_STATUS) {
            proto_fail(&e, PROTO_E_INTERNAL, "op", "telgen answers status only");
            reply = proto_reply_error(req.id, &e);
            proto_request_free(&req);
        } else {
            proto_status s;
            fake_status(&s);
            json_t *res = proto_status_json(f->name, &s);
            reply = proto_reply_ok(req.id, res);
            json_decref(res);
            proto_request_free(&req);
        }
        if (reply) {
            zmq_msg_send(&who, f->ctl, ZMQ_SNDMORE | ZMQ_DONTWAIT);
            zmq_send(f->ctl, reply, strlen(reply), ZMQ_DONTWAIT);
            free(reply);
        }
        zmq_msg_close(&body);
        zmq_msg_close(&who);
    }
}

static int write_cluster(const char *path, struct fake *fakes, int n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# telgen's fake nodes\n[cluster]\nname = telgen\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "\n[node %s]\nssh = localhost\ncontrol = %s\ntelemetry = %s\nstart = telgen\n",
                fakes[i].name, fakes[i].ctl_ep, fakes[i].pub_ep);
    return fclose(f);
}

static int usage(void)
{
    fprintf(stderr, "usage: telgen --nodes N --rate STEPS_PER_S --config PATH\n");
    return 2;
}

int main(int argc, char **argv)
{
    int n = 0;
    double rate = -1;
    const char *config = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nodes") == 0)
            n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rate") == 0)
            rate = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--config") == 0)
            config = argv[i + 1];
        else
            return usage();
    }
    if (argc % 2 != 1 || n < 1 || n > MAX_NODES || !(rate >= 0) || !config)
        return usage();

    static struct fake fakes[MAX_NODES];
    void *ctx = zmq_ctx_new();
    int linger = 0, hwm = 100000;
    for (int i = 0; i < n; i++) {
        struct fake *f = &fakes[i];
        snprintf(f->name, sizeof f->name, "tel%d", i);
        snprintf(f->head.node, sizeof f->head.node, "tel%d", i);
        f->pub = zmq_socket(ctx, ZMQ_PUB);
        f->ctl = zmq_socket(ctx, ZMQ_ROUTER);
        zmq_setsockopt(f->pub, ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(f->pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
        zmq_setsockopt(f->ctl, ZMQ_LINGER, &linger, sizeof linger);
        if (bind_any(f->pub, f->pub_ep, sizeof f->pub_ep) != 0 ||
            bind_any(f->ctl, f->ctl_ep, sizeof f->ctl_ep) != 0) {
            fprintf(stderr, "telgen: bind: %s\n", zmq_strerror(errno));
            return 1;
        }
    }
    if (write_cluster(config, fakes, n) != 0) {
        fprintf(stderr, "telgen: %s: %s\n", config, strerror(errno));
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    printf("ready %s\n", config);
    fflush(stdout);

    double t0 = clock_ms();
    uint64_t beats = 0, due_steps = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!stop) {
        double t = (clock_ms() - t0) / 1000.0;
        uint64_t want = (uint64_t)(t * rate);
        for (; due_steps < want; due_steps++)
            for (int i = 0; i < n; i++)
                publish_step(&fakes[i]);
        if (beats <= (uint64_t)t) {
            for (int i = 0; i < n; i++)
                publish_heartbeat(&fakes[i]);
            beats++;
        }
        for (int i = 0; i < n; i++)
            serve_control(&fakes[i]);
        next.tv_nsec += TICK_MS * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    printf("steps %llu heartbeats %llu seconds %.3f\n", (unsigned long long)(due_steps * n),
           (unsigned long long)(beats * n), (clock_ms() - t0) / 1000.0);
    for (int i = 0; i < n; i++) {
        zmq_close(fakes[i].pub);
        zmq_close(fakes[i].ctl);
    }
    zmq_ctx_term(ctx);
    return 0;
}
