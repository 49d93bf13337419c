/* test_kvcache.c: block growth and release, exact byte accounting, the
 * error bounds of each precision, and in-place conversion. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compute/kvcache.h"

static uint64_t rng_state;

static float rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* A random value exactly representable in fp16. */
static float rnd_f16(void)
{
    return (float)(_Float16)(rnd() * 4.0f);
}

/* Bytes per block of one layer and head, derived from the format: codes
 * for keys and values, plus an fp16 scale and bias per group of
 * min(32, head_dim) values for the affine formats. */
static size_t formula(kv_shape s, int bits, int ctx)
{
    int group = s.head_dim < 32 ? s.head_dim : 32;
    int groups = (s.head_dim + group - 1) / group;
    size_t per_pos = (size_t)s.head_dim * bits / 8 + (bits < 16 ? (size_t)groups * 4 : 0);
    size_t blocks = (size_t)((ctx + s.block - 1) / s.block);
    return blocks * s.n_layers * s.n_kv_heads * 2 * s.block * per_pos;
}

static kv_cache *make(kv_shape s, int bits)
{
    kv_cache *kv;
    char err[256];
    cr_assert_eq(kv_create(&kv, s, bits, err, sizeof err), 0, "%s", err);
    return kv;
}

static void reserve(kv_cache *kv, int ctx)
{
    char err[256];
    cr_assert_eq(kv_reserve(kv, ctx, err, sizeof err), 0, "%s", err);
}

/* Fills positions [0, ctx) of every layer with values from gen; keeps a
 * copy in k and v ([layer][pos][n_kv_heads * head_dim]). */
static void fill(kv_cache *kv, int ctx, float (*gen)(void), float *k, float *v)
{
    kv_shape s = kv_shape_of(kv);
    size_t row = (size_t)s.n_kv_heads * s.head_dim;
    reserve(kv, ctx);
    for (int l = 0; l < s.n_layers; l++) {
        float *kl = k + (size_t)l * ctx * row, *vl = v + (size_t)l * ctx * row;
        for (size_t i = 0; i < (size_t)ctx * row; i++) {
            kl[i] = gen();
            vl[i] = gen();
        }
        /* Uneven pieces: writes that start and end mid-block. */
        for (int pos = 0; pos < ctx;) {
            int n = 1 + (pos * 7 + 3) % 11;
            n = pos + n > ctx ? ctx - pos : n;
            kv_write(kv, l, pos, n, kl + (size_t)pos * row, vl + (size_t)pos * row);
            pos += n;
        }
    }
    kv_set_len(kv, ctx);
}

/* Reads every position back into k and v, laid out as in fill(). */
static void read_all(const kv_cache *kv, int ctx, float *k, float *v)
{
    kv_shape s = kv_shape_of(kv);
    int hd = s.head_dim, B = s.block;
    size_t row = (size_t)s.n_kv_heads * hd;
    float *kt = malloc(sizeof(float) * B * hd), *vb = malloc(sizeof(float) * B * hd);
    cr_assert(kt && vb);
    for (int l = 0; l < s.n_layers; l++)
        for (int h = 0; h < s.n_kv_heads; h++)
            for (int b = 0; b * B < ctx; b++) {
                int n = kv_read_block(kv, l, h, b, ctx, kt, vb);
                cr_assert_eq(n, ctx - b * B < B ? ctx - b * B : B);
                for (int p = 0; p < n; p++)
                    for (int d = 0; d < hd; d++) {
                        size_t i = ((size_t)l * ctx + b * B + p) * row + (size_t)h * hd + d;
                        k[i] = kt[(size_t)d * B + p];
                        v[i] = vb[(size_t)p * hd + d];
                    }
            }
    free(kt);
    free(vb);
}

/* Largest error allowed for a value of a group with this min and max:
 * half a quantization step, plus the fp16 rounding of scale and bias. */
static float bound(float lo, float hi, int bits)
{
    float levels = (float)((1 << bits) - 1);
    return (hi - lo) / levels / 2.0f + (fabsf(lo) + (hi - lo)) / 1024.0f + 1e-7f;
}

/* Checks got against want group by group; extra_rel adds a relative
 * allowance per value (fp16 rounding of a later conversion). */
