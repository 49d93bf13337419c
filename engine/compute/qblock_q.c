/* qblock_q.c: the 32-value block types Q8_0 and Q4_0, whose activation
 * type is Q8_0.
 *
 * An activation is its Q8_0 blocks followed by a q8_pack per 8 blocks:
 * the same values laid out for the vector kernels, so that they need not
 * rearrange them for every 4 rows of a matrix. */
#include <math.h>

#include "qblock_int.h"

/* ---- quantization ---- */

/* ggml's quantize_row_q8_0_ref, which llama-quantize uses for weights:
 * d = amax / 127, values rounded half away from zero. */
static void q8_0_quantize(const float *x, void *out, int64_t n)
{
    blk_q8_0 *y = out;
    for (int64_t b = 0; b < n / QK; b++, x += QK) {
        float d = qb_max_abs(x, QK) / 127;
        float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = qb_f2h(d);
        for (int j = 0; j < QK; j++)
            y[b].qs[j] = (int8_t)roundf(x[j] * id);
    }
}

/* The values of blocks 8g .. 8g+7 in register pairs: lo[i] holds the
 * first 16 values of blocks 8g+2i and 8g+2i+1, hi[i] their last 16; base
 * is -8 times the sums of 4 that the dpbusd of lo[i] and hi[i] adds in
 * each int32 lane (Q4_0's offset), d the blocks' scales as floats in the
 * order of qb_pair_sums (0 2 4 6 1 3 5 7). Packs follow 34-byte blocks,
 * so base and d are bytes, written with memcpy and read unaligned. */
typedef struct q8_pack {
    int8_t lo[4][32], hi[4][32];
    uint8_t base[4][8 * sizeof(int32_t)];
    uint8_t d[8 * sizeof(float)];
} q8_pack;

static const int PAIR_ORDER[8] = {0, 2, 4, 6, 1, 3, 5, 7};

static void q8_0_pack(const blk_q8_0 *y, q8_pack *p)
{
    for (int i = 0; i < 4; i++) {
        int32_t base[8];
        for (int h = 0; h < 2; h++) {
            memcpy(p->lo[i] + 16 * h, y[2 * i + h].qs, 16);
            memcpy(p->hi[i] + 16 * h, y[2 * i + h].qs + 16, 16);
        }
        for (int k = 0; k < 8; k++) {
            int s = 0;
            for (int j = 4 * k; j < 4 * k + 4; j++)
                s += p->lo[i][j] + p->hi[i][j];
            base[k] = -8 * s;
        }
        memcpy(p->base[i], base, sizeof base);
    }
    float d[8];
    for (int k = 0; k < 8; k++)
        d[k] = qb_h2f(y[PAIR_ORDER[k]].d);
    memcpy(p->d, d, sizeof d);
}

/* ggml-cpu's x86 quantize_row_q8_0, which quantizes activations on this
 * machine: the inverse scale is 127 / amax rather than 1 / d, and values
 * round half to even (clamped, as its saturating packs do). */
static void q8_0_quantize_act(const float *x, void *out, int64_t n)
{
    blk_q8_0 *y = out;
    int64_t nb = n / QK;
    for (int64_t b = 0; b < nb; b++, x += QK) {
        float amax = qb_max_abs(x, QK);
        float id = amax != 0 ? 127.0f / amax : 0.0f;
        y[b].d = qb_f2h(amax / 127.0f);
        for (int j = 0; j < QK; j++) {
            int q = qb_nearest(x[j] * id);
            y[b].qs[j] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
        }
    }
    q8_pack *packs = (q8_pack *)(y + nb);
    for (int64_t g = 0; g < nb / 8; g++)
        q8_0_pack(y + 8 * g, &packs[g]);
}

/* q8_0_quantize_act and the dequantization in one pass, eight values at
 * a time: each value is its rounded multiple of the block's fp16 scale.
 * The rounding is qb_nearest's, in float (qb_round_grid). */
