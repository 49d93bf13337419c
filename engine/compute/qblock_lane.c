/* qblock_lane.c: a batch of Q8_0 activations in the lanes of vectors,
 * times Q8_0 rows: the batch kernels behind qblock_q.c's Q8_0 table from
 * the batch they pay at (smaller ones take its tiled kernel). Each
 * (row, activation) gets the float arithmetic of q8_0_rows, lane for
 * lane, so a sequence gets the same bits in a batch as alone. AVX2 and
 * AVX-512 hold the activations as int16 (vpmaddwd), VNNI as bytes
 * (vpdpbusd), AMX multiplies tiles of them (tdpbssd). The scalar path
 * has none.
 */
#include "qblock_int.h"

#ifdef QB_AVX2

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
 * The VNNI path's lane kernel (further down) with vpmaddwd for vpdpbusd: a
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

/* The pack's layout (qb_lane_pack, at the end): activation i's block a
 * into blk. */
#define LANES_N L16_N
#define LANES_MIN L16_MIN
typedef l16_block lanes_block;

static inline void lanes_put(lanes_block *blk, int i, const blk_q8_0 *a)
{
    for (int v = 0; v < QK; v++)
        blk->q[v / 2][2 * i + v % 2] = a->qs[v];
    blk->d[i] = qb_h2f(a->d);
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
                    _mm256_storeu_ps(dw[r][i], qb_group_scales((const uint8_t *)wb, sizeof *wb));
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
                        int k = 8 * i + qb_pair_order(j);
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

int QB_SYM(qb_lane_gemm)(const void *w, size_t row_bytes, int rows, const void *packed, int b,
                         int64_t n, float *y, size_t ystride)
{
    int tiled = rows / L16_M * L16_M;
    if (b < L16_MIN || n % QK_K != 0 || tiled == 0)
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
 * qb_pair_order^-1 of 8 float lanes, and sums the lanes at the end. Here a
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

#define LANES_N LANE_N
#define LANES_MIN LANE_MIN
typedef lane_block lanes_block;

static inline void lanes_put(lanes_block *blk, int i, const blk_q8_0 *a)
{
    for (int t = 0; t < QK / 4; t++)
        for (int u = 0; u < 4; u++)
            blk->q[t][4 * i + u] = (int8_t)(a->qs[4 * t + u] ^ LANE_FLIP);
    blk->d[i] = qb_h2f(a->d);
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
                int k = qb_pair_order(j);
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
 * them. Lane j of a row's float sums depends only on blocks qb_pair_order(j)
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
                    int64_t k = g0 + 8 * i + qb_pair_order(j);
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
                        sum[r] = lane_fold(sum[r], dw[r][i][qb_pair_order(j)], blk, s[r]);
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

int QB_SYM(qb_lane_gemm)(const void *w, size_t row_bytes, int rows, const void *packed, int b,
                         int64_t n, float *y, size_t ystride)
{
    int tiled = rows / LANE_M * LANE_M;
    if (b < LANE_MIN || n % QK_K != 0 || tiled == 0)
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

/* ---- the pack, in the path's layout (lanes_block, lanes_put) ---- */

size_t QB_SYM(qb_lane_bytes)(int b, int64_t n)
{
    if (b < LANES_MIN)
        return 0;
    return (size_t)((b + LANES_N - 1) / LANES_N) * (size_t)(n / QK) * sizeof(lanes_block);
}

/* The batch in groups of LANES_N activations, block after block;
 * activations past the batch are zeros. */
void QB_SYM(qb_lane_pack)(const void *acts, size_t stride, int b, int64_t n, void *packed)
{
    int64_t nb = n / QK;
    if (b < LANES_MIN)
        return;
    lanes_block *p = packed;
    for (int c = 0; c * LANES_N < b; c++) {
        for (int64_t k = 0; k < nb; k++) {
            lanes_block *blk = &p[c * nb + k];
            memset(blk, 0, sizeof *blk);
            for (int i = 0; i < LANES_N && c * LANES_N + i < b; i++)
                lanes_put(
                    blk, i,
                    (const blk_q8_0 *)((const char *)acts + (size_t)(c * LANES_N + i) * stride) +
                        k);
        }
    }
}

#endif /* QB_AVX2 */
