/* qgemm.h: a chunk of positions times one weight matrix, for prefill.
 *
 * y[n][w->rows] = x[n][cols] W^T, each of the pool's threads computing a
 * slice of the weight rows with single-threaded sgemm. fp32 weights go
 * straight to sgemm.
 * Quantized ones are dequantized a tile of rows at a time into scratch
 * and multiplied by sgemm, after x is rounded the way the decode kernels
 * (qblock.h) quantize their input: the products are then those of the
 * integer kernels up to float summation order, so a prompt gives the same
 * logits whether it is prefilled in chunks or fed a token at a time, and
 * the same as llama.cpp's for the same file.
 */
#ifndef QGEMM_H
#define QGEMM_H

#include <stddef.h>

#include "engine/model/weights.h"
#include "matvec.h"
#include "pool.h"

/* Floats of scratch qg_multiply needs for w, up to n positions and a pool
 * of `workers` threads. */
size_t qg_scratch_floats(const wmat *w, int n, int workers);

/* outs[k].y[n][rows_k] = x[n][cols] W_k^T for each k: the matrices that
 * take the same input (q, k, v) in one call, so that x is rounded once. */
void qg_multiply(pool *p, const float *x, int n, int cols, const mv_out *outs, int n_outs,
                 float *scratch);

#endif
