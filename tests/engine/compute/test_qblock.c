/* test_qblock.c: the weight-block arithmetic against hand-computed blocks,
 * its own scalar reference, and llama.cpp's files (tests/fixtures/gguf,
 * see tests/fixtures/README.md).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compute/qblock.h"
#include "engine/compute/qblock_int.h"
#include "engine/compute/qgemm.h"
#include "engine/model/gguf.h"
#include "engine/model/wtype.h"
#include "paths.h"

static const uint32_t TYPES[] = {WT_F32,  WT_F16,  WT_BF16, WT_Q8_0,
                                 WT_Q4_0, WT_Q4_K, WT_Q5_K, WT_Q6_K};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

/* ---- deterministic data ---- */

static uint64_t rng_state = 88172645463325252ull;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* Standard normal (Box-Muller). */
static float gauss(void)
{
    double u = (rnd() + 1.0) / 4294967297.0, v = rnd() / 4294967296.0;
    return (float)(sqrt(-2 * log(u)) * cos(2 * M_PI * v));
}

static float *gauss_vec(int64_t n, float sigma)
{
    float *x = malloc((size_t)n * sizeof *x);
    cr_assert_not_null(x);
    for (int64_t i = 0; i < n; i++)
        x[i] = sigma * gauss();
    return x;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    cr_assert_not_null(p);
    return p;
}

/* A row of weights quantized to `type`. */
static void *quantized(uint32_t type, const float *x, int64_t n)
{
    void *row = xmalloc(wtype_row_bytes(type, (uint64_t)n));
    cr_assert_eq(qb_quantize_row(type, x, row, n), 0, "quantize %s", wtype_name(type));
    return row;
}

static void *act(uint32_t type, const float *x, int64_t n)
{
    void *a = xmalloc(qb_act_bytes(type, n));
    qb_quantize_act(type, x, a, n);
    return a;
}

/* |a - b| small against the sum of |w_i x_i|, the size float rounding of
 * any summation order is proportional to. */
static void assert_close(float a, float b, double mag, const char *what)
{
    cr_assert(fabs((double)a - b) <= 1e-5 * mag + 1e-30, "%s: %.9g vs %.9g (scale %.3g)", what, a,
              b, mag);
}

/* The activation types are weight types too, but for Q8_K: its dequant
 * is only needed here. */
static void dequant_act(uint32_t wtype, const void *xa, float *out, int64_t n)
{
    if (qb_act_type(wtype) != QB_Q8_K) {
        qb_dequant_row(qb_act_type(wtype), xa, out, n);
        return;
    }
    const blk_q8_K *b = xa;
    for (int64_t i = 0; i < n; i++)
        out[i] = b[i / QK_K].d * b[i / QK_K].qs[i % QK_K];
}

static double abs_dot(uint32_t type, const void *w, const void *xa, int64_t n)
{
    float *dw = xmalloc((size_t)n * sizeof *dw), *dx = xmalloc((size_t)n * sizeof *dx);
    qb_dequant_row(type, w, dw, n);
    dequant_act(type, xa, dx, n);
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += fabs((double)dw[i] * dx[i]);
    free(dw);
    free(dx);
    return s;
}

/* ---- half floats ---- */

