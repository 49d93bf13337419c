/* test_gguf.c: the GGUF reader on llama.cpp's files, and on hostile bytes
 * built here, each of which must be refused with its own message. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/gguf.h"
#include "engine/model/gguf_llama.h"
#include "engine/model/wtype.h"

#define FIX "tests/fixtures/gguf/"

/* ---- building GGUF bytes ---- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_u32(buf *b, uint32_t v)
{
    put(b, &v, 4);
}

static void put_u64(buf *b, uint64_t v)
{
    put(b, &v, 8);
}

static void put_str(buf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static void kv_u32(buf *b, const char *key, uint32_t v)
{
    put_str(b, key);
    put_u32(b, GGUF_U32);
    put_u32(b, v);
}

static void kv_f32(buf *b, const char *key, float v)
{
    put_str(b, key);
    put_u32(b, GGUF_F32);
    put(b, &v, 4);
}

static void kv_str(buf *b, const char *key, const char *v)
{
    put_str(b, key);
    put_u32(b, GGUF_STR);
    put_str(b, v);
}

/* An array header; the caller puts the elements. */
static void kv_arr(buf *b, const char *key, uint32_t elem_type, uint64_t n)
{
    put_str(b, key);
    put_u32(b, GGUF_ARR);
    put_u32(b, elem_type);
    put_u64(b, n);
}

typedef struct tdesc {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[5];
    uint32_t type;
    uint64_t offset;
} tdesc;

/* A whole file: header, the key/value bytes `kvs` (n_kv pairs), the tensor
 * descriptions, padding to `align`, then `data` zero bytes. */
static buf file_with(uint32_t version, const buf *kvs, uint64_t n_kv, const tdesc *t, int n_t,
                     uint64_t align, size_t data)
{
    buf b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, version);
    put_u64(&b, (uint64_t)n_t);
    put_u64(&b, n_kv);
    put(&b, kvs->p, kvs->n);
    for (int i = 0; i < n_t; i++) {
        put_str(&b, t[i].name);
        put_u32(&b, t[i].n_dims);
        for (uint32_t d = 0; d < t[i].n_dims; d++)
            put_u64(&b, t[i].ne[d]);
        put_u32(&b, t[i].type);
        put_u64(&b, t[i].offset);
    }
    while (b.n % align)
        put(&b, "", 1);
    for (size_t i = 0; i < data; i++)
        put(&b, "", 1);
    return b;
}

/* The smallest good file: one key, one F32 tensor of 8 values. */
static const tdesc vec8 = {"a", 1, {8}, WT_F32, 0};

static buf small_file(void)
{
    buf kvs = {0};
    kv_str(&kvs, "general.architecture", "llama");
    buf b = file_with(3, &kvs, 1, &vec8, 1, 32, 32);
    free(kvs.p);
    return b;
}

/* A file of the single key/value pair in `kvs` and the one tensor `t`. */
static buf kv_file(const buf *kvs, uint64_t n_kv, const tdesc *t, uint64_t align)
{
    return file_with(3, kvs, n_kv, t, 1, align, 64);
}

static buf read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    buf b = {0};
    uint8_t chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        put(&b, chunk, got);
    fclose(f);
    return b;
}

/* ---- expectations ---- */

static gguf *open_fixture(const char *file)
{
    char err[512] = "";
    gguf *g = NULL;
    cr_assert_eq(gguf_open(&g, file, err, sizeof err), 0, "%s: %s", file, err);
    cr_assert_not_null(g);
    return g;
}

/* The bytes must be refused with a message naming the file and holding `part`. */
static void refused_len(const buf *b, size_t len, const char *part)
{
    char err[512] = "";
    gguf *g = (gguf *)1;
    cr_assert_eq(gguf_open_mem(&g, b->p, len, "bad.gguf", err, sizeof err), -1,
                 "opened, expected '%s'", part);
    cr_assert_null(g);
    cr_assert(strncmp(err, "bad.gguf: ", 10) == 0, "message '%s' does not name the file", err);
    cr_assert(strstr(err, part), "message '%s' lacks '%s'", err, part);
}

static void refused(buf b, const char *part)
{
    refused_len(&b, b.n, part);
    free(b.p);
}

/* ---- llama.cpp's files ---- */

typedef struct fixture {
    const char *file;
    int dim, n_tensors;
    uint32_t types[3]; /* the types it holds, with their counts */
    int counts[3];
} fixture;

static const fixture fixtures[] = {
    {FIX "r256-f32.gguf", 256, 39, {WT_F32}, {39}},
    {FIX "r256-F16.gguf", 256, 39, {WT_F32, WT_F16}, {9, 30}},
    {FIX "r256-BF16.gguf", 256, 39, {WT_F32, WT_BF16}, {9, 30}},
    {FIX "r256-Q8_0.gguf", 256, 39, {WT_F32, WT_Q8_0}, {9, 30}},
    {FIX "r256-Q4_0.gguf", 256, 39, {WT_F32, WT_Q4_0, WT_Q6_K}, {9, 29, 1}},
    {FIX "r256-Q4_K_M.gguf", 256, 39, {WT_F32, WT_Q4_K, WT_Q6_K}, {9, 25, 5}},
    {FIX "r256-Q5_K_M.gguf", 256, 39, {WT_F32, WT_Q5_K, WT_Q6_K}, {9, 25, 5}},
    {FIX "r256-Q6_K.gguf", 256, 39, {WT_F32, WT_Q6_K}, {9, 30}},
    {FIX "s260-F16.gguf", 64, 48, {WT_F32, WT_F16}, {11, 37}},
    {FIX "s260-BF16.gguf", 64, 48, {WT_F32, WT_BF16}, {11, 37}},
    {FIX "stories260K-f32.gguf", 64, 48, {WT_F32}, {48}},
};

