/* qblock.c: qblock.h's entry points, dispatched by weight type to the
 * per-type tables of qblock_f.c (F32, F16, BF16), qblock_q.c (Q8_0, Q4_0)
 * and qblock_k.c (Q4_K, Q5_K, Q6_K), those of the kernel path in use
 * (cpu.h). */
#include "qblock.h"

#include <assert.h>

#include "cpu.h"
#include "engine/model/wtype.h"
#include "qblock_int.h"

/* The weight types in the order of each path's row of TABLES. */
static const uint32_t TYPES[] = {WT_F32,  WT_F16,  WT_BF16, WT_Q8_0,
                                 WT_Q4_0, WT_Q4_K, WT_Q5_K, WT_Q6_K};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

#define PATH_ROW(p)                                                                                \
    {                                                                                              \
        &qb_f32_##p, &qb_f16_##p, &qb_bf16_##p, &qb_q8_0_##p, &qb_q4_0_##p, &qb_q4_K_##p,          \
            &qb_q5_K_##p, &qb_q6_K_##p                                                             \
    }

static const qb_type *const TABLES[CPU_NPATHS][NTYPES] = {
    [CPU_SCALAR] = PATH_ROW(scalar), [CPU_AVX2] = PATH_ROW(avx2), [CPU_AVX512] = PATH_ROW(avx512),
    [CPU_VNNI] = PATH_ROW(vnni),     [CPU_AMX] = PATH_ROW(amx),
};

static const qb_type *type_of(uint32_t wtype)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (TYPES[i] == wtype)
            return TABLES[cpu_active()][i];
    return NULL;
}

/* For the functions whose callers must pass a supported type. */
static const qb_type *must_type(uint32_t wtype)
{
    const qb_type *t = type_of(wtype);
    assert(t != NULL);
    return t;
}

void qb_dequant_row(uint32_t type, const void *row, float *out, int64_t n)
{
    must_type(type)->dequant(row, out, n);
}

void qb_dequant_rows(uint32_t type, const void *w, size_t row_bytes, int row0, int nrows, int64_t n,
                     float *out)
{
    const qb_type *t = must_type(type);
    const char *rows = (const char *)w + (size_t)row0 * row_bytes;
    for (int r = 0; r < nrows; r++)
        t->dequant(rows + (size_t)r * row_bytes, out + (size_t)r * (size_t)n, n);
}

uint32_t qb_act_type(uint32_t wtype)
{
    return must_type(wtype)->act;
}

size_t qb_act_bytes(uint32_t wtype, int64_t n)
{
    const qb_type *t = type_of(wtype);
    if (t == NULL || n < 0 || n % t->act_block != 0)
        return 0;
    size_t blocks = (size_t)(n / t->act_block);
    return blocks * (size_t)t->act_block_bytes + blocks / 8 * (size_t)t->act_group_bytes;
}

void qb_quantize_act(uint32_t wtype, const float *x, void *out, int64_t n)
{
    must_type(wtype)->quantize_act(x, out, n);
}

void qb_round_act(uint32_t wtype, const float *x, float *out, int64_t n)
{
    must_type(wtype)->round_act(x, out, n);
}

float qb_dot(uint32_t wtype, const void *wrow, const void *xact, int64_t n)
{
    float y;
    must_type(wtype)->gemv(wrow, 0, 1, xact, n, &y);
    return y;
}

float qb_dot_ref(uint32_t wtype, const void *wrow, const void *xact, int64_t n)
{
    return must_type(wtype)->dot_ref(wrow, xact, n);
}

void qb_gemv(uint32_t wtype, const void *w, size_t row_bytes, int rows, const void *xact, int64_t n,
             float *y)
{
    must_type(wtype)->gemv(w, row_bytes, rows, xact, n, y);
}

/* A batch's activations lie whole cache lines apart, then comes the
 * type's packing of them. */
static size_t batch_stride(uint32_t wtype, int64_t n)
{
    return (qb_act_bytes(wtype, n) + 63) / 64 * 64;
}

size_t qb_batch_bytes(uint32_t wtype, int b, int64_t n)
{
    const qb_type *t = must_type(wtype);
    return (size_t)b * batch_stride(wtype, n) + (t->batch_bytes ? t->batch_bytes(b, n) : 0);
}

size_t qb_batch_bytes_max(int b, int64_t n)
{
    size_t most = 0;
    for (size_t i = 0; i < NTYPES; i++) {
        size_t bytes = qb_batch_bytes(TYPES[i], b, n);
        most = bytes > most ? bytes : most;
    }
    return most;
}

void qb_quantize_batch(uint32_t wtype, const float *x, int b, int64_t n, void *out)
{
    const qb_type *t = must_type(wtype);
    size_t stride = batch_stride(wtype, n);
    for (int i = 0; i < b; i++)
        t->quantize_act(x + (size_t)i * (size_t)n, (char *)out + (size_t)i * stride, n);
    if (t->batch_pack)
        t->batch_pack(out, stride, b, n, (char *)out + (size_t)b * stride);
}

/* Rows qb_gemm's gemv multiplies by every activation in turn: about
 * 32 KiB, read from memory once and from L1/L2 after. One activation
 * takes all the rows in one call, as qb_gemv streams them best. */
#define GEMM_BLOCK_BYTES (32 * 1024)

void qb_gemm(uint32_t wtype, const void *w, size_t row_bytes, int rows, const void *batch, int b,
             int64_t n, float *y, size_t ystride)
{
    const qb_type *t = must_type(wtype);
    size_t stride = batch_stride(wtype, n);
    const char *acts = batch;
    int r0 = t->gemm ? t->gemm(w, row_bytes, rows, acts, stride, acts + (size_t)b * stride, b, n, y,
                               ystride)
                     : 0;
    int block = b == 1 ? rows : (int)(GEMM_BLOCK_BYTES / row_bytes) + 1;
    for (; r0 < rows; r0 += block) {
        int count = rows - r0 < block ? rows - r0 : block;
        for (int i = 0; i < b; i++)
            t->gemv((const char *)w + (size_t)r0 * row_bytes, row_bytes, count,
                    (const char *)batch + (size_t)i * stride, n, y + (size_t)i * ystride + r0);
    }
}

int qb_quantize_row(uint32_t type, const float *x, void *out, int64_t n)
{
    const qb_type *t = type_of(type);
    if (t == NULL || n < 0 || n % wtype_get(type)->block != 0)
        return -1;
    t->quantize(x, out, n);
    return 0;
}
