/* tokenizer.h: text to token ids and back, for llama2.c tokenizer files
 * and GGUF vocabularies (SentencePiece-style `llama` and byte-level BPE
 * `gpt2` with llama.cpp's pre-tokenizers).
 *
 * Ids match llama.cpp's for GGUF files and llama2.c's run.c for its files
 * (including the embedded 512-token vocabulary, which synthetic models
 * with larger vocabularies use for text: ids at or past tok_vocab_size()
 * are never produced and decode to "<id>"). Encoding is O(n log n) in the
 * text's length.
 *
 * A tokenizer is read-only once loaded: threads may share one.
 */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stddef.h>

#include "gguf.h"

typedef struct tokenizer tokenizer;

/* BOS and EOS of llama2.c vocabularies (the embedded one among them);
 * tok_bos() and tok_eos() give any vocabulary's. */
#define TOK_BOS 1
#define TOK_EOS 2

/* Room a caller gives tok_decode() for ids past the vocabulary. */
#define TOK_DECODE_BUF 16

/* path NULL: the tokenizer embedded with the default model. A path to a
 * GGUF file loads that file's vocabulary, any other a llama2.c file. */
int tok_load(tokenizer **out, const char *path, char *err, size_t errlen);

/* The vocabulary of an open GGUF file (which may be closed afterwards). */
int tok_load_gguf(tokenizer **out, const gguf *g, char *err, size_t errlen);

void tok_free(tokenizer *t);

int tok_vocab_size(const tokenizer *t);

/* The vocabulary itself (vocab.h): texts, scores and types as loaded, for
 * writing them into a GGUF file. */
typedef struct vocab vocab;
const vocab *tok_vocab(const tokenizer *t);

/* BOS and EOS ids, -1 when the vocabulary has none; and whether its model
 * expects them around a prompt. */
int tok_bos(const tokenizer *t);
int tok_eos(const tokenizer *t);
/* The token that ends a generation: EOS, but BOS for llama2.c files,
 * whose models separate texts with it (run.c stops there). -1: none. */
int tok_end(const tokenizer *t);
int tok_add_bos(const tokenizer *t);
int tok_add_eos(const tokenizer *t);

enum {
    TOK_ADD_BOS = 1,       /* BOS first */
    TOK_ADD_EOS = 2,       /* EOS last */
    TOK_PARSE_SPECIAL = 4, /* control tokens' texts in the text become those tokens */
};

/* Encodes len bytes of text into *ids (allocated; the caller frees it) and
 * returns their number, or -1 (err says why). Without TOK_PARSE_SPECIAL,
 * text like "<s>" is plain text; with it, the longest control token texts
 * are found first. User-defined tokens are always matched as wholes, as in
 * llama.cpp. */
int tok_tokenize(const tokenizer *t, const char *text, size_t len, int flags, int **ids, char *err,
                 size_t errlen);

/* Most ids tok_encode() can produce for a text of `len` bytes. */
size_t tok_max_tokens(size_t len);

/* tok_tokenize() of a C string into ids (room for
 * tok_max_tokens(strlen(text))), BOS first when bos is set. Returns the
 * number of ids, or -1 (out of memory, or a vocabulary so incomplete that
 * the ids would not fit). */
int tok_encode(const tokenizer *t, const char *text, int bos, int *ids);

/* The bytes token `id` stands for (*len of them), or NULL when id is not in
 * the vocabulary. Control and unknown tokens give their text when
 * `special` is set, nothing otherwise. */
const char *tok_piece(const tokenizer *t, int id, int special, size_t *len);

/* The text of `token` following `prev_token`, NUL-terminated: a leading
 * space is dropped after BOS when the vocabulary adds one before text, and
 * control tokens show their text. The result lives in the tokenizer or in
 * buf (TOK_DECODE_BUF bytes). Ids past the vocabulary give "<id>". */
const char *tok_decode(const tokenizer *t, int prev_token, int token, char *buf);

/* Streaming decoder: fed ids one at a time, it returns only whole UTF-8
 * characters and holds a character split across tokens until it is
 * complete. Bytes that can never form a character come out as U+FFFD, so
 * what it returns is always valid UTF-8. Rules as tok_decode(), but
 * control tokens show their text only when `special` is set. */
typedef struct tok_stream tok_stream;

tok_stream *tok_stream_new(const tokenizer *t, int special);
void tok_stream_free(tok_stream *s);

/* The text ready after `token` (*len bytes, NUL-terminated, valid until
 * the next call), or NULL when out of memory. */
const char *tok_stream_push(tok_stream *s, int token, size_t *len);

/* At the end: whatever is held, a cut-off character as U+FFFD. */
const char *tok_stream_flush(tok_stream *s, size_t *len);

#endif
