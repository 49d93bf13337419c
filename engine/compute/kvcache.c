/* kvcache.c: the key/value cache, grown block by block.
 *
 * One block holds `block` positions of one layer and KV head, keys and
 * values in the cache's precision. Keys are stored transposed, [head_dim]
 * [block], so attention computes the scores of a whole block with vector
 * loads along positions; values are stored [block][head_dim]. For bits 8
 * and 4 the scales and biases follow the codes: keys' as [groups][block],
 * values' as [block][groups].
 *
 * Blocks live in one pointer table indexed [b][layer][head], so growing the
 * cache appends slots without moving the existing ones.
 */
#include "kvcache.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/kvbits.h"
#include "quant.h"

struct kv_cache {
    kv_shape shape;
    int bits;
    int len;
    int nblocks;           /* blocks held per layer and head */
    int table_blocks;      /* blocks the table has slots for */
    unsigned char **table; /* [table_blocks][n_layers * n_kv_heads] */
};

/* Where the parts of one block sit, in bytes from its start. */
typedef struct layout {
    int bits, head_dim, block, group, groups;
    size_t code_bytes; /* keys' (or values') payload without scales */
    size_t k_scale, k_bias, v_codes, v_scale, v_bias, bytes;
} layout;

static layout layout_of(kv_shape s, int bits)
{
    layout L = {0};
    L.bits = bits;
    L.head_dim = s.head_dim;
    L.block = s.block;
    L.group = kv_group(s);
    L.groups = (s.head_dim + L.group - 1) / L.group;
    L.code_bytes = (size_t)s.block * (size_t)s.head_dim * (size_t)bits / 8;
    size_t params = bits < 16 ? (size_t)s.block * (size_t)L.groups * sizeof(_Float16) : 0;
    L.k_scale = L.code_bytes;
    L.k_bias = L.k_scale + params;
    L.v_codes = L.k_bias + params;
    L.v_scale = L.v_codes + L.code_bytes;
    L.v_bias = L.v_scale + params;
    L.bytes = L.v_bias + params;
    return L;
}

/* min(32, head_dim), as the engine's design fixes it: smaller groups track
 * outliers better. The price is an fp16 scale and bias per 32 values, 1/8
 * byte per value: 8-bit is 0.5625x and 4-bit 0.3125x of fp16 (head_dim >= 32),
 * just over the spec's 0.55x and 0.3x bars, which need groups of 64. */
int kv_group(kv_shape shape)
{
    return shape.head_dim < QUANT_GROUP_MAX ? shape.head_dim : QUANT_GROUP_MAX;
}

size_t kv_block_bytes(kv_shape shape, int bits)
{
    if (!kv_bits_valid(bits) || shape.head_dim <= 0 || shape.block <= 0)
        return 0;
    return layout_of(shape, bits).bytes;
}

static size_t heads_total(kv_shape s)
{
    return (size_t)s.n_layers * (size_t)s.n_kv_heads;
}

/* In 64 bits: ctx + block - 1 passes INT_MAX for a context near it. */
static int blocks_for(kv_shape s, int ctx)
{
    return ctx <= 0 ? 0 : (int)(((long long)ctx + s.block - 1) / s.block);
}

size_t kv_bytes_for(kv_shape shape, int bits, int ctx)
{
    size_t blocks = (size_t)blocks_for(shape, ctx), per_block = kv_block_bytes(shape, bits);
    size_t heads = heads_total(shape);
    /* Saturates: a context no memory could hold is refused, never wrapped
     * into a small number. */
    if (heads && per_block && blocks > SIZE_MAX / heads / per_block)
        return SIZE_MAX;
    return blocks * heads * per_block;
}

static int shape_check(kv_shape s, char *err, size_t errlen)
{
    if (s.n_layers < 1 || s.n_kv_heads < 1) {
        snprintf(err, errlen, "kv cache: n_layers %d and n_kv_heads %d must be >= 1", s.n_layers,
                 s.n_kv_heads);
        return -1;
    }
    /* Vector kernels work on 8 floats at a time along both dimensions. */
    if (s.head_dim < 8 || s.head_dim % 8 != 0) {
        snprintf(err, errlen, "kv cache: head_dim %d must be a positive multiple of 8", s.head_dim);
        return -1;
    }
    if (s.block < 8 || s.block % 8 != 0) {
        snprintf(err, errlen, "kv cache: block %d must be a positive multiple of 8", s.block);
        return -1;
    }
    return 0;
}

