/* sampler.c: greedy, temperature and top-p sampling (see sampler.h). */
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vec8.h"

typedef struct prob_index {
    float prob;
    int index;
} prob_index;

struct sampler {
    int vocab_size;
    float temperature;
    float top_p;
    uint64_t rng_state;
    prob_index *candidates; /* top-p scratch, [vocab_size] */
    sampler_opts o;         /* o.bias: the copy below */
    sampler_bias *bias;
    int *counts; /* [vocab_size] times each token was drawn; NULL: no penalty */
    int last[SAMPLER_REPEAT_LAST], n_drawn;
};

int sampler_create(sampler **out, int vocab_size, float temperature, float top_p, uint64_t seed,
                   char *err, size_t errlen)
{
    *out = NULL;
    if (vocab_size < 1) {
        snprintf(err, errlen, "sampler: vocab_size=%d, expected >= 1", vocab_size);
        return -1;
    }
    if (!isfinite(temperature) || temperature < 0.0f) {
        snprintf(err, errlen, "temperature=%g, expected a finite value >= 0", temperature);
        return -1;
    }
    if (!(top_p >= 0.0f && top_p <= 1.0f)) {
        snprintf(err, errlen, "top_p=%g, expected 0..1", top_p);
        return -1;
    }
    sampler *s = calloc(1, sizeof *s);
    if (s)
        s->candidates = malloc(vocab_size * sizeof *s->candidates);
    if (!s || !s->candidates) {
        free(s);
        snprintf(err, errlen, "out of memory for a sampler over %d tokens", vocab_size);
        return -1;
    }
    s->vocab_size = vocab_size;
    s->temperature = temperature;
    s->top_p = top_p;
    /* xorshift never leaves the all-zero state: seed 0 must not map to it. */
    s->rng_state = seed ^ 0x9e3779b97f4a7c15ull;
    if (s->rng_state == 0)
        s->rng_state = 1;
    *out = s;
    return 0;
}

void sampler_free(sampler *s)
{
    if (!s)
        return;
    free(s->candidates);
    free(s->bias);
    free(s->counts);
    free(s);
}

int sampler_configure(sampler *s, const sampler_opts *o, char *err, size_t errlen)
{
    if (o->top_k < 0 || !(o->min_p >= 0.0f && o->min_p <= 1.0f) || !isfinite(o->repeat_penalty) ||
        o->repeat_penalty < 0.0f || !isfinite(o->presence_penalty) ||
        !isfinite(o->frequency_penalty)) {
        snprintf(err, errlen, "top_k, min_p or a penalty out of range");
        return -1;
    }
    for (int i = 0; i < o->n_bias; i++) {
        if (o->bias[i].token < 0 || o->bias[i].token >= s->vocab_size ||
            !isfinite(o->bias[i].bias)) {
            snprintf(err, errlen, "logit_bias: token %d is not in the vocabulary (0..%d)",
                     o->bias[i].token, s->vocab_size - 1);
            return -1;
        }
    }
    int penalised = (o->repeat_penalty != 0.0f && o->repeat_penalty != 1.0f) ||
                    o->presence_penalty != 0.0f || o->frequency_penalty != 0.0f;
    if ((o->n_bias && !(s->bias = malloc((size_t)o->n_bias * sizeof *s->bias))) ||
        (penalised && !(s->counts = calloc((size_t)s->vocab_size, sizeof *s->counts)))) {
        snprintf(err, errlen, "out of memory for the sampler's options");
        return -1;
    }
    if (o->n_bias)
        memcpy(s->bias, o->bias, (size_t)o->n_bias * sizeof *s->bias);
    s->o = *o;
    s->o.bias = s->bias;
    return 0;
}