static void q8_0_round_act(const float *x, float *out, int64_t n)
{
    for (int64_t b = 0; b < n / QK; b++, x += QK, out += QK) {
        float amax = qb_max_abs(x, QK);
        float id = amax != 0 ? 127.0f / amax : 0.0f;
        float d = qb_h2f(qb_f2h(amax / 127.0f));
        for (int k = 0; k < QK; k += 8)
            vec8_store(out + k, qb_round_grid(vec8_load(x + k) * id, -128, 127) * d);
    }
}

/* ggml's quantize_row_q4_0_ref: d = m / -8 where m is the value of
 * largest magnitude, so that m itself maps to -8 exactly. */
static void q4_0_quantize(const float *x, void *out, int64_t n)
{
    blk_q4_0 *y = out;
    for (int64_t b = 0; b < n / QK; b++, x += QK) {
        float amax = 0, m = 0;
        for (int j = 0; j < QK; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                m = x[j];
            }
        float d = m / -8;
        float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = qb_f2h(d);
        for (int j = 0; j < QK / 2; j++) {
            /* Truncation after +8.5 rounds (x * id lies in [-8, 8]); the
             * product is rounded before the add, as -std=c11 keeps it. */
            int lo = (int8_t)(x[j] * id + 8.5f), hi = (int8_t)(x[j + QK / 2] * id + 8.5f);
            y[b].qs[j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
        }
    }
}

/* ---- dequantization and the reference dots ---- */

static void q8_0_dequant(const void *row, float *out, int64_t n)
{
    const blk_q8_0 *x = row;
    for (int64_t b = 0; b < n / QK; b++, out += QK) {
        float d = qb_h2f(x[b].d);
        for (int j = 0; j < QK; j++)
            out[j] = x[b].qs[j] * d;
    }
}

static void q4_0_dequant(const void *row, float *out, int64_t n)
{
    const blk_q4_0 *x = row;
    for (int64_t b = 0; b < n / QK; b++, out += QK) {
        float d = qb_h2f(x[b].d);
        for (int j = 0; j < QK / 2; j++) {
            out[j] = ((x[b].qs[j] & 0xF) - 8) * d;
            out[j + QK / 2] = ((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

static float q8_0_dot_ref(const void *w, const void *x, int64_t n)
{
    const blk_q8_0 *a = w, *y = x;
    float s = 0;
    for (int64_t b = 0; b < n / QK; b++) {
        int sumi = 0;
        for (int j = 0; j < QK; j++)
            sumi += a[b].qs[j] * y[b].qs[j];
        s += (float)sumi * (qb_h2f(a[b].d) * qb_h2f(y[b].d));
    }
    return s;
}

static float q4_0_dot_ref(const void *w, const void *x, int64_t n)
{
    const blk_q4_0 *a = w;
    const blk_q8_0 *y = x;
    float s = 0;
    for (int64_t b = 0; b < n / QK; b++) {
        int sumi = 0;
        for (int j = 0; j < QK / 2; j++)
            sumi += ((a[b].qs[j] & 0xF) - 8) * y[b].qs[j] +
                    ((a[b].qs[j] >> 4) - 8) * y[b].qs[j + QK / 2];
        s += (float)sumi * (qb_h2f(a[b].d) * qb_h2f(y[b].d));
    }
    return s;
}

/* ---- the vector kernels: R rows against one activation ---- */

#ifdef QB_AVX2

/* Both kernels take 8 blocks at a time. Blocks 2i and 2i+1 share a
 * register pair, "lo" holding the first 16 values of each (in its two
 * 128-bit halves) and "hi" the last 16, as in the activation's q8_pack.
 * A pair's dpbusd leaves 4 partial
 * sums per block, qb_pair_sums one sum per block (in the order 0 2 4 6
 * 1 3 5 7), and one multiply-add applies the eight blocks' scales.
 * Leftover blocks (rows of a length not a multiple of 256) go one at a
 * time. */
typedef struct q8_group {
    __m256i lo[4], hi[4];
    __m256 d;
} q8_group;

static inline uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The half-float scales of the 8 blocks at p, p + s, ..., in the order of
 * qb_pair_sums. With AVX-512 VBMI and blocks of up to 18 bytes, one byte
 * permute gathers them from two 64-byte loads. */
static inline __m256 group_scales(const uint8_t *p, int s)
{
#ifdef __AVX512VBMI__
    if (7 * s + 2 <= 128) {
        /* Byte pairs (o, o + 1) for each block's offset o, in order. */
#define PAIR(k) (short)((k)*s * 0x101 + 0x100)
        const __m128i idx =
            _mm_setr_epi16(PAIR(0), PAIR(2), PAIR(4), PAIR(6), PAIR(1), PAIR(3), PAIR(5), PAIR(7));
#undef PAIR
        __m512i v = _mm512_permutex2var_epi8(_mm512_loadu_si512(p), _mm512_castsi128_si512(idx),
                                             _mm512_loadu_si512(p + 64));
        return _mm256_cvtph_ps(_mm512_castsi512_si128(v));
    }
#endif
    __m128i v = _mm_cvtsi32_si128(ld16(p));
    v = _mm_insert_epi16(v, ld16(p + 2 * s), 1);
    v = _mm_insert_epi16(v, ld16(p + 4 * s), 2);
    v = _mm_insert_epi16(v, ld16(p + 6 * s), 3);
    v = _mm_insert_epi16(v, ld16(p + s), 4);
    v = _mm_insert_epi16(v, ld16(p + 3 * s), 5);
    v = _mm_insert_epi16(v, ld16(p + 5 * s), 6);
    v = _mm_insert_epi16(v, ld16(p + 7 * s), 7);
    return _mm256_cvtph_ps(v);
}

static inline void q8_group_load(const q8_pack *p, q8_group *g)
{
#pragma GCC unroll 8
    for (int i = 0; i < 4; i++) {
        g->lo[i] = _mm256_loadu_si256((const __m256i *)p->lo[i]);
        g->hi[i] = _mm256_loadu_si256((const __m256i *)p->hi[i]);
    }
    g->d = _mm256_loadu_ps((const float *)p->d);
}

/* int8 x int8 through the u8 x s8 product: |a| times b with a's sign. */
static inline __m256i dot_s8(__m256i acc, __m256i a, __m256i b)
{
    return qb_dpbusd(acc, _mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

QB_INLINE void q8_0_rows(const char *w, size_t step, int R, const void *x, int64_t n, float *y,
                         size_t ystep)
{
    const blk_q8_0 *xb = x;
    const int64_t nb = n / QK, full = nb / 8 * 8;
    const q8_pack *packs = (const q8_pack *)(xb + nb);
    __m256 acc[QB_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < full; b += 8) {
        q8_group g;
        q8_group_load(&packs[b / 8], &g);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const blk_q8_0 *wb = (const blk_q8_0 *)(w + r * step) + b;
            __m256i v[4];
#pragma GCC unroll 8
            for (int i = 0; i < 4; i++) {
                __m256i lo = qb_load_pair(wb[2 * i].qs, wb[2 * i + 1].qs);
                __m256i hi = qb_load_pair(wb[2 * i].qs + 16, wb[2 * i + 1].qs + 16);
                v[i] = dot_s8(dot_s8(_mm256_setzero_si256(), lo, g.lo[i]), hi, g.hi[i]);
            }
            __m256 d = _mm256_mul_ps(group_scales((const uint8_t *)wb, sizeof *wb), g.d);
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(qb_pair_sums(v)), acc[r]);
        }
    }
    for (int64_t b = full; b < nb; b++) {
        __m256i qy = _mm256_loadu_si256((const __m256i *)xb[b].qs);
        float dy = qb_h2f(xb[b].d);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const blk_q8_0 *wb = (const blk_q8_0 *)(w + r * step) + b;
            __m256i dot =
                dot_s8(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)wb->qs), qy);
            acc[r] = _mm256_fmadd_ps(qb_scale(wb->d, dy), _mm256_cvtepi32_ps(dot), acc[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        y[r * ystep] = qb_hsum(acc[r]);
}

/* The nibbles (0..15) are the unsigned operand; the -8 offset is folded
 * into the sums' starting values (q8_pack's base). */
QB_INLINE void q4_0_rows(const char *w, size_t step, int R, const void *x, int64_t n, float *y,
                         size_t ystep)
{
    const blk_q8_0 *xb = x;
    const int64_t nb = n / QK, full = nb / 8 * 8;
    const q8_pack *packs = (const q8_pack *)(xb + nb);
    const __m256i eight = _mm256_set1_epi8(8), zero = _mm256_setzero_si256();
    __m256 acc[QB_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < full; b += 8) {
        q8_group g;
        __m256i base[4];
        q8_group_load(&packs[b / 8], &g);
#pragma GCC unroll 8
        for (int i = 0; i < 4; i++)
            base[i] = _mm256_loadu_si256((const __m256i *)packs[b / 8].base[i]);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const blk_q4_0 *wb = (const blk_q4_0 *)(w + r * step) + b;
            __m256i v[4];
#pragma GCC unroll 8
            for (int i = 0; i < 4; i++) {
                __m256i q = qb_load_pair(wb[2 * i].qs, wb[2 * i + 1].qs);
                v[i] = qb_dpbusd(qb_dpbusd(base[i], qb_nib_lo(q), g.lo[i]), qb_nib_hi(q), g.hi[i]);
            }
            __m256 d = _mm256_mul_ps(group_scales((const uint8_t *)wb, sizeof *wb), g.d);
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(qb_pair_sums(v)), acc[r]);
        }
    }
    for (int64_t b = full; b < nb; b++) {
        __m256i qy = _mm256_loadu_si256((const __m256i *)xb[b].qs);
        __m256i base = _mm256_sub_epi32(zero, qb_dpbusd(zero, eight, qy));
        float dy = qb_h2f(xb[b].d);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const blk_q4_0 *wb = (const blk_q4_0 *)(w + r * step) + b;
            __m128i nib = _mm_loadu_si128((const __m128i *)wb->qs);
            __m256i q = _mm256_set_m128i(nib, nib);
            __m256i qw = _mm256_blend_epi32(qb_nib_lo(q), qb_nib_hi(q), 0xF0);
            __m256i dot = qb_dpbusd(base, qw, qy);
            acc[r] = _mm256_fmadd_ps(qb_scale(wb->d, dy), _mm256_cvtepi32_ps(dot), acc[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        y[r * ystep] = qb_hsum(acc[r]);
}

QB_GEMV(q8_0_gemv, q8_0_rows)
QB_GEMV(q4_0_gemv, q4_0_rows)

#else

QB_GEMV_REF(q8_0_gemv, q8_0_dot_ref)
QB_GEMV_REF(q4_0_gemv, q4_0_dot_ref)

#endif

const qb_type qb_q8_0 = {
    .act = WT_Q8_0,
    .act_block = QK,
    .act_block_bytes = sizeof(blk_q8_0),
    .act_group_bytes = sizeof(q8_pack),
    .dequant = q8_0_dequant,
    .quantize = q8_0_quantize,
    .quantize_act = q8_0_quantize_act,
    .round_act = q8_0_round_act,
    .dot_ref = q8_0_dot_ref,
    .gemv = q8_0_gemv,
};

const qb_type qb_q4_0 = {
    .act = WT_Q8_0,
    .act_block = QK,
    .act_block_bytes = sizeof(blk_q8_0),
    .act_group_bytes = sizeof(q8_pack),
    .dequant = q4_0_dequant,
    .quantize = q4_0_quantize,
    .quantize_act = q8_0_quantize_act,
    .round_act = q8_0_round_act,
    .dot_ref = q4_0_dot_ref,
    .gemv = q4_0_gemv,
};
