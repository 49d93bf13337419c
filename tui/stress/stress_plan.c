/* stress_plan.c: the parts of the stress runner that need no network: its
 * options and their checks, the growth schedule, Poisson arrivals,
 * percentiles, ETA and drift. Kept apart so the unit tests can pin them. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/protocol.h"
#include "engine/sys/kvbits.h"
#include "stress.h"

void stress_opts_init(stress_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = STORE_MODE_GROWTH;
    o->leg_mode = STORE_MODE_GROWTH;
    /* The defaults of `infertop stress`'s flags, for the Stress view too. */
    o->from = (int64_t)opt_default_int(OPT_FROM);
    o->factor = opt_default_num(OPT_FACTOR);
    o->gen = (int)opt_default_int(OPT_GEN);
    o->prompt_tokens = (int)opt_default_int(OPT_PROMPT_TOKENS);
    o->requests = (int64_t)opt_default_int(OPT_REQUESTS);
    o->n_concurrency = 1;
    o->concurrency[0] = (int)opt_default_int(OPT_CONCURRENCY);
    o->timeout_s = opt_default_num(OPT_STRESS_TIMEOUT);
    o->seed = opt_default_int(OPT_STRESS_SEED);
    o->score_from = -1;
}

int64_t stress_growth_next(int64_t level, int64_t to, double factor, int64_t step)
{
    int64_t next = step > 0 ? level + step : (int64_t)floor((double)level * factor);
    /* A factor so close to 1 that rounding would stall still moves on. */
    if (next <= level)
        next = level + 1;
    return next < to ? next : to;
}

int64_t stress_prompt_for(int64_t ctx, int64_t target, int gen)
{
    int64_t pending = ctx > 0 && gen > 0 ? 1 : 0;
    int64_t fed = gen > 0 ? gen - 1 : 0;
    return target - ctx - pending - fed;
}

static int check_growth(const stress_opts *o, char *err, size_t errlen)
{
    if (o->from < 1 || o->from > PROTO_SYNTHETIC_MAX) {
        snprintf(err, errlen, "--from %lld: expected a context in 1..%d", (long long)o->from,
                 PROTO_SYNTHETIC_MAX);
        return -1;
    }
    if (o->to < o->from || o->to > PROTO_SYNTHETIC_MAX) {
        snprintf(err, errlen, "--to %lld: expected a context in --from (%lld)..%d",
                 (long long)o->to, (long long)o->from, PROTO_SYNTHETIC_MAX);
        return -1;
    }
    if ((o->factor > 0) == (o->step > 0)) {
        snprintf(err, errlen, "growth takes one of --factor and --step");
        return -1;
    }
    if (o->step == 0 && !(o->factor > 1.0 && o->factor <= 1000.0)) {
        snprintf(err, errlen, "--factor %g: expected a number above 1 and at most 1000", o->factor);
        return -1;
    }
    for (int64_t prev = 0, level = o->from;;
         prev = level, level = stress_growth_next(level, o->to, o->factor, o->step)) {
        if (stress_prompt_for(prev, level, o->gen) < 1) {
            snprintf(err, errlen,
                     "--gen %d: the context cannot grow from %lld to %lld with one request "
                     "generating %d tokens (each step must exceed --gen)",
                     o->gen, (long long)prev, (long long)level, o->gen);
            return -1;
        }
        if (level == o->to)
            return 0;
    }
}

/* kv_bits_valid as check_list's predicate over ints. */
static int valid_kv_bits(int v)
{
    return kv_bits_valid(v);
}

static int valid_prefill_step(int v)
{
    return v >= 1 && v <= PROTO_PREFILL_STEP_MAX;
}

static int valid_concurrency(int v)
{
    return v >= 1 && v <= OPT_CONCURRENCY_MAX;
}

static int check_list(const char *flag, const int *v, int n, int (*valid)(int),
                      const char *expected, char *err, size_t errlen)
{
    if (n < 1) {
        snprintf(err, errlen, "sweep needs %s (a comma-separated list)", flag);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!valid(v[i])) {
            snprintf(err, errlen, "%s: %d is not %s", flag, v[i], expected);
            return -1;
        }
    return 0;
}

