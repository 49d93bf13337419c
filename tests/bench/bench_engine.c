/* bench_engine.c: the engine's performance bars (SPEC section 7).
 *
 * Speeds are compared with limits measured in the same run on the same
 * machine, because absolute times are noisy. The definitions:
 *
 *   triad        a[i] = b[i] + s * c[i] over three double arrays of 1.125 GiB
 *                in all (far past the 105 MiB L3), on every thread; GB/s =
 *                3 arrays x n x 8 bytes / time, best of TRIAD_RUNS (STREAM's
 *                convention: the write-allocate read of a is not counted).
 *                Triad and sgemm are measured before and after the decode
 *                and prefill runs; the best is the limit.
 *   sgemm        square C = A B with all threads and the OpenBLAS kernels
 *                blas_select_core picked; GFLOP/s = 2 n^3 / time, best over
 *                the sizes in SGEMM_SIZES and SGEMM_RUNS runs each.
 *   decode       synth:110m, fp32 weights, fp16 KV: a cache filled to PROMPT
 *                positions (as below), then DECODE_STEPS greedy steps after
 *                one warm-up; tok/s = 1 / median step, the best of BEST_OF
 *                such runs (as the limits are the best of theirs: another
 *                guest on the host makes a run slower, never faster).
 *                Its limit is the weight bytes one token reads (every layer,
 *                the final norm and the classifier, which is the embedding
 *                table when shared; of the embedding only one row) divided
 *                by the triad bandwidth (the KV a step reads at this
 *                context is under 0.3% of that and not counted).
 *   prefill      one PREFILL_N-token chunk from an empty cache after a
 *                warm-up chunk, median of CHUNK_RUNS, best of BEST_OF; FLOPs = 2 x layer
 *                weight params x n + 2 x classifier params (logits of the
 *                last position only) + causal attention (QK and PV:
 *                4 x head_dim x heads x visible keys per query per layer);
 *                GFLOP/s as a % of the sgemm figure.
 *   at context   a cache of synth:110m's shape filled directly with
 *                deterministic random keys and values to C positions, then
 *                the median of CTX_STEPS decode steps. Each (bits, C) point
 *                runs in a forked child so that its peak RSS (VmHWM: model
 *                + cache + scratch) is its own.
 *   at depth     the same fill to DEPTH positions, then a PREFILL_N-token
 *                chunk: median of CHUNK_RUNS after a warm-up, the cache
 *                rolled back to DEPTH between runs.
 *   GGUF         synth:110m written by `inferd quantize` (into $BENCH_DIR,
 *                kept there while newer than $B/bin/inferd) at each of
 *                GGUF_TYPES, then decode and prefill as above, in the
 *                same brackets of triad and sgemm. The bytes a token reads
 *                are the file's: quantized blocks, scales included.
 *   batched      b sequences (each of BATCHES) decoding together in
 *                fwd_step_batch on one stage holding every layer, for
 *                synth:110m in fp32 and as a Q8_0 file: fp16 caches filled
 *                as above to BATCH_CTX positions give or take a few per
 *                sequence (batch_ctx), then DECODE_STEPS greedy steps after
 *                one warm-up; aggregate tok/s = b / median step, best of
 *                BEST_OF, and its ratio to b = 1's (BATCH_BAR at 16).
 */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"
#include "engine/compute/blas.h"
#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "engine/model/model.h"
#include "engine/model/weights.h"

#define TRIAD_N ((size_t)48 << 20) /* doubles per array: 3 x 384 MiB */
#define TRIAD_RUNS 8
#define SGEMM_RUNS 3
#define PROMPT 64
#define DECODE_STEPS 32
#define PREFILL_N 512
#define CHUNK_RUNS 3
#define CTX_STEPS 9
#define DEPTH 4096
#define EMBEDDED_STEPS 64
#define MAX_RUNS 64
#define BEST_OF 3
#define BATCH_CTX 128
#define BATCH_SHORT 40 /* positions of the short-context batch (batch_ctx keeps it >= 8) */
#define MAX_SEQS 16
#define BATCH_BAR 6.0 /* 16 sequences decode at least 6x the tokens of one */

