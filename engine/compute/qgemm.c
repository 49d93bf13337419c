/* qgemm.c: prefill products over quantized weights (see qgemm.h). */
#include "qgemm.h"

#include <cblas.h>

#include "engine/model/wtype.h"
#include "qblock.h"
#include "qblock_int.h"

/* Rows of a dequantized tile: big enough for sgemm to run at full speed,
 * small enough that the tile stays a few MB whatever the matrix. */
#define TILE_ROWS 256
/* Weight rows of a slice are a multiple of this (sgemm's register
 * blocking works on 16 at a time). */
#define SLICE_ALIGN 16

/* Bytes of one row's quantized activations: 4 a value covers every type. */
static size_t act_bytes_max(int cols)
{
    return (size_t)cols * sizeof(float) + 64;
}

/* One slot a worker: a tile and the quantized activations of one row. */
static size_t slot_floats(int cols)
{
    return (size_t)TILE_ROWS * (size_t)cols + act_bytes_max(cols) / sizeof(float) + 1;
}

size_t qg_scratch_floats(const wmat *w, int n, int workers)
{
    if (w->type == WT_F32)
        return 0;
    return (size_t)n * (size_t)w->cols + (size_t)workers * slot_floats(w->cols);
}

/* The values a quantized activation stands for, back in floats. */
static void act_to_float(uint32_t act, const void *q, float *out, int cols)
{
    if (act == QB_Q8_K) {
        const blk_q8_K *b = q;
        for (int i = 0; i < cols / QK_K; i++)
            for (int j = 0; j < QK_K; j++)
                out[i * QK_K + j] = b[i].d * (float)b[i].qs[j];
        return;
    }
    qb_dequant_row(act, q, out, cols);
}

/* The product spread over the pool as one task a worker, each with a
 * slot of scratch: pool_run gives a task no worker id, but with as many
 * tasks as workers each task index is a slot no other task uses at the
 * same time. OpenBLAS runs single-threaded inside the tasks (fwd_create
 * sets it): a second set of threads spinning between its calls would
 * fight the pool's for the same cores (measured: a quarter of a prefill's
 * cycles went to their sched_yield). */
typedef struct qg_job {
    const wmat *w;
    const float *x; /* [n][cols] */
    int n, tasks;
    float *xr;      /* quantized types: x as the decode kernels see it */
    float *slots;   /* [tasks][slot_floats] */
    float *y;       /* [n][w->rows] */
} qg_job;

/* [*lo, *hi) of a range of `count` split `parts` ways, aligned to align. */
static void share_of(int count, int parts, int part, int align, int *lo, int *hi)
{
    int per = ((count + parts - 1) / parts + align - 1) / align * align;
    *lo = part * per < count ? part * per : count;
    *hi = *lo + per < count ? *lo + per : count;
}

/* Task t's rows of x rounded the way the decode kernels quantize their
 * input, so that the products are those of the integer kernels up to
 * float summation order. */
static void round_task(void *arg, int t)
{
    const qg_job *j = arg;
    int cols = j->w->cols, lo, hi;
    void *tmp = j->slots + (size_t)t * slot_floats(cols) + (size_t)TILE_ROWS * cols;
    uint32_t act = qb_act_type(j->w->type);
    share_of(j->n, j->tasks, t, 1, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        qb_quantize_act(j->w->type, j->x + (size_t)i * cols, tmp, cols);
        act_to_float(act, tmp, j->xr + (size_t)i * cols, cols);
    }
}

/* Task t's slice of the weight rows: fp32 weights straight to sgemm,
 * quantized ones a tile at a time through the task's slot. */
static void multiply_task(void *arg, int t)
{
    const qg_job *j = arg;
    const wmat *w = j->w;
    int cols = w->cols, lo, hi;
    share_of(w->rows, j->tasks, t, SLICE_ALIGN, &lo, &hi);
    if (w->type == WT_F32) {
        if (hi > lo)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, hi - lo, cols, 1.0f, j->x,
                        cols, (const float *)w->data + (size_t)lo * cols, cols, 0.0f, j->y + lo,
                        w->rows);
        return;
    }
    float *tile = j->slots + (size_t)t * slot_floats(cols);
    for (int r0 = lo; r0 < hi; r0 += TILE_ROWS) {
        int rows = hi - r0 < TILE_ROWS ? hi - r0 : TILE_ROWS;
        qb_dequant_rows(w->type, w->data, w->row_bytes, r0, rows, cols, tile);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, rows, cols, 1.0f, j->xr, cols,
                    tile, cols, 0.0f, j->y + r0, w->rows);
    }
}

/* Runs fn over the pool, one task a worker (inline without a pool). */
static void run(pool *p, int tasks, pool_fn fn, qg_job *j)
{
    if (p)
        pool_run(p, tasks, fn, j);
    else
        fn(j, 0);
}

void qg_multiply(pool *p, const float *x, int n, int cols, const mv_out *outs, int n_outs,
                 float *scratch)
{
    int tasks = p ? pool_threads(p) : 1;
    uint32_t rounded = 0; /* the activation type xr holds, 0: none yet */
    for (int k = 0; k < n_outs; k++) {
        const wmat *w = outs[k].w;
        qg_job j = {.w = w, .x = x, .n = n, .tasks = tasks, .y = outs[k].y};
        if (w->type != WT_F32) {
            j.xr = scratch;
            j.slots = scratch + (size_t)n * cols;
            /* q, k and v (w1 and w3) usually share the rounding: once. */
            if (qb_act_type(w->type) != rounded) {
                run(p, tasks, round_task, &j);
                rounded = qb_act_type(w->type);
            }
        }
        run(p, tasks, multiply_task, &j);
    }
}
