/* kldiv.c: see kldiv.h. */
#include "kldiv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The argmax of a row: the lowest id on ties, as sampler_top1. */
static int argmax(const float *x, int n)
{
    int best = 0;
    for (int v = 1; v < n; v++)
        if (x[v] > x[best])
            best = v;
    return best;
}

/* With e_v = exp(ref_v - max ref), S_r = sum e_v and lr, lt the two
 * log-sum-exps, log p_ref(v) - log p_test(v) = (ref_v - test_v) - (lr - lt),
 * so KL = sum e_v (ref_v - test_v) / S_r - (lr - lt): one pass of two exps
 * per token (a third would redo the reference's). Identical rows make
 * every product and the difference of the log-sum-exps exactly 0. */
void kld_position(const float *ref, const float *test, int vocab, int next, kld_pos *out)
{
    int top_ref = argmax(ref, vocab), top_test = argmax(test, vocab);
    double mr = ref[top_ref], mt = test[top_test];
    double sr = 0.0, st = 0.0, d = 0.0;
    for (int v = 0; v < vocab; v++) {
        double e = exp((double)ref[v] - mr);
        sr += e;
        d += e * ((double)ref[v] - (double)test[v]);
        st += exp((double)test[v] - mt);
    }
    double lr = mr + log(sr), lt = mt + log(st);
    /* Rounding may leave a hair below 0 for rows that differ by a hair. */
    double kl = d / sr - (lr - lt);
    out->kl = kl > 0.0 ? kl : 0.0;
    out->agree = top_ref == top_test;
    out->nll_ref = lr - (double)ref[next];
    out->nll_test = lt - (double)test[next];
}

int kld_plan_make(kld_plan *p, int n, int ctx, int score_from, int bucket, int max_ctx, int bos,
                  char *err, size_t errlen)
{
    *p = (kld_plan){.bucket = bucket, .bos = -1};
    if (ctx > 0) {
        p->windows = n / ctx;
        p->len = ctx;
        p->bos = bos;
        if (p->windows == 0) {
            snprintf(err, errlen,
                     "the text holds %d tokens, not one whole window of ctx %d: give a longer "
                     "text or a smaller ctx",
                     n, ctx);
            return -1;
        }
    } else {
        p->windows = 1;
        p->len = max_ctx > 0 && n > max_ctx ? max_ctx : n;
    }
    p->score_from = score_from >= 0 ? score_from : ctx > 0 ? ctx / 2 : 0;
    if (p->score_from >= p->len - 1) {
        snprintf(err, errlen,
                 "score_from %d leaves no position to score in a window of %d tokens (the last "
                 "has no next token)",
                 p->score_from, p->len);
        return -1;
    }
    return 0;
}

int kld_token(const kld_plan *p, const int *ids, int w, int i)
{
    if (i == 0 && p->bos >= 0)
        return p->bos;
    return ids[(size_t)w * (size_t)p->len + (size_t)i];
}

int kld_scored(const kld_plan *p, int i)
{
    return i >= p->score_from && i < p->len - 1;
}

int kld_buckets(const kld_plan *p)
{
    return (p->len + p->bucket - 1) / p->bucket;
}

int kld_positions(const kld_plan *p)
{
    return p->windows * (p->len - 1 - p->score_from);
}

struct kld_acc {
    int n, cap;
    int *depth;
    kld_pos *pos;
};

int kld_acc_create(kld_acc **out, int capacity, char *err, size_t errlen)
{
    kld_acc *a = calloc(1, sizeof *a);
    size_t cap = capacity > 0 ? (size_t)capacity : 1;
    if (a) {
        a->depth = malloc(cap * sizeof *a->depth);
        a->pos = malloc(cap * sizeof *a->pos);
    }
    if (!a || !a->depth || !a->pos) {
        kld_acc_free(a);
        *out = NULL;
        snprintf(err, errlen, "out of memory for the figures of %d positions", capacity);
        return -1;
    }
    a->cap = (int)cap;
    *out = a;
    return 0;
}

void kld_acc_free(kld_acc *a)
{
    if (!a)
        return;
    free(a->depth);
    free(a->pos);
    free(a);
}

void kld_acc_add(kld_acc *a, int depth, const kld_pos *p)
{
    /* The capacity is the plan's count of scored positions: never passed. */
    if (a->n == a->cap)
        return;
    a->depth[a->n] = depth;
    a->pos[a->n++] = *p;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* exp(mean) and llama-perplexity's uncertainty of it. */
static void ppl(double sum, double sum2, int n, double *out, double *err)
{
    double mean = sum / n, var = sum2 / n - mean * mean;
    *out = exp(mean);
    *err = n > 1 && var > 0.0 ? *out * sqrt(var / (n - 1)) : 0.0;
}

int kld_acc_figures(const kld_acc *a, int from, int to, kld_figures *out, char *err, size_t errlen)
{
    *out = (kld_figures){0};
    int n = 0;
    for (int i = 0; i < a->n; i++)
        n += a->depth[i] >= from && a->depth[i] < to;
    if (n == 0)
        return 0;
    double *kl = malloc((size_t)n * sizeof *kl);
    if (!kl) {
        snprintf(err, errlen, "out of memory sorting the KL of %d positions", n);
        return -1;
    }
    double sum = 0.0, nr = 0.0, nr2 = 0.0, nt = 0.0, nt2 = 0.0;
    int agree = 0, k = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->depth[i] < from || a->depth[i] >= to)
            continue;
        const kld_pos *p = &a->pos[i];
        kl[k++] = p->kl;
        sum += p->kl;
        agree += p->agree;
        nr += p->nll_ref;
        nr2 += p->nll_ref * p->nll_ref;
        nt += p->nll_test;
        nt2 += p->nll_test * p->nll_test;
    }
    qsort(kl, (size_t)n, sizeof *kl, cmp_double);
    /* Nearest rank: the smallest value with at least 99% of them at or
     * below it. */
    int rank = (int)(((long long)n * 99 + 99) / 100);
    out->positions = n;
    out->kl_mean = sum / n;
    out->kl_p99 = kl[rank - 1];
    out->kl_max = kl[n - 1];
    out->top1 = (double)agree / n;
    ppl(nr, nr2, n, &out->ppl_ref, &out->ppl_ref_err);
    ppl(nt, nt2, n, &out->ppl_test, &out->ppl_test_err);
    free(kl);
    return 0;
}
