/* vocab.h: a tokenizer's vocabulary: every token's text, score and type,
 * the special ids and flags, and for byte-level BPE the merge ranks.
 *
 * Two sources: a llama2.c tokenizer.bin (int32 max_token_length, then per
 * token float32 score, int32 length, bytes) and GGUF metadata
 * (`tokenizer.ggml.*`, as llama.cpp writes and reads it). Defaults for
 * keys a GGUF file leaves out are llama.cpp's.
 *
 * Lookups by text and by merge pair are hash probes: O(1) on average, so
 * tokenizing stays linear in the merges it does.
 */
#ifndef VOCAB_H
#define VOCAB_H

#include <stddef.h>

#include "gguf.h"

typedef struct vocab vocab;

/* The two tokenizer families: SentencePiece-style BPE by score (GGUF
 * `llama`, and llama2.c files) and byte-level BPE by merge rank (`gpt2`). */
typedef enum vocab_kind { VOCAB_SPM, VOCAB_BPE } vocab_kind;

/* Token types, GGUF's numbering (`tokenizer.ggml.token_type`). */
enum {
    VOCAB_NORMAL = 1,
    VOCAB_UNKNOWN = 2,
    VOCAB_CONTROL = 3,
    VOCAB_USER = 4,
    VOCAB_UNUSED = 5,
    VOCAB_BYTE = 6,
};

/* What the tokenizer needs besides the tokens. Ids are -1 when absent. */
typedef struct vocab_info {
    vocab_kind kind;
    int n_tokens;
    int bos, eos, unk, pad;
    int add_bos, add_eos;
    int add_space_prefix; /* SPM: a space before text that starts a fragment */
    const char *space;    /* SPM: how token texts spell a space: U+2581, or " " in llama2.c files */
    char pre[32];         /* BPE: the pre-tokenizer's name (`tokenizer.ggml.pre`) */
} vocab_info;

/* A llama2.c tokenizer.bin held in memory; `what` names it in messages.
 * Its tokens 0, 1, 2 are <unk>, BOS and EOS, and raw byte b falls back to
 * token b + 3, as llama2.c's run.c has it. */
int vocab_load_llama2c(vocab **out, const unsigned char *buf, size_t size, const char *what,
                       char *err, size_t errlen);

/* The vocabulary of an open GGUF file (which may be closed afterwards). */
int vocab_load_gguf(vocab **out, const gguf *g, char *err, size_t errlen);

void vocab_free(vocab *v);

const vocab_info *vocab_get_info(const vocab *v);

/* Token `id`'s text (not NUL-terminated in general) and its length. */
const char *vocab_text(const vocab *v, int id, size_t *len);
float vocab_score(const vocab *v, int id);
int vocab_type(const vocab *v, int id);

/* The id whose text is s[0..len), or -1. */
int vocab_find(const vocab *v, const char *s, size_t len);

/* The byte a "<0xNN>" token stands for, or -1 for other tokens. */
int vocab_byte_value(const vocab *v, int id);

/* SPM byte fallback: the token for raw byte b, or -1. */
int vocab_byte_token(const vocab *v, unsigned char b);

/* The rank of the merge (s[0..split), s[split..len)), or -1 when the two
 * do not merge. Lower ranks merge first. */
int vocab_merge_rank(const vocab *v, const char *s, size_t len, size_t split);

#endif
