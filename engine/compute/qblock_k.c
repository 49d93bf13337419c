/* qblock_k.c: the K types Q4_K, Q5_K and Q6_K (256-value super-blocks),
 * whose activation type is Q8_K. Their weight quantizers are in
 * qblock_kq.c.
 *
 * An activation is its Q8_K blocks followed by a k_pack per block: the
 * values laid out for the Q4_K and Q5_K kernels, so that they need not
 * rearrange them for every 4 rows of a matrix. */
#include <math.h>

#include "qblock_int.h"

/* ---- activations ---- */

/* The values of a block in the pair layout of the Q8_0 kernels
 * (qblock_q.c): a[j] holds values 0..15 of sub-blocks 2j and 2j+1 (32 each)
 * in its two halves, c[j] values 16..31; pairs[j] is the sum of sub-block
 * j (its two bsums), an int32 lane each, which one multiply-add by the
 * mins (an int32 lane each too) turns into the eight min terms. */
typedef struct k_pack {
    int8_t a[4][32], c[4][32];
    int32_t pairs[8];
} k_pack;

static void q8_K_pack(const blk_q8_K *y, k_pack *p)
{
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) {
            memcpy(p->a[j] + 16 * h, y->qs + 64 * j + 32 * h, 16);
            memcpy(p->c[j] + 16 * h, y->qs + 64 * j + 32 * h + 16, 16);
        }
    for (int j = 0; j < 8; j++)
        p->pairs[j] = y->bsums[2 * j] + y->bsums[2 * j + 1];
}

/* ggml's quantize_row_q8_K_ref (x86 runs the reference too): the value
 * of largest magnitude maps to -127 (its sign flipped, so that it cannot
 * land on -128), values round half to even, and the sums of 16 feed the
 * K types' min and offset terms. */
static void q8_K_quantize_act(const float *x, void *out, int64_t n)
{
    blk_q8_K *y = out;
    int64_t nb = n / QK_K;
    k_pack *packs = (k_pack *)(y + nb);
    for (int64_t b = 0; b < nb; b++, x += QK_K) {
        float amax = 0, m = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                m = x[j];
            }
        memset(&y[b], 0, sizeof y[b]);
        if (amax != 0) {
            float iscale = -127.0f / m;
            for (int j = 0; j < QK_K; j++) {
                int v = qb_nearest(iscale * x[j]);
                y[b].qs[j] = (int8_t)(v < 127 ? v : 127);
            }
            for (int g = 0; g < QK_K / 16; g++) {
                int sum = 0;
                for (int j = 0; j < 16; j++)
                    sum += y[b].qs[16 * g + j];
                y[b].bsums[g] = (int16_t)sum;
            }
            y[b].d = 1 / iscale;
        }
        q8_K_pack(&y[b], &packs[b]);
    }
}

/* ---- dequantization ---- */

/* q8_K_quantize_act and the dequantization in one pass (no sums, no
 * packs), eight values at a time: each value is its rounded multiple of
 * the block's scale, which takes the sign of the first value of largest
 * magnitude. */
static void q8_K_round_act(const float *x, float *out, int64_t n)
{
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K, out += QK_K) {
        float amax = qb_max_abs(x, QK_K);
        if (amax == 0) {
            memset(out, 0, QK_K * sizeof *out);
            continue;
        }
        int first = 0;
        while (fabsf(x[first]) != amax)
            first++;
        float iscale = -127.0f / x[first], d = 1 / iscale;
        for (int k = 0; k < QK_K; k += 8)
            vec8_store(out + k, d * qb_round_grid(vec8_load(x + k) * iscale, -128, 127));
    }
}

/* Sub-block j's 32 values of a Q4_K or Q5_K block: the low (even j) or
 * high (odd j) nibbles of qs[32 * (j / 2) ..], plus 16 where bit j of qh
 * is set (qh NULL for Q4_K). */