#define N_FIXTURES (int)(sizeof fixtures / sizeof fixtures[0])

Test(gguf, fixtures_open_with_their_tensor_types)
{
    for (int f = 0; f < N_FIXTURES; f++) {
        const fixture *x = &fixtures[f];
        gguf *g = open_fixture(x->file);
        uint64_t dim = 0;
        cr_assert_eq(gguf_version(g), 3);
        cr_assert_eq(gguf_get_u64(g, "llama.embedding_length", &dim, NULL, 0), 0);
        cr_assert_eq(dim, (uint64_t)x->dim, "%s", x->file);
        cr_assert_eq(gguf_n_tensors(g), x->n_tensors, "%s", x->file);
        int counts[3] = {0};
        for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
            const gguf_tensor *t = gguf_tensor_at(g, i);
            int k = 0;
            while (k < 3 && (x->counts[k] == 0 || x->types[k] != t->type))
                k++;
            cr_assert(k < 3, "%s: %s is %s", x->file, t->name, wtype_name(t->type));
            counts[k]++;
            cr_assert_eq(gguf_tensor_find(g, t->name), t);
            cr_assert_eq((uintptr_t)t->data % 32, 0, "%s unaligned", t->name);
        }
        for (int k = 0; k < 3; k++)
            cr_assert_eq(counts[k], x->counts[k], "%s: %d tensors of %s, expected %d", x->file,
                         counts[k], wtype_name(x->types[k]), x->counts[k]);
        gguf_close(g);
    }
}

Test(gguf, r256_metadata)
{
    static const struct {
        const char *key;
        uint64_t v;
    } want[] = {
        {"llama.embedding_length", 256},      {"llama.block_count", 4},
        {"llama.feed_forward_length", 768},   {"llama.attention.head_count", 8},
        {"llama.attention.head_count_kv", 4}, {"llama.context_length", 128},
        {"llama.rope.dimension_count", 32},   {"general.file_type", 15},
        {"general.quantization_version", 2},  {"tokenizer.ggml.seperator_token_id", 4294967295u},
    };
    gguf *g = open_fixture(FIX "r256-Q4_K_M.gguf");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t v = 0;
        cr_assert_eq(gguf_get_u64(g, want[i].key, &v, NULL, 0), 0, "%s", want[i].key);
        cr_assert_eq(v, want[i].v, "%s = %llu", want[i].key, (unsigned long long)v);
    }
    const gguf_tensor *emb = gguf_tensor_find(g, "token_embd.weight");
    cr_assert_not_null(emb);
    cr_assert_eq(emb->type, WT_Q4_K);
    cr_assert_eq(emb->n_dims, 2);
    cr_assert_eq(emb->ne[0], 256);
    cr_assert_eq(emb->ne[1], 512);
    cr_assert_eq(emb->bytes, 512 * wtype_row_bytes(WT_Q4_K, 256));
    cr_assert_eq(gguf_tensor_find(g, "output.weight")->type, WT_Q6_K);
    cr_assert_null(gguf_tensor_find(g, "blk.4.attn_q.weight"));
    gguf_willneed(g, emb);
    gguf_close(g);
}

