/* bench_pipeline.c: what a pipeline costs per decode step.
 *
 * Starts rings of 1, 2 and 3 `inferd serve` processes on loopback (found
 * on $PATH) holding the same synthetic model, split by layers, and runs the
 * same greedy decode of one request through each while listening to every
 * stage's telemetry. Per decode step:
 *
 *   step      the round trip of one token, as the head saw it: the
 *             generate reply's (e2e_ms - ttft_ms) / (gen_tokens - 1), the
 *             time from the first token to the last over the steps between.
 *             With one request a decode step cannot start before the
 *             previous token is back, so this is the whole ring's time per
 *             token. (A step message's step_ms cannot give it: it is
 *             one stage's own time on the step, on the head too.)
 *   overhead  step minus the mean decode model_ms of every stage: what is
 *             not compute (frames, loopback TCP, reports, wake-ups,
 *             sampling, the head's scheduling between steps)
 *
 * The pipeline's own cost is the overhead of n stages minus that of one.
 * Compute itself is left out on purpose: smaller weight slices per process
 * cache differently, which would hide the transport cost in noise. The best
 * of a few runs is kept, as noise only ever adds time.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "benchlib.h"

#define MODEL "synth:dim=512,hidden=1536,layers=6,heads=8,kv_heads=8,vocab=8192"
#define N_LAYERS 6
#define MAX_STAGES 3
#define RUNS 3
#define DECODE_TOKENS 128

/* One run's figures, ms per decode step. */
typedef struct run_ms {
    double step;
    double overhead;
} run_ms;

/* Runs one greedy generation to its final frame: its id to id, the head's
 * mean time per token after the first to *step. */
static int generate(client *c, char *id, size_t idlen, double *step)
{
    char err[256];
    json_t *args = json_pack("{si si si}", "synthetic_tokens", 32, "max_tokens", DECODE_TOKENS,
                             "temperature", 0);
    if (!args) {
        fprintf(stderr, "bench_pipeline: out of memory for a request\n");
        return -1;
    }
    int rc = client_send(c, "generate", args, id, idlen, err, sizeof err);
    json_decref(args);
    while (rc == 0) {
        proto_reply r;
        if (client_recv(c, &r, 30000, err, sizeof err) != 1) {
            fprintf(stderr, "bench_pipeline: no reply to %s: %s\n", id, err);
            return -1;
        }
        if (!r.done) {
            proto_reply_free(&r);
            continue;
        }
        const json_t *stats = json_object_get(r.json, "stats");
        double e2e = json_number_value(json_object_get(stats, "e2e_ms"));
        double ttft = json_number_value(json_object_get(stats, "ttft_ms"));
        json_int_t gen = json_integer_value(json_object_get(stats, "gen_tokens"));
        if (!r.ok || gen < 2)
            fprintf(stderr, "bench_pipeline: %s ended with %lld tokens: %s %s\n", id,
                    (long long)gen, r.ok ? "ok" : r.code, r.message);
        else
            *step = (e2e - ttft) / (double)(gen - 1);
        rc = r.ok && gen >= 2 ? 0 : -1;
        proto_reply_free(&r);
        return rc;
    }
    fprintf(stderr, "bench_pipeline: cannot send a request: %s\n", err);
    return -1;
}

/* The mean model_ms of the decode steps of request `id` that a stage
 * published, NaN when none came. Reads until the stream has been quiet for
 * 200 ms (messages of a finished request are all out). */
static double mean_model(void *sub, const char *id)
{
    double model = 0.0;
    int count = 0;
    proto_tel t;
    while (bench_tel_next(sub, 200, &t) == 1) {
        if (t.topic == PROTO_TOPIC_STEP && t.step.phase == PROTO_PHASE_DECODE &&
            strcmp(t.step.req, id) == 0) {
            model += t.step.model_ms;
            count++;
        }
        proto_tel_free(&t);
    }
    return count ? model / count : NAN;
}

/* One run: the round trip per token and its overhead over all stages. */
static int run_once(client *c, void **subs, int n, run_ms *out)
{
    char id[PROTO_ID_MAX + 1];
    double step;
    if (generate(c, id, sizeof id, &step) != 0)
        return -1;
    double model_total = 0.0;
    for (int i = 0; i < n; i++) {
        double model = mean_model(subs[i], id);
        if (isnan(model)) {
            fprintf(stderr, "bench_pipeline: stage %d published no decode step of %s\n", i, id);
            return -1;
        }
        model_total += model;
    }
    out->step = step;
    out->overhead = step - model_total;
    return 0;
}

/* Best figures over RUNS runs on a ring of n stages, each holding an even
 * share of the layers. */
static int ring_measure(int n, run_ms *best)
{
    static const char *const opts[] = {"--threads", "1", NULL};
    int bounds[MAX_STAGES + 1];
    for (int i = 0; i <= n; i++)
        bounds[i] = i * N_LAYERS / n;
    bench_ring r;
    if (bench_ring_start(&r, n, MODEL, bounds, opts) != 0)
        return -1;
    void *zctx = zmq_ctx_new();
    void *subs[MAX_STAGES] = {NULL};
    client *c = NULL;
    char err[256];
    if (!zctx)
        fprintf(stderr, "bench_pipeline: zmq_ctx_new: %s\n", zmq_strerror(zmq_errno()));
    int got = 0, ready = zctx && bench_ring_wait(&r, zctx, 60) == 0;
    for (int i = 0; ready && i < n; i++)
        ready = (subs[i] = bench_tel_open(zctx, r.telemetry[i], "step")) != NULL;
    if (ready && client_open(&c, zctx, r.control[0], NULL, err, sizeof err) != 0) {
        fprintf(stderr, "bench_pipeline: %s: %s\n", r.control[0], err);
        ready = 0;
    }
    if (ready) {
        run_ms warm;
        /* Pages in weights and sizes the scratch. The subscriptions reach
         * the stages during it, so its steps may not all be seen: its
         * outcome is not kept. */
        run_once(c, subs, n, &warm);
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
    for (int i = 0; i < n; i++)
        if (subs[i])
            zmq_close(subs[i]);
    if (zctx)
        zmq_ctx_term(zctx);
    bench_ring_stop(&r);
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