static void k_sub_values(const uint8_t *qs, const uint8_t *qh, int j, uint8_t *q)
{
    const uint8_t *p = qs + 32 * (j / 2);
    int shift = 4 * (j % 2);
    /* Two loops rather than a test inside one: each vectorizes. */
    for (int l = 0; l < 32; l++)
        q[l] = (uint8_t)(p[l] >> shift & 0xF);
    if (qh)
        for (int l = 0; l < 32; l++)
            q[l] |= (uint8_t)((qh[l] >> j & 1) << 4);
}

/* value = d * sc * q - dmin * m, a sub-block of 32 at a time. */
static void k_dequant(uint16_t d16, uint16_t dmin16, const uint8_t *scales, const uint8_t *qs,
                      const uint8_t *qh, float *out)
{
    float d = qb_h2f(d16), dmin = qb_h2f(dmin16);
    uint8_t q[32];
    for (int j = 0; j < 8; j++, out += 32) {
        uint8_t sc, m;
        k_scale_min(j, scales, &sc, &m);
        float ds = d * sc, dm = dmin * m;
        k_sub_values(qs, qh, j, q);
        for (int l = 0; l < 32; l++)
            out[l] = ds * q[l] - dm;
    }
}

static void q4_K_dequant(const void *row, float *out, int64_t n)
{
    const blk_q4_K *x = row;
    for (int64_t b = 0; b < n / QK_K; b++, out += QK_K)
        k_dequant(x[b].d, x[b].dmin, x[b].scales, x[b].qs, NULL, out);
}

static void q5_K_dequant(const void *row, float *out, int64_t n)
{
    const blk_q5_K *x = row;
    for (int64_t b = 0; b < n / QK_K; b++, out += QK_K)
        k_dequant(x[b].d, x[b].dmin, x[b].scales, x[b].qs, x[b].qh, out);
}

/* The 32 values (0..63, offset 32) of Q6_K chunk c (0..7): values
 * 32c .. 32c+31. Each half of 128 keeps its low nibbles in 64 bytes of ql
 * (chunks 0, 1 low nibbles, chunks 2, 3 high) and two bits per chunk in
 * 32 bytes of qh. */
static void q6_K_chunk(const blk_q6_K *x, int c, uint8_t *q)
{
    const uint8_t *ql = x->ql + 64 * (c / 4) + 32 * (c % 2), *qh = x->qh + 32 * (c / 4);
    int lshift = 4 * (c % 4 / 2), hshift = 2 * (c % 4);
    for (int l = 0; l < 32; l++)
        q[l] = (uint8_t)((ql[l] >> lshift & 0xF) | (qh[l] >> hshift & 3) << 4);
}

static void q6_K_dequant(const void *row, float *out, int64_t n)
{
    const blk_q6_K *x = row;
    uint8_t q[32];
    for (int64_t b = 0; b < n / QK_K; b++) {
        float d = qb_h2f(x[b].d);
        for (int c = 0; c < 8; c++, out += 32) {
            q6_K_chunk(&x[b], c, q);
            for (int h = 0; h < 2; h++) {
                float ds = d * x[b].scales[2 * c + h];
                for (int l = 16 * h; l < 16 * h + 16; l++)
                    out[l] = ds * (q[l] - 32);
            }
        }
    }
}

/* ---- reference dots: integer sums within a block, then the scales ---- */

static int dot32(const uint8_t *q, const int8_t *y)
{
    int s = 0;
    for (int l = 0; l < 32; l++)
        s += q[l] * y[l];
    return s;
}

/* d * sum_j sc_j (q . y)_j - dmin * sum_j m_j (sum of y over j). */
static float k_dot_block(uint16_t d16, uint16_t dmin16, const uint8_t *scales, const uint8_t *qs,
                         const uint8_t *qh, const blk_q8_K *y)
{
    int sumi = 0, summ = 0;
    uint8_t q[32];
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        k_scale_min(j, scales, &sc, &m);
        k_sub_values(qs, qh, j, q);
        sumi += sc * dot32(q, y->qs + 32 * j);
        summ += m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
    return qb_h2f(d16) * y->d * (float)sumi - qb_h2f(dmin16) * y->d * (float)summ;
}

