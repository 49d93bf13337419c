/* test_attention.c: tiled attention equals a naive full-softmax reference
 * over the (dequantized) cache, for every head size, GQA ratio, chunk and
 * block size, with and without threads; with an fp16 cache and a chunk of
 * fewer than 64 positions, it equals a scalar model of llama.cpp's
 * arithmetic instead. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/compute/attention.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "paths.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static float rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

typedef struct setup {
    int head_dim, gqa, n_kv_heads, block, n, pos, bits;
} setup;

#define LAYERS 2
#define LAYER 1 /* attention reads the second layer: layers must not mix */

/* Reads the whole cache of one layer back: k and v [ctx][n_kv * hd]. */
static void read_layer(const kv_cache *kv, int layer, int ctx, float *k, float *v)
{
    kv_shape s = kv_shape_of(kv);
    int hd = s.head_dim, B = s.block, row = s.n_kv_heads * hd;
    float *kt = malloc(sizeof(float) * B * hd), *vb = malloc(sizeof(float) * B * hd);
    cr_assert(kt && vb);
    for (int h = 0; h < s.n_kv_heads; h++)
        for (int b = 0; b * B < ctx; b++) {
            int n = kv_read_block(kv, layer, h, b, ctx, kt, vb);
            for (int p = 0; p < n; p++)
                for (int d = 0; d < hd; d++) {
                    k[(size_t)(b * B + p) * row + h * hd + d] = kt[(size_t)d * B + p];
                    v[(size_t)(b * B + p) * row + h * hd + d] = vb[(size_t)p * hd + d];
                }
        }
    free(kt);
    free(vb);
}

/* Full softmax over [0, pos + i] for every query position and head. */
static void naive(const setup *c, const float *q, const float *k, const float *v, float *out)
{
    int hd = c->head_dim, heads = c->n_kv_heads * c->gqa, row = c->n_kv_heads * hd;
    int ctx = c->pos + c->n;
    double *w = malloc(sizeof(double) * ctx);
    cr_assert(w);
    for (int i = 0; i < c->n; i++)
        for (int qh = 0; qh < heads; qh++) {
            const float *qv = q + ((size_t)i * heads + qh) * hd;
            int h = qh / c->gqa, last = c->pos + i;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= last; j++) {
                double dot = 0;
                for (int d = 0; d < hd; d++)
                    dot += (double)qv[d] * k[(size_t)j * row + h * hd + d];
                w[j] = dot / sqrt((double)hd);
                mx = w[j] > mx ? w[j] : mx;
            }
            for (int j = 0; j <= last; j++) {
                w[j] = exp(w[j] - mx);
                sum += w[j];
            }
            for (int d = 0; d < hd; d++) {
                double acc = 0;
                for (int j = 0; j <= last; j++)
                    acc += w[j] * v[(size_t)j * row + h * hd + d];
                out[((size_t)i * heads + qh) * hd + d] = (float)(acc / sum);
            }
        }
    free(w);
}

static float fp16(float x)
{
    return (float)(_Float16)x;
}

/* What llama.cpp's CPU flash attention computes for chunks of fewer than
 * 64 positions over an fp16 cache (attention.c): the query rounded to
 * fp16, keys folded one at a time into an output held in fp16. Scores sum
 * in attention.c's order, so that the roundings to fp16 land the same. */
static void naive_fp16(const setup *c, const float *q, const float *k, const float *v, float *out)
{
    int hd = c->head_dim, heads = c->n_kv_heads * c->gqa, row = c->n_kv_heads * hd;
    float *q16 = malloc(sizeof(float) * hd), *acc = malloc(sizeof(float) * hd);
    cr_assert(q16 && acc);
    for (int i = 0; i < c->n; i++)
        for (int qh = 0; qh < heads; qh++) {
            const float *qv = q + ((size_t)i * heads + qh) * hd;
            int h = qh / c->gqa, last = c->pos + i;
            for (int d = 0; d < hd; d++) {
                q16[d] = fp16(qv[d]);
                acc[d] = 0.0f;
            }
            float mx = -INFINITY, sum = 0.0f;
            for (int j = 0; j <= last; j++) {
                const float *kj = k + (size_t)j * row + h * hd, *vj = v + (size_t)j * row + h * hd;
                float dot = 0.0f;
                for (int d = 0; d < hd; d++)
                    dot = fmaf(q16[d], kj[d], dot);
                float x = dot * (1.0f / sqrtf((float)hd)), ms = 1.0f, vs = 1.0f;
                if (x > mx) {
                    ms = expf(mx - x);
                    mx = x;
                    for (int d = 0; d < hd; d++)
                        acc[d] = fp16(acc[d] * ms);
                } else {
                    vs = expf(x - mx);
                }
                for (int d = 0; d < hd; d++)
                    acc[d] = fp16(fmaf(vj[d], vs, acc[d]));
                sum = sum * ms + vs;
            }
            for (int d = 0; d < hd; d++)
                out[((size_t)i * heads + qh) * hd + d] = acc[d] * (1.0f / sum);
        }
    free(q16);
    free(acc);
}

