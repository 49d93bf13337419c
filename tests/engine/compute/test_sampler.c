/* test_sampler.c: greedy, seeded sampling and the top-p nucleus. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "engine/compute/sampler.h"

#define V 8

static sampler *make(float temperature, float top_p, uint64_t seed)
{
    char err[256];
    sampler *s;
    cr_assert_eq(sampler_create(&s, V, temperature, top_p, seed, err, sizeof err), 0, "%s", err);
    return s;
}

/* Logits whose softmax is exactly probs. */
static void logits_of(const float *probs, float *logits)
{
    for (int i = 0; i < V; i++)
        logits[i] = logf(probs[i]);
}

Test(sampler, greedy_is_argmax)
{
    sampler *s = make(0.0f, 0.9f, 1);
    float logits[V] = {0.1f, 2.0f, -1.0f, 5.0f, 4.9f, 0.0f, 5.0f, -3.0f};
    cr_assert_eq(sampler_sample(s, logits), 3); /* ties go to the lowest id */
    float neg[V] = {-9, -8, -7, -6, -5, -4, -3, -2};
    cr_assert_eq(sampler_sample(s, neg), 7);
    sampler_free(s);
}

/* A vocabulary's worth, not a multiple of the vector width: greedy picks
 * the token eval reports as top-1 (sampler_top1's scalar scan, the first
 * index strictly larger than all before it), with the maximum in the body
 * or the tail, tied, beside NaNs and signed zeros. */
Test(sampler, greedy_matches_top1_on_a_vocabulary)
{
    enum { N = 32003 };
    static float logits[N], copy[N];
    char err[256];
    sampler *s;
    cr_assert_eq(sampler_create(&s, N, 0.0f, 1.0f, 1, err, sizeof err), 0, "%s", err);
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < N; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            logits[i] = (float)(r >> 40) / (1 << 20) - 8.0f;
        }
        int at[] = {5, N - 1, N - 3, 40000 % N, 17};
        int hot = at[round % 5];
        switch (round % 6) {
        case 0:
            logits[hot] = 100.0f;
            break;
        case 1:
            logits[hot] = logits[hot / 2] = 100.0f;
            break; /* a tie: the lower id */
        case 2:
            logits[hot] = NAN;
            break; /* NaN never wins */
        case 3:
            logits[0] = NAN;
            break; /* unless it comes first */
        case 4:
            for (int i = 0; i < N; i++)
                logits[i] = i % 3 ? -0.0f : -1.0f; /* zeros of both signs */
            logits[hot] = 0.0f;
            break;
        default:
            logits[hot] = INFINITY;
            break;
        }
        memcpy(copy, logits, sizeof copy);
        int top1;
        double logprob;
        sampler_top1(copy, N, &top1, &logprob);
        cr_assert_eq(sampler_sample(s, logits), top1, "round %d", round);
    }
    sampler_free(s);
}

static void draw(uint64_t seed, float top_p, int *out, int n)
{
    static const float probs[V] = {0.3f, 0.2f, 0.15f, 0.1f, 0.1f, 0.1f, 0.04f, 0.01f};
    sampler *s = make(1.0f, top_p, seed);
    for (int i = 0; i < n; i++) {
        float logits[V];
        logits_of(probs, logits);
        out[i] = sampler_sample(s, logits);
    }
    sampler_free(s);
}

Test(sampler, same_seed_same_tokens)
{
    int a[200], b[200], c[200];
    draw(42, 0.0f, a, 200);
    draw(42, 0.0f, b, 200);
    draw(43, 0.0f, c, 200);
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
    cr_assert_neq(memcmp(a, c, sizeof a), 0);
    /* Sampling from the whole distribution reaches its tail too. */
    int seen[V] = {0};
    for (int i = 0; i < 200; i++)
        seen[a[i]] = 1;
    int distinct = 0;
    for (int i = 0; i < V; i++)
        distinct += seen[i];
    cr_assert(distinct >= 6, "only %d distinct tokens", distinct);
}

Test(sampler, top_p_keeps_the_nucleus)
{
    /* 0.3 + 0.2 + 0.15 = 0.65 first exceeds 0.6: the nucleus is {0, 1, 2}. */
    int out[2000];
    draw(7, 0.6f, out, 2000);
    int count[V] = {0};
    for (int i = 0; i < 2000; i++)
        count[out[i]]++;
    for (int i = 3; i < V; i++)
        cr_assert_eq(count[i], 0, "token %d sampled %d times outside the nucleus", i, count[i]);
    for (int i = 0; i < 3; i++)
        cr_assert(count[i] > 100, "token %d sampled only %d times", i, count[i]);
    cr_assert(count[0] > count[2], "probabilities not followed: %d vs %d", count[0], count[2]);
}

