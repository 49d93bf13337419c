/* eng_topk.h: the next-token top-k of one position, asked of an engine's
 * OpenAI completions endpoint and read from its answer, for stress
 * quality's top-k estimate on engines other than inferd's control socket.
 *
 * The request scores a prefix given as token ids: `max_tokens` 1,
 * greedy, `logprobs` k (legacy completions; llama-server reads it as its
 * `n_probs`). None of the engines scores the prompt itself in a way all
 * share (llama-server refuses `echo`, inferd has no `echo`, vLLM's
 * `prompt_logprobs` is its own), so one request per position is the one
 * shape every engine answers.
 *
 * Two shapes of the answer's choices[0].logprobs are read:
 *   OpenAI's legacy completions (inferd, vLLM): `top_logprobs[0]`, an
 *     object {TOKEN: logprob};
 *   llama-server's: `content[0].top_logprobs`, an array of
 *     {"id", "token", "bytes", "logprob"}.
 * Tokens are told apart by their text (the legacy shape has no ids).
 */
#ifndef ENG_TOPK_H
#define ENG_TOPK_H

#include <stddef.h>

#include "engine.h"

#define ENG_TOPK_K 20     /* the k asked: inferd's and vLLM's default limit */
#define ENG_TOPK_MAX 21   /* kept of an answer: k and the chosen token the legacy map adds */
#define ENG_TOPK_PIECE 48 /* a token's text kept, with its NUL (longer ones are cut) */

typedef struct eng_topk {
    int n; /* entries, most probable first */
    char piece[ENG_TOPK_MAX][ENG_TOPK_PIECE];
    double logprob[ENG_TOPK_MAX];
} eng_topk;

/* The request body (a new string, free()) scoring the prefix tokens[0..n)
 * of model with the top k; NULL when out of memory. */
char *eng_topk_body(const char *model, const int *tokens, int n, int k);

/* The top-k of the answer's first generated token into out: 0. 1 (out->n
 * 0) when the engine withheld them, `logprobs` null beside a choice's
 * text: llama-server does for a token ending inside a UTF-8 character (it
 * holds such a token's text back, and its probabilities with it). -1 with
 * why (not JSON, no logprobs, no alternatives, a logprob that is not a
 * number or is above 0). */
int eng_topk_read(const char *body, size_t len, eng_topk *out, char *why, size_t whylen);

#endif