static int bits_check(int bits, char *err, size_t errlen)
{
    if (kv_bits_valid(bits))
        return 0;
    char choices[KV_BITS_CHOICES_MAX];
    snprintf(err, errlen, "kv cache: bits %d invalid, expected %s", bits,
             kv_bits_choices(choices, sizeof choices, ", ", " or "));
    return -1;
}

int kv_create(kv_cache **out, kv_shape shape, int bits, char *err, size_t errlen)
{
    *out = NULL;
    if (shape_check(shape, err, errlen) < 0 || bits_check(bits, err, errlen) < 0)
        return -1;
    kv_cache *kv = calloc(1, sizeof *kv);
    if (!kv) {
        snprintf(err, errlen, "kv cache: out of memory");
        return -1;
    }
    kv->shape = shape;
    kv->bits = bits;
    *out = kv;
    return 0;
}

static unsigned char **slot(const kv_cache *kv, int layer, int head, int b)
{
    size_t i = (size_t)b * heads_total(kv->shape) + (size_t)layer * kv->shape.n_kv_heads + head;
    return &kv->table[i];
}

/* Frees blocks [from, nblocks) of every layer and head. */
static void release_blocks(kv_cache *kv, int from)
{
    size_t per = heads_total(kv->shape);
    for (size_t i = (size_t)from * per; i < (size_t)kv->nblocks * per; i++) {
        free(kv->table[i]);
        kv->table[i] = NULL;
    }
    if (from < kv->nblocks)
        kv->nblocks = from;
}

void kv_free(kv_cache *kv)
{
    if (!kv)
        return;
    release_blocks(kv, 0);
    free(kv->table);
    free(kv);
}

kv_shape kv_shape_of(const kv_cache *kv)
{
    return kv->shape;
}

int kv_bits(const kv_cache *kv)
{
    return kv->bits;
}

int kv_len(const kv_cache *kv)
{
    return kv->len;
}

int kv_capacity(const kv_cache *kv)
{
    return kv->nblocks * kv->shape.block;
}

size_t kv_bytes(const kv_cache *kv)
{
    return (size_t)kv->nblocks * heads_total(kv->shape) * kv_block_bytes(kv->shape, kv->bits);
}

int kv_reserve(kv_cache *kv, int ctx, char *err, size_t errlen)
{
    int need = blocks_for(kv->shape, ctx);
    if (need <= kv->nblocks)
        return 0;
    size_t per = heads_total(kv->shape);
    if (need > kv->table_blocks) {
        /* Growing the table alone changes nothing a caller can see. */
        unsigned char **t = realloc(kv->table, (size_t)need * per * sizeof *t);
        if (!t) {
            snprintf(err, errlen, "kv cache: out of memory for the block table of %d positions",
                     ctx);
            return -1;
        }
        kv->table = t;
        kv->table_blocks = need;
    }
    size_t bytes = kv_block_bytes(kv->shape, kv->bits);
    for (size_t i = (size_t)kv->nblocks * per; i < (size_t)need * per; i++) {
        /* Zeroed: a 4-bit block is written a nibble at a time. */
        kv->table[i] = calloc(1, bytes);
        if (!kv->table[i]) {
            for (size_t j = (size_t)kv->nblocks * per; j < i; j++) {
                free(kv->table[j]);
                kv->table[j] = NULL;
            }
            snprintf(err, errlen, "kv cache: out of memory growing to %d positions (%zu bytes)",
                     ctx, kv_bytes_for(kv->shape, kv->bits, ctx));
            return -1;
        }
    }
    kv->nblocks = need;
    return 0;
}

static void put_code(unsigned char *codes, int bits, size_t i, uint8_t q)
{
    if (bits == 8) {
        codes[i] = q;
        return;
    }
    unsigned shift = (unsigned)(i & 1) * 4;
    codes[i / 2] = (unsigned char)((codes[i / 2] & ~(15u << shift)) | (unsigned)q << shift);
}

