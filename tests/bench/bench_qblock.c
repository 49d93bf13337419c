/* bench_qblock.c: how near memory bandwidth the weight-block kernels run
 * a decode step, and what dequantizing costs a prefill chunk.
 *
 *   triad     a[i] = b[i] + s * c[i] over three double arrays of 3 x 256
 *             MiB (far past the 32 MiB L3), with 1 and with 2 threads;
 *             GB/s = 3 arrays x n x 8 bytes / time, best of TRIAD_RUNS
 *             (STREAM's convention: the write-allocate read of a is not
 *             counted).
 *   read      the read-only bandwidth a gemv can hope for: sums of a 384 MiB
 *             float array, each thread its half as four streams a quarter
 *             apart (as qb_gemv reads four rows); GB/s, best of TRIAD_RUNS.
 *             Reported, not a bar.
 *   gemv      per weight type, a 110M-class model's matrices: per layer
 *             four 768x768 (q, k, v, o), two 2048x768 (w1, w3) and one
 *             768x2048 (w2), for as many layers as make MODEL_BYTES at
 *             least (and 12 at least), so nothing stays cached between
 *             passes. A pass runs qb_gemv over every matrix with a
 *             quantized activation (quantized once, outside the timing:
 *             O(n) against the matrix's O(rows x n)); GB/s = weight bytes
 *             / time of a pass, best of GEMV_RUNS. With 2 threads each
 *             matrix's rows are split in halves, each thread running its
 *             half of every matrix. "of triad" is against the triad of the
 *             same thread count (the bar), "of read" against the read.
 *             gemv and batch have a row per kernel path the CPU has
 *             (engine/compute/cpu.h), named in brackets; the bars are the
 *             vector paths'. Triad, read and gemv are measured in ROUNDS rounds, each
 *             figure the best of all rounds (the machine is shared).
 *   batch     Q8_0 and Q4_0 (BATCH_TYPES), with BATCH activations (the
 *             batching bar's 16 sequences): a pass runs qb_gemm over
 *             every matrix of the same model, rows split in halves with
 *             2 threads; GB/s = weight
 *             bytes / time, best of GEMV_RUNS, and GOPS (a multiply and
 *             an add per weight value and activation) against the path's
 *             peak (PEAK_OPS at /proc/cpuinfo's clock). "cached" runs it over the
 *             first matrix of a layer CACHED_PASSES times, which stays in
 *             each core's L2: the rate the kernel's arithmetic allows.
 *             "overlap" is the from-memory rate against the better of
 *             reading alone and computing alone, min(read, cached): 100%
 *             when the memory reads hide under the arithmetic. The note
 *             gives what the rate would be if they simply added up,
 *             1 / (1 / read + 1 / cached), the diagnosis of the Q8_0
 *             batching bar (bench_batch).
 *   probe     whether a core overlaps reading memory with arithmetic at
 *             all, without any kernel of ours: one thread reads a buffer
 *             in chunks of PROBE_CHUNK bytes (one group of the batched
 *             kernel: 16 rows by 8 Q8_0 blocks), a vector load per line,
 *             with PROBE_WORK rounds of 16 independent multiply-adds
 *             after each chunk; ns per chunk with the work over a buffer
 *             in L2, with it over READ_N floats, and the read alone over
 *             those. Best of TRIAD_RUNS.
 *   prefill   12 layers of the same shapes and a PREFILL_N-token chunk on
 *             1 thread: each matrix dequantized (qb_dequant_rows) to fp32,
 *             then cblas_sgemm with the chunk's activations; "% of sgemm"
 *             = sgemm time / (dequantize + sgemm time), the share of the
 *             sgemm speed that dequantize-then-sgemm keeps.
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "engine/compute/blas.h"
#include "engine/compute/cpu.h"
#include "engine/compute/qblock.h"
#include "engine/model/wtype.h"

#define TRIAD_N ((size_t)32 << 20) /* doubles per array: 3 x 256 MiB */
#define TRIAD_RUNS 6
#define MODEL_BYTES ((size_t)256 << 20)
#define MIN_LAYERS 12
#define GEMV_RUNS 5
#define ROUNDS 3
#define PREFILL_N 512
#define PATTERN_N 65536 /* values quantized once and tiled over a model */
#define MAX_THREADS 2
#define BATCH 16
#define PROBE_CHUNK 4352
#define PROBE_WORK 20
#define PROBE_CACHED ((size_t)1 << 20) /* bytes, within L2 */
#define CACHED_PASSES 400
#define QK_VALUES 32 /* values of a Q8_0 or Q4_0 block */

