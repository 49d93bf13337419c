/* attention_task.c: one task of attn_forward (attention.c says what it
 * computes): a KV head's rows against the cache, a span of blocks at a
 * time. Compiled once per kernel path (kpath.h), each copy named for its
 * path; every copy gives the same bits.
 */
#include <math.h>
#include <string.h>

#include "attention_int.h"
#include "kpath.h"
#include "vec8.h"

/* Lines of the next KV head's cache prefetched per key folded (see
 * prefetch): 2 to 4 measured alike on synth:110m, 12 slower. */
#define PREFETCH_PER_KEY 3

/* c[r][col, col + 8C) = (accumulate ? c : 0) + sum_t a[r][t] b[t][col, col + 8C)
 * for r < R, b being floats or, with half, fp16 values (an fp16 cache's
 * keys read in place). Inlined with constant R, C and half, the R x C
 * accumulators stay in registers and every loaded row of b feeds R FMAs. */
static inline __attribute__((always_inline)) void tile(int R, int C, int half,
                                                       const float *const *a, int k,
                                                       const void *restrict b, int ldb, int col,
                                                       float *const *c, int accumulate)
{
    f32x8 acc[TILE_ROWS][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < C; j++)
            acc[r][j] = accumulate ? vec8_load(c[r] + col + 8 * j) : vec8_splat(0.0f);
    for (int t = 0; t < k; t++) {
        size_t at = (size_t)t * ldb + col;
        f32x8 bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < C; j++)
            bv[j] = half ? vec8_load_f16((const _Float16 *)b + at + 8 * j)
                         : vec8_load((const float *)b + at + 8 * j);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            f32x8 av = vec8_splat(a[r][t]);
#pragma GCC unroll 4
            for (int j = 0; j < C; j++)
                acc[r][j] = vec8_fma(av, bv[j], acc[r][j]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < C; j++)
            vec8_store(c[r] + col + 8 * j, acc[r][j]);
}

/* The same product over columns [0, ncols) (a multiple of 8) for R <=
 * TILE_ROWS rows: full tiles of 4 rows, else row by row. */
static inline __attribute__((always_inline)) void gemm_of(int half, int R, const float *const *a,
                                                          int k, const void *b, int ldb, int ncols,
                                                          float *const *c, int accumulate)
{
    for (int col = 0; col < ncols;) {
        int C = ncols - col >= 32 ? 4 : ncols - col >= 16 ? 2 : 1;
        for (int r = 0; r < R; r += R == TILE_ROWS ? TILE_ROWS : 1) {
            if (R == TILE_ROWS && C == 4)
                tile(TILE_ROWS, 4, half, a, k, b, ldb, col, c, accumulate);
            else if (R == TILE_ROWS && C == 2)
                tile(TILE_ROWS, 2, half, a, k, b, ldb, col, c, accumulate);
            else if (R == TILE_ROWS)
                tile(TILE_ROWS, 1, half, a, k, b, ldb, col, c, accumulate);
            else if (C == 4)
                tile(1, 4, half, a + r, k, b, ldb, col, c + r, accumulate);
            else if (C == 2)
                tile(1, 2, half, a + r, k, b, ldb, col, c + r, accumulate);
            else
                tile(1, 1, half, a + r, k, b, ldb, col, c + r, accumulate);
        }
        col += 8 * C;
    }
}

VEC8_INLINE void gemm(int R, const float *const *a, int k, const float *b, int ldb, int ncols,
                      float *const *c, int accumulate)
{
    gemm_of(0, R, a, k, b, ldb, ncols, c, accumulate);
}

VEC8_INLINE void gemm_f16(int R, const float *const *a, int k, const _Float16 *b, int ldb,
                          int ncols, float *const *c)
{
    gemm_of(1, R, a, k, b, ldb, ncols, c, 0);
}

/* Folds one row of raw scores s[0, block), valid in [0, vc), into the
 * row's running max m and sum l (both in units of scaled scores). Leaves
 * the probabilities in s (0 past vc) and returns the factor by which the
 * row's output so far must be rescaled. */