Test(gguf, typed_getters_and_arrays)
{
    gguf *g = open_fixture(FIX "stories260K-f32.gguf");
    char err[256] = "";
    const char *s;
    size_t len;
    cr_assert_eq(gguf_get_str(g, "general.architecture", &s, &len, err, sizeof err), 0);
    cr_assert_eq(len, 5);
    cr_assert(memcmp(s, "llama", 5) == 0);

    double eps = 0;
    cr_assert_eq(gguf_get_f64(g, "llama.attention.layer_norm_rms_epsilon", &eps, err, 256), 0);
    cr_assert_float_eq(eps, 1e-5, 1e-9);

    uint64_t u = 42;
    cr_assert_eq(gguf_get_u64(g, "no.such.key", &u, err, sizeof err), 1);
    cr_assert_eq(u, 42);
    cr_assert_eq(gguf_get_u64(g, "general.architecture", &u, err, sizeof err), -1);
    cr_assert(strstr(err, "stories260K-f32.gguf: key 'general.architecture' holds type string, "
                          "expected an integer"),
              "%s", err);
    cr_assert_eq(gguf_get_f64(g, "llama.block_count", &eps, err, sizeof err), -1);
    cr_assert(strstr(err, "holds type u32, expected f32 or f64"), "%s", err);
    int flag;
    cr_assert_eq(gguf_get_bool(g, "llama.block_count", &flag, err, sizeof err), -1);
    cr_assert_eq(gguf_get_str(g, "llama.block_count", &s, &len, err, sizeof err), -1);

    int type;
    uint64_t n;
    cr_assert_eq(gguf_get_arr(g, "tokenizer.ggml.tokens", &type, &n, err, sizeof err), 0);
    cr_assert_eq(type, GGUF_STR);
    cr_assert_eq(n, 512);
    cr_assert_eq(gguf_arr_str(g, "tokenizer.ggml.tokens", 1, &s, &len), 0);
    cr_assert(len == 3 && memcmp(s, "<s>", 3) == 0);
    cr_assert_eq(gguf_arr_str(g, "tokenizer.ggml.tokens", 3, &s, &len), 0);
    cr_assert(len == 6 && memcmp(s, "<0x00>", 6) == 0);
    cr_assert_eq(gguf_arr_str(g, "tokenizer.ggml.tokens", 512, &s, &len), -1);
    cr_assert_eq(gguf_arr_str(g, "tokenizer.ggml.scores", 0, &s, &len), -1);

    int64_t tt;
    double score;
    cr_assert_eq(gguf_arr_i64(g, "tokenizer.ggml.token_type", 0, &tt), 0);
    cr_assert_eq(tt, 2);
    cr_assert_eq(gguf_arr_f64(g, "tokenizer.ggml.token_type", 1, &score), 0);
    cr_assert_float_eq(score, 3.0, 0);
    cr_assert_eq(gguf_arr_f64(g, "tokenizer.ggml.scores", 511, &score), 0);
    cr_assert_eq(gguf_arr_i64(g, "tokenizer.ggml.scores", 0, &tt), -1);
    cr_assert_eq(gguf_arr_i64(g, "tokenizer.ggml.tokens", 0, &tt), -1);
    cr_assert_eq(gguf_get_arr(g, "llama.block_count", &type, &n, err, sizeof err), -1);
    cr_assert(strstr(err, "expected an array"), "%s", err);
    gguf_close(g);
}