static const int SGEMM_SIZES[] = {1024, 2048, 3072};
static const int CTXS[] = {1024, 8192, 32768};
static const int BITS[] = {16, 8, 4};
#define N_CTX 3
#define N_BITS 3
static const int BATCHES[] = {1, 4, 8, MAX_SEQS};
#define N_BATCHES (int)(sizeof BATCHES / sizeof BATCHES[0])

/* The GGUF file types measured, with the decode bar of each (a share of
 * the bandwidth limit; none for F32, whose bar is synth:110m's above). */
static const struct {
    const char *type;
    double decode_bar;
} GGUF_TYPES[] = {{"F32", 0}, {"F16", 0.85}, {"Q8_0", 0.85}, {"Q4_0", 0.85}, {"Q4_K_M", 0.75}};
#define N_GGUF (int)(sizeof GGUF_TYPES / sizeof GGUF_TYPES[0])
#define GGUF_PREFILL_BAR 0.6

/* ---- triad ---- */

typedef struct triad_arg {
    double *a, *b, *c;
    int threads;
    int init;
} triad_arg;

static void triad_slice(void *arg, int i)
{
    triad_arg *t = arg;
    size_t lo = TRIAD_N * (size_t)i / (size_t)t->threads;
    size_t hi = TRIAD_N * (size_t)(i + 1) / (size_t)t->threads;
    const double s = 3.0;
    if (t->init) {
        /* First touch from the thread that will stream the slice. */
        for (size_t j = lo; j < hi; j++) {
            t->a[j] = 0.0;
            t->b[j] = 1.0;
            t->c[j] = 2.0;
        }
        return;
    }
    for (size_t j = lo; j < hi; j++)
        t->a[j] = t->b[j] + s * t->c[j];
}

static int triad_gbs(pool *p, double *gbs, char *err, size_t errlen)
{
    triad_arg t = {.threads = pool_threads(p), .init = 1};
    t.a = malloc(TRIAD_N * sizeof(double));
    t.b = malloc(TRIAD_N * sizeof(double));
    t.c = malloc(TRIAD_N * sizeof(double));
    if (!t.a || !t.b || !t.c) {
        snprintf(err, errlen, "triad: cannot allocate 3 x %zu MiB", TRIAD_N * sizeof(double) >> 20);
        free(t.a), free(t.b), free(t.c);
        return -1;
    }
    pool_run(p, t.threads, triad_slice, &t);
    t.init = 0;
    double best = 0;
    for (int r = 0; r < TRIAD_RUNS; r++) {
        double t0 = bench_now();
        pool_run(p, t.threads, triad_slice, &t);
        double g = 3.0 * TRIAD_N * sizeof(double) / (bench_now() - t0) / 1e9;
        best = g > best ? g : best;
    }
    free(t.a), free(t.b), free(t.c);
    *gbs = best;
    return 0;
}

/* ---- sgemm ---- */

static int sgemm_gflops(int threads, double *gflops, char *err, size_t errlen)
{
    blas_set_threads(threads);
    double best = 0;
    for (size_t s = 0; s < sizeof SGEMM_SIZES / sizeof SGEMM_SIZES[0]; s++) {
        int n = SGEMM_SIZES[s];
        size_t nn = (size_t)n * n;
        float *a = malloc(nn * sizeof(float)), *b = malloc(nn * sizeof(float));
        float *c = malloc(nn * sizeof(float));
        if (!a || !b || !c) {
            snprintf(err, errlen, "sgemm: cannot allocate three %dx%d matrices", n, n);
            free(a), free(b), free(c);
            return -1;
        }
        for (size_t i = 0; i < nn; i++) {
            a[i] = (float)(i % 7) * 0.1f;
            b[i] = (float)(i % 5) * 0.1f;
        }
        /* The first call spins up OpenBLAS's threads: a warm-up. */
        for (int r = 0; r <= SGEMM_RUNS; r++) {
            double t0 = bench_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f,
                        c, n);
            double g = 2.0 * n * n * (double)n / (bench_now() - t0) / 1e9;
            if (r > 0)
                best = g > best ? g : best;
        }
        free(a), free(b), free(c);
    }
    *gflops = best;
    return 0;
}