/* Quantizes key and value rows of position p (0 <= p < block) into blk. */
static void write_position(const layout *L, unsigned char *blk, int p, const float *k,
                           const float *v)
{
    int hd = L->head_dim, B = L->block;
    if (L->bits == 32) {
        float *kt = (float *)blk;
        for (int d = 0; d < hd; d++)
            kt[(size_t)d * B + p] = k[d];
        memcpy(blk + L->v_codes + (size_t)p * hd * sizeof(float), v, (size_t)hd * sizeof(float));
        return;
    }
    if (L->bits == 16) {
        /* Converted a run at a time by quant_f32_to_f16 (F16C where the
         * CPU has it), then stored transposed. */
        _Float16 *kt = (_Float16 *)blk, k16[64];
        for (int d0 = 0; d0 < hd; d0 += 64) {
            int m = hd - d0 < 64 ? hd - d0 : 64;
            quant_f32_to_f16(k16, k + d0, m);
            for (int d = 0; d < m; d++)
                kt[(size_t)(d0 + d) * B + p] = k16[d];
        }
        quant_f32_to_f16((_Float16 *)(blk + L->v_codes) + (size_t)p * hd, v, hd);
        return;
    }
    _Float16 *ks = (_Float16 *)(blk + L->k_scale), *kb = (_Float16 *)(blk + L->k_bias);
    _Float16 *vs = (_Float16 *)(blk + L->v_scale), *vb = (_Float16 *)(blk + L->v_bias);
    unsigned char *vrow = blk + L->v_codes + (size_t)p * hd * L->bits / 8;
    for (int g = 0; g < L->groups; g++) {
        int d0 = g * L->group;
        int n = hd - d0 < L->group ? hd - d0 : L->group;
        uint8_t q[QUANT_GROUP_MAX];
        quant_group_encode(k + d0, n, L->bits, q, &ks[(size_t)g * B + p], &kb[(size_t)g * B + p]);
        for (int t = 0; t < n; t++)
            put_code(blk, L->bits, (size_t)(d0 + t) * B + p, q[t]);
        quant_group_encode(v + d0, n, L->bits, q, &vs[(size_t)p * L->groups + g],
                           &vb[(size_t)p * L->groups + g]);
        for (int t = 0; t < n; t++)
            put_code(vrow, L->bits, (size_t)(d0 + t), q[t]);
    }
}

void kv_write(kv_cache *kv, int layer, int pos, int n, const float *k, const float *v)
{
    assert(pos >= 0 && pos + n <= kv_capacity(kv));
    layout L = layout_of(kv->shape, kv->bits);
    int H = kv->shape.n_kv_heads, hd = kv->shape.head_dim, B = kv->shape.block;
    for (int t = 0; t < n; t++) {
        int p = pos + t;
        for (int h = 0; h < H; h++) {
            size_t off = (size_t)t * H * hd + (size_t)h * hd;
            write_position(&L, *slot(kv, layer, h, p / B), p % B, k + off, v + off);
        }
    }
}

void kv_set_len(kv_cache *kv, int len)
{
    assert(len >= 0 && len <= kv_capacity(kv));
    release_blocks(kv, blocks_for(kv->shape, len));
    kv->len = len;
}

/* Dequantizes a whole block's keys ([head_dim][block]) and its first n
 * positions of values ([n][head_dim]). */
static void read_block(const layout *L, const unsigned char *blk, int n, float *kt, float *v)
{
    int hd = L->head_dim, B = L->block;
    size_t kcount = (size_t)hd * B, vcount = (size_t)n * hd;
    if (L->bits == 32) {
        memcpy(kt, blk, kcount * sizeof(float));
        memcpy(v, blk + L->v_codes, vcount * sizeof(float));
        return;
    }
    if (L->bits == 16) {
        quant_f16_to_f32(kt, (const _Float16 *)blk, (int)kcount);
        quant_f16_to_f32(v, (const _Float16 *)(blk + L->v_codes), (int)vcount);
        return;
    }
    /* The keys' scales and biases, as floats, borrow the values' buffer
     * (2 * groups * block <= head_dim * block) until the keys are done. */
    size_t params = (size_t)L->groups * B;
    float *ks = v, *kb = v + params;
    quant_f16_to_f32(ks, (const _Float16 *)(blk + L->k_scale), (int)params);
    quant_f16_to_f32(kb, (const _Float16 *)(blk + L->k_bias), (int)params);
    size_t krow = (size_t)B * L->bits / 8;
    for (int d = 0; d < hd; d++) {
        size_t g = (size_t)(d / L->group) * B;
        quant_decode_cols(kt + (size_t)d * B, blk + (size_t)d * krow, L->bits, ks + g, kb + g, B);
    }
    const _Float16 *vs = (const _Float16 *)(blk + L->v_scale);
    const _Float16 *vb = (const _Float16 *)(blk + L->v_bias);
    size_t vrow = (size_t)hd * L->bits / 8;
    for (int p = 0; p < n; p++) {
        for (int g = 0; g < L->groups; g++) {
            int d0 = g * L->group;
            int gn = hd - d0 < L->group ? hd - d0 : L->group;
            size_t i = (size_t)p * L->groups + g;
            quant_decode_row(v + (size_t)p * hd + d0,
                             blk + L->v_codes + (size_t)p * vrow + (size_t)d0 * L->bits / 8,
                             L->bits, (float)vs[i], (float)vb[i], gn);
        }
    }
}

