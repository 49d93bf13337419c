/* test_matvec.c: mv_multiply equals a double-precision reference within
 * float rounding for every shape (row groups and column tails included),
 * for one to three matrices at once, and gives bit-identical results
 * inline and on pools of any size; a batch of inputs gives each input
 * bit for bit what it gets alone, for every weight type. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compute/matvec.h"
#include "engine/compute/pool.h"
#include "engine/compute/qblock.h"
#include "engine/model/wtype.h"
#include "paths.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static float *random_floats(size_t n)
{
    float *p = malloc(n * sizeof(float));
    cr_assert(p);
    for (size_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

/* Checks y = w x against a double sum, with the classic bound on a float
 * dot product of length n: |error| <= n * eps * sum |w_i x_i|. */
static void check_rows(const float *w, const float *x, const float *y, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        double sum = 0, mag = 0;
        for (int j = 0; j < cols; j++) {
            double t = (double)w[(size_t)r * cols + j] * x[j];
            sum += t;
            mag += fabs(t);
        }
        double bound = cols * (double)FLT_EPSILON * mag + 1e-30;
        cr_assert(fabs(y[r] - sum) <= bound, "rows %d cols %d: y[%d] = %.9g, expected %.9g +- %g",
                  rows, cols, r, y[r], sum, bound);
    }
}

/* Multiplies n_outs random matrices of `rows[k]` x cols by one vector on
 * pool p (NULL: inline), checks each against the reference and returns
 * the outputs, concatenated, for comparisons between pools. */
static float *multiply(pool *p, const int *rows, int n_outs, int cols, uint64_t seed)
{
    rng_state = seed;
    float *x = random_floats((size_t)cols);
    mv_out outs[MV_MAX_OUTS];
    wmat w[MV_MAX_OUTS];
    size_t total = 0;
    for (int k = 0; k < n_outs; k++)
        total += (size_t)rows[k];
    float *y = malloc(total * sizeof(float));
    cr_assert(y);
    float *yk = y;
    for (int k = 0; k < n_outs; k++) {
        w[k] = (wmat){.type = WT_F32,
                      .data = random_floats((size_t)rows[k] * cols),
                      .rows = rows[k],
                      .cols = cols,
                      .row_bytes = (size_t)cols * sizeof(float)};
        outs[k] = (mv_out){&w[k], yk};
        yk += rows[k];
    }
    void *scratch = malloc(mv_scratch_bytes(cols, 1));
    cr_assert(scratch);
    mv_multiply(p, x, 1, cols, outs, n_outs, scratch);
    for (int k = 0; k < n_outs; k++) {
        check_rows(w[k].data, x, outs[k].y, rows[k], cols);
        free((void *)w[k].data);
    }
    free(scratch);
    free(x);
    return y;
}

Test(matvec, small_shapes_inline)
{
    const int cols[] = {1, 7, 8, 9, 15, 16, 17, 64, 172};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        for (int rows = 1; rows <= 9; rows++)
            free(multiply(NULL, &rows, 1, cols[c], 1000u * c + rows));
}

/* Big enough to be split into tasks over the pool: q, k, v of a
 * 768-wide model, and w1 / w3 with a column tail and an odd row count. */
Test(matvec, fused_matrices_on_pools)
{
    const int qkv[] = {768, 256, 256};
    const int gate_up[] = {2051, 2051};
    const int classifier[] = {5003};
    struct {
        const int *rows;
        int n_outs, cols;
    } cases[] = {{qkv, 3, 768}, {gate_up, 2, 772}, {classifier, 1, 203}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int total = 0;
        for (int k = 0; k < cases[i].n_outs; k++)
            total += cases[i].rows[k];
        float *ref = multiply(NULL, cases[i].rows, cases[i].n_outs, cases[i].cols, 7 + i);
        for (int threads = 1; threads <= 3; threads++) {
            pool *p;
            char err[256];
            cr_assert_eq(pool_create(&p, threads, err, sizeof err), 0, "%s", err);
            float *y = multiply(p, cases[i].rows, cases[i].n_outs, cases[i].cols, 7 + i);
            for (int r = 0; r < total; r++)
                cr_assert_eq(y[r], ref[r], "case %zu, %d threads: row %d differs from inline", i,
                             threads, r);
            free(y);
            pool_free(p);
        }
        free(ref);
    }
}

/* ---- batches ---- */

/* rows x cols random weights in `type`, row by row as a file holds them. */
static wmat random_matrix(uint32_t type, int rows, int cols)
{
    size_t rb = wtype_row_bytes(type, (uint64_t)cols);
    char *data = malloc((size_t)rows * rb);
    cr_assert(data);
    for (int r = 0; r < rows; r++) {
        float *row = random_floats((size_t)cols);
        cr_assert_eq(qb_quantize_row(type, row, data + (size_t)r * rb, cols), 0);
        free(row);
    }
    return (wmat){.type = type, .data = data, .rows = rows, .cols = cols, .row_bytes = rb};
}