Test(qblock, half_float_rounding)
{
    struct {
        float f;
        uint16_t h;
    } cases[] = {
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},
        {65519.0f, 0x7bff},
        {65520.0f, 0x7c00},
        {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000},
        {0x3p-25f, 0x0002},
        {0x1p-14f, 0x0400},
        {1.0f + 0x1p-11f, 0x3c00},
        {1.0f + 0x3p-11f, 0x3c02},
        {0.0f, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(qb_f2h(cases[i].f), cases[i].h, "f2h(%a) = %#x, expected %#x", cases[i].f,
                     qb_f2h(cases[i].f), cases[i].h);
        if (cases[i].h != 0x7c00 && cases[i].f == qb_h2f(cases[i].h))
            cr_assert_eq(qb_f2h(qb_h2f(cases[i].h)), cases[i].h);
    }
    cr_assert_eq(qb_h2f(0x0001), 0x1p-24f);
    cr_assert_eq(qb_h2f(0x7bff), 65504.0f);
    /* bf16: ties to even, NaN stays NaN. */
    cr_assert_eq(qb_f2bf(1.0f + 0x1p-8f), 0x3f80);
    cr_assert_eq(qb_f2bf(1.0f + 0x3p-8f), 0x3f82);
    cr_assert_eq(qb_f2bf(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    cr_assert(isnan(qb_bf2f(qb_f2bf(NAN))));
}

/* ---- hand-computed blocks ---- */

/* A block with amax 63.5, so d = 0.5 exactly and values x / d = 1.5 k hit
 * halves: the weight quantizer rounds them away from zero, the activation
 * quantizer (x86 llama.cpp) to even. */
static void q8_0_block_input(float *x)
{
    for (int j = 0; j < 31; j++)
        x[j] = (float)(j - 16) * 0.75f;
    x[31] = 63.5f;
}

Test(qblock, q8_0_weight_block_by_hand)
{
    static const int8_t expect[32] = {-24, -23, -21, -20, -18, -17, -15, -14, -12, -11, -9,
                                      -8,  -6,  -5,  -3,  -2,  0,   2,   3,   5,   6,   8,
                                      9,   11,  12,  14,  15,  17,  18,  20,  21,  127};
    float x[32];
    q8_0_block_input(x);
    blk_q8_0 b;
    cr_assert_eq(qb_quantize_row(WT_Q8_0, x, &b, 32), 0);
    cr_assert_eq(b.d, 0x3800, "d = %#x, expected fp16 0.5", b.d);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(b.qs[j], expect[j], "qs[%d] = %d, expected %d", j, b.qs[j], expect[j]);
}

PATHS_TEST(qblock, q8_0_activation_block_by_hand)
{
    static const int8_t expect[32] = {-24, -22, -21, -20, -18, -16, -15, -14, -12, -10, -9,
                                      -8,  -6,  -4,  -3,  -2,  0,   2,   3,   4,   6,   8,
                                      9,   10,  12,  14,  15,  16,  18,  20,  21,  127};
    float x[32];
    q8_0_block_input(x);
    blk_q8_0 b;
    qb_quantize_act(WT_Q4_0, x, &b, 32);
    cr_assert_eq(b.d, 0x3800);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(b.qs[j], expect[j], "qs[%d] = %d, expected %d", j, b.qs[j], expect[j]);
}

/* Largest magnitude +4 first (ties keep the first), so d = 4 / -8 = -0.5:
 * +4 maps to 0, -4 to 16, clamped to 15; x / d + 8.5 is truncated. */
Test(qblock, q4_0_block_by_hand)
{
    float x[32] = {4.0f, -4.0f, 1.0f, -1.0f, 0.25f, -0.25f, 0.3f, 3.9f};
    static const uint8_t expect[32] = {0, 15, 6, 10, 8, 9, 7, 0};
    for (int j = 8; j < 32; j++)
        x[j] = j < 16 ? 0.0f : -2.0f; /* -2 / -0.5 = 4: 12 */
    blk_q4_0 b;
    cr_assert_eq(qb_quantize_row(WT_Q4_0, x, &b, 32), 0);
    cr_assert_eq(b.d, 0xb800, "d = %#x, expected fp16 -0.5", b.d);
    for (int j = 0; j < 32; j++) {
        int q = j < 16 ? b.qs[j] & 0xF : b.qs[j - 16] >> 4;
        int e = j < 8 ? expect[j] : j < 16 ? 8 : 12;
        cr_assert_eq(q, e, "value %d: %d, expected %d", j, q, e);
    }
    float back[32];
    qb_dequant_row(WT_Q4_0, &b, back, 32);
    cr_assert_eq(back[0], 4.0f);
    cr_assert_eq(back[1], -3.5f);
    cr_assert_eq(back[16], -2.0f);
}

Test(qblock, q8_K_activation_sums)
{
    const int64_t n = 1024;
    float *x = gauss_vec(n, 3.0f);
    x[700] = -20.0f; /* block 2's largest magnitude, negative */
    blk_q8_K *b = act(WT_Q4_K, x, n);
    for (int64_t k = 0; k < n / QK_K; k++) {
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int j = 0; j < 16; j++)
                s += b[k].qs[16 * g + j];
            cr_assert_eq(b[k].bsums[g], s, "block %ld group %d", (long)k, g);
        }
        for (int j = 0; j < QK_K; j++) {
            cr_assert(b[k].qs[j] >= -127, "block %ld value %d", (long)k, j);
            cr_assert(fabsf(b[k].d * b[k].qs[j] - x[k * QK_K + j]) <= fabsf(b[k].d) * 0.5001f);
        }
    }
    cr_assert_eq(b[2].qs[700 - 512], -127);
    cr_assert(b[2].d > 0);
    free(x);
    free(b);
    /* An all-zero block has zero scale and sums. */
    float z[QK_K] = {0};
    blk_q8_K *zb = xmalloc(qb_act_bytes(WT_Q6_K, QK_K));
    memset(zb, 0x55, qb_act_bytes(WT_Q6_K, QK_K));
    qb_quantize_act(WT_Q6_K, z, zb, QK_K);
    cr_assert(zb->d == 0 && zb->bsums[0] == 0 && zb->qs[5] == 0);
    free(zb);
}