typedef struct shape {
    int rows, n;
} shape;

static const shape LAYER[] = {{768, 768},  {768, 768},  {768, 768}, {768, 768},
                              {2048, 768}, {2048, 768}, {768, 2048}};
#define N_MATS (int)(sizeof LAYER / sizeof LAYER[0])
#define MAX_N 2048

static const struct {
    uint32_t type;
    const char *target; /* % of triad the product must reach, or NULL */
    double bar;
} TYPES[] = {
    {WT_F32, NULL, 0},        {WT_F16, ">= 85 %", 85},  {WT_BF16, NULL, 0},
    {WT_Q8_0, ">= 85 %", 85}, {WT_Q4_0, ">= 85 %", 85}, {WT_Q4_K, ">= 75 %", 75},
    {WT_Q5_K, NULL, 0},       {WT_Q6_K, NULL, 0},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

/* ---- threads: run fn(arg, i) for i < n, i = 0 on the calling thread ---- */

typedef struct job {
    void (*fn)(void *arg, int i);
    void *arg;
    int i;
} job;

static void *job_main(void *p)
{
    job *j = p;
    j->fn(j->arg, j->i);
    return NULL;
}

static int run_threads(int n, void (*fn)(void *, int), void *arg)
{
    pthread_t tid[MAX_THREADS];
    job jobs[MAX_THREADS];
    for (int i = 1; i < n; i++) {
        jobs[i] = (job){fn, arg, i};
        if (pthread_create(&tid[i], NULL, job_main, &jobs[i]) != 0) {
            for (int k = 1; k < i; k++)
                pthread_join(tid[k], NULL);
            return -1;
        }
    }
    fn(arg, 0);
    for (int i = 1; i < n; i++)
        pthread_join(tid[i], NULL);
    return 0;
}

/* Keeps the better of *best and v. */
static void keep_max(double *best, double v)
{
    *best = v > *best ? v : *best;
}

/* ---- triad ---- */

typedef struct triad {
    double *a, *b, *c;
    int threads, init;
} triad;

static void triad_slice(void *arg, int i)
{
    triad *t = arg;
    size_t lo = TRIAD_N * (size_t)i / (size_t)t->threads;
    size_t hi = TRIAD_N * (size_t)(i + 1) / (size_t)t->threads;
    if (t->init) { /* first touch by the thread that streams the slice */
        for (size_t j = lo; j < hi; j++) {
            t->a[j] = 0.0;
            t->b[j] = 1.0;
            t->c[j] = 2.0;
        }
        return;
    }
    for (size_t j = lo; j < hi; j++)
        t->a[j] = t->b[j] + 3.0 * t->c[j];
}

static int triad_gbs(int threads, double *gbs)
{
    triad t = {.threads = threads, .init = 1};
    t.a = malloc(TRIAD_N * sizeof(double));
    t.b = malloc(TRIAD_N * sizeof(double));
    t.c = malloc(TRIAD_N * sizeof(double));
    int rc = t.a && t.b && t.c ? run_threads(threads, triad_slice, &t) : -1;
    t.init = 0;
    double best = 0;
    for (int r = 0; rc == 0 && r < TRIAD_RUNS; r++) {
        double t0 = bench_now();
        rc = run_threads(threads, triad_slice, &t);
        double g = 3.0 * TRIAD_N * sizeof(double) / (bench_now() - t0) / 1e9;
        best = g > best ? g : best;
    }
    free(t.a), free(t.b), free(t.c);
    *gbs = best;
    return rc;
}

/* ---- read ---- */

#define READ_N ((size_t)96 << 20) /* floats: 384 MiB */
#define READ_STREAMS 4

typedef float f32x8 __attribute__((vector_size(32)));

typedef struct reader {
    const f32x8 *v;
    int threads;
    float sum[MAX_THREADS]; /* kept so the reads are not optimized away */
} reader;

static void read_slice(void *arg, int i)
{
    reader *t = arg;
    size_t n = READ_N / 8 / (size_t)t->threads, q = n / READ_STREAMS;
    const f32x8 *v = t->v + n * (size_t)i;
    f32x8 acc[READ_STREAMS] = {{0}};
    for (size_t j = 0; j < q; j++)
        for (int s = 0; s < READ_STREAMS; s++)
            acc[s] += v[(size_t)s * q + j];
    float sum = 0;
    for (int s = 0; s < READ_STREAMS; s++)
        for (int k = 0; k < 8; k++)
            sum += acc[s][k];
    t->sum[i] = sum;
}

/* READ_N ones, 64-byte aligned, for the read and the probe; NULL when
 * out of memory. */
static float *read_buffer(void)
{
    float *a = aligned_alloc(64, READ_N * sizeof(float));
    for (size_t j = 0; a && j < READ_N; j++)
        a[j] = 1.0f;
    return a;
}

static int read_gbs(int threads, double *gbs)
{
    reader t = {.threads = threads};
    float *a = read_buffer();
    if (!a)
        return -1;
    t.v = (const f32x8 *)a;
    int rc = 0;
    double best = 0;
    for (int r = 0; rc == 0 && r < TRIAD_RUNS; r++) {
        double t0 = bench_now();
        rc = run_threads(threads, read_slice, &t);
        double g = (double)READ_N * sizeof(float) / (bench_now() - t0) / 1e9;
        best = g > best ? g : best;
    }
    free(a);
    *gbs = best;
    return rc;
}

/* ---- probe: reads with work between them ---- */

typedef struct probe {
    const float *buf;
    size_t n; /* floats */
    int work;
} probe;

/* Where the reads and the work end up, so that neither goes away. */
static volatile float probe_sink;

static double probe_ns(const probe *p)
{
    f32x8 acc[16], in[4] = {{0}};
    for (int i = 0; i < 16; i++)
        acc[i] = (f32x8){0} + (float)i;
    const f32x8 mul = (f32x8){0} + 0.999f, add = (f32x8){0} + 0.5f;
    /* A chunk's floats, a line's, and a vector's. */
    enum { CHUNK = PROBE_CHUNK / sizeof(float), LINE = 64 / sizeof(float) };
    size_t chunks = p->n / CHUNK;
    double t0 = bench_now();
    for (size_t c = 0; c < chunks; c++) {
        const float *q = p->buf + c * CHUNK;
        for (int o = 0; o < CHUNK; o += LINE)
            in[(o / LINE) % 4] += *(const f32x8 *)(q + o);
        for (int w = 0; w < p->work; w++)
            for (int i = 0; i < 16; i++)
                acc[i] = acc[i] * mul + add;
    }
    double ns = (bench_now() - t0) * 1e9 / (double)chunks;
    float sum = 0;
    for (int i = 0; i < 16; i++)
        sum += acc[i][0] + in[i % 4][i % 8];
    probe_sink = sum;
    return ns;
}

/* ns per chunk: t[0] work over a cached buffer, t[1] work from memory,
 * t[2] reading alone from memory; each the best of TRIAD_RUNS. */
static int probe_times(double t[3])
{
    float *a = read_buffer();
    if (!a)
        return -1;
    const probe runs[3] = {
        {a, PROBE_CACHED / sizeof(float), PROBE_WORK}, {a, READ_N, PROBE_WORK}, {a, READ_N, 0}};
    for (int k = 0; k < 3; k++) {
        t[k] = INFINITY;
        for (int r = 0; r <= TRIAD_RUNS; r++) {
            double ns = probe_ns(&runs[k]);
            if (r > 0) /* the first run brings a cached buffer in */
                t[k] = ns < t[k] ? ns : t[k];
        }
    }
    free(a);
    return 0;
}

/* ---- a model's weights in one type ---- */

typedef struct model {
    uint32_t type;
    int layers;
    size_t mat_bytes[N_MATS], layer_bytes, bytes;
    uint8_t *w;
    void *act[2]; /* quantized activations of 768 and 2048 values */
} model;

static size_t row_bytes(const model *m, int k)
{
    return wtype_row_bytes(m->type, (uint64_t)LAYER[k].n);
}

static const uint8_t *matrix(const model *m, int layer, int k)
{
    const uint8_t *p = m->w + (size_t)layer * m->layer_bytes;
    for (int j = 0; j < k; j++)
        p += m->mat_bytes[j];
    return p;
}

static float *random_floats(size_t n, float sigma)
{
    float *x = malloc(n * sizeof *x);
    if (!x)
        return NULL;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        /* Sum of four uniform bytes: near enough a normal for weights. */
        uint32_t u = (uint32_t)(s >> 32);
        int sum = (int8_t)u + (int8_t)(u >> 8) + (int8_t)(u >> 16) + (int8_t)(u >> 24);
        x[i] = sigma * (float)sum / 128.0f;
    }
    return x;
}

