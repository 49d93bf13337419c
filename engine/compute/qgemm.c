/* qgemm.c: prefill products over quantized weights (see qgemm.h). */
#include "qgemm.h"

#include <cblas.h>

#include "engine/model/wtype.h"
#include "qblock.h"
#include "qblock_int.h"

/* Rows of a dequantized tile: big enough for sgemm to run at full speed,
 * small enough that the tile stays a few MB whatever the matrix. */
#define TILE_ROWS 256
/* Rows dequantized by one task of the pool. */
#define TILE_TASK 16

/* Bytes of one row's quantized activations: 4 a value covers every type. */
static size_t act_bytes_max(int cols)
{
    return (size_t)cols * sizeof(float) + 64;
}

size_t qg_scratch_floats(const wmat *w, int n)
{
    if (w->type == WT_F32)
        return 0;
    size_t tile = (size_t)TILE_ROWS * (size_t)w->cols;
    size_t xr = (size_t)n * (size_t)w->cols;
    return tile + xr + act_bytes_max(w->cols) / sizeof(float) + 1;
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

/* Every row of x as the decode kernels would see it. */
static void round_inputs(uint32_t wtype, const float *x, int n, int cols, float *xr, void *tmp)
{
    uint32_t act = qb_act_type(wtype);
    for (int i = 0; i < n; i++) {
        qb_quantize_act(wtype, x + (size_t)i * cols, tmp, cols);
        act_to_float(act, tmp, xr + (size_t)i * cols, cols);
    }
}

typedef struct tile_job {
    const wmat *w;
    int row0, rows;
    float *out;
} tile_job;

static void dequant_task(void *arg, int i)
{
    const tile_job *j = arg;
    int r0 = i * TILE_TASK;
    int nr = j->rows - r0 < TILE_TASK ? j->rows - r0 : TILE_TASK;
    qb_dequant_rows(j->w->type, j->w->data, j->w->row_bytes, j->row0 + r0, nr, j->w->cols,
                    j->out + (size_t)r0 * j->w->cols);
}

void qg_multiply(pool *p, const wmat *w, const float *x, int n, float *y, float *scratch)
{
    int cols = w->cols;
    if (w->type == WT_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, w->rows, cols, 1.0f, x, cols,
                    w->data, cols, 0.0f, y, w->rows);
        return;
    }
    float *tile = scratch;
    float *xr = tile + (size_t)TILE_ROWS * cols;
    void *tmp = xr + (size_t)n * cols;
    round_inputs(w->type, x, n, cols, xr, tmp);
    for (int r0 = 0; r0 < w->rows; r0 += TILE_ROWS) {
        tile_job j = {w, r0, w->rows - r0 < TILE_ROWS ? w->rows - r0 : TILE_ROWS, tile};
        int tasks = (j.rows + TILE_TASK - 1) / TILE_TASK;
        if (p)
            pool_run(p, tasks, dequant_task, &j);
        else
            for (int t = 0; t < tasks; t++)
                dequant_task(&j, t);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, j.rows, cols, 1.0f, xr, cols, tile,
                    cols, 0.0f, y + r0, w->rows);
    }
}