/* ---- model arithmetic ---- */

static double layer_params(const model_config *c)
{
    double kv_dim = (double)c->n_kv_heads * c->head_dim;
    return 2.0 * c->dim * c->dim + 2.0 * kv_dim * c->dim + 3.0 * c->hidden_dim * c->dim;
}

/* Weight bytes one decode token reads: see the comment at the top. */
static double decode_weight_bytes(const model *m)
{
    const model_config *c = model_config_of(m);
    const wmat *e = model_token_embedding(m);
    double table = (double)e->rows * (double)e->row_bytes;
    double bytes = (double)model_stage_bytes(m, 0, c->n_layers) - table + (double)e->row_bytes;
    return c->shared_classifier ? bytes + table : bytes;
}

/* FLOPs of an n-token chunk whose first position is `depth`. */
static double chunk_flops(const model_config *c, int depth, int n)
{
    double visible = (double)n * depth + (double)n * (n + 1) / 2; /* keys seen, summed */
    double attn = 4.0 * c->head_dim * c->n_heads * visible;
    return c->n_layers * (2.0 * layer_params(c) * n + attn) + 2.0 * c->vocab_size * c->dim;
}

/* ---- stepping ---- */

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* A stage over the whole model with its own pool (in a forked child the
 * parent's pool threads do not exist), a cache per sequence (seqs > 0: a
 * batch of them, else one) and a token list. */
typedef struct runner {
    pool *pool;
    fwd_stage *fwd;
    kv_cache *kv[MAX_SEQS];
    int seqs;
    int vocab;
    int *tokens;
    float *logits;
} runner;

static void runner_free(runner *r)
{
    for (int i = 0; i < MAX_SEQS; i++)
        kv_free(r->kv[i]);
    fwd_free(r->fwd);
    pool_free(r->pool);
    free(r->tokens);
    free(r->logits);
}

static int runner_init(runner *r, const model *m, int threads, int bits, int seqs, char *err,
                       size_t errlen)
{
    const model_config *c = model_config_of(m);
    memset(r, 0, sizeof *r);
    r->vocab = c->vocab_size;
    r->seqs = seqs;
    if (pool_create(&r->pool, threads, err, errlen) != 0 ||
        fwd_create(&r->fwd, m, 0, c->n_layers, r->pool, err, errlen) != 0)
        goto fail;
    for (int i = 0; i < (seqs > 0 ? seqs : 1); i++)
        if (kv_create(&r->kv[i], fwd_kv_shape(r->fwd), bits, err, errlen) != 0)
            goto fail;
    r->tokens = malloc(PREFILL_N * sizeof(int));
    r->logits = malloc((size_t)(seqs > 0 ? seqs : 1) * c->vocab_size * sizeof(float));
    if (!r->tokens || !r->logits) {
        snprintf(err, errlen, "out of memory for %d tokens and %d logits", PREFILL_N,
                 c->vocab_size);
        goto fail;
    }
    for (int i = 0; i < PREFILL_N; i++)
        r->tokens[i] = 1 + (int)((unsigned)i * 7919u % (unsigned)(c->vocab_size - 1));
    return 0;
fail:
    runner_free(r);
    return -1;
}

/* One step over the first n tokens of the list, or a batch's step over
 * one token of each sequence: its wall ms, or -1 on error. Decode steps
 * feed back their greedy tokens. */
static double runner_step(runner *r, int n, char *err, size_t errlen)
{
    fwd_stats st;
    double t0 = bench_now();
    int rc = r->seqs > 0 ? fwd_step_batch(r->fwd, r->kv, r->seqs, r->tokens, NULL, NULL, r->logits,
                                          &st, err, errlen)
                         : fwd_step(r->fwd, r->kv[0], r->tokens, NULL, n, NULL, r->logits, &st, err,
                                    errlen);
    if (rc != 0)
        return -1;
    double ms = (bench_now() - t0) * 1e3;
    for (int i = 0; n == 1 && i < (r->seqs > 0 ? r->seqs : 1); i++)
        r->tokens[i] = argmax(r->logits + (size_t)i * r->vocab, r->vocab);
    return ms;
}

