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
#include <stdio.h>
#include <stdlib.h>

#include "attention_int.h"

/* Chunks of fewer positions follow llama.cpp's fp16 arithmetic (above):
 * ggml's GGML_FA_TILE_Q. */
#define FP16_BELOW 64

static size_t worker_floats(kv_shape shape, int max_rows)
{
    size_t blk = (size_t)SPAN * shape.block * shape.head_dim;
    return 2 * blk + (size_t)TILE_ROWS * (shape.head_dim + (size_t)SPAN * shape.block) +
           2 * (size_t)max_rows;
}

static attn_mem worker_at(const attn_scratch *s, int w)
{
    float *p = s->mem + (size_t)w * s->worker_floats;
    size_t blk = (size_t)SPAN * s->shape.block * s->shape.head_dim;
    attn_mem wm;
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

/* Each path's copy of a task, in cpu_path order. */
static attn_task_fn *const TASKS[CPU_NPATHS] = {attn_task_scalar, attn_task_avx2, attn_task_avx512,
                                                attn_task_vnni, attn_task_amx};

static void run_tasks(void *arg, int w)
{
    attn_job *jb = arg;
    attn_mem wm = worker_at(jb->s, w);
    int rows = jb->n * jb->s->gqa;
    attn_task_fn *run_task = TASKS[cpu_active()];
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
    attn_job jb = {.s = s, .kv = kv, .layer = layer, .q = q, .n = n, .pos = pos, .out = out};
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
