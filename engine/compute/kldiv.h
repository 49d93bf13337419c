/* kldiv.h: what a KV precision costs in answers (PROTOCOL.md "quality"):
 * per position, the KL divergence of a test distribution from a reference
 * one, whether their most likely tokens agree, and each one's negative
 * log-likelihood of the next token; and the aggregates of a run (mean,
 * nearest-rank p99 and max of the KL, top-1 agreement, perplexities), over
 * all scored positions and by depth bucket within a window.
 *
 * Windows are llama-perplexity's: the token stream cut into consecutive
 * windows of ctx tokens (the last partial one dropped), each a fresh
 * context whose first token is BOS, positions from score_from on scored.
 *
 * Everything is computed in double from log-softmax, so that two
 * bit-identical rows give a KL of exactly 0. */
#ifndef KLDIV_H
#define KLDIV_H

#include <stddef.h>

/* One position's figures. */
typedef struct kld_pos {
    double kl;       /* KL(P_ref || P_test), nats */
    int agree;       /* argmax test == argmax ref (the lowest id on ties) */
    double nll_ref;  /* -log P_ref(next token) */
    double nll_test; /* -log P_test(next token) */
} kld_pos;

/* ref and test: one position's logits [vocab]; next: the token that
 * follows (0 <= next < vocab). */
void kld_position(const float *ref, const float *test, int vocab, int next, kld_pos *out);

/* How a token stream is cut into windows and which positions count. */
typedef struct kld_plan {
    int windows;    /* whole windows */
    int len;        /* tokens per window */
    int score_from; /* positions [score_from, len - 1) of each window are scored */
    int bucket;     /* depth-bucket width, positions */
    int bos;        /* the token each window starts with, or -1: the stream's own */
} kld_plan;

/* n tokens; ctx: window length, 0 for the whole stream as one window (at
 * most max_ctx tokens of it when max_ctx > 0); score_from: -1 for the
 * default (ctx / 2 with ctx, else 0); bucket >= 1; bos: the BOS id, which
 * starts every window when ctx is given. Returns -1 with a message when no
 * position would be scored. */
int kld_plan_make(kld_plan *p, int n, int ctx, int score_from, int bucket, int max_ctx, int bos,
                  char *err, size_t errlen);
/* Token i of window w, the stream being ids[]. */
int kld_token(const kld_plan *p, const int *ids, int w, int i);
/* 1 when position i of a window is scored. */
int kld_scored(const kld_plan *p, int i);
/* Depth buckets of a window: ceil(len / bucket). */
int kld_buckets(const kld_plan *p);
/* Positions a whole run scores. */
int kld_positions(const kld_plan *p);

/* The aggregates of a set of scored positions; with positions 0 the rest
 * is 0. */
typedef struct kld_figures {
    int positions;
    double kl_mean, kl_p99, kl_max;
    double top1;                      /* share of positions that agree */
    double ppl_ref, ppl_test;         /* exp(mean nll) */
    double ppl_ref_err, ppl_test_err; /* llama-perplexity's +/-: ppl * stddev(nll) / sqrt(n - 1) */
} kld_figures;

/* A run's positions, kept (five numbers each) until it is summarized. */
typedef struct kld_acc kld_acc;

int kld_acc_create(kld_acc **out, int capacity, char *err, size_t errlen);
void kld_acc_free(kld_acc *a);
/* A scored position at depth (its position within its window). */
void kld_acc_add(kld_acc *a, int depth, const kld_pos *p);
/* The figures of the positions at depths [from, to). -1 when out of
 * memory for the percentile's sort. */
int kld_acc_figures(const kld_acc *a, int from, int to, kld_figures *out, char *err, size_t errlen);

#endif
