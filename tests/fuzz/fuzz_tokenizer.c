/* fuzz_tokenizer.c: libFuzzer target for the tokenizers, which take any
 * bytes a prompt holds. Whatever the input, with the embedded llama2.c
 * vocabulary (SentencePiece merges) and GPT-2's (byte-level BPE behind
 * regular expressions):
 *   - encoding succeeds, every id is in the vocabulary, and there are no
 *     more than tok_max_tokens() promises;
 *   - the ids decode back to the input (plus SentencePiece's leading space):
 *     neither vocabulary lacks a byte, and no control token is produced
 *     unless special texts are parsed;
 *   - the streaming decoder's output is valid UTF-8, and is the input when
 *     the input is valid UTF-8;
 *   - parsing special texts never fails either.
 * Run from the repository root (the GPT-2 vocabulary is a test fixture).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/tokenizer.h"
#include "engine/sys/utf8.h"

#define GPT2_VOCAB "tests/fixtures/vocab/ggml-vocab-gpt-2.gguf"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tokenizer *load(const char *path)
{
    char err[256];
    tokenizer *t;
    if (tok_load(&t, path, err, sizeof err) != 0)
        abort();
    return t;
}

/* Whether s[0..n) is valid UTF-8. */
static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0, k; i < n; i += k)
        if ((k = utf8_seq((const char *)s + i, n - i)) == 0)
            return 0;
    return 1;
}

/* Decodes ids piece by piece and through a stream; checks both. */
static void decode_check(const tokenizer *t, const int *ids, int n, const uint8_t *want,
                         size_t want_len, const uint8_t *text, size_t len)
{
    unsigned char *out = malloc(want_len + 1), *streamed = malloc(3 * want_len + 16);
    tok_stream *s = tok_stream_new(t, 0);
    if (!out || !streamed || !s)
        abort();
    size_t at = 0, sat = 0, k;
    for (int i = 0; i < n; i++) {
        const char *p = tok_piece(t, ids[i], 0, &k);
        if (!p || k > want_len - at)
            abort();
        memcpy(out + at, p, k);
        at += k;
        p = tok_stream_push(s, ids[i], &k);
        if (!p || !valid_utf8((const unsigned char *)p, k))
            abort();
        memcpy(streamed + sat, p, k);
        sat += k;
    }
    const char *p = tok_stream_flush(s, &k);
    if (!p || !valid_utf8((const unsigned char *)p, k))
        abort();
    memcpy(streamed + sat, p, k);
    sat += k;
    if (at != want_len || memcmp(out, want, at) != 0)
        abort();
    /* The stream drops SentencePiece's space only after BOS: none here. */
    if (valid_utf8(text, len) && (sat != want_len || memcmp(streamed, want, sat) != 0))
        abort();
    tok_stream_free(s);
    free(out);
    free(streamed);
}

/* lead: 1 when the vocabulary puts a space before the text (SentencePiece). */
static void check(const tokenizer *t, int lead, const uint8_t *data, size_t size)
{
    char err[256];
    int *ids;
    int n = tok_tokenize(t, (const char *)data, size, 0, &ids, err, sizeof err);
    if (n < 0 || (size_t)n > tok_max_tokens(size))
        abort();
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= tok_vocab_size(t))
            abort();
    size_t space = lead && size > 0;
    uint8_t *want = malloc(size + 1);
    if (!want)
        abort();
    want[0] = ' ';
    memcpy(want + space, data, size);
    decode_check(t, ids, n, want, size + space, data, size);
    free(want);
    free(ids);
    n = tok_tokenize(t, (const char *)data, size, TOK_ADD_BOS | TOK_PARSE_SPECIAL, &ids, err,
                     sizeof err);
    if (n < 1)
        abort();
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tokenizer *llama2c, *gpt2;
    if (!llama2c) {
        llama2c = load(NULL);
        gpt2 = load(GPT2_VOCAB);
    }
    check(llama2c, 1, data, size);
    check(gpt2, 0, data, size);
    return 0;
}