/* xorshift64: cheap deterministic values in [-1, 1). */
static float next_uniform(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)(*s >> 40) / (float)(1 << 23) - 1.0f;
}

/* Stands in for a ctx-token prefill: keys and values of every layer for
 * positions [0, ctx), written and committed as fwd_step would. */
static int fill_cache(kv_cache *kv, int ctx, char *err, size_t errlen)
{
    kv_shape sh = kv_shape_of(kv);
    size_t width = (size_t)sh.n_kv_heads * sh.head_dim;
    unsigned long long seed = 0x9e3779b97f4a7c15ull;
    float *k = malloc(PREFILL_N * width * sizeof(float));
    float *v = malloc(PREFILL_N * width * sizeof(float));
    int rc = -1;
    if (!k || !v) {
        snprintf(err, errlen, "out of memory for a %d-position fill buffer", PREFILL_N);
        goto out;
    }
    if (kv_reserve(kv, ctx, err, errlen) != 0)
        goto out;
    for (int layer = 0; layer < sh.n_layers; layer++) {
        for (int pos = 0; pos < ctx; pos += PREFILL_N) {
            int n = ctx - pos < PREFILL_N ? ctx - pos : PREFILL_N;
            for (size_t i = 0; i < (size_t)n * width; i++) {
                k[i] = next_uniform(&seed);
                v[i] = next_uniform(&seed);
            }
            kv_write(kv, layer, pos, n, k, v);
        }
    }
    kv_set_len(kv, ctx);
    rc = 0;
out:
    free(k);
    free(v);
    return rc;
}

/* Peak resident set of this process (VmHWM), in bytes. */
static double peak_rss(void)
{
    char line[256];
    long kb = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return (double)kb * 1024;
}

/* ---- one measured point, in a child ---- */

typedef struct job {
    const model *m;
    int threads;
    int bits;
    int ctx;   /* positions filled before the timed steps (a batch's: batch_ctx) */
    int chunk; /* tokens per step: 1 decode, else a prefill chunk */
    int runs;  /* timed steps after one warm-up */
    int seqs;  /* > 0: decode steps of that many sequences in one batch */
} job;

/* Sequence i of a batch: ctx give or take 4 positions per pair of
 * sequences, the first at ctx, so that the mean stays near it. */
static int batch_ctx(const job *j, int i)
{
    return j->ctx + 4 * ((i + 1) / 2) * (i % 2 ? 1 : -1);
}

typedef struct point {
    double step_ms; /* median of the timed steps */
    double peak_rss;
    double kv_bytes;
    int formula_ok; /* kv_bytes() == kv_bytes_for() */
} point;

/* Decode steps extend the context (ctx + runs at the end); prefill chunks
 * are rolled back to ctx so each one runs at the same depth. */
static int measure(const job *j, point *out, char *err, size_t errlen)
{
    runner r;
    double ms[MAX_RUNS];
    int rc = -1, runs = j->runs < MAX_RUNS ? j->runs : MAX_RUNS;
    if (runner_init(&r, j->m, j->threads, j->bits, j->seqs, err, errlen) != 0)
        return -1;
    for (int i = 0; i < (j->seqs > 0 ? j->seqs : 1); i++)
        if (fill_cache(r.kv[i], j->seqs > 0 ? batch_ctx(j, i) : j->ctx, err, errlen) != 0)
            goto out;
    for (int i = -1; i < runs; i++) {
        if (j->chunk > 1)
            kv_set_len(r.kv[0], j->ctx);
        double t = runner_step(&r, j->chunk, err, errlen);
        if (t < 0)
            goto out;
        if (i >= 0)
            ms[i] = t;
    }
    out->step_ms = bench_median(ms, runs);
    out->peak_rss = peak_rss();
    out->kv_bytes = (double)kv_bytes(r.kv[0]);
    out->formula_ok =
        kv_bytes(r.kv[0]) == kv_bytes_for(kv_shape_of(r.kv[0]), j->bits, kv_len(r.kv[0]));
    rc = 0;
out:
    runner_free(&r);
    return rc;
}

typedef struct child_msg {
    int rc;
    point p;
    char err[256];
} child_msg;

