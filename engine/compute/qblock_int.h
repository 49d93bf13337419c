/* qblock_int.h: what the qblock_*.c files share: ggml's block layouts,
 * half-float conversions, the per-type table and the vector primitives.
 * Internal to engine/compute (tests include it to look inside blocks).
 */
#ifndef QBLOCK_INT_H
#define QBLOCK_INT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/model/wtype.h"
#include "qblock.h"
#include "vec8.h"

/* The kernel files (qblock_f.c, qblock_q.c, qblock_k.c) are compiled once
 * per path of cpu.h, QB_PATH its number, with that path's instruction set
 * (the Makefile); the other files that include this one, QB_PATH unset,
 * get the scalar definitions. The vector kernels are written for AVX2
 * with FMA and F16C, on 256-bit registers: on Zen 4 a 512-bit op costs
 * two 256-bit ones, so wider ones would only save decode slots. The
 * AVX-512 paths replace single steps: VNNI fuses the int8 and int16 dot
 * products; on the AMX path GFNI splits nibbles in one op, VBMI gathers
 * Q4_0 scales and the tile unit multiplies a batch's Q8_0 blocks. Each
 * path differs from the scalar reference only by the order of float
 * sums. */
#include "kpath.h"
#if QB_PATH >= 1
#define QB_AVX2 1
#include <immintrin.h>
#endif
#if QB_PATH >= 3
#if !(defined(__AVX512VNNI__) && defined(__AVX512VL__))
#error "the vnni path needs -mavx512vnni -mavx512vl"
#endif
#define QB_VNNI 1
#endif
#if QB_PATH == 4
#if !(defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__))
#error "the amx path needs -mamx-tile -mamx-int8 -mavx512f"
#endif
#define QB_AMX 1
#endif

#define QK 32    /* values per block of Q8_0 and Q4_0 */
#define QK_K 256 /* values per super-block of the K types and Q8_K */

/* Layouts as ggml-common.h defines them; scales are IEEE half floats. */
typedef struct {
    uint16_t d;
    int8_t qs[QK];
} blk_q8_0;

/* Value j of the block is the low nibble of qs[j] for j < 16, the high
 * nibble of qs[j - 16] above; q - 8 times d. */
typedef struct {
    uint16_t d;
    uint8_t qs[QK / 2];
} blk_q4_0;

/* Eight sub-blocks of 32 values, each with a 6-bit scale and min packed in
 * `scales` (see k_scale_min). Values 64i .. 64i+31 are the low nibbles of
 * qs[32i ..], 64i+32 .. 64i+63 the high ones; value = d*sc*q - dmin*m. */
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qs[QK_K / 2];
} blk_q4_K;

/* Q4_K plus a fifth bit: bit 2i of qh[l] for value 64i + l, bit 2i+1 for
 * value 64i + 32 + l. */
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} blk_q5_K;

/* Sixteen groups of 16 values with signed 8-bit scales; 6-bit values
 * (q - 32), low 4 bits in ql, high 2 in qh (see q6_K_chunk). */
typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;
} blk_q6_K;

/* The K types' activations: bsums[g] is the sum of qs[16g .. 16g+15]. */
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} blk_q8_K;

_Static_assert(sizeof(blk_q8_0) == 34 && sizeof(blk_q4_0) == 18, "ggml block size");
_Static_assert(sizeof(blk_q4_K) == 144 && sizeof(blk_q5_K) == 176, "ggml block size");
_Static_assert(sizeof(blk_q6_K) == 210 && sizeof(blk_q8_K) == 292, "ggml block size");

/* ---- half floats ---- */

static inline float qb_bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t qb_f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float qb_h2f(uint16_t h)
{
#ifdef QB_AVX2
    return _cvtsh_ss(h);
#else
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, em = h & 0x7fffu;
    if (em >= 0x7c00) /* inf, NaN */
        return qb_bits_f(sign | 0x7f800000u | (em & 0x3ffu) << 13);
    if (em >= 0x400) /* normal: rebias the exponent */
        return qb_bits_f(sign | ((em << 13) + ((127u - 15u) << 23)));
    float f = (float)em * 0x1p-24f; /* subnormal, exact */
    return sign ? -f : f;
#endif
}