/* Quantizes PATTERN_N values once and tiles them over the weights: every
 * block is a real one, and filling 256 MiB stays quick. */
static int model_fill(model *m)
{
    size_t pat_bytes = wtype_row_bytes(m->type, PATTERN_N);
    float *x = random_floats(PATTERN_N, 0.02f);
    uint8_t *pat = malloc(pat_bytes);
    int rc = x && pat ? qb_quantize_row(m->type, x, pat, PATTERN_N) : -1;
    for (size_t off = 0; rc == 0 && off < m->bytes; off += pat_bytes)
        memcpy(m->w + off, pat, m->bytes - off < pat_bytes ? m->bytes - off : pat_bytes);
    free(x);
    free(pat);
    return rc;
}

static int model_open(model *m, uint32_t type, int layers)
{
    memset(m, 0, sizeof *m);
    m->type = type;
    for (int k = 0; k < N_MATS; k++) {
        m->mat_bytes[k] = row_bytes(m, k) * (size_t)LAYER[k].rows;
        m->layer_bytes += m->mat_bytes[k];
    }
    m->layers = layers > 0 ? layers : (int)((MODEL_BYTES + m->layer_bytes - 1) / m->layer_bytes);
    if (m->layers < MIN_LAYERS)
        m->layers = MIN_LAYERS;
    m->bytes = m->layer_bytes * (size_t)m->layers;
    m->w = malloc(m->bytes);
    float *x = random_floats(MAX_N, 1.0f);
    m->act[0] = malloc(qb_act_bytes(type, 768));
    m->act[1] = malloc(qb_act_bytes(type, MAX_N));
    int rc = m->w && x && m->act[0] && m->act[1] ? model_fill(m) : -1;
    if (rc == 0) {
        qb_quantize_act(type, x, m->act[0], 768);
        qb_quantize_act(type, x, m->act[1], MAX_N);
    }
    free(x);
    return rc;
}