/* Runs measure() in a forked child, so that VmHWM is this point's peak and
 * not the largest of the run so far. The model is shared copy-on-write. */
static int measure_in_child(const job *j, point *out, char *err, size_t errlen)
{
    int fd[2];
    child_msg msg = {.rc = -1};
    /* The run takes minutes: say what is being measured. */
    if (j->seqs > 0)
        fprintf(stderr, "bench_engine: %s, kv%d, about %d positions, %d sequences a step\n",
                model_name(j->m), j->bits, j->ctx, j->seqs);
    else
        fprintf(stderr, "bench_engine: %s, kv%d, %d positions, %d-token steps\n", model_name(j->m),
                j->bits, j->ctx, j->chunk);
    if (pipe(fd) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        msg.rc = measure(j, &msg.p, msg.err, sizeof msg.err);
        /* Smaller than PIPE_BUF: written and read in one piece. */
        _exit(write(fd[1], &msg, sizeof msg) == (ssize_t)sizeof msg ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &msg, sizeof msg);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)sizeof msg) {
        snprintf(err, errlen, "measuring %d-bit KV at %d positions: the child died (status %d)",
                 j->bits, j->ctx, status);
        return -1;
    }
    if (msg.rc != 0) {
        snprintf(err, errlen, "measuring %d-bit KV at %d positions: %s", j->bits, j->ctx, msg.err);
        return -1;
    }
    *out = msg.p;
    return 0;
}

/* ---- the report: one function per bar ---- */

/* The machine's limits: memory bandwidth and sgemm rate. */
typedef struct limits {
    double gbs;
    double gflops;
} limits;

/* Keeps the best of this measurement and what `lim` holds already: a
 * limit measured while something else ran on the cores would flatter
 * every ratio against it. */
static int measure_limits(int threads, limits *lim, char *err, size_t errlen)
{
    pool *p;
    double gbs, gflops;
    fprintf(stderr, "bench_engine: triad and sgemm, %d threads\n", threads);
    if (pool_create(&p, threads, err, errlen) != 0)
        return -1;
    int rc = triad_gbs(p, &gbs, err, errlen);
    pool_free(p);
    if (rc != 0 || sgemm_gflops(threads, &gflops, err, errlen) != 0)
        return -1;
    lim->gbs = gbs > lim->gbs ? gbs : lim->gbs;
    lim->gflops = gflops > lim->gflops ? gflops : lim->gflops;
    return 0;
}

static void report_limits(bench *b, const limits *lim)
{
    char name[64];
    bench_add(b, "triad bandwidth", lim->gbs, "GB/s", NULL, -1);
    snprintf(name, sizeof name, "sgemm (OpenBLAS %s)", blas_core());
    bench_add(b, name, lim->gflops, "GFLOP/s", NULL, -1);
}

/* A share of a limit as a row, with its bar when bar > 0. */
static void add_share(bench *b, const char *name, double value, double limit, double bar)
{
    char target[16];
    snprintf(target, sizeof target, ">= %.0f %%", 100 * bar);
    bench_add(b, name, 100 * value / limit, "%", bar > 0 ? target : NULL,
              bar > 0 ? value >= bar * limit : -1);
}

/* `what` names the model in the rows: "synth:110m", "synth:110m Q8_0". */
static void report_decode(bench *b, const char *what, double weight_bytes, const point *pt,
                          double gbs, double bar)
{
    char name[96];
    double tok_s = 1e3 / pt->step_ms;
    double limit = gbs * 1e9 / weight_bytes;
    snprintf(name, sizeof name, "decode %s", what);
    bench_add(b, name, tok_s, "tok/s", NULL, -1);
    snprintf(name, sizeof name, "decode %s bandwidth limit", what);
    bench_add(b, name, limit, "tok/s", NULL, -1);
    snprintf(name, sizeof name, "decode %s / bandwidth limit", what);
    add_share(b, name, tok_s, limit, bar);
}

