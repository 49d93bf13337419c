/* matvec.c: matrix-vector products of a decode step (see matvec.h).
 *
 * With one input every weight is read once and used for one FMA, so the
 * kernel's job is to keep memory busy: the matrices are cut into tasks of
 * a few rows (about TASK_BYTES of weights each) that threads claim as they
 * go, so a thread slowed by another process does not hold the others
 * back; within a task, ROWS rows are read at once against x, which stays
 * in L1. A batch of inputs reads each weight once for all of them: fp32
 * tasks go a block of rows at a time, each block multiplied by every input
 * (INPUTS at once) while it is in cache and the next one is prefetched;
 * quantized tasks go to qb_gemm, which does the same its own way.
 */
#include "matvec.h"

#include "engine/model/wtype.h"
#include "qblock.h"
#include "vec8.h"

#define ROWS 4
/* Inputs an fp32 tile multiplies at once (dot_tile): 16 accumulators,
 * more spill (measured: 6 inputs take twice the time of 4). */
#define INPUTS 4
/* Big enough that a task's four slices (multiply_rows, qb_gemv) lie far
 * enough apart for the prefetchers to stream them, small enough that a
 * 768-wide matrix still makes several tasks to balance. Measured on 2
 * cores, synth:110m decode: F16 at 80% of the bandwidth limit with 64 KiB
 * tasks, 95% with 256 KiB, less again with 1 MiB (the tail of a run). */
#define TASK_BYTES (256 * 1024)
/* Below this (weight bytes times inputs), waking the pool's threads
 * costs more than the work. */
#define INLINE_BYTES (256 * 1024)

/* A batch's fp32 inputs meet the weights a block of about BLOCK_BYTES at
 * a time: it stays in L1/L2 while every input reads it (16 to 128 KiB
 * measured alike on synth:110m). */
#define BLOCK_BYTES (32 * 1024)
/* A batch's tasks are whole tiles of qb_gemm's batch kernels. */
#define TILE_ROWS 16

typedef struct job {
    const float *x; /* [b][cols] */
    int b, cols;
    const mv_out *outs;
    const char *xact[MV_MAX_OUTS]; /* x quantized for outs[k] (quantized types only, qb_gemm) */
    int task_rows[MV_MAX_OUTS];
    int block_rows[MV_MAX_OUTS];     /* fp32: rows multiplied by all b inputs in turn */
    int first_task[MV_MAX_OUTS + 1]; /* outs[k] has tasks [first_task[k], first_task[k + 1]) */
} job;

/* y[i * yin + r * yrow] = (w + r * wstride) . (x + i * xstride) for r < R
 * rows and i < B inputs (inlined with R and B constant: the R x B
 * accumulators stay in registers, each row loaded feeds B FMAs and each
 * input R). The order of a sum depends on neither R nor B, so every
 * (row, input) gets the same value in a tile or alone. When `ahead` is
 * not NULL and B > 1, the cols floats there are prefetched meanwhile, a
 * line every other step: the prefetchers, idle while the inputs after the
 * first read a block from cache, would leave the next block's reads
 * waiting (measured on synth:110m: 16 sequences' step 10% shorter). One
 * input streams the rows, and leaves the prefetching to them. */
static inline __attribute__((always_inline)) void
dot_tile(int R, int B, const float *w, size_t wstride, const float *x, size_t xstride, int cols,
         float *y, size_t yrow, size_t yin, const char *ahead)
{
    f32x8 acc[ROWS][INPUTS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int i = 0; i < B; i++)
            acc[r][i] = vec8_splat(0.0f);
    int j = 0;
    for (; j + 8 <= cols; j += 8) {
        if (B > 1 && ahead && j % 16 == 0)
            __builtin_prefetch(ahead + (size_t)j * sizeof(float));
        f32x8 xv[INPUTS];
#pragma GCC unroll 4
        for (int i = 0; i < B; i++)
            xv[i] = vec8_load(x + i * xstride + j);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            f32x8 wv = vec8_load(w + r * wstride + j);
#pragma GCC unroll 4
            for (int i = 0; i < B; i++)
                acc[r][i] = vec8_fma(wv, xv[i], acc[r][i]);
        }
    }
    for (int r = 0; r < R; r++) {
        for (int i = 0; i < B; i++) {
            float sum = vec8_sum(acc[r][i]);
            for (int t = j; t < cols; t++)
                sum += w[r * wstride + t] * x[i * xstride + t];
            y[i * yin + r * yrow] = sum;
        }
    }
}

/* Rows [r0, r1) of an fp32 matrix times B inputs x [B][cols] into
 * y [B][yin], ROWS rows at a time, one from each of ROWS equal slices of
 * the range. Each slice is its own stream of addresses, and the hardware
 * prefetchers keep more reads in flight for a few streams far apart than
 * for adjacent rows (measured on 2 cores: about 20% more bandwidth).
 * Each tile also prefetches one of rows [a0, a1), in turn. */
static inline __attribute__((always_inline)) void multiply_rows(int B, const float *w, int cols,
                                                                int r0, int r1, const float *x,
                                                                float *y, size_t yin, int a0,
                                                                int a1)
{
    size_t n = (size_t)cols;
    int slice = (r1 - r0) / ROWS, a = a0;
    for (int r = r0; r < r0 + slice; r++, a++)
        dot_tile(ROWS, B, w + r * n, slice * n, x, n, cols, y + r, slice, yin,
                 a < a1 ? (const char *)(w + a * n) : NULL);
    for (int r = r0 + ROWS * slice; r < r1; r++, a++)
        dot_tile(1, B, w + r * n, 0, x, n, cols, y + r, 0, yin,
                 a < a1 ? (const char *)(w + a * n) : NULL);
}