static void model_close(model *m)
{
    free(m->w);
    free(m->act[0]);
    free(m->act[1]);
}

/* ---- decode: gemv and gemm passes ---- */

/* A pass over the model's matrices with one activation (qb_gemv) or a
 * batch of them (qb_gemm); cached, over the first matrix of a layer
 * CACHED_PASSES times instead. */
typedef struct pass {
    const model *m;
    int threads, batch, cached;
    const void *acts[2];   /* the activation or batch of 768 and of 2048 values */
    float *y[MAX_THREADS]; /* [batch][MAX_N] */
} pass;

static void pass_slice(void *arg, int i)
{
    const pass *p = arg;
    const model *m = p->m;
    int layers = p->cached ? CACHED_PASSES : m->layers, mats = p->cached ? 1 : N_MATS;
    for (int l = 0; l < layers; l++)
        for (int k = 0; k < mats; k++) {
            int lo = LAYER[k].rows * i / p->threads, hi = LAYER[k].rows * (i + 1) / p->threads;
            size_t rb = row_bytes(m, k);
            const uint8_t *w = matrix(m, p->cached ? 0 : l, k) + (size_t)lo * rb;
            const void *x = p->acts[LAYER[k].n == MAX_N];
            if (p->batch == 1)
                qb_gemv(m->type, w, rb, hi - lo, x, LAYER[k].n, p->y[i]);
            else
                qb_gemm(m->type, w, rb, hi - lo, x, p->batch, LAYER[k].n, p->y[i],
                        (size_t)(hi - lo));
        }
}