Test(gguf, tensor_order_and_lookup)
{
    gguf *g = open_fixture(FIX "stories260K-f32.gguf");
    cr_assert_str_eq(gguf_tensor_at(g, 0)->name, "token_embd.weight");
    cr_assert_str_eq(gguf_tensor_at(g, 47)->name, "blk.4.ffn_norm.weight");
    cr_assert_null(gguf_tensor_at(g, 48));
    cr_assert_null(gguf_tensor_at(g, -1));
    const gguf_tensor *t = gguf_tensor_find(g, "blk.2.ffn_down.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->ne[0], 172);
    cr_assert_eq(t->ne[1], 64);
    cr_assert_eq(t->ne[2], 1);
    cr_assert_eq(t->bytes, 172 * 64 * 4);
    cr_assert_null(gguf_tensor_find(g, "blk.2.ffn_down"));
    gguf_close(g);
}

Test(gguf, in_memory_file_opens)
{
    buf b = small_file();
    char err[256] = "";
    gguf *g = NULL;
    cr_assert_eq(gguf_open_mem(&g, b.p, b.n, "mem", err, sizeof err), 0, "%s", err);
    const gguf_tensor *t = gguf_tensor_find(g, "a");
    cr_assert_eq(t->bytes, 32);
    cr_assert_eq((const uint8_t *)t->data, b.p + b.n - 32);
    gguf_close(g);
    free(b.p);
}

Test(gguf, vocabulary_only_file_needs_no_data_section)
{
    buf kvs = {0};
    kv_str(&kvs, "tokenizer.ggml.model", "gpt2");
    buf b = file_with(2, &kvs, 1, NULL, 0, 1, 0);
    char err[256] = "";
    gguf *g = NULL;
    cr_assert_eq(gguf_open_mem(&g, b.p, b.n, "vocab", err, sizeof err), 0, "%s", err);
    cr_assert_eq(gguf_version(g), 2);
    cr_assert_eq(gguf_n_tensors(g), 0);
    cr_assert_null(gguf_tensor_find(g, "a"));
    gguf_close(g);
    free(b.p);
    free(kvs.p);
}

/* ---- files that must be refused, each for its own reason ---- */

Test(gguf_bad, missing_and_empty_files)
{
    char err[256] = "";
    gguf *g = (gguf *)1;
    cr_assert_eq(gguf_open(&g, FIX "no-such.gguf", err, sizeof err), -1);
    cr_assert_null(g);
    cr_assert(strstr(err, "no-such.gguf: No such file"), "%s", err);
    cr_assert_eq(gguf_open(&g, "/dev/null", err, sizeof err), -1);
    cr_assert(strstr(err, "/dev/null: not a regular file"), "%s", err);
}

Test(gguf_bad, magic)
{
    buf b = small_file();
    b.p[0] = 'X';
    refused(b, "not a GGUF file: magic bytes 58 47 55 46");
}

Test(gguf_bad, version_1)
{
    buf b = small_file();
    b.p[4] = 1;
    refused(b, "header: GGUF version 1 is not supported (expected 2 or 3)");
}

Test(gguf_bad, version_99)
{
    buf b = small_file();
    b.p[4] = 99;
    refused(b, "GGUF version 99 is not supported");
}

Test(gguf_bad, big_endian)
{
    buf b = small_file();
    memcpy(b.p + 4, "\0\0\0\3", 4);
    refused(b, "big-endian GGUF");
}

Test(gguf_bad, huge_tensor_count)
{
    buf b = small_file();
    uint64_t n = (uint64_t)1 << 40;
    memcpy(b.p + 8, &n, 8);
    refused(b, "1099511627776 tensors cannot fit");
}

Test(gguf_bad, huge_kv_count)
{
    buf b = small_file();
    uint64_t n = UINT64_MAX;
    memcpy(b.p + 16, &n, 8);
    refused(b, "18446744073709551615 key/value pairs cannot fit");
}

Test(gguf_bad, huge_key_length)
{
    buf kvs = {0};
    put_u64(&kvs, (uint64_t)1 << 62);
    put(&kvs, "general.name", 12);
    put_u32(&kvs, GGUF_U8);
    put(&kvs, "", 1);
    refused(kv_file(&kvs, 1, &vec8, 32), "key/value 0: key truncated: needs 4611686018427387904");
    free(kvs.p);
}

Test(gguf_bad, string_without_end)
{
    buf kvs = {0};
    put_str(&kvs, "general.name");
    put_u32(&kvs, GGUF_STR);
    put_u64(&kvs, 100);
    put(&kvs, "stories", 7);
    buf b = {0};
    put(&b, "GGUF\3\0\0\0", 8);
    put_u64(&b, 0);
    put_u64(&b, 1);
    put(&b, kvs.p, kvs.n);
    refused(b, "key 'general.name': string value truncated: needs 100 bytes");
    free(kvs.p);
}

Test(gguf_bad, huge_array_count)
{
    buf kvs = {0};
    kv_arr(&kvs, "tokenizer.ggml.scores", GGUF_F32, (uint64_t)1 << 61);
    put_u32(&kvs, 0);
    refused(kv_file(&kvs, 1, &vec8, 32), "array of 2305843009213693952 f32 elements cannot fit");
    free(kvs.p);
}

Test(gguf_bad, huge_string_array_count)
{
    buf kvs = {0};
    kv_arr(&kvs, "tokenizer.ggml.tokens", GGUF_STR, (uint64_t)1 << 40);
    put_str(&kvs, "<unk>");
    refused(kv_file(&kvs, 1, &vec8, 32), "array of 1099511627776 strings cannot fit");
    free(kvs.p);
}

Test(gguf_bad, string_array_element_without_end)
{
    buf kvs = {0};
    kv_arr(&kvs, "tokenizer.ggml.tokens", GGUF_STR, 3);
    put_str(&kvs, "<unk>");
    put_str(&kvs, "<s>");
    put_u64(&kvs, 1000);
    refused(kv_file(&kvs, 1, &vec8, 32), "key 'tokenizer.ggml.tokens': string 2 of 3 truncated");
    free(kvs.p);
}

Test(gguf_bad, nested_array)
{
    buf kvs = {0};
    kv_arr(&kvs, "x.nested", GGUF_ARR, 1);
    put_u32(&kvs, GGUF_U8);
    put_u64(&kvs, 1);
    put(&kvs, "", 1);
    refused(kv_file(&kvs, 1, &vec8, 32), "key 'x.nested': nested arrays are not supported");
    free(kvs.p);
}

Test(gguf_bad, unknown_value_type)
{
    buf kvs = {0};
    put_str(&kvs, "x.odd");
    put_u32(&kvs, 13);
    put_u64(&kvs, 0);
    refused(kv_file(&kvs, 1, &vec8, 32), "key 'x.odd': value type 13 is unknown");
    free(kvs.p);
}

Test(gguf_bad, duplicate_key)
{
    buf kvs = {0};
    kv_str(&kvs, "general.name", "a");
    kv_u32(&kvs, "general.alignment", 32);
    kv_str(&kvs, "general.name", "b");
    refused(kv_file(&kvs, 3, &vec8, 32), "metadata: duplicate key 'general.name'");
    free(kvs.p);
}

Test(gguf_bad, zero_alignment)
{
    buf kvs = {0};
    kv_u32(&kvs, "general.alignment", 0);
    refused(kv_file(&kvs, 1, &vec8, 32), "alignment 0 is not a power of two");
    free(kvs.p);
}

Test(gguf_bad, alignment_not_power_of_two)
{
    buf kvs = {0};
    kv_u32(&kvs, "general.alignment", 48);
    refused(kv_file(&kvs, 1, &vec8, 48), "key 'general.alignment': alignment 48 is not a power");
    free(kvs.p);
}

Test(gguf_bad, alignment_of_wrong_type)
{
    buf kvs = {0};
    kv_f32(&kvs, "general.alignment", 32.0f);
    refused(kv_file(&kvs, 1, &vec8, 32), "key 'general.alignment' holds type f32, expected an "
                                         "integer");
    free(kvs.p);
}

/* A file whose one tensor is `t`, with the default alignment. */
static buf tensor_file(tdesc t)
{
    buf kvs = {0};
    kv_str(&kvs, "general.architecture", "llama");
    buf b = kv_file(&kvs, 1, &t, 32);
    free(kvs.p);
    return b;
}

Test(gguf_bad, five_dimensions)
{
    refused(tensor_file((tdesc){"five", 5, {1, 1, 1, 1, 1}, WT_F32, 0}),
            "tensor 'five': 5 dimensions, expected 1 to 4");
}

Test(gguf_bad, zero_dimension)
{
    refused(tensor_file((tdesc){"flat", 2, {8, 0}, WT_F32, 0}),
            "tensor 'flat': dimension 1 is 0, expected 1 to 2^63-1");
}

Test(gguf_bad, unsupported_tensor_type)
{
    refused(tensor_file((tdesc){"blk.0.attn_q.weight", 2, {256, 4}, 10, 0}),
            "tensor 'blk.0.attn_q.weight': type Q2_K (10) is not supported (supported: F32, F16, "
            "Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, BF16)");
}

Test(gguf_bad, unknown_tensor_type)
{
    refused(tensor_file((tdesc){"w", 1, {32}, 99, 0}), "type unknown (99) is not supported");
}

Test(gguf_bad, row_not_a_whole_block)
{
    refused(tensor_file((tdesc){"w", 2, {64, 2}, WT_Q4_K, 0}),
            "tensor 'w': row length 64 is not a multiple of Q4_K's block of 256");
}

Test(gguf_bad, overflowing_shape)
{
    refused(tensor_file((tdesc){"big", 3, {1ull << 32, 1ull << 32, 1ull << 32}, WT_F32, 0}),
            "tensor 'big': shape [4294967296, 4294967296, 4294967296, 1] of F32 overflows");
}

Test(gguf_bad, overflowing_row)
{
    refused(tensor_file((tdesc){"row", 1, {1ull << 62}, WT_F32, 0}),
            "a row of 4611686018427387904 F32 values overflows");
}

Test(gguf_bad, offset_past_end)
{
    refused(tensor_file((tdesc){"a", 1, {8}, WT_F32, 4096}),
            "tensor 'a': 32 bytes at data offset 4096 run past the end of the file");
}

Test(gguf_bad, data_past_end)
{
    refused(tensor_file((tdesc){"a", 2, {8, 3}, WT_F32, 0}),
            "tensor 'a': 96 bytes at data offset 0 run past the end");
}

Test(gguf_bad, misaligned_offset)
{
    refused(tensor_file((tdesc){"a", 1, {4}, WT_F32, 4}),
            "tensor 'a': offset 4 is not a multiple of the alignment 32");
}

Test(gguf_bad, duplicate_tensor)
{
    buf kvs = {0};
    const tdesc t[2] = {{"blk.0.x", 1, {8}, WT_F32, 0}, {"blk.0.x", 1, {8}, WT_F32, 32}};
    refused(file_with(3, &kvs, 0, t, 2, 32, 64), "tensors: duplicate tensor name 'blk.0.x'");
}

Test(gguf_bad, tensor_name_with_nul)
{
    buf kvs = {0};
    buf b = file_with(3, &kvs, 0, &vec8, 1, 32, 32);
    b.p[24 + 8] = 0; /* the name "a" becomes "\0" */
    refused(b, "tensor 0: tensor name holds a NUL byte");
}

Test(gguf_bad, no_room_for_padding)
{
    buf kvs = {0};
    buf b = file_with(3, &kvs, 0, &vec8, 1, 1, 0);
    refused(b, "data section: starts at offset 57 + 7 bytes of padding, past the end");
}

/* A cut short of the end is refused, for the counts, the piece cut or
 * the data missing. */
static void cut_refused(const buf *b, size_t len)
{
    char err[512] = "";
    gguf *g = (gguf *)1;
    cr_assert_eq(gguf_open_mem(&g, b->p, len, "cut.gguf", err, sizeof err), -1, "%zu opened", len);
    cr_assert_null(g);
    cr_assert(strncmp(err, "cut.gguf: ", 10) == 0, "%s", err);
    cr_assert(strstr(err, "truncated") || strstr(err, "cannot fit") || strstr(err, "past the end"),
              "cut at %zu: %s", len, err);
}

Test(gguf_bad, truncated_anywhere)
{
    buf b = small_file();
    for (size_t len = 0; len < b.n; len++)
        cut_refused(&b, len);
    free(b.p);
}

Test(gguf_bad, truncated_fixture)
{
    buf b = read_all(FIX "s260-F16.gguf");
    for (size_t len = 0; len < b.n; len += len < 16384 ? 3 : 4099)
        cut_refused(&b, len);
    free(b.p);
}

/* ---- the llama description ---- */

static gguf_llama *open_stage(const gguf *g, int first, int last)
{
    char err[512] = "";
    gguf_llama *m = NULL;
    cr_assert_eq(gguf_llama_open(&m, g, first, last, err, sizeof err), 0, "%s", err);
    return m;
}

static size_t all_tensor_bytes(const gguf *g)
{
    size_t sum = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++)
        sum += gguf_tensor_at(g, i)->bytes;
    return sum;
}

