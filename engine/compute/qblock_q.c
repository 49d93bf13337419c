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

/* Each pair of blocks as the Q4_0 kernel reads it: the low halves of
 * their values, the high halves, and -8 times the sum of lo[j] + hi[j]
 * over every 4 j (its starting sums). */
static void q8_0_pack(const blk_q8_0 *y, q8_pack *p)
{
    for (int i = 0; i < 4; i++) {
        const int8_t *a = y[2 * i].qs, *b = y[2 * i + 1].qs;
#ifdef QB_AVX2
        /* In registers: summing the copies back from memory stalled on
         * loads wider than the stores that had just written them. */
        const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
        __m256i lo = _mm256_loadu2_m128i((const __m128i *)b, (const __m128i *)a);
        __m256i hi = _mm256_loadu2_m128i((const __m128i *)(b + 16), (const __m128i *)(a + 16));
        _mm256_storeu_si256((__m256i *)p->lo[i], lo);
        _mm256_storeu_si256((__m256i *)p->hi[i], hi);
        __m256i pairs =
            _mm256_add_epi16(_mm256_maddubs_epi16(ones8, lo), _mm256_maddubs_epi16(ones8, hi));
        __m256i sums = _mm256_madd_epi16(pairs, ones16);
        _mm256_storeu_si256((__m256i *)p->base[i],
                            _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 3)));
#else
        int32_t base[8];
        memcpy(p->lo[i], a, 16);
        memcpy(p->lo[i] + 16, b, 16);
        memcpy(p->hi[i], a + 16, 16);
        memcpy(p->hi[i] + 16, b + 16, 16);
        for (int k = 0; k < 8; k++) {
            int s = 0;
            for (int j = 4 * k; j < 4 * k + 4; j++)
                s += p->lo[i][j] + p->hi[i][j];
            base[k] = -8 * s;
        }
        memcpy(p->base[i], base, sizeof base);
#endif
    }
    float d[8];
    for (int k = 0; k < 8; k++)
        d[k] = qb_h2f(y[PAIR_ORDER[k]].d);
    memcpy(p->d, d, sizeof d);
}

/* ggml-cpu's x86 quantize_row_q8_0, which quantizes activations on this
 * machine: the inverse scale is 127 / amax rather than 1 / d, and values
 * round half to even (clamped, as its saturating packs do): qb_nearest's
 * arithmetic, 8 lanes at a time. A batch's inputs are quantized on one
 * thread while the others wait. */
