/* forward.c: the Llama forward pass of one pipeline stage (see forward.h).
 *
 * Reads like llama2.c's run.c, for many rows at once: every activation
 * buffer is [rows][width]. The rows are consecutive positions of one
 * sequence (fwd_step) or one position of each sequence of a batch
 * (fwd_step_batch); only RoPE, the cache and the choice of product tell
 * the two apart (step_rows). A prefill chunk multiplies all its rows by a
 * weight matrix in one sgemm (qgemm.c); decode rows are matrix-vector
 * products, bound by memory bandwidth, which read each weight once for
 * the whole batch (matvec.c). Weights stay in their file's types
 * (weights.h).
 */
#include "forward.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "blas.h"
#include "engine/model/weights.h"
#include "engine/model/wtype.h"
#include "engine/sys/clock.h"
#include "matvec.h"
#include "qblock.h"
#include "qgemm.h"
#include "vec8.h"

struct fwd_stage {
    const model *m;
    model_config c;
    int first, last;
    int kv_dim;
    pool *pool;
    float theta_scale;         /* RoPE: rope_base^(-2 / rope_dim), see rope_angles */
    const float *rope_factors; /* Llama 3's divisor of each pair's angle, or NULL */

    /* Scratch, grown to the largest step since the last release. */
    int cap;         /* rows of the activations below */
    float *acts;     /* the one allocation below pointers carve up */
    float *x;        /* [cap][dim] residual stream */
    float *xb;       /* [cap][dim] normed block input, then attention output */
    float *q;        /* [cap][dim] */
    float *k;        /* [cap][kv_dim] */
    float *v;        /* [cap][kv_dim] */
    float *proj;     /* [cap][dim] a block's output before the residual add */
    float *hb;       /* [cap][hidden_dim] */
    float *hb2;      /* [cap][hidden_dim] */
    float *rope_cos; /* [cap][head_dim / 2] rotation of each row's position */
    float *rope_sin; /* [cap][head_dim / 2] */
    float *qg;       /* a prefill product's tiles and rounded inputs (qgemm.h) */
    size_t qg_floats;
    void *mv; /* decode products' quantized inputs (matvec.h), for mv_rows rows */
    int mv_rows;

    attn_scratch *attn; /* one sequence's, sized for attn_n positions and attn_shape */
    int attn_n;
    kv_shape attn_shape;
    attn_scratch **attn_each; /* a batch's: one a thread, for one position and each_shape */
    int n_each;
    kv_shape each_shape;
};

/* The rows of a step: `seqs` sequences of `len` consecutive positions
 * each, row i * len + j being position kv_len(kvs[i]) + j of sequence i
 * (lengths are committed when the step ends). fwd_step runs one sequence,
 * fwd_step_batch many of one position each. */
typedef struct step_rows {
    kv_cache *const *kvs;
    int seqs, len;
} step_rows;

int fwd_create(fwd_stage **out, const model *m, int first, int last, pool *pool, char *err,
               size_t errlen)
{
    *out = NULL;
    const model_config *c = model_config_of(m);
    if (first < 0 || last > c->n_layers || first >= last) {
        snprintf(err, errlen, "layers %d:%d: expected 0 <= first < last <= %d", first, last,
                 c->n_layers);
        return -1;
    }
    fwd_stage *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory creating the forward stage");
        return -1;
    }
    s->m = m;
    s->c = *c;
    s->first = first;
    s->last = last;
    s->kv_dim = c->n_kv_heads * c->head_dim;
    s->pool = pool;
    s->theta_scale = powf(c->rope_base, -2.0f / (float)c->rope_dim);
    s->rope_factors = model_rope_freqs(m);
    /* sgemm runs inside the pool's tasks, one call a thread (qgemm.c). */
    blas_set_threads(1);
    *out = s;
    return 0;
}

void fwd_free(fwd_stage *s)
{
    if (!s)
        return;
    fwd_scratch_release(s);
    free(s);
}

