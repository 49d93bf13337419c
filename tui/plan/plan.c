/* plan.c: placing layers (see plan.h).
 *
 * Every choice the planner makes is a bottleneck problem over contiguous
 * ranges in ring order: minimise, over layouts, the largest cost of a
 * stage. One dynamic programme solves each: best[i][b] is the least
 * largest cost of nodes 0..i holding layers [0, b), over the first layer
 * a of node i. It runs with three costs: stage layers among fitting stages
 * (the plan's first criterion), minus headroom among fitting stages with
 * no more layers than that (its second), and minus headroom alone (the
 * least-short layout when nothing fits). Whether some layout fits a given
 * context is simpler: a node that takes as many layers as fit never
 * leaves the nodes after it worse off, so one greedy pass decides it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/kvbits.h"
#include "plan_int.h"

/* The input with what every stage cost needs precomputed. */
struct dp {
    const plan_input *in;
    const plan_model *m;
    int n, L;
    size_t pre[PLAN_LAYERS_MAX + 1]; /* bytes of layers [0, l) */
    int layers_limit;                /* the headroom cost: the fewest layers found */
};

/* Node i's figures holding [first, last) at ctx and bits. */
static void stage_at(const struct dp *d, int i, int first, int last, int ctx, int bits,
                     plan_stage *st)
{
    const plan_node *node = &d->in->nodes[i];
    st->first = first;
    st->last = last;
    st->weights = plan_weights_from(d->m, d->pre[last] - d->pre[first], first, last);
    st->kv = plan_stage_kv(d->m, last - first, bits, ctx);
    st->scratch = plan_scratch_bytes(d->m, last, node->prefill_step, node->threads);
    st->reserve = plan_reserve(node->budget);
    st->runtime = node->runtime;
    st->need = st->weights + st->kv + st->scratch + st->reserve + st->runtime;
    st->headroom = (int64_t)node->budget - (int64_t)st->need;
}

static int fits(const struct dp *d, int i, int first, int last, int ctx, int bits)
{
    plan_stage st;
    stage_at(d, i, first, last, ctx, bits, &st);
    return st.headroom >= 0;
}

/* The largest context node i fits holding [first, last) at bits: the
 * exact boundary of the engine's formula, by bisection. */