/* The matrices w[n_outs] times b random inputs at once on pool p, and
 * each input alone: the outputs must be the same bits. */
static void check_batch(pool *p, const wmat *w, int n_outs, int b, const char *what)
{
    int cols = w[0].cols;
    float *x = random_floats((size_t)b * cols);
    void *scratch = malloc(mv_scratch_bytes(cols, b));
    cr_assert(scratch);
    mv_out batch[MV_MAX_OUTS], alone[MV_MAX_OUTS];
    for (int k = 0; k < n_outs; k++) {
        batch[k] = (mv_out){&w[k], malloc((size_t)b * w[k].rows * sizeof(float))};
        alone[k] = (mv_out){&w[k], malloc((size_t)w[k].rows * sizeof(float))};
        cr_assert(batch[k].y && alone[k].y);
    }
    mv_multiply(p, x, b, cols, batch, n_outs, scratch);
    for (int i = 0; i < b; i++) {
        mv_multiply(p, x + (size_t)i * cols, 1, cols, alone, n_outs, scratch);
        for (int k = 0; k < n_outs; k++) {
            const float *row = batch[k].y + (size_t)i * w[k].rows;
            for (int r = 0; r < w[k].rows; r++)
                cr_assert(memcmp(&row[r], &alone[k].y[r], sizeof(float)) == 0,
                          "%s, b %d: input %d, matrix %d, row %d: %.9g in the batch, %.9g alone",
                          what, b, i, k, r, row[r], alone[k].y[r]);
        }
    }
    for (int k = 0; k < n_outs; k++) {
        free(batch[k].y);
        free(alone[k].y);
    }
    free(scratch);
    free(x);
}

static const uint32_t TYPES[] = {WT_F32,  WT_F16,  WT_BF16, WT_Q8_0,
                                 WT_Q4_0, WT_Q4_K, WT_Q5_K, WT_Q6_K};
static const int BATCHES[] = {1, 2, 3, 5, 16, 17, 33};

/* Every type, with rows a multiple of 256 (the K types need it; Q8_0's
 * tile kernel takes only those) and, where the type allows, with a
 * leftover block; row counts that are not whole tiles of 16; inline and
 * split over a pool's tasks (1000 rows of 512 values are several). */
PATHS_TEST(matvec, batch_inputs_get_what_they_get_alone)
{
    pool *p;
    char err[256];
    cr_assert_eq(pool_create(&p, 2, err, sizeof err), 0, "%s", err);
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        int block = (int)wtype_get(TYPES[t])->block;
        const int shapes[][2] = {{37, 512}, {1000, 512}, {21, block == 256 ? 768 : 96 + 32}};
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
            rng_state = 1000 * t + sh;
            wmat w = random_matrix(TYPES[t], shapes[sh][0], shapes[sh][1]);
            char what[96];
            snprintf(what, sizeof what, "%s %dx%d", wtype_name(w.type), w.rows, w.cols);
            for (size_t i = 0; i < sizeof BATCHES / sizeof BATCHES[0]; i++) {
                check_batch(NULL, &w, 1, BATCHES[i], what);
                check_batch(p, &w, 1, BATCHES[i], what);
            }
            free((void *)w.data);
        }
    }
    pool_free(p);
}

/* fp32 rows of any length: column tails after the last 8, and inputs in
 * every position of a tile of four. */
Test(matvec, batch_f32_column_tails)
{
    const int cols[] = {1, 7, 9, 100, 772};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        rng_state = 77 + c;
        wmat w = random_matrix(WT_F32, 13, cols[c]);
        for (int b = 1; b <= 9; b++)
            check_batch(NULL, &w, 1, b, "f32 tail");
        free((void *)w.data);
    }
}

/* Matrices of one group share their inputs' quantization by activation
 * type: Q8_0 reads the batch Q4_0 quantized first. */
PATHS_TEST(matvec, batch_of_a_mixed_group)
{
    pool *p;
    char err[256];
    cr_assert_eq(pool_create(&p, 2, err, sizeof err), 0, "%s", err);
    wmat w[3] = {random_matrix(WT_Q4_0, 64, 512), random_matrix(WT_Q8_0, 48, 512),
                 random_matrix(WT_Q6_K, 40, 512)};
    for (size_t i = 0; i < sizeof BATCHES / sizeof BATCHES[0]; i++)
        check_batch(p, w, 3, BATCHES[i], "Q4_0 + Q8_0 + Q6_K");
    for (int k = 0; k < 3; k++)
        free((void *)w[k].data);
    pool_free(p);
}