/* logit_bias, then the penalties of the tokens drawn so far. */
static void adjust(sampler *s, float *logits)
{
    for (int i = 0; i < s->o.n_bias; i++)
        logits[s->bias[i].token] += s->bias[i].bias;
    if (!s->counts)
        return;
    int n = s->n_drawn < SAMPLER_REPEAT_LAST ? s->n_drawn : SAMPLER_REPEAT_LAST;
    float rp = s->o.repeat_penalty;
    for (int i = 0; rp != 0.0f && rp != 1.0f && i < n; i++) {
        int t = s->last[i], seen = 0;
        for (int k = 0; k < i && !seen; k++) /* each token once, as llama.cpp */
            seen = s->last[k] == t;
        if (!seen)
            logits[t] = logits[t] > 0.0f ? logits[t] / rp : logits[t] * rp;
    }
    if (s->o.presence_penalty == 0.0f && s->o.frequency_penalty == 0.0f)
        return;
    for (int t = 0; t < s->vocab_size; t++)
        if (s->counts[t])
            logits[t] -= (float)s->counts[t] * s->o.frequency_penalty + s->o.presence_penalty;
}

static int drawn(sampler *s, int token)
{
    if (s->counts) {
        s->counts[token]++;
        s->last[s->n_drawn % SAMPLER_REPEAT_LAST] = token;
        s->n_drawn++;
    }
    return token;
}

static uint32_t random_u32(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (uint32_t)((*state * 0x2545F4914F6CDD1Dull) >> 32);
}

static float random_f32(uint64_t *state) /* [0, 1) */
{
    return (float)(random_u32(state) >> 8) / 16777216.0f;
}

/* The first index of the largest value, as a scan keeping the first
 * strictly larger one finds it (a NaN never wins, unless it comes first):
 * the largest in vector lanes, then the first index holding it. The scan
 * was 3% of a 16-sequence decode step of synth:110m, on the head's
 * thread alone (a vocabulary of 32000 a sequence). */
static int sample_argmax(const float *p, int n)
{
    if (isnan(p[0]))
        return 0;
    /* Four running maxima, so that each max waits on the one four back. */
    f32x8 lanes[4] = {vec8_splat(p[0]), vec8_splat(p[0]), vec8_splat(p[0]), vec8_splat(p[0])};
    int i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++)
            lanes[k] = vec8_max(vec8_load(p + i + 8 * k), lanes[k]);
    float max = p[0];
    for (int k = 0; k < 4; k++)
        for (int l = 0; l < 8; l++)
            max = lanes[k][l] > max ? lanes[k][l] : max;
    for (; i < n; i++)
        max = p[i] > max ? p[i] : max;
    /* The first 8 values holding it, then the one among them. */
    f32x8 m = vec8_splat(max);
    for (i = 0; i + 8 <= n; i += 8) {
        i32x8 hit = vec8_load(p + i) == m;
        if (hit[0] | hit[1] | hit[2] | hit[3] | hit[4] | hit[5] | hit[6] | hit[7])
            break;
    }
    while (p[i] != max)
        i++;
    return i;
}

static void softmax(float *x, int n)
{
    float max = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > max)
            max = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; i++)
        x[i] /= sum;
}

/* Draws from the whole distribution; coin in [0, 1). */
static int sample_mult(const float *p, int n, float coin)
{
    float cdf = 0.0f;
    for (int i = 0; i < n; i++) {
        cdf += p[i];
        if (coin < cdf)
            return i;
    }
    return n - 1; /* rounding left the cdf short of the coin */
}

static int compare_desc(const void *a, const void *b)
{
    float pa = ((const prob_index *)a)->prob, pb = ((const prob_index *)b)->prob;
    return (pa < pb) - (pa > pb);
}

/* Draws from the smallest set of most probable tokens whose probability
 * exceeds top_p. Tokens below (1 - top_p) / (n - 1) cannot be in it, so
 * they are dropped before sorting. */
static int sample_topp(const float *p, int n, float top_p, prob_index *cand, float coin)
{
    int n0 = 0;
    const float cutoff = (1.0f - top_p) / (float)(n > 1 ? n - 1 : 1);
    for (int i = 0; i < n; i++)
        if (p[i] >= cutoff)
            cand[n0++] = (prob_index){.prob = p[i], .index = i};
    if (n0 == 0) /* a tiny top_p over a flat distribution: the best token */
        return sample_argmax(p, n);
    qsort(cand, n0, sizeof *cand, compare_desc);
    float cumulative = 0.0f;
    int last = n0 - 1;
    for (int i = 0; i < n0; i++) {
        cumulative += cand[i].prob;
        if (cumulative > top_p) {
            last = i;
            break;
        }
    }
    float r = coin * cumulative;
    float cdf = 0.0f;
    for (int i = 0; i <= last; i++) {
        cdf += cand[i].prob;
        if (r < cdf)
            return cand[i].index;
    }
    return cand[last].index;
}