static int stage_max_ctx(const struct dp *d, int i, int first, int last, int bits)
{
    if (!fits(d, i, first, last, 0, bits))
        return 0;
    int lo = 0, hi = OPT_PLAN_CTX_MAX; /* lo fits; above hi is not searched */
    if (fits(d, i, first, last, hi, bits))
        return hi;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (fits(d, i, first, last, mid, bits))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void dp_init(struct dp *d, const plan_input *in)
{
    memset(d, 0, sizeof *d);
    d->in = in;
    d->m = in->model;
    d->n = in->n_nodes;
    d->L = in->model->cfg.n_layers;
    for (int l = 0; l < d->L; l++)
        d->pre[l + 1] = d->pre[l] + d->m->layer_bytes[l];
}

/* The figures of a given layout (ranges in first[], last[]). */
static void plan_layout_of(const plan_input *in, const int *first, const int *last,
                           plan_layout *out)
{
    struct dp d;
    dp_init(&d, in);
    memset(out, 0, sizeof *out);
    out->known = 1;
    out->fits = 1;
    out->ctx_at_bits = OPT_PLAN_CTX_MAX;
    for (int b = 0; b < PLAN_N_BITS; b++)
        out->max_ctx[b] = OPT_PLAN_CTX_MAX;
    for (int i = 0; i < d.n; i++) {
        plan_stage *st = &out->st[i];
        stage_at(&d, i, first[i], last[i], in->ctx, in->kv_bits, st);
        out->fits &= st->headroom >= 0;
        if (st->headroom < out->st[out->short_node].headroom)
            out->short_node = i;
        for (int b = 0; b < PLAN_N_BITS; b++) {
            st->max_ctx[b] = stage_max_ctx(&d, i, first[i], last[i], plan_bits[b]);
            if (st->max_ctx[b] < out->max_ctx[b])
                out->max_ctx[b] = st->max_ctx[b];
        }
        int at = stage_max_ctx(&d, i, first[i], last[i], in->kv_bits);
        if (at < out->ctx_at_bits)
            out->ctx_at_bits = at;
    }
}

/* ---- the bottleneck programme ---- */

typedef double (*stage_cost)(const struct dp *d, int i, int first, int last);

static double cost_layers(const struct dp *d, int i, int first, int last)
{
    return fits(d, i, first, last, d->in->ctx, d->in->kv_bits) ? (double)(last - first) : INFINITY;
}

static double cost_tight(const struct dp *d, int i, int first, int last)
{
    plan_stage st;
    stage_at(d, i, first, last, d->in->ctx, d->in->kv_bits, &st);
    if (st.headroom < 0 || last - first > d->layers_limit)
        return INFINITY;
    return -(double)st.headroom;
}

static double cost_short(const struct dp *d, int i, int first, int last)
{
    plan_stage st;
    stage_at(d, i, first, last, d->in->ctx, d->in->kv_bits, &st);
    return -(double)st.headroom;
}

/* Minimises the largest stage cost; the ranges go to first[] and last[].
 * Returns that cost (INFINITY: no layout), or NAN when out of memory. */
static double dp_run(const struct dp *d, stage_cost cost, int *first, int *last)
{
    int n = d->n, L = d->L;
    double *best = malloc((size_t)n * (L + 1) * sizeof *best);
    int *from = malloc((size_t)n * (L + 1) * sizeof *from);
    if (!best || !from) {
        free(best);
        free(from);
        return NAN;
    }
#define BEST(i, b) best[(size_t)(i) * (L + 1) + (b)]
#define FROM(i, b) from[(size_t)(i) * (L + 1) + (b)]
    for (int b = 0; b <= L; b++) {
        BEST(0, b) = b >= 1 ? cost(d, 0, 0, b) : INFINITY;
        FROM(0, b) = 0;
    }
    /* Node i holds [a, b); the nodes before it hold one layer each at least. */
    for (int i = 1; i < n; i++)
        for (int b = 0; b <= L; b++) {
            BEST(i, b) = INFINITY;
            FROM(i, b) = -1;
            for (int a = i; a < b; a++) {
                if (BEST(i - 1, a) == INFINITY)
                    continue;
                double c = fmax(BEST(i - 1, a), cost(d, i, a, b));
                if (c < BEST(i, b)) {
                    BEST(i, b) = c;
                    FROM(i, b) = a;
                }
            }
        }
    double result = BEST(n - 1, L);
    if (result != INFINITY)
        for (int i = n - 1, b = L; i >= 0; i--) {
            last[i] = b;
            first[i] = FROM(i, b);
            b = first[i];
        }
#undef BEST
#undef FROM
    free(best);
    free(from);
    return result;
}

/* Whether some layout fits ctx at bits: each node in turn takes as many
 * layers as fit, leaving one for each node after it. */
static int any_fits(const struct dp *d, int ctx, int bits)
{
    int a = 0;
    for (int i = 0; i < d->n; i++) {
        int room = d->L - (d->n - 1 - i); /* the last layer node i may take, + 1 */
        int b = i == d->n - 1 ? d->L : a;
        if (i < d->n - 1)
            while (b < room && fits(d, i, a, b + 1, ctx, bits))
                b++;
        if (b == a || !fits(d, i, a, b, ctx, bits))
            return 0;
        a = b;
    }
    return 1;
}

static int best_ctx(const struct dp *d, int bits)
{
    if (!any_fits(d, 1, bits))
        return 0;
    if (any_fits(d, OPT_PLAN_CTX_MAX, bits))
        return OPT_PLAN_CTX_MAX;
    int lo = 1, hi = OPT_PLAN_CTX_MAX;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (any_fits(d, mid, bits))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int check_input(const plan_input *in, char *err, size_t errlen)
{
    int L = in->model->cfg.n_layers;
    if (in->n_nodes < 1 || in->n_nodes > PLAN_NODES_MAX) {
        snprintf(err, errlen, "%d nodes: the planner takes 1 to %d", in->n_nodes, PLAN_NODES_MAX);
        return -1;
    }
    if (L < in->n_nodes) {
        snprintf(err, errlen,
                 "the model has %d layers, fewer than the %d nodes (each holds one "
                 "at least)",
                 L, in->n_nodes);
        return -1;
    }
    if (in->margin_pct < 0) {
        snprintf(err, errlen, "margin %d%%: expected 0 or more", in->margin_pct);
        return -1;
    }
    if (in->ctx < 1 || in->ctx > OPT_PLAN_CTX_MAX) {
        snprintf(err, errlen, "context %d: expected 1 to %d", in->ctx, OPT_PLAN_CTX_MAX);
        return -1;
    }
    if (!kv_bits_valid(in->kv_bits)) {
        char choices[KV_BITS_CHOICES_MAX];
        snprintf(err, errlen, "kv_bits %d: expected %s", in->kv_bits,
                 kv_bits_choices(choices, sizeof choices, ", ", " or "));
        return -1;
    }
    for (int i = 0; i < in->n_nodes; i++) {
        const plan_node *n = &in->nodes[i];
        if (n->budget == 0 || n->prefill_step < 1 || n->threads < 1) {
            snprintf(err, errlen,
                     "node %s: budget %llu, prefill_step %d, threads %d: each must "
                     "be positive",
                     n->name, (unsigned long long)n->budget, n->prefill_step, n->threads);
            return -1;
        }
    }
    for (int b = 0; b < PLAN_N_BITS; b++)
        if (plan_kv_check(in->model, plan_bits[b], err, errlen) != 0)
            return -1;
    return plan_kv_check(in->model, in->kv_bits, err, errlen);
}

static int same_ranges(const plan_layout *a, const plan_layout *b, int n)
{
    for (int i = 0; i < n; i++)
        if (a->st[i].first != b->st[i].first || a->st[i].last != b->st[i].last)
            return 0;
    return 1;
}

/* The proposal rule (plan.h): a fitting current layout stays unless the
 * plan raises the largest context at the target bits by the margin. */
static void decide(const plan_input *in, plan_result *r)
{
    const plan_layout *cur = &r->current, *new = &r->planned;
    r->change = 0;
    if (!r->feasible) {
        snprintf(r->why, sizeof r->why, "no layout fits the target");
        return;
    }
    if (cur->known && same_ranges(cur, new, in->n_nodes)) {
        snprintf(r->why, sizeof r->why, "the current layout is the plan");
        return;
    }
    if (!cur->known || !cur->fits) {
        r->change = 1;
        snprintf(r->why, sizeof r->why, "the current layout %s the target",
                 cur->known ? "does not fit" : "is unknown: it may not fit");
        return;
    }
    /* In 64 bits: a context near OPT_PLAN_CTX_MAX times 1000 + 100. */
    long long gain = (long long)new->ctx_at_bits * 100,
              need = (long long)cur->ctx_at_bits *(100 + in->margin_pct);
    if (new->ctx_at_bits > cur->ctx_at_bits && gain >= need) {
        r->change = 1;
        snprintf(r->why, sizeof r->why,
                 "the largest context at kv_bits %d rises from %d to %d (margin %d%%)", in->kv_bits,
                 cur->ctx_at_bits, new->ctx_at_bits, in->margin_pct);
        return;
    }
    snprintf(r->why, sizeof r->why,
             "the current layout fits: the largest context would go from %d to %d only, "
             "under the %d%% margin",
             cur->ctx_at_bits, new->ctx_at_bits, in->margin_pct);
    r->planned = r->current;
}

int plan_compute(const plan_input *in, plan_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (check_input(in, err, errlen) != 0)
        return -1;
    struct dp *d = malloc(sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory for the plan");
        return -1;
    }
    dp_init(d, in);
    int first[PLAN_NODES_MAX], last[PLAN_NODES_MAX];
    double t = dp_run(d, cost_layers, first, last);
    out->feasible = t != INFINITY;
    if (out->feasible) {
        d->layers_limit = (int)t;
        t = dp_run(d, cost_tight, first, last);
    } else if (!isnan(t)) {
        t = dp_run(d, cost_short, first, last);
    }
    if (!isnan(t)) {
        plan_layout_of(in, first, last, &out->planned);
        for (int b = 0; b < PLAN_N_BITS; b++)
            out->best_ctx[b] = best_ctx(d, plan_bits[b]);
        int known = 1;
        for (int i = 0; i < in->n_nodes; i++) {
            const plan_node *n = &in->nodes[i];
            known &= n->cur_first >= 0 && n->cur_last > n->cur_first && n->cur_last <= d->L;
            first[i] = n->cur_first;
            last[i] = n->cur_last;
        }
        if (known)
            plan_layout_of(in, first, last, &out->current);
        decide(in, out);
    }
    free(d);
    if (isnan(t)) {
        snprintf(err, errlen, "out of memory for the plan");
        return -1;
    }
    return 0;
}
