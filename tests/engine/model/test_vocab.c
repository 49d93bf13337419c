/* test_vocab.c: vocabularies from llama2.c files and GGUF metadata: what
 * is read, llama.cpp's defaults, lookups, and the refusals. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/gguf.h"
#include "engine/model/tokenizer.h"
#include "engine/model/vocab.h"

extern const unsigned char embedded_tokenizer_start[];
extern const unsigned char embedded_tokenizer_end[];

#define U2581 "\xE2\x96\x81"

/* ---- a GGUF file of metadata only, built in memory ---- */

typedef struct gbuf {
    unsigned char *p;
    size_t n, cap;
    uint64_t n_kv;
} gbuf;

static void put(gbuf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_u32(gbuf *b, uint32_t v)
{
    put(b, &v, 4);
}

static void put_u64(gbuf *b, uint64_t v)
{
    put(b, &v, 8);
}

static void put_str(gbuf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static void key(gbuf *b, const char *k, uint32_t type)
{
    put_str(b, k);
    put_u32(b, type);
    b->n_kv++;
}

static void kv_str(gbuf *b, const char *k, const char *v)
{
    key(b, k, GGUF_STR);
    put_str(b, v);
}

static void kv_u32(gbuf *b, const char *k, uint32_t v)
{
    key(b, k, GGUF_U32);
    put_u32(b, v);
}

static void kv_bool(gbuf *b, const char *k, int v)
{
    key(b, k, GGUF_BOOL);
    unsigned char c = (unsigned char)v;
    put(b, &c, 1);
}

static void kv_strs(gbuf *b, const char *k, const char *const *v, int n)
{
    key(b, k, GGUF_ARR);
    put_u32(b, GGUF_STR);
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++)
        put_str(b, v[i]);
}

static void kv_i32s(gbuf *b, const char *k, const int32_t *v, int n)
{
    key(b, k, GGUF_ARR);
    put_u32(b, GGUF_I32);
    put_u64(b, (uint64_t)n);
    put(b, v, (size_t)n * 4);
}

static void kv_f32s(gbuf *b, const char *k, const float *v, int n)
{
    key(b, k, GGUF_ARR);
    put_u32(b, GGUF_F32);
    put_u64(b, (uint64_t)n);
    put(b, v, (size_t)n * 4);
}

/* The file around the pairs in kvs: header, pairs, no tensors. */
static gbuf file_of(const gbuf *kvs)
{
    gbuf f = {0};
    put(&f, "GGUF", 4);
    put_u32(&f, 3);
    put_u64(&f, 0);
    put_u64(&f, kvs->n_kv);
    put(&f, kvs->p, kvs->n);
    while (f.n % 32)
        put(&f, "", 1);
    return f;
}

/* A byte-level vocabulary of a, b, ab, Ġ (the space) and a control token,
 * one merge; `skip` leaves out the key of that name. */
static gbuf tiny_bpe(const char *skip, const char *model, const char *pre)
{
    static const char *const tokens[] = {"a", "b", "ab", "\xC4\xA0", "<|end|>"};
    static const int32_t types[] = {1, 1, 1, 1, 3};
    static const char *const merges[] = {"a b"};
    gbuf kvs = {0};
    if (strcmp(skip, "model") != 0)
        kv_str(&kvs, "tokenizer.ggml.model", model);
    if (strcmp(skip, "pre") != 0)
        kv_str(&kvs, "tokenizer.ggml.pre", pre);
    if (strcmp(skip, "tokens") != 0)
        kv_strs(&kvs, "tokenizer.ggml.tokens", tokens, 5);
    kv_i32s(&kvs, "tokenizer.ggml.token_type", types, 5);
    if (strcmp(skip, "merges") != 0)
        kv_strs(&kvs, "tokenizer.ggml.merges", merges, 1);
    kv_u32(&kvs, "tokenizer.ggml.eos_token_id", 4);
    gbuf f = file_of(&kvs);
    free(kvs.p);
    return f;
}

static int load_vocab(const gbuf *f, vocab **v, char *err, size_t errlen)
{
    gguf *g;
    cr_assert_eq(gguf_open_mem(&g, f->p, f->n, "mem.gguf", err, errlen), 0, "%s", err);
    int rc = vocab_load_gguf(v, g, err, errlen);
    gguf_close(g);
    return rc;
}

static void refused(gbuf f, const char *part)
{
    char err[256] = "";
    vocab *v = (vocab *)1;
    cr_assert_eq(load_vocab(&f, &v, err, sizeof err), -1, "accepted, expected '%s'", part);
    cr_assert_null(v);
    cr_assert(strstr(err, "mem.gguf"), "'%s' does not name the file", err);
    cr_assert(strstr(err, part), "'%s' lacks '%s'", err, part);
    free(f.p);
}

/* ---- the tests ---- */

Test(vocab, llama2c_file)
{
    char err[256];
    vocab *v;
    size_t size = (size_t)(embedded_tokenizer_end - embedded_tokenizer_start);
    cr_assert_eq(vocab_load_llama2c(&v, embedded_tokenizer_start, size, "tok512", err, sizeof err),
                 0, "%s", err);
    const vocab_info *in = vocab_get_info(v);
    cr_assert_eq(in->kind, VOCAB_SPM);
    cr_assert_eq(in->n_tokens, 512);
    cr_assert(in->bos == 1 && in->eos == 2 && in->unk == 0 && in->pad == -1);
    cr_assert(in->add_bos && !in->add_eos && in->add_space_prefix);
    cr_assert_str_eq(in->space, " ");
    cr_assert_eq(vocab_type(v, 0), VOCAB_UNKNOWN);
    cr_assert_eq(vocab_type(v, 1), VOCAB_CONTROL);
    cr_assert_eq(vocab_type(v, 3 + 'A'), VOCAB_BYTE);
    cr_assert_eq(vocab_byte_value(v, 3 + 'A'), 'A');
    cr_assert_eq(vocab_byte_token(v, 'A'), 3 + 'A');
    cr_assert_eq(vocab_type(v, 259), VOCAB_NORMAL);
    cr_assert_eq(vocab_find(v, " t", 2), 259);
    cr_assert_float_eq(vocab_score(v, 260), -1.0f, 0);
    cr_assert_eq(vocab_find(v, "no such token", 13), -1);
    cr_assert_eq(vocab_merge_rank(v, " t", 2, 1), -1, "no merge table");
    vocab_free(v);
}

Test(vocab, gguf_spm)
{
    gguf *g;
    vocab *v;
    char err[256];
    cr_assert_eq(gguf_open(&g, "tests/fixtures/vocab/ggml-vocab-llama-spm.gguf", err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(vocab_load_gguf(&v, g, err, sizeof err), 0, "%s", err);
    gguf_close(g);
    const vocab_info *in = vocab_get_info(v);
    cr_assert_eq(in->kind, VOCAB_SPM);
    cr_assert_eq(in->n_tokens, 32000);
    cr_assert(in->bos == 1 && in->eos == 2 && in->unk == 0);
    cr_assert(in->add_bos && !in->add_eos && in->add_space_prefix);
    cr_assert_str_eq(in->space, U2581);
    int the = vocab_find(v, U2581 "the", 6);
    cr_assert_gt(the, 258);
    size_t len;
    cr_assert_eq(memcmp(vocab_text(v, the, &len), U2581 "the", 6), 0);
    cr_assert_eq(len, 6);
    cr_assert_eq(vocab_byte_token(v, 0x0A), vocab_find(v, "<0x0A>", 6));
    cr_assert_eq(vocab_type(v, vocab_byte_token(v, 0x0A)), VOCAB_BYTE);
    vocab_free(v);
}

Test(vocab, gguf_bpe)
{
    gguf *g;
    vocab *v;
    char err[256];
    cr_assert_eq(gguf_open(&g, "tests/fixtures/vocab/ggml-vocab-gpt-2.gguf", err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(vocab_load_gguf(&v, g, err, sizeof err), 0, "%s", err);
    gguf_close(g);
    const vocab_info *in = vocab_get_info(v);
    cr_assert_eq(in->kind, VOCAB_BPE);
    cr_assert_str_eq(in->pre, "gpt-2");
    cr_assert(in->bos == 50256 && in->eos == 50256 && in->unk == -1);
    cr_assert(!in->add_bos && !in->add_space_prefix);
    /* The first merges of GPT-2: "Ġ t", "Ġ a", "h e". */
    cr_assert_eq(vocab_merge_rank(v, "\xC4\xA0t", 3, 2), 0);
    cr_assert_eq(vocab_merge_rank(v, "he", 2, 1), 2);
    cr_assert_eq(vocab_merge_rank(v, "he", 2, 0), -1, "the split is part of the pair");
    cr_assert_eq(vocab_merge_rank(v, "\x01\x02", 2, 1), -1);
    cr_assert_eq(vocab_type(v, 50256), VOCAB_CONTROL);
    vocab_free(v);
}

Test(vocab, gguf_user_defined_and_add_bos)
{
    gguf *g;
    vocab *v;
    char err[256];
    cr_assert_eq(
        gguf_open(&g, "tests/fixtures/vocab/ggml-vocab-deepseek-llm.gguf", err, sizeof err), 0,
        "%s", err);
    cr_assert_eq(vocab_load_gguf(&v, g, err, sizeof err), 0, "%s", err);
    gguf_close(g);
    const vocab_info *in = vocab_get_info(v);
    cr_assert_str_eq(in->pre, "deepseek-llm");
    cr_assert(in->add_bos && in->bos == 100000 && in->eos == 100001 && in->pad == 100001);
    cr_assert_eq(vocab_type(v, 100002), VOCAB_USER);
    vocab_free(v);
}

/* A minimal file, through the whole tokenizer: "ab a" is "ab", then " a"
 * as Ġ and a (no merge joins them). Defaults: BOS and EOS 11 are outside
 * five tokens, so none; the file's EOS counts. */
Test(vocab, tiny_bpe_file)
{
    gbuf f = tiny_bpe("", "gpt2", "gpt-2");
    gguf *g;
    char err[256];
    cr_assert_eq(gguf_open_mem(&g, f.p, f.n, "mem.gguf", err, sizeof err), 0, "%s", err);
    tokenizer *t;
    cr_assert_eq(tok_load_gguf(&t, g, err, sizeof err), 0, "%s", err);
    gguf_close(g);
    cr_assert_eq(tok_bos(t), -1);
    cr_assert_eq(tok_eos(t), 4);
    int *ids;
    int n = tok_tokenize(t, "ab a", 4, TOK_ADD_BOS | TOK_ADD_EOS, &ids, err, sizeof err);
    cr_assert_eq(n, 4, "%s", err);
    cr_assert(ids[0] == 2 && ids[1] == 3 && ids[2] == 0 && ids[3] == 4);
    free(ids);
    tok_free(t);
    free(f.p);
}

Test(vocab, refusals)
{
    refused(tiny_bpe("model", "gpt2", "gpt-2"), "no tokenizer.ggml.model");
    refused(tiny_bpe("", "bert", "gpt-2"),
            "tokenizer.ggml.model is 'bert', expected llama or gpt2");
    refused(tiny_bpe("", "gpt2", "klingon"), "tokenizer.ggml.pre is 'klingon'");
    refused(tiny_bpe("tokens", "gpt2", "gpt-2"), "no tokenizer.ggml.tokens");
    refused(tiny_bpe("merges", "gpt2", "gpt-2"), "no tokenizer.ggml.merges");

    static const char *const dup[] = {"<unk>", "x", "x"};
    gbuf kvs = {0};
    kv_str(&kvs, "tokenizer.ggml.model", "llama");
    kv_strs(&kvs, "tokenizer.ggml.tokens", dup, 3);
    refused(file_of(&kvs), "tokens 1 and 2 have the same text 'x'");
    free(kvs.p);

    static const char *const three[] = {"<unk>", "<s>", "x"};
    static const float two_scores[] = {0, 0};
    kvs = (gbuf){0};
    kv_str(&kvs, "tokenizer.ggml.model", "llama");
    kv_strs(&kvs, "tokenizer.ggml.tokens", three, 3);
    kv_f32s(&kvs, "tokenizer.ggml.scores", two_scores, 2);
    refused(file_of(&kvs), "tokenizer.ggml.scores has 2 elements, expected 3");
    free(kvs.p);

    /* A special id outside the vocabulary is refused, naming it (it was
     * once replaced by the default without a word). */
    static const char *const specials[] = {"bos", "eos", "unknown", "padding"};
    for (int i = 0; i < 4; i++) {
        char key[64], want[128];
        snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", specials[i]);
        snprintf(want, sizeof want, "%s is 7, outside the vocabulary of 3 tokens", key);
        kvs = (gbuf){0};
        kv_str(&kvs, "tokenizer.ggml.model", "llama");
        kv_strs(&kvs, "tokenizer.ggml.tokens", three, 3);
        kv_u32(&kvs, key, 7);
        refused(file_of(&kvs), want);
        free(kvs.p);
    }

    kvs = (gbuf){0};
    kv_str(&kvs, "tokenizer.ggml.model", "llama");
    kv_strs(&kvs, "tokenizer.ggml.tokens", three, 3);
    kv_u32(&kvs, "tokenizer.ggml.padding_token_id", UINT32_MAX); /* llama.cpp's "none" */
    kv_u32(&kvs, "tokenizer.ggml.eos_token_id", 2);
    kv_bool(&kvs, "tokenizer.ggml.add_eos_token", 1);
    gbuf f = file_of(&kvs);
    char err[256];
    vocab *v;
    cr_assert_eq(load_vocab(&f, &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(vocab_get_info(v)->pad, -1, "0xFFFFFFFF is no padding token");
    cr_assert_eq(vocab_get_info(v)->bos, 1, "the kind's default where none is given");
    cr_assert_eq(vocab_get_info(v)->eos, 2);
    cr_assert(vocab_get_info(v)->add_eos);
    vocab_free(v);
    free(f.p);
    free(kvs.p);

    kvs = (gbuf){0};
    kv_str(&kvs, "tokenizer.ggml.model", "gpt2");
    kv_strs(&kvs, "tokenizer.ggml.tokens", three, 3);
    kv_strs(&kvs, "tokenizer.ggml.merges", three, 0);
    kv_bool(&kvs, "tokenizer.ggml.add_bos_token", 1);
    refused(file_of(&kvs), "add_bos_token is set but there is no such token");
    free(kvs.p);
}
