/* bench_batch.c: the bars of batching (issue #14): several requests
 * decoding in one step, a long prompt's chunks pipelined through a ring,
 * and every stage of a ring kept busy.
 *
 * Starts `inferd serve` processes on loopback (found on $PATH) holding
 * synth:110m and sends them greedy requests, each on its own client
 * connection, all at once. Figures:
 *
 *   decode, N seqs   aggregate decode tok/s of N requests on one node
 *                    (default threads, --max-seqs 16), each a PROMPT-token
 *                    synthetic prompt and GEN tokens. Counted over the
 *                    steady part only, where all N decode together and no
 *                    prompt is left to prefill (the head alternates
 *                    prefill chunks with decode steps until then): from
 *                    the first token of the request that started last
 *                    (its prompt was the last) to the first request's
 *                    last token. Both ends are taken at tokens of the
 *                    request that started last, which comes last in every
 *                    batch, so that the window holds whole steps; every
 *                    token any request received inside it counts. Best of
 *                    DECODE_RUNS per N (noise only slows a run down), run
 *                    in rounds over the N. Bar: 16 seqs >= 6x 1 seq.
 *                    Also for synth:110m as Q8_0 and Q4_K_M GGUF files,
 *                    once per vector kernel path the CPU has (the nodes
 *                    started with INFERD_CPU set to it), each with its
 *                    path's bar (issue 29): avx2 and avx512 >= 3x, vnni
 *                    >= 4x, amx >= 4.2x.
 *   prefill          one LONG_PROMPT-token prompt, max_tokens 0, on one node
 *                    with --threads 1 and on a 2-stage ring (6:6) with
 *                    --threads 1 per stage, the same --prefill-step: the
 *                    reply's stats.prefill_tps, best of PREFILL_RUNS. Bar:
 *                    ring >= 1.7x one node.
 *   busy             each stage's `busy` (its model time over wall time in
 *                    the last second) from its step messages, on a 2-stage
 *                    ring (8:4, --threads 1 per stage; see DECODE_SPLIT and
 *                    busy_bar) decoding MAX_SEQS requests (--max-seqs 16,
 *                    default pipeline depth), averaged over the messages
 *                    that arrive in the steady part (as above) once a full
 *                    second of it is behind them, so that the second each
 *                    covers is all steady. Bar: >= 80% on each stage.
 *
 * What limits a figure that misses its bar is printed under the table:
 * step times, with their model_ms from telemetry, and the compute rate
 * the bar needs; on a ring each stage's model_ms, wait_ms and seqs per
 * step. stderr shows the same figures as the bench runs. About 75 s on an
 * idle 2-core machine.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "benchlib.h"
#include "engine/compute/cpu.h"

#define MODEL "synth:110m"
#define N_LAYERS 12
#define MAX_SEQS 16
#define PROMPT 64
#define GEN 40
#define WARM_GEN 4
#define DECODE_RUNS 2
#define DECODE_BAR 6.0
#define LONG_PROMPT 4096
#define PREFILL_RUNS 2
#define PREFILL_BAR 1.7
/* A prompt of k chunks takes k + 1 chunk times on 2 stages instead of 2k
 * (the ring fills for one chunk and drains for one): 4096 / 256 = 16
 * chunks allow 32 / 17 = 1.88x, where 512 (8 chunks, 1.78x) leaves
 * little above the bar and smaller chunks run sgemm on fewer rows. */
#define PREFILL_CHUNK 256
#define BUSY_GEN 64
#define BUSY_BAR 0.8
/* busy covers the last second: messages this far into the steady part
 * describe it alone. */
#define BUSY_SETTLE_S 1.0
/* Fewer steps than this in the steady part measure nothing useful. */
#define MIN_STEPS 8
/* Longest silence from a node while requests run. */
#define SILENCE_MS 60000
/* A stage publishes a step after passing it on: the last ones may come
 * in after the final reply, within this quiet time on loopback. */