VEC8_INLINE float softmax_fold(float *s, int block, int vc, float scale, float *m, float *l)
{
    const i32x8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    f32x8 neg_inf = vec8_splat(-INFINITY);
    f32x8 mx = neg_inf;
    for (int j = 0; j < block; j += 8) {
        f32x8 x = vec8_select(lane + j < vc, vec8_load(s + j), neg_inf);
        mx = vec8_max(x, mx);
    }
    float row_max = mx[0];
    for (int t = 1; t < 8; t++)
        row_max = mx[t] > row_max ? mx[t] : row_max;

    float m_new = row_max * scale > *m ? row_max * scale : *m;
    f32x8 sum = vec8_splat(0.0f), zero = sum, vs = vec8_splat(scale), vm = vec8_splat(m_new);
    for (int j = 0; j < block; j += 8) {
        f32x8 p = vec8_exp(vec8_load(s + j) * vs - vm);
        p = vec8_select(lane + j < vc, p, zero);
        vec8_store(s + j, p);
        sum += p;
    }
    float total = 0.0f;
    for (int t = 0; t < 8; t++)
        total += sum[t];

    float c = expf(*m - m_new);
    *l = *l * c + total;
    *m = m_new;
    return c;
}

VEC8_INLINE void scale_row(float *x, int n, float c)
{
    f32x8 vc = vec8_splat(c);
    for (int i = 0; i < n; i += 8)
        vec8_store(x + i, vec8_load(x + i) * vc);
}

/* A span's blocks as a fold reads them: dequantized into the worker's
 * scratch, or, on the fp16 path, the cache's own blocks in place. That
 * path reads each key and value once, so a converted copy only added a
 * store and a load of every value (measured on 16 sequences of
 * synth:110m at 128 positions, Q8_0: attention 9.9 ms a step with the
 * copy, 7.7 ms without). */
typedef struct span {
    const float *kt;            /* [SPAN][head_dim][block] */
    const float *v;             /* [SPAN * block][head_dim] */
    const _Float16 *kt16[SPAN]; /* the fp16 path: block k's keys [head_dim][block] */
    const _Float16 *v16[SPAN];  /* and values [block][head_dim] */
} span;

/* The next KV head's cache, read ahead a few lines at a time while the
 * fp16 path folds the current head's keys. A decode step's attention
 * waits mostly on the cache: each head is a few short runs of memory
 * that the hardware prefetchers meet cold. Prefetched in a burst at a
 * head's start, they gained 6% (within noise); spread over the keys,
 * the next head's lines are there when it starts (PREFETCH_PER_KEY). */
typedef struct prefetch {
    const kv_cache *kv;
    int layer, head;      /* head < 0: nothing (left) to read */
    int blocks, last_len; /* blocks of the head, positions in the last */
    int hd, B;
    int block, k_row, v_at;    /* how far it has got */
    const char *keys, *values; /* block `block`'s */
} prefetch;

static void prefetch_block(prefetch *pf, int b)
{
    const _Float16 *keys, *values;
    pf->block = b;
    pf->k_row = pf->v_at = 0;
    if (b >= pf->blocks) {
        pf->head = -1;
        return;
    }
    kv_block_f16(pf->kv, pf->layer, pf->head, b, &keys, &values);
    pf->keys = (const char *)keys;
    pf->values = (const char *)values;
}

static prefetch prefetch_of(const kv_cache *kv, int layer, int head, int positions, int hd, int B)
{
    prefetch pf = {.kv = kv, .layer = layer, .head = head, .hd = hd, .B = B};
    pf.blocks = (positions + B - 1) / B;
    pf.last_len = positions - (pf.blocks - 1) * B;
    if (head >= 0)
        prefetch_block(&pf, 0);
    return pf;
}

/* Up to about `lines` more lines: a block's key rows (the columns in
 * use), then its values in use, block after block. */
