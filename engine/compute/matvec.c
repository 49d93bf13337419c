/* matvec.c: matrix-vector products of a decode step (see matvec.h).
 *
 * Every weight is read once and used for one FMA, so the kernel's job is
 * to keep memory busy: the matrices are cut into tasks of a few rows
 * (about TASK_BYTES of weights each) that threads claim as they go, so a
 * thread slowed by another process does not hold the others back; within
 * a task, ROWS rows are read at once against x, which stays in L1.
 */
#include "matvec.h"

#include "engine/model/wtype.h"
#include "qblock.h"
#include "vec8.h"

#define ROWS 4
/* Big enough that a task's four slices (multiply_rows, qb_gemv) lie far
 * enough apart for the prefetchers to stream them, small enough that a
 * 768-wide matrix still makes several tasks to balance. Measured on 2
 * cores, synth:110m decode: F16 at 80% of the bandwidth limit with 64 KiB
 * tasks, 95% with 256 KiB, less again with 1 MiB (the tail of a run). */
#define TASK_BYTES (256 * 1024)
/* Below this, waking the pool's threads costs more than the reading. */
#define INLINE_BYTES (256 * 1024)

typedef struct job {
    const float *x;
    int cols;
    const mv_out *outs;
    const void *xact[MV_MAX_OUTS];   /* x quantized for outs[k] (quantized types only) */
    int task_rows[MV_MAX_OUTS];
    int first_task[MV_MAX_OUTS + 1]; /* outs[k] has tasks [first_task[k], first_task[k + 1]) */
} job;

/* y[r * ystride] = w[r * wstride] . x for r < R (inlined with R constant,
 * the R accumulators stay in registers). The order of a row's sum does
 * not depend on R, so a row gets the same value in a group or alone. */
static inline __attribute__((always_inline)) void
dot_rows(int R, const float *w, size_t wstride, const float *x, int cols, float *y, size_t ystride)
{
    f32x8 acc[ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        acc[r] = vec8_splat(0.0f);
    int j = 0;
    for (; j + 8 <= cols; j += 8) {
        f32x8 xv = vec8_load(x + j);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r] = vec8_fma(vec8_load(w + r * wstride + j), xv, acc[r]);
    }
    for (int r = 0; r < R; r++) {
        float sum = vec8_sum(acc[r]);
        for (int t = j; t < cols; t++)
            sum += w[r * wstride + t] * x[t];
        y[r * ystride] = sum;
    }
}

/* Rows [r0, r1) of one matrix, ROWS at a time, one from each of ROWS
 * equal slices of the range. Each slice is its own stream of addresses,
 * and the hardware prefetchers keep more reads in flight for a few
 * streams far apart than for adjacent rows (measured on 2 cores: about
 * 20% more bandwidth). */
static void multiply_rows(const job *jb, const mv_out *o, int r0, int r1)
{
    size_t cols = (size_t)jb->cols;
    const float *w = o->w->data;
    int slice = (r1 - r0) / ROWS;
    for (int r = r0; r < r0 + slice; r++)
        dot_rows(ROWS, w + r * cols, slice * cols, jb->x, jb->cols, o->y + r, slice);
    for (int r = r0 + ROWS * slice; r < r1; r++)
        dot_rows(1, w + r * cols, 0, jb->x, jb->cols, o->y + r, 0);
}

static void run_task(void *arg, int task)
{
    const job *jb = arg;
    int k = 0;
    while (task >= jb->first_task[k + 1])
        k++;
    const mv_out *o = &jb->outs[k];
    const wmat *w = o->w;
    int r0 = (task - jb->first_task[k]) * jb->task_rows[k];
    int r1 = r0 + jb->task_rows[k] < w->rows ? r0 + jb->task_rows[k] : w->rows;
    if (w->type == WT_F32)
        multiply_rows(jb, o, r0, r1);
    else
        qb_gemv(w->type, (const char *)w->data + (size_t)r0 * w->row_bytes, w->row_bytes, r1 - r0,
                jb->xact[k], jb->cols, o->y + r0);
}

/* One slot of scratch per matrix of a group: no activation type takes
 * more than 4 bytes a value. */
static size_t act_slot_bytes(int cols)
{
    return (size_t)cols * sizeof(float) + 64;
}

size_t mv_scratch_bytes(int cols)
{
    return MV_MAX_OUTS * act_slot_bytes(cols);
}

/* x in the activation type of each quantized matrix, quantized once per
 * type: q, k and v of one layer usually share it. */
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
            void *slot = (char *)scratch + (size_t)k * act_slot_bytes(jb->cols);
            qb_quantize_act(type, jb->x, slot, jb->cols);
            jb->xact[k] = slot;
        }
    }
}

void mv_multiply(pool *p, const float *x, int cols, const mv_out *outs, int n_outs, void *scratch)
{
    job jb = {.x = x, .cols = cols, .outs = outs};
    quantize_inputs(&jb, n_outs, scratch);
    size_t bytes = 0;
    for (int k = 0; k < n_outs; k++) {
        const wmat *w = outs[k].w;
        int rows = (int)(TASK_BYTES / w->row_bytes) / ROWS * ROWS;
        jb.task_rows[k] = rows > ROWS ? rows : ROWS;
        int tasks = (w->rows + jb.task_rows[k] - 1) / jb.task_rows[k];
        jb.first_task[k + 1] = jb.first_task[k] + tasks;
        bytes += (size_t)w->rows * w->row_bytes;
    }
    int tasks = jb.first_task[n_outs];
    if (!p || bytes < INLINE_BYTES) {
        for (int t = 0; t < tasks; t++)
            run_task(&jb, t);
        return;
    }
    pool_run(p, tasks, run_task, &jb);
}