static void check_groups(kv_shape s, int ctx, const float *want, const float *got, int bits,
                         float extra_rel)
{
    int hd = s.head_dim, group = kv_group(s);
    size_t rows = (size_t)s.n_layers * ctx * s.n_kv_heads;
    for (size_t r = 0; r < rows; r++)
        for (int g0 = 0; g0 < hd; g0 += group) {
            const float *w = want + r * hd + g0, *x = got + r * hd + g0;
            int gn = hd - g0 < group ? hd - g0 : group;
            float lo = w[0], hi = w[0];
            for (int d = 1; d < gn; d++) {
                lo = fminf(lo, w[d]);
                hi = fmaxf(hi, w[d]);
            }
            for (int d = 0; d < gn; d++) {
                float tol = bound(lo, hi, bits) + fabsf(w[d]) * extra_rel;
                cr_assert_leq(fabsf(w[d] - x[d]), tol,
                              "bits %d hd %d row %zu dim %d: %g vs %g (bound %g)", bits, hd, r,
                              g0 + d, w[d], x[d], tol);
            }
        }
}

static void check_equal(size_t n, const float *want, const float *got, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(want[i], got[i], "%s: value %zu: %g vs %g", what, i, want[i], got[i]);
}

static const kv_shape shapes[] = {
    {.n_layers = 2, .n_kv_heads = 3, .head_dim = 8, .block = 16},
    {.n_layers = 2, .n_kv_heads = 2, .head_dim = 64, .block = 64},
    {.n_layers = 1, .n_kv_heads = 2, .head_dim = 128, .block = 16},
    {.n_layers = 1, .n_kv_heads = 1, .head_dim = 96, .block = 32},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])
static const int all_bits[] = {32, 16, 8, 4};

Test(kvcache, bytes_follow_formula)
{
    for (size_t si = 0; si < N_SHAPES; si++) {
        kv_shape s = shapes[si];
        int B = s.block;
        int ctxs[] = {0, 1, B - 1, B, B + 1, 2 * B, 3 * B + 5, 1000};
        for (int bi = 0; bi < 4; bi++) {
            int bits = all_bits[bi];
            cr_assert_eq(kv_block_bytes(s, bits) * s.n_layers * s.n_kv_heads, formula(s, bits, 1));
            for (size_t c = 0; c < sizeof ctxs / sizeof ctxs[0]; c++) {
                int ctx = ctxs[c];
                kv_cache *kv = make(s, bits);
                reserve(kv, ctx);
                kv_set_len(kv, ctx);
                cr_assert_eq(kv_bytes(kv), formula(s, bits, ctx), "bits %d ctx %d", bits, ctx);
                cr_assert_eq(kv_bytes_for(s, bits, ctx), formula(s, bits, ctx));
                cr_assert_eq(kv_capacity(kv), (ctx + B - 1) / B * B);
                kv_free(kv);
            }
        }
    }
}

/* The ratios to fp16 that groups of 32 give, for the head_dim of the
 * synthetic 110m and 1b models: codes plus 4 bytes of scale and bias per
 * 32 values, i.e. 9/16 and 5/16. */
Test(kvcache, quantized_bytes_ratios)
{
    for (int hd = 64; hd <= 128; hd += 64) {
        kv_shape s = {.n_layers = 1, .n_kv_heads = 1, .head_dim = hd, .block = KV_BLOCK_DEFAULT};
        double f16 = (double)kv_bytes_for(s, 16, 4096);
        cr_assert_float_eq(kv_bytes_for(s, 8, 4096) / f16, 0.5625, 1e-12);
        cr_assert_float_eq(kv_bytes_for(s, 4, 4096) / f16, 0.3125, 1e-12);
    }
}