static inline void prefetch_some(prefetch *pf, int lines)
{
    while (lines > 0 && pf->head >= 0) {
        int len = pf->block == pf->blocks - 1 ? pf->last_len : pf->B;
        size_t row_bytes = (size_t)len * sizeof(_Float16);
        size_t v_bytes = (size_t)len * pf->hd * sizeof(_Float16);
        if (pf->k_row < pf->hd) {
            const char *row = pf->keys + (size_t)pf->k_row++ * pf->B * sizeof(_Float16);
            for (size_t at = 0; at < row_bytes; at += 64, lines--)
                __builtin_prefetch(row + at);
        } else if ((size_t)pf->v_at < v_bytes) {
            __builtin_prefetch(pf->values + pf->v_at);
            pf->v_at += 64;
            lines--;
        } else {
            prefetch_block(pf, pf->block + 1);
        }
    }
}

/* The fp16 path's fold of one row's raw scores s[0, vc) with the span's
 * values into its running max m, sum l and output out, a key at a time:
 * a new max rescales what is there, any other key enters with weight
 * e^(score - max). The output is an fp16 accumulator, as in ggml: x *= c
 * (ggml_vec_scale_f16) and x += v * c (ggml_vec_mad_f16), each rounded
 * back to fp16. Inlined with the row's C vectors constant, the output
 * stays in registers across the keys rather than going through memory
 * twice a key. */
static inline __attribute__((always_inline)) void fold_keys_f16_of(int C, const float *s, int vc,
                                                                   float scale, const span *sp,
                                                                   int block, float *m, float *l,
                                                                   float *out, prefetch *pf)
{
    f32x8 o[FOLD_VECS_MAX];
    int hd = 8 * C;
#pragma GCC unroll 16
    for (int c = 0; c < C; c++)
        o[c] = vec8_load(out + 8 * c);
    float mx = *m, sum = *l;
    for (int t = 0; t < vc; t++) {
        prefetch_some(pf, PREFETCH_PER_KEY);
        float x = s[t] * scale, ms = 1.0f, vs = 1.0f;
        if (x > mx) {
            ms = expf(mx - x);
            mx = x;
            f32x8 vm = vec8_splat(ms);
#pragma GCC unroll 16
            for (int c = 0; c < C; c++)
                o[c] = vec8_round_f16(o[c] * vm);
        } else {
            vs = expf(x - mx);
        }
        const _Float16 *v = sp->v16[t / block] + (size_t)(t % block) * hd;
        f32x8 vv = vec8_splat(vs);
#pragma GCC unroll 16
        for (int c = 0; c < C; c++)
            o[c] = vec8_round_f16(vec8_fma(vec8_load_f16(v + 8 * c), vv, o[c]));
        sum = sum * ms + vs;
    }
#pragma GCC unroll 16
    for (int c = 0; c < C; c++)
        vec8_store(out + 8 * c, o[c]);
    *m = mx;
    *l = sum;
}

/* The common head sizes get their own copies. */
VEC8_INLINE void fold_keys_f16(const float *s, int vc, float scale, const span *sp, int hd,
                               int block, float *m, float *l, float *out, prefetch *pf)
{
    if (hd == 64)
        fold_keys_f16_of(8, s, vc, scale, sp, block, m, l, out, pf);
    else if (hd == 128)
        fold_keys_f16_of(16, s, vc, scale, sp, block, m, l, out, pf);
    else
        fold_keys_f16_of(hd / 8, s, vc, scale, sp, block, m, l, out, pf);
}

/* Rows [rt, rt + R) against blocks [b, b + nb) of KV head h (the span
 * the task read). Blocks past the tile's last visible position are not
 * scored. The fp16 path scores its queries rounded to fp16 (the products
 * are then exact; their sums round as the tile kernel's do), and only
 * the columns up to that position. */
