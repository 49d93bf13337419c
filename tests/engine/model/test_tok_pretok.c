/* test_tok_pretok.c: the byte-level BPE pre-tokenizers: each cuts as
 * llama.cpp's expressions do, and every one covers any text exactly, long
 * runs included. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/pretok.h"

static const char *const names[] = {
    "default",      "gpt-2",          "mpt",
    "phi-2",        "llama-bpe",      "llama3",
    "llama-v3",     "qwen2",          "deepseek-r1-qwen",
    "deepseek-llm", "deepseek-coder", "falcon",
    "starcoder",    "refact",         "smollm",
};

static pretok *make(const char *name)
{
    char err[256];
    pretok *p;
    cr_assert_eq(pretok_new(&p, name, err, sizeof err), 0, "%s", err);
    return p;
}

/* The pieces of text joined by '|'. */
static void cut(const char *name, const char *text, char *out)
{
    pretok *p = make(name);
    pretok_span *s;
    size_t n;
    char err[256];
    cr_assert_eq(pretok_split(p, text, strlen(text), &s, &n, err, sizeof err), 0, "%s", err);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(out, "|");
        strncat(out, text + s[i].off, s[i].len);
    }
    free(s);
    pretok_free(p);
}

/* Pieces follow each other from 0 to len, none empty. */
static void covers(const pretok *p, const char *name, const char *text, size_t len)
{
    pretok_span *s;
    size_t n, at = 0;
    char err[256];
    cr_assert_eq(pretok_split(p, text, len, &s, &n, err, sizeof err), 0, "%s: %s", name, err);
    for (size_t i = 0; i < n; i++) {
        cr_assert(s[i].off == at && s[i].len > 0, "%s: piece %zu", name, i);
        at += s[i].len;
    }
    cr_assert_eq(at, len, "%s", name);
    free(s);
}

Test(tok_pretok, gpt2)
{
    char out[256];
    cut("gpt-2", "Hello world's  test 42!!\n\nok ", out);
    cr_assert_str_eq(out, "Hello| world|'s| | test| 42|!!|\n|\n|ok| ");
}

Test(tok_pretok, llama3_and_qwen2_digits)
{
    char out[256];
    cut("llama-bpe", "12345 I'M\n\n  x", out);
    cr_assert_str_eq(out, "123|45| I|'M|\n\n| | x", "the last space goes with the word");
    cut("qwen2", "2024", out);
    cr_assert_str_eq(out, "2|0|2|4");
}

Test(tok_pretok, deepseek)
{
    char out[256];
    cut("deepseek-llm", "Hi there 123\n\xE4\xBD\xA0\xE5\xA5\xBD!  ", out);
    cr_assert_str_eq(out, "Hi| there| |123|\n|\xE4\xBD\xA0\xE5\xA5\xBD|!|  ");
    cut("deepseek-coder", "x1=2", out);
    cr_assert_str_eq(out, "x|1|=|2");
}

Test(tok_pretok, unknown_name)
{
    char err[256];
    pretok *p = (pretok *)1;
    cr_assert_eq(pretok_new(&p, "klingon", err, sizeof err), -1);
    cr_assert_null(p);
    cr_assert(strstr(err, "'klingon'"), "%s", err);
    cr_assert_eq(pretok_flags("klingon"), -1);
    cr_assert_eq(pretok_flags("llama-bpe"), PRETOK_IGNORE_MERGES | PRETOK_ADD_BOS);
}

/* 64 KiB runs of one class (the worst case for backtracking) and invalid
 * UTF-8, through every pre-tokenizer. */
Test(tok_pretok, long_runs_and_invalid_utf8)
{
    enum { N = 64 * 1024 };
    char *text = malloc(N);
    cr_assert_not_null(text);
    const char fills[] = {' ', '\n', 'a', '7', '!', '\xFF'};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        pretok *p = make(names[k]);
        for (size_t f = 0; f < sizeof fills; f++) {
            memset(text, fills[f], N);
            covers(p, names[k], text, N);
        }
        for (size_t i = 0; i < N; i++)
            text[i] = "a \n1.\xC3\xA9\x80\xE4"[i * 2654435761u % 8];
        covers(p, names[k], text, N);
        pretok_free(p);
    }
    free(text);
}
