/* sampler.h: picks the next token from logits, as llama2.c run.c does.
 *
 * temperature 0 is greedy (argmax, the lowest id on ties). Otherwise the
 * logits are divided by the temperature and softmaxed, then a token is drawn
 * from the whole distribution (top_p <= 0 or >= 1) or from the nucleus: the
 * most probable tokens whose probabilities first sum past top_p. The random
 * numbers come from a xorshift generator seeded by `seed`, so the same seed
 * gives the same tokens.
 */
#ifndef SAMPLER_H
#define SAMPLER_H

#include <stddef.h>
#include <stdint.h>

typedef struct sampler sampler;

/* temperature must be finite and >= 0, top_p within [0, 1]. */
int sampler_create(sampler **out, int vocab_size, float temperature, float top_p, uint64_t seed,
                   char *err, size_t errlen);
void sampler_free(sampler *s);

/* What a request adds to temperature and top_p, with the semantics of
 * llama.cpp's server and OpenAI's API (engine/http/README.md); each at its
 * "off" value when zeroed but repeat_penalty (1 is off). The logits are
 * biased, then penalised by the tokens this sampler drew so far, then
 * (greedy: the largest of them) divided by the temperature and softmaxed;
 * the draw keeps the top_k most probable, those at least min_p times the
 * most probable, then the top_p nucleus of those (renormalised), as vLLM
 * orders them. */
#define SAMPLER_REPEAT_LAST 64 /* repeat_penalty's window: llama.cpp's repeat_last_n */
typedef struct sampler_bias {
    int token;
    float bias; /* added to the token's logit */
} sampler_bias;
typedef struct sampler_opts {
    int top_k;                /* 0: off */
    float min_p;              /* 0: off */
    float repeat_penalty;     /* 1 (or 0): off; a logit of a token among the last
                               * SAMPLER_REPEAT_LAST drawn is divided by it (times when < 0) */
    float presence_penalty;   /* subtracted once from the logit of any token drawn so far */
    float frequency_penalty;  /* subtracted per time a token was drawn so far */
    const sampler_bias *bias; /* copied */
    int n_bias;
} sampler_opts;

/* Sets the options above (before the first draw). Returns 0, or -1 with
 * err filled (a value out of range, a token outside the vocabulary, out
 * of memory). */
int sampler_configure(sampler *s, const sampler_opts *o, char *err, size_t errlen);

/* The next token; logits [vocab_size] are overwritten (probabilities). */
int sampler_sample(sampler *s, float *logits);

/* The most likely token of one position's logits [vocab] (the lowest id on
 * ties, as greedy sampling picks) and its log-probability under the
 * softmax, summed in double: what `inferd eval` reports per position, on
 * the node and locally alike, so that both print the same digits. */
void sampler_top1(const float *logits, int vocab, int *id, double *logprob);

/* What a request's logprobs report of one position's raw logits [vocab]
 * (before any bias, penalty or temperature: the model's distribution), in
 * the same double precision: the chosen token's log-probability and the
 * k most probable tokens' (most probable first, the lowest id on ties)
 * into top and top_lp [k]. Returns how many: min(k, vocab). */
int sampler_logprobs(const float *logits, int vocab, int chosen, int k, int *top, double *top_lp,
                     double *chosen_lp);

#endif