/* Runs one case; returns max |tiled - reference| / max |reference|. */
static double run_case(const setup *c, pool *pl)
{
    char err[256];
    kv_shape s = {.n_layers = LAYERS,
                  .n_kv_heads = c->n_kv_heads,
                  .head_dim = c->head_dim,
                  .block = c->block};
    int heads = c->n_kv_heads * c->gqa, ctx = c->pos + c->n, row = c->n_kv_heads * c->head_dim;
    kv_cache *kv;
    cr_assert_eq(kv_create(&kv, s, c->bits, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_reserve(kv, ctx, err, sizeof err), 0, "%s", err);

    size_t kvn = (size_t)ctx * row, qn = (size_t)c->n * heads * c->head_dim;
    float *k = malloc(kvn * sizeof(float)), *v = malloc(kvn * sizeof(float));
    float *q = malloc(qn * sizeof(float)), *out = malloc(qn * sizeof(float));
    float *ref = malloc(qn * sizeof(float));
    cr_assert(k && v && q && out && ref);
    /* Scores spread over a few units, so the softmax is neither flat nor
     * one-hot. */
    for (int layer = 0; layer < LAYERS; layer++) {
        for (size_t i = 0; i < kvn; i++) {
            k[i] = rnd() * (layer == LAYER ? 1.5f : 100.0f);
            v[i] = rnd() * (layer == LAYER ? 1.0f : 100.0f);
        }
        kv_write(kv, layer, 0, ctx, k, v);
    }
    for (size_t i = 0; i < qn; i++)
        q[i] = rnd() * 1.5f;
    /* The step's own positions are written but not committed. */
    kv_set_len(kv, c->pos);
    cr_assert_eq(kv_reserve(kv, ctx, err, sizeof err), 0, "%s", err);
    kv_write(kv, LAYER, 0, ctx, k, v);

    attn_scratch *sc;
    cr_assert_eq(attn_scratch_create(&sc, c->n, heads, s, pl, err, sizeof err), 0, "%s", err);
    attn_forward(sc, kv, LAYER, q, c->n, c->pos, out);

    read_layer(kv, LAYER, ctx, k, v);
    if (c->bits == 16 && c->n < 64)
        naive_fp16(c, q, k, v, ref);
    else
        naive(c, q, k, v, ref);
    double diff = 0, mag = 0;
    for (size_t i = 0; i < qn; i++) {
        double d = fabs((double)out[i] - ref[i]), m = fabs((double)ref[i]);
        diff = d > diff ? d : diff;
        mag = m > mag ? m : mag;
    }
    attn_scratch_free(sc);
    kv_free(kv);
    free(k), free(v), free(q), free(out), free(ref);
    return diff / mag;
}

/* Every combination at `every` 1, a spread-out share of them at larger
 * values (the quantized formats add nothing that depends on the shape). */
static void sweep(int bits, int every)
{
    /* 64 and 128 have their own copies of the fp16 fold, 8 and 96 take
     * the general one. */
    static const int dims[] = {8, 64, 96, 128}, gqas[] = {1, 2, 4}, chunks[] = {1, 3, 17, 64};
    static const int blocks[] = {16, 64};
    pool *two;
    char err[256];
    cr_assert_eq(pool_create(&two, 2, err, sizeof err), 0, "%s", err);
    for (int di = 0; di < (int)(sizeof dims / sizeof dims[0]); di++)
        for (int gi = 0; gi < 3; gi++)
            for (int ci = 0; ci < 4; ci++)
                for (int bi = 0; bi < 2; bi++)
                    for (int threaded = 0; threaded <= 1; threaded++) {
                        if ((di + gi + ci + bi + threaded) % every != 0)
                            continue;
                        int B = blocks[bi];
                        setup c = {.head_dim = dims[di],
                                   .gqa = gqas[gi],
                                   .block = B,
                                   .n = chunks[ci],
                                   .bits = bits};
                        /* One KV head makes the threads split query rows. */
                        c.n_kv_heads = gqas[gi] == 4 ? 1 : 2;
                        /* From empty, and from a context that ends mid-block. */
                        c.pos = (ci + threaded) % 2 ? B + 5 : 0;
                        double rel = run_case(&c, threaded ? two : NULL);
                        /* The fp16 path is llama.cpp's arithmetic, bit for
                         * bit; the others differ from the reference by the
                         * order of their sums. */
                        double bound = bits == 16 && c.n < 64 ? 0.0 : 1e-5;
                        cr_assert_leq(rel, bound,
                                      "bits %d hd %d gqa %d kv_heads %d block %d n %d pos %d "
                                      "threads %d: relative error %g",
                                      bits, c.head_dim, c.gqa, c.n_kv_heads, B, c.n, c.pos,
                                      threaded ? 2 : 1, rel);
                    }
    pool_free(two);
}

PATHS_TEST(attention, matches_naive_fp32)
{
    sweep(32, 1);
}

PATHS_TEST(attention, matches_naive_fp16)
{
    sweep(16, 3);
}

PATHS_TEST(attention, matches_naive_8bit)
{
    sweep(8, 3);
}

PATHS_TEST(attention, matches_naive_4bit)
{
    sweep(4, 3);
}

/* Long contexts cost time, never scratch. */
Test(attention, scratch_independent_of_context)
{
    char err[256];
    kv_shape s = {.n_layers = 1, .n_kv_heads = 2, .head_dim = 64, .block = 16};
    attn_scratch *sc;
    cr_assert_eq(attn_scratch_create(&sc, 4, 4, s, NULL, err, sizeof err), 0, "%s", err);
    size_t bytes = attn_scratch_bytes(sc);
    cr_assert_gt(bytes, 0);
    size_t row = 2 * 64;
    float q[4 * 4 * 64], out[4 * 4 * 64];
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        q[i] = rnd();
    kv_cache *kv;
    cr_assert_eq(kv_create(&kv, s, 16, err, sizeof err), 0, "%s", err);
    for (int ctx = 16; ctx <= 4096; ctx *= 4) {
        float *k = malloc(sizeof(float) * ctx * row), *v = malloc(sizeof(float) * ctx * row);
        cr_assert(k && v);
        for (size_t i = 0; i < (size_t)ctx * row; i++) {
            k[i] = rnd();
            v[i] = rnd();
        }
        cr_assert_eq(kv_reserve(kv, ctx, err, sizeof err), 0, "%s", err);
        kv_write(kv, 0, 0, ctx, k, v);
        attn_forward(sc, kv, 0, q, 4, ctx - 4, out);
        cr_assert_eq(attn_scratch_bytes(sc), bytes, "scratch grew at context %d", ctx);
        for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
            cr_assert(isfinite(out[i]));
        free(k);
        free(v);
    }
    kv_free(kv);
    attn_scratch_free(sc);
}

Test(attention, bad_layout_refused)
{
    char err[256];
    attn_scratch *sc;
    kv_shape s = {.n_layers = 1, .n_kv_heads = 3, .head_dim = 64, .block = 16};
    cr_assert_eq(attn_scratch_create(&sc, 4, 4, s, NULL, err, sizeof err), -1);
    cr_assert_eq(attn_scratch_create(&sc, 0, 6, s, NULL, err, sizeof err), -1);
    /* The fp16 path holds a row in registers: 256 values at most. */
    kv_shape wide = {.n_layers = 1, .n_kv_heads = 1, .head_dim = 264, .block = 16};
    cr_assert_eq(attn_scratch_create(&sc, 1, 1, wide, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "head_dim 264 (up to 256)"), "%s", err);
}