static void report_prefill(bench *b, const char *what, const model_config *c, const point *pt,
                           double gflops, double bar)
{
    char name[96];
    double achieved = chunk_flops(c, 0, PREFILL_N) / (pt->step_ms * 1e-3) / 1e9;
    snprintf(name, sizeof name, "prefill %s, chunk 512", what);
    bench_add(b, name, PREFILL_N * 1e3 / pt->step_ms, "tok/s", NULL, -1);
    snprintf(name, sizeof name, "prefill %s compute", what);
    bench_add(b, name, achieved, "GFLOP/s", NULL, -1);
    snprintf(name, sizeof name, "prefill %s / sgemm", what);
    add_share(b, name, achieved, gflops, bar);
}

/* Decode at every (bits, context): step time, peak RSS and KV bytes, and
 * the ratios the bars are about. Linear RSS growth is checked as: the RSS
 * added from the smallest to the largest context is the KV bytes added
 * (within 10%), i.e. nothing else grows with context. */
static int report_contexts(bench *b, const model *m, int threads, int *formula_misses, char *err,
                           size_t errlen)
{
    point pt[N_BITS][N_CTX];
    char name[96];
    const int last = N_CTX - 1;
    for (int i = 0; i < N_BITS; i++) {
        for (int k = 0; k < N_CTX; k++) {
            job j = {m, threads, BITS[i], CTXS[k], 1, CTX_STEPS, 0};
            if (measure_in_child(&j, &pt[i][k], err, errlen) != 0)
                return -1;
            *formula_misses += !pt[i][k].formula_ok;
            snprintf(name, sizeof name, "decode step, kv%d, ctx %dK", BITS[i], CTXS[k] / 1024);
            bench_add(b, name, pt[i][k].step_ms, "ms", NULL, -1);
            snprintf(name, sizeof name, "peak RSS, kv%d, ctx %dK", BITS[i], CTXS[k] / 1024);
            bench_add(b, name, pt[i][k].peak_rss / (1 << 20), "MiB", NULL, -1);
            snprintf(name, sizeof name, "KV bytes, kv%d, ctx %dK", BITS[i], CTXS[k] / 1024);
            bench_add(b, name, pt[i][k].kv_bytes / (1 << 20), "MiB", NULL, -1);
        }
        double grow =
            (pt[i][last].peak_rss - pt[i][0].peak_rss) / (pt[i][last].kv_bytes - pt[i][0].kv_bytes);
        snprintf(name, sizeof name, "RSS growth / KV growth, kv%d, %dK->%dK", BITS[i],
                 CTXS[0] / 1024, CTXS[last] / 1024);
        bench_add(b, name, grow, "x", "0.9 - 1.1", grow >= 0.9 && grow <= 1.1);
    }
    double r4 = pt[2][last].step_ms / pt[0][last].step_ms;
    double r8 = pt[1][last].step_ms / pt[0][last].step_ms;
    bench_add(b, "decode step at 32K, kv4 / kv16", r4, "x", "<= 1.3 x", r4 <= 1.3);
    bench_add(b, "decode step at 32K, kv8 / kv16", r8, "x", NULL, -1);

    double k4 = pt[2][last].kv_bytes / pt[0][last].kv_bytes;
    double k8 = pt[1][last].kv_bytes / pt[0][last].kv_bytes;
    bench_add(b, "KV bytes kv4 / kv16", k4, "x", "<= 0.3 x", k4 <= 0.3);
    bench_add(b, "KV bytes kv8 / kv16", k8, "x", "<= 0.55 x", k8 <= 0.55);
    return 0;
}

static int report_depth(bench *b, const model *m, int threads, int *formula_misses, char *err,
                        size_t errlen)
{
    point pt[N_BITS];
    char name[96];
    for (int i = 0; i < N_BITS; i++) {
        job j = {m, threads, BITS[i], DEPTH, PREFILL_N, CHUNK_RUNS, 0};
        if (measure_in_child(&j, &pt[i], err, errlen) != 0)
            return -1;
        *formula_misses += !pt[i].formula_ok;
        snprintf(name, sizeof name, "prefill chunk 512 at 4K, kv%d", BITS[i]);
        bench_add(b, name, pt[i].step_ms, "ms", NULL, -1);
    }
    double r4 = pt[2].step_ms / pt[0].step_ms;
    bench_add(b, "prefill chunk at 4K, kv4 / kv16", r4, "x", "<= 1.5 x", r4 <= 1.5);
    return 0;
}