#define LATE_MS 50

static const int LEVELS[] = {1, 4, 8, 16};
#define N_LEVELS (int)(sizeof LEVELS / sizeof LEVELS[0])

/* A number as a command-line argument. */
#define STR_(x) #x
#define STR(x) STR_(x)

/* Layer ranges: one node; two stages of even halves (prefill computes no
 * logits, so the halves weigh the same); two stages for decode, where the
 * tail also runs the classifier (32000 x 768, the weights of three and a
 * half layers) for every row of a batch: at 6:6 the head sat idle about a
 * third of the time waiting for the tail (busy 69%), which is the
 * layout's doing, not the pipeline's. 8:4 balances them best (the head
 * about 10% slower; 7:5 left the tail 15% slower), as a planned layout
 * would. */
static const int ONE_NODE[] = {0, N_LAYERS};
static const int HALVES[] = {0, N_LAYERS / 2, N_LAYERS};
static const int DECODE_SPLIT[] = {0, 8, N_LAYERS};

/* One request of a run, as its client saw it. */
typedef struct seq {
    char id[PROTO_ID_MAX + 1];
    double *t; /* arrival of each token, bench_now() */
    int n_tokens, done;
    double prefill_tps;
} seq;

/* A step message, and when it arrived. */
typedef struct seen_step {
    double t;
    int stage;
    proto_phase phase;
    int seqs;
    double model_ms, wait_ms, step_ms, busy;
} seen_step;

/* Nodes started, a client connection per request and, when asked, a
 * telemetry subscription per stage. */
typedef struct setup {
    bench_ring ring;
    void *zctx;
    client *c[MAX_SEQS];
    void *subs[BENCH_STAGES_MAX];
    double flops_per_token; /* of the model's weights, from status */
} setup;

/* What one run of n requests at once saw. */
typedef struct run {
    int n, gen;
    seq seqs[MAX_SEQS];
    seen_step *steps;
    int n_steps, cap_steps;
} run;

/* The steady part of a run (see the top). */
typedef struct window {
    double t0, t1;
    long tokens; /* received inside it, all requests */
    int steps;   /* decode steps, one token each of the request that started last */
} window;

/* Per stage, over a part of a run. */
typedef struct stage_sum {
    int steps;
    double seqs, model_ms, wait_ms, step_ms, busy; /* sums */
} stage_sum;

static void run_free(run *r)
{
    for (int i = 0; i < MAX_SEQS; i++)
        free(r->seqs[i].t);
    free(r->steps);
    memset(r, 0, sizeof *r);
}

/* 2 x the weight parameters a token multiplies by (attention over a short
 * context left out), from the status reply's model. */
static double flops_per_token(const json_t *model)
{
    double dim = (double)json_integer_value(json_object_get(model, "dim"));
    double hidden = (double)json_integer_value(json_object_get(model, "hidden_dim"));
    double layers = (double)json_integer_value(json_object_get(model, "n_layers"));
    double heads = (double)json_integer_value(json_object_get(model, "n_heads"));
    double kv_heads = (double)json_integer_value(json_object_get(model, "n_kv_heads"));
    double vocab = (double)json_integer_value(json_object_get(model, "vocab_size"));
    double kv_dim = heads > 0 ? dim * kv_heads / heads : 0;
    return 2.0 * (layers * (2 * dim * dim + 2 * dim * kv_dim + 3 * dim * hidden) + vocab * dim);
}

static void setup_stop(setup *s)
{
    for (int i = 0; i < MAX_SEQS; i++)
        client_close(s->c[i]);
    for (int i = 0; i < BENCH_STAGES_MAX; i++)
        if (s->subs[i])
            zmq_close(s->subs[i]);
    if (s->zctx)
        zmq_ctx_term(s->zctx);
    bench_ring_stop(&s->ring);
    memset(s, 0, sizeof *s);
}