/* ---- the API's small contracts ---- */

Test(qblock, activation_types_and_sizes)
{
    cr_assert_eq(qb_act_type(WT_F32), WT_F32);
    cr_assert_eq(qb_act_type(WT_F16), WT_F16);
    cr_assert_eq(qb_act_type(WT_BF16), WT_BF16);
    cr_assert_eq(qb_act_type(WT_Q8_0), WT_Q8_0);
    cr_assert_eq(qb_act_type(WT_Q4_0), WT_Q8_0);
    cr_assert_eq(qb_act_type(WT_Q4_K), QB_Q8_K);
    cr_assert_eq(qb_act_type(WT_Q6_K), QB_Q8_K);
    cr_assert_eq(qb_act_bytes(WT_F32, 7), 28);
    cr_assert_eq(qb_act_bytes(WT_BF16, 7), 14);
    /* Blocks, then the kernels' copy: per 8 Q8_0 blocks, per Q8_K block. */
    cr_assert_eq(qb_act_bytes(WT_Q4_0, 64), 2 * 34);
    cr_assert_eq(qb_act_bytes(WT_Q8_0, 288), 9 * 34 + 416);
    cr_assert_eq(qb_act_bytes(WT_Q5_K, 512), 2 * (292 + 288)); /* 256 values, 8 int32 sums */
    cr_assert_eq(qb_act_bytes(WT_Q5_K, 128), 0);
    cr_assert_eq(qb_act_bytes(3, 64), 0); /* Q4_1: not supported */
}

Test(qblock, quantize_rejects_bad_requests)
{
    float x[256] = {0};
    uint8_t out[512];
    memset(out, 0xAA, sizeof out);
    cr_assert_eq(qb_quantize_row(3, x, out, 32), -1);
    cr_assert_eq(qb_quantize_row(WT_Q8_0, x, out, 48), -1);
    cr_assert_eq(qb_quantize_row(WT_Q6_K, x, out, 128), -1);
    cr_assert_eq(out[0], 0xAA);
    cr_assert_eq(qb_quantize_row(WT_F16, x, out, 3), 0);
}

/* ---- vector code against the scalar reference ---- */

/* Weight blocks of random bytes (every nibble and bit pattern, Q8_0's
 * -128 included) with sane scales. */
static void *random_blocks(uint32_t type, int64_t n)
{
    size_t bytes = wtype_row_bytes(type, (uint64_t)n);
    uint8_t *p = xmalloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        p[i] = (uint8_t)rnd();
    const wtype_info *t = wtype_get(type);
    for (int64_t b = 0; b < n / t->block; b++) {
        uint8_t *blk = p + b * t->block_bytes;
        uint16_t d = qb_f2h(0.01f + (float)(rnd() % 1000) * 1e-4f);
        uint16_t dmin = qb_f2h((float)(rnd() % 1000) * 1e-4f);
        if (type == WT_Q6_K) {
            memcpy(blk + t->block_bytes - 2, &d, 2);
        } else {
            memcpy(blk, &d, 2);
            if (type == WT_Q4_K || type == WT_Q5_K)
                memcpy(blk + 2, &dmin, 2);
        }
    }
    return p;
}

