/* vec8.h: 8-float vectors (GCC vector extensions) for the hot loops.
 *
 * At -O2 GCC 12 vectorizes only loops whose trip count is a multiple of the
 * vector width and never keeps a tile of accumulators in registers; these
 * types make that explicit. They lower to whatever the target has (one AVX
 * register with -march=native, two SSE registers on a portable build).
 */
#ifndef VEC8_H
#define VEC8_H

#include <stdint.h>
#include <string.h>

#ifdef __FMA__
#include <immintrin.h>
#endif

typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));

static inline f32x8 vec8_load(const float *p)
{
    f32x8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vec8_store(float *p, f32x8 v)
{
    memcpy(p, &v, sizeof v);
}

static inline f32x8 vec8_splat(float x)
{
    return (f32x8){x, x, x, x, x, x, x, x};
}

/* a * b + c, fused where the target has FMA: -std=c11 turns off the
 * compiler's contraction of a * b + c. */
static inline f32x8 vec8_fma(f32x8 a, f32x8 b, f32x8 c)
{
#ifdef __FMA__
    return (f32x8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    return a * b + c;
#endif
}

/* mask ? a : b lane by lane; mask lanes are all ones or all zeros, as
 * vector comparisons return them. */
static inline f32x8 vec8_select(i32x8 mask, f32x8 a, f32x8 b)
{
    return (f32x8)(((i32x8)a & mask) | ((i32x8)b & ~mask));
}

static inline f32x8 vec8_min(f32x8 a, f32x8 b)
{
    return vec8_select(a < b, a, b);
}

static inline f32x8 vec8_max(f32x8 a, f32x8 b)
{
    return vec8_select(a > b, a, b);
}

#endif
