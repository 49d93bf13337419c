/* attention.c: tiled online-softmax attention over the block KV cache.
 *
 * A task is one KV head and a range of query rows, a row being one (query
 * position, query head of the GQA group) pair. The task walks the cache a
 * block at a time: it dequantizes the block once (the fp16 path below
 * reads an fp16 cache in place instead), then for every tile of
 * up to 4 rows computes scores S = Q K^T, folds them into the rows'
 * running max and sum, and adds P V to the rows' outputs, which accumulate
 * unnormalized in `out` until the last block. Rows whose position lies
 * before a block skip it (causal mask); within a block, scores past a
 * row's position get probability 0.
 *
 * Both products go through one register-tiled kernel, c += a * b, with a
 * tile of rows x 32 columns kept in vector registers.
 *
 * With an fp16 cache and a chunk of fewer than 64 positions (a decode
 * step, a short prompt) the arithmetic is llama.cpp's instead, so that its
 * logits can be matched: its CPU flash attention takes that many query
 * rows one at a time (ggml's flash_attn_ext "one chunk" path; from 64 on
 * it tiles in fp32, like the path above). The query is rounded to fp16,
 * keys are folded into the running max and sum one at a time, and the
 * unnormalized output is an fp16 accumulator: rounded after every rescale
 * and after every value row added. On the random-weight fixtures those
 * roundings are most of what set inferd's logits apart from llama.cpp's
 * (Q8_0: normalized RMS 0.011 without them, 0.008 with).
 */
#include "attention.h"

#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec8.h"

#define TILE_ROWS 4

/* Chunks of fewer positions follow llama.cpp's fp16 arithmetic (above):
 * ggml's GGML_FA_TILE_Q. */
#define FP16_BELOW 64

/* Cache blocks folded together: the running max, sum and output of a row
 * are updated once per span of SPAN blocks instead of once per block,
 * which was most of attention's cost in prefill beside the products. */
#define SPAN 4

/* The fp16 path's output row in vector registers: head_dim <= 8 * this
 * (attn_scratch_create checks). */
#define FOLD_VECS_MAX 32

/* Lines of the next KV head's cache prefetched per key folded (see
 * prefetch): 2 to 4 measured alike on synth:110m, 12 slower. */
#define PREFETCH_PER_KEY 3

struct attn_scratch {
    kv_shape shape;
    int max_n;
    int n_heads;
    int gqa; /* query heads per KV head */
    pool *pool;
    int workers; /* tasks run at once, each with its own scratch */
    size_t worker_floats;
    float *mem; /* [workers][worker_floats] */
};

/* One worker's scratch: a span of dequantized blocks, a tile of queries
 * rounded to fp16, a tile of scores over the span, and the running max
 * and sum of every row of a task. */
typedef struct worker_mem {
    float *kt;  /* [SPAN][head_dim][block]: each block's keys transposed */
    float *v;   /* [SPAN * block][head_dim] */
    float *q16; /* [TILE_ROWS][head_dim] */
    float *s;   /* [TILE_ROWS][SPAN * block] */
    float *m;   /* [max_n * gqa] */
    float *l;   /* [max_n * gqa] */
} worker_mem;

static size_t worker_floats(kv_shape shape, int max_rows)
{
    size_t blk = (size_t)SPAN * shape.block * shape.head_dim;
    return 2 * blk + (size_t)TILE_ROWS * (shape.head_dim + (size_t)SPAN * shape.block) +
           2 * (size_t)max_rows;
}

static worker_mem worker_at(const attn_scratch *s, int w)
{
    float *p = s->mem + (size_t)w * s->worker_floats;
    size_t blk = (size_t)SPAN * s->shape.block * s->shape.head_dim;
    worker_mem wm;
    wm.kt = p;
    wm.v = wm.kt + blk;
    wm.q16 = wm.v + blk;
    wm.s = wm.q16 + (size_t)TILE_ROWS * s->shape.head_dim;
    wm.m = wm.s + (size_t)TILE_ROWS * SPAN * s->shape.block;
    wm.l = wm.m + (size_t)s->max_n * s->gqa;
    return wm;
}