Test(kvcache, grow_and_release)
{
    kv_shape s = {.n_layers = 2, .n_kv_heads = 2, .head_dim = 16, .block = 16};
    kv_cache *kv = make(s, 16);
    cr_assert_eq(kv_bytes(kv), 0);
    cr_assert_eq(kv_len(kv), 0);
    reserve(kv, 40);
    cr_assert_eq(kv_capacity(kv), 48);
    cr_assert_eq(kv_bytes(kv), formula(s, 16, 40));
    cr_assert_eq(kv_len(kv), 0, "reserve must not commit");
    reserve(kv, 20); /* already there: nothing changes */
    cr_assert_eq(kv_capacity(kv), 48);
    kv_set_len(kv, 40);
    cr_assert_eq(kv_len(kv), 40);
    kv_set_len(kv, 17);
    cr_assert_eq(kv_capacity(kv), 32);
    cr_assert_eq(kv_bytes(kv), formula(s, 16, 17));
    kv_set_len(kv, 0);
    cr_assert_eq(kv_capacity(kv), 0);
    cr_assert_eq(kv_bytes(kv), 0);
    reserve(kv, 100);
    kv_set_len(kv, 100);
    cr_assert_eq(kv_bytes(kv), formula(s, 16, 100));
    kv_free(kv);
}

Test(kvcache, exact_at_32_and_fp16)
{
    for (size_t si = 0; si < N_SHAPES; si++) {
        kv_shape s = shapes[si];
        int ctx = 3 * s.block + 5;
        size_t n = (size_t)s.n_layers * ctx * s.n_kv_heads * s.head_dim;
        float *k = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float));
        float *k2 = malloc(n * sizeof(float)), *v2 = malloc(n * sizeof(float));
        cr_assert(k && v && k2 && v2);
        rng_state = 0x9e3779b97f4a7c15ull + si;
        for (int bits = 32; bits >= 16; bits -= 16) {
            kv_cache *kv = make(s, bits);
            fill(kv, ctx, bits == 32 ? rnd : rnd_f16, k, v);
            read_all(kv, ctx, k2, v2);
            check_equal(n, k, k2, "keys");
            check_equal(n, v, v2, "values");
            kv_free(kv);
        }
        free(k), free(v), free(k2), free(v2);
    }
}

Test(kvcache, affine_error_bounds)
{
    for (size_t si = 0; si < N_SHAPES; si++) {
        kv_shape s = shapes[si];
        int ctx = 2 * s.block + 3;
        size_t n = (size_t)s.n_layers * ctx * s.n_kv_heads * s.head_dim;
        float *k = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float));
        float *k2 = malloc(n * sizeof(float)), *v2 = malloc(n * sizeof(float));
        cr_assert(k && v && k2 && v2);
        rng_state = 0x1234567ull + si;
        for (int bits = 8; bits >= 4; bits -= 4) {
            kv_cache *kv = make(s, bits);
            fill(kv, ctx, rnd, k, v);
            read_all(kv, ctx, k2, v2);
            check_groups(s, ctx, k, k2, bits, 0.0f);
            check_groups(s, ctx, v, v2, bits, 0.0f);
            kv_free(kv);
        }
        free(k), free(v), free(k2), free(v2);
    }
}

/* Groups of equal values (zero spread) decode to the value itself. */
Test(kvcache, constant_groups)
{
    kv_shape s = {.n_layers = 1, .n_kv_heads = 1, .head_dim = 64, .block = 16};
    float k[64], v[64], kt[64 * 16], vb[64 * 16];
    for (int d = 0; d < 64; d++) {
        k[d] = 0.375f;
        v[d] = -2.5f;
    }
    for (int bits = 8; bits >= 4; bits -= 4) {
        kv_cache *kv = make(s, bits);
        reserve(kv, 1);
        kv_write(kv, 0, 0, 1, k, v);
        cr_assert_eq(kv_read_block(kv, 0, 0, 0, 1, kt, vb), 1);
        for (int d = 0; d < 64; d++) {
            cr_assert_eq(kt[d * 16], 0.375f);
            cr_assert_eq(vb[d], -2.5f);
        }
        kv_free(kv);
    }
}