int fwd_first(const fwd_stage *s)
{
    return s->first;
}

int fwd_last(const fwd_stage *s)
{
    return s->last;
}

int fwd_is_head(const fwd_stage *s)
{
    return s->first == 0;
}

int fwd_is_tail(const fwd_stage *s)
{
    return s->last == s->c.n_layers;
}

kv_shape fwd_kv_shape(const fwd_stage *s)
{
    kv_shape shape = {
        .n_layers = s->last - s->first,
        .n_kv_heads = s->c.n_kv_heads,
        .head_dim = s->c.head_dim,
        .block = KV_BLOCK_DEFAULT,
    };
    return shape;
}

/* The activation rows' floats per position (grow_activations carves them). */
static size_t acts_floats_per_position(const model_config *c)
{
    return 5 * (size_t)c->dim + 2 * (size_t)c->n_kv_heads * (size_t)c->head_dim +
           2 * (size_t)c->hidden_dim + (size_t)c->head_dim;
}

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* Threads of the stage's parallel parts. */
static int workers_of(const fwd_stage *s)
{
    return s->pool ? pool_threads(s->pool) : 1;
}

/* The prefill scratch of a chunk of n positions: the most any of the
 * stage's matrices needs (the classifier too, for fwd_step_logits). */
static size_t qg_floats_for(const fwd_stage *s, int n)
{
    int workers = workers_of(s);
    size_t most = 0;
    for (int l = s->first; l < s->last; l++) {
        const layer_weights *w = model_layer(s->m, l);
        const wmat *mats[] = {&w->wq, &w->wk, &w->wv, &w->wo, &w->w1, &w->w2, &w->w3};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
            most = max_size(most, qg_scratch_floats(mats[i], n, workers));
    }
    if (fwd_is_tail(s))
        most = max_size(most, qg_scratch_floats(model_classifier(s->m), n, workers));
    return most;
}

/* Decode products take inputs as wide as the widest matrix's rows. */
static size_t mv_bytes_for(const model_config *c, int rows)
{
    int widest = c->hidden_dim > c->dim ? c->hidden_dim : c->dim;
    return mv_scratch_bytes(widest, rows);
}

size_t fwd_scratch_bytes(const fwd_stage *s)
{
    size_t bytes = (size_t)s->cap * acts_floats_per_position(&s->c) * sizeof(float);
    bytes += s->qg_floats * sizeof(float) + mv_bytes_for(&s->c, s->mv_rows);
    for (int i = 0; i < s->n_each; i++)
        bytes += attn_scratch_bytes(s->attn_each[i]);
    return bytes + (s->attn ? attn_scratch_bytes(s->attn) : 0);
}

/* A chunk of n positions needs attention for n queries, a batch of n
 * sequences the inputs of n matrix-vector products and a thread's
 * attention each; both, activations for n rows. */
size_t fwd_scratch_bytes_of(const model_config *c, kv_shape shape, int n, int threads)
{
    size_t acts = (size_t)n * acts_floats_per_position(c) * sizeof(float);
    size_t attn = attn_scratch_bytes_for(n, c->n_heads, shape, threads) +
                  (size_t)threads * attn_scratch_bytes_for(1, c->n_heads, shape, 1);
    return acts + mv_bytes_for(c, n) + attn;
}

/* A chunk's sgemm tiles on top: they depend on the weights' types. */
size_t fwd_scratch_bytes_for(const fwd_stage *s, kv_shape shape, int n)
{
    return fwd_scratch_bytes_of(&s->c, shape, n, workers_of(s)) +
           qg_floats_for(s, n) * sizeof(float);
}

static void free_each(attn_scratch **each, int n)
{
    for (int i = 0; i < n; i++)
        attn_scratch_free(each[i]);
    free(each);
}