static int check_fixed(const stress_opts *o, int need_requests, char *err, size_t errlen)
{
    if (need_requests && o->requests < 1) {
        snprintf(err, errlen, "--requests %lld: expected at least 1", (long long)o->requests);
        return -1;
    }
    if (o->prompt_tokens < 1 || o->prompt_tokens > PROTO_SYNTHETIC_MAX) {
        snprintf(err, errlen, "--prompt-tokens %d: expected 1..%d", o->prompt_tokens,
                 PROTO_SYNTHETIC_MAX);
        return -1;
    }
    if (o->mode != STORE_MODE_SWEEP && o->n_concurrency != 1) {
        snprintf(err, errlen, "--concurrency: %s takes one value (a list is for sweep legs)",
                 store_mode_name(o->mode));
        return -1;
    }
    char expected[96];
    snprintf(expected, sizeof expected,
             "a number of requests in 1..%d (the head runs max_seqs, queues 16 more)",
             OPT_CONCURRENCY_MAX);
    if (check_list("--concurrency", o->concurrency, o->n_concurrency, valid_concurrency, expected,
                   err, errlen))
        return -1;
    if (!(o->rate >= 0.0 && o->rate <= 1e6)) {
        snprintf(err, errlen, "--rate %g: expected requests per second in 0..1000000", o->rate);
        return -1;
    }
    return 0;
}

/* The kv_bits list of a sweep or a quality run. */
static int check_kv_bits(const stress_opts *o, char *err, size_t errlen)
{
    char choices[KV_BITS_CHOICES_MAX], bits[KV_BITS_CHOICES_MAX + 8];
    snprintf(bits, sizeof bits, "one of %s", kv_bits_choices(choices, sizeof choices, ", ", ", "));
    return check_list("--kv-bits", o->kv_bits, o->n_kv_bits, valid_kv_bits, bits, err, errlen);
}

/* What a quality measurement needs: a text, and windows and buckets of
 * at least a position to score (the engine checks them against the text). */
static int check_quality(const stress_opts *o, char *err, size_t errlen)
{
    if (!o->text || !o->text[0]) {
        snprintf(err, errlen, "quality: the text to score is empty (--text)");
        return -1;
    }
    if (o->ctx != 0 && o->ctx < 2) {
        snprintf(err, errlen, "--ctx %lld: expected a window of at least 2 tokens",
                 (long long)o->ctx);
        return -1;
    }
    if (o->bucket < 0) {
        snprintf(err, errlen, "--bucket %lld: expected at least 1 position", (long long)o->bucket);
        return -1;
    }
    if (o->score_from < -1 || (o->ctx > 0 && o->score_from >= o->ctx - 1)) {
        snprintf(err, errlen, "--score-from %lld: expected a position below --ctx - 1",
                 (long long)o->score_from);
        return -1;
    }
    return 0;
}

int stress_opts_check(const stress_opts *o, char *err, size_t errlen)
{
    if (o->gen < 0 || o->gen > PROTO_MAX_TOKENS_MAX) {
        snprintf(err, errlen, "--gen %d: expected 0..%d", o->gen, PROTO_MAX_TOKENS_MAX);
        return -1;
    }
    if (!(o->timeout_s > 0.0 && o->timeout_s <= 86400.0)) {
        snprintf(err, errlen, "--timeout %g: expected seconds in (0, 86400]", o->timeout_s);
        return -1;
    }
    switch (o->mode) {
    case STORE_MODE_GROWTH:
        return check_growth(o, err, errlen);
    case STORE_MODE_FIXED:
        return check_fixed(o, 1, err, errlen);
    case STORE_MODE_SOAK:
        if (!(o->duration_s > 0.0 && o->duration_s <= 30 * 86400.0)) {
            snprintf(err, errlen, "soak needs --duration (at most 30 days)");
            return -1;
        }
        return check_fixed(o, 0, err, errlen);
    case STORE_MODE_QUALITY:
        if (o->n_kv_bits < 1) {
            snprintf(err, errlen, "quality needs --kv-bits (a comma-separated list)");
            return -1;
        }
        return check_kv_bits(o, err, errlen) ? -1 : check_quality(o, err, errlen);
    case STORE_MODE_SWEEP: {
        if (check_kv_bits(o, err, errlen) ||
            check_list("--prefill-step", o->prefill_step, o->n_prefill_step, valid_prefill_step,
                       "a chunk size in 1..65536", err, errlen) ||
            (o->quality && check_quality(o, err, errlen)))
            return -1;
        if (o->leg_mode == STORE_MODE_GROWTH)
            return check_growth(o, err, errlen);
        if (o->leg_mode == STORE_MODE_FIXED)
            return check_fixed(o, 1, err, errlen);
        snprintf(err, errlen, "--leg: a sweep's legs are growth or fixed");
        return -1;
    }
    }
    snprintf(err, errlen, "unknown mode %d", (int)o->mode);
    return -1;
}

