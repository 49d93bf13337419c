/* tokenizer.c: llama2.c's tokenizer (see tokenizer.h), encode and decode
 * as in run.c so that ids match the reference model's. */
#include "tokenizer.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char embedded_tokenizer_start[];
extern const unsigned char embedded_tokenizer_end[];

/* Byte fallback: raw byte b is token b + 3 (after <unk>, <s>, </s>). */
#define BYTE_TOKEN_BASE 3
#define MIN_VOCAB (BYTE_TOKEN_BASE + 256)
#define MAX_VOCAB (1 << 22)
#define MAX_TOKEN_LENGTH 4096

typedef struct token_index {
    const char *str;
    int id;
} token_index;

struct tokenizer {
    int vocab_size;
    int max_token_length;
    char **vocab; /* NUL-terminated pieces, pointing into text */
    char *text;   /* every piece, back to back */
    float *scores;
    token_index *sorted;            /* vocab sorted by string, for lookups */
    unsigned char byte_pieces[512]; /* "b\0" for every byte b */
};

void tok_free(tokenizer *t)
{
    if (!t)
        return;
    free(t->vocab);
    free(t->text);
    free(t->scores);
    free(t->sorted);
    free(t);
}

static int compare_tokens(const void *a, const void *b)
{
    return strcmp(((const token_index *)a)->str, ((const token_index *)b)->str);
}

/* Counts the tokens and checks every record before anything is kept. */
static int scan(const unsigned char *buf, size_t size, const char *what, int *max_len, int *count,
                size_t *text_bytes, char *err, size_t errlen)
{
    int32_t m;
    if (size < sizeof m) {
        snprintf(err, errlen, "%s: file is %zu bytes, expected at least 4 for max_token_length",
                 what, size);
        return -1;
    }
    memcpy(&m, buf, sizeof m);
    if (m < 1 || m > MAX_TOKEN_LENGTH) {
        snprintf(err, errlen, "%s: max_token_length=%d, expected 1..%d", what, (int)m,
                 MAX_TOKEN_LENGTH);
        return -1;
    }
    size_t off = sizeof m, text = 0;
    int n = 0;
    while (off < size) {
        int32_t len;
        if (size - off < 8) {
            snprintf(err, errlen,
                     "%s: truncated in token %d (score and length need 8 bytes, %zu left)", what, n,
                     size - off);
            return -1;
        }
        memcpy(&len, buf + off + 4, sizeof len);
        if (len < 0 || len > m) {
            snprintf(err, errlen, "%s: token %d has length %d, expected 0..%d (max_token_length)",
                     what, n, (int)len, (int)m);
            return -1;
        }
        if (size - off - 8 < (size_t)len) {
            snprintf(err, errlen, "%s: truncated in token %d (%d bytes announced, %zu left)", what,
                     n, (int)len, size - off - 8);
            return -1;
        }
        off += 8 + (size_t)len;
        text += (size_t)len + 1;
        if (++n > MAX_VOCAB) {
            snprintf(err, errlen, "%s: more than %d tokens", what, MAX_VOCAB);
            return -1;
        }
    }
    if (n < MIN_VOCAB) {
        snprintf(err, errlen, "%s: %d tokens, expected at least %d (3 specials and 256 bytes)",
                 what, n, MIN_VOCAB);
        return -1;
    }
    *max_len = m;
    *count = n;
    *text_bytes = text;
    return 0;
}

static int parse(tokenizer *t, const unsigned char *buf, size_t size, const char *what, char *err,
                 size_t errlen)
{
    size_t text_bytes;
    if (scan(buf, size, what, &t->max_token_length, &t->vocab_size, &text_bytes, err, errlen) != 0)
        return -1;
    int n = t->vocab_size;
    t->vocab = malloc(n * sizeof *t->vocab);
    t->text = malloc(text_bytes);
    t->scores = malloc(n * sizeof *t->scores);
    t->sorted = malloc(n * sizeof *t->sorted);
    if (!t->vocab || !t->text || !t->scores || !t->sorted) {
        snprintf(err, errlen, "%s: out of memory for %d tokens", what, n);
        return -1;
    }
    size_t off = sizeof(int32_t);
    char *text = t->text;
    for (int i = 0; i < n; i++) {
        int32_t len;
        memcpy(&t->scores[i], buf + off, sizeof(float));
        memcpy(&len, buf + off + 4, sizeof len);
        memcpy(text, buf + off + 8, (size_t)len);
        text[len] = '\0';
        t->vocab[i] = text;
        t->sorted[i] = (token_index){.str = text, .id = i};
        text += len + 1;
        off += 8 + (size_t)len;
    }
    qsort(t->sorted, n, sizeof *t->sorted, compare_tokens);
    for (int b = 0; b < 256; b++) {
        t->byte_pieces[2 * b] = (unsigned char)b;
        t->byte_pieces[2 * b + 1] = '\0';
    }
    return 0;
}

