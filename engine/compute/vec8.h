/* vec8.h: 8-float vectors (GCC vector extensions) for the hot loops.
 *
 * At -O2 GCC 12 vectorizes only loops whose trip count is a multiple of the
 * vector width and never keeps a tile of accumulators in registers; these
 * types make that explicit. They lower to whatever the function they land
 * in targets: two SSE registers in baseline code, one AVX register in a
 * function VEC8_PATHS compiles for AVX2 or AVX-512, which the kernel path
 * in use (cpu.h) picks. Every operation gives the same bits on either, fused
 * multiply-adds included.
 */
#ifndef VEC8_H
#define VEC8_H

#include <stdint.h>
#include <string.h>

#include "cpu.h"

#if defined(__FMA__) || defined(__F16C__)
#include <immintrin.h>
#endif

typedef float f32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));

/* Every function taking or returning vectors is inlined: a call between a
 * baseline function and one compiled for AVX2 would pass them in
 * different registers. */
#define VEC8_INLINE static inline __attribute__((always_inline))

VEC8_INLINE f32x8 vec8_load(const float *p)
{
    f32x8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

VEC8_INLINE void vec8_store(float *p, f32x8 v)
{
    memcpy(p, &v, sizeof v);
}

VEC8_INLINE f32x8 vec8_splat(float x)
{
    return (f32x8){x, x, x, x, x, x, x, x};
}

/* a * b + c, fused (-std=c11 turns off the compiler's contraction of
 * a * b + c): lane by lane, which GCC makes one vfmadd in a function
 * compiled for FMA and calls to fmaf elsewhere. */
VEC8_INLINE f32x8 vec8_fma(f32x8 a, f32x8 b, f32x8 c)
{
#ifdef __FMA__
    return (f32x8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    f32x8 r;
    for (int i = 0; i < 8; i++)
        r[i] = __builtin_fmaf(a[i], b[i], c[i]);
    return r;
#endif
}

/* mask ? a : b lane by lane; mask lanes are all ones or all zeros, as
 * vector comparisons return them. */
VEC8_INLINE f32x8 vec8_select(i32x8 mask, f32x8 a, f32x8 b)
{
    return (f32x8)(((i32x8)a & mask) | ((i32x8)b & ~mask));
}

/* The fp16 conversions: F16C's in the kernel files compiled for a
 * vector path (kpath.h; attention's task is one). Without __F16C__
 * (every other file, VEC8_PATHS's AVX2 functions included: the macro is
 * a preprocessor test, not the target attribute's) they are IEEE's, in
 * integer lanes: GCC 12 leaves _Float16 casts a scalar conversion per
 * lane through the stack, which took more than half of a 16-sequence
 * decode step in attention (perf, synth:110m). */
typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef uint32_t u32x8 __attribute__((vector_size(32))); /* where lanes wrap */

/* 8 fp16 values as floats (exact). */
VEC8_INLINE f32x8 vec8_load_f16(const _Float16 *p)
{
#ifdef __F16C__
    return (f32x8)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#else
    u16x8 h;
    memcpy(&h, p, sizeof h);
    i32x8 x = __builtin_convertvector(h, i32x8), em = x & 0x7fff,
          sign = (i32x8)((u32x8)(x ^ em) << 16);
    /* Normal: the exponent rebiased; inf and NaN: rebiased to 255, a
     * NaN quiet. */
    i32x8 bits = (em << 13) + (112 << 23);
    bits += (em >= 0x7c00) & (112 << 23);
    bits |= (em > 0x7c00) & 0x400000;
    f32x8 sub = __builtin_convertvector(em, f32x8) * 0x1p-24f; /* exact */
    return (f32x8)((i32x8)vec8_select(em < 0x400, sub, (f32x8)bits) | sign);
#endif
}

/* x rounded to the nearest fp16 value (ties to even), as storing it in
 * an fp16 buffer and loading it back would: F16C's conversions, as ggml's
 * fp16 vectors use them. */
VEC8_INLINE f32x8 vec8_round_f16(f32x8 x)
{
#ifdef __F16C__
    return (f32x8)_mm256_cvtph_ps(_mm256_cvtps_ph((__m256)x, _MM_FROUND_TO_NEAREST_INT));
#else
    i32x8 u = (i32x8)x, a = u & 0x7fffffff, sign = u ^ a;
    /* fp16 normals keep 10 fraction bits: round the 13 below away (a
     * carry into the exponent is right). */
    u32x8 ua = (u32x8)a;
    f32x8 r = (f32x8)((ua + 0xfff + ((ua >> 13) & 1)) & ~0x1fffu);
    /* Below 2^-14, multiples of 2^-24: the float adder rounds to them
     * with 0.5, whose ulp that is. */
    r = vec8_select(a < 0x38800000, ((f32x8)a + 0.5f) - 0.5f, r);
    /* 65520 and up round to infinity; a NaN stays one, quiet, its
     * payload cut to fp16's. */
    r = vec8_select(a >= 0x477ff000, vec8_splat(__builtin_inff()), r);
    r = vec8_select(a > 0x7f800000, (f32x8)((a & ~0x1fff) | 0x400000), r);
    return (f32x8)((i32x8)r | sign);
#endif
}

/* Defines static void name params, which runs name##_body args (a
 * static always-inline function of the vec8 loops) compiled for AVX2,
 * FMA and F16C when the kernel path in use has them, for baseline x86-64
 * otherwise; with AVX-512 the same 256-bit code gets 32 registers, where
 * AVX2's 16 spill a tile of accumulators (the F32 batch product's 4 rows
 * by 4 inputs: a 16-sequence step of synth:110m 37.2 -> 32.6 ms). */
#define VEC8_PATHS(name, params, args)                                                             \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512vl"))) static void name##_avx512 params     \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    __attribute__((target("avx2,fma,f16c"))) static void name##_avx2 params                        \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    static void name##_base params                                                                 \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    static void name params                                                                        \
    {                                                                                              \
        if (cpu_active() >= CPU_AVX512)                                                            \
            name##_avx512 args;                                                                    \
        else if (cpu_active() >= CPU_AVX2)                                                         \
            name##_avx2 args;                                                                      \
        else                                                                                       \
            name##_base args;                                                                      \
    }

VEC8_INLINE f32x8 vec8_min(f32x8 a, f32x8 b)
{
    return vec8_select(a < b, a, b);
}

VEC8_INLINE f32x8 vec8_max(f32x8 a, f32x8 b)
{
    return vec8_select(a > b, a, b);
}

/* The sum of the lanes, pairwise. */
VEC8_INLINE float vec8_sum(f32x8 v)
{
    return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
}

/* e^x for x <= 0 (larger x and NaN are clamped into [-87, 0]), relative
 * error about 2e-7: Cephes' expf polynomial, vectorized. */
VEC8_INLINE f32x8 vec8_exp(f32x8 x)
{
    f32x8 lo = vec8_splat(-87.0f), zero = vec8_splat(0.0f);
    x = vec8_min(vec8_max(x, lo), zero);
    /* n = round(x / ln 2): adding 1.5 * 2^23 rounds to an integer. */
    f32x8 n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    f32x8 r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    f32x8 p = vec8_splat(1.9875691500e-4f);
    p = vec8_fma(p, r, vec8_splat(1.3981999507e-3f));
    p = vec8_fma(p, r, vec8_splat(8.3334519073e-3f));
    p = vec8_fma(p, r, vec8_splat(4.1665795894e-2f));
    p = vec8_fma(p, r, vec8_splat(1.6666665459e-1f));
    p = vec8_fma(p, r, vec8_splat(5.0000001201e-1f));
    p = vec8_fma(p, r * r, r + 1.0f);
    i32x8 e = (__builtin_convertvector(n, i32x8) + 127) << 23;
    return p * (f32x8)e;
}

/* x * sigmoid(x) = x / (1 + e^-x), relative error a few 1e-7 (about
 * 2 ulp) wherever the result is a normal float. e^-|x| never overflows:
 * sigmoid(x) is 1 / (1 + e) for x >= 0 and e / (1 + e) below. A NaN x
 * gives NaN. */
VEC8_INLINE f32x8 vec8_silu(f32x8 x)
{
    f32x8 zero = vec8_splat(0.0f), one = vec8_splat(1.0f);
    f32x8 e = vec8_exp(vec8_select(x < zero, x, -x));
    return x * (vec8_select(x < zero, e, one) / (one + e));
}

#endif
