/* test_tok_llamacpp.c: ids as llama.cpp gives them.
 *
 * llama.cpp's own tokenizer suite (tests/fixtures/vocab, from its
 * test-tokenizer-0): every text of each .inp must give the ids on the same
 * line of the .out, tokenized as test-tokenizer-0 does (no BOS/EOS, special
 * texts not parsed). And llama.cpp's tokens of the fixtures' prompt for
 * stories260K-f32.gguf.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/tokenizer.h"

#define VOCAB_DIR "tests/fixtures/vocab/"
#define S260 "tests/fixtures/gguf/stories260K-f32.gguf"
#define SEP "\n__ggml_vocab_test__\n"

static const char prompt[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.";

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
    char *s = malloc((size_t)n + 1);
    cr_assert_not_null(s);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static tokenizer *load(const char *path)
{
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, path, err, sizeof err), 0, "%s", err);
    return t;
}

/* The ids of text as test-tokenizer-0 writes them: " 1 2 3". */
static void ids_line(const tokenizer *t, const char *text, size_t len, int flags, char *out,
                     size_t room)
{
    char err[256];
    int *ids;
    int n = tok_tokenize(t, text, len, flags, &ids, err, sizeof err);
    cr_assert_geq(n, 0, "%s", err);
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        at += (size_t)snprintf(out + at, room - at, " %d", ids[i]);
        cr_assert_lt(at, room);
    }
    free(ids);
}

/* Runs one suite; returns the number of texts checked. */
static int suite(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf", name);
    tokenizer *t = load(path);
    snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf.inp", name);
    char *inp = slurp(path);
    snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf.out", name);
    char *out = slurp(path);
    char *text = inp, *want = out, *end, got[16384];
    int n = 0;
    while ((end = strstr(text, SEP))) {
        char *eol = strchr(want, '\n');
        cr_assert_not_null(eol, "%s: .out has fewer lines than .inp has texts", name);
        *eol = '\0';
        ids_line(t, text, (size_t)(end - text), 0, got, sizeof got);
        cr_expect_str_eq(got, want, "%s, text %d '%.*s'", name, n, (int)(end - text), text);
        text = end + strlen(SEP);
        want = eol + 1;
        n++;
    }
    cr_assert_str_eq(want, "", "%s: .out has more lines than .inp has texts", name);
    free(inp);
    free(out);
    tok_free(t);
    return n;
}

Test(tok_llamacpp, suite_llama_spm)
{
    cr_assert_eq(suite("llama-spm"), 46);
}

Test(tok_llamacpp, suite_gpt_2)
{
    cr_assert_eq(suite("gpt-2"), 46);
}

Test(tok_llamacpp, suite_deepseek_llm)
{
    cr_assert_eq(suite("deepseek-llm"), 46);
}

/* llama.cpp adds BOS for this vocabulary (tokenizer.ggml.model = llama). */
Test(tok_llamacpp, stories260k_prompt)
{
    tokenizer *t = load(S260);
    cr_assert(tok_add_bos(t));
    cr_assert(!tok_add_eos(t));
    cr_assert_eq(tok_bos(t), 1);
    cr_assert_eq(tok_eos(t), 2);
    char *want = slurp("tests/fixtures/gguf/s260-f32.ref.tokens"), got[4096];
    want[strcspn(want, "\n")] = '\0';
    ids_line(t, prompt, strlen(prompt), TOK_ADD_BOS, got, sizeof got);
    cr_assert_str_eq(got + 1, want);
    free(want);
    tok_free(t);
}

/* The embedded llama2.c file is the same vocabulary with spaces for
 * U+2581: same ids. */
Test(tok_llamacpp, embedded_matches_gguf)
{
    tokenizer *gguf = load(S260), *bin = load(NULL);
    cr_assert_eq(tok_vocab_size(bin), tok_vocab_size(gguf));
    char a[4096], b[4096];
    ids_line(gguf, prompt, strlen(prompt), TOK_ADD_BOS, a, sizeof a);
    ids_line(bin, prompt, strlen(prompt), TOK_ADD_BOS, b, sizeof b);
    cr_assert_str_eq(a, b);
    for (int id = 0; id < tok_vocab_size(bin); id++) {
        size_t na, nb;
        const char *pa = tok_piece(gguf, id, 0, &na), *pb = tok_piece(bin, id, 0, &nb);
        cr_assert(na == nb && memcmp(pa, pb, na) == 0, "token %d: '%.*s' against '%.*s'", id,
                  (int)na, pa, (int)nb, pb);
    }
    tok_free(gguf);
    tok_free(bin);
}
