/* test_tok_stream.c: decoding (pieces and the streaming decoder) and the
 * parsing of special tokens' texts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/tokenizer.h"

#define SPM "tests/fixtures/vocab/ggml-vocab-llama-spm.gguf"
#define GPT2 "tests/fixtures/vocab/ggml-vocab-gpt-2.gguf"
#define DEEPSEEK "tests/fixtures/vocab/ggml-vocab-deepseek-llm.gguf"

static tokenizer *load(const char *path)
{
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, path, err, sizeof err), 0, "%s", err);
    return t;
}

static int encode(const tokenizer *t, const char *text, int flags, int **ids)
{
    char err[256];
    int n = tok_tokenize(t, text, strlen(text), flags, ids, err, sizeof err);
    cr_assert_geq(n, 0, "%s", err);
    return n;
}

/* Streams ids through a decoder; the concatenation into out. Returns how
 * many pushes returned nothing. */
static int stream_all(const tokenizer *t, const int *ids, int n, int special, char *out)
{
    tok_stream *s = tok_stream_new(t, special);
    cr_assert_not_null(s);
    size_t at = 0, len;
    int empty = 0;
    for (int i = 0; i < n; i++) {
        const char *p = tok_stream_push(s, ids[i], &len);
        cr_assert_not_null(p);
        cr_assert_eq(strlen(p), len);
        empty += len == 0;
        memcpy(out + at, p, len);
        at += len;
    }
    const char *p = tok_stream_flush(s, &len);
    memcpy(out + at, p, len);
    out[at + len] = '\0';
    tok_stream_free(s);
    return empty;
}

/* Byte tokens: an emoji no SentencePiece token covers is four byte tokens,
 * and the decoder gives it out whole when its last byte arrives. */
Test(tok_stream, holds_split_utf8_spm)
{
    tokenizer *t = load(SPM);
    const char *text = "I \xF0\x9F\xA6\x99 llamas";
    int *ids;
    int n = encode(t, text, TOK_ADD_BOS, &ids);
    char out[256];
    cr_assert_geq(stream_all(t, ids, n, 0, out), 3, "the first three bytes come out as nothing");
    cr_assert_str_eq(out, text);
    tok_stream *s = tok_stream_new(t, 0);
    size_t len;
    for (int i = 0; i < n; i++) {
        const char *p = tok_stream_push(s, ids[i], &len);
        int has_emoji_byte = 0;
        for (size_t k = 0; k < len; k++)
            has_emoji_byte |= (unsigned char)p[k] >= 0x80;
        cr_assert(!has_emoji_byte || strstr(p, "\xF0\x9F\xA6\x99"), "a piece of it: '%s'", p);
    }
    tok_stream_free(s);
    free(ids);
    tok_free(t);
}

/* Byte-level BPE: characters split across tokens, text round-trips. */
Test(tok_stream, holds_split_utf8_bpe)
{
    tokenizer *t = load(GPT2);
    const char *text =
        "na\xC3\xAFve \xE2\x82\xAC 5, \xF0\x9F\x98\x80\xF0\x9F\xA6\x99 \xE4\xBD\xA0\xE5\xA5\xBD";
    int *ids;
    int n = encode(t, text, 0, &ids);
    char out[256];
    cr_assert_gt(stream_all(t, ids, n, 0, out), 0, "some token ends inside a character");
    cr_assert_str_eq(out, text);
    free(ids);
    tok_free(t);
}

/* What never forms a character becomes U+FFFD, a cut-off one at flush. */
Test(tok_stream, invalid_bytes_replaced)
{
    tokenizer *t = load(NULL); /* llama2.c: byte b is token b + 3 */
    tok_stream *s = tok_stream_new(t, 0);
    size_t len;
    cr_assert_str_eq(tok_stream_push(s, 0xFF + 3, &len), "\xEF\xBF\xBD");
    cr_assert_str_eq(tok_stream_push(s, 0xE2 + 3, &len), "");
    cr_assert_str_eq(tok_stream_push(s, 0x82 + 3, &len), "");
    cr_assert_str_eq(tok_stream_push(s, 'a' + 3, &len), "\xEF\xBF\xBD"
                                                        "a");
    cr_assert_str_eq(tok_stream_push(s, 0xF0 + 3, &len), "");
    cr_assert_str_eq(tok_stream_flush(s, &len), "\xEF\xBF\xBD");
    cr_assert_eq(len, 3);
    cr_assert_str_eq(tok_stream_push(s, 600, &len), "<600>");
    tok_stream_free(s);
    tok_free(t);
}