/* Rows [r0, r1) of outs[k] times every input, INPUTS inputs at a time,
 * while rows [r1, r2) are prefetched, a share per group of inputs. */
VEC8_INLINE void multiply_f32_body(const job *jb, int k, int r0, int r1, int r2)
{
    const wmat *w = jb->outs[k].w;
    size_t rows = (size_t)w->rows;
    int groups = (jb->b + INPUTS - 1) / INPUTS, share = (r2 - r1 + groups - 1) / groups;
    for (int i = 0, a0 = r1; i < jb->b; i += INPUTS, a0 += share) {
        const float *x = jb->x + (size_t)i * jb->cols;
        float *y = jb->outs[k].y + (size_t)i * rows;
        int a1 = a0 + share < r2 ? a0 + share : r2;
        switch (jb->b - i < INPUTS ? jb->b - i : INPUTS) {
        case 1:
            multiply_rows(1, w->data, jb->cols, r0, r1, x, y, rows, a0, a1);
            break;
        case 2:
            multiply_rows(2, w->data, jb->cols, r0, r1, x, y, rows, a0, a1);
            break;
        case 3:
            multiply_rows(3, w->data, jb->cols, r0, r1, x, y, rows, a0, a1);
            break;
        default:
            multiply_rows(INPUTS, w->data, jb->cols, r0, r1, x, y, rows, a0, a1);
            break;
        }
    }
}

VEC8_PATHS(multiply_f32, (const job *jb, int k, int r0, int r1, int r2), (jb, k, r0, r1, r2))

/* Rows [r0, r1) of a quantized outs[k] times every input in turn. */
static void multiply_quantized(const job *jb, int k, int r0, int r1)
{
    const wmat *w = jb->outs[k].w;
    qb_gemm(w->type, (const char *)w->data + (size_t)r0 * w->row_bytes, w->row_bytes, r1 - r0,
            jb->xact[k], jb->b, jb->cols, jb->outs[k].y + r0, (size_t)w->rows);
}

static void run_task(void *arg, int task)
{
    const job *jb = arg;
    int k = 0;
    while (task >= jb->first_task[k + 1])
        k++;
    int rows = jb->outs[k].w->rows;
    int r0 = (task - jb->first_task[k]) * jb->task_rows[k];
    int r1 = r0 + jb->task_rows[k] < rows ? r0 + jb->task_rows[k] : rows;
    if (jb->outs[k].w->type != WT_F32) {
        multiply_quantized(jb, k, r0, r1);
        return;
    }
    int block = jb->block_rows[k];
    for (int b0 = r0; b0 < r1; b0 += block) {
        int b1 = b0 + block < r1 ? b0 + block : r1;
        int b2 = b1 + block < r1 ? b1 + block : r1;
        multiply_f32(jb, k, b0, b1, b2);
    }
}

/* One slot of scratch per matrix of a group, for a batch of any type. */
size_t mv_scratch_bytes(int cols, int b)
{
    return MV_MAX_OUTS * qb_batch_bytes_max(b, cols);
}

/* The inputs in the activation type of each quantized matrix, quantized
 * once per type: q, k and v of one layer usually share it. */
static void quantize_inputs(job *jb, int n_outs, void *scratch)
{
    for (int k = 0; k < n_outs; k++) {
        uint32_t type = jb->outs[k].w->type;
        jb->xact[k] = NULL;
        if (type == WT_F32)
            continue;
        for (int j = 0; j < k && !jb->xact[k]; j++)
            if (jb->xact[j] && qb_act_type(jb->outs[j].w->type) == qb_act_type(type))
                jb->xact[k] = jb->xact[j];
        if (!jb->xact[k]) {
            char *slot = (char *)scratch + (size_t)k * qb_batch_bytes_max(jb->b, jb->cols);
            qb_quantize_batch(type, jb->x, jb->b, jb->cols, slot);
            jb->xact[k] = slot;
        }
    }
}

void mv_multiply(pool *p, const float *x, int b, int cols, const mv_out *outs, int n_outs,
                 void *scratch)
{
    job jb = {.x = x, .b = b, .cols = cols, .outs = outs};
    quantize_inputs(&jb, n_outs, scratch);
    size_t bytes = 0;
    for (int k = 0; k < n_outs; k++) {
        const wmat *w = outs[k].w;
        int unit = b == 1 ? ROWS : TILE_ROWS;
        int rows = (int)(TASK_BYTES / w->row_bytes) / unit * unit;
        jb.task_rows[k] = rows > unit ? rows : unit;
        /* One input reads a task once: one block, streamed. */
        int block = (int)(BLOCK_BYTES / w->row_bytes) / ROWS * ROWS;
        block = block > ROWS ? block : ROWS;
        jb.block_rows[k] = b == 1 || block > jb.task_rows[k] ? jb.task_rows[k] : block;
        int tasks = (w->rows + jb.task_rows[k] - 1) / jb.task_rows[k];
        jb.first_task[k + 1] = jb.first_task[k] + tasks;
        bytes += (size_t)w->rows * w->row_bytes;
    }
    int tasks = jb.first_task[n_outs];
    if (!p || bytes * (size_t)b < INLINE_BYTES) {
        for (int t = 0; t < tasks; t++)
            run_task(&jb, t);
        return;
    }
    pool_run(p, tasks, run_task, &jb);
}
