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

/* The next token; logits [vocab_size] are overwritten (probabilities). */
int sampler_sample(sampler *s, float *logits);

/* The most likely token of one position's logits [vocab] (the lowest id on
 * ties, as greedy sampling picks) and its log-probability under the
 * softmax, summed in double: what `inferd eval` reports per position, on
 * the node and locally alike, so that both print the same digits. */
void sampler_top1(const float *logits, int vocab, int *id, double *logprob);

#endif
