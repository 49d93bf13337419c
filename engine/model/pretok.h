/* pretok.h: pre-tokenization for byte-level BPE: text is cut into pieces
 * by a list of regular expressions chosen by the vocabulary's
 * `tokenizer.ggml.pre`, and BPE then merges within each piece.
 *
 * As in llama.cpp, each expression in the list cuts every piece the
 * previous ones left: both its matches and the text between them become
 * pieces. The expressions are llama.cpp's, run by PCRE2 with Unicode
 * properties. Invalid UTF-8 never matches, so it lands in pieces of its own
 * and still round-trips.
 */
#ifndef PRETOK_H
#define PRETOK_H

#include <stddef.h>

typedef struct pretok pretok;

/* What a pre-tokenizer name implies besides its expressions, as llama.cpp
 * sets it. */
enum {
    PRETOK_IGNORE_MERGES = 1, /* a piece that is a token as a whole is that token */
    PRETOK_ADD_BOS = 2,       /* BOS by default */
};

/* The flags of pre-tokenizer `name`, or -1 when it is not supported. */
int pretok_flags(const char *name);

int pretok_new(pretok **out, const char *name, char *err, size_t errlen);
void pretok_free(pretok *p);

typedef struct pretok_span {
    size_t off, len;
} pretok_span;

/* Cuts text[0..len) into *n pieces in order (*out: allocated, the caller
 * frees it). 0, or -1 when out of memory or on a match error (err says). */
int pretok_split(const pretok *p, const char *text, size_t len, pretok_span **out, size_t *n,
                 char *err, size_t errlen);

#endif
