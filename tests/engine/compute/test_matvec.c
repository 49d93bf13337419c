/* test_matvec.c: mv_multiply equals a double-precision reference within
 * float rounding for every shape (row groups and column tails included),
 * for one to three matrices at once, and gives bit-identical results
 * inline and on pools of any size. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/compute/matvec.h"
#include "engine/compute/pool.h"
#include "engine/model/wtype.h"

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
        w[k] = (wmat){.type = WT_F32, .data = random_floats((size_t)rows[k] * cols),
                      .rows = rows[k], .cols = cols, .row_bytes = (size_t)cols * sizeof(float)};
        outs[k] = (mv_out){&w[k], yk};
        yk += rows[k];
    }
    void *scratch = malloc(mv_scratch_bytes(cols));
    cr_assert(scratch);
    mv_multiply(p, x, cols, outs, n_outs, scratch);
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