void fwd_scratch_release(fwd_stage *s)
{
    free(s->acts);
    s->acts = NULL;
    s->cap = 0;
    free(s->qg);
    s->qg = NULL;
    s->qg_floats = 0;
    free(s->mv);
    s->mv = NULL;
    s->mv_rows = 0;
    attn_scratch_free(s->attn);
    s->attn = NULL;
    s->attn_n = 0;
    free_each(s->attn_each, s->n_each);
    s->attn_each = NULL;
    s->n_each = 0;
}

/* The next `count` floats of an allocation being carved up. */
static float *carve(float **p, size_t count)
{
    float *out = *p;
    *p += count;
    return out;
}

/* The grow_* functions: scratch contents do not outlive a step, so
 * nothing is copied; on failure the old buffers stay. */

static int grow_activations(fwd_stage *s, int n, char *err, size_t errlen)
{
    if (n <= s->cap)
        return 0;
    size_t floats = (size_t)n * acts_floats_per_position(&s->c);
    float *acts = malloc(floats * sizeof(float));
    if (!acts) {
        snprintf(err, errlen, "out of memory for activations of %d rows (%zu bytes)", n,
                 floats * sizeof(float));
        return -1;
    }
    free(s->acts);
    s->acts = acts;
    s->cap = n;
    size_t dim = s->c.dim, kv_dim = s->kv_dim, hidden = s->c.hidden_dim;
    float *p = acts;
    s->x = carve(&p, n * dim);
    s->xb = carve(&p, n * dim);
    s->q = carve(&p, n * dim);
    s->k = carve(&p, n * kv_dim);
    s->v = carve(&p, n * kv_dim);
    s->proj = carve(&p, n * dim);
    s->hb = carve(&p, n * hidden);
    s->hb2 = carve(&p, n * hidden);
    s->rope_cos = carve(&p, n * (size_t)(s->c.head_dim / 2));
    s->rope_sin = carve(&p, n * (size_t)(s->c.head_dim / 2));
    return 0;
}

/* Prefill tiles for a chunk of n positions. */
static int grow_tiles(fwd_stage *s, int n, char *err, size_t errlen)
{
    size_t floats = qg_floats_for(s, n);
    if (floats <= s->qg_floats)
        return 0;
    float *qg = malloc(floats * sizeof(float));
    if (!qg) {
        snprintf(err, errlen, "out of memory for prefill tiles of %d positions (%zu bytes)", n,
                 floats * sizeof(float));
        return -1;
    }
    free(s->qg);
    s->qg = qg;
    s->qg_floats = floats;
    return 0;
}

/* Decode products' inputs for n rows. */
static int grow_inputs(fwd_stage *s, int n, char *err, size_t errlen)
{
    if (n <= s->mv_rows)
        return 0;
    void *mv = malloc(mv_bytes_for(&s->c, n));
    if (!mv) {
        snprintf(err, errlen, "out of memory for the inputs of %d decode rows (%zu bytes)", n,
                 mv_bytes_for(&s->c, n));
        return -1;
    }
    free(s->mv);
    s->mv = mv;
    s->mv_rows = n;
    return 0;
}

static int same_shape(kv_shape a, kv_shape b)
{
    return a.n_layers == b.n_layers && a.n_kv_heads == b.n_kv_heads && a.head_dim == b.head_dim &&
           a.block == b.block;
}

/* Attention scratch for n positions over this cache's block size. */
static int grow_attention(fwd_stage *s, kv_shape shape, int n, char *err, size_t errlen)
{
    if (s->attn && n <= s->attn_n && same_shape(shape, s->attn_shape))
        return 0;
    int max_n = n > s->attn_n ? n : s->attn_n;
    attn_scratch *a;
    if (attn_scratch_create(&a, max_n, s->c.n_heads, shape, s->pool, err, errlen) != 0)
        return -1;
    attn_scratch_free(s->attn);
    s->attn = a;
    s->attn_n = max_n;
    s->attn_shape = shape;
    return 0;
}