static float q4_K_dot_ref(const void *w, const void *x, int64_t n)
{
    const blk_q4_K *a = w;
    const blk_q8_K *y = x;
    float s = 0;
    for (int64_t b = 0; b < n / QK_K; b++)
        s += k_dot_block(a[b].d, a[b].dmin, a[b].scales, a[b].qs, NULL, &y[b]);
    return s;
}

static float q5_K_dot_ref(const void *w, const void *x, int64_t n)
{
    const blk_q5_K *a = w;
    const blk_q8_K *y = x;
    float s = 0;
    for (int64_t b = 0; b < n / QK_K; b++)
        s += k_dot_block(a[b].d, a[b].dmin, a[b].scales, a[b].qs, a[b].qh, &y[b]);
    return s;
}

/* d * sum_g sc_g ((q - 32) . y)_g over the 16 groups of 16. */
static float q6_K_dot_ref(const void *w, const void *x, int64_t n)
{
    const blk_q6_K *a = w;
    const blk_q8_K *y = x;
    float s = 0;
    uint8_t q[32];
    for (int64_t b = 0; b < n / QK_K; b++) {
        int sumi = 0;
        for (int c = 0; c < 8; c++) {
            q6_K_chunk(&a[b], c, q);
            for (int h = 0; h < 2; h++) {
                int g = 2 * c + h, dot = 0;
                for (int l = 16 * h; l < 16 * h + 16; l++)
                    dot += (q[l] - 32) * y[b].qs[32 * c + l];
                sumi += a[b].scales[g] * dot;
            }
        }
        s += qb_h2f(a[b].d) * y[b].d * (float)sumi;
    }
    return s;
}

/* ---- the vector kernels: R rows against one activation ---- */

#ifdef QB_AVX2

/* The activation at a (of n values): block b and its pack. */
static inline const blk_q8_K *act_block(const char *a, int64_t b)
{
    return (const blk_q8_K *)a + b;
}

static inline const k_pack *act_pack(const char *a, int64_t n, int64_t b)
{
    return (const k_pack *)((const blk_q8_K *)a + n / QK_K) + b;
}

/* Scales (bytes 0-7) and mins (bytes 8-15) of the eight sub-blocks of a
 * Q4_K or Q5_K block, each unpacked from its six bits as k_scale_min
 * does: the low bits (six of bytes 0-7, four of bytes 8-11) gathered by
 * one shuffle, the top two bits of bytes 0-7 (for sub-blocks 4-7) by
 * another. The scales are read 16 bytes wide: the 4 bytes past them are
 * the block's own. */
static inline __m128i k_scales_mins(const uint8_t *s)
{
    __m128i v = _mm_loadu_si128((const __m128i *)s);
    __m128i lo =
        _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    lo = _mm_and_si128(_mm_srlv_epi32(lo, _mm_setr_epi32(0, 0, 0, 4)),
                       _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    __m128i hi =
        _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    hi = _mm_srli_epi16(_mm_and_si128(hi, _mm_set1_epi8((char)0xC0)), 2);
    return _mm_or_si128(lo, hi);
}

/* The 16 values 16h .. 16h+15 of sub-blocks 2j (low half) and 2j+1 (high
 * half) of a Q4_K or Q5_K block (qh NULL for Q4_K): the 16 bytes of qs
 * holding both as low and high nibbles, broadcast to both halves, each
 * half keeping its nibble; Q5_K adds bit 2j (low half) or 2j+1 (high) of
 * qh as 16. */
QB_INLINE __m256i k_vals(const uint8_t *qs, const uint8_t *qh, int j, int h)
{
    __m256i q =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(qs + 32 * j + 16 * h)));
#ifdef __GFNI__
    __m256i v = _mm256_gf2p8affine_epi64_epi8(
        q, _mm256_set_epi64x(QB_GF_HI, QB_GF_HI, QB_GF_LO, QB_GF_LO), 0);
#else
    __m256i v = _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                                 _mm256_set1_epi8(0x0F));
#endif
    if (qh) {
        __m256i hb = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(qh + 16 * h)));
