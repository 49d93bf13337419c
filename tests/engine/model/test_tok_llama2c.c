/* test_tokenizer.c: llama2.c-compatible encode/decode and file checks. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenizer.h"

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

/* The text tok_decode() gives back for ids, as inferd prints it. */
static void decode_all(const int *ids, int n, char *out)
{
    char buf[TOK_DECODE_BUF];
    out[0] = '\0';
    for (int i = 1; i < n; i++)
        strcat(out, tok_decode(tok, ids[i - 1], ids[i], buf));
}

TestSuite(tokenizer, .init = load, .fini = unload);

Test(tokenizer, vocab_size)
{
    cr_assert_eq(tok_vocab_size(tok), 512);
}

Test(tokenizer, empty_text)
{
    int ids[4];
    cr_assert_eq(tok_encode(tok, "", 1, ids), 1);
    cr_assert_eq(ids[0], TOK_BOS);
    cr_assert_eq(tok_encode(tok, "", 0, ids), 0);
}

Test(tokenizer, dummy_prefix_and_no_bos)
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
}

Test(tokenizer, round_trip)
{
    const char *text = "The little dog ran to the park, and he was happy! \"Yes,\" said Tom.";
    int ids[256];
    int n = tok_encode(tok, text, 1, ids);
    cr_assert(n > 2 && n < (int)strlen(text), "%d tokens", n);
    char out[512];
    decode_all(ids, n, out);
    cr_assert_str_eq(out, text);
}

Test(tokenizer, byte_fallback)
{
    /* U+1F600 is not in a 512-token vocabulary: its four UTF-8 bytes
     * become byte tokens (byte + 3), which decode to the raw bytes. */
    const char *text = "a \xF0\x9F\x98\x80 b";
    int ids[64];
    int n = tok_encode(tok, text, 1, ids);
    int found = 0;
    for (int i = 0; i + 3 < n; i++)
        if (ids[i] == 0xF0 + 3 && ids[i + 1] == 0x9F + 3 && ids[i + 2] == 0x98 + 3 &&
            ids[i + 3] == 0x80 + 3)
            found = 1;
    cr_assert(found, "no byte tokens for the emoji");
    char out[128];
    decode_all(ids, n, out);
    cr_assert_str_eq(out, text);
}

Test(tokenizer, ids_past_vocab)
{
    char buf[TOK_DECODE_BUF];
    cr_assert_str_eq(tok_decode(tok, 5, 31999, buf), "<31999>");
    cr_assert_str_eq(tok_decode(tok, 5, 512, buf), "<512>");
}

Test(tokenizer, max_tokens_bound)
{
    const char *text = "\x01\x02\x03 zz";
    int ids[16];
    int n = tok_encode(tok, text, 1, ids);
    cr_assert(n <= (int)tok_max_tokens(strlen(text)));
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

Test(tokenizer, bad_files)
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

Test(tokenizer, file_loads_like_embedded)
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
