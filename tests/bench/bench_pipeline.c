/* bench_pipeline.c: what a pipeline costs per decode step.
 *
 * Starts rings of 1, 2 and 3 `inferd serve` processes on loopback (found
 * on $PATH) holding the same synthetic model, split by layers, and runs the
 * same greedy decode through each while listening to every stage's
 * telemetry. Per decode step:
 *
 *   step      the head's step_ms: the whole round trip through the ring
 *   overhead  step minus the model_ms of every stage: what is not compute
 *             (frames, loopback TCP, reports, wake-ups, sampling)
 *
 * The pipeline's own cost is the overhead of n stages minus that of one.
 * Compute itself is left out on purpose: smaller weight slices per process
 * cache differently, which would hide the transport cost in noise. The best
 * of a few runs is kept, as noise only ever adds time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include "benchlib.h"
#include "engine/proto/client.h"
#include "engine/sys/clock.h"

#define MODEL "synth:dim=512,hidden=1536,layers=6,heads=8,kv_heads=8,vocab=8192"
#define N_LAYERS 6
#define MAX_STAGES 3
#define RUNS 3
#define DECODE_TOKENS 128

extern char **environ;

typedef struct ring_procs {
    int n;
    pid_t pid[MAX_STAGES];
    char control[64]; /* the head's */
    char telemetry[MAX_STAGES][64];
} ring_procs;

/* One run's figures, ms per decode step. */
typedef struct run_ms {
    double step;
    double overhead;
} run_ms;

/* n free loopback ports, all bound until each is known so none repeats. */
static int free_ports(int n, int *ports)
{
    int fds[3 * MAX_STAGES], rc = 0;
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&a, &len) != 0) {
            rc = -1;
            n = i + (fds[i] >= 0);
            break;
        }
        ports[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return rc;
}

static void ring_stop(ring_procs *r)
{
    for (int i = 0; i < r->n; i++)
        kill(r->pid[i], SIGTERM);
    for (int i = 0; i < r->n; i++)
        waitpid(r->pid[i], NULL, 0);
    r->n = 0;
}

/* Stage i of n holds an even share of the layers; each stage's --next is
 * the following stage's --listen, the last one's the head's. */
static int ring_start(ring_procs *r, int n)
{
    int ports[3 * MAX_STAGES];
    if (free_ports(3 * n, ports) != 0)
        return -1;
    r->n = 0;
    for (int i = 0; i < n; i++) {
        char name[16], layers[16], control[64], tel[64], listen[64], next[64];
        snprintf(name, sizeof name, "bench%d", i);
        snprintf(layers, sizeof layers, "%d:%d", i * N_LAYERS / n, (i + 1) * N_LAYERS / n);
        snprintf(control, sizeof control, "tcp://127.0.0.1:%d", ports[3 * i]);
        snprintf(tel, sizeof tel, "tcp://127.0.0.1:%d", ports[3 * i + 1]);
        snprintf(listen, sizeof listen, "tcp://127.0.0.1:%d", ports[3 * i + 2]);
        snprintf(next, sizeof next, "tcp://127.0.0.1:%d", ports[3 * ((i + 1) % n) + 2]);
        /* A single node has no --listen/--next: the list ends before them. */
        char *argv[] = {
            "inferd",    "serve",    "--name",      name,        "--model",
            MODEL,       "--layers", layers,        "--threads", "1",
            "--control", control,    "--telemetry", tel,         n > 1 ? "--listen" : NULL,
            listen,      "--next",   next,          NULL};
        if (posix_spawnp(&r->pid[i], "inferd", NULL, NULL, argv, environ) != 0) {
            ring_stop(r);
            return -1;
        }
        r->n++;
        snprintf(r->telemetry[i], sizeof r->telemetry[i], "%s", tel);
        if (i == 0)
            snprintf(r->control, sizeof r->control, "%s", control);
    }
    return 0;
}

/* Waits (at most 60 s: synthetic weights take a moment) for status. */
static int wait_up(client *c)
{
    char err[256];
    for (int i = 0; i < 120; i++) {
        proto_reply r;
        if (client_call(c, "status", NULL, &r, 500, err, sizeof err) == 1) {
            int ok = r.ok;
            proto_reply_free(&r);
            if (ok)
                return 0;
        }
        usleep(500000);
    }
    return -1;
}

/* Runs one greedy generation to its final frame; its id goes to id. */
static int generate(client *c, char *id, size_t idlen)
{
    char err[256];
    json_t *args = json_pack("{si si si}", "synthetic_tokens", 32, "max_tokens", DECODE_TOKENS,
                             "temperature", 0);
    int rc = client_send(c, "generate", args, id, idlen, err, sizeof err);
    json_decref(args);
    while (rc == 0) {
        proto_reply r;
        if (client_recv(c, &r, 30000, err, sizeof err) != 1)
            return -1;
        int done = r.done, ok = r.ok;
        proto_reply_free(&r);
        if (done)
            return ok ? 0 : -1;
    }
    return -1;
}

