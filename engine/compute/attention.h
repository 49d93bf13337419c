/* attention.h: causal multi-head attention (GQA) over a kv_cache.
 *
 * Tiled, online-softmax ("flash") attention: the cache is read one block at
 * a time, dequantized into a small scratch, and folded into running max,
 * sum and output accumulators. The full query x context score matrix is
 * never materialized: scratch depends on the chunk and block sizes only.
 * With an fp16 cache, chunks of fewer than 64 positions round as
 * llama.cpp's CPU flash attention does (attention.c says how).
 */
#ifndef ATTENTION_H
#define ATTENTION_H

#include <stddef.h>

#include "kvcache.h"
#include "pool.h"

typedef struct attn_scratch attn_scratch;

/* Scratch for chunks of up to max_n query positions with this head layout
 * and the cache's block size. Threads come from `pool` (may be NULL: run on
 * the caller's thread); attn_forward splits work by KV head. */
int attn_scratch_create(attn_scratch **out, int max_n, int n_heads, kv_shape shape, pool *pool,
                        char *err, size_t errlen);
void attn_scratch_free(attn_scratch *s);
size_t attn_scratch_bytes(const attn_scratch *s);
/* What attn_scratch_create would allocate, with `workers` threads (the
 * pool's, or 1 without one). */
size_t attn_scratch_bytes_for(int max_n, int n_heads, kv_shape shape, int workers);

/* Attention of n query positions [pos, pos + n) of one layer. The cache
 * already holds that layer's keys and values for positions [0, pos + n)
 * (written with kv_write, maybe not yet committed). Query position i sees
 * cache positions [0, pos + i]. q and out are [n][n_heads * head_dim];
 * q is already rotated (RoPE). Scores are scaled by 1/sqrt(head_dim). */
void attn_forward(attn_scratch *s, const kv_cache *kv, int layer, const float *q, int n, int pos,
                  float *out);

#endif