static void convert(kv_cache *kv, int bits)
{
    char err[256];
    cr_assert_eq(kv_convert(kv, bits, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_bits(kv), bits);
}

Test(kvcache, convert_in_place)
{
    for (size_t si = 0; si < N_SHAPES; si++) {
        kv_shape s = shapes[si];
        int ctx = 2 * s.block + 7;
        size_t n = (size_t)s.n_layers * ctx * s.n_kv_heads * s.head_dim;
        float *k = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float));
        float *k2 = malloc(n * sizeof(float)), *v2 = malloc(n * sizeof(float));
        cr_assert(k && v && k2 && v2);
        rng_state = 0xabcdefull + si;

        kv_cache *kv = make(s, 32);
        fill(kv, ctx, rnd_f16, k, v);
        convert(kv, 16);
        cr_assert_eq(kv_bytes(kv), formula(s, 16, ctx));
        cr_assert_eq(kv_len(kv), ctx);
        read_all(kv, ctx, k2, v2);
        check_equal(n, k, k2, "32->16 keys");
        check_equal(n, v, v2, "32->16 values");
        convert(kv, 32);
        cr_assert_eq(kv_bytes(kv), formula(s, 32, ctx));
        read_all(kv, ctx, k2, v2);
        check_equal(n, k, k2, "16->32 keys");
        check_equal(n, v, v2, "16->32 values");

        convert(kv, 16);
        convert(kv, 8);
        cr_assert_eq(kv_bytes(kv), formula(s, 8, ctx));
        read_all(kv, ctx, k2, v2);
        check_groups(s, ctx, k, k2, 8, 0.0f);
        check_groups(s, ctx, v, v2, 8, 0.0f);
        convert(kv, 16);
        cr_assert_eq(kv_bytes(kv), formula(s, 16, ctx));
        read_all(kv, ctx, k2, v2);
        check_groups(s, ctx, k, k2, 8, 1.0f / 1024);
        check_groups(s, ctx, v, v2, 8, 1.0f / 1024);
        kv_free(kv);

        kv = make(s, 16);
        fill(kv, ctx, rnd_f16, k, v);
        convert(kv, 4);
        cr_assert_eq(kv_bytes(kv), formula(s, 4, ctx));
        read_all(kv, ctx, k2, v2);
        check_groups(s, ctx, k, k2, 4, 0.0f);
        check_groups(s, ctx, v, v2, 4, 0.0f);
        kv_free(kv);
        free(k), free(v), free(k2), free(v2);
    }
}

Test(kvcache, invalid_bits_refused)
{
    char err[256];
    kv_cache *kv;
    kv_shape s = {.n_layers = 1, .n_kv_heads = 2, .head_dim = 16, .block = 16};
    cr_assert_eq(kv_create(&kv, s, 12, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "12"), "message names the bits: %s", err);
    cr_assert_not_null(strstr(err, "expected 32, 16, 8 or 4"), "and the choices: %s", err);

    kv_shape odd = s;
    odd.head_dim = 12;
    cr_assert_eq(kv_create(&kv, odd, 16, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "head_dim"), "%s", err);

    int ctx = 21;
    size_t n = (size_t)ctx * s.n_kv_heads * s.head_dim;
    float k[21 * 32], v[21 * 32], k2[21 * 32], v2[21 * 32];
    kv = make(s, 8);
    rng_state = 42;
    fill(kv, ctx, rnd, k, v);
    read_all(kv, ctx, k, v);
    size_t bytes = kv_bytes(kv);
    int bad[] = {0, 1, 2, 7, 12, 24, 64, -16};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        cr_assert_eq(kv_convert(kv, bad[i], err, sizeof err), -1, "bits %d accepted", bad[i]);
        cr_assert_neq(err[0], 0);
    }
    cr_assert_eq(kv_bits(kv), 8);
    cr_assert_eq(kv_bytes(kv), bytes);
    cr_assert_eq(kv_len(kv), ctx);
    read_all(kv, ctx, k2, v2);
    check_equal(n, k, k2, "keys after refusal");
    check_equal(n, v, v2, "values after refusal");
    kv_free(kv);
}

/* A context near INT_MAX (a forged prepare frame's) counts its blocks in
 * 64 bits instead of overflowing, and a byte count past SIZE_MAX saturates. */
Test(kvcache, bytes_for_huge_context)
{
    kv_shape s = {.n_layers = 2, .n_kv_heads = 4, .head_dim = 64, .block = 64};
    size_t blocks = ((size_t)2147483647 + 63) / 64;
    cr_assert_eq(kv_bytes_for(s, 16, 2147483647), blocks * 8 * kv_block_bytes(s, 16));
    kv_shape wide = {.n_layers = 1 << 15, .n_kv_heads = 1 << 15, .head_dim = 4096, .block = 4096};
    cr_assert_eq(kv_bytes_for(wide, 32, 2147483647), SIZE_MAX);
}
