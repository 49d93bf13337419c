/* attention_int.h: what attention.c (scratch, the split into tasks) and
 * attention_task.c (one task's arithmetic, compiled once per kernel path
 * so that each path's copy gets its F16C conversions and FMA: see
 * kpath.h) share. Internal to engine/compute.
 */
#ifndef ATTENTION_INT_H
#define ATTENTION_INT_H

#include <stdatomic.h>
#include <stddef.h>

#include "attention.h"
#include "cpu.h"

/* Query rows of a tile of the products. */
#define TILE_ROWS 4

/* Cache blocks folded together: the running max, sum and output of a row
 * are updated once per span of SPAN blocks instead of once per block,
 * which was most of attention's cost in prefill beside the products. */
#define SPAN 4

/* The fp16 path's output row in vector registers: head_dim <= 8 * this
 * (attn_scratch_create checks). */
#define FOLD_VECS_MAX 32

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
typedef struct attn_mem {
    float *kt;  /* [SPAN][head_dim][block]: each block's keys transposed */
    float *v;   /* [SPAN * block][head_dim] */
    float *q16; /* [TILE_ROWS][head_dim] */
    float *s;   /* [TILE_ROWS][SPAN * block] */
    float *m;   /* [max_n * gqa] */
    float *l;   /* [max_n * gqa] */
} attn_mem;

/* One call of attn_forward, which its tasks share. */
typedef struct attn_job {
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
} attn_job;

/* Offset of row r's query (and output) vector for KV head h. */
static inline size_t attn_row_offset(const attn_job *jb, int h, int r)
{
    const attn_scratch *s = jb->s;
    int i = r / s->gqa, qh = h * s->gqa + r % s->gqa;
    return ((size_t)i * s->n_heads + qh) * s->shape.head_dim;
}

/* Task rows [r0, r1) of KV head h on one worker's scratch; KV head
 * `next` (-1: none) is prefetched meanwhile on the fp16 path. One per
 * kernel path, attention.c picking by cpu_active(). */
typedef void attn_task_fn(const attn_job *jb, const attn_mem *wm, int h, int r0, int r1, int next);
extern attn_task_fn attn_task_scalar, attn_task_avx2, attn_task_avx512, attn_task_vnni,
    attn_task_amx;

#endif