/* The best weight GB/s of GEMV_RUNS passes. */
static int pass_gbs(pass *p, double *gbs)
{
    int rc = 0;
    for (int i = 0; i < p->threads; i++)
        rc |= (p->y[i] = malloc((size_t)p->batch * MAX_N * sizeof(float))) == NULL;
    double bytes =
        p->cached ? (double)CACHED_PASSES * (double)p->m->mat_bytes[0] : (double)p->m->bytes;
    double best = 0;
    for (int r = 0; rc == 0 && r <= GEMV_RUNS; r++) {
        double t0 = bench_now();
        rc = run_threads(p->threads, pass_slice, p);
        if (r > 0) /* the first pass faults the pages in */
            keep_max(&best, bytes / (bench_now() - t0) / 1e9);
    }
    for (int i = 0; i < p->threads; i++)
        free(p->y[i]);
    *gbs = best;
    return rc;
}

static int gemv_gbs(const model *m, int threads, double *gbs)
{
    pass p = {.m = m, .threads = threads, .batch = 1, .acts = {m->act[0], m->act[1]}};
    return pass_gbs(&p, gbs);
}

/* The same with BATCH activations, from memory or cached. */
static int gemm_gbs(const model *m, int threads, int cached, double *gbs)
{
    pass p = {.m = m, .threads = threads, .batch = BATCH, .cached = cached};
    float *x = random_floats((size_t)BATCH * MAX_N, 1.0f);
    void *batch[2] = {NULL, NULL};
    int rc = x ? 0 : -1;
    for (int j = 0; rc == 0 && j < 2; j++) {
        int64_t n = j ? MAX_N : 768;
        batch[j] = malloc(qb_batch_bytes(m->type, BATCH, n));
        if (!batch[j])
            rc = -1;
        else
            qb_quantize_batch(m->type, x, BATCH, n, batch[j]);
        p.acts[j] = batch[j];
    }
    if (rc == 0)
        rc = pass_gbs(&p, gbs);
    free(batch[0]);
    free(batch[1]);
    free(x);
    return rc;
}

/* ---- prefill: dequantize, then sgemm ---- */

static int prefill_times(const model *m, double *t_deq, double *t_gemm)
{
    float *w = malloc((size_t)MAX_N * 768 * sizeof(float));
    float *x = random_floats((size_t)PREFILL_N * MAX_N, 1.0f);
    float *y = malloc((size_t)PREFILL_N * MAX_N * sizeof(float));
    *t_deq = *t_gemm = 0;
    for (int l = 0; w && x && y && l < m->layers; l++)
        for (int k = 0; k < N_MATS; k++) {
            int rows = LAYER[k].rows, n = LAYER[k].n;
            double t0 = bench_now();
            qb_dequant_rows(m->type, matrix(m, l, k), row_bytes(m, k), 0, rows, n, w);
            double t1 = bench_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, PREFILL_N, n, 1.0f, w, n, x,
                        n, 0.0f, y, PREFILL_N);
            *t_deq += t1 - t0;
            *t_gemm += bench_now() - t1;
        }
    int rc = w && x && y ? 0 : -1;
    free(w), free(x), free(y);
    return rc;
}

/* ---- the table ---- */

static void add_row(bench *b, const char *fmt, const char *type, int threads, double v,
                    const char *unit, const char *target, int pass)
{
    char name[96];
    snprintf(name, sizeof name, fmt, type, threads, threads == 1 ? "" : "s");
    bench_add(b, name, v, unit, target, pass);
}

/* Every figure of the decode section, best of ROUNDS rounds: g[type][t]
 * for t threads, and the triad and read limits. A round measures the
 * limits, then every type's gemv, so that a busy stretch on a shared
 * machine pulls down no figure alone. */
static int decode_rounds(double g[][N_TYPES][MAX_THREADS + 1], double *triad, double *rd)
{
    char err[512];
    for (int round = 0; round < ROUNDS; round++) {
        for (int t = 1; t <= MAX_THREADS; t++) {
            double v, w;
            if (triad_gbs(t, &v) != 0 || read_gbs(t, &w) != 0)
                return -1;
            keep_max(&triad[t], v);
            keep_max(&rd[t], w);
        }
        for (size_t i = 0; i < N_TYPES; i++) {
            model m;
            int rc = model_open(&m, TYPES[i].type, 0);
            for (int p = 0; rc == 0 && p <= (int)cpu_best(cpu_features()); p++) {
                rc = cpu_select(cpu_path_name((cpu_path)p), err, sizeof err);
                for (int t = 1; rc == 0 && t <= MAX_THREADS; t++) {
                    double v;
                    rc = gemv_gbs(&m, t, &v);
                    keep_max(&g[p][i][t], v);
                }
            }
            model_close(&m);
            cpu_select_env(err, sizeof err);
            if (rc != 0)
                return -1;
        }
    }
    return 0;
}