int stress_parse_list(const char *flag, const char *text, int *v, int *n, char *err, size_t errlen)
{
    const char *p = text;
    *n = 0;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        size_t len = strcspn(p, ",");
        if (end == p || (size_t)(end - p) != len || errno || x < INT_MIN || x > INT_MAX) {
            snprintf(err, errlen, "%s: \"%.*s\" in \"%s\" is not a whole number", flag, (int)len, p,
                     text);
            return -1;
        }
        if (*n == STRESS_LIST_MAX) {
            snprintf(err, errlen, "%s \"%s\": at most %d values", flag, text, STRESS_LIST_MAX);
            return -1;
        }
        v[(*n)++] = (int)x;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* Fixed legs alone have a concurrency axis. */
static int concurrency_axis(const stress_opts *o)
{
    return o->mode == STORE_MODE_SWEEP && o->leg_mode == STORE_MODE_FIXED ? o->n_concurrency : 1;
}

int stress_leg_count(const stress_opts *o)
{
    if (o->mode == STORE_MODE_QUALITY)
        return o->n_kv_bits;
    if (o->mode != STORE_MODE_SWEEP)
        return 1;
    return o->n_kv_bits * o->n_prefill_step * concurrency_axis(o);
}

void stress_leg_at(const stress_opts *o, int leg, store_leg_info *out)
{
    memset(out, 0, sizeof *out);
    int nc = concurrency_axis(o);
    store_mode legs = o->mode == STORE_MODE_SWEEP ? o->leg_mode : o->mode;
    out->concurrency = legs == STORE_MODE_GROWTH ? 1 : o->concurrency[leg % nc];
    if (o->mode == STORE_MODE_QUALITY) {
        out->concurrency = 1;
        out->kv_bits = o->kv_bits[leg];
    }
    if (o->mode != STORE_MODE_SWEEP)
        return;
    out->kv_bits = o->kv_bits[leg / (o->n_prefill_step * nc)];
    out->prefill_step = o->prefill_step[leg / nc % o->n_prefill_step];
}

/* ---- arrivals ---- */

/* splitmix64: tiny, seedable with any value, and good enough for gaps. */
void stress_rng_seed(stress_rng *g, uint64_t seed)
{
    g->s = seed;
}

/* In (0, 1). */
static double stress_rng_uniform(stress_rng *g)
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    /* 53 random bits, shifted off 0 so that log() below is finite. */
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

double stress_rng_gap(stress_rng *g, double rate)
{
    return -log(stress_rng_uniform(g)) / rate;
}

/* ---- statistics ---- */

double stress_eta(double elapsed_s, double done, double total)
{
    if (!(done > 0.0) || !(total > 0.0) || elapsed_s < 0.0)
        return -1.0;
    if (done >= total)
        return 0.0;
    return elapsed_s * (total - done) / done;
}

static double mean_of(const double *v, size_t from, size_t n)
{
    double s = 0.0;
    for (size_t i = from; i < from + n; i++)
        s += v[i];
    return s / (double)n;
}

void stress_drift_of(const double *ttft, const double *e2e, const double *decode, size_t n,
                     stress_drift *d)
{
    memset(d, 0, sizeof *d);
    if (n < 10)
        return;
    size_t k = n / 10;
    d->valid = 1;
    d->ttft_first = mean_of(ttft, 0, k);
    d->ttft_last = mean_of(ttft, n - k, k);
    d->e2e_first = mean_of(e2e, 0, k);
    d->e2e_last = mean_of(e2e, n - k, k);
    d->decode_first = mean_of(decode, 0, k);
    d->decode_last = mean_of(decode, n - k, k);
}