Test(gguf_llama, r256_config_and_views)
{
    for (int f = 0; f < 8; f++) {
        gguf *g = open_fixture(fixtures[f].file);
        gguf_llama *m = open_stage(g, 0, 4);
        const gguf_llama_config *c = &m->c;
        cr_assert(c->dim == 256 && c->hidden_dim == 768 && c->n_layers == 4 && c->n_heads == 8 &&
                      c->n_kv_heads == 4 && c->head_dim == 32 && c->kv_dim == 128 &&
                      c->vocab_size == 512 && c->ctx_len == 128 && c->rope_dim == 32,
                  "%s", fixtures[f].file);
        cr_assert_float_eq(c->rope_base, 10000.0f, 0);
        cr_assert_float_eq(c->norm_eps, 1e-5f, 1e-10);
        cr_assert(!c->tied && !c->rope_freqs);
        cr_assert_eq(m->weight_bytes, all_tensor_bytes(g), "%s", fixtures[f].file);
        const gguf_llama_view *wk = &m->layers[3].wk;
        const gguf_tensor *t = gguf_tensor_find(g, "blk.3.attn_k.weight");
        cr_assert(wk->data == t->data && wk->type == t->type);
        cr_assert(wk->rows == 128 && wk->cols == 256);
        cr_assert_eq(wk->row_bytes * 128, t->bytes);
        cr_assert(m->layers[0].w_down.rows == 256 && m->layers[0].w_down.cols == 768);
        cr_assert(m->layers[0].attn_norm.type == WT_F32 && m->layers[0].attn_norm.rows == 1);
        cr_assert(m->output.data == gguf_tensor_find(g, "output.weight")->data);
        gguf_llama_free(m);
        gguf_close(g);
    }
}

