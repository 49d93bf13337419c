/* logprobs.h: a choice's token logprobs, collected as the node's token
 * frames bring them and written in OpenAI's two shapes; no I/O.
 *
 * Chat (`logprobs: true`, `top_logprobs: N`):
 *   {"content":[{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}],
 *    "refusal":null}
 * Completions (legacy `logprobs: N`):
 *   {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{TOKEN: logprob}],"text_offset":[..]}
 * where each top_logprobs map holds the N most probable tokens and the
 * chosen one (so up to N + 1 entries, as OpenAI's and vLLM's), and
 * text_offset is the token's start in the completion's text, in
 * characters. A token's string is its piece in the vocabulary (invalid
 * UTF-8 of a byte-fallback piece as U+FFFD; `bytes` exact).
 */
#ifndef LOGPROBS_H
#define LOGPROBS_H

#include <stddef.h>

#include "engine/model/tokenizer.h"
#include "openai.h"

/* One generated token and its logprobs. */
typedef struct lp_token {
    size_t offset; /* where its text starts in the choice's text, in bytes */
    int token;
    proto_logprobs lp;
} lp_token;

typedef struct lp_list {
    lp_token *v;
    int n, cap;
    int sent; /* v[0..sent) are out (streaming) or kept (not) */
} lp_list;

/* Appends one token. Returns 0, or -1 when out of memory. */
int lp_add(lp_list *l, size_t offset, int token, const proto_logprobs *lp);
void lp_free(lp_list *l);

/* The logprobs object of v[from..to) in the kind's shape (text: the
 * choice's text, for text_offset), as JSON text (free()); NULL when out
 * of memory. t may be NULL (a node holding no tokenizer: empty strings). */
char *lp_render(oai_kind kind, const tokenizer *t, const lp_token *v, int from, int to,
                const char *text);

#endif