VEC8_INLINE void fold_tile(const attn_job *jb, const attn_mem *wm, const span *sp, int h, int r0,
                           int rt, int R, int b, int nb, prefetch *pf)
{
    const attn_scratch *s = jb->s;
    int hd = s->shape.head_dim, B = s->shape.block;
    int last = jb->pos + (rt + R - 1) / s->gqa - b * B; /* the tile's last visible key */
    int scored = last / B + 1 < nb ? last / B + 1 : nb, width = scored * B;
    const float *qrow[TILE_ROWS];
    float *orow[TILE_ROWS], *srow[TILE_ROWS];
    for (int t = 0; t < R; t++) {
        size_t off = attn_row_offset(jb, h, rt + t);
        qrow[t] = jb->q + off;
        orow[t] = jb->out + off;
        srow[t] = wm->s + (size_t)t * SPAN * B;
        if (jb->fp16) {
            float *q16 = wm->q16 + (size_t)t * hd;
            for (int d = 0; d < hd; d += 8)
                vec8_store(q16 + d, vec8_round_f16(vec8_load(qrow[t] + d)));
            qrow[t] = q16;
        }
    }
    for (int k = 0; k < scored; k++) {
        float *sk[TILE_ROWS];
        for (int t = 0; t < R; t++)
            sk[t] = srow[t] + (size_t)k * B;
        if (jb->fp16) {
            int cols = last - k * B + 1 < B ? last - k * B + 1 : B;
            gemm_f16(R, qrow, hd, sp->kt16[k], B, (cols + 7) / 8 * 8, sk);
        } else {
            gemm(R, qrow, hd, sp->kt + (size_t)k * hd * B, B, B, sk, 0);
        }
    }

    float scale = 1.0f / sqrtf((float)hd);
    int vc_max = 0;
    for (int t = 0; t < R; t++) {
        int i = (rt + t) / s->gqa;
        int vc = jb->pos + i - b * B + 1;
        vc = vc > width ? width : vc;
        vc_max = vc > vc_max ? vc : vc_max;
        int lr = rt + t - r0;
        if (jb->fp16) {
            fold_keys_f16(srow[t], vc, scale, sp, hd, B, &wm->m[lr], &wm->l[lr], orow[t], pf);
        } else {
            float c = softmax_fold(srow[t], width, vc, scale, &wm->m[lr], &wm->l[lr]);
            if (c != 1.0f)
                scale_row(orow[t], hd, c);
        }
    }
    /* The fp16 path has added the values already, a key at a time. */
    if (!jb->fp16)
        gemm(R, (const float *const *)srow, vc_max, sp->v, hd, hd, orow, 1);
}

/* Attention of rows [r0, r1) for KV head h, SPAN blocks at a time
 * (attn_task_fn). */
void QB_SYM(attn_task)(const attn_job *jb, const attn_mem *wm, int h, int r0, int r1, int next)
{
    const attn_scratch *s = jb->s;
    int hd = s->shape.head_dim, B = s->shape.block;
    for (int r = r0; r < r1; r++) {
        wm->m[r - r0] = -INFINITY;
        wm->l[r - r0] = 0.0f;
        memset(jb->out + attn_row_offset(jb, h, r), 0, (size_t)hd * sizeof(float));
    }
    int last_block = (jb->pos + (r1 - 1) / s->gqa) / B;
    prefetch pf = prefetch_of(jb->kv, jb->layer, jb->fp16 ? next : -1, jb->pos + jb->n, hd, B);
    for (int b = 0; b <= last_block; b += SPAN) {
        int nb = last_block - b + 1 < SPAN ? last_block - b + 1 : SPAN;
        span sp = {.kt = wm->kt, .v = wm->v};
        for (int k = 0; k < nb; k++) {
            if (jb->fp16)
                kv_block_f16(jb->kv, jb->layer, h, b + k, &sp.kt16[k], &sp.v16[k]);
            else
                kv_read_block(jb->kv, jb->layer, h, b + k, jb->pos + jb->n,
                              wm->kt + (size_t)k * hd * B, wm->v + (size_t)k * B * hd);
        }
        /* Rows before the span's first position see none of it. */
        int first = (b * B - jb->pos) * s->gqa;
        for (int rt = first > r0 ? first : r0; rt < r1; rt += TILE_ROWS) {
            int R = r1 - rt < TILE_ROWS ? r1 - rt : TILE_ROWS;
            fold_tile(jb, wm, &sp, h, r0, rt, R, b, nb, &pf);
        }
    }
    for (int r = r0; r < r1; r++)
        scale_row(jb->out + attn_row_offset(jb, h, r), hd, 1.0f / wm->l[r - r0]);
}