/* Round to nearest even, as ggml's FP32_TO_FP16 and F16C do. */
static inline uint16_t qb_f2h(float f)
{
#ifdef QB_AVX2
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    uint32_t x = qb_f_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (ax >= 0x477ff000u) /* 65520 and up round to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) /* normal: carries into the exponent are right */
        return (uint16_t)(sign | (ax - (112u << 23) + 0xfffu + ((ax >> 13) & 1)) >> 13);
    /* Subnormal: units of 2^-24, rounded by the float adder. */
    float t = qb_bits_f(ax) * 0x1p24f;
    return (uint16_t)(sign | (uint32_t)((t + 0x1p23f) - 0x1p23f));
#endif
}

static inline float qb_bf2f(uint16_t h)
{
    return qb_bits_f((uint32_t)h << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN: ggml's FP32_TO_BF16. */
static inline uint16_t qb_f2bf(float f)
{
    uint32_t u = qb_f_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

/* Round to nearest even for |x| < 2^22: ggml's nearest_int. */
static inline int qb_nearest(float x)
{
    return (int)(qb_f_bits(x + 12582912.0f) & 0x007fffffu) - 0x00400000;
}

/* The largest |x[j]|, 0 for none; NaNs are passed over. Vector lanes,
 * not fmaxf, which gcc leaves a library call and the loop scalar. */
static inline float qb_max_abs(const float *x, int n)
{
    f32x8 m = vec8_splat(0);
    int j = 0;
    for (; j + 8 <= n; j += 8)
        m = vec8_max((f32x8)((i32x8)vec8_load(x + j) & 0x7fffffff), m);
    /* The lanes' largest, halving: no lane is NaN or below 0. */
    m = vec8_max(m, __builtin_shuffle(m, (i32x8){4, 5, 6, 7, 0, 1, 2, 3}));
    m = vec8_max(m, __builtin_shuffle(m, (i32x8){2, 3, 0, 1, 2, 3, 0, 1}));
    m = vec8_max(m, __builtin_shuffle(m, (i32x8){1, 0, 1, 0, 1, 0, 1, 0}));
    float amax = m[0];
    for (; j < n; j++)
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    return amax;
}

/* v rounded to the nearest integer (ties to even, as qb_nearest: v + 1.5 *
 * 2^23 drops the fraction for |v| < 2^22) and clamped to [lo, hi]. */
static inline f32x8 qb_round_grid(f32x8 v, float lo, float hi)
{
    const float magic = 12582912.0f;
    f32x8 r = (v + magic) - magic;
    return vec8_min(vec8_max(r, vec8_splat(lo)), vec8_splat(hi));
}

/* Block k of a group of 8 in the order the kernels sum them, blocks 2i
 * and 2i + 1 sharing a register pair: 0 2 4 6 1 3 5 7. */
static inline int qb_pair_order(int k)
{
    return (k & 3) * 2 + (k >> 2);
}

/* ---- the per-type table ---- */

typedef void qb_gemv_fn(const void *w, size_t row_bytes, int rows, const void *x, int64_t n,
                        float *y);

/* A batch kernel (qb_gemm): the first rows of w, as many as it returns,
 * times the b activations of a batch: acts, stride bytes apart, and what
 * batch_pack made of them (`packed`). */
typedef int qb_gemm_fn(const void *w, size_t row_bytes, int rows, const char *acts, size_t stride,
                       const void *packed, int b, int64_t n, float *y, size_t ystride);

typedef struct qb_type {
    uint32_t act;        /* activation type */
    int act_block;       /* values per activation block */
    int act_block_bytes; /* bytes per activation block */
    int act_group_bytes; /* bytes after the blocks per 8 of them */
    void (*dequant)(const void *row, float *out, int64_t n);
    void (*quantize)(const float *x, void *out, int64_t n);
    void (*quantize_act)(const float *x, void *out, int64_t n);
    void (*round_act)(const float *x, float *out, int64_t n); /* see qb_round_act */
    float (*dot_ref)(const void *w, const void *x, int64_t n);
    qb_gemv_fn *gemv;
    /* A batch's activations rearranged for gemm, after the activations
     * themselves (batch_bytes past them), or NULL: qb_gemm then runs gemv
     * once per activation. Types with one activation type share these. */
    size_t (*batch_bytes)(int b, int64_t n);
    void (*batch_pack)(const void *acts, size_t stride, int b, int64_t n, void *packed);
    qb_gemm_fn *gemm; /* NULL: gemv throughout */
} qb_type;

/* Each path's tables, qblock.c's to choose from. */
#define QB_TABLES(p)                                                                               \
    extern const qb_type qb_f32_##p, qb_f16_##p, qb_bf16_##p, qb_q8_0_##p, qb_q4_0_##p,            \
        qb_q4_K_##p, qb_q5_K_##p, qb_q6_K_##p;
QB_TABLES(scalar)
QB_TABLES(avx2)
QB_TABLES(avx512)
QB_TABLES(vnni)
QB_TABLES(amx)
#undef QB_TABLES

/* Weight quantizers the K types share (qblock_kq.c). */
void qb_quantize_q4_K(const float *x, void *out, int64_t n);
void qb_quantize_q5_K(const float *x, void *out, int64_t n);
void qb_quantize_q6_K(const float *x, void *out, int64_t n);

/* The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K block. */
static inline void k_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4);
        *m = (uint8_t)((s[j + 4] >> 4) | (s[j] >> 6) << 4);
    }
}