/* A batch's attention scratch: one pool-less scratch a thread. */
static int grow_attention_each(fwd_stage *s, kv_shape shape, char *err, size_t errlen)
{
    if (s->attn_each && same_shape(shape, s->each_shape))
        return 0;
    int n = workers_of(s);
    attn_scratch **each = calloc((size_t)n, sizeof *each);
    if (!each) {
        snprintf(err, errlen, "out of memory for a batch's attention scratch");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (attn_scratch_create(&each[i], 1, s->c.n_heads, shape, NULL, err, errlen) != 0) {
            free_each(each, i);
            return -1;
        }
    }
    free_each(s->attn_each, s->n_each);
    s->attn_each = each;
    s->n_each = n;
    s->each_shape = shape;
    return 0;
}

/* Everything a step of these rows uses: a chunk's products go through
 * sgemm tiles, decode rows (and the one row a chunk's logits come from)
 * through matrix-vector products; a batch's attention runs a sequence a
 * thread (attend). */
static int grow_scratch(fwd_stage *s, const step_rows *r, char *err, size_t errlen)
{
    kv_shape shape = kv_shape_of(r->kvs[0]);
    if (grow_activations(s, r->seqs * r->len, err, errlen) != 0 ||
        (r->len > 1 && grow_tiles(s, r->len, err, errlen) != 0) ||
        grow_inputs(s, r->len == 1 ? r->seqs : 1, err, errlen) != 0)
        return -1;
    return r->seqs > 1 ? grow_attention_each(s, shape, err, errlen)
                       : grow_attention(s, shape, r->len, err, errlen);
}

/* The stage's input and output buffers for n rows, and token ids in the
 * vocabulary (`row` names a row in the message: "at position"). */
static int check_io(const fwd_stage *s, const int *tokens, const float *x_in, int n,
                    const char *row, const float *x_out, char *err, size_t errlen)
{
    if (fwd_is_head(s) ? !tokens : !x_in) {
        snprintf(err, errlen, "%s",
                 fwd_is_head(s) ? "the head stage needs token ids"
                                : "a stage after the head needs x_in");
        return -1;
    }
    if (!fwd_is_tail(s) && !x_out) {
        snprintf(err, errlen, "non-tail stage needs an x_out buffer");
        return -1;
    }
    for (int i = 0; fwd_is_head(s) && i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= s->c.vocab_size) {
            snprintf(err, errlen, "token %d %s %d is out of range, expected 0..%d", tokens[i], row,
                     i, s->c.vocab_size - 1);
            return -1;
        }
    }
    return 0;
}

/* The cache holds the stage's layers and heads (`whose` starts the
 * message: "sequence 3's "). */
static int check_cache(const fwd_stage *s, const kv_cache *kv, const char *whose, char *err,
                       size_t errlen)
{
    kv_shape want = fwd_kv_shape(s), have = kv_shape_of(kv);
    if (have.n_layers != want.n_layers || have.n_kv_heads != want.n_kv_heads ||
        have.head_dim != want.head_dim) {
        snprintf(err, errlen,
                 "%skv cache holds %d layers x %d kv heads x %d dims, stage needs %d x %d x %d",
                 whose, have.n_layers, have.n_kv_heads, have.head_dim, want.n_layers,
                 want.n_kv_heads, want.head_dim);
        return -1;
    }
    return 0;
}

/* Every cache of a batch fits the stage, and they share one block size
 * (the attention scratch is laid out by it) and no cache appears twice
 * (a sequence has one position per step). */
static int check_batch(const fwd_stage *s, kv_cache *const *kvs, int b, char *err, size_t errlen)
{
    for (int i = 0; i < b; i++) {
        char whose[32];
        snprintf(whose, sizeof whose, "sequence %d's ", i);
        if (check_cache(s, kvs[i], whose, err, errlen) != 0)
            return -1;
        int block = kv_shape_of(kvs[i]).block, block0 = kv_shape_of(kvs[0]).block;
        if (block != block0) {
            snprintf(err, errlen,
                     "sequence %d's kv cache has blocks of %d positions, sequence 0's of %d: "
                     "a batch's caches share one block size",
                     i, block, block0);
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (kvs[j] == kvs[i]) {
                snprintf(err, errlen, "sequences %d and %d share one kv cache", j, i);
                return -1;
            }
        }
    }
    return 0;
}

