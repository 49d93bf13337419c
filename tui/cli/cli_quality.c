/* cli_quality.c: a run's quality measurements as text and JSON, for
 * `infertop stress quality` (and sweep --quality) at the end of a run and
 * `infertop history show` / `compare` afterwards: a line per setting with
 * its speed beside it, and with --full a line per depth bucket. */
#include <math.h>
#include <stdio.h>

#include "cli.h"

/* KL is small (1e-4 nats is typical at 8 bits): significant digits. */
static void fmt_kl(double v, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%.4g", v);
    else
        snprintf(buf, len, "-");
}

/* The six figures a setting and a bucket both have, into c[0..5]:
 * KL mean, p99, max, top-1, the reference's and the setting's perplexity. */
static void fmt_figures(const double f[6], char (*c)[32])
{
    for (int i = 0; i < 3; i++)
        fmt_kl(f[i], c[i], 32);
    store_fmt_num(f[3], 4, c[3], 32);
    store_fmt_num(f[4], 3, c[4], 32);
    store_fmt_num(f[5], 3, c[5], 32);
}

static const store_leg_summary *leg_of(const store_summary *sum, int idx)
{
    for (size_t i = 0; sum && i < sum->n_legs; i++)
        if (sum->legs[i].idx == idx)
            return &sum->legs[i];
    return NULL;
}

/* One line per setting: its quality, and its decode tok/s p50 when the
 * leg measured speed too (a sweep's). */
static int print_settings(const store_quality_list *l, const store_summary *sum)
{
    static const char *const head[] = {"LEG",    "KV_BITS", "POSITIONS", "KL_MEAN", "KL_P99",
                                       "KL_MAX", "TOP1",    "PPL_REF",   "PPL",     "DEC_TPS"};
    cli_table *t = cli_table_new(10, head);
    int fail = !t;
    for (size_t i = 0; !fail && i < l->n; i++) {
        const store_quality *q = &l->q[i];
        const store_leg_summary *leg = leg_of(sum, q->leg);
        char c[10][32];
        snprintf(c[0], 32, "%d", q->leg);
        snprintf(c[1], 32, "%d", q->kv_bits);
        snprintf(c[2], 32, "%lld", (long long)q->positions);
        const double f[6] = {q->kl_mean, q->kl_p99, q->kl_max, q->top1, q->ppl_ref, q->ppl_test};
        fmt_figures(f, &c[3]);
        store_fmt_num(leg && leg->decode_tps.count ? leg->decode_tps.p50 : NAN, 1, c[9], 32);
        const char *row[] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]};
        fail = cli_table_add(t, row) != 0;
    }
    if (!fail)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return fail ? -1 : 0;
}

static int print_buckets(const store_quality_list *l)
{
    static const char *const head[] = {"LEG",       "KV_BITS", "FROM",   "TO",
                                       "POSITIONS", "KL_MEAN", "KL_P99", "KL_MAX",
                                       "TOP1",      "PPL_REF", "PPL"};
    cli_table *t = cli_table_new(11, head);
    int fail = !t;
    for (size_t i = 0; !fail && i < l->n; i++)
        for (size_t k = 0; !fail && k < l->q[i].n_buckets; k++) {
            const store_quality_bucket *b = &l->q[i].buckets[k];
            char c[11][32];
            snprintf(c[0], 32, "%d", l->q[i].leg);
            snprintf(c[1], 32, "%d", l->q[i].kv_bits);
            snprintf(c[2], 32, "%lld", (long long)b->from);
            snprintf(c[3], 32, "%lld", (long long)b->to);
            snprintf(c[4], 32, "%lld", (long long)b->positions);
            const double f[6] = {b->kl_mean, b->kl_p99,  b->kl_max,
                                 b->top1,    b->ppl_ref, b->ppl_test};
            fmt_figures(f, &c[5]);
            const char *row[] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]};
            fail = cli_table_add(t, row) != 0;
        }
    if (!fail)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return fail ? -1 : 0;
}

int cli_quality_print(const store_quality_list *l, const store_summary *sum, int full)
{
    if (l->n == 0)
        return 0;
    const store_quality *q = &l->q[0];
    char est[48] = "";
    if (q->topk > 0)
        store_fmt_estimate(q->topk, est, sizeof est);
    printf("\n%s%squality against kv_bits %d: text %s (sha256 %.12s...), window %lld, scored "
           "from %lld, %lld window%s\n",
           est, est[0] ? " of the " : "", q->ref_kv_bits, q->text_name, q->text_sha256,
           (long long)q->ctx, (long long)q->score_from, (long long)q->windows,
           q->windows == 1 ? "" : "s");
    if (print_settings(l, sum) != 0)
        return -1;
    if (q->topk > 0)
        printf("%s: from the engine's top %d logprobs at each position, both settings' "
               "distributions\nkept to the tokens both lists hold and one bucket for the rest "
               "(a lower bound of the full KL);\nno perplexity: the text's next token is not "
               "always among the top %d\n",
               est, q->topk, q->topk);
    puts("KL: KL(reference || setting) per scored position, nats; TOP1: share of positions "
         "where both pick the same token;\nPPL_REF, PPL: perplexity at the reference and at the "
         "setting; DEC_TPS: the leg's decode tok/s p50 (sweep --quality)");
    if (!full)
        return 0;
    putchar('\n');
    return print_buckets(l);
}

json_t *cli_quality_json(const store_quality_list *l)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < l->n; i++)
        if (json_array_append_new(a, store_quality_json(&l->q[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}