/* The clock of /proc/cpuinfo's first "cpu MHz" line, 0 if none. */
static double cpu_mhz(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    double mhz = 0;
    while (f && mhz == 0 && fgets(line, sizeof line, f))
        if (strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':'))
            mhz = atof(strchr(line, ':') + 1);
    if (f)
        fclose(f);
    return mhz;
}

/* int8 operations (a multiply and an add each) a core of each path's
 * instruction set can issue per cycle: the scalar C as GCC vectorizes it
 * for baseline x86-64, two 128-bit pmaddwd (8 products each); two byte
 * multiply-adds of 256 bits (32 products) for AVX2 and of 512 bits (64)
 * for AVX-512 and VNNI, on a core with two 512-bit units (Zen 4 splits
 * them: half that); a tile multiply of 16 x 16 x 64 every 16 cycles for
 * AMX. The AVX-512 path's kernels run on 256-bit registers, and so do
 * VNNI's but for the Q8_0 batch kernel (qblock_q.c): they can reach half
 * of it. */
static const double PEAK_OPS[CPU_NPATHS] = {32, 128, 256, 256, 2048};

/* The weight types of the batch section, whose activations are Q8_0. */
static const uint32_t BATCH_TYPES[] = {WT_Q8_0, WT_Q4_0};
#define N_BATCH_TYPES (sizeof BATCH_TYPES / sizeof BATCH_TYPES[0])

/* The batch section (see the top) for weight type wt on path p, best of
 * ROUNDS rounds, against the read rates rd measured by decode_rounds. */
static int batch_rows(bench *b, const double *rd, uint32_t wt, cpu_path p)
{
    model m;
    double mem[MAX_THREADS + 1] = {0}, cached[MAX_THREADS + 1] = {0};
    char err[512];
    if (cpu_select(cpu_path_name(p), err, sizeof err) != 0)
        return -1;
    int rc = model_open(&m, wt, 0);
    for (int round = 0; rc == 0 && round < ROUNDS; round++)
        for (int t = 1; rc == 0 && t <= MAX_THREADS; t++) {
            double v = 0, w = 0;
            rc = gemm_gbs(&m, t, 0, &v) || gemm_gbs(&m, t, 1, &w);
            keep_max(&mem[t], v);
            keep_max(&cached[t], w);
        }
    model_close(&m);
    cpu_select_env(err, sizeof err);
    if (rc != 0)
        return -1;
    char what[48];
    snprintf(what, sizeof what, "%s x%d [%s]", wtype_name(wt), BATCH, cpu_path_name(p));
    /* Two operations per weight value and activation, over a block's bytes. */
    double ops_per_byte = 2.0 * BATCH * QK_VALUES / (double)wtype_row_bytes(wt, QK_VALUES);
    double mhz = cpu_mhz();
    for (int t = 1; t <= MAX_THREADS; t++) {
        double limit = rd[t] < cached[t] ? rd[t] : cached[t];
        double added = 1 / (1 / rd[t] + 1 / cached[t]);
        double gops = mem[t] * ops_per_byte, peak = PEAK_OPS[p] * mhz * 1e-3 * t;
        add_row(b, "gemm %s, %d thread%s", what, t, mem[t], "GB/s", NULL, -1);
        add_row(b, "gemm %s, %d thread%s, GOPS", what, t, gops, "GOPS", NULL, -1);
        if (peak > 0)
            add_row(b, "gemm %s, %d thread%s, of peak", what, t, 100 * gops / peak, "%", NULL, -1);
        add_row(b, "gemm %s, %d thread%s, cached", what, t, cached[t], "GB/s", NULL, -1);
        add_row(b, "gemm %s, %d thread%s, cached GOPS", what, t, cached[t] * ops_per_byte, "GOPS",
                NULL, -1);
        add_row(b, "gemm %s, %d thread%s, overlap", what, t, 100 * mem[t] / limit, "%", NULL, -1);
        bench_note(b,
                   "gemm %s, %d thread%s: %.1f GB/s from memory; reading alone %.1f, computing "
                   "alone %.1f, the two added up %.1f; peak %.0f GOPS (%.0f int8 ops a cycle "
                   "a core at %.0f MHz)",
                   what, t, t == 1 ? "" : "s", mem[t], rd[t], cached[t], added, peak, PEAK_OPS[p],
                   mhz);
    }
    return 0;
}