/* Blocks for every sequence's next len positions. On failure the blocks
 * past each cache's length are released again; no length changes. */
static int reserve(const step_rows *r, char *err, size_t errlen)
{
    for (int i = 0; i < r->seqs; i++) {
        kv_cache *kv = r->kvs[i];
        if (kv_reserve(kv, kv_len(kv) + r->len, err, errlen) != 0) {
            while (i-- > 0)
                kv_set_len(r->kvs[i], kv_len(r->kvs[i]));
            return -1;
        }
    }
    return 0;
}

/* ---- the building blocks, as in llama2.c ---- */

static void embed(fwd_stage *s, const int *tokens, int n)
{
    const wmat *table = model_token_embedding(s->m);
    size_t dim = s->c.dim;
    for (int i = 0; i < n; i++)
        qb_dequant_row(table->type,
                       (const char *)table->data + (size_t)tokens[i] * table->row_bytes,
                       s->x + i * dim, (int64_t)dim);
}

/* Every row of x normalized to unit rms, then scaled by weight. */
VEC8_INLINE void rmsnorm_body(float *out, const float *x, const float *weight, int n, int dim,
                              float eps)
{
    for (int i = 0; i < n; i++) {
        const float *xi = x + (size_t)i * dim;
        float *oi = out + (size_t)i * dim;
        f32x8 acc = vec8_splat(0.0f);
        int j = 0;
        for (; j + 8 <= dim; j += 8)
            acc = vec8_fma(vec8_load(xi + j), vec8_load(xi + j), acc);
        float ss = vec8_sum(acc);
        for (; j < dim; j++)
            ss += xi[j] * xi[j];
        ss = 1.0f / sqrtf(ss / dim + eps);
        f32x8 scale = vec8_splat(ss);
        for (j = 0; j + 8 <= dim; j += 8)
            vec8_store(oi + j, vec8_load(weight + j) * (scale * vec8_load(xi + j)));
        for (; j < dim; j++)
            oi[j] = weight[j] * (ss * xi[j]);
    }
}

VEC8_PATHS(rmsnorm, (float *out, const float *x, const float *weight, int n, int dim, float eps),
           (out, x, weight, n, dim, eps))

/* outs[k].y[n][rows_k] = x[n][cols] W_k^T for every k, W_k being
 * [rows_k][cols], for n of the step's rows. A chunk multiplies its rows
 * by each matrix in one sgemm. A single position, or one of each
 * sequence of a batch, is a matrix-vector product per row, bound by
 * memory bandwidth: all the rows and matrices go in one pass over the
 * pool that reads each weight once, and each row comes out as it would
 * alone. */
static void matmul(fwd_stage *s, const step_rows *r, const float *x, int n, int cols,
                   const mv_out *outs, int n_outs)
{
    if (n == 1 || r->len == 1) {
        mv_multiply(s->pool, x, n, cols, outs, n_outs, s->mv);
        return;
    }
    qg_multiply(s->pool, x, n, cols, outs, n_outs, s->qg);
}

static void rotate(float *vec, int n_heads, int head_dim, const float *cs, const float *sn)
{
    for (int h = 0; h < n_heads; h++) {
        float *v = vec + (size_t)h * head_dim;
        for (int p = 0; p < head_dim / 2; p++) {
            float v0 = v[2 * p], v1 = v[2 * p + 1];
            v[2 * p] = v0 * cs[p] - v1 * sn[p];
            v[2 * p + 1] = v0 * sn[p] + v1 * cs[p];
        }
    }
}

