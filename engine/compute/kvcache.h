/* kvcache.h: the key/value cache of one pipeline stage (or one session).
 *
 * Layout: for every layer held and every KV head, a list of blocks of
 * `block` positions each. Blocks are allocated as context grows, never for
 * the whole maximum context up front. Within a block, keys and values are
 * stored in the cache's precision:
 *
 *   bits 32  fp32, the reference
 *   bits 16  IEEE fp16 (the default)
 *   bits 8   group-wise affine uint8, group = min(32, head_dim) along head_dim,
 *            fp16 scale and fp16 bias per group: x ~= q * scale + bias
 *   bits 4   the same with 4-bit codes, two per byte (low nibble first)
 *
 * Keys are stored transposed within a block ([head_dim][block]) so that
 * attention scores a block with vector loads along positions.
 *
 * Byte accounting is exact: kv_bytes() is the sum of the block payloads
 * held, and equals kv_bytes_for() of the same shape, bits and length.
 */
#ifndef KVCACHE_H
#define KVCACHE_H

#include <stddef.h>

typedef struct kv_cache kv_cache;

typedef struct kv_shape {
    int n_layers; /* layers held by this stage */
    int n_kv_heads;
    int head_dim; /* a multiple of 8 */
    int block;    /* positions per block, a multiple of 8 (KV_BLOCK_DEFAULT unless testing) */
} kv_shape;

#define KV_BLOCK_DEFAULT 64

/* Quantization group along head_dim for this shape: min(32, head_dim). */
int kv_group(kv_shape shape);

/* Bytes one block of one layer and KV head takes (keys + values, with
 * scales and biases), at the given bits. */
size_t kv_block_bytes(kv_shape shape, int bits);

/* The formula: bytes held by a cache of this shape and bits that stores
 * ctx positions (whole blocks: ceil(ctx / block)). */
size_t kv_bytes_for(kv_shape shape, int bits, int ctx);

int kv_create(kv_cache **out, kv_shape shape, int bits, char *err, size_t errlen);
void kv_free(kv_cache *kv);

kv_shape kv_shape_of(const kv_cache *kv);
int kv_bits(const kv_cache *kv);
int kv_len(const kv_cache *kv);      /* positions committed */
int kv_capacity(const kv_cache *kv); /* positions the allocated blocks hold */
size_t kv_bytes(const kv_cache *kv); /* block payload bytes held now */

/* Allocates blocks so that ctx positions fit. On failure returns -1 with a
 * message, and the cache is as it was. */
int kv_reserve(kv_cache *kv, int ctx, char *err, size_t errlen);

/* Stores keys and values of positions [pos, pos + n) of one layer,
 * quantizing on write. k and v are [n][n_kv_heads * head_dim]. The blocks
 * must be reserved. Does not change kv_len: the caller commits with
 * kv_set_len() once every layer of the step is written. */
void kv_write(kv_cache *kv, int layer, int pos, int n, const float *k, const float *v);

/* Commits (or, smaller, rolls back) the number of valid positions. Blocks
 * past the new length are released, so kv_bytes() follows the formula. */
void kv_set_len(kv_cache *kv, int len);

/* Converts every stored position to new bits, block by block, in place:
 * peak extra memory is one block beyond the larger of the cache before
 * and after. Returns -1 with a message (and the cache
 * unchanged) on bad bits or allocation failure. */
int kv_convert(kv_cache *kv, int bits, char *err, size_t errlen);

/* Dequantizes positions [b * block, min(len, (b + 1) * block)) of one
 * layer and KV head: keys transposed into k_out [head_dim][block] (all
 * block columns are written; those past the valid positions hold zeros or
 * stale keys), values into v_out [block][head_dim] (valid rows only).
 * Both hold block * head_dim floats. `len` is the number of valid
 * positions for this read (during a step a layer reads positions it has
 * just written, past kv_len()). Returns the number of valid positions. */
int kv_read_block(const kv_cache *kv, int layer, int head, int b, int len, float *k_out,
                  float *v_out);

/* Block b of one layer and KV head of an fp16 cache (kv_bits 16), in
 * place: keys transposed [head_dim][block], values [block][head_dim].
 * Positions past the cache's valid ones hold zeros or stale values. */
void kv_block_f16(const kv_cache *kv, int layer, int head, int b, const _Float16 **keys,
                  const _Float16 **values);

#endif