Test(sampler, tiny_top_p_on_flat_logits)
{
    sampler *s = make(1.0f, 1e-6f, 3);
    float logits[V] = {0};
    int t = sampler_sample(s, logits);
    cr_assert(t >= 0 && t < V);
    sampler_free(s);
}

Test(sampler, bad_parameters)
{
    char err[256];
    sampler *s;
    cr_assert_eq(sampler_create(&s, V, -1.0f, 0.9f, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "temperature"), "%s", err);
    cr_assert_eq(sampler_create(&s, V, NAN, 0.9f, 0, err, sizeof err), -1);
    cr_assert_eq(sampler_create(&s, V, 1.0f, 1.5f, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "top_p=1.5"), "%s", err);
    cr_assert_eq(sampler_create(&s, 0, 1.0f, 0.5f, 0, err, sizeof err), -1);
}

static sampler *make_with(float temperature, const sampler_opts *o)
{
    char err[256];
    sampler *s = make(temperature, 1.0f, 3);
    cr_assert_eq(sampler_configure(s, o, err, sizeof err), 0, "%s", err);
    return s;
}

/* Draws `rounds` tokens from the same logits; counts how often each came. */
static void histogram(sampler *s, const float *probs, int rounds, int *count)
{
    float logits[V];
    memset(count, 0, V * sizeof *count);
    for (int i = 0; i < rounds; i++) {
        logits_of(probs, logits);
        count[sampler_sample(s, logits)]++;
    }
}

Test(sampler, top_k_and_min_p_keep_only_the_likely)
{
    const float probs[V] = {0.30f, 0.25f, 0.20f, 0.10f, 0.06f, 0.05f, 0.03f, 0.01f};
    int count[V];
    sampler *s = make_with(1.0f, &(sampler_opts){.top_k = 2});
    histogram(s, probs, 2000, count);
    cr_expect(count[0] > 0 && count[1] > 0, "the two best are drawn");
    for (int i = 2; i < V; i++)
        cr_expect_eq(count[i], 0, "top_k 2 drew token %d", i);
    sampler_free(s);
    /* min_p 0.5: at least half the best's 0.30, so 0.25 and 0.20 too. */
    s = make_with(1.0f, &(sampler_opts){.min_p = 0.5f});
    histogram(s, probs, 2000, count);
    cr_expect(count[0] > 0 && count[1] > 0 && count[2] > 0);
    for (int i = 3; i < V; i++)
        cr_expect_eq(count[i], 0, "min_p 0.5 drew token %d", i);
    sampler_free(s);
}

Test(sampler, logit_bias_bans_and_forces)
{
    float logits[V] = {0.1f, 2.0f, -1.0f, 5.0f, 4.9f, 0.0f, 1.0f, -3.0f};
    sampler_bias ban = {3, -100.0f};
    sampler *s = make_with(0.0f, &(sampler_opts){.bias = &ban, .n_bias = 1});
    cr_expect_eq(sampler_sample(s, logits), 4, "greedy past the banned best");
    sampler_free(s);
    char err[256];
    s = make(0.0f, 1.0f, 1);
    sampler_bias bad = {V, 1.0f};
    cr_expect_eq(sampler_configure(s, &(sampler_opts){.bias = &bad, .n_bias = 1}, err, sizeof err),
                 -1, "a token outside the vocabulary");
    sampler_free(s);
}

/* Greedy over fixed logits repeats its token forever; a penalty of the
 * tokens drawn so far moves it on, each kind its own way. */
Test(sampler, penalties_count_what_was_drawn)
{
    const float base[V] = {3.0f, 2.9f, 2.8f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    float logits[V];
    sampler_opts kinds[] = {
        {.presence_penalty = 0.15f}, {.frequency_penalty = 0.15f}, {.repeat_penalty = 1.1f}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        sampler *s = make_with(0.0f, &kinds[k]);
        memcpy(logits, base, sizeof logits);
        cr_expect_eq(sampler_sample(s, logits), 0, "kind %zu: first the best", k);
        memcpy(logits, base, sizeof logits);
        cr_expect_eq(sampler_sample(s, logits), 1, "kind %zu: then, penalised, the next", k);
        sampler_free(s);
    }
    sampler *s = make(0.0f, 1.0f, 1);
    for (int i = 0; i < 3; i++) {
        memcpy(logits, base, sizeof logits);
        cr_expect_eq(sampler_sample(s, logits), 0, "no penalty: the best again");
    }
    sampler_free(s);
}
