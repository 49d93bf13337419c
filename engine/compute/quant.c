/* quant.c: fp16 and group-affine kernels of the KV cache.
 *
 * The decoders work on 8 values at a time with the vectors of vec8.h.
 */
#include "quant.h"

#include "vec8.h"

#include <immintrin.h>

/* The conversions in F16C where the CPU has it (the avx2 path and up),
 * whatever the build's flags: a portable build's _Float16 casts are
 * library calls (__truncsfhf2), a few percent of a prefill. Both round
 * to nearest even. GCC 12 does not vectorize _Float16 conversions by
 * itself. */
__attribute__((target("avx2,fma,f16c"))) static void to_f16_avx2(_Float16 *restrict dst,
                                                                 const float *restrict src, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    for (; i < n; i++)
        dst[i] = (_Float16)src[i];
}

__attribute__((target("avx2,fma,f16c"))) static void
to_f32_avx2(float *restrict dst, const _Float16 *restrict src, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = (float)src[i];
}

void quant_f32_to_f16(_Float16 *restrict dst, const float *restrict src, int n)
{
    if (cpu_active() >= CPU_AVX2) {
        to_f16_avx2(dst, src, n);
        return;
    }
    for (int i = 0; i < n; i++)
        dst[i] = (_Float16)src[i];
}

void quant_f16_to_f32(float *restrict dst, const _Float16 *restrict src, int n)
{
    if (cpu_active() >= CPU_AVX2) {
        to_f32_avx2(dst, src, n);
        return;
    }
    for (int i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

void quant_group_encode(const float *x, int n, int bits, uint8_t *codes, _Float16 *scale,
                        _Float16 *bias)
{
    f32x8 lo8 = vec8_load(x), hi8 = lo8;
    for (int i = 8; i < n; i += 8) {
        f32x8 v = vec8_load(x + i);
        lo8 = vec8_min(v, lo8);
        hi8 = vec8_max(v, hi8);
    }
    float lo = lo8[0], hi = hi8[0];
    for (int l = 1; l < 8; l++) {
        lo = lo8[l] < lo ? lo8[l] : lo;
        hi = hi8[l] > hi ? hi8[l] : hi;
    }
    /* Codes are computed against the fp16-rounded scale and bias, the
     * values decoding will use, so rounding them costs no extra error
     * beyond their own rounding. */
    float levels = (float)((1 << bits) - 1);
    _Float16 b = (_Float16)lo;
    _Float16 s = (_Float16)((hi - (float)b) / levels);
    float inv = (float)s > 0.0f ? 1.0f / (float)s : 0.0f;
    f32x8 vb = vec8_splat((float)b), vinv = vec8_splat(inv);
    f32x8 zero = vec8_splat(0.0f), top = vec8_splat(levels);
    for (int i = 0; i < n; i += 8) {
        /* Clamped to [0, levels] first, so adding 0.5 and truncating
         * rounds to nearest. */
        f32x8 q = vec8_max(vec8_min((vec8_load(x + i) - vb) * vinv, top), zero);
        i32x8 c = __builtin_convertvector(q + 0.5f, i32x8);
        for (int l = 0; l < 8; l++)
            codes[i + l] = (uint8_t)c[l];
    }
    *scale = s;
    *bias = b;
}

/* Codes [i, i + 8) as integers. A 4-bit group of 8 is one 32-bit word
 * with code k at bits [4k, 4k + 4) (low nibble first). */
static inline i32x8 codes8(const uint8_t *restrict packed, int bits, int i)
{
    if (bits == 8) {
        const uint8_t *p = packed + i;
        return (i32x8){p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]};
    }
    const uint8_t *p = packed + i / 2;
    int32_t w = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                          (uint32_t)p[3] << 24);
    const i32x8 shift = {0, 4, 8, 12, 16, 20, 24, 28};
    i32x8 v = {w, w, w, w, w, w, w, w};
    return (v >> shift) & 15;
}

void quant_decode_row(float *restrict dst, const uint8_t *restrict packed, int bits, float scale,
                      float bias, int n)
{
    f32x8 s = vec8_splat(scale), b = vec8_splat(bias);
    for (int i = 0; i < n; i += 8)
        vec8_store(dst + i,
                   vec8_fma(__builtin_convertvector(codes8(packed, bits, i), f32x8), s, b));
}

void quant_decode_cols(float *restrict dst, const uint8_t *restrict packed, int bits,
                       const float *restrict scale, const float *restrict bias, int n)
{
    for (int i = 0; i < n; i += 8) {
        f32x8 c = __builtin_convertvector(codes8(packed, bits, i), f32x8);
        vec8_store(dst + i, vec8_fma(c, vec8_load(scale + i), vec8_load(bias + i)));
    }
}