/* top_k and min_p, then the top_p nucleus of what they keep. */
static int sample_filtered(const sampler *s, const float *p, int n, float coin)
{
    prob_index *cand = s->candidates;
    float pmax = 0.0f;
    for (int i = 0; i < n; i++)
        pmax = p[i] > pmax ? p[i] : pmax;
    const float floor = s->o.min_p * pmax;
    int n0 = 0;
    for (int i = 0; i < n; i++)
        if (p[i] >= floor && p[i] > 0.0f)
            cand[n0++] = (prob_index){.prob = p[i], .index = i};
    if (n0 == 0)
        return sample_argmax(p, n);
    qsort(cand, n0, sizeof *cand, compare_desc);
    if (s->o.top_k > 0 && n0 > s->o.top_k)
        n0 = s->o.top_k;
    float mass = 0.0f;
    for (int i = 0; i < n0; i++)
        mass += cand[i].prob;
    float top_p = s->top_p > 0.0f && s->top_p < 1.0f ? s->top_p : 1.0f;
    float cumulative = 0.0f;
    int last = n0 - 1;
    for (int i = 0; i < n0; i++) {
        cumulative += cand[i].prob;
        if (top_p < 1.0f && cumulative > top_p * mass) {
            last = i;
            break;
        }
    }
    float r = coin * cumulative, cdf = 0.0f;
    for (int i = 0; i < last; i++) {
        cdf += cand[i].prob;
        if (r < cdf)
            return cand[i].index;
    }
    return cand[last].index;
}

int sampler_sample(sampler *s, float *logits)
{
    int n = s->vocab_size;
    adjust(s, logits);
    if (s->temperature == 0.0f)
        return drawn(s, sample_argmax(logits, n));
    for (int i = 0; i < n; i++)
        logits[i] /= s->temperature;
    softmax(logits, n);
    float coin = random_f32(&s->rng_state);
    if (s->o.top_k > 0 || s->o.min_p > 0.0f)
        return drawn(s, sample_filtered(s, logits, n, coin));
    if (s->top_p <= 0.0f || s->top_p >= 1.0f)
        return drawn(s, sample_mult(logits, n, coin));
    return drawn(s, sample_topp(logits, n, s->top_p, s->candidates, coin));
}

/* The most likely token (the lowest id on ties), the largest logit and
 * the log of the softmax's denominator over it, summed in double: a
 * token's log-probability is then its logit - max - log_sum. */
static void log_norm(const float *logits, int vocab, int *best, double *max, double *log_sum)
{
    int b = 0;
    double m = logits[0];
    for (int v = 1; v < vocab; v++)
        if (logits[v] > m)
            m = logits[b = v];
    double sum = 0.0;
    for (int v = 0; v < vocab; v++)
        sum += exp((double)logits[v] - m);
    *best = b;
    *max = m;
    *log_sum = log(sum);
}

void sampler_top1(const float *logits, int vocab, int *id, double *logprob)
{
    double max, log_sum;
    log_norm(logits, vocab, id, &max, &log_sum);
    *logprob = -log_sum;
}

int sampler_logprobs(const float *logits, int vocab, int chosen, int k, int *top, double *top_lp,
                     double *chosen_lp)
{
    int best;
    double max, log_sum;
    log_norm(logits, vocab, &best, &max, &log_sum);
    k = k < vocab ? k : vocab;
    /* The k largest by insertion into a sorted list: a logit enters only
     * when it beats the list's last, so this is one pass for small k. A
     * later equal logit does not enter: the lowest id first on ties. */
    int n = 0;
    for (int v = 0; v < vocab && k > 0; v++) {
        if (n == k && !(logits[v] > logits[top[n - 1]]))
            continue;
        int i = n < k ? n++ : n - 1;
        while (i > 0 && logits[v] > logits[top[i - 1]]) {
            top[i] = top[i - 1];
            i--;
        }
        top[i] = v;
    }
    for (int i = 0; i < n; i++)
        top_lp[i] = (double)logits[top[i]] - max - log_sum;
    *chosen_lp = (double)logits[chosen] - max - log_sum;
    return n;
}