/* ---- gemv drivers ---- */

/* Rows a kernel runs at once, sharing each activation load. */
#define QB_ROWS 4

/* Defines gemv function `name` from rows_fn(w, step, R, x, n, y, ystep),
 * a static always-inline kernel that dots the R rows w, w + step, ...
 * into y[0], y[ystep], ...: it is compiled once for R = QB_ROWS and once
 * for leftover single rows. Its loops over rows carry "#pragma GCC
 * unroll": GCC -O2 would keep them as loops, and with them the rows'
 * accumulators in memory instead of registers. The R rows of a call lie a quarter of the
 * matrix apart, so that each is a sequential stream in pages of its own:
 * the hardware prefetchers keep several such streams going (near 30 GB/s
 * on one Zen 4 core) but lose track of rows side by side in one page
 * (about 12 GB/s). */
#define QB_GEMV(name, rows_fn)                                                                     \
    static void name(const void *w, size_t row_bytes, int rows, const void *x, int64_t n,          \
                     float *y)                                                                     \
    {                                                                                              \
        const char *wr = w;                                                                        \
        int h = rows / QB_ROWS;                                                                    \
        for (int i = 0; i < h; i++)                                                                \
            rows_fn(wr + (size_t)i * row_bytes, (size_t)h * row_bytes, QB_ROWS, x, n, y + i,       \
                    (size_t)h);                                                                    \
        for (int r = h * QB_ROWS; r < rows; r++)                                                   \
            rows_fn(wr + (size_t)r * row_bytes, 0, 1, x, n, y + r, 0);                             \
    }

/* The scalar gemv: a row at a time through dot_fn(w, x, n). */
#define QB_GEMV_REF(name, dot_fn)                                                                  \
    static void name(const void *w, size_t row_bytes, int rows, const void *x, int64_t n,          \
                     float *y)                                                                     \
    {                                                                                              \
        for (int r = 0; r < rows; r++)                                                             \
            y[r] = dot_fn((const char *)w + (size_t)r * row_bytes, x, n);                          \
    }

#define QB_INLINE static inline __attribute__((always_inline))

#ifdef QB_AVX2

static inline float qb_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* How far ahead of its reads a gemv row prefetches. The R rows of a
 * gemv are R streams, and a kernel doing this much arithmetic a byte
 * keeps too few of their lines in flight for the prefetchers alone. A
 * 200 MB matrix on one Xeon core, AVX2 path, GB/s without and with
 * lines requested 2 KiB ahead: Q4_0 11.2 / 15.0, Q8_0 13.8 / 17.1,
 * Q4_K 11.2 / 15.6, Q6_K 12.4 / 18.3, F16 13.6 / 16.0 (1 and 4 KiB
 * measured alike, 512 bytes less). */
#ifndef QB_AHEAD
#define QB_AHEAD 2048
#endif

/* Prefetches the lines of [p, p + bytes) QB_AHEAD bytes on. Always
 * inlined: as a plain static function GCC found it free of effects and
 * dropped its calls, prefetches and all. */
