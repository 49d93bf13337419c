/* qblock.h: arithmetic on weight rows in their file types (wtype.h).
 *
 * A matrix-vector product follows llama.cpp's CPU arithmetic so that a
 * model's logits match llama.cpp's for the same file: the activation vector
 * is first quantized to the weight type's "activation type" (ggml's
 * vec_dot_type: F32 for F32, F16 for F16, BF16 for BF16, Q8_0 blocks for
 * Q8_0 and Q4_0, Q8_K blocks for Q4_K, Q5_K and Q6_K), then each weight row
 * is dotted with it block by block: integer products within a block, times
 * the blocks' scales. Quantization formulas are llama.cpp's, rounding
 * included; only the order of the float sums differs.
 *
 * Every function takes a type that wtype_get() knows and a row length n
 * that is a multiple of the type's block (and of the activation type's:
 * 256 for the K types); anything else is a caller bug, except where a
 * function returns a status. Rows and activations need the alignment of
 * their scalars only (4 bytes serves every type; GGUF data and malloc give
 * more). Nothing here starts threads: callers split rows over their own.
 */
#ifndef QBLOCK_H
#define QBLOCK_H

#include <stddef.h>
#include <stdint.h>

/* The activation type of K-quant weights: ggml's Q8_K (id 15), blocks of
 * 256 values with an f32 scale, int8 values and int16 sums of 16. It is
 * never a weight type, so wtype.h does not list it. */
#define QB_Q8_K 15u

/* n values of one row, to floats. */
void qb_dequant_row(uint32_t type, const void *row, float *out, int64_t n);

/* Rows row0 .. row0 + nrows - 1 of the matrix w (rows of n values,
 * row_bytes apart) to floats, out[nrows][n]: a tile for sgemm. */
void qb_dequant_rows(uint32_t type, const void *w, size_t row_bytes, int row0, int nrows, int64_t n,
                     float *out);

/* The activation type of weight type wtype (a ggml type id). Weight types
 * with the same activation type take the same quantized activation. */
uint32_t qb_act_type(uint32_t wtype);

/* Bytes of n activation values quantized for weight type wtype. An
 * activation is ggml's blocks of its type followed by a copy of the values
 * rearranged for the vector kernels: only the functions below read it. */
size_t qb_act_bytes(uint32_t wtype, int64_t n);

/* x[n] quantized to wtype's activation type, into out
 * (qb_act_bytes(wtype, n) bytes). */
void qb_quantize_act(uint32_t wtype, const float *x, void *out, int64_t n);

/* x[n] as the decode kernels see it, in floats: quantized to wtype's
 * activation type and back, bit for bit, in one pass (prefill's input to
 * sgemm: no packed blocks, which only the integer kernels read). */
void qb_round_act(uint32_t wtype, const float *x, float *out, int64_t n);

/* One weight row dotted with one quantized activation. */
float qb_dot(uint32_t wtype, const void *wrow, const void *xact, int64_t n);

/* The same in portable scalar C: the definition the vector code is tested
 * against (it may differ from qb_dot by float rounding only). */
float qb_dot_ref(uint32_t wtype, const void *wrow, const void *xact, int64_t n);

/* y[r] = row r of w (rows of n values, row_bytes apart) dotted with xact,
 * for r < rows: the decode hot path. */
void qb_gemv(uint32_t wtype, const void *w, size_t row_bytes, int rows, const void *xact, int64_t n,
             float *y);

/* A batch of b activations for qb_gemm: qb_batch_bytes(wtype, b, n)
 * bytes, which qb_quantize_batch fills from x [b][n]. Weight types with
 * the same activation type take the same batch. qb_batch_bytes_max bounds
 * it for every type. */
size_t qb_batch_bytes(uint32_t wtype, int b, int64_t n);
size_t qb_batch_bytes_max(int b, int64_t n);
void qb_quantize_batch(uint32_t wtype, const float *x, int b, int64_t n, void *out);

/* y[i * ystride + r] = row r of w dotted with activation i of the batch,
 * for r < rows and i < b: each bit for bit what qb_gemv gives for that
 * row and activation alone, whatever rows and b are (the decode of many
 * sequences at once), each row read from memory once. With AMX, Q8_0
 * multiplies tiles of 16 rows by 16 activations (rows of whole groups of
 * 256 values, batches of 3 or more); the rest goes through qb_gemv once
 * per activation, a cache-sized block of rows at a time. */
void qb_gemm(uint32_t wtype, const void *w, size_t row_bytes, int rows, const void *batch, int b,
             int64_t n, float *y, size_t ystride);

/* x[n] quantized to a row of weight type `type` (for `inferd quantize`):
 * byte for byte what llama-quantize writes without an importance matrix
 * (ggml's reference quantizers). 0, or -1 when the type is not supported
 * or n is not a multiple of its block (out untouched). */
int qb_quantize_row(uint32_t type, const float *x, void *out, int64_t n);

#endif
