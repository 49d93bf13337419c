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
        d[k] = qb_h2f(y[qb_pair_order(k)].d);
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
            __m256 d = _mm256_mul_ps(qb_group_scales((const uint8_t *)wb, sizeof *wb), g.d);
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
            __m256 d = _mm256_mul_ps(qb_group_scales((const uint8_t *)wb, sizeof *wb), g.d);
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
                qb_group_scales((const uint8_t *)(w + r * row_bytes) + 8 * g * bsize, (int)bsize);
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

/* A batch the lanes pay at (it has their pack) goes to them, a smaller one
 * to the tiled kernel: on the VNNI path from half a tile, below which
 * q8_0_gemv once per activation was faster. */
static int q8_0_gemm(const void *w, size_t row_bytes, int rows, const char *acts, size_t stride,
                     const void *packed, int b, int64_t n, float *y, size_t ystride)
{
    if (QB_SYM(qb_lane_bytes)(b, n) > 0)
        return QB_SYM(qb_lane_gemm)(w, row_bytes, rows, packed, b, n, y, ystride);
#ifdef QB_VNNI
    if (b < QB_TILE_C / 2)
        return 0;
#endif
    return q8_0_tiled(w, row_bytes, rows, acts, stride, packed, b, n, y, ystride);
}

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
#ifdef QB_AVX2
    .batch_bytes = QB_SYM(qb_lane_bytes),
    .batch_pack = QB_SYM(qb_lane_pack),
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
#ifdef QB_AVX2
    .batch_bytes = QB_SYM(qb_lane_bytes), /* the activation type's batch */
    .batch_pack = QB_SYM(qb_lane_pack),
    .gemm = q4_0_gemm,
#endif
};
