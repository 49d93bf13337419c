/* qgemm.c: prefill products over quantized weights (see qgemm.h). */
#include "qgemm.h"

#include <cblas.h>

#include "engine/model/wtype.h"
#include "qblock.h"

/* Bytes of a dequantized tile. Each sgemm call packs x again, so the
 * fewer calls the better: with 4 MiB a thread's slice of a 110M-class
 * matrix is one call (prefill of Q8_0, Q4_0, Q4_K_M at 55 to 57% of sgemm
 * with 256-row tiles, 59 to 63% with this); the tile stays a few MiB
 * whatever the model. */
#define TILE_BYTES ((size_t)4 << 20)
/* Weight rows of a slice are a multiple of this (sgemm's register
 * blocking works on 16 at a time). */
#define SLICE_ALIGN 16

/* Rows of a tile for a matrix of `cols` columns. */
static int tile_rows(int cols)
{
    size_t rows = TILE_BYTES / ((size_t)cols * sizeof(float)) / SLICE_ALIGN * SLICE_ALIGN;
    return rows > SLICE_ALIGN ? (int)rows : SLICE_ALIGN;
}

size_t qg_scratch_floats(const wmat *w, int n, int workers)
{
    if (w->type == WT_F32)
        return 0;
    return (size_t)n * (size_t)w->cols + (size_t)workers * tile_rows(w->cols) * (size_t)w->cols;
}

/* The product spread over the pool as one task a worker, each with a
 * tile of scratch: pool_run gives a task no worker id, but with as many
 * tasks as workers each task index is a tile no other task uses at the
 * same time. OpenBLAS runs single-threaded inside the tasks (fwd_create
 * sets it): a second set of threads spinning between its calls would
 * fight the pool's for the same cores (measured: a quarter of a prefill's
 * cycles went to their sched_yield).
 *
 * A job is a group of matrices that take the same input (q, k and v; w1
 * and w3) in the same form: their rows are split among the tasks as one
 * range, so that each sgemm call is as wide as it can be and packs x as
 * few times as it can. */
typedef struct qg_job {
    const mv_out *outs; /* all fp32, or all of one activation type */
    int n_outs, rows;   /* rows: of all of them */
    const float *x;     /* [n][cols] */
    int n, cols, tasks;
    float *xr;    /* quantized types: x as the decode kernels see it */
    float *tiles; /* [tasks][tile_rows(cols) * cols] */
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
    int lo, hi;
    share_of(j->n, j->tasks, t, 1, &lo, &hi);
    for (int i = lo; i < hi; i++)
        qb_round_act(j->outs[0].w->type, j->x + (size_t)i * j->cols, j->xr + (size_t)i * j->cols,
                     j->cols);
}

/* Rows [lo, hi) of one matrix: fp32 weights straight to sgemm, quantized
 * ones a tile at a time through `tile`. */
static void multiply_rows(const qg_job *j, const mv_out *o, int lo, int hi, float *tile)
{
    const wmat *w = o->w;
    if (w->type == WT_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, hi - lo, j->cols, 1.0f, j->x,
                    j->cols, (const float *)w->data + (size_t)lo * j->cols, j->cols, 0.0f,
                    o->y + lo, w->rows);
        return;
    }
    int step = tile_rows(j->cols);
    for (int r0 = lo; r0 < hi; r0 += step) {
        int rows = hi - r0 < step ? hi - r0 : step;
        qb_dequant_rows(w->type, w->data, w->row_bytes, r0, rows, j->cols, tile);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, rows, j->cols, 1.0f, j->xr,
                    j->cols, tile, j->cols, 0.0f, o->y + r0, w->rows);
    }
}

/* Task t's share of the group's rows, matrix by matrix. */
static void multiply_task(void *arg, int t)
{
    const qg_job *j = arg;
    float *tile = j->tiles + (size_t)t * tile_rows(j->cols) * j->cols;
    int lo, hi;
    share_of(j->rows, j->tasks, t, SLICE_ALIGN, &lo, &hi);
    for (int k = 0, base = 0; k < j->n_outs && base < hi; base += j->outs[k++].w->rows) {
        int a = lo > base ? lo - base : 0;
        int b = hi - base < j->outs[k].w->rows ? hi - base : j->outs[k].w->rows;
        if (a < b)
            multiply_rows(j, &j->outs[k], a, b, tile);
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

/* The form a matrix takes its input in: fp32 as it is, else rounded to
 * its activation type. */
static uint32_t input_form(const wmat *w)
{
    return w->type == WT_F32 ? UINT32_MAX : qb_act_type(w->type);
}

void qg_multiply(pool *p, const float *x, int n, int cols, const mv_out *outs, int n_outs,
                 float *scratch)
{
    int tasks = p ? pool_threads(p) : 1;
    for (int k = 0; k < n_outs;) {
        qg_job j = {.outs = &outs[k], .x = x, .n = n, .cols = cols, .tasks = tasks};
        uint32_t form = input_form(outs[k].w);
        for (; k < n_outs && input_form(outs[k].w) == form; k++) {
            j.rows += outs[k].w->rows;
            j.n_outs++;
        }
        if (form != UINT32_MAX) {
            j.xr = scratch;
            j.tiles = scratch + (size_t)n * cols;
            run(p, tasks, round_task, &j);
        }
        run(p, tasks, multiply_task, &j);
    }
}
