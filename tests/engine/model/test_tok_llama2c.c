/* test_tok_llama2c.c: llama2.c tokenizer files through the original API
 * (tok_encode/tok_decode), with the ids llama2.c's quadratic encoder gave
 * before the O(n log n) one replaced it. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/tokenizer.h"

extern const unsigned char embedded_tokenizer_start[];
extern const unsigned char embedded_tokenizer_end[];

static tokenizer *tok;

static void load(void)
{
    char err[256];
    cr_assert_eq(tok_load(&tok, NULL, err, sizeof err), 0, "%s", err);
}

static void unload(void)
{
    tok_free(tok);
}

TestSuite(tok_llama2c, .init = load, .fini = unload);

/* The text tok_decode() gives back for ids, as inferd prints it. */
static void decode_all(const int *ids, int n, char *out)
{
    char buf[TOK_DECODE_BUF];
    out[0] = '\0';
    for (int i = 1; i < n; i++)
        strcat(out, tok_decode(tok, ids[i - 1], ids[i], buf));
}

typedef struct golden {
    const char *text;
    int n;
    int ids[32];
} golden;

/* Produced by the llama2.c encoder this module replaced, BOS first. */
static const golden goldens[] = {
    {"Once upon a time", 5, {1, 403, 407, 261, 378}},
    {"The little dog ran to the park, and he was happy! \"Yes,\" said Tom.",
     27,
     {1,   291, 376, 400, 428, 352, 303, 267, 265, 282, 295, 433, 432, 269,
      281, 286, 393, 443, 313, 452, 406, 432, 436, 336, 274, 287, 426}},
    {"a \xF0\x9F\x98\x80 b", 8, {1, 261, 410, 243, 162, 155, 131, 268}},
    {"\x01\x02\x03 zz", 8, {1, 410, 4, 5, 6, 410, 451, 451}},
    {"  two  spaces\n\tand a tab", 20, {1,   410, 410, 259, 424, 414, 410, 262, 427, 412,
                                        331, 419, 13,  12,  412, 264, 261, 259, 412, 430}},
    {"caf\xC3\xA9 na\xC3\xAFve", 10, {1, 280, 412, 431, 485, 297, 412, 198, 178, 360}},
    {"<s>Lily</s>", 11, {1, 410, 504, 419, 505, 438, 310, 504, 492, 419, 505}},
    /* invalid UTF-8: cut as llama2.c cuts it */
    {"\xE2"
     "abc \x80\x80\x80\x80\x80 \xFF",
     14,
     {1, 410, 229, 412, 430, 429, 35, 131, 131, 131, 131, 131, 410, 258}},
};

Test(tok_llama2c, same_ids_as_before)
{
    for (size_t g = 0; g < sizeof goldens / sizeof goldens[0]; g++) {
        int ids[256];
        int n = tok_encode(tok, goldens[g].text, 1, ids);
        cr_assert_eq(n, goldens[g].n, "'%s': %d ids", goldens[g].text, n);
        cr_assert_eq(memcmp(ids, goldens[g].ids, (size_t)n * sizeof *ids), 0, "'%s'",
                     goldens[g].text);
    }
}

Test(tok_llama2c, vocab_size_and_specials)
{
    cr_assert_eq(tok_vocab_size(tok), 512);
    cr_assert_eq(tok_bos(tok), TOK_BOS);
    cr_assert_eq(tok_eos(tok), TOK_EOS);
    cr_assert(tok_add_bos(tok));
}

Test(tok_llama2c, empty_text)
{
    int ids[4];
    cr_assert_eq(tok_encode(tok, "", 1, ids), 1);
    cr_assert_eq(ids[0], TOK_BOS);
    cr_assert_eq(tok_encode(tok, "", 0, ids), 0);
}

Test(tok_llama2c, dummy_prefix_and_no_bos)
{
    int with[32], without[32];
    int n = tok_encode(tok, "Once upon a time", 1, with);
    int m = tok_encode(tok, "Once upon a time", 0, without);
    cr_assert_eq(m, n - 1);
    cr_assert_eq(memcmp(with + 1, without, m * sizeof(int)), 0);
    /* " Once" carries the dummy prefix space; after BOS it is stripped. */
    char buf[TOK_DECODE_BUF];
    cr_assert_str_eq(tok_decode(tok, TOK_BOS, with[1], buf), "Once");
    cr_assert_str_eq(tok_decode(tok, 100, with[1], buf), " Once");
    /* A byte token for a space is the text's own space: kept. */
    cr_assert_str_eq(tok_decode(tok, TOK_BOS, ' ' + 3, buf), " ");
}