/* The RoPE rotation of every row's position, once per step for all
 * layers. They are computed per position, so nothing grows with the
 * context. llama2.c's and GGUF llama's convention: pair (2j, 2j+1) of a
 * head at position p turns by p * rope_base^(-2j / rope_dim), divided by
 * Llama 3's factor for the pair when the model has one; pairs past
 * rope_dim do not turn. The angle is formed as ggml's rope forms it, by
 * repeated float multiplication with theta_scale, so that it rounds the
 * same. */
static void rope_angles(fwd_stage *s, const step_rows *r)
{
    int pairs = s->c.head_dim / 2, turning = s->c.rope_dim / 2;
    for (int i = 0; i < r->seqs * r->len; i++) {
        float *cs = s->rope_cos + (size_t)i * pairs, *sn = s->rope_sin + (size_t)i * pairs;
        float theta = (float)(kv_len(r->kvs[i / r->len]) + i % r->len);
        for (int j = 0; j < turning; j++, theta *= s->theta_scale) {
            float a = s->rope_factors ? theta / s->rope_factors[j] : theta;
            cs[j] = cosf(a);
            sn[j] = sinf(a);
        }
        for (int j = turning; j < pairs; j++) {
            cs[j] = 1.0f;
            sn[j] = 0.0f;
        }
    }
}

/* RoPE on the queries and keys of the step's n rows. */
static void rope(fwd_stage *s, int n)
{
    int hd = s->c.head_dim;
    for (int i = 0; i < n; i++) {
        const float *cs = s->rope_cos + (size_t)i * (hd / 2);
        const float *sn = s->rope_sin + (size_t)i * (hd / 2);
        rotate(s->q + (size_t)i * s->c.dim, s->c.n_heads, hd, cs, sn);
        rotate(s->k + (size_t)i * s->kv_dim, s->c.n_kv_heads, hd, cs, sn);
    }
}

static void residual_add(float *x, const float *delta, size_t count)
{
    for (size_t i = 0; i < count; i++)
        x[i] += delta[i];
}

/* hb = silu(hb) * hb2. The last count % 8 values go through the same
 * vector code, padded, so every value is computed the same way. */
VEC8_INLINE void swiglu_body(float *hb, const float *hb2, size_t count)
{
    size_t i = 0;
    for (; i + 8 <= count; i += 8)
        vec8_store(hb + i, vec8_silu(vec8_load(hb + i)) * vec8_load(hb2 + i));
    if (i < count) {
        float a[8] = {0}, b[8] = {0};
        memcpy(a, hb + i, (count - i) * sizeof(float));
        memcpy(b, hb2 + i, (count - i) * sizeof(float));
        vec8_store(a, vec8_silu(vec8_load(a)) * vec8_load(b));
        memcpy(hb + i, a, (count - i) * sizeof(float));
    }
}

VEC8_PATHS(swiglu, (float *hb, const float *hb2, size_t count), (hb, hb2, count))

/* swiglu over a chunk's rows, spread over the pool: with 512 positions
 * it is millions of exps, which one thread would do while the others
 * wait. A single position's few thousand are done inline. */
#define SWIGLU_PART 65536 /* values per task, a multiple of 8 */

typedef struct swiglu_job {
    float *hb;
    const float *hb2;
    size_t count;
} swiglu_job;

static void swiglu_part(void *arg, int i)
{
    const swiglu_job *j = arg;
    size_t lo = (size_t)i * SWIGLU_PART;
    size_t len = j->count - lo < SWIGLU_PART ? j->count - lo : SWIGLU_PART;
    swiglu(j->hb + lo, j->hb2 + lo, len);
}

static void swiglu_chunk(fwd_stage *s, size_t count)
{
    swiglu_job j = {s->hb, s->hb2, count};
    int parts = (int)((count + SWIGLU_PART - 1) / SWIGLU_PART);
    if (s->pool)
        pool_run(s->pool, parts, swiglu_part, &j);
    else
        swiglu(s->hb, s->hb2, count);
}