/* n stages of model (layers as bench_ring_start) with opts, ready, with
 * MAX_SEQS clients on the head and, when subscribe is set, every stage's
 * step messages. */
static int setup_start(setup *s, int n, const char *model, const int *bounds,
                       const char *const *opts, int subscribe)
{
    char err[256];
    memset(s, 0, sizeof *s);
    if (bench_ring_start(&s->ring, n, model, bounds, opts) != 0)
        return -1;
    if (!(s->zctx = zmq_ctx_new())) {
        fprintf(stderr, "bench_batch: zmq_ctx_new: %s\n", zmq_strerror(zmq_errno()));
        setup_stop(s);
        return -1;
    }
    if (bench_ring_wait(&s->ring, s->zctx, 120) != 0) {
        setup_stop(s);
        return -1;
    }
    for (int i = 0; subscribe && i < n; i++) {
        if (!(s->subs[i] = bench_tel_open(s->zctx, s->ring.telemetry[i], "step"))) {
            setup_stop(s);
            return -1;
        }
    }
    for (int i = 0; i < MAX_SEQS; i++) {
        if (client_open(&s->c[i], s->zctx, s->ring.control[0], NULL, err, sizeof err) != 0) {
            fprintf(stderr, "bench_batch: %s: %s\n", s->ring.control[0], err);
            setup_stop(s);
            return -1;
        }
    }
    proto_reply st;
    int got = client_call(s->c[0], "status", NULL, &st, 10000, err, sizeof err);
    if (got != 1 || !st.ok) {
        fprintf(stderr, "bench_batch: status of the head: %s\n", got == 1 ? st.message : err);
        if (got == 1)
            proto_reply_free(&st);
        setup_stop(s);
        return -1;
    }
    s->flops_per_token = flops_per_token(json_object_get(st.json, "model"));
    proto_reply_free(&st);
    return 0;
}

/* 1 when req names one of r's requests (a batch step names its first). */
static int of_run(const run *r, const char *req)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->seqs[i].id, req) == 0)
            return 1;
    return 0;
}

/* Keeps a step message of one of r's requests: a late one of the run
 * before may still come in. */
static int keep_step(run *r, int stage, const proto_step *p)
{
    if (!of_run(r, p->req))
        return 0;
    if (r->n_steps == r->cap_steps) {
        int cap = r->cap_steps ? 2 * r->cap_steps : 1024;
        seen_step *grown = realloc(r->steps, (size_t)cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "bench_batch: out of memory for %d step messages\n", cap);
            return -1;
        }
        r->steps = grown;
        r->cap_steps = cap;
    }
    r->steps[r->n_steps++] = (seen_step){.t = bench_now(),
                                         .stage = stage,
                                         .phase = p->phase,
                                         .seqs = p->seqs,
                                         .model_ms = p->model_ms,
                                         .wait_ms = p->wait_ms,
                                         .step_ms = p->step_ms,
                                         .busy = p->busy};
    return 0;
}

/* Every step message sub holds, into r, until none came for wait_ms. */
static int drain_steps(void *sub, int stage, int wait_ms, run *r)
{
    proto_tel t;
    int rc = 0;
    while (rc == 0 && bench_tel_next(sub, wait_ms, &t) == 1) {
        if (t.topic == PROTO_TOPIC_STEP)
            rc = keep_step(r, stage, &t.step);
        proto_tel_free(&t);
    }
    return rc;
}

/* One reply frame of request i: a token's arrival, or its end. */
static int on_reply(run *r, int i, const proto_reply *rep)
{
    seq *q = &r->seqs[i];
    if (strcmp(rep->id, q->id) != 0)
        return 0; /* not this run's */
    if (rep->has_token && q->n_tokens < r->gen)
        q->t[q->n_tokens++] = bench_now();
    if (!rep->done)
        return 0;
    q->done = 1;
    if (!rep->ok) {
        fprintf(stderr, "bench_batch: request %s failed: %s %s\n", q->id, rep->code, rep->message);
        return -1;
    }
    const json_t *tps = json_object_get(json_object_get(rep->json, "stats"), "prefill_tps");
    q->prefill_tps = json_is_number(tps) ? json_number_value(tps) : NAN;
    return 0;
}