static int read_file(const char *path, unsigned char **out, size_t *size, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc(len > 0 ? (size_t)len : 1);
    int ok = buf && fread(buf, 1, (size_t)len, f) == (size_t)len;
    fclose(f);
    if (!ok) {
        free(buf);
        snprintf(err, errlen, "%s: cannot read the file", path);
        return -1;
    }
    *out = buf;
    *size = (size_t)len;
    return 0;
}

int tok_load(tokenizer **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory for the tokenizer");
        return -1;
    }
    int rc;
    if (path) {
        unsigned char *buf;
        size_t size;
        rc = read_file(path, &buf, &size, err, errlen);
        if (rc == 0) {
            rc = parse(t, buf, size, path, err, errlen);
            free(buf);
        }
    } else {
        rc = parse(t, embedded_tokenizer_start,
                   (size_t)(embedded_tokenizer_end - embedded_tokenizer_start), "embedded tok512",
                   err, errlen);
    }
    if (rc != 0) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int tok_vocab_size(const tokenizer *t)
{
    return t->vocab_size;
}

size_t tok_max_tokens(size_t len)
{
    return len + 3; /* BOS, dummy prefix, at most one token per byte, EOS */
}

static int lookup(const tokenizer *t, const char *str)
{
    token_index key = {.str = str};
    const token_index *hit =
        bsearch(&key, t->sorted, t->vocab_size, sizeof *t->sorted, compare_tokens);
    return hit ? hit->id : -1;
}

/* Every UTF-8 codepoint becomes its token, or its bytes' tokens. */
static int encode_codepoints(const tokenizer *t, const char *text, char *buf, int *ids, int n)
{
    size_t len = 0;
    for (const char *c = text; *c != '\0'; c++) {
        /* A byte that is not a continuation byte starts a new codepoint. */
        if ((*c & 0xC0) != 0x80)
            len = 0;
        buf[len++] = *c;
        buf[len] = '\0';
        if ((c[1] & 0xC0) == 0x80 && len < 4)
            continue;
        int id = lookup(t, buf);
        if (id != -1) {
            ids[n++] = id;
        } else {
            for (size_t i = 0; i < len; i++)
                ids[n++] = (unsigned char)buf[i] + BYTE_TOKEN_BASE;
        }
        len = 0;
    }
    return n;
}

/* Merges the adjacent pair whose merge has the best score, until none
 * of the pairs is in the vocabulary. */
static int merge_pairs(const tokenizer *t, char *buf, size_t buflen, int *ids, int n)
{
    for (;;) {
        float best_score = -1e10f;
        int best_id = -1, best_idx = -1;
        for (int i = 0; i < n - 1; i++) {
            snprintf(buf, buflen, "%s%s", t->vocab[ids[i]], t->vocab[ids[i + 1]]);
            int id = lookup(t, buf);
            if (id != -1 && t->scores[id] > best_score) {
                best_score = t->scores[id];
                best_id = id;
                best_idx = i;
            }
        }
        if (best_idx == -1)
            return n;
        ids[best_idx] = best_id;
        memmove(&ids[best_idx + 1], &ids[best_idx + 2], (n - best_idx - 2) * sizeof *ids);
        n--;
    }
}

int tok_encode(const tokenizer *t, const char *text, int bos, int *ids)
{
    /* Two pieces and a NUL: what a merge candidate needs. */
    size_t buflen = (size_t)t->max_token_length * 2 + 3;
    char *buf = malloc(buflen);
    if (!buf)
        return -1;
    int n = 0;
    if (bos)
        ids[n++] = TOK_BOS;
    if (text[0] != '\0') {
        int space = lookup(t, " ");
        ids[n++] = space != -1 ? space : ' ' + BYTE_TOKEN_BASE;
    }
    n = encode_codepoints(t, text, buf, ids, n);
    n = merge_pairs(t, buf, buflen, ids, n);
    free(buf);
    return n;
}

const char *tok_decode(const tokenizer *t, int prev_token, int token, char *buf)
{
    if (token < 0 || token >= t->vocab_size) {
        snprintf(buf, TOK_DECODE_BUF, "<%d>", token);
        return buf;
    }
    const char *piece = t->vocab[token];
    /* SentencePiece strips the leading space of the first word. */
    if (prev_token == TOK_BOS && piece[0] == ' ')
        piece++;
    unsigned char byte;
    if (sscanf(piece, "<0x%02hhX>", &byte) == 1)
        piece = (const char *)t->byte_pieces + byte * 2;
    return piece;
}