Test(gguf_llama, q4_k_m_types)
{
    gguf *g = open_fixture(FIX "r256-Q4_K_M.gguf");
    gguf_llama *m = open_stage(g, 0, 4);
    cr_assert_eq(m->token_embd.type, WT_Q4_K);
    cr_assert_eq(m->output.type, WT_Q6_K);
    cr_assert_eq(m->layers[0].wq.type, WT_Q4_K);
    cr_assert_eq(m->layers[0].wq.row_bytes, 144);
    gguf_llama_free(m);
    gguf_close(g);
}

Test(gguf_llama, stories260K)
{
    for (int f = 8; f < N_FIXTURES; f++) {
        gguf *g = open_fixture(fixtures[f].file);
        gguf_llama *m = open_stage(g, 0, 5);
        const gguf_llama_config *c = &m->c;
        cr_assert(c->dim == 64 && c->hidden_dim == 172 && c->n_layers == 5 && c->n_heads == 8 &&
                      c->n_kv_heads == 4 && c->head_dim == 8 && c->vocab_size == 512 &&
                      c->ctx_len == 512 && c->rope_dim == 8,
                  "%s", fixtures[f].file);
        /* llama2.c shares its classifier, but convert-llama2c-to-ggml writes
         * output.weight as a copy of the embeddings: not tied in the file. */
        cr_assert(!c->tied);
        size_t bytes = gguf_tensor_find(g, "output.weight")->bytes;
        cr_assert_eq(memcmp(m->output.data, m->token_embd.data, bytes), 0);
        cr_assert_eq(m->weight_bytes, all_tensor_bytes(g));
        gguf_llama_free(m);
        gguf_close(g);
    }
}

Test(gguf_llama, stages_share_the_weights)
{
    gguf *g = open_fixture(FIX "r256-Q5_K_M.gguf");
    gguf_llama *a = open_stage(g, 0, 1), *b = open_stage(g, 1, 3), *z = open_stage(g, 3, 4);
    cr_assert_eq(a->weight_bytes + b->weight_bytes + z->weight_bytes, all_tensor_bytes(g));
    cr_assert(a->token_embd.data && !a->output.data && !a->output_norm.data);
    cr_assert(!b->token_embd.data && !b->output.data);
    cr_assert(!z->token_embd.data && z->output.data && z->output_norm.data);
    cr_assert_eq(b->first, 1);
    cr_assert_eq(b->layers[1].wq.data, gguf_tensor_find(g, "blk.2.attn_q.weight")->data);
    gguf_llama_free(a);
    gguf_llama_free(b);
    gguf_llama_free(z);
    gguf_close(g);
}

/* A tiny llama model built in memory: dim 32, hidden 64, 2 layers, 4
 * heads, 2 KV heads, vocab 16, all F32. Tests change it before
 * tiny_bytes; an int key set to NO_KEY is left out. Tensor names live in
 * names[] (t[i].name is set on writing, as the struct is passed by value). */
#define NO_KEY UINT32_MAX

typedef struct tiny {
    const char *arch;
    struct {
        const char *key;
        uint32_t v;
    } ints[7];
    float eps;
    tdesc t[32];
    char names[32][40];
    int n;
} tiny;

static void tiny_add(tiny *m, const char *name, uint64_t cols, uint64_t rows)
{
    snprintf(m->names[m->n], sizeof m->names[0], "%s", name);
    m->t[m->n] = (tdesc){NULL, rows ? 2 : 1, {cols, rows ? rows : 1}, WT_F32, 0};
    m->n++;
}

static tiny tiny_model(void)
{
    tiny m = {.arch = "llama",
              .ints = {{"llama.embedding_length", 32},
                       {"llama.feed_forward_length", 64},
                       {"llama.block_count", 2},
                       {"llama.attention.head_count", 4},
                       {"llama.attention.head_count_kv", 2},
                       {"llama.context_length", 16},
                       {"llama.rope.dimension_count", NO_KEY}},
              .eps = 1e-6f};
    tiny_add(&m, "token_embd.weight", 32, 16);
    tiny_add(&m, "output_norm.weight", 32, 0);
    tiny_add(&m, "output.weight", 32, 16);
    static const struct {
        const char *name;
        uint64_t cols, rows;
    } layer[] = {{"attn_norm", 32, 0}, {"attn_q", 32, 32},      {"attn_k", 32, 16},
                 {"attn_v", 32, 16},   {"attn_output", 32, 32}, {"ffn_norm", 32, 0},
                 {"ffn_gate", 32, 64}, {"ffn_up", 32, 64},      {"ffn_down", 64, 32}};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++) {
            char name[40];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, layer[i].name);
            tiny_add(&m, name, layer[i].cols, layer[i].rows);
        }
    return m;
}