static void check_dot(uint32_t type, const void *w, const float *x, int64_t n)
{
    void *xa = act(type, x, n);
    char what[64];
    snprintf(what, sizeof what, "%s n=%ld", wtype_name(type), (long)n);
    assert_close(qb_dot(type, w, xa, n), qb_dot_ref(type, w, xa, n), abs_dot(type, w, xa, n), what);
    free(xa);
}

static int64_t block_of(uint32_t type)
{
    return type == WT_Q4_K || type == WT_Q5_K || type == WT_Q6_K ? QK_K
           : type == WT_Q8_0 || type == WT_Q4_0                  ? QK
                                                                 : 1;
}

PATHS_TEST(qblock, simd_dot_matches_reference)
{
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = TYPES[t];
        int64_t lens[] = {256, 768, 2048, 256 + 37};
        for (int i = 0; i < 4; i++) {
            int64_t n = lens[i] / block_of(type) * block_of(type);
            float *wx = gauss_vec(n, 0.05f), *x = gauss_vec(n, 1.0f);
            void *w = quantized(type, wx, n);
            check_dot(type, w, x, n);
            free(w);
            if (block_of(type) > 1) {
                w = random_blocks(type, n);
                check_dot(type, w, x, n);
                free(w);
            }
            free(wx);
            free(x);
        }
    }
}

/* Rows counts around the 4-row kernel: 1..3 leftovers, and rows apart by
 * more than their own size (a slice of a wider matrix). */
PATHS_TEST(qblock, gemv_rows_match_reference)
{
    const int64_t n = 512;
    const int rows_cases[] = {1, 2, 3, 4, 5, 7, 13};
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = TYPES[t];
        size_t rb = wtype_row_bytes(type, (uint64_t)n), stride = rb + 64;
        uint8_t *w = xmalloc(13 * stride);
        for (int r = 0; r < 13; r++) {
            float *wx = gauss_vec(n, 0.1f);
            cr_assert_eq(qb_quantize_row(type, wx, w + r * stride, n), 0);
            free(wx);
        }
        float *x = gauss_vec(n, 1.0f);
        void *xa = act(type, x, n);
        for (size_t c = 0; c < sizeof rows_cases / sizeof rows_cases[0]; c++) {
            int rows = rows_cases[c];
            float y[13];
            qb_gemv(type, w, stride, rows, xa, n, y);
            for (int r = 0; r < rows; r++) {
                const void *row = w + r * stride;
                char what[64];
                snprintf(what, sizeof what, "%s rows=%d row %d", wtype_name(type), rows, r);
                assert_close(y[r], qb_dot_ref(type, row, xa, n), abs_dot(type, row, xa, n), what);
            }
        }
        free(x);
        free(xa);
        free(w);
    }
}

/* rows x n weights of `type` from gaussians, rows `stride` bytes apart. */
static uint8_t *gauss_matrix(uint32_t type, int rows, int64_t n, size_t stride)
{
    uint8_t *w = xmalloc((size_t)rows * stride);
    for (int r = 0; r < rows; r++) {
        float *wx = gauss_vec(n, 0.1f);
        cr_assert_eq(qb_quantize_row(type, wx, w + (size_t)r * stride, n), 0);
        free(wx);
    }
    return w;
}

/* A row's value from qb_gemv does not depend on how many rows it is given
 * with nor on where among them it lies: a batch (matvec.c) cuts matrices
 * into blocks of rows of its own. Rows of whole groups of 8 blocks and,
 * where the type allows, with a leftover block. */