static void q8_0_quantize_act(const float *x, void *out, int64_t n)
{
    typedef int8_t i8x8 __attribute__((vector_size(8)));
    blk_q8_0 *y = out;
    int64_t nb = n / QK;
    for (int64_t b = 0; b < nb; b++, x += QK) {
        float amax = qb_max_abs(x, QK);
        float id = amax != 0 ? 127.0f / amax : 0.0f;
        y[b].d = qb_f2h(amax / 127.0f);
        for (int j = 0; j < QK; j += 8) {
            i32x8 q = ((i32x8)(vec8_load(x + j) * id + 12582912.0f) & 0x007fffff) - 0x00400000;
            i32x8 lo = (q < -128), hi = (q > 127); /* lanes of -1 where true */
            q = (q & ~(lo | hi)) | (lo & -128) | (hi & 127);
            i8x8 q8 = __builtin_convertvector(q, i8x8);
            memcpy(y[b].qs + j, &q8, sizeof q8);
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

/* int8 x int8 through the u8 x s8 product: |a| (ua) times b with a's
 * sign. A batch kernel takes |a| once for all its activations. */
static inline __m256i dot_s8u(__m256i acc, __m256i ua, __m256i a, __m256i b)
{
    return qb_dpbusd(acc, ua, _mm256_sign_epi8(b, a));
}

static inline __m256i dot_s8(__m256i acc, __m256i a, __m256i b)
{
    return dot_s8u(acc, _mm256_sign_epi8(a, a), a, b);
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
            qb_ahead(wb, 8 * sizeof *wb);
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
            qb_ahead(wb, 8 * sizeof *wb);
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

/* ---- batch kernels: QB_TILE_R rows by C activations (qb_gemm) ----
 *
 * Block pair i of a group of 8, as q8_0_rows and q4_0_rows read it, is
 * unpacked once for the tile's rows and dotted with each activation's
 * pack; each (row, activation) keeps its pairs' sums reduced two at a
 * time (qb_sums2), then the float steps of the gemv kernels. Q8_0's
 * kernel takes |w| once for every activation; Q4_0's splits the nibbles
 * once. */
#define QB_TILE_R 2

/* The pack of group g of the activation at a (of nb blocks). */
static inline const q8_pack *act_pack(const char *a, int64_t nb, int64_t g)
{
    return (const q8_pack *)((const blk_q8_0 *)a + nb) + g;
}

/* Block pair i of group g of the row at w, as the unsigned and signed
 * operands of its lo and hi registers: Q8_0 gives |w| and w, Q4_0 the
 * nibbles (the -8 comes with the activation's base). */
QB_INLINE void q8_0_pair(const char *w, int64_t g, int i, __m256i u[2], __m256i s[2])
{
    const blk_q8_0 *wb = (const blk_q8_0 *)w + 8 * g + 2 * i;
    s[0] = qb_load_pair(wb[0].qs, wb[1].qs);
    s[1] = qb_load_pair(wb[0].qs + 16, wb[1].qs + 16);
    u[0] = _mm256_sign_epi8(s[0], s[0]);
    u[1] = _mm256_sign_epi8(s[1], s[1]);
}

QB_INLINE void q4_0_pair(const char *w, int64_t g, int i, __m256i u[2], __m256i s[2])
{
    const blk_q4_0 *wb = (const blk_q4_0 *)w + 8 * g + 2 * i;
    __m256i q = qb_load_pair(wb[0].qs, wb[1].qs);
    u[0] = qb_nib_lo(q);
    u[1] = qb_nib_hi(q);
    s[0] = s[1] = _mm256_setzero_si256();
}

/* Pair i of one (row, activation): Q8_0's signed dot, Q4_0's unsigned
 * one from the activation's base. */
QB_INLINE __m256i q8_0_pair_dot(const __m256i u[2], const __m256i s[2], const q8_pack *p, int i)
{
    __m256i lo = _mm256_loadu_si256((const __m256i *)p->lo[i]);
    __m256i hi = _mm256_loadu_si256((const __m256i *)p->hi[i]);
    return dot_s8u(dot_s8u(_mm256_setzero_si256(), u[0], s[0], lo), u[1], s[1], hi);
}

QB_INLINE __m256i q4_0_pair_dot(const __m256i u[2], const __m256i s[2], const q8_pack *p, int i)
{
    (void)s;
    __m256i base = _mm256_loadu_si256((const __m256i *)p->base[i]);
    return qb_dpbusd2_nib(base, u[0], _mm256_loadu_si256((const __m256i *)p->lo[i]), u[1],
                          _mm256_loadu_si256((const __m256i *)p->hi[i]));
}

/* The tile of Q8_0 (q4 0) or Q4_0 (q4 1) rows. */
QB_INLINE void q8_tile(int q4, const char *w, size_t row_bytes, const char *acts, size_t stride,
                       int C, int64_t n, float *y, size_t ystride)
{
    const int64_t nb = n / QK;
    const size_t bsize = q4 ? sizeof(blk_q4_0) : sizeof(blk_q8_0);
    __m256 acc[QB_TILE_R][QB_TILE_C];
#pragma GCC unroll 16
    for (int r = 0; r < QB_TILE_R; r++)
#pragma GCC unroll 16
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm256_setzero_ps();
    for (int64_t g = 0; g < nb / 8; g++) {
        __m256i s01[QB_TILE_R][QB_TILE_C], v[QB_TILE_R][QB_TILE_C];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m256i u[QB_TILE_R][2], s[QB_TILE_R][2];
#pragma GCC unroll 16
            for (int r = 0; r < QB_TILE_R; r++) {
                if (q4)
                    q4_0_pair(w + r * row_bytes, g, i, u[r], s[r]);
                else
                    q8_0_pair(w + r * row_bytes, g, i, u[r], s[r]);
            }
#pragma GCC unroll 16
            for (int c = 0; c < C; c++) {
                const q8_pack *p = act_pack(acts + (size_t)c * stride, nb, g);
#pragma GCC unroll 16
                for (int r = 0; r < QB_TILE_R; r++) {
                    __m256i d =
                        q4 ? q4_0_pair_dot(u[r], s[r], p, i) : q8_0_pair_dot(u[r], s[r], p, i);
                    if (i == 1)
                        s01[r][c] = qb_sums2(v[r][c], d);
                    else if (i == 3)
                        v[r][c] = qb_sums4(s01[r][c], qb_sums2(v[r][c], d));
                    else
                        v[r][c] = d;
                }
            }
        }
#pragma GCC unroll 16
        for (int r = 0; r < QB_TILE_R; r++) {
            __m256 dw =
                group_scales((const uint8_t *)(w + r * row_bytes) + 8 * g * bsize, (int)bsize);
#pragma GCC unroll 16
            for (int c = 0; c < C; c++) {
                const q8_pack *p = act_pack(acts + (size_t)c * stride, nb, g);
                __m256 d = _mm256_mul_ps(dw, _mm256_loadu_ps((const float *)p->d));
                acc[r][c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(v[r][c]), acc[r][c]);
            }
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < QB_TILE_R; r++)
#pragma GCC unroll 16
        for (int c = 0; c < C; c++)
            y[(size_t)c * ystride + r] = qb_hsum(acc[r][c]);
}

QB_INLINE void q8_0_tile(const char *w, size_t row_bytes, const char *acts, size_t stride, int C,
                         int64_t n, float *y, size_t ystride)
{
    q8_tile(0, w, row_bytes, acts, stride, C, n, y, ystride);
}

QB_INLINE void q4_0_tile(const char *w, size_t row_bytes, const char *acts, size_t stride, int C,
                         int64_t n, float *y, size_t ystride)
{
    q8_tile(1, w, row_bytes, acts, stride, C, n, y, ystride);
}

QB_GEMM_TILED(q8_0_tiled, q8_0_tile, QB_TILE_R, QK_K)
QB_GEMM_TILED(q4_0_gemm, q4_0_tile, QB_TILE_R, QK_K)

/* The next rows a kernel will read, prefetched while it works on the
 * current ones, in address order and a few lines at a time: the
 * prefetchers would not follow rows read a group at a time (AMX) or a
 * few rows at a time with their first blocks read cold (VNNI), and a
 * burst of prefetches would stall. lane_ahead_of spreads `bytes` from
 * `next` (NULL: none) over `steps` calls of lane_ahead_step. */
typedef struct lane_ahead {
    const char *next;
    size_t left, step;
} lane_ahead;

static inline lane_ahead lane_ahead_of(const char *next, size_t bytes, size_t steps)
{
    lane_ahead a = {next, next ? bytes : 0, 0};
    a.step = (a.left + steps * 64 - 1) / (steps * 64) * 64;
    return a;
}

static inline void lane_ahead_step(lane_ahead *a)
{
    for (size_t off = 0; off < a->step && a->left > 0; off += 64, a->left -= 64, a->next += 64)
        _mm_prefetch(a->next, _MM_HINT_T0);
}

#if QB_PATH >= 2
/* x[i][j] becomes x[j][i]. The first two steps transpose 4 x 4 blocks
 * within each 128-bit lane; then x[4g + j]'s lane L holds rows 4g to
 * 4g + 3 of column 4L + j, and two steps of lane shuffles gather each
 * column's four lanes. */
static inline void transpose_16x16(__m512 x[16])
{
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(x[i], x[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(x[i], x[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
        x[g] = _mm512_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        x[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        x[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        x[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; j++) {
        __m512 u0 = _mm512_shuffle_f32x4(x[j], x[4 + j], 0x88);
        __m512 u1 = _mm512_shuffle_f32x4(x[j], x[4 + j], 0xdd);
        __m512 v0 = _mm512_shuffle_f32x4(x[8 + j], x[12 + j], 0x88);
        __m512 v1 = _mm512_shuffle_f32x4(x[8 + j], x[12 + j], 0xdd);
        t[j] = _mm512_shuffle_f32x4(u0, v0, 0x88);      /* column j */
        t[4 + j] = _mm512_shuffle_f32x4(u1, v1, 0x88);  /* 4 + j */
        t[8 + j] = _mm512_shuffle_f32x4(u0, v0, 0xdd);  /* 8 + j */
        t[12 + j] = _mm512_shuffle_f32x4(u1, v1, 0xdd); /* 12 + j */
    }
    for (int i = 0; i < 16; i++)
        x[i] = t[i];
}

/* Row m's lane i is y[i][m]: an activation's 16 rows are one store once
 * transposed. Stored a value at a time, they were 14% of the AMX kernel,
 * the 16 lines ystride apart conflicting in L1. */
static inline void lane_store(__m512 out[16], int b, float *y, size_t ystride)
{
    transpose_16x16(out);
    for (int i = 0; i < b; i++)
        _mm512_storeu_ps(y + (size_t)i * ystride, out[i]);
}
#endif

#if QB_PATH <= 2

/* ---- without VNNI: a batch of Q8_0 activations in the lanes of int16 ----
 *
 * The VNNI path's lane kernel (below) with vpmaddwd for vpdpbusd: a
 * block's sums for one row by L16_N activations are one vector, an
 * activation an int32 lane, from 16 products of the row's value pair
 * 2t, 2t + 1 (sign-extended to int16 and broadcast) by each activation's
 * (stored as int16). Two ops a pair, where the tiled kernel's int8
 * products take four (the sign trick: vpsignb, vpmaddubsw, vpmaddwd, an
 * add) and reduce the sums across lanes after; with its (row, activation)
 * sums in registers, the tiled kernel's 2 x 4 tile also spilled. The
 * float arithmetic after the sums is q8_0_rows's, lane for lane, as on
 * the VNNI path. Full groups of 8 blocks only (rows of a multiple of
 * 256). One Xeon core, 16 activations, a 100 MB matrix, GMAC/s against
 * the tiled kernel's: AVX2 57 / 48, AVX-512 (16 activations a 512-bit
 * vector) 66 / 53. */

#if QB_PATH == 1
#define L16_N 8 /* activations a vector */
typedef __m256i l16_vi;
typedef __m256 l16_vf;
#define L16(op) _mm256_##op
#else
#define L16_N 16
typedef __m512i l16_vi;
typedef __m512 l16_vf;
#define L16(op) _mm512_##op
#endif
#define L16_M 16 /* rows a call */
#define L16_C 2  /* vectors of activations a call: each row's int16 values serve them all */
/* Rows a pass over a vector of activations: each loaded pair of an
 * activation block serves them all. */
#define L16_ROWS 4
/* Groups of 8 blocks a chunk: the pass's rows as int16, L16_ROWS x 16
 * blocks x 64 bytes, stay in L1 while the chunk lasts. */
#define L16_CHUNK 2
/* Batches of fewer than this have no pack and take the tiled kernel:
 * the lanes cost as much for 1 activation as for L16_N (on one core,
 * GMAC/s of the two: AVX2 27 / 46 at 4 activations, 40 / 45 at 6, 53 /
 * 47 at 8; AVX-512 50 / 53 at 12, 58 / 51 at 14). */
#if QB_PATH == 1
#define L16_MIN 8
#else
#define L16_MIN 13
#endif
_Static_assert(L16_M % L16_ROWS == 0, "passes of whole rows");

/* One block of L16_N activations: q[t][2i + u] is value 2t + u of
 * activation i, d their scales. Activations past the batch are zeros. */
typedef struct l16_block {
    int16_t q[QK / 2][2 * L16_N];
    float d[L16_N];
} l16_block;

static size_t l16_batch_bytes(int b, int64_t n)
{
    if (b < L16_MIN)
        return 0;
    return (size_t)((b + L16_N - 1) / L16_N) * (size_t)(n / QK) * sizeof(l16_block);
}

/* The batch in vectors of L16_N activations, block after block. */
static void l16_pack(const void *acts, size_t stride, int b, int64_t n, void *packed)
{
    int64_t nb = n / QK;
    if (b < L16_MIN)
        return;
    l16_block *p = packed;
    for (int c = 0; c * L16_N < b; c++) {
        for (int64_t k = 0; k < nb; k++) {
            l16_block *blk = &p[c * nb + k];
            memset(blk, 0, sizeof *blk);
            for (int i = 0; i < L16_N && c * L16_N + i < b; i++) {
                const blk_q8_0 *a =
                    (const blk_q8_0 *)((const char *)acts + (size_t)(c * L16_N + i) * stride) + k;
                for (int v = 0; v < QK; v++)
                    blk->q[v / 2][2 * i + v % 2] = a->qs[v];
                blk->d[i] = qb_h2f(a->d);
            }
        }
    }
}

static inline int32_t ld_pair(const int16_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#if QB_PATH == 1
/* x[i][j] becomes x[j][i]. */
static inline void transpose_8x8(__m256 x[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
    }
    for (int g = 0; g < 8; g += 4) {
        u[g] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int j = 0; j < 4; j++) {
        x[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        x[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

/* Row m's lane i is y[i][m]: an activation's rows are one store once
 * transposed. */
static inline void l16_store(l16_vf out[L16_M], int b, float *y, size_t ystride)
{
    for (int h = 0; h < L16_M; h += 8) {
        transpose_8x8(out + h);
        for (int i = 0; i < b; i++)
            _mm256_storeu_ps(y + (size_t)i * ystride + h, out[h + i]);
    }
}
#else
#define l16_store lane_store
#endif

/* 16 rows at w times nc vectors of activations (blocks: the first's
 * pack; b activations in all) into y[i * ystride + r], the next tile's
 * rows (`next`, NULL for none) prefetched meanwhile. As the VNNI
 * lane_rows, lane j of a row's float sums taken at a time. */
static void l16_rows(const char *w, const char *next, size_t row_bytes, const l16_block *blocks,
                     int64_t nb, int nc, int b, float *y, size_t ystride)
{
    l16_vf out[L16_C][L16_M];
    for (int m = 0; m < L16_M; m += L16_ROWS) {
        lane_ahead ahead =
            lane_ahead_of(m + L16_ROWS < L16_M ? w + (size_t)(m + L16_ROWS) * row_bytes : next,
                          L16_ROWS * row_bytes, (size_t)(nb * nc));
        const blk_q8_0 *row[L16_ROWS];
        l16_vf acc[L16_C][L16_ROWS][8];
        for (int r = 0; r < L16_ROWS; r++)
            row[r] = (const blk_q8_0 *)(w + (size_t)(m + r) * row_bytes);
        for (int64_t g0 = 0; g0 < nb; g0 += 8 * L16_CHUNK) {
            int groups = (int)((nb - g0) / 8 < L16_CHUNK ? (nb - g0) / 8 : L16_CHUNK);
            /* Per row: its values as int16, block by block, and each
             * group's scales in the order of the lanes. */
            int16_t wq[L16_ROWS][8 * L16_CHUNK][QK];
            float dw[L16_ROWS][L16_CHUNK][8];
            for (int r = 0; r < L16_ROWS; r++)
                for (int i = 0; i < groups; i++) {
                    const blk_q8_0 *wb = row[r] + g0 + 8 * i;
                    _mm256_storeu_ps(dw[r][i], group_scales((const uint8_t *)wb, sizeof *wb));
                    for (int k = 0; k < 8; k++) {
                        __m256i q = _mm256_loadu_si256((const __m256i *)wb[k].qs);
                        int16_t *to = wq[r][8 * i + k];
                        _mm256_storeu_si256((__m256i *)to,
                                            _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)));
                        _mm256_storeu_si256((__m256i *)(to + 16),
                                            _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)));
                    }
                }
            for (int c = 0; c < nc; c++) {
                const l16_block *pack = blocks + (size_t)c * (size_t)nb + g0;
                for (int j = 0; j < 8; j++) {
                    l16_vf sum[L16_ROWS];
#pragma GCC unroll 8
                    for (int r = 0; r < L16_ROWS; r++)
                        sum[r] = g0 ? acc[c][r][j] : L16(setzero_ps)();
                    for (int i = 0; i < groups; i++) {
                        lane_ahead_step(&ahead);
                        int k = 8 * i + PAIR_ORDER[j];
                        const l16_block *blk = &pack[k];
                        l16_vi s[L16_ROWS];
#pragma GCC unroll 8
                        for (int r = 0; r < L16_ROWS; r++)
                            s[r] = L16(set1_epi32)(0);
#pragma GCC unroll 4
                        for (int t = 0; t < QK / 2; t++) {
                            l16_vi a;
                            memcpy(&a, blk->q[t], sizeof a);
#pragma GCC unroll 8
                            for (int r = 0; r < L16_ROWS; r++)
                                s[r] = L16(add_epi32)(
                                    s[r],
                                    L16(madd_epi16)(a, L16(set1_epi32)(ld_pair(wq[r][k] + 2 * t))));
                        }
                        l16_vf dx = L16(loadu_ps)(blk->d);
#pragma GCC unroll 8
                        for (int r = 0; r < L16_ROWS; r++)
                            sum[r] = L16(fmadd_ps)(L16(mul_ps)(L16(set1_ps)(dw[r][i][j]), dx),
                                                   L16(cvtepi32_ps)(s[r]), sum[r]);
                    }
#pragma GCC unroll 8
                    for (int r = 0; r < L16_ROWS; r++)
                        acc[c][r][j] = sum[r];
                }
            }
        }
        /* A row's 8 lanes in qb_hsum's order: ((0 + 4) + (2 + 6)) +
         * ((1 + 5) + (3 + 7)). */
        for (int c = 0; c < nc; c++)
            for (int r = 0; r < L16_ROWS; r++) {
                const l16_vf *a = acc[c][r];
                l16_vf even = L16(add_ps)(L16(add_ps)(a[0], a[4]), L16(add_ps)(a[2], a[6]));
                l16_vf odd = L16(add_ps)(L16(add_ps)(a[1], a[5]), L16(add_ps)(a[3], a[7]));
                out[c][m + r] = L16(add_ps)(even, odd);
            }
    }
    for (int c = 0; c < nc; c++) {
        int in = b - c * L16_N < L16_N ? b - c * L16_N : L16_N;
        l16_store(out[c], in, y + (size_t)c * L16_N * ystride, ystride);
    }
}

static int q8_0_gemm(const void *w, size_t row_bytes, int rows, const char *acts, size_t stride,
                     const void *packed, int b, int64_t n, float *y, size_t ystride)
{
    int tiled = rows / L16_M * L16_M;
    if (b < L16_MIN)
        return q8_0_tiled(w, row_bytes, rows, acts, stride, packed, b, n, y, ystride);
    if (n % QK_K != 0 || tiled == 0)
        return 0;
    int64_t nb = n / QK;
    const l16_block *blocks = packed;
    int vectors = (b + L16_N - 1) / L16_N;
    for (int c = 0; c < vectors; c += L16_C) {
        int nc = vectors - c < L16_C ? vectors - c : L16_C;
        for (int r = 0; r < tiled; r += L16_M) {
            const char *tile = (const char *)w + (size_t)r * row_bytes;
            l16_rows(tile, r + L16_M < tiled ? tile + L16_M * row_bytes : NULL, row_bytes,
                     blocks + (size_t)c * (size_t)nb, nb, nc, b - c * L16_N,
                     y + (size_t)c * L16_N * ystride + r, ystride);
        }
    }
    return tiled;
}

#endif /* QB_PATH <= 2 */

#ifdef QB_VNNI

/* ---- a batch of Q8_0 activations in the lanes of a vector ----
 *
 * Per row and activation, q8_0_rows adds up each block's 32 products in
 * integers, then folds the block's sum times its two scales into lane
 * PAIR_ORDER^-1 of 8 float lanes, and sums the lanes at the end. Here a
 * block's sums for one row by 16 activations are one 512-bit vector, an
 * activation a lane, and the float arithmetic after it is q8_0_rows's, in
 * the same order, for 16 activations at once. On the VNNI path, four
 * values of a row, broadcast to every lane, multiply four values of each
 * activation (vpdpbusd): 8 ops a block for 16 activations, where the
 * tiled kernel takes about 40 for 8, unpacking signs and reducing sums
 * across lanes. On the AMX path the tile unit computes the sums of 16
 * rows by 16 activations at once (tdpbssd). The integer products are
 * what a batch cannot afford otherwise: 16 sequences of synth:110m make
 * 1.8G a step. Full groups of 8 blocks only (rows of a multiple of 256):
 * q8_0_rows sums leftover blocks differently. */

#define LANE_M 16 /* rows a call */
#define LANE_N 16 /* activations a vector */

/* vpdpbusd multiplies unsigned bytes by signed ones: on the VNNI path an
 * activation's values are stored plus 128 and each block's dot loses 128
 * times the sum of the row's values (q8_0_offsets); tdpbssd takes signed
 * bytes as they are. */
#ifdef QB_AMX
#define LANE_FLIP 0
#else
#define LANE_FLIP 0x80
#endif

/* One block of 16 activations (tdpbssd's B operand): q[t][4i + u] is
 * value 4t + u of activation i, xor LANE_FLIP; d their scales.
 * Activations past the batch are zeros. */
typedef struct lane_block {
    int8_t q[QK / 4][4 * LANE_N];
    float d[LANE_N];
} lane_block;

/* Batches of fewer than LANE_MIN have no pack: the lanes' work costs
 * the same for 1 activation as for 16, and below it the tiled kernel
 * (from half its tile, QB_TILE_C / 2 activations) or q8_0_gemv once per
 * activation take less time (measured on synth:110m's matrices: on the
 * VNNI path 16 rows cost as much as 5 activations of the tiled kernel). */
#ifdef QB_AMX
#define LANE_MIN 3
#else
#define LANE_MIN 6
#endif

static size_t lane_batch_bytes(int b, int64_t n)
{
    if (b < LANE_MIN)
        return 0;
    return (size_t)((b + LANE_N - 1) / LANE_N) * (size_t)(n / QK) * sizeof(lane_block);
}

/* The batch in groups of LANE_N activations, block after block. */
static void lane_pack(const void *acts, size_t stride, int b, int64_t n, void *packed)
{
    int64_t nb = n / QK;
    if (b < LANE_MIN)
        return;
    lane_block *p = packed;
    for (int c = 0; c * LANE_N < b; c++) {
        for (int64_t k = 0; k < nb; k++) {
            lane_block *blk = &p[c * nb + k];
            memset(blk, 0, sizeof *blk);
            for (int i = 0; i < LANE_N && c * LANE_N + i < b; i++) {
                const blk_q8_0 *a =
                    (const blk_q8_0 *)((const char *)acts + (size_t)(c * LANE_N + i) * stride) + k;
                for (int t = 0; t < QK / 4; t++)
                    for (int u = 0; u < 4; u++)
                        blk->q[t][4 * i + u] = (int8_t)(a->qs[4 * t + u] ^ LANE_FLIP);
                blk->d[i] = qb_h2f(a->d);
            }
        }
    }
}

/* The scales of the 8 blocks at wb as floats, in block order: one gather
 * of each block's first 4 bytes. */
static inline __m256 lane_scales(const blk_q8_0 *wb)
{
    const __m256i at = _mm256_setr_epi32(0, 34, 68, 102, 136, 170, 204, 238);
    _Static_assert(sizeof(blk_q8_0) == 34 && offsetof(blk_q8_0, d) == 0, "block offsets");
    __m256i d = _mm256_i32gather_epi32((const int *)wb, at, 1);
    return _mm256_cvtph_ps(_mm256_cvtepi32_epi16(d));
}

/* One step of a row's float sums: the 16 lanes of acc += the block's
 * sums s times the row's scale dw and each activation's (blk->d). */
static inline __m512 lane_fold(__m512 acc, float dw, const lane_block *blk, __m512i s)
{
    __m512 d = _mm512_mul_ps(_mm512_set1_ps(dw), _mm512_loadu_ps(blk->d));
    return _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
}

/* A row's 8 lanes summed in qb_hsum's order: ((0 + 4) + (2 + 6)) +
 * ((1 + 5) + (3 + 7)). */
static inline __m512 lane_hsum(const __m512 a[8])
{
    __m512 even = _mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6]));
    __m512 odd = _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7]));
    return _mm512_add_ps(even, odd);
}

#ifdef QB_AMX

/* Tiles 0-2 and 3-5: A (16 rows x one block's 32 values), B (that block
 * of 16 activations, 8 rows of 4 values each), C (the 16 x 16 sums);
 * blocks alternate between the two sets so that one's multiply runs
 * while the other's sums are stored. */
typedef struct __attribute__((aligned(64))) amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

static const amx_config AMX_CONFIG = {
    .palette = 1,
    .colsb = {QK, 4 * LANE_N, 4 * LANE_N, QK, 4 * LANE_N, 4 * LANE_N},
    .rows = {LANE_M, QK / 4, LANE_M, LANE_M, QK / 4, LANE_M},
};

/* sums[k] = the block sums of block g + k of the 16 rows at w by 16
 * activations, for the 8 blocks of group g. */
static void amx_group(const char *w, size_t row_bytes, const lane_block *blocks, int64_t g,
                      int32_t sums[8][LANE_M][LANE_N])
{
    for (int k = 0; k < 8; k += 2) {
        const char *a = w + (size_t)(g + k) * sizeof(blk_q8_0) + offsetof(blk_q8_0, qs);
        _tile_loadd(0, a, row_bytes);
        _tile_loadd(1, blocks[g + k].q, 4 * LANE_N);
        _tile_zero(2);
        _tile_dpbssd(2, 0, 1);
        _tile_loadd(3, a + sizeof(blk_q8_0), row_bytes);
        _tile_loadd(4, blocks[g + k + 1].q, 4 * LANE_N);
        _tile_zero(5);
        _tile_dpbssd(5, 3, 4);
        _tile_stored(2, sums[k], 4 * LANE_N);
        _tile_stored(5, sums[k + 1], 4 * LANE_N);
    }
}

/* The scales of the 8 blocks of group g of the 16 rows at w, as floats:
 * dw[m][k] for block g + k of row m. */
static void amx_scales(const char *w, size_t row_bytes, int64_t g, float dw[LANE_M][8])
{
    for (int m = 0; m < LANE_M; m++)
        _mm256_storeu_ps(dw[m], lane_scales((const blk_q8_0 *)(w + (size_t)m * row_bytes) + g));
}

/* 16 rows at w times up to 16 activations (blocks: their group of the
 * pack) into y[i * ystride + r], the next tile's rows (`next`, NULL for
 * none) prefetched meanwhile. */
static void lane_rows(const char *w, const char *next, size_t row_bytes, const lane_block *blocks,
                      int64_t nb, int b, float *y, size_t ystride)
{
    __m512 acc[LANE_M][8];
    int32_t sums[8][LANE_M][LANE_N];
    float dw[LANE_M][8];
    lane_ahead ahead = lane_ahead_of(next, LANE_M * row_bytes, (size_t)nb / 8 * LANE_M);
    for (int64_t g = 0; g < nb; g += 8) {
        amx_group(w, row_bytes, blocks, g, sums);
        amx_scales(w, row_bytes, g, dw);
        for (int m = 0; m < LANE_M; m++) {
            lane_ahead_step(&ahead);
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                int k = PAIR_ORDER[j];
                /* The first group starts from zero: no 8 KiB of zeros to
                 * store and load back (4% of a 16-sequence step). */
                acc[m][j] = lane_fold(g ? acc[m][j] : _mm512_setzero_ps(), dw[m][k], &blocks[g + k],
                                      _mm512_loadu_si512(sums[k][m]));
            }
        }
    }
    __m512 out[LANE_M];
    for (int m = 0; m < LANE_M; m++)
        out[m] = lane_hsum(acc[m]);
    lane_store(out, b, y, ystride);
}

#define LANE_BEGIN() _tile_loadconfig(&AMX_CONFIG)
#define LANE_END() _tile_release()

#else /* VNNI without AMX */

static inline int32_t ld32(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* What LANE_FLIP adds to the dots of the 8 blocks at wb, taken off: -128
 * times each block's sum, in the order of qb_pair_sums. */
static inline __m256i q8_0_offsets(const blk_q8_0 *wb)
{
    const __m512i ones = _mm512_set1_epi8(1);
    /* z[i]: 8 partial sums of block 2i in 128-bit lanes 0-1, of block
     * 2i + 1 in lanes 2-3. */
    __m512i z[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        __m512i q = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)wb[2 * i].qs)),
            _mm256_loadu_si256((const __m256i *)wb[2 * i + 1].qs), 1);
        z[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, q);
    }
    /* Each 128-bit lane's four partials of z[0..3], side by side. */
    __m512i a =
        _mm512_add_epi32(_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
    __m512i b =
        _mm512_add_epi32(_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
    __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
    /* Lanes 0 + 1: blocks 0 2 4 6; lanes 2 + 3: blocks 1 3 5 7. */
    s = _mm512_add_epi32(s, _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
    __m256i sums = _mm512_castsi512_si256(_mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(2, 0, 2, 0)));
    return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 7));
}

/* Rows a pass over the activations, and groups of 8 blocks a chunk of
 * them. Lane j of a row's float sums depends only on blocks PAIR_ORDER[j]
 * of each group, in order, so the kernel takes the lanes one at a time:
 * a row keeps one vector of sums instead of 8, and a pass takes more rows
 * for each load of an activation block. The 16 activations' 8 vectors of
 * a block then serve VNNI_ROWS rows; the row's four values broadcast to
 * each vpdpbusd are a load of their own, so a pass of fewer rows would be
 * bound by loads. A chunk's rows stay in L1 over its 8 lanes. */
#define VNNI_ROWS 8
#define VNNI_CHUNK 8
_Static_assert(LANE_M % VNNI_ROWS == 0, "passes of whole rows");

/* As the AMX lane_rows, with the block sums from vpdpbusd. */
static void lane_rows(const char *w, const char *next, size_t row_bytes, const lane_block *blocks,
                      int64_t nb, int b, float *y, size_t ystride)
{
    __m512 out[LANE_M];
    for (int m = 0; m < LANE_M; m += VNNI_ROWS) {
        /* The next rows: without them, synth:110m's matrices ran at 194
         * GOPS a core from memory against 349 from L2 (measured). */
        lane_ahead ahead =
            lane_ahead_of(m + VNNI_ROWS < LANE_M ? w + (size_t)(m + VNNI_ROWS) * row_bytes : next,
                          VNNI_ROWS * row_bytes, (size_t)nb);
        const blk_q8_0 *row[VNNI_ROWS];
        __m512 acc[VNNI_ROWS][8];
        for (int r = 0; r < VNNI_ROWS; r++)
            row[r] = (const blk_q8_0 *)(w + (size_t)(m + r) * row_bytes);
        for (int64_t g0 = 0; g0 < nb; g0 += 8 * VNNI_CHUNK) {
            int groups = (int)((nb - g0) / 8 < VNNI_CHUNK ? (nb - g0) / 8 : VNNI_CHUNK);
            /* Per row and group: the offsets in the order of the lanes,
             * the scales in block order. */
            int32_t off[VNNI_ROWS][VNNI_CHUNK][8];
            float dw[VNNI_ROWS][VNNI_CHUNK][8];
            for (int r = 0; r < VNNI_ROWS; r++)
                for (int i = 0; i < groups; i++) {
                    const blk_q8_0 *wb = row[r] + g0 + 8 * i;
                    _mm256_storeu_si256((__m256i *)off[r][i], q8_0_offsets(wb));
                    _mm256_storeu_ps(dw[r][i], lane_scales(wb));
                }
            for (int j = 0; j < 8; j++) {
                __m512 sum[VNNI_ROWS];
#pragma GCC unroll 8
                for (int r = 0; r < VNNI_ROWS; r++)
                    sum[r] = g0 ? acc[r][j] : _mm512_setzero_ps();
                for (int i = 0; i < groups; i++) {
                    lane_ahead_step(&ahead);
                    int64_t k = g0 + 8 * i + PAIR_ORDER[j];
                    const lane_block *blk = &blocks[k];
                    __m512i a[QK / 4];
#pragma GCC unroll 8
                    for (int t = 0; t < QK / 4; t++)
                        a[t] = _mm512_loadu_si512(blk->q[t]);
                    /* The rows' chains interleaved: vpdpbusd's latency is
                     * several of its issues, and one row's chain after another
                     * would fill the scheduler with ops waiting on each other. */
                    __m512i s[VNNI_ROWS];
#pragma GCC unroll 8
                    for (int r = 0; r < VNNI_ROWS; r++)
                        s[r] = _mm512_set1_epi32(off[r][i][j]);
#pragma GCC unroll 8
                    for (int t = 0; t < QK / 4; t++)
#pragma GCC unroll 8
                        for (int r = 0; r < VNNI_ROWS; r++)
                            s[r] = _mm512_dpbusd_epi32(
                                s[r], a[t], _mm512_set1_epi32(ld32(row[r][k].qs + 4 * t)));
#pragma GCC unroll 8
                    for (int r = 0; r < VNNI_ROWS; r++)
                        sum[r] = lane_fold(sum[r], dw[r][i][PAIR_ORDER[j]], blk, s[r]);
                }
#pragma GCC unroll 8
                for (int r = 0; r < VNNI_ROWS; r++)
                    acc[r][j] = sum[r];
            }
        }
        for (int r = 0; r < VNNI_ROWS; r++)
            out[m + r] = lane_hsum(acc[r]);
    }
    lane_store(out, b, y, ystride);
}

#define LANE_BEGIN() ((void)0)
#define LANE_END() ((void)0)

#endif /* QB_AMX */

static int q8_0_gemm(const void *w, size_t row_bytes, int rows, const char *acts, size_t stride,
                     const void *packed, int b, int64_t n, float *y, size_t ystride)
{
    int tiled = rows / LANE_M * LANE_M;
    if (b < LANE_MIN)
        return b >= QB_TILE_C / 2
                   ? q8_0_tiled(w, row_bytes, rows, acts, stride, packed, b, n, y, ystride)
                   : 0;
    if (n % QK_K != 0 || tiled == 0)
        return 0;
    int64_t nb = n / QK;
    const lane_block *blocks = packed;
    LANE_BEGIN();
    for (int c = 0; c * LANE_N < b; c++) {
        int in = b - c * LANE_N < LANE_N ? b - c * LANE_N : LANE_N;
        for (int r = 0; r < tiled; r += LANE_M) {
            const char *tile = (const char *)w + (size_t)r * row_bytes;
            lane_rows(tile, r + LANE_M < tiled ? tile + LANE_M * row_bytes : NULL, row_bytes,
                      blocks + c * nb, nb, in, y + (size_t)c * LANE_N * ystride + r, ystride);
        }
    }
    LANE_END();
    return tiled;
}

#endif /* QB_VNNI */

#else

QB_GEMV_REF(q8_0_gemv, q8_0_dot_ref)
QB_GEMV_REF(q4_0_gemv, q4_0_dot_ref)

#endif

const qb_type QB_SYM(qb_q8_0) = {
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
#ifdef QB_VNNI
    .batch_bytes = lane_batch_bytes,
    .batch_pack = lane_pack,
#elif defined(QB_AVX2)
    .batch_bytes = l16_batch_bytes,
    .batch_pack = l16_pack,
#endif
#ifdef QB_AVX2
    .gemm = q8_0_gemm,
#endif
};

const qb_type QB_SYM(qb_q4_0) = {
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
#ifdef QB_VNNI
    .batch_bytes = lane_batch_bytes, /* the activation type's batch */
    .batch_pack = lane_pack,
#elif defined(QB_AVX2)
    .batch_bytes = l16_batch_bytes,
    .batch_pack = l16_pack,
#endif
#ifdef QB_AVX2
    .gemm = q4_0_gemm,
#endif
};