/* ---- GGUF files ---- */

/* One file type's measurements, kept for the report after the limits. */
typedef struct gguf_run {
    double weight_bytes;
    model_config c;
    point decode, prefill;
} gguf_run;

/* The fastest of BEST_OF measurements of j (see the top). */
static int measure_best(const job *j, point *out, char *err, size_t errlen)
{
    for (int i = 0; i < BEST_OF; i++) {
        point p;
        if (measure_in_child(j, &p, err, errlen) != 0)
            return -1;
        if (i == 0 || p.step_ms < out->step_ms)
            *out = p;
    }
    return 0;
}

static int measure_gguf(int threads, gguf_run *runs, char *err, size_t errlen)
{
    for (int i = 0; i < N_GGUF; i++) {
        char path[4096];
        model *m;
        if (bench_gguf(GGUF_TYPES[i].type, path, sizeof path, err, errlen) != 0 ||
            model_load(&m, path, err, errlen) != 0)
            return -1;
        runs[i].weight_bytes = decode_weight_bytes(m);
        runs[i].c = *model_config_of(m);
        job jd = {m, threads, 16, PROMPT, 1, DECODE_STEPS, 0};
        job jp = {m, threads, 16, 0, PREFILL_N, CHUNK_RUNS, 0};
        int rc = measure_best(&jd, &runs[i].decode, err, errlen);
        if (rc == 0)
            rc = measure_best(&jp, &runs[i].prefill, err, errlen);
        model_free(m);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static void report_gguf(bench *b, const gguf_run *runs, const limits *lim)
{
    char what[64];
    for (int i = 0; i < N_GGUF; i++) {
        snprintf(what, sizeof what, "synth:110m %s", GGUF_TYPES[i].type);
        report_decode(b, what, runs[i].weight_bytes, &runs[i].decode, lim->gbs,
                      GGUF_TYPES[i].decode_bar);
    }
    for (int i = 0; i < N_GGUF; i++) {
        snprintf(what, sizeof what, "synth:110m %s", GGUF_TYPES[i].type);
        report_prefill(b, what, &runs[i].c, &runs[i].prefill, lim->gflops, GGUF_PREFILL_BAR);
    }
}

/* ---- batches ---- */

/* Every batch size of one model. When 16 sequences miss the bar, they
 * run again at a short context, where the caches cost next to nothing:
 * the note says how much of their step attention takes. */
static int report_batches_of(bench *b, const char *what, const model *m, int threads, char *err,
                             size_t errlen)
{
    point pt[N_BATCHES], short_ctx;
    char name[96], target[16];
    for (int i = 0; i < N_BATCHES; i++) {
        job j = {m, threads, 16, BATCH_CTX, 1, DECODE_STEPS, BATCHES[i]};
        if (measure_best(&j, &pt[i], err, errlen) != 0)
            return -1;
    }
    for (int i = 0; i < N_BATCHES; i++) {
        snprintf(name, sizeof name, "batched decode %s, %d seq%s", what, BATCHES[i],
                 BATCHES[i] > 1 ? "s" : "");
        bench_add(b, name, BATCHES[i] * 1e3 / pt[i].step_ms, "tok/s", NULL, -1);
    }
    snprintf(target, sizeof target, ">= %.0f x", BATCH_BAR);
    double ratio = 0;
    for (int i = 1; i < N_BATCHES; i++) {
        int bar = BATCHES[i] == MAX_SEQS;
        ratio = BATCHES[i] * pt[0].step_ms / pt[i].step_ms;
        snprintf(name, sizeof name, "batched decode %s, %d seqs / 1 seq", what, BATCHES[i]);
        bench_add(b, name, ratio, "x", bar ? target : NULL, bar ? ratio >= BATCH_BAR : -1);
    }
    if (ratio >= BATCH_BAR)
        return 0;
    job js = {m, threads, 16, BATCH_SHORT, 1, DECODE_STEPS, MAX_SEQS};
    if (measure_best(&js, &short_ctx, err, errlen) != 0)
        return -1;
    bench_note(b,
               "batched decode %s: %d seqs take %.2f ms a step, the bar %.2f (%d x %.2f ms of 1 "
               "seq / %.0f); at about %d positions instead of %d they take %.2f ms: the rest is "
               "attention over the caches",
               what, MAX_SEQS, pt[N_BATCHES - 1].step_ms, MAX_SEQS * pt[0].step_ms / BATCH_BAR,
               MAX_SEQS, pt[0].step_ms, BATCH_BAR, BATCH_SHORT, BATCH_CTX, short_ctx.step_ms);
    return 0;
}

/* synth:110m in fp32 (m) and as a Q8_0 file. */
static int report_batches(bench *b, const model *m, int threads, char *err, size_t errlen)
{
    char path[4096];
    model *q8;
    if (report_batches_of(b, "synth:110m", m, threads, err, errlen) != 0 ||
        bench_gguf("Q8_0", path, sizeof path, err, errlen) != 0 ||
        model_load(&q8, path, err, errlen) != 0)
        return -1;
    int rc = report_batches_of(b, "synth:110m Q8_0", q8, threads, err, errlen);
    model_free(q8);
    return rc;
}

static int report_embedded(bench *b, int threads, char *err, size_t errlen)
{
    model *m;
    point pt;
    char name[96];
    if (model_load(&m, "embedded", err, errlen) != 0)
        return -1;
    job j = {m, threads, 16, PROMPT, 1, EMBEDDED_STEPS, 0};
    int rc = measure_in_child(&j, &pt, err, errlen);
    if (rc == 0) {
        snprintf(name, sizeof name, "decode embedded (%s)", model_name(m));
        bench_add(b, name, 1e3 / pt.step_ms, "tok/s", NULL, -1);
    }
    model_free(m);
    return rc;
}

static int engine_bars(bench *b, int threads, char *err, size_t errlen)
{
    limits lim = {0, 0};
    model *m;
    point decode, prefill;
    gguf_run runs[N_GGUF];
    int misses = 0;
    if (measure_limits(threads, &lim, err, errlen) != 0)
        return -1;
    /* Generating synth:110m's weights takes a while: once, shared by the
     * forked children copy-on-write. */
    fprintf(stderr, "bench_engine: generating synth:110m\n");
    if (model_load(&m, "synth:110m", err, errlen) != 0)
        return -1;
    job jd = {m, threads, 16, PROMPT, 1, DECODE_STEPS, 0};
    job jp = {m, threads, 16, 0, PREFILL_N, CHUNK_RUNS, 0};
    int rc = measure_best(&jd, &decode, err, errlen);
    if (rc == 0)
        rc = measure_best(&jp, &prefill, err, errlen);
    if (rc == 0)
        rc = measure_gguf(threads, runs, err, errlen);
    if (rc == 0)
        rc = measure_limits(threads, &lim, err, errlen);
    if (rc == 0) {
        report_limits(b, &lim);
        report_decode(b, "synth:110m", decode_weight_bytes(m), &decode, lim.gbs, 0.9);
        report_prefill(b, "synth:110m", model_config_of(m), &prefill, lim.gflops, 0.7);
        report_gguf(b, runs, &lim);
        rc = report_batches(b, m, threads, err, errlen);
    }
    if (rc == 0)
        rc = report_contexts(b, m, threads, &misses, err, errlen);
    if (rc == 0)
        rc = report_depth(b, m, threads, &misses, err, errlen);
    model_free(m);
    if (rc != 0)
        return -1;
    bench_add(b, "caches where kv_bytes() != kv_bytes_for()", misses, "caches", "== 0",
              misses == 0);
    return report_embedded(b, threads, err, errlen);
}

int main(int argc, char **argv)
{
    (void)argc;
    blas_select_core(argv);
    char err[512];
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bench *b = bench_open("engine");
    if (engine_bars(b, threads > 0 ? threads : 1, err, sizeof err) != 0) {
        fprintf(stderr, "bench_engine: %s\n", err);
        bench_close(b);
        return 1;
    }
    return bench_close(b) == 0 ? 0 : 1;
}