PATHS_TEST(qblock, gemv_row_is_the_same_in_any_group)
{
    enum { ROWS = 13 };
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = TYPES[t];
        int64_t lens[] = {768, block_of(type) == QK_K ? 512 : 288};
        for (int l = 0; l < 2; l++) {
            int64_t n = lens[l];
            size_t rb = wtype_row_bytes(type, (uint64_t)n);
            uint8_t *w = gauss_matrix(type, ROWS, n, rb);
            float *x = gauss_vec(n, 1.0f);
            void *xa = act(type, x, n);
            float all[ROWS], some[ROWS];
            qb_gemv(type, w, rb, ROWS, xa, n, all);
            for (int r0 = 0; r0 < ROWS; r0++)
                for (int count = 1; r0 + count <= ROWS; count++) {
                    qb_gemv(type, w + (size_t)r0 * rb, rb, count, xa, n, some);
                    cr_assert(memcmp(some, all + r0, (size_t)count * sizeof(float)) == 0,
                              "%s, n %ld: rows %d..%d alone differ from all %d rows",
                              wtype_name(type), (long)n, r0, r0 + count - 1, ROWS);
                }
            free(x), free(xa), free(w);
        }
    }
}

/* qb_gemm gives every (row, activation) the bits qb_gemv gives it, for
 * batches around each kernel's bounds (from 6 activations VNNI's lanes,
 * below the tiled kernel) and row counts around the 16 x 16 tiles, rows
 * of whole groups of 8 blocks, with a leftover block, and of more groups
 * than VNNI's lanes take a chunk (2304 values), into a strided output. */
PATHS_TEST(qblock, gemm_is_gemv_per_activation)
{
    const int rows_cases[] = {1, 15, 16, 33};
    const int batches[] = {1, 2, 3, 5, 6, 15, 16, 17, 40};
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = TYPES[t];
        int64_t lens[] = {512, block_of(type) == QK_K ? 768 : 96, 2304};
        for (int l = 0; l < 3; l++) {
            int64_t n = lens[l];
            size_t rb = wtype_row_bytes(type, (uint64_t)n);
            uint8_t *w = gauss_matrix(type, 33, n, rb);
            for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
                int b = batches[bi];
                float *x = gauss_vec(b * n, 1.0f);
                size_t bytes = qb_batch_bytes(type, b, n);
                cr_assert_leq(bytes, qb_batch_bytes_max(b, n));
                void *batch = xmalloc(bytes);
                qb_quantize_batch(type, x, b, n, batch);
                for (size_t rc = 0; rc < sizeof rows_cases / sizeof rows_cases[0]; rc++) {
                    int rows = rows_cases[rc];
                    size_t ystride = (size_t)rows + 3;
                    float *y = xmalloc((size_t)b * ystride * sizeof *y), alone[33];
                    qb_gemm(type, w, rb, rows, batch, b, n, y, ystride);
                    for (int i = 0; i < b; i++) {
                        void *xa = act(type, x + (size_t)i * n, n);
                        qb_gemv(type, w, rb, rows, xa, n, alone);
                        for (int r = 0; r < rows; r++)
                            cr_assert(memcmp(&y[i * ystride + r], &alone[r], sizeof(float)) == 0,
                                      "%s, n %ld, %d rows, batch of %d: activation %d row %d: "
                                      "%.9g, alone %.9g",
                                      wtype_name(type), (long)n, rows, b, i, r, y[i * ystride + r],
                                      alone[r]);
                        free(xa);
                    }
                    free(y);
                }
                free(batch), free(x);
            }
            free(w);
        }
    }
}

/* The reference dot equals the dot of the dequantized rows. */
Test(qblock, reference_dot_is_dequantized_dot)
{
    const int64_t n = 1024;
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = TYPES[t];
        float *wx = gauss_vec(n, 0.1f), *x = gauss_vec(n, 1.0f);
        float *dw = xmalloc(n * sizeof *dw), *dx = xmalloc(n * sizeof *dx);
        void *w = quantized(type, wx, n), *xa = act(type, x, n);
        qb_dequant_row(type, w, dw, n);
        dequant_act(type, xa, dx, n);
        double s = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            s += (double)dw[i] * dx[i];
            mag += fabs((double)dw[i] * dx[i]);
        }
        assert_close(qb_dot_ref(type, w, xa, n), (float)s, mag, wtype_name(type));
        free(wx), free(x), free(dw), free(dx), free(w), free(xa);
    }
}