/* ---- one layer ---- */

/* Sequence i's rows of one layer: their keys and values into its cache,
 * then their attention over it, with scratch a. */
static void attend_seq(fwd_stage *s, attn_scratch *a, const step_rows *r, int i, int local)
{
    kv_cache *kv = r->kvs[i];
    size_t row = (size_t)i * r->len;
    kv_write(kv, local, kv_len(kv), r->len, s->k + row * s->kv_dim, s->v + row * s->kv_dim);
    attn_forward(a, kv, local, s->q + row * s->c.dim, r->len, kv_len(kv), s->xb + row * s->c.dim);
}

typedef struct attend_job {
    fwd_stage *s;
    const step_rows *r;
    int local;
    atomic_int next; /* the next sequence to claim */
} attend_job;

/* A thread's share of a batch: whole sequences as they come, on its own
 * scratch. */
static void attend_part(void *arg, int worker)
{
    attend_job *j = arg;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->r->seqs;)
        attend_seq(j->s, j->s->attn_each[worker], j->r, i, j->local);
}

/* One sequence splits its heads over the pool; a batch spreads its
 * sequences instead, in one fork and join a layer: one a sequence cost
 * more than the attention itself at short contexts. */
static void attend(fwd_stage *s, const step_rows *r, int local)
{
    if (r->seqs == 1) {
        attend_seq(s, s->attn, r, 0, local);
        return;
    }
    attend_job j = {.s = s, .r = r, .local = local};
    atomic_init(&j.next, 0);
    if (s->pool)
        pool_run(s->pool, s->n_each, attend_part, &j);
    else
        attend_part(&j, 0);
}

static void attention_block(fwd_stage *s, const step_rows *r, int layer)
{
    const layer_weights *w = model_layer(s->m, layer);
    int dim = s->c.dim, n = r->seqs * r->len;
    rmsnorm(s->xb, s->x, w->rms_att, n, dim, s->c.norm_eps);
    mv_out qkv[] = {{&w->wq, s->q}, {&w->wk, s->k}, {&w->wv, s->v}};
    matmul(s, r, s->xb, n, dim, qkv, 3);
    rope(s, n);
    attend(s, r, layer - s->first);
    matmul(s, r, s->xb, n, dim, &(mv_out){&w->wo, s->proj}, 1);
    residual_add(s->x, s->proj, (size_t)n * dim);
}

static void ffn_block(fwd_stage *s, const step_rows *r, int layer)
{
    const layer_weights *w = model_layer(s->m, layer);
    int dim = s->c.dim, hidden = s->c.hidden_dim, n = r->seqs * r->len;
    rmsnorm(s->xb, s->x, w->rms_ffn, n, dim, s->c.norm_eps);
    mv_out gate_up[] = {{&w->w1, s->hb}, {&w->w3, s->hb2}};
    matmul(s, r, s->xb, n, dim, gate_up, 2);
    swiglu_chunk(s, (size_t)n * hidden);
    matmul(s, r, s->hb, n, hidden, &(mv_out){&w->w2, s->proj}, 1);
    residual_add(s->x, s->proj, (size_t)n * dim);
}

/* Logits of the last `rows` rows of the step: a chunk's last position
 * only when sampling (the others are never sampled), every position for
 * an evaluation, every sequence of a batch. */
static void classify(fwd_stage *s, const step_rows *r, int rows, float *logits)
{
    int dim = s->c.dim, n = r->seqs * r->len;
    rmsnorm(s->xb, s->x + (size_t)(n - rows) * dim, model_rms_final(s->m), rows, dim,
            s->c.norm_eps);
    matmul(s, r, s->xb, rows, dim, &(mv_out){model_classifier(s->m), logits}, 1);
}

static void hidden_stats(const float *x, size_t count, fwd_stats *st)
{
    float max = 0.0f;
    int nonfinite = 0;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(x[i]))
            nonfinite++;
        else if (fabsf(x[i]) > max)
            max = fabsf(x[i]);
    }
    st->act_max = max;
    st->nonfinite = nonfinite;
}