#ifdef __GFNI__
        /* Output bit 4 (matrix byte 3) from input bit 2j or 2j+1. */
        long long lo = (1LL << (2 * j)) << 24, hi = (1LL << (2 * j + 1)) << 24;
        v = _mm256_or_si256(
            v, _mm256_gf2p8affine_epi64_epi8(hb, _mm256_set_epi64x(hi, hi, lo, lo), 0));
#else
        __m256i m = _mm256_setr_m128i(_mm_set1_epi8((char)(1 << (2 * j))),
                                      _mm_set1_epi8((char)(1 << (2 * j + 1))));
        v = _mm256_or_si256(v, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, m), m),
                                                _mm256_set1_epi8(16)));
#endif
    }
    return v;
}

/* An int32 sum as it stands, opaque to the optimizer: GCC would otherwise
 * reassociate a tile's sums, computing every product of a block first and
 * adding them as a tree, with most of them spilled to the stack. */
QB_INLINE __m256i k_keep(__m256i v)
{
    __asm__("" : "+v"(v));
    return v;
}

/* Picks int16 lane 2j of each half into the low half, lane 2j + 1 into the
 * high half: a pair of sub-block (or group) scales broadcast to the lanes
 * of their values. */
QB_INLINE __m256i k_pick(int j)
{
    return _mm256_setr_epi8(4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1,
                            4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1, 4 * j, 4 * j + 1,
                            4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3,
                            4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3,
                            4 * j + 2, 4 * j + 3, 4 * j + 2, 4 * j + 3);
}

/* Products a tile of k_tile keeps at once: 8 int32 sums (a block's) and
 * 8 float accumulators fill 16 of AVX-512's 32 registers, and AVX2's 16
 * with the values and scales in flight spilled to L1 at most once a block. */
#define K_TILE_MAX 8

/* R rows of a Q4_K or Q5_K matrix (has_qh), wstep bytes apart, by C
 * activations, astride bytes apart (R * C <= K_TILE_MAX), into y[r * yr +
 * c * yc]: the gemv (C = 1, R = QB_ROWS rows a quarter of the matrix
 * apart) and the batch tile (R = 1, C up to K_TILE_MAX) are this one kernel, so
 * a (row, activation) gets the same bits either way. Per block and row
 * the values of sub-block pair j are unpacked once for all C activations;
 * the two products of a pair are added in int16 (values below 32 times
 * |y| <= 127: at most 15748) and multiplied by the sub-block scales in
 * the multiply-add that widens them, and the four pairs' sums add up in
 * int32 (exact in any order): no per-sub-block reductions. The block's
 * float work is two multiply-adds: d times the sum, dmin times the mins'
 * terms (the mins, an int32 lane each, by the activation's pair sums). */
QB_INLINE void k_tile(int has_qh, const char *w, size_t wstep, int R, const char *acts,
                      size_t astride, int C, int64_t n, float *y, size_t yr, size_t yc)
{
    const size_t bsize = has_qh ? sizeof(blk_q5_K) : sizeof(blk_q4_K);
    __m256 acc[K_TILE_MAX];
#pragma GCC unroll 8
    for (int i = 0; i < R * C; i++)
        acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            /* Q4_K and Q5_K blocks both start with d, dmin, scales. */
            const blk_q4_K *k = (const blk_q4_K *)(w + r * wstep + b * bsize);
            qb_ahead(k, bsize);
            const uint8_t *qs = has_qh ? ((const blk_q5_K *)k)->qs : k->qs;
            const uint8_t *qh = has_qh ? ((const blk_q5_K *)k)->qh : NULL;
            __m128i scm = k_scales_mins(k->scales);
            /* The scales as int16 in both halves of a register. */
            __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
            __m256i sum[K_TILE_MAX];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m256i va = k_vals(qs, qh, j, 0), vc = k_vals(qs, qh, j, 1);
                __m256i sc = _mm256_shuffle_epi8(sc16, k_pick(j));
#pragma GCC unroll 8
                for (int c = 0; c < C; c++) {
                    const k_pack *pk = act_pack(acts + c * astride, n, b);
                    __m256i p = _mm256_add_epi16(
                        _mm256_maddubs_epi16(va, _mm256_loadu_si256((const __m256i *)pk->a[j])),
                        _mm256_maddubs_epi16(vc, _mm256_loadu_si256((const __m256i *)pk->c[j])));
                    sum[c] = k_keep(j ? qb_dpwssd(sum[c], p, sc) : _mm256_madd_epi16(p, sc));
                }
            }
            float d = qb_h2f(k->d), dmin = qb_h2f(k->dmin);
            __m256i m32 = _mm256_cvtepu8_epi32(_mm_srli_si128(scm, 8));
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) {
                const char *a = acts + c * astride;
                float dy = act_block(a, b)->d;
                __m256i mins = _mm256_madd_epi16(
                    m32, _mm256_loadu_si256((const __m256i *)act_pack(a, n, b)->pairs));
                __m256 *s = &acc[r * C + c];
                *s = _mm256_fmadd_ps(_mm256_set1_ps(d * dy), _mm256_cvtepi32_ps(sum[c]), *s);
                *s = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * dy), _mm256_cvtepi32_ps(mins), *s);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < C; c++)
            y[r * yr + c * yc] = qb_hsum(acc[r * C + c]);
}