/* ---- round trips ---- */

/* RMS error of quantize + dequantize over N(0, 1) values, relative to
 * their RMS: what each type's bits allow (measured: F16 0.0002, BF16
 * 0.0017, Q8_0 0.0053, Q6_K 0.018, Q5_K 0.036, Q4_K 0.071, Q4_0 0.085),
 * with a quarter of margin. */
Test(qblock, round_trip_error)
{
    static const struct {
        uint32_t type;
        double max_rel;
    } bounds[] = {
        {WT_F32, 0},      {WT_F16, 3e-4},   {WT_BF16, 2.2e-3}, {WT_Q8_0, 7e-3},
        {WT_Q6_K, 0.023}, {WT_Q5_K, 0.045}, {WT_Q4_K, 0.09},   {WT_Q4_0, 0.11},
    };
    const int64_t n = 8192;
    float *x = gauss_vec(n, 1.0f), *back = xmalloc(n * sizeof *back);
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        void *w = quantized(bounds[i].type, x, n);
        qb_dequant_row(bounds[i].type, w, back, n);
        double e2 = 0, x2 = 0;
        for (int64_t j = 0; j < n; j++) {
            e2 += ((double)back[j] - x[j]) * ((double)back[j] - x[j]);
            x2 += (double)x[j] * x[j];
        }
        double rel = sqrt(e2 / x2);
        cr_assert(rel <= bounds[i].max_rel, "%s: relative RMS error %.5f > %.5f",
                  wtype_name(bounds[i].type), rel, bounds[i].max_rel);
        free(w);
    }
    free(x);
    free(back);
}

Test(qblock, dequant_rows_is_rows_of_dequant)
{
    const int64_t n = 256;
    for (size_t t = 0; t < N_TYPES; t++) {
        uint32_t type = TYPES[t];
        size_t rb = wtype_row_bytes(type, (uint64_t)n);
        float *x = gauss_vec(6 * n, 1.0f), *tile = xmalloc(3 * n * sizeof *tile);
        uint8_t *w = xmalloc(6 * rb);
        for (int r = 0; r < 6; r++)
            qb_quantize_row(type, x + r * n, w + r * rb, n);
        qb_dequant_rows(type, w, rb, 2, 3, n, tile);
        float row[256];
        for (int r = 0; r < 3; r++) {
            qb_dequant_row(type, w + (2 + r) * rb, row, n);
            cr_assert(memcmp(row, tile + r * n, sizeof row) == 0, "%s row %d", wtype_name(type), r);
        }
        free(x), free(tile), free(w);
    }
}

/* ---- llama.cpp's files ---- */

static gguf *open_fixture(const char *name)
{
    char path[256], err[256];
    gguf *g;
    snprintf(path, sizeof path, "tests/fixtures/gguf/%s", name);
    cr_assert_eq(gguf_open(&g, path, err, sizeof err), 0, "%s", err);
    return g;
}

/* Every tensor of the quantized file equals the F32 file's tensor run
 * through qb_quantize_row to that tensor's type, byte for byte. */
static void check_quantized_file(const char *name)
{
    gguf *f32 = open_fixture("r256-f32.gguf"), *q = open_fixture(name);
    cr_assert_eq(gguf_n_tensors(q), gguf_n_tensors(f32));
    for (int64_t i = 0; i < gguf_n_tensors(q); i++) {
        const gguf_tensor *qt = gguf_tensor_at(q, i), *ft = gguf_tensor_find(f32, qt->name);
        cr_assert(ft != NULL && ft->type == WT_F32, "%s: %s", name, qt->name);
        int64_t n = (int64_t)qt->ne[0];
        size_t rb = wtype_row_bytes(qt->type, qt->ne[0]);
        uint8_t *row = xmalloc(rb);
        for (size_t r = 0; r < qt->bytes / rb; r++) {
            const float *x = (const float *)ft->data + r * (size_t)n;
            cr_assert_eq(qb_quantize_row(qt->type, x, row, n), 0);
            cr_assert(memcmp(row, (const uint8_t *)qt->data + r * rb, rb) == 0,
                      "%s: %s (%s) row %zu differs", name, qt->name, wtype_name(qt->type), r);
        }
        free(row);
    }
    gguf_close(f32);
    gguf_close(q);
}

