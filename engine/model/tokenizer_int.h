/* tokenizer_int.h: the parts tokenizer.c puts together (not for other callers).
 *
 * spm_*: SentencePiece-style BPE (GGUF `llama` and llama2.c files): merges
 * by the score of the merged token, raw bytes of what no token covers fall
 * back to byte tokens. bpe_*: byte-level BPE (GGUF `gpt2`): bytes spelled
 * as GPT-2's printable characters, cut by the pre-tokenizer, merged by
 * rank.
 */
#ifndef TOKENIZER_INT_H
#define TOKENIZER_INT_H

#include <stddef.h>
#include <stdlib.h>

#include "merge.h"
#include "tokenizer.h"
#include "vocab.h"

/* Whether normal token `token` after prev_token loses a leading space:
 * the one SentencePiece put before the first word, after BOS. */
int tok_drops_space(const tokenizer *t, int token, int prev_token);

/* The ids of one call, grown as needed. */
typedef struct tok_ids {
    int *v;
    size_t n, cap;
} tok_ids;

/* 0, or -1 when out of memory. Inline: the encoders and tokenizer.c,
 * which calls them, all push ids. */
static inline int tok_ids_push(tok_ids *o, int id)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        int *v = realloc(o->v, cap * sizeof *v);
        if (!v)
            return -1;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = id;
    return 0;
}

/* Encodes text[0..len) (len >= 1), preceded by a space when `prefix`. */
int spm_encode(const vocab *v, merger *m, const char *text, size_t len, int prefix, tok_ids *out);

/* The text of normal token `id` with its space marks as spaces, into buf
 * (room for its text's length); returns the length. */
size_t spm_piece(const vocab *v, int id, char *buf);

typedef struct bpe bpe;

int bpe_new(bpe **out, const vocab *v, char *err, size_t errlen);
void bpe_free(bpe *b);

/* Encodes text[0..len). 0, or -1 (err says why). */
int bpe_encode(const bpe *b, merger *m, const char *text, size_t len, tok_ids *out, char *err,
               size_t errlen);

/* The bytes normal token `id` spells, into buf (room for its text's
 * length); returns the length. */
size_t bpe_piece(const vocab *v, int id, char *buf);

#endif