/* Sends n generate requests at once (a PROMPT of prompt positions, gen
 * tokens, greedy), each on its own connection, and follows them to their
 * ends, with every stage's step messages when subscribed. */
static int run_batch(setup *s, int n, int prompt, int gen, run *r)
{
    char err[256];
    memset(r, 0, sizeof *r);
    r->n = n;
    r->gen = gen;
    for (int i = 0; i < n; i++) {
        if (!(r->seqs[i].t = malloc((size_t)(gen > 0 ? gen : 1) * sizeof *r->seqs[i].t))) {
            fprintf(stderr, "bench_batch: out of memory for %d token times\n", gen);
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        json_t *args = json_pack("{si si si}", "synthetic_tokens", prompt, "max_tokens", gen,
                                 "temperature", 0);
        int rc = args ? client_send(s->c[i], "generate", args, r->seqs[i].id, sizeof r->seqs[i].id,
                                    err, sizeof err)
                      : -1;
        json_decref(args);
        if (rc != 0) {
            fprintf(stderr, "bench_batch: cannot send request %d: %s\n", i,
                    args ? err : "out of memory");
            return -1;
        }
    }
    int left = n, failed = 0;
    while (left > 0) {
        zmq_pollitem_t items[MAX_SEQS + BENCH_STAGES_MAX];
        int who[MAX_SEQS + BENCH_STAGES_MAX], n_items = 0;
        for (int i = 0; i < n; i++) {
            if (r->seqs[i].done)
                continue;
            items[n_items] =
                (zmq_pollitem_t){.socket = client_socket(s->c[i]), .events = ZMQ_POLLIN};
            who[n_items++] = i;
        }
        for (int k = 0; k < BENCH_STAGES_MAX; k++) {
            if (!s->subs[k])
                continue;
            items[n_items] = (zmq_pollitem_t){.socket = s->subs[k], .events = ZMQ_POLLIN};
            who[n_items++] = -1 - k;
        }
        int ready = zmq_poll(items, n_items, SILENCE_MS);
        if (ready <= 0) {
            fprintf(stderr, "bench_batch: %d of %d requests had no reply for %d s\n", left, n,
                    SILENCE_MS / 1000);
            return -1;
        }
        for (int k = 0; k < n_items; k++) {
            if (!(items[k].revents & ZMQ_POLLIN))
                continue;
            if (who[k] < 0) {
                if (drain_steps(items[k].socket, -1 - who[k], 0, r) != 0)
                    return -1;
                continue;
            }
            seq *q = &r->seqs[who[k]];
            proto_reply rep;
            int got = 0;
            while (!q->done && (got = client_recv(s->c[who[k]], &rep, 0, err, sizeof err)) == 1) {
                failed |= on_reply(r, who[k], &rep) != 0;
                proto_reply_free(&rep);
            }
            if (!q->done && got < 0) {
                fprintf(stderr, "bench_batch: request %s: %s\n", q->id, err);
                return -1;
            }
            if (q->done)
                left--;
        }
    }
    for (int k = 0; k < BENCH_STAGES_MAX && !failed; k++)
        if (s->subs[k] && drain_steps(s->subs[k], k, LATE_MS, r) != 0)
            return -1;
    return failed ? -1 : 0;
}

/* The steady part of r (see the top); -1 with a message when a request
 * gave fewer than 2 tokens or the part holds fewer than MIN_STEPS steps. */
static int steady(const run *r, window *w)
{
    int last = 0, first_end = 0;
    for (int i = 0; i < r->n; i++) {
        const seq *q = &r->seqs[i], *l = &r->seqs[last], *e = &r->seqs[first_end];
        if (q->n_tokens < 2) {
            fprintf(stderr, "bench_batch: request %s gave %d tokens\n", q->id, q->n_tokens);
            return -1;
        }
        if (q->t[0] > l->t[0])
            last = i;
        if (q->t[q->n_tokens - 1] < e->t[e->n_tokens - 1])
            first_end = i;
    }
    const seq *l = &r->seqs[last], *e = &r->seqs[first_end];
    double end = e->t[e->n_tokens - 1];
    int k = 0;
    /* The request that started last is the last of every batch: its token
     * of the step that ended the first request comes at or after that
     * request's last one. */
    while (k < l->n_tokens - 1 && l->t[k] < end)
        k++;
    w->t0 = l->t[0];
    w->t1 = l->t[k];
    w->steps = k;
    w->tokens = 0;
    for (int i = 0; i < r->n; i++)
        for (int j = 0; j < r->seqs[i].n_tokens; j++)
            w->tokens += r->seqs[i].t[j] > w->t0 && r->seqs[i].t[j] <= w->t1;
    if (k < MIN_STEPS) {
        fprintf(stderr,
                "bench_batch: the steady part of %d requests holds %d steps (at least %d "
                "needed): the first ended before the last had started\n",
                r->n, k, MIN_STEPS);
        return -1;
    }
    return 0;
}

/* Per stage, the step messages of phase that arrived in [from, to]. */
static void sum_steps(const run *r, proto_phase phase, double from, double to,
                      stage_sum sums[BENCH_STAGES_MAX])
{
    memset(sums, 0, BENCH_STAGES_MAX * sizeof *sums);
    for (int i = 0; i < r->n_steps; i++) {
        const seen_step *p = &r->steps[i];
        if (p->phase != phase || p->t < from || p->t > to)
            continue;
        stage_sum *u = &sums[p->stage];
        u->steps++;
        u->seqs += p->seqs;
        u->model_ms += p->model_ms;
        u->wait_ms += p->wait_ms;
        u->step_ms += p->step_ms;
        u->busy += p->busy;
    }
}

/* ---- decode: N requests at once on one node ------------------------------ */

typedef struct level {
    double tps;      /* aggregate, tokens/s */
    double step_ms;  /* per decode step in the steady part, as the clients saw it */
    double per_step; /* tokens per step (N when every request is in every batch) */
    double model_ms; /* per decode step in the steady part, from telemetry */
} level;

/* One run of n requests at once; *best keeps the faster of it and what
 * it held (tps 0: nothing yet). */
static int decode_once(setup *s, int n, level *best)
{
    run r;
    window w;
    stage_sum sums[BENCH_STAGES_MAX];
    int rc = run_batch(s, n, PROMPT, GEN, &r);
    if (rc == 0)
        rc = steady(&r, &w);
    if (rc == 0)
        sum_steps(&r, PROTO_PHASE_DECODE, w.t0, w.t1, sums);
    run_free(&r);
    if (rc != 0)
        return -1;
    double tps = (double)w.tokens / (w.t1 - w.t0);
    if (tps > best->tps)
        *best = (level){tps, 1e3 * (w.t1 - w.t0) / w.steps, (double)w.tokens / w.steps,
                        sums[0].steps ? sums[0].model_ms / sums[0].steps : NAN};
    return 0;
}

/* `what` names the model in the rows: "synth:110m", "synth:110m Q8_0
 * [avx2]"; bar is the 16 / 1 seqs ratio it needs. */
static int decode_bars(bench *b, const char *what, const char *model, double bar)
{
    static const char *const opts[] = {"--max-seqs", STR(MAX_SEQS), NULL};
    char name[96];
    setup s;
    level lv[N_LEVELS];
    fprintf(stderr, "bench_batch: decode %s on one node, %d to %d requests at once\n", what,
            LEVELS[0], LEVELS[N_LEVELS - 1]);
    if (setup_start(&s, 1, model, ONE_NODE, opts, 1) != 0)
        return -1;
    run warm;
    /* Pages in the weights and sizes a full batch's scratch. */
    int rc = run_batch(&s, MAX_SEQS, PROMPT, WARM_GEN, &warm);
    run_free(&warm);
    /* Rounds over the levels rather than a level's runs in a row: a burst
     * of other work on the machine then slows one run of several levels,
     * not every run of one. */
    for (int i = 0; i < N_LEVELS; i++)
        lv[i].tps = 0.0;
    for (int k = 0; k < DECODE_RUNS && rc == 0; k++)
        for (int i = 0; i < N_LEVELS && rc == 0; i++)
            rc = decode_once(&s, LEVELS[i], &lv[i]);
    for (int i = 0; i < N_LEVELS && rc == 0; i++)
        fprintf(stderr,
                "bench_batch: decode %s, %d seqs: %.1f tok/s, %.2f ms per step (model %.2f ms) "
                "of %.1f tokens\n",
                what, LEVELS[i], lv[i].tps, lv[i].step_ms, lv[i].model_ms, lv[i].per_step);
    double flops = s.flops_per_token;
    setup_stop(&s);
    if (rc != 0)
        return -1;
    for (int i = 0; i < N_LEVELS; i++) {
        snprintf(name, sizeof name, "decode %s, %d seq%s", what, LEVELS[i],
                 LEVELS[i] > 1 ? "s" : "");
        bench_add(b, name, lv[i].tps, "tok/s", NULL, -1);
    }
    const level *one = &lv[0], *full = &lv[N_LEVELS - 1];
    double ratio = full->tps / one->tps;
    char target[16];
    snprintf(target, sizeof target, ">= %.1fx", bar);
    snprintf(name, sizeof name, "decode %s, %d / %d seqs", what, LEVELS[N_LEVELS - 1], LEVELS[0]);
    bench_add(b, name, ratio, "x", target, ratio >= bar);
    /* The weights are read once a step however many rows it has, so what
     * a batch adds to a step is compute: the note says how fast the bar
     * needs it to be. */
    double bar_ms = full->per_step / (bar * one->tps) * 1e3;
    if (ratio < bar)
        bench_note(b,
                   "decode %s: a step of %.0f positions took %.2f ms (model %.2f ms, %.0f "
                   "GFLOP/s), %.2fx the %.2f ms of one (model %.2f ms); the bar needs it in "
                   "%.2f ms, %.0f GFLOP/s on %ld cores (shared with any other process)",
                   what, full->per_step, full->step_ms, full->model_ms,
                   flops * full->per_step / full->step_ms * 1e-6, full->step_ms / one->step_ms,
                   one->step_ms, one->model_ms, bar_ms, flops * full->per_step / bar_ms * 1e-6,
                   sysconf(_SC_NPROCESSORS_ONLN));
    return 0;
}

/* ---- prefill: one long prompt, one node against two stages --------------- */

/* The best prefill rate of a LONG_PROMPT-token prompt on n stages of one
 * thread each over PREFILL_RUNS; that run's prefill steps per stage to
 * sums. */
static int prefill_rate(int n, double *tps, stage_sum sums[BENCH_STAGES_MAX])
{
    static const char *const opts[] = {"--threads", "1", "--prefill-step", STR(PREFILL_CHUNK),
                                       NULL};
    setup s;
    run r;
    fprintf(stderr, "bench_batch: prefill of %d positions on %d stage%s, one thread each\n",
            LONG_PROMPT, n, n > 1 ? "s" : "");
    if (setup_start(&s, n, MODEL, n > 1 ? HALVES : ONE_NODE, opts, 1) != 0)
        return -1;
    /* Pages in the weights: one chunk. */
    int rc = run_batch(&s, 1, PREFILL_CHUNK, 0, &r);
    run_free(&r);
    *tps = 0.0;
    for (int k = 0; k < PREFILL_RUNS && rc == 0; k++) {
        rc = run_batch(&s, 1, LONG_PROMPT, 0, &r);
        if (rc == 0 && r.seqs[0].prefill_tps > *tps) {
            *tps = r.seqs[0].prefill_tps;
            sum_steps(&r, PROTO_PHASE_PREFILL, -INFINITY, INFINITY, sums);
        }
        run_free(&r);
    }
    setup_stop(&s);
    if (rc == 0 && !(*tps > 0.0)) {
        fprintf(stderr, "bench_batch: the replies carried no prefill_tps\n");
        rc = -1;
    }
    return rc;
}

static int prefill_bar(bench *b)
{
    stage_sum one[BENCH_STAGES_MAX], two[BENCH_STAGES_MAX];
    double tps1, tps2;
    if (prefill_rate(1, &tps1, one) != 0 || prefill_rate(2, &tps2, two) != 0)
        return -1;
    double wall1 = 1e3 * LONG_PROMPT / tps1, wall2 = 1e3 * LONG_PROMPT / tps2;
    for (int i = 0; i < 2; i++)
        fprintf(stderr,
                "bench_batch: prefill on 2 stages: stage %d ran %d chunks: model %.0f ms, beyond "
                "it %.0f ms, idle before them %.0f ms, of %.0f ms\n",
                i, two[i].steps, two[i].model_ms, two[i].step_ms - two[i].model_ms, two[i].wait_ms,
                wall2);
    bench_add(b, "prefill " STR(LONG_PROMPT) ", 1 node, 1 thread", tps1, "tok/s", NULL, -1);
    bench_add(b, "prefill " STR(LONG_PROMPT) ", 2 stages, 1 thread each", tps2, "tok/s", NULL, -1);
    double ratio = tps2 / tps1;
    char target[16];
    snprintf(target, sizeof target, ">= %.1fx", PREFILL_BAR);
    bench_add(b, "prefill " STR(LONG_PROMPT) ", 2 stages / 1 node", ratio, "x", target,
              ratio >= PREFILL_BAR);
    /* The ring's best is its compute split in two plus one chunk to fill
     * it: what is above that is the stages idling or computing slower
     * side by side than one process alone. */
    if (ratio < PREFILL_BAR)
        bench_note(b,
                   "prefill: one node computed %.0f ms of its %.0f ms; on 2 stages, of %.0f ms, "
                   "stage 0 computed %.0f ms and idled %.0f ms, stage 1 computed %.0f ms and "
                   "idled %.0f ms: their compute is %.2fx one node's (%d chunks of %d allow "
                   "%.2fx at equal compute); both stages and anything else running share %ld "
                   "cores and the memory bus",
                   one[0].model_ms, wall1, wall2, two[0].model_ms, two[0].wait_ms, two[1].model_ms,
                   two[1].wait_ms, (two[0].model_ms + two[1].model_ms) / one[0].model_ms,
                   two[0].steps, PREFILL_CHUNK, 2.0 * two[0].steps / (two[0].steps + 1),
                   sysconf(_SC_NPROCESSORS_ONLN));
    return 0;
}

/* ---- busy: MAX_SEQS requests decoding on a 2-stage ring ------------------ */

static int busy_bar(bench *b)
{
    char name[64], target[16];
    /* One thread a stage: the two share the 2 cores. With all cores each,
     * their threads would take turns on them, and model_ms (wall time in
     * compute) would count the turns as compute: busy would look better
     * than the pipeline is. */
    static const char *const opts[] = {"--threads", "1", "--max-seqs", STR(MAX_SEQS), NULL};
    setup s;
    run r;
    window w;
    stage_sum sums[BENCH_STAGES_MAX];
    fprintf(stderr, "bench_batch: %d requests decoding on 2 stages, one thread each\n", MAX_SEQS);
    if (setup_start(&s, 2, MODEL, DECODE_SPLIT, opts, 1) != 0)
        return -1;
    int rc = run_batch(&s, MAX_SEQS, PROMPT, WARM_GEN, &r); /* pages in the weights */
    run_free(&r);
    if (rc == 0)
        rc = run_batch(&s, MAX_SEQS, PROMPT, BUSY_GEN, &r);
    if (rc == 0)
        rc = steady(&r, &w);
    if (rc == 0 && w.t1 - w.t0 < 2 * BUSY_SETTLE_S) {
        fprintf(stderr, "bench_batch: the steady part lasted %.2f s, too short to read busy\n",
                w.t1 - w.t0);
        rc = -1;
    }
    if (rc == 0)
        sum_steps(&r, PROTO_PHASE_DECODE, w.t0 + BUSY_SETTLE_S, w.t1, sums);
    run_free(&r);
    setup_stop(&s);
    if (rc != 0)
        return -1;
    snprintf(target, sizeof target, ">= %.0f %%", 100 * BUSY_BAR);
    for (int i = 0; i < 2; i++) {
        const stage_sum *u = &sums[i];
        snprintf(name, sizeof name, "busy, stage %d of 2, %d seqs", i, MAX_SEQS);
        if (u->steps == 0) {
            bench_add(b, name, NAN, "%", target, 0);
            bench_note(b, "busy stage %d: none of its step messages came in the steady part", i);
            continue;
        }
        double busy = u->busy / u->steps;
        fprintf(stderr,
                "bench_batch: stage %d over %d decode steps in the steady part: busy %.0f%%, "
                "%.1f seqs, model %.2f ms, beyond it %.2f ms, idle before %.2f ms per step\n",
                i, u->steps, 100 * busy, u->seqs / u->steps, u->model_ms / u->steps,
                (u->step_ms - u->model_ms) / u->steps, u->wait_ms / u->steps);
        bench_add(b, name, 100 * busy, "%", target, busy >= BUSY_BAR);
        if (!(busy >= BUSY_BAR))
            bench_note(b,
                       "busy stage %d: per decode step (%d in %.1f s) %.1f seqs, model %.2f ms, "
                       "%.2f ms beyond it, idle %.2f ms before it waiting for the other stage",
                       i, u->steps, w.t1 - w.t0 - BUSY_SETTLE_S, u->seqs / u->steps,
                       u->model_ms / u->steps, (u->step_ms - u->model_ms) / u->steps,
                       u->wait_ms / u->steps);
    }
    return 0;
}

int main(void)
{
    bench *b = bench_open("batch");
    char path[4096], err[512];
    int failed = decode_bars(b, "synth:110m", MODEL, DECODE_BAR) != 0;
    static const char *const types[] = {"Q8_0", "Q4_K_M"};
    /* Issue 29's bars per path: AVX2's byte products, AVX-512's wider
     * registers, VNNI's fused ones, AMX's tiles. */
    static const double path_bar[CPU_NPATHS] = {0, 3.0, 3.0, 4.0, 4.2};
    for (int t = 0; t < 2; t++) {
        if (bench_gguf(types[t], path, sizeof path, err, sizeof err) != 0) {
            fprintf(stderr, "bench_batch: %s\n", err);
            failed = 1;
            continue;
        }
        for (int p = CPU_AVX2; p <= (int)cpu_best(cpu_features()); p++) {
            char what[64];
            snprintf(what, sizeof what, "synth:110m %s [%s]", types[t], cpu_path_name((cpu_path)p));
            setenv("INFERD_CPU", cpu_path_name((cpu_path)p), 1);
            failed |= decode_bars(b, what, path, path_bar[p]) != 0;
        }
        unsetenv("INFERD_CPU");
    }
    failed |= prefill_bar(b) != 0;
    failed |= busy_bar(b) != 0;
    return bench_close(b) == 0 && !failed ? 0 : 1;
}