Test(qblock, quantize_matches_llama_cpp_q8_0)
{
    check_quantized_file("r256-Q8_0.gguf");
}

Test(qblock, quantize_matches_llama_cpp_q4_0)
{
    check_quantized_file("r256-Q4_0.gguf");
}

Test(qblock, quantize_matches_llama_cpp_f16_bf16)
{
    check_quantized_file("r256-F16.gguf");
    check_quantized_file("r256-BF16.gguf");
}

Test(qblock, quantize_matches_llama_cpp_k_types)
{
    check_quantized_file("r256-Q4_K_M.gguf");
    check_quantized_file("r256-Q5_K_M.gguf");
    check_quantized_file("r256-Q6_K.gguf");
}

/* llama.cpp's quantized matrices through gemv, against the reference. */
PATHS_TEST(qblock, gemv_on_llama_cpp_tensors)
{
    static const char *files[] = {"r256-F16.gguf",  "r256-BF16.gguf",   "r256-Q8_0.gguf",
                                  "r256-Q4_0.gguf", "r256-Q4_K_M.gguf", "r256-Q5_K_M.gguf",
                                  "r256-Q6_K.gguf"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        gguf *f = open_fixture(files[k]);
        for (int64_t i = 0; i < gguf_n_tensors(f); i++) {
            const gguf_tensor *t = gguf_tensor_at(f, i);
            int64_t n = (int64_t)t->ne[0];
            size_t rb = wtype_row_bytes(t->type, t->ne[0]);
            int rows = (int)(t->bytes / rb);
            if (rows == 1)
                continue;
            float *x = gauss_vec(n, 1.0f), *y = xmalloc((size_t)rows * sizeof *y);
            void *xa = act(t->type, x, n);
            qb_gemv(t->type, t->data, rb, rows, xa, n, y);
            for (int r = 0; r < rows; r++) {
                const void *row = (const uint8_t *)t->data + (size_t)r * rb;
                assert_close(y[r], qb_dot_ref(t->type, row, xa, n), abs_dot(t->type, row, xa, n),
                             t->name);
            }
            free(x), free(y), free(xa);
        }
        gguf_close(f);
    }
}

/* ---- prefill products (qgemm.c) ---- */

/* qb_round_act is quantize_act then the dequantization, bit for bit, for
 * every type, on rows with zero blocks, ties and outliers in them. */
PATHS_TEST(qblock, round_act_is_quantize_then_dequantize)
{
    const int64_t n = 1024;
    float *x = gauss_vec(n, 1.0f);
    for (int i = 0; i < 32; i++)
        x[i] = 0; /* a whole zero block */
    x[40] = 1e4f;
    x[300] = -2.5f;
    x[301] = 2.5f; /* equal magnitudes: the first one sets the K scale's sign */
    float *want = xmalloc(n * sizeof *want), *got = xmalloc(n * sizeof *got);
    for (size_t t = 0; t < N_TYPES; t++) {
        void *xa = act(TYPES[t], x, n);
        dequant_act(TYPES[t], xa, want, n);
        qb_round_act(TYPES[t], x, got, n);
        cr_assert_eq(memcmp(got, want, n * sizeof *got), 0, "%s", wtype_name(TYPES[t]));
        free(xa);
    }
    free(want);
    free(got);
    free(x);
}

/* A rows x n matrix of `type` with random rows. */
static void *random_matrix(uint32_t type, int rows, int64_t n, wmat *w)
{
    size_t rb = wtype_row_bytes(type, (uint64_t)n);
    uint8_t *data = xmalloc((size_t)rows * rb);
    for (int r = 0; r < rows; r++) {
        float *wx = gauss_vec(n, 0.1f);
        cr_assert_eq(qb_quantize_row(type, wx, data + r * rb, n), 0);
        free(wx);
    }
    *w = (wmat){.type = type, .data = data, .rows = rows, .cols = (int)n, .row_bytes = rb};
    return data;
}