static tdesc *tiny_tensor(tiny *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0)
            return &m->t[i];
    cr_assert_fail("no tensor %s", name);
    return NULL;
}

static void tiny_drop(tiny *m, const char *name)
{
    tdesc *t = tiny_tensor(m, name);
    m->n--;
    *t = m->t[m->n];
    memmove(m->names[t - m->t], m->names[m->n], sizeof m->names[0]);
}

static buf tiny_bytes(tiny *m)
{
    buf kvs = {0};
    uint64_t n_kv = 2;
    kv_str(&kvs, "general.architecture", m->arch);
    kv_f32(&kvs, "llama.attention.layer_norm_rms_epsilon", m->eps);
    for (int i = 0; i < 7; i++)
        if (m->ints[i].v != NO_KEY) {
            kv_u32(&kvs, m->ints[i].key, m->ints[i].v);
            n_kv++;
        }
    uint64_t off = 0;
    for (int i = 0; i < m->n; i++) {
        m->t[i].name = m->names[i]; /* the names move with the struct */
        m->t[i].offset = off;
        size_t bytes = wtype_row_bytes(m->t[i].type, m->t[i].ne[0]) * m->t[i].ne[1];
        off += (bytes + 31) / 32 * 32;
    }
    buf b = file_with(3, &kvs, n_kv, m->t, m->n, 32, off);
    free(kvs.p);
    return b;
}

/* Opens the tiny model's bytes as a gguf (which must succeed). */
static gguf *tiny_open(tiny *m, buf *b)
{
    char err[512] = "";
    gguf *g = NULL;
    *b = tiny_bytes(m);
    cr_assert_eq(gguf_open_mem(&g, b->p, b->n, "tiny.gguf", err, sizeof err), 0, "%s", err);
    return g;
}

/* The tiny model must open as a gguf but be refused as a llama stage. */
static void llama_refused(tiny m, int first, int last, const char *part)
{
    buf b;
    gguf *g = tiny_open(&m, &b);
    char err[512] = "";
    gguf_llama *s = (gguf_llama *)1;
    cr_assert_eq(gguf_llama_open(&s, g, first, last, err, sizeof err), -1, "opened, expected '%s'",
                 part);
    cr_assert_null(s);
    cr_assert(strncmp(err, "tiny.gguf: ", 11) == 0, "message '%s' does not name the file", err);
    cr_assert(strstr(err, part), "message '%s' lacks '%s'", err, part);
    gguf_close(g);
    free(b.p);
}

Test(gguf_llama, tiny_defaults)
{
    tiny m = tiny_model();
    buf b;
    gguf *g = tiny_open(&m, &b);
    gguf_llama *s = open_stage(g, 0, 2);
    cr_assert(s->c.head_dim == 8 && s->c.kv_dim == 16 && s->c.rope_dim == 8);
    cr_assert_float_eq(s->c.rope_base, 10000.0f, 0);
    cr_assert_float_eq(s->c.norm_eps, 1e-6f, 0);
    cr_assert_eq(s->weight_bytes, all_tensor_bytes(g));
    gguf_llama_free(s);
    gguf_close(g);
    free(b.p);
}

Test(gguf_llama, tied_output)
{
    tiny m = tiny_model();
    tiny_drop(&m, "output.weight");
    buf b;
    gguf *g = tiny_open(&m, &b);
    size_t emb = gguf_tensor_find(g, "token_embd.weight")->bytes;
    gguf_llama *all = open_stage(g, 0, 2), *first = open_stage(g, 0, 1),
               *last = open_stage(g, 1, 2);
    cr_assert(all->c.tied);
    cr_assert_eq(all->output.data, all->token_embd.data);
    cr_assert_eq(all->weight_bytes, all_tensor_bytes(g));
    cr_assert_eq(last->output.data, gguf_tensor_find(g, "token_embd.weight")->data);
    cr_assert_eq(first->weight_bytes + last->weight_bytes, all_tensor_bytes(g) + emb);
    gguf_llama_free(all);
    gguf_llama_free(first);
    gguf_llama_free(last);
    gguf_close(g);
    free(b.p);
}

Test(gguf_llama, rope_freqs)
{
    tiny m = tiny_model();
    m.ints[6].v = 4;
    tiny_add(&m, "rope_freqs.weight", 2, 0);
    buf b;
    gguf *g = tiny_open(&m, &b);
    gguf_llama *s = open_stage(g, 1, 2);
    cr_assert(s->c.rope_freqs && s->c.rope_dim == 4);
    cr_assert_eq(s->rope_freqs.cols, 2);
    cr_assert_eq(s->rope_freqs.data, gguf_tensor_find(g, "rope_freqs.weight")->data);
    gguf_llama_free(s);
    gguf_close(g);
    free(b.p);
}

Test(gguf_llama, wrong_architecture)
{
    tiny m = tiny_model();
    m.arch = "qwen2";
    llama_refused(m, 0, 2, "architecture is 'qwen2', expected 'llama'");
}