QB_INLINE void qb_ahead(const void *p, size_t bytes)
{
    for (size_t at = 0; at < bytes; at += 64)
        _mm_prefetch((const char *)p + QB_AHEAD + at, _MM_HINT_T0);
}

/* acc + sums of four u8 x s8 products per int32 lane. Without VNNI the
 * pairs go through int16, exact while u <= 128 and |s| <= 127. */
static inline __m256i qb_dpbusd(__m256i acc, __m256i u, __m256i s)
{
#ifdef QB_VNNI
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* acc + the products of u0 by s0 and of u1 by s1, for u0, u1 <= 15 and
 * |s| <= 128 (nibbles by int8): each int16 lane of the two is at most
 * 7680, so they add in int16 and widen once. */
static inline __m256i qb_dpbusd2_nib(__m256i acc, __m256i u0, __m256i s0, __m256i u1, __m256i s1)
{
#ifdef QB_VNNI
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(acc, u0, s0), u1, s1);
#else
    __m256i sum = _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(sum, _mm256_set1_epi16(1)));
#endif
}

/* acc + sums of two int16 x int16 products per int32 lane. */
static inline __m256i qb_dpwssd(__m256i acc, __m256i a, __m256i b)
{
#ifdef QB_VNNI
    return _mm256_dpwssd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

/* 16 bytes at a, then 16 at b. */
static inline __m256i qb_load_pair(const void *a, const void *b)
{
    return _mm256_loadu2_m128i((const __m128i *)b, (const __m128i *)a);
}

/* Sums of pairs of qb_pair_sums' registers, then of those pairs: a
 * batch kernel reduces each pair as soon as it has it, keeping two
 * registers a (row, activation) rather than four. */
static inline __m256i qb_sums2(__m256i a, __m256i b)
{
    return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}

static inline __m256i qb_sums4(__m256i s01, __m256i s23)
{
    return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

/* Four registers of int32 partial sums, register i holding 4 of block 2i
 * in its low half and 4 of block 2i+1 in its high half, to one sum per
 * block in the order 0 2 4 6 | 1 3 5 7. Unpacks and adds: hadd would do
 * it in three ops, but at one per two cycles on Zen 4. */
static inline __m256i qb_pair_sums(const __m256i v[4])
{
    return qb_sums4(qb_sums2(v[0], v[1]), qb_sums2(v[2], v[3]));
}

/* GFNI's affine transform applies an 8x8 bit matrix to every byte: byte
 * 7 - k of the matrix selects the input bits whose parity is output bit
 * k. These move a nibble to bits 0..3 and clear the rest. */
#define QB_GF_LO 0x0102040800000000LL
#define QB_GF_HI 0x1020408000000000LL

/* The nibbles of q as bytes 0..15: the low ones, the high ones (GFNI
 * saves the shift). */
static inline __m256i qb_nib_lo(__m256i q)
{
    return _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
}

static inline __m256i qb_nib_hi(__m256i q)
{
#ifdef __GFNI__
    return _mm256_gf2p8affine_epi64_epi8(q, _mm256_set1_epi64x(QB_GF_HI), 0);
#else
    return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0x0F));
#endif
}

/* ---- batch kernels: a tile of rows by activations ----
 *
 * A batch kernel unpacks each weight block of a tile's rows once and
 * multiplies it by QB_TILE_C activations from registers, where qb_gemm's
 * fallback (gemv once per activation) unpacks it for every activation.
 * Integer sums are exact in any order, and the float arithmetic of each
 * (row, activation) is its gemv's, in the same order, so a sequence gets
 * the same bits in a batch as alone. With AVX-512's 32 registers a tile
 * takes twice the activations. */
#if QB_PATH >= 2
#define QB_TILE_C 8
#else
#define QB_TILE_C 4
#endif
/* Rows of a block the tiles of one set of activations go over before the
 * next set: about 16 KiB, in L1 for every set. */
#define QB_TILE_BLOCK_BYTES (16 * 1024)

/* Defines batch kernel `name` from tile_fn(w, row_bytes, acts, stride, C,
 * n, y, ystride), a static always-inline kernel of R rows by C
 * activations (compiled for C = TC, TC / 2 and 1, the batch's leftover
 * activations taking the widest that fits), for rows of whole groups of `unit` values: the gemv's
 * leftover blocks go their own way. QB_GEMM_TILED takes QB_TILE_C
 * activations a tile; a kernel whose tile keeps fewer registers per
 * activation takes more (the K types: qblock_k.c). */