int kv_read_block(const kv_cache *kv, int layer, int head, int b, int len, float *k_out,
                  float *v_out)
{
    int B = kv->shape.block;
    int n = len - b * B;
    n = n > B ? B : n;
    if (n <= 0)
        return 0;
    layout L = layout_of(kv->shape, kv->bits);
    read_block(&L, *slot(kv, layer, head, b), n, k_out, v_out);
    return n;
}

void kv_block_f16(const kv_cache *kv, int layer, int head, int b, const _Float16 **keys,
                  const _Float16 **values)
{
    assert(kv->bits == 16 && b >= 0 && b < kv->nblocks);
    layout L = layout_of(kv->shape, kv->bits);
    const unsigned char *blk = *slot(kv, layer, head, b);
    *keys = (const _Float16 *)blk;
    *values = (const _Float16 *)(blk + L.v_codes);
}

/* Re-encodes every block from layout `from` to layout `to` in place, with
 * scratch for one block in fp32 plus one key row. */
static void reencode_blocks(kv_cache *kv, const layout *from, const layout *to, float *kt, float *v,
                            float *krow)
{
    int hd = kv->shape.head_dim, B = kv->shape.block;
    size_t total = (size_t)kv->nblocks * heads_total(kv->shape);
    for (size_t i = 0; i < total; i++) {
        read_block(from, kv->table[i], B, kt, v);
        for (int p = 0; p < B; p++) {
            for (int d = 0; d < hd; d++)
                krow[d] = kt[(size_t)d * B + p];
            write_position(to, kv->table[i], p, krow, v + (size_t)p * hd);
        }
    }
}

/* Resizes every block to `bytes`; returns the number resized before a
 * failure (all of them on success). A block's first min(old, new) bytes
 * are kept. */
static size_t resize_blocks(kv_cache *kv, size_t count, size_t bytes)
{
    for (size_t i = 0; i < count; i++) {
        unsigned char *p = realloc(kv->table[i], bytes);
        if (!p)
            return i;
        kv->table[i] = p;
    }
    return count;
}

int kv_convert(kv_cache *kv, int bits, char *err, size_t errlen)
{
    if (bits_check(bits, err, errlen) < 0)
        return -1;
    if (bits == kv->bits)
        return 0;
    layout from = layout_of(kv->shape, kv->bits), to = layout_of(kv->shape, bits);
    int hd = kv->shape.head_dim, B = kv->shape.block;
    float *scratch = malloc(((size_t)2 * B * hd + hd) * sizeof(float));
    if (!scratch) {
        snprintf(err, errlen, "kv cache: out of memory for conversion scratch");
        return -1;
    }
    size_t count = (size_t)kv->nblocks * heads_total(kv->shape);
    /* Growing: make room in every block first, so a failure can still undo
     * everything. Each block is then re-encoded in its own memory; the peak
     * is the converted cache plus one block being moved by realloc. */
    if (to.bytes > from.bytes) {
        size_t done = resize_blocks(kv, count, to.bytes);
        if (done < count) {
            /* Shrinking back keeps the contents and cannot fail in a way
             * that matters: a block that stays larger is still valid. */
            for (size_t i = 0; i < done; i++) {
                unsigned char *p = realloc(kv->table[i], from.bytes);
                kv->table[i] = p ? p : kv->table[i];
            }
            free(scratch);
            snprintf(err, errlen, "kv cache: out of memory converting %zu bytes from %d to %d bits",
                     kv_bytes(kv), kv->bits, bits);
            return -1;
        }
    }
    reencode_blocks(kv, &from, &to, scratch, scratch + (size_t)B * hd,
                    scratch + (size_t)2 * B * hd);
    if (to.bytes < from.bytes) {
        for (size_t i = 0; i < count; i++) {
            unsigned char *p = realloc(kv->table[i], to.bytes);
            kv->table[i] = p ? p : kv->table[i];
        }
    }
    free(scratch);
    kv->bits = bits;
    return 0;
}