int attn_scratch_create(attn_scratch **out, int max_n, int n_heads, kv_shape shape, pool *pool,
                        char *err, size_t errlen)
{
    *out = NULL;
    if (max_n < 1 || shape.n_kv_heads < 1 || n_heads < shape.n_kv_heads ||
        n_heads % shape.n_kv_heads != 0) {
        snprintf(err, errlen,
                 "attention: max_n %d must be >= 1 and n_heads %d a multiple of n_kv_heads %d",
                 max_n, n_heads, shape.n_kv_heads);
        return -1;
    }
    if (shape.head_dim < 8 || shape.head_dim % 8 != 0 || shape.head_dim > 8 * FOLD_VECS_MAX ||
        shape.block < 8 || shape.block % 8 != 0) {
        snprintf(err, errlen,
                 "attention: head_dim %d (up to %d) and block %d must be multiples of 8",
                 shape.head_dim, 8 * FOLD_VECS_MAX, shape.block);
        return -1;
    }
    attn_scratch *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "attention: out of memory");
        return -1;
    }
    s->shape = shape;
    s->max_n = max_n;
    s->n_heads = n_heads;
    s->gqa = n_heads / shape.n_kv_heads;
    s->pool = pool;
    s->workers = pool ? pool_threads(pool) : 1;
    s->worker_floats = worker_floats(shape, max_n * s->gqa);
    /* Zeroed so that score columns past a block's valid keys are computed
     * from defined memory even on the first read. */
    s->mem = calloc((size_t)s->workers * s->worker_floats, sizeof(float));
    if (!s->mem) {
        snprintf(err, errlen, "attention: out of memory for %zu bytes of scratch",
                 (size_t)s->workers * s->worker_floats * sizeof(float));
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void attn_scratch_free(attn_scratch *s)
{
    if (!s)
        return;
    free(s->mem);
    free(s);
}

size_t attn_scratch_bytes(const attn_scratch *s)
{
    return (size_t)s->workers * s->worker_floats * sizeof(float);
}

size_t attn_scratch_bytes_for(int max_n, int n_heads, kv_shape shape, int workers)
{
    int gqa = shape.n_kv_heads > 0 ? n_heads / shape.n_kv_heads : 1;
    return (size_t)workers * worker_floats(shape, max_n * gqa) * sizeof(float);
}

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

typedef struct job {
    attn_scratch *s;
    const kv_cache *kv;
    int layer;
    const float *q;
    int n, pos;
    float *out;
    int fp16;             /* llama.cpp's fp16 arithmetic (see the top) */
    int splits;           /* row ranges per KV head */
    int tasks;            /* n_kv_heads * splits */
    int runners;          /* pool indices, one scratch each */
    atomic_int next_task; /* claimed dynamically: a preempted thread
                             does not hold the others back */
} job;

/* Offset of row r's query (and output) vector for KV head h. */
static size_t row_offset(const job *jb, int h, int r)
{
    const attn_scratch *s = jb->s;
    int i = r / s->gqa, qh = h * s->gqa + r % s->gqa;
    return ((size_t)i * s->n_heads + qh) * s->shape.head_dim;
}

/* Rows [rt, rt + R) against blocks [b, b + nb) of KV head h (the span
 * run_task read). Blocks past the tile's last visible position are not
 * scored. The fp16 path scores its queries rounded to fp16 (the products
 * are then exact; their sums round as the tile kernel's do), and only
 * the columns up to that position. */
VEC8_INLINE void fold_tile(const job *jb, const worker_mem *wm, const span *sp, int h, int r0,
                           int rt, int R, int b, int nb, prefetch *pf)
{
    const attn_scratch *s = jb->s;
    int hd = s->shape.head_dim, B = s->shape.block;
    int last = jb->pos + (rt + R - 1) / s->gqa - b * B; /* the tile's last visible key */
    int scored = last / B + 1 < nb ? last / B + 1 : nb, width = scored * B;
    const float *qrow[TILE_ROWS];
    float *orow[TILE_ROWS], *srow[TILE_ROWS];
    for (int t = 0; t < R; t++) {
        size_t off = row_offset(jb, h, rt + t);
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

/* Attention of rows [r0, r1) for KV head h, SPAN blocks at a time; on
 * the fp16 path, KV head `next` (-1: none) is prefetched meanwhile. */
VEC8_INLINE void run_task_body(const job *jb, const worker_mem *wm, int h, int r0, int r1, int next)
{
    const attn_scratch *s = jb->s;
    int hd = s->shape.head_dim, B = s->shape.block;
    for (int r = r0; r < r1; r++) {
        wm->m[r - r0] = -INFINITY;
        wm->l[r - r0] = 0.0f;
        memset(jb->out + row_offset(jb, h, r), 0, (size_t)hd * sizeof(float));
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
        scale_row(jb->out + row_offset(jb, h, r), hd, 1.0f / wm->l[r - r0]);
}

VEC8_PATHS(run_task, (const job *jb, const worker_mem *wm, int h, int r0, int r1, int next),
           (jb, wm, h, r0, r1, next))

static void run_tasks(void *arg, int w)
{
    job *jb = arg;
    worker_mem wm = worker_at(jb->s, w);
    int rows = jb->n * jb->s->gqa;
    /* A worker claims its next task before it runs one, so that it knows
     * which head to prefetch (the other workers' are theirs to read). */
    int task = atomic_fetch_add(&jb->next_task, 1);
    while (task < jb->tasks) {
        int after = atomic_fetch_add(&jb->next_task, 1);
        int h = task / jb->splits, part = task % jb->splits;
        int r0 = (int)((long)rows * part / jb->splits);
        int r1 = (int)((long)rows * (part + 1) / jb->splits);
        int next = after < jb->tasks && after / jb->splits != h ? after / jb->splits : -1;
        if (r0 < r1)
            run_task(jb, &wm, h, r0, r1, next);
        task = after;
    }
}

void attn_forward(attn_scratch *s, const kv_cache *kv, int layer, const float *q, int n, int pos,
                  float *out)
{
    assert(n >= 1 && n <= s->max_n);
    job jb = {.s = s, .kv = kv, .layer = layer, .q = q, .n = n, .pos = pos, .out = out};
    jb.fp16 = kv_bits(kv) == 16 && n < FP16_BELOW;
    int heads = s->shape.n_kv_heads;
    /* With fewer KV heads than threads, split each head's rows too. */
    jb.splits = heads >= s->workers ? 1 : (s->workers + heads - 1) / heads;
    jb.tasks = heads * jb.splits;
    jb.runners = jb.tasks < s->workers ? jb.tasks : s->workers;
    atomic_init(&jb.next_task, 0);
    if (s->pool)
        pool_run(s->pool, jb.runners, run_tasks, &jb);
    else
        run_tasks(&jb, 0);
}