#define QB_GEMM_TILED(name, tile_fn, R, unit) QB_GEMM_TILED_C(name, tile_fn, R, QB_TILE_C, unit)
#define QB_GEMM_TILED_C(name, tile_fn, R, TC, unit)                                                \
    static int name(const void *w, size_t row_bytes, int rows, const char *acts, size_t stride,    \
                    const void *packed, int b, int64_t n, float *y, size_t ystride)                \
    {                                                                                              \
        (void)packed;                                                                              \
        int tiled = rows / (R) * (R);                                                              \
        if (n % (unit) != 0 || b < 2)                                                              \
            return 0;                                                                              \
        int block = (int)(QB_TILE_BLOCK_BYTES / row_bytes) / (R) * (R);                            \
        block = block > (R) ? block : (R);                                                         \
        const char *wr = w;                                                                        \
        for (int r0 = 0; r0 < tiled; r0 += block) {                                                \
            int r1 = r0 + block < tiled ? r0 + block : tiled;                                      \
            for (int c = 0; c < b;) {                                                              \
                int C = b - c >= (TC) ? (TC) : b - c >= (TC) / 2 ? (TC) / 2 : 1;                   \
                for (int r = r0; r < r1; r += (R)) {                                               \
                    const char *tw = wr + (size_t)r * row_bytes, *ta = acts + (size_t)c * stride;  \
                    float *ty = y + (size_t)c * ystride + r;                                       \
                    if (C == (TC))                                                                 \
                        tile_fn(tw, row_bytes, ta, stride, (TC), n, ty, ystride);                  \
                    else if (C == (TC) / 2)                                                        \
                        tile_fn(tw, row_bytes, ta, stride, (TC) / 2, n, ty, ystride);              \
                    else                                                                           \
                        tile_fn(tw, row_bytes, ta, stride, 1, n, ty, ystride);                     \
                }                                                                                  \
                c += C;                                                                            \
            }                                                                                      \
        }                                                                                          \
        return tiled;                                                                              \
    }

static inline uint16_t qb_ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The half-float scales of the 8 blocks at p, p + s, ..., in the order of
 * qb_pair_sums. With AVX-512 VBMI and blocks of up to 18 bytes, one byte
 * permute gathers them from two 64-byte loads. */
static inline __m256 qb_group_scales(const uint8_t *p, int s)
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
    __m128i v = _mm_cvtsi32_si128(qb_ld16(p));
    v = _mm_insert_epi16(v, qb_ld16(p + 2 * s), 1);
    v = _mm_insert_epi16(v, qb_ld16(p + 4 * s), 2);
    v = _mm_insert_epi16(v, qb_ld16(p + 6 * s), 3);
    v = _mm_insert_epi16(v, qb_ld16(p + s), 4);
    v = _mm_insert_epi16(v, qb_ld16(p + 3 * s), 5);
    v = _mm_insert_epi16(v, qb_ld16(p + 5 * s), 6);
    v = _mm_insert_epi16(v, qb_ld16(p + 7 * s), 7);
    return _mm256_cvtph_ps(v);
}

/* qblock_lane.c: a batch of Q8_0 activations in vector lanes for the
 * tables of Q8_0 and Q4_0 (their activation type): its pack (0 bytes
 * for a batch too small for the lanes) and Q8_0 rows times it, the rows
 * done returned (0: the batch or rows do not suit the lanes). */
size_t QB_SYM(qb_lane_bytes)(int b, int64_t n);
void QB_SYM(qb_lane_pack)(const void *acts, size_t stride, int b, int64_t n, void *packed);
int QB_SYM(qb_lane_gemm)(const void *w, size_t row_bytes, int rows, const void *packed, int b,
                         int64_t n, float *y, size_t ystride);

/* Broadcast of a block scale pair's product. */
static inline __m256 qb_scale(uint16_t dw, float dx)
{
    return _mm256_set1_ps(qb_h2f(dw) * dx);
}

#endif /* QB_AVX2 */

#endif