/* Sums the decode steps of request `id` that stage i published: its
 * step_ms and model_ms totals and the step count. Reads until the stream
 * has been quiet for 200 ms (messages of a finished request are all out). */
static void collect(void *sub, const char *id, double *step, double *model, int *count)
{
    for (;;) {
        zmq_pollitem_t item = {.socket = sub, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, 200) <= 0)
            return;
        zmq_msg_t topic, payload;
        zmq_msg_init(&topic);
        zmq_msg_init(&payload);
        proto_tel t;
        char err[256];
        if (zmq_msg_recv(&topic, sub, 0) >= 0 && zmq_msg_more(&topic) &&
            zmq_msg_recv(&payload, sub, 0) >= 0 &&
            proto_tel_decode(zmq_msg_data(&topic), zmq_msg_size(&topic), zmq_msg_data(&payload),
                             zmq_msg_size(&payload), &t, err, sizeof err) == 0) {
            if (t.topic == PROTO_TOPIC_STEP && t.step.phase == PROTO_PHASE_DECODE &&
                strcmp(t.step.req, id) == 0) {
                *step += t.step.step_ms;
                *model += t.step.model_ms;
                (*count)++;
            }
            proto_tel_free(&t);
        }
        zmq_msg_close(&topic);
        zmq_msg_close(&payload);
    }
}

/* One run: the head's mean step and the mean overhead over all stages. */
static int run_once(client *c, void **subs, int n, run_ms *out)
{
    char id[PROTO_ID_MAX + 1];
    if (generate(c, id, sizeof id) != 0)
        return -1;
    double model_total = 0.0, head_step = 0.0;
    int head_count = 0;
    for (int i = 0; i < n; i++) {
        double step = 0.0, model = 0.0;
        int count = 0;
        collect(subs[i], id, &step, &model, &count);
        if (count == 0)
            return -1;
        model_total += model / count;
        if (i == 0) {
            head_step = step / count;
            head_count = count;
        }
    }
    if (head_count == 0)
        return -1;
    out->step = head_step;
    out->overhead = head_step - model_total;
    return 0;
}

/* Best figures over RUNS runs on a ring of n stages. */
static int ring_measure(int n, run_ms *best)
{
    ring_procs r = {0};
    if (ring_start(&r, n) != 0) {
        fprintf(stderr, "bench_pipeline: cannot start %d stages: %s\n", n, strerror(errno));
        return -1;
    }
    void *zctx = zmq_ctx_new();
    void *subs[MAX_STAGES];
    for (int i = 0; i < n; i++) {
        int linger = 0;
        subs[i] = zmq_socket(zctx, ZMQ_SUB);
        zmq_setsockopt(subs[i], ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(subs[i], ZMQ_SUBSCRIBE, "step", 4);
        zmq_connect(subs[i], r.telemetry[i]);
    }
    client *c;
    char err[256];
    int got = 0;
    if (client_open(&c, zctx, r.control, NULL, err, sizeof err) == 0) {
        if (wait_up(c) == 0) {
            run_ms warm;
            run_once(c, subs, n, &warm); /* pages in weights, sizes the scratch */
            for (int i = 0; i < RUNS; i++) {
                run_ms m;
                if (run_once(c, subs, n, &m) != 0)
                    continue;
                if (!got || m.step < best->step)
                    best->step = m.step;
                if (!got || m.overhead < best->overhead)
                    best->overhead = m.overhead;
                got = 1;
            }
        }
        client_close(c);
    }
    for (int i = 0; i < n; i++)
        zmq_close(subs[i]);
    zmq_ctx_term(zctx);
    ring_stop(&r);
    if (!got)
        fprintf(stderr, "bench_pipeline: the %d-stage ring did not serve\n", n);
    return got ? 0 : -1;
}

int main(void)
{
    bench *b = bench_open("pipeline");
    run_ms m[MAX_STAGES + 1];
    int failed = 0;
    for (int n = 1; n <= MAX_STAGES; n++) {
        char name[64];
        if (ring_measure(n, &m[n]) != 0) {
            failed = 1;
            continue;
        }
        snprintf(name, sizeof name, "decode step, %d stage%s", n, n > 1 ? "s" : "");
        bench_add(b, name, m[n].step, "ms", NULL, -1);
        snprintf(name, sizeof name, "non-compute per step, %d stage%s", n, n > 1 ? "s" : "");
        bench_add(b, name, m[n].overhead * 1000.0, "us", NULL, -1);
    }
    for (int n = 2; n <= MAX_STAGES && !failed; n++) {
        char name[64];
        snprintf(name, sizeof name, "pipeline overhead per step, %d vs 1 stage", n);
        bench_add(b, name, (m[n].overhead - m[1].overhead) * 1000.0, "us", NULL, -1);
    }
    return bench_close(b) == 0 && !failed ? 0 : 1;
}