QB_INLINE void q4_K_rows(const char *w, size_t step, int R, const void *x, int64_t n, float *y,
                         size_t ystep)
{
    k_tile(0, w, step, R, x, 0, 1, n, y, ystep, 0);
}

QB_INLINE void q5_K_rows(const char *w, size_t step, int R, const void *x, int64_t n, float *y,
                         size_t ystep)
{
    k_tile(1, w, step, R, x, 0, 1, n, y, ystep, 0);
}

QB_INLINE void q4_K_tile(const char *w, size_t row_bytes, const char *acts, size_t stride, int C,
                         int64_t n, float *y, size_t ystride)
{
    k_tile(0, w, row_bytes, 1, acts, stride, C, n, y, 0, ystride);
}

QB_INLINE void q5_K_tile(const char *w, size_t row_bytes, const char *acts, size_t stride, int C,
                         int64_t n, float *y, size_t ystride)
{
    k_tile(1, w, row_bytes, 1, acts, stride, C, n, y, 0, ystride);
}

/* Q6_K, R rows (wstep bytes apart) by C activations (astride bytes apart),
 * R * C <= K_TILE_MAX, into y[r * yr + c * yc]: the gemv and the batch
 * tile, as k_tile. The unsigned values (0..63) go through maddubs; the
 * offset 32 comes off as 32 * sum_g sc_g * bsums_g. Chunk c (32 values)
 * spans groups 2c and 2c+1, whose scales fill the low and high int16
 * halves; each chunk's values and scales are unpacked once for all C
 * activations. */
QB_INLINE void q6_tile(const char *w, size_t wstep, int R, const char *acts, size_t astride, int C,
                       int64_t n, float *y, size_t yr, size_t yc)
{
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    __m256 acc[K_TILE_MAX];
#pragma GCC unroll 8
    for (int i = 0; i < R * C; i++)
        acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const blk_q6_K *k = (const blk_q6_K *)(w + r * wstep) + b;
            qb_ahead(k, sizeof *k);
            __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)k->scales));
            __m256i sum[K_TILE_MAX];