/* Every position's product with every matrix of a group is the decode
 * kernels' (x rounded to the activation type, then the dot), up to float
 * summation order: for any number of positions and threads, and matrices
 * whose activation types differ within the group. */
PATHS_TEST(qblock, qgemm_matches_the_decode_kernels)
{
    const int64_t cols = 256;
    const uint32_t types[] = {WT_Q8_0, WT_Q4_0, WT_Q4_K, WT_F16, WT_F32};
    const int rows[] = {17, 5, 40, 33, 9};
    enum { K = sizeof types / sizeof types[0], N_MAX = 9 };
    wmat w[K];
    void *data[K];
    for (int k = 0; k < K; k++)
        data[k] = random_matrix(types[k], rows[k], cols, &w[k]);
    float *x = gauss_vec(N_MAX * cols, 1.0f);
    for (int threads = 1; threads <= 3; threads++) {
        pool *p;
        char err[128];
        cr_assert_eq(pool_create(&p, threads, err, sizeof err), 0, "%s", err);
        for (int n = 1; n <= N_MAX; n += 2) {
            size_t floats = 0;
            mv_out outs[K];
            for (int k = 0; k < K; k++) {
                size_t f = qg_scratch_floats(&w[k], n, threads);
                floats = f > floats ? f : floats;
                outs[k] = (mv_out){.w = &w[k], .y = xmalloc((size_t)n * rows[k] * sizeof(float))};
            }
            float *scratch = xmalloc(floats * sizeof(float) + 1);
            qg_multiply(p, x, n, (int)cols, outs, K, scratch);
            for (int k = 0; k < K; k++) {
                for (int i = 0; i < n; i++) {
                    void *xa = act(types[k], x + i * cols, cols);
                    for (int r = 0; r < rows[k]; r++) {
                        const void *row = (const uint8_t *)data[k] + r * w[k].row_bytes;
                        char what[96];
                        snprintf(what, sizeof what, "%s threads=%d n=%d position %d row %d",
                                 wtype_name(types[k]), threads, n, i, r);
                        assert_close(outs[k].y[i * rows[k] + r],
                                     qb_dot_ref(types[k], row, xa, cols),
                                     abs_dot(types[k], row, xa, cols), what);
                    }
                    free(xa);
                }
                free(outs[k].y);
            }
            free(scratch);
        }
        pool_free(p);
    }
    free(x);
    for (int k = 0; k < K; k++)
        free(data[k]);
}

/* A matrix taller than a tile (4 MiB of floats: 4096 rows of 256) goes
 * through several tiles, each row's product still the decode kernels'. */
Test(qblock, qgemm_across_tiles)
{
    const int64_t cols = 256;
    const int rows = 4096 + 40, n = 3;
    wmat w;
    void *data = random_matrix(WT_Q8_0, rows, cols, &w);
    float *x = gauss_vec(n * cols, 1.0f);
    pool *p;
    char err[128];
    cr_assert_eq(pool_create(&p, 2, err, sizeof err), 0, "%s", err);
    float *scratch = xmalloc(qg_scratch_floats(&w, n, 2) * sizeof(float));
    mv_out out = {.w = &w, .y = xmalloc((size_t)n * rows * sizeof(float))};
    qg_multiply(p, x, n, (int)cols, &out, 1, scratch);
    for (int i = 0; i < n; i++) {
        void *xa = act(WT_Q8_0, x + i * cols, cols);
        for (int r = 0; r < rows; r += 7) {
            const void *row = (const uint8_t *)data + r * w.row_bytes;
            char what[64];
            snprintf(what, sizeof what, "position %d row %d", i, r);
            assert_close(out.y[i * rows + r], qb_dot_ref(WT_Q8_0, row, xa, cols),
                         abs_dot(WT_Q8_0, row, xa, cols), what);
        }
        free(xa);
    }
    pool_free(p);
    free(out.y);
    free(scratch);
    free(x);
    free(data);
}