Test(gguf_llama, missing_key)
{
    tiny m = tiny_model();
    m.ints[2].v = NO_KEY;
    llama_refused(m, 0, 2, "key 'llama.block_count' is missing");
}

Test(gguf_llama, missing_tensor)
{
    tiny m = tiny_model();
    tiny_drop(&m, "blk.1.ffn_up.weight");
    llama_refused(m, 0, 2, "tensor 'blk.1.ffn_up.weight' [32, 64] is missing");
}

Test(gguf_llama, missing_tensor_of_another_stage_is_fine)
{
    tiny m = tiny_model();
    tiny_drop(&m, "blk.1.ffn_up.weight");
    buf b;
    gguf *g = tiny_open(&m, &b);
    gguf_llama_free(open_stage(g, 0, 1));
    gguf_close(g);
    free(b.p);
}

Test(gguf_llama, wrong_shape)
{
    tiny m = tiny_model();
    tiny_tensor(&m, "blk.0.attn_k.weight")->ne[1] = 32;
    llama_refused(m, 0, 2, "tensor 'blk.0.attn_k.weight' has shape [32, 32], expected [32, 16]");
}

Test(gguf_llama, transposed_ffn_down)
{
    tiny m = tiny_model();
    tdesc *t = tiny_tensor(&m, "blk.1.ffn_down.weight");
    t->ne[0] = 32;
    t->ne[1] = 64;
    llama_refused(m, 1, 2, "'blk.1.ffn_down.weight' has shape [32, 64], expected [64, 32]");
}

Test(gguf_llama, norm_not_f32)
{
    tiny m = tiny_model();
    tiny_tensor(&m, "blk.0.ffn_norm.weight")->type = WT_F16;
    llama_refused(m, 0, 1, "tensor 'blk.0.ffn_norm.weight' is F16, expected F32");
}

Test(gguf_llama, embedding_width)
{
    tiny m = tiny_model();
    tiny_tensor(&m, "token_embd.weight")->ne[0] = 16;
    llama_refused(m, 1, 2, "tensor 'token_embd.weight' has shape [16, 16], expected [32, vocab]");
}

Test(gguf_llama, heads_do_not_group)
{
    tiny m = tiny_model();
    m.ints[4].v = 3;
    llama_refused(m, 0, 2, "head_count 4 is not a multiple of llama.attention.head_count_kv 3");
}

Test(gguf_llama, odd_head_size)
{
    tiny m = tiny_model();
    m.ints[3].v = 32;
    m.ints[4].v = 32;
    llama_refused(m, 0, 2, "over llama.attention.head_count 32 heads, expected an even head size");
}

Test(gguf_llama, rope_dimension_too_large)
{
    tiny m = tiny_model();
    m.ints[6].v = 10;
    llama_refused(m, 0, 2, "llama.rope.dimension_count is 10, expected an even number up to");
}

Test(gguf_llama, negative_epsilon)
{
    tiny m = tiny_model();
    m.eps = -1.0f;
    llama_refused(m, 0, 2, "'llama.attention.layer_norm_rms_epsilon' is -1, expected a positive");
}

Test(gguf_llama, block_count_beyond_the_tensors)
{
    tiny m = tiny_model();
    m.ints[2].v = 1000000;
    llama_refused(m, 0, 2, "llama.block_count 1000000 needs 9000000 tensors or more");
}

Test(gguf_llama, layer_range)
{
    llama_refused(tiny_model(), 1, 1, "layers [1, 1) are not a range of the model's 2");
    llama_refused(tiny_model(), 0, 3, "layers [0, 3)");
}

/* ---- the fuzzer's seeds ---- */

/* The whole model as one stage. */
static int describe(const gguf *g, gguf_llama **m, char *err, size_t errlen)
{
    gguf_llama_config c;
    if (gguf_llama_config_read(g, &c, err, errlen) < 0)
        return -1;
    return gguf_llama_open(m, g, 0, c.n_layers, err, errlen);
}

/* Seed names carry their expectation: ok-llama-* describe a llama model,
 * other ok-* open, err-* are refused by the reader or the description;
 * any other file (a fuzzer's find) must just be handled. */
static void check_seed(const char *path, const char *name)
{
    buf b = read_all(path);
    char err[512] = "";
    gguf *g = NULL;
    gguf_llama *m = NULL;
    int rc = gguf_open_mem(&g, b.p, b.n, name, err, sizeof err);
    int plain = strncmp(name, "ok-", 3) == 0 && strncmp(name, "ok-llama-", 9) != 0;
    if (rc == 0 && !plain)
        rc = describe(g, &m, err, sizeof err);
    if (strncmp(name, "ok-", 3) == 0)
        cr_assert_eq(rc, 0, "%s", err);
    else if (strncmp(name, "err-", 4) == 0)
        cr_assert_eq(rc, -1, "%s was accepted", name);
    if (rc < 0)
        cr_assert(strncmp(err, name, strlen(name)) == 0, "%s", err);
    gguf_llama_free(m);
    gguf_close(g);
    free(b.p);
}

Test(gguf, fuzz_seeds)
{
    const char *dir = "tests/fuzz/corpus/gguf";
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        check_seed(path, e->d_name);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 10);
}