/* The probe section (see the top). */
static int probe_rows(bench *b)
{
    double pt[3];
    if (probe_times(pt) != 0)
        return -1;
    bench_add(b, "probe: read + work, cached", pt[0], "ns", NULL, -1);
    bench_add(b, "probe: read + work, from memory", pt[1], "ns", NULL, -1);
    bench_add(b, "probe: read alone, from memory", pt[2], "ns", NULL, -1);
    bench_note(b,
               "probe: %d bytes read and %d rounds of work a chunk take %.0f ns from memory, where "
               "the work in cache takes %.0f and the read alone %.0f: %.0f%% of the two added up",
               PROBE_CHUNK, PROBE_WORK, pt[1], pt[0], pt[2], 100 * pt[1] / (pt[0] + pt[2]));
    return 0;
}

static int decode_bars(bench *b)
{
    double triad[MAX_THREADS + 1] = {0}, rd[MAX_THREADS + 1] = {0};
    static double g[CPU_NPATHS][N_TYPES][MAX_THREADS + 1];
    int best = (int)cpu_best(cpu_features());
    if (decode_rounds(g, triad, rd) != 0)
        return -1;
    for (int t = 1; t <= MAX_THREADS; t++) {
        add_row(b, "triad%s, %d thread%s", "", t, triad[t], "GB/s", NULL, -1);
        add_row(b, "read%s, %d thread%s", "", t, rd[t], "GB/s", NULL, -1);
    }
    /* One row per path the CPU has; the bars are the vector paths'. */
    for (size_t i = 0; i < N_TYPES; i++)
        for (int p = 0; p <= best; p++)
            for (int t = 1; t <= MAX_THREADS; t++) {
                char name[48];
                snprintf(name, sizeof name, "%s [%s]", wtype_name(TYPES[i].type),
                         cpu_path_name((cpu_path)p));
                double pct = 100 * g[p][i][t] / triad[t];
                const char *target = p >= CPU_AVX2 ? TYPES[i].target : NULL;
                add_row(b, "gemv %s, %d thread%s", name, t, g[p][i][t], "GB/s", NULL, -1);
                add_row(b, "gemv %s, %d thread%s, of triad", name, t, pct, "%", target,
                        target ? pct >= TYPES[i].bar : -1);
                add_row(b, "gemv %s, %d thread%s, of read", name, t, 100 * g[p][i][t] / rd[t], "%",
                        NULL, -1);
            }
    for (size_t i = 0; i < N_BATCH_TYPES; i++)
        for (int p = 0; p <= best; p++)
            if (batch_rows(b, rd, BATCH_TYPES[i], (cpu_path)p) != 0)
                return -1;
    return probe_rows(b);
}

static int prefill_bars(bench *b)
{
    blas_set_threads(1);
    for (size_t i = 0; i < N_TYPES; i++) {
        model m;
        double t_deq, t_gemm;
        const char *name = wtype_name(TYPES[i].type);
        int rc = model_open(&m, TYPES[i].type, MIN_LAYERS);
        if (rc == 0)
            rc = prefill_times(&m, &t_deq, &t_gemm);
        model_close(&m);
        if (rc != 0)
            return -1;
        add_row(b, "prefill %s, dequantize, %d thread%s", name, 1, t_deq * 1e3, "ms", NULL, -1);
        add_row(b, "prefill %s, sgemm, %d thread%s", name, 1, t_gemm * 1e3, "ms", NULL, -1);
        double pct = 100 * t_gemm / (t_deq + t_gemm);
        add_row(b, "prefill %s, %d thread%s, of sgemm", name, 1, pct, "%", ">= 60 %", pct >= 60);
    }
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    blas_select_core(argv);
    bench *b = bench_open("qblock");
    if (decode_bars(b) != 0 || prefill_bars(b) != 0) {
        fprintf(stderr, "bench_qblock: out of memory or threads\n");
        bench_close(b);
        return 1;
    }
    return bench_close(b) == 0 ? 0 : 1;
}
