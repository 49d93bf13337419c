/* forward.c: the Llama forward pass of one pipeline stage (see forward.h).
 *
 * Reads like llama2.c's run.c, for a chunk of n positions at once: every
 * activation buffer is [n][width], row i being position pos + i. A prefill
 * chunk multiplies all its rows by a weight matrix in one sgemm (qgemm.c);
 * a decode step (n = 1) is a matrix-vector product, bound by memory
 * bandwidth (matvec.c). Weights stay in their file's types (weights.h).
 */
#include "forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "blas.h"
#include "engine/sys/clock.h"
#include "engine/model/weights.h"
#include "engine/model/wtype.h"
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
    void *mv_scratch; /* a decode product's quantized inputs */

    /* Activations for up to `cap` positions, grown to the largest chunk. */
    int cap;
    float *acts;     /* the one allocation below pointers carve up */
    float *x;        /* [cap][dim] residual stream */
    float *xb;       /* [cap][dim] normed block input, then attention output */
    float *q;        /* [cap][dim] */
    float *k;        /* [cap][kv_dim] */
    float *v;        /* [cap][kv_dim] */
    float *proj;     /* [cap][dim] a block's output before the residual add */
    float *hb;       /* [cap][hidden_dim] */
    float *hb2;      /* [cap][hidden_dim] */
    float *rope_cos; /* [cap][head_dim / 2] rotation of each position */
    float *rope_sin; /* [cap][head_dim / 2] */
    float *qg;       /* a prefill product's tiles and rounded inputs (qgemm.h) */
    size_t qg_floats;

    attn_scratch *attn; /* sized for attn_n positions and attn_shape */
    int attn_n;
    kv_shape attn_shape;
};

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
    int widest = c->hidden_dim > c->dim ? c->hidden_dim : c->dim;
    if (s)
        s->mv_scratch = malloc(mv_scratch_bytes(widest));
    if (!s || !s->mv_scratch) {
        fwd_free(s);
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
    attn_scratch_free(s->attn);
    free(s->acts);
    free(s->qg);
    free(s->mv_scratch);
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

static size_t acts_floats_per_position(const fwd_stage *s)
{
    return 5 * (size_t)s->c.dim + 2 * (size_t)s->kv_dim + 2 * (size_t)s->c.hidden_dim +
           (size_t)s->c.head_dim;
}

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* The prefill scratch of a chunk of n positions: the most any of the
 * stage's matrices needs (the classifier too, for fwd_step_logits). */
static size_t qg_floats_for(const fwd_stage *s, int n)
{
    int workers = s->pool ? pool_threads(s->pool) : 1;
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

size_t fwd_scratch_bytes(const fwd_stage *s)
{
    size_t bytes = (size_t)s->cap * acts_floats_per_position(s) * sizeof(float);
    bytes += s->qg_floats * sizeof(float);
    return bytes + (s->attn ? attn_scratch_bytes(s->attn) : 0);
}

size_t fwd_scratch_bytes_for(const fwd_stage *s, kv_shape shape, int n)
{
    size_t acts = (size_t)n * acts_floats_per_position(s) * sizeof(float);
    size_t tiles = qg_floats_for(s, n) * sizeof(float);
    int workers = s->pool ? pool_threads(s->pool) : 1;
    return acts + tiles + attn_scratch_bytes_for(n, s->c.n_heads, shape, workers);
}

void fwd_scratch_release(fwd_stage *s)
{
    free(s->acts);
    s->acts = NULL;
    s->cap = 0;
    free(s->qg);
    s->qg = NULL;
    s->qg_floats = 0;
    attn_scratch_free(s->attn);
    s->attn = NULL;
    s->attn_n = 0;
}

/* The next `count` floats of an allocation being carved up. */
static float *carve(float **p, size_t count)
{
    float *out = *p;
    *p += count;
    return out;
}

/* Grows the activation buffers to n positions. Their contents do not
 * outlive a step, so nothing is copied; on failure the old ones stay. */
static int grow_activations(fwd_stage *s, int n, char *err, size_t errlen)
{
    if (n <= s->cap)
        return 0;
    size_t qg_floats = qg_floats_for(s, n);
    if (qg_floats > s->qg_floats) {
        float *qg = malloc(qg_floats * sizeof(float));
        if (!qg) {
            snprintf(err, errlen, "out of memory for prefill tiles of %d positions (%zu bytes)", n,
                     qg_floats * sizeof(float));
            return -1;
        }
        free(s->qg);
        s->qg = qg;
        s->qg_floats = qg_floats;
    }
    size_t floats = (size_t)n * acts_floats_per_position(s);
    float *acts = malloc(floats * sizeof(float));
    if (!acts) {
        snprintf(err, errlen, "out of memory for activations of %d positions (%zu bytes)", n,
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

static int check_step(const fwd_stage *s, const kv_cache *kv, const int *tokens, const float *x_in,
                      int n, const float *x_out, char *err, size_t errlen)
{
    if (n < 1) {
        snprintf(err, errlen, "step of %d positions, expected at least 1", n);
        return -1;
    }
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
            snprintf(err, errlen, "token %d at position %d is out of range, expected 0..%d",
                     tokens[i], i, s->c.vocab_size - 1);
            return -1;
        }
    }
    kv_shape want = fwd_kv_shape(s), have = kv_shape_of(kv);
    if (have.n_layers != want.n_layers || have.n_kv_heads != want.n_kv_heads ||
        have.head_dim != want.head_dim) {
        snprintf(err, errlen,
                 "kv cache holds %d layers x %d kv heads x %d dims, stage needs %d x %d x %d",
                 have.n_layers, have.n_kv_heads, have.head_dim, want.n_layers, want.n_kv_heads,
                 want.head_dim);
        return -1;
    }
    return 0;
}

/* ---- the building blocks, as in llama2.c ---- */

static void embed(fwd_stage *s, const int *tokens, int n)
{
    const wmat *table = model_token_embedding(s->m);
    size_t dim = s->c.dim;
    for (int i = 0; i < n; i++)
        qb_dequant_row(table->type, (const char *)table->data + (size_t)tokens[i] * table->row_bytes,
                       s->x + i * dim, (int64_t)dim);
}

/* Every row of x normalized to unit rms, then scaled by weight. */
static void rmsnorm(float *out, const float *x, const float *weight, int n, int dim, float eps)
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

/* outs[k].y[n][rows_k] = x[n][cols] W_k^T for every k, W_k being
 * [rows_k][cols]. A chunk multiplies its rows by each matrix in one
 * sgemm; a single position is a matrix-vector product, bound by memory
 * bandwidth, and runs all the matrices in one pass over the pool. */
static void matmul(fwd_stage *s, const float *x, int n, int cols, const mv_out *outs, int n_outs)
{
    if (n == 1) {
        mv_multiply(s->pool, x, cols, outs, n_outs, s->mv_scratch);
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

/* The RoPE rotations of positions [pos, pos + n), once per step for all
 * layers. They are computed per position, so nothing grows with the
 * context. llama2.c's and GGUF llama's convention: pair (2j, 2j+1) of a
 * head at position p turns by p * rope_base^(-2j / rope_dim), divided by
 * Llama 3's factor for the pair when the model has one; pairs past
 * rope_dim do not turn. The angle is formed as ggml's rope forms it, by
 * repeated float multiplication with theta_scale, so that it rounds the
 * same. */
static void rope_angles(fwd_stage *s, int pos, int n)
{
    int pairs = s->c.head_dim / 2, turning = s->c.rope_dim / 2;
    for (int i = 0; i < n; i++) {
        float *cs = s->rope_cos + (size_t)i * pairs, *sn = s->rope_sin + (size_t)i * pairs;
        float theta = (float)(pos + i);
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

/* RoPE on the queries and keys of the step's n positions. */
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
static void swiglu(float *hb, const float *hb2, size_t count)
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

static void attention_block(fwd_stage *s, kv_cache *kv, int layer, int pos, int n)
{
    const layer_weights *w = model_layer(s->m, layer);
    int dim = s->c.dim, local = layer - s->first;
    rmsnorm(s->xb, s->x, w->rms_att, n, dim, s->c.norm_eps);
    mv_out qkv[] = {{&w->wq, s->q}, {&w->wk, s->k}, {&w->wv, s->v}};
    matmul(s, s->xb, n, dim, qkv, 3);
    rope(s, n);
    kv_write(kv, local, pos, n, s->k, s->v);
    attn_forward(s->attn, kv, local, s->q, n, pos, s->xb);
    matmul(s, s->xb, n, dim, &(mv_out){&w->wo, s->proj}, 1);
    residual_add(s->x, s->proj, (size_t)n * dim);
}

static void ffn_block(fwd_stage *s, int layer, int n)
{
    const layer_weights *w = model_layer(s->m, layer);
    int dim = s->c.dim, hidden = s->c.hidden_dim;
    rmsnorm(s->xb, s->x, w->rms_ffn, n, dim, s->c.norm_eps);
    mv_out gate_up[] = {{&w->w1, s->hb}, {&w->w3, s->hb2}};
    matmul(s, s->xb, n, dim, gate_up, 2);
    swiglu_chunk(s, (size_t)n * hidden);
    matmul(s, s->hb, n, hidden, &(mv_out){&w->w2, s->proj}, 1);
    residual_add(s->x, s->proj, (size_t)n * dim);
}

/* Logits of the last `rows` positions of the step: the last one only when
 * sampling (the others are never sampled), every one for an evaluation. */
static void classify(fwd_stage *s, int n, int rows, float *logits)
{
    int dim = s->c.dim;
    rmsnorm(s->xb, s->x + (size_t)(n - rows) * dim, model_rms_final(s->m), rows, dim,
            s->c.norm_eps);
    matmul(s, s->xb, rows, dim, &(mv_out){model_classifier(s->m), logits}, 1);
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

/* fwd_step and fwd_step_logits: logit_rows is 1 or n. */
static int step(fwd_stage *s, kv_cache *kv, const int *tokens, const float *x_in, int n,
                float *x_out, float *logits, int logit_rows, fwd_stats *st, char *err,
                size_t errlen)
{
    double t0 = clock_ms();
    if (check_step(s, kv, tokens, x_in, n, x_out, err, errlen) != 0)
        return -1;
    if (grow_activations(s, n, err, errlen) != 0 ||
        grow_attention(s, kv_shape_of(kv), n, err, errlen) != 0)
        return -1;
    int pos = kv_len(kv);
    if (kv_reserve(kv, pos + n, err, errlen) != 0)
        return -1;

    size_t count = (size_t)n * s->c.dim;
    if (fwd_is_head(s))
        embed(s, tokens, n);
    else
        memcpy(s->x, x_in, count * sizeof(float));
    rope_angles(s, pos, n);
    for (int layer = s->first; layer < s->last; layer++) {
        attention_block(s, kv, layer, pos, n);
        ffn_block(s, layer, n);
    }
    if (x_out)
        memcpy(x_out, s->x, count * sizeof(float));
    if (fwd_is_tail(s) && logits)
        classify(s, n, logit_rows, logits);

    kv_set_len(kv, pos + n);
    if (st) {
        hidden_stats(s->x, count, st);
        st->model_ms = clock_ms() - t0;
    }
    return 0;
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
