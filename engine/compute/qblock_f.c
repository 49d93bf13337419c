/* qblock_f.c: the float weight types, F32, F16 and BF16. Their activation
 * type is their own: the activation is rounded to it (to nearest even)
 * and the dot product runs in f32 on the converted values, whose products
 * are exact in f32 for the two half types. */
#include "qblock_int.h"

enum fkind { K_F32, K_F16, K_BF16 };

/* Element i of a row of kind k. */
QB_INLINE float fval(enum fkind k, const void *p, int64_t i)
{
    switch (k) {
    case K_F16:
        return qb_h2f(((const uint16_t *)p)[i]);
    case K_BF16:
        return qb_bf2f(((const uint16_t *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

QB_INLINE void fstore(enum fkind k, void *p, int64_t i, float v)
{
    switch (k) {
    case K_F16:
        ((uint16_t *)p)[i] = qb_f2h(v);
        break;
    case K_BF16:
        ((uint16_t *)p)[i] = qb_f2bf(v);
        break;
    default:
        ((float *)p)[i] = v;
        break;
    }
}

QB_INLINE void fquantize(enum fkind k, const float *x, void *out, int64_t n)
{
    int64_t i = 0;
#ifdef QB_AVX2
    if (k == K_F16)
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)((uint16_t *)out + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; i++)
        fstore(k, out, i, x[i]);
}

QB_INLINE float fdot_ref(enum fkind k, const void *w, const void *x, int64_t n)
{
    float s = 0;
    for (int64_t i = 0; i < n; i++)
        s += fval(k, w, i) * fval(k, x, i);
    return s;
}

#ifdef QB_AVX2

/* Elements i .. i+7 as floats. */
QB_INLINE __m256 fload8(enum fkind k, const void *p, int64_t i)
{
    const uint16_t *h = (const uint16_t *)p + i;
    switch (k) {
    case K_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
    case K_BF16:
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)h)), 16));
    default:
        return _mm256_loadu_ps((const float *)p + i);
    }
}

QB_INLINE void fdequant(enum fkind k, const void *row, float *out, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, fload8(k, row, i));
    for (; i < n; i++)
        out[i] = fval(k, row, i);
}

QB_INLINE void frows(enum fkind k, const char *w, size_t step, int R, const void *x, int64_t n,
                     float *y, size_t ystep)
{
    __m256 acc[QB_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    /* The rows' next lines are prefetched once a line (qb_ahead): a
     * 64-byte line holds `line` values of `size` bytes. */
    const int64_t line = k == K_F32 ? 16 : 32, size = 64 / line;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = fload8(k, x, i);
        if (i % line == 0)
#pragma GCC unroll 8
            for (int r = 0; r < R; r++)
                qb_ahead(w + r * step + i * size, 64);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
            acc[r] = _mm256_fmadd_ps(fload8(k, w + r * step, i), xv, acc[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        float s = qb_hsum(acc[r]);
        for (int64_t j = i; j < n; j++)
            s += fval(k, w + r * step, j) * fval(k, x, j);
        y[r * ystep] = s;
    }
}

#else

QB_INLINE void fdequant(enum fkind k, const void *row, float *out, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = fval(k, row, i);
}

QB_INLINE void frows(enum fkind k, const char *w, size_t step, int R, const void *x, int64_t n,
                     float *y, size_t ystep)
{
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        y[r * ystep] = fdot_ref(k, w + r * step, x, n);
}

#endif

/* x rounded to kind k and back, through a small buffer a piece at a time:
 * the same conversions as fquantize and fdequant, so the same bits. */
QB_INLINE void fround(enum fkind k, const float *x, float *out, int64_t n)
{
    float buf[64]; /* room for 64 values of any kind */
    for (int64_t i = 0; i < n; i += 64) {
        int64_t m = n - i < 64 ? n - i : 64;
        fquantize(k, x + i, buf, m);
        fdequant(k, buf, out + i, m);
    }
}

/* The three types' entries: the functions above with the kind fixed. */
#define FLOAT_TYPE(name, kind, id)                                                                 \
    static void name##_dequant(const void *row, float *out, int64_t n)                             \
    {                                                                                              \
        fdequant(kind, row, out, n);                                                               \
    }                                                                                              \
    static void name##_quantize(const float *x, void *out, int64_t n)                              \
    {                                                                                              \
        fquantize(kind, x, out, n);                                                                \
    }                                                                                              \
    static void name##_round_act(const float *x, float *out, int64_t n)                            \
    {                                                                                              \
        fround(kind, x, out, n);                                                                   \
    }                                                                                              \
    static float name##_dot_ref(const void *w, const void *x, int64_t n)                           \
    {                                                                                              \
        return fdot_ref(kind, w, x, n);                                                            \
    }                                                                                              \
    QB_INLINE void name##_rows(const char *w, size_t step, int R, const void *x, int64_t n,        \
                               float *y, size_t ystep)                                             \
    {                                                                                              \
        frows(kind, w, step, R, x, n, y, ystep);                                                   \
    }                                                                                              \
    QB_GEMV(name##_gemv, name##_rows)                                                              \
    const qb_type QB_SYM(qb_##name) = {                                                            \
        .act = id,                                                                                 \
        .act_block = 1,                                                                            \
        .act_block_bytes = kind == K_F32 ? 4 : 2,                                                  \
        .dequant = name##_dequant,                                                                 \
        .quantize = name##_quantize,                                                               \
        .quantize_act = name##_quantize,                                                           \
        .round_act = name##_round_act,                                                             \
        .dot_ref = name##_dot_ref,                                                                 \
        .gemv = name##_gemv,                                                                       \
    };

FLOAT_TYPE(f32, K_F32, WT_F32)
FLOAT_TYPE(f16, K_F16, WT_F16)
FLOAT_TYPE(bf16, K_BF16, WT_BF16)