/* A step over checked rows and buffers, with the logits of its last
 * logit_rows rows. */
static int run(fwd_stage *s, const step_rows *r, const int *tokens, const float *x_in, float *x_out,
               float *logits, int logit_rows, fwd_stats *st, char *err, size_t errlen)
{
    double t0 = clock_ms();
    if (grow_scratch(s, r, err, errlen) != 0 || reserve(r, err, errlen) != 0)
        return -1;

    int n = r->seqs * r->len;
    size_t count = (size_t)n * s->c.dim;
    if (fwd_is_head(s))
        embed(s, tokens, n);
    else
        memcpy(s->x, x_in, count * sizeof(float));
    rope_angles(s, r);
    for (int layer = s->first; layer < s->last; layer++) {
        attention_block(s, r, layer);
        ffn_block(s, r, layer);
    }
    if (x_out)
        memcpy(x_out, s->x, count * sizeof(float));
    if (fwd_is_tail(s) && logits)
        classify(s, r, logit_rows, logits);

    for (int i = 0; i < r->seqs; i++)
        kv_set_len(r->kvs[i], kv_len(r->kvs[i]) + r->len);
    if (st) {
        hidden_stats(s->x, count, st);
        st->model_ms = clock_ms() - t0;
    }
    return 0;
}

/* fwd_step and fwd_step_logits: logit_rows is 1 or n. */
static int step(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                float *x_out, float *logits, int logit_rows, fwd_stats *st, char *err,
                size_t errlen)
{
    if (n < 1) {
        snprintf(err, errlen, "step of %d positions, expected at least 1", n);
        return -1;
    }
    if (check_io(s, tokens, x_in, n, "at position", x_out, err, errlen) != 0 ||
        check_cache(s, kv, "", err, errlen) != 0)
        return -1;
    step_rows r = {&kv, 1, n};
    return run(s, &r, tokens, x_in, x_out, logits, logit_rows, st, err, errlen);
}

int fwd_step(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n, float *x_out,
             float *logits, fwd_stats *st, char *err, size_t errlen)
{
    return step(s, kv, tokens, x_in, n, x_out, logits, 1, st, err, errlen);
}

int fwd_step_logits(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                    float *logits, fwd_stats *st, char *err, size_t errlen)
{
    if (!fwd_is_tail(s) || !logits) {
        snprintf(err, errlen, "logits of every position need the tail stage and a buffer");
        return -1;
    }
    return step(s, kv, tokens, x_in, n, NULL, logits, n, st, err, errlen);
}

int fwd_step_normed(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                    float *x_out, fwd_stats *st, char *err, size_t errlen)
{
    if (!fwd_is_tail(s) || !x_out) {
        snprintf(err, errlen, "the final norm's output needs the tail stage and a buffer");
        return -1;
    }
    if (step(s, kv, tokens, x_in, n, x_out, NULL, 0, st, err, errlen) != 0)
        return -1;
    /* Row by row, each read whole before it is written: in place. */
    rmsnorm(x_out, x_out, model_rms_final(s->m), n, s->c.dim, s->c.norm_eps);
    return 0;
}

int fwd_step_batch(fwd_stage *s, kv_cache *const *kvs, int b, const int *tokens, const float *x_in,
                   float *x_out, float *logits, fwd_stats *st, char *err, size_t errlen)
{
    if (b < 1) {
        snprintf(err, errlen, "batch of %d sequences, expected at least 1", b);
        return -1;
    }
    if (check_io(s, tokens, x_in, b, "of sequence", x_out, err, errlen) != 0 ||
        check_batch(s, kvs, b, err, errlen) != 0)
        return -1;
    step_rows r = {kvs, b, 1};
    return run(s, &r, tokens, x_in, x_out, logits, b, st, err, errlen);
}
