/* tokenizer.h: llama2.c's byte-pair tokenizer (SentencePiece vocabulary).
 *
 * File format (llama2.c's tokenizer.bin): int32 max_token_length, then for
 * every token: float32 score, int32 length, that many bytes. The number of
 * tokens is whatever the file holds.
 *
 * Encoding and decoding follow llama2.c run.c exactly, so token ids match
 * the reference. Synthetic models (vocab 32000) use the embedded 512-token
 * vocabulary for text: ids at or past tok_vocab_size() are never produced
 * by tok_encode() and decode to "<id>".
 */
#ifndef TOKENIZER_H
#define TOKENIZER_H

#include <stddef.h>

typedef struct tokenizer tokenizer;

#define TOK_BOS 1
#define TOK_EOS 2

/* Room a caller gives tok_decode() for ids past the vocabulary. */
#define TOK_DECODE_BUF 16

/* path NULL: the tokenizer embedded with the default model. */
int tok_load(tokenizer **out, const char *path, char *err, size_t errlen);
void tok_free(tokenizer *t);

int tok_vocab_size(const tokenizer *t);

/* Most ids tok_encode() can produce for a text of `len` bytes. */
size_t tok_max_tokens(size_t len);

/* Encodes text into ids (room for tok_max_tokens(strlen(text))): BOS first
 * when bos is set, a dummy-prefix space before non-empty text, then greedy
 * merges by score. Returns the number of ids, or -1 on allocation failure. */
int tok_encode(const tokenizer *t, const char *text, int bos, int *ids);

/* The text of `token` following `prev_token`: the leading space is dropped
 * after BOS, and "<0xXX>" pieces decode to that raw byte. The result lives
 * in the tokenizer or in buf (TOK_DECODE_BUF bytes). */
const char *tok_decode(const tokenizer *t, int prev_token, int token, char *buf);

#endif
