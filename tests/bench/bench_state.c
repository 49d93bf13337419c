/* bench_state.c: the console's telemetry ingest (SPEC section 7:
 * "console ingest >= 200k step messages/s on one core").
 *
 *   ingest         decoded step messages into the state model: 8 nodes in
 *                  turn, the clock advancing as if each ran 100 steps/s, a
 *                  table of MSG_VARIANTS different steps so the values vary.
 *                  Best of RUNS runs of INGEST_N messages.
 *   decode+ingest  the same from the JSON payload bytes a node publishes
 *                  (proto_step_encode), through proto_tel_decode: what the
 *                  console's receive loop does per message.
 *   view queries   what one dashboard frame asks of the state: the header
 *                  and a row (p50s, rates, highlights) per node, at the
 *                  console CPU bar's load (8 nodes at 100 steps/s, ten
 *                  minutes in). Not a bar by itself; it feeds the console
 *                  CPU bar (10 frames a second).
 *
 * "On one core": the bench is single-threaded and times with the process's
 * CPU clock, so that other work on the machine does not count against it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "benchlib.h"
#include "engine/proto/protocol.h"
#include "tui/core/state.h"

#define NODES 8
#define MSG_VARIANTS 1024
#define INGEST_N 4000000
#define DECODE_N 400000
#define QUERY_FRAMES 200
#define RUNS 3
#define TARGET 200000.0

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *const names[NODES] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};

/* Varied but deterministic steps: mostly decode, a prefill chunk now and then. */
static void make_steps(proto_step *steps)
{
    for (int i = 0; i < MSG_VARIANTS; i++) {
        proto_step *s = &steps[i];
        memset(s, 0, sizeof *s);
        snprintf(s->req, sizeof s->req, "req-%d", i / 256);
        s->step = i;
        s->phase = i % 16 == 0 ? PROTO_PHASE_PREFILL : PROTO_PHASE_DECODE;
        s->tokens = s->phase == PROTO_PHASE_PREFILL ? 512 : 1;
        s->pos = 1000 + i;
        s->model_ms = 5 + (i * 37 % 100) / 10.0;
        s->eval_ms = 1 + (i * 53 % 300) / 10.0;
        s->step_ms = s->model_ms + s->eval_ms;
        s->wait_ms = s->eval_ms / 2;
        s->kv_bytes = 1000000 + (uint64_t)i * 4096;
        s->kv_bits = 16;
        s->prefill_step = 512;
        s->rss = 2000000000;
        s->budget = 8000000000;
        s->headroom = 6000000000;
        s->act_max = 2 + (i % 7) / 10.0;
    }
}

/* Messages per second of the best run. */
static double bench_ingest(const proto_step *steps)
{
    double best = 0;
    for (int run = 0; run < RUNS; run++) {
        state *st = state_new("bench", NODES, names);
        if (!st)
            return 0;
        proto_head h = {.seq = 0};
        double t0 = cpu_now();
        for (int i = 0; i < INGEST_N; i++) {
            h.seq = (uint64_t)(i / NODES);
            state_ingest_step(st, i % NODES, &h, &steps[i % MSG_VARIANTS], i / (100.0 * NODES));
        }
        double rate = INGEST_N / (cpu_now() - t0);
        state_free(st);
        if (rate > best)
            best = rate;
    }
    return best;
}

static double bench_decode_ingest(const proto_step *steps)
{
    static char payloads[MSG_VARIANTS][PROTO_STEP_BUF];
    static int lens[MSG_VARIANTS];
    static proto_tel tel;
    char err[256];
    for (int i = 0; i < MSG_VARIANTS; i++) {
        proto_head h = {.seq = (uint64_t)i, .t_ms = 1700000000000 + i};
        snprintf(h.node, sizeof h.node, "n%d", i % NODES);
        lens[i] = proto_step_encode(&h, &steps[i], payloads[i], sizeof payloads[i]);
        if (lens[i] < 0)
            return 0;
    }
    double best = 0;
    for (int run = 0; run < RUNS; run++) {
        state *st = state_new("bench", NODES, names);
        if (!st)
            return 0;
        double t0 = cpu_now();
        for (int i = 0; i < DECODE_N; i++) {
            int k = i % MSG_VARIANTS;
            if (proto_tel_decode("step", 4, payloads[k], (size_t)lens[k], &tel, err, sizeof err)) {
                fprintf(stderr, "bench_state: %s\n", err);
                state_free(st);
                return 0;
            }
            state_ingest(st, k % NODES, &tel, i / (100.0 * NODES));
            proto_tel_free(&tel);
        }
        double rate = DECODE_N / (cpu_now() - t0);
        state_free(st);
        if (rate > best)
            best = rate;
    }
    return best;
}

/* Microseconds per dashboard frame. */
static double bench_queries(const proto_step *steps)
{
    state *st = state_new("bench", NODES, names);
    if (!st)
        return NAN;
    proto_head h = {.seq = 0};
    double now = 0;
    for (int i = 0; i < NODES * 100 * STATE_SECONDS; i++) {
        h.seq = (uint64_t)(i / NODES);
        now = i / (100.0 * NODES);
        state_ingest_step(st, i % NODES, &h, &steps[i % MSG_VARIANTS], now);
    }
    struct state_cluster_view c;
    struct state_node_view v;
    double sink = 0;
    double t0 = cpu_now();
    for (int f = 0; f < QUERY_FRAMES; f++) {
        state_cluster_view(st, now, &c);
        for (int n = 0; n < NODES; n++) {
            state_node_view(st, n, now, &v);
            sink += v.model_p50;
        }
    }
    double us = (cpu_now() - t0) * 1e6 / QUERY_FRAMES;
    state_free(st);
    return sink > 0 ? us : NAN;
}

int main(void)
{
    static proto_step steps[MSG_VARIANTS];
    make_steps(steps);
    bench *b = bench_open("state");
    double ingest = bench_ingest(steps);
    bench_add(b, "console ingest, decoded steps", ingest, "msg/s", ">= 200000 msg/s",
              ingest >= TARGET);
    double full = bench_decode_ingest(steps);
    bench_add(b, "console decode+ingest, JSON steps", full, "msg/s", ">= 200000 msg/s",
              full >= TARGET);
    bench_add(b, "dashboard frame queries, 8 nodes", bench_queries(steps), "us", NULL, -1);
    return bench_close(b) ? 1 : 0;
}