/* The leading space of the first word goes after BOS; control tokens show
 * only when asked. */
Test(tok_stream, bos_and_special)
{
    tokenizer *t = load(SPM);
    int *ids;
    int n = encode(t, "Hello world", TOK_ADD_BOS | TOK_ADD_EOS, &ids);
    cr_assert_eq(ids[0], tok_bos(t));
    cr_assert_eq(ids[n - 1], tok_eos(t));
    char out[256];
    stream_all(t, ids, n, 0, out);
    cr_assert_str_eq(out, "Hello world");
    stream_all(t, ids, n, 1, out);
    cr_assert_str_eq(out, "<s>Hello world</s>");
    stream_all(t, ids + 1, n - 2, 0, out);
    cr_assert_str_eq(out, " Hello world", "no BOS before it: the space stays");
    free(ids);
    tok_free(t);
}

Test(tok_stream, pieces)
{
    tokenizer *t = load(GPT2);
    size_t len;
    const char *p = tok_piece(t, 220, 0, &len); /* "Ġ" */
    cr_assert(len == 1 && p[0] == ' ');
    p = tok_piece(t, 50256, 0, &len);
    cr_assert_eq(len, 0, "control tokens hidden");
    p = tok_piece(t, 50256, 1, &len);
    cr_assert(len == 13 && memcmp(p, "<|endoftext|>", 13) == 0);
    cr_assert_null(tok_piece(t, 50257, 1, &len));
    char buf[TOK_DECODE_BUF];
    cr_assert_str_eq(tok_decode(t, tok_bos(t), 220, buf), " ", "BPE adds no space to drop");
    tok_free(t);
}

/* A control token's text is text unless TOK_PARSE_SPECIAL. */
Test(tok_stream, parse_special_bpe)
{
    tokenizer *t = load(GPT2);
    const char *text = "Hi<|endoftext|>there";
    int *ids;
    int n = encode(t, text, 0, &ids);
    for (int i = 0; i < n; i++)
        cr_assert_neq(ids[i], 50256);
    free(ids);
    n = encode(t, text, TOK_PARSE_SPECIAL, &ids);
    int plain_hi, plain_there, *a, *b;
    plain_hi = encode(t, "Hi", 0, &a);
    plain_there = encode(t, "there", 0, &b);
    cr_assert_eq(n, plain_hi + 1 + plain_there);
    cr_assert_eq(memcmp(ids, a, plain_hi * sizeof(int)), 0);
    cr_assert_eq(ids[plain_hi], 50256);
    cr_assert_eq(memcmp(ids + plain_hi + 1, b, plain_there * sizeof(int)), 0);
    free(a);
    free(b);
    free(ids);
    tok_free(t);
}

/* SentencePiece: text after a special token starts with a space again, as
 * llama.cpp has it. */
Test(tok_stream, parse_special_spm)
{
    tokenizer *t = load(SPM);
    int *ids, *word;
    int n = encode(t, "<s>Hello</s>", TOK_PARSE_SPECIAL, &ids);
    int m = encode(t, "Hello", 0, &word);
    cr_assert_eq(n, m + 2);
    cr_assert_eq(ids[0], 1);
    cr_assert_eq(memcmp(ids + 1, word, m * sizeof(int)), 0);
    cr_assert_eq(ids[n - 1], 2);
    free(ids);
    n = encode(t, "<s>Hello</s>", 0, &ids);
    for (int i = 0; i < n; i++)
        cr_assert(ids[i] != 1 && ids[i] != 2, "no control ids without parsing");
    free(ids);
    free(word);
    tok_free(t);
}

/* Longest special text first, and user-defined tokens (DeepSeek's "ø")
 * match even without TOK_PARSE_SPECIAL, as in llama.cpp. */
Test(tok_stream, specials_longest_and_user_defined)
{
    tokenizer *t = load(DEEPSEEK);
    const char *bos = "<\xEF\xBD\x9C"
                      "begin\xE2\x96\x81"
                      "of\xE2\x96\x81sentence\xEF\xBD\x9C>";
    char text[128];
    snprintf(text, sizeof text, "%s\xC3\xB8", bos);
    int *ids;
    int n = encode(t, text, TOK_PARSE_SPECIAL, &ids);
    cr_assert_eq(n, 2);
    cr_assert_eq(ids[0], 100000);
    cr_assert_eq(ids[1], 100002);
    free(ids);
    n = encode(t, text, 0, &ids);
    cr_assert_gt(n, 2);
    cr_assert_eq(ids[n - 1], 100002, "user-defined 'ø' matched without parsing");
    free(ids);
    tok_free(t);
}