Test(tok_llama2c, round_trip)
{
    const char *text = "The little dog ran to the park, and he was happy! \"Yes,\" said Tom.";
    int ids[256];
    int n = tok_encode(tok, text, 1, ids);
    char out[512];
    decode_all(ids, n, out);
    cr_assert_str_eq(out, text);
}

Test(tok_llama2c, byte_fallback_decodes)
{
    const char *text = "a \xF0\x9F\x98\x80 b";
    int ids[64];
    int n = tok_encode(tok, text, 1, ids);
    char out[128];
    decode_all(ids, n, out);
    cr_assert_str_eq(out, text);
}

Test(tok_llama2c, ids_past_vocab)
{
    char buf[TOK_DECODE_BUF];
    cr_assert_str_eq(tok_decode(tok, 5, 31999, buf), "<31999>");
    cr_assert_str_eq(tok_decode(tok, 5, 512, buf), "<512>");
    cr_assert_str_eq(tok_decode(tok, 5, -1, buf), "<-1>");
    size_t len;
    cr_assert_null(tok_piece(tok, 512, 1, &len));
}

Test(tok_llama2c, max_tokens_bound)
{
    const char *text = "\x01\x02\x03 zz \xFF\xFE";
    int ids[32];
    int n = tok_encode(tok, text, 1, ids);
    cr_assert(n > 0 && n <= (int)tok_max_tokens(strlen(text)));
}

/* A copy of the embedded file, cut to `size` bytes, with the int32 at
 * `at` replaced by `value` (at < 0: untouched). */
static void expect_bad_file(size_t size, long at, int32_t value, const char *part)
{
    unsigned char *buf = calloc(1, size);
    cr_assert_not_null(buf);
    size_t have = (size_t)(embedded_tokenizer_end - embedded_tokenizer_start);
    memcpy(buf, embedded_tokenizer_start, size < have ? size : have);
    if (at >= 0)
        memcpy(buf + at, &value, 4);
    char path[] = "/tmp/tok-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, size), (ssize_t)size);
    close(fd);
    free(buf);
    char err[256] = "";
    tokenizer *t = (tokenizer *)1;
    cr_assert_eq(tok_load(&t, path, err, sizeof err), -1);
    cr_assert_null(t);
    cr_assert(strstr(err, path), "'%s' does not name the file", err);
    cr_assert(strstr(err, part), "'%s' lacks '%s'", err, part);
    unlink(path);
}

Test(tok_llama2c, bad_files)
{
    size_t size = (size_t)(embedded_tokenizer_end - embedded_tokenizer_start);
    expect_bad_file(size - 3, -1, 0, "truncated in token 511");
    expect_bad_file(2, -1, 0, "expected at least 4");
    expect_bad_file(size, 0, 0, "max_token_length=0");
    /* Token 0 ("<unk>") claims a huge length. */
    expect_bad_file(size, 8, 1 << 30, "token 0 has length 1073741824");
    expect_bad_file(4 + 8 + 5, -1, 0, "1 tokens, expected at least 259");
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, "/nonexistent/tok.bin", err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/tok.bin: No such file"), "%s", err);
}

Test(tok_llama2c, file_loads_like_embedded)
{
    char path[] = "/tmp/tok-XXXXXX";
    int fd = mkstemp(path);
    size_t size = (size_t)(embedded_tokenizer_end - embedded_tokenizer_start);
    cr_assert_eq(write(fd, embedded_tokenizer_start, size), (ssize_t)size);
    close(fd);
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, path, err, sizeof err), 0, "%s", err);
    int a[32], b[32];
    int n = tok_encode(t, "Once upon a time", 1, a);
    cr_assert_eq(n, tok_encode(tok, "Once upon a time", 1, b));
    cr_assert_eq(memcmp(a, b, n * sizeof(int)), 0);
    tok_free(t);
    unlink(path);
}