#pragma GCC unroll 8
            for (int c = 0; c < C; c++) {
                __m256i bsums =
                    _mm256_loadu_si256((const __m256i *)act_block(acts + c * astride, b)->bsums);
                __m256i off = _mm256_madd_epi16(sc16, bsums);
                sum[c] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, 5));
            }
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                /* The scales of groups 8h .. 8h+7 in both halves. */
                /* Two literal immediates: at -O1 the loop stays a loop. */
                __m256i sch =
                    h ? _mm256_permute4x64_epi64(sc16, 0xEE) : _mm256_permute4x64_epi64(sc16, 0x44);
                __m256i l0 = _mm256_loadu_si256((const __m256i *)(k->ql + 64 * h));
                __m256i l1 = _mm256_loadu_si256((const __m256i *)(k->ql + 64 * h + 32));
                __m256i hb = _mm256_loadu_si256((const __m256i *)(k->qh + 32 * h));
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {
                    __m256i lo = i % 2 ? l1 : l0;
                    lo = i < 2 ? lo : _mm256_srli_epi16(lo, 4);
                    __m256i hi = i == 0   ? _mm256_slli_epi16(hb, 4)
                                 : i == 1 ? _mm256_slli_epi16(hb, 2)
                                 : i == 2 ? hb
                                          : _mm256_srli_epi16(hb, 2);
                    __m256i q = _mm256_or_si256(_mm256_and_si256(lo, m4), _mm256_and_si256(hi, m2));
                    __m256i s = _mm256_shuffle_epi8(sch, k_pick(i));
#pragma GCC unroll 8
                    for (int c = 0; c < C; c++) {
                        const blk_q8_K *yb = act_block(acts + c * astride, b);
                        __m256i yq =
                            _mm256_loadu_si256((const __m256i *)(yb->qs + 128 * h + 32 * i));
                        sum[c] = k_keep(qb_dpwssd(sum[c], _mm256_maddubs_epi16(q, yq), s));
                    }
                }
            }
#pragma GCC unroll 8
            for (int c = 0; c < C; c++)
                acc[r * C + c] =
                    _mm256_fmadd_ps(qb_scale(k->d, act_block(acts + c * astride, b)->d),
                                    _mm256_cvtepi32_ps(sum[c]), acc[r * C + c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < C; c++)
            y[r * yr + c * yc] = qb_hsum(acc[r * C + c]);
}

QB_INLINE void q6_K_rows(const char *w, size_t step, int R, const void *x, int64_t n, float *y,
                         size_t ystep)
{
    q6_tile(w, step, R, x, 0, 1, n, y, ystep, 0);
}

QB_INLINE void q6_K_tile(const char *w, size_t row_bytes, const char *acts, size_t stride, int C,
                         int64_t n, float *y, size_t ystride)
{
    q6_tile(w, row_bytes, 1, acts, stride, C, n, y, 0, ystride);
}

QB_GEMV(q4_K_gemv, q4_K_rows)
QB_GEMV(q5_K_gemv, q5_K_rows)
QB_GEMV(q6_K_gemv, q6_K_rows)

/* ---- batch kernels: rows by QB_TILE_C activations (qb_gemm) ---- */

/* One row by K_TILE_MAX activations on every path: a tile keeps two
 * registers per activation (k_tile), so AVX2's 16 hold 8 of them with
 * the unpacked values, and each row's unpacking serves 8 activations. */
QB_GEMM_TILED_C(q4_K_gemm, q4_K_tile, 1, K_TILE_MAX, QK_K)
QB_GEMM_TILED_C(q5_K_gemm, q5_K_tile, 1, K_TILE_MAX, QK_K)
QB_GEMM_TILED_C(q6_K_gemm, q6_K_tile, 1, K_TILE_MAX, QK_K)

#else

QB_GEMV_REF(q4_K_gemv, q4_K_dot_ref)
QB_GEMV_REF(q5_K_gemv, q5_K_dot_ref)
QB_GEMV_REF(q6_K_gemv, q6_K_dot_ref)

#endif

#ifdef QB_AVX2
#define K_GEMM(name) .gemm = name##_gemm,
#else
#define K_GEMM(name)
#endif

#define K_TYPE(name)                                                                               \
    const qb_type QB_SYM(qb_##name) = {.act = QB_Q8_K,                                             \
                                       .act_block = QK_K,                                          \
                                       .act_block_bytes = sizeof(blk_q8_K) + sizeof(k_pack),       \
                                       .dequant = name##_dequant,                                  \
                                       .quantize = qb_quantize_##name,                             \
                                       .quantize_act = q8_K_quantize_act,                          \
                                       .round_act = q8_K_round_act,                                \
                                       .dot_ref = name##_dot_ref,                                  \
                                       .gemv = name##_gemv,                                        \
                                       K_GEMM(name)};

K_TYPE(q4_K)
K_TYPE(q5_K)
K_TYPE(q6_K)
