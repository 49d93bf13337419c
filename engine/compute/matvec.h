/* matvec.h: matrix-vector products of a decode step, over the pool.
 *
 * A decode step multiplies every weight matrix by one vector per sequence
 * decoding, so it is bound by the memory bandwidth of reading the
 * weights: a batch of sequences reads them once for all its vectors.
 * mv_multiply runs up to MV_MAX_OUTS matrices that read the same input (q,
 * k and v; w1 and w3) as one parallel-for, instead of one fork/join per
 * matrix. Matrices come in their file types (weights.h): fp32 ones are
 * read as floats, quantized ones through qblock.h's kernels after x is
 * quantized once to each activation type the group needs.
 */
#ifndef MATVEC_H
#define MATVEC_H

#include "engine/model/weights.h"
#include "pool.h"

#define MV_MAX_OUTS 3

/* y[w->rows] = w x: one matrix of a product. */
typedef struct mv_out {
    const wmat *w;
    float *y;
} mv_out;

/* Bytes of the scratch mv_multiply needs for b inputs of `cols` values. */
size_t mv_scratch_bytes(int cols, int b);

/* Every outs[k].y = x W_k^T for b inputs x [b][cols]: outs[k].y is
 * [b][rows of W_k], row i for input i. The matrices' rows are spread over
 * the pool's threads (run inline when pool is NULL or the work is too
 * small to be worth waking threads for). n_outs is 1 to MV_MAX_OUTS;
 * scratch holds mv_scratch_bytes(cols, b). Each y value is one dot
 * product summed in the same order whatever the thread count and b, so
 * results depend on neither: an input gets in a batch the bits it gets
 * alone. */
void mv_multiply(pool *p, const float *x, int b, int cols, const mv_out *outs, int n_outs,
                 void *scratch);

#endif
