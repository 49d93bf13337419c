/* test_plan.c: the layer planner against hand-checked cases and the
 * engine's own accounting (KV formula, stage weights, scratch, reserve). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "engine/node/guard.h"
#include "tui/plan/plan.h"

#define MiB ((uint64_t)1 << 20)

/* 12 layers of 4 KV heads of head_dim 16: at 16 bits a layer holds
 * 2 x 4 x 16 x 2 = 256 bytes per position, 16 MiB at 65536 positions.
 * Its weights are 112.5 KiB a layer. */
#define M12 "synth:dim=64,hidden=64,layers=12,heads=4,kv_heads=4,vocab=64"

static plan_model pm12;

static void load12(void)
{
    char err[256];
    cr_assert_eq(plan_model_probe(M12, &pm12, err, sizeof err), 0, "%s", err);
}

TestSuite(plan, .init = load12);

/* Nodes of the given budgets (MiB), no runtime memory, chunks of 64 on
 * one thread: the scratch is about 150 KiB. */
static void nodes_of(plan_input *in, const int *mib, int n, int ctx, int bits)
{
    memset(in, 0, sizeof *in);
    in->model = &pm12;
    in->n_nodes = n;
    in->ctx = ctx;
    in->kv_bits = bits;
    for (int i = 0; i < n; i++) {
        plan_node *p = &in->nodes[i];
        snprintf(p->name, sizeof p->name, "n%d", i);
        p->budget = (uint64_t)mib[i] * MiB;
        p->prefill_step = 64;
        p->threads = 1;
        p->cur_first = p->cur_last = -1;
    }
}

static void expect_ranges(const plan_layout *l, const int *want, int n)
{
    for (int i = 0; i < n; i++) {
        cr_assert_eq(l->st[i].first, want[2 * i], "node %d starts at %d, expected %d", i,
                     l->st[i].first, want[2 * i]);
        cr_assert_eq(l->st[i].last, want[2 * i + 1], "node %d ends at %d, expected %d", i,
                     l->st[i].last, want[2 * i + 1]);
    }
}

static void plan_ok(const plan_input *in, plan_result *r)
{
    char err[256];
    cr_assert_eq(plan_compute(in, r, err, sizeof err), 0, "%s", err);
}

/* Budgets 96:384:384 MiB, reserve 32 MiB each, 65536 positions at 16
 * bits: the small node has 64 MiB for 16 MiB layers and some scratch, so
 * 3 layers at most; the others 352 MiB. No layout puts 4 on each, so the
 * slowest stage holds 5; of 2+5+5, 3+4+5 and 3+5+4 the first leaves the
 * most free on the small node (about 32 MiB, not 16). */
Test(plan, budgets_1_4_4_give_the_small_node_fewer_layers)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){96, 384, 384}, 3, 65536, 16);
    plan_ok(&in, &r);
    cr_assert(r.feasible);
    cr_assert(r.planned.fits);
    expect_ranges(&r.planned, (int[]){0, 2, 2, 7, 7, 12}, 3);
    cr_assert_eq(r.planned.st[0].kv, 32 * MiB);
    cr_assert_eq(r.planned.short_node, 0);
    cr_assert(r.change, "no current layout: the plan is a change");

    /* The small node in the middle. */
    nodes_of(&in, (int[]){384, 96, 384}, 3, 65536, 16);
    plan_ok(&in, &r);
    expect_ranges(&r.planned, (int[]){0, 5, 5, 7, 7, 12}, 3);
}

Test(plan, equal_nodes_split_evenly)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){384, 384, 384}, 3, 65536, 16);
    plan_ok(&in, &r);
    expect_ranges(&r.planned, (int[]){0, 4, 4, 8, 8, 12}, 3);
}

static void set_current(plan_input *in, const int *cur)
{
    for (int i = 0; i < in->n_nodes; i++) {
        in->nodes[i].cur_first = cur[2 * i];
        in->nodes[i].cur_last = cur[2 * i + 1];
    }
}

/* One objective for every caller: a current layout that fits stays
 * unless the plan raises the largest context by the margin. 4096
 * positions fit every split here; the busiest stage of 3+5+4 holds 5
 * layers, of the plan's 4+4+4 four: about a quarter more context. */
Test(plan, a_fitting_layout_changes_only_past_the_margin)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){384, 384, 384}, 3, 4096, 16);
    set_current(&in, (int[]){0, 4, 4, 8, 8, 12});
    in.margin_pct = 10;
    plan_ok(&in, &r);
    cr_assert(!r.change, "%s", r.why);
    cr_assert(strstr(r.why, "is the plan"), "%s", r.why);

    set_current(&in, (int[]){0, 3, 3, 8, 8, 12});
    plan_ok(&in, &r);
    cr_assert(r.current.fits);
    expect_ranges(&r.planned, (int[]){0, 4, 4, 8, 8, 12}, 3);
    cr_assert(r.change, "%s", r.why);
    cr_assert_gt(r.planned.ctx_at_bits * 100, r.current.ctx_at_bits * 110);

    in.margin_pct = 50;
    plan_ok(&in, &r);
    cr_assert(!r.change, "a gain under the margin: %s", r.why);
    cr_assert(strstr(r.why, "under the 50% margin"), "%s", r.why);
    expect_ranges(&r.planned, (int[]){0, 3, 3, 8, 8, 12}, 3);
}

/* A margin does not hold back a layout that fits where the current one
 * does not. */
Test(plan, a_layout_that_does_not_fit_always_changes)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){96, 384, 384}, 3, 65536, 16);
    set_current(&in, (int[]){0, 4, 4, 8, 8, 12});
    in.margin_pct = 1000;
    plan_ok(&in, &r);
    cr_assert(!r.current.fits);
    cr_assert(r.change, "%s", r.why);
    cr_assert(strstr(r.why, "does not fit"), "%s", r.why);
}

/* The need of node i holding [first, last), computed here from the
 * engine's own functions rather than the planner's. */
static uint64_t need_of(const plan_input *in, int i, int first, int last, int ctx, int bits)
{
    kv_shape s = {last - first, pm12.cfg.n_kv_heads, pm12.cfg.head_dim, KV_BLOCK_DEFAULT};
    guard_mem g;
    guard_from(in->nodes[i].budget, 0, 0, 0, &g);
    return plan_stage_weights(&pm12, first, last) + kv_bytes_for(s, bits, ctx) +
           plan_scratch_bytes(&pm12, last, in->nodes[i].prefill_step, in->nodes[i].threads) +
           g.reserve + in->nodes[i].runtime;
}

/* 262144 positions: 64 MiB a layer. The small node cannot hold one, and
 * the others 5 each. Of the least-short layouts, 1+6+5 beats 1+5+6: the
 * tail holds the classifier besides, so six layers leave it shorter. */
Test(plan, infeasible_target_names_the_node_and_the_deficit)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){96, 384, 384}, 3, 262144, 16);
    plan_ok(&in, &r);
    cr_assert(!r.feasible);
    cr_assert(!r.planned.fits);
    expect_ranges(&r.planned, (int[]){0, 1, 1, 7, 7, 12}, 3);
    cr_assert_eq(r.planned.short_node, 1);
    int64_t want = (int64_t)(384 * MiB) - (int64_t)need_of(&in, 1, 1, 7, 262144, 16);
    cr_assert_eq(r.planned.st[1].headroom, want);
    cr_assert_lt(want, -(int64_t)(32 * MiB));

    /* The largest context any layout fits, at each kv_bits: it plans,
     * one position more does not. */
    for (int b = 0; b < PLAN_N_BITS; b++) {
        plan_input at = in;
        at.kv_bits = plan_bits[b];
        at.ctx = r.best_ctx[b];
        plan_result rr;
        plan_ok(&at, &rr);
        cr_assert(rr.feasible, "%d bits: best_ctx %d does not plan", plan_bits[b], at.ctx);
        at.ctx++;
        plan_ok(&at, &rr);
        cr_assert(!rr.feasible, "%d bits: best_ctx %d + 1 plans", plan_bits[b], at.ctx - 1);
    }
    /* head_dim 16 makes one quantization group per head: with its fp16
     * scale and bias, 8 and 4 bits take 5/8 and 3/8 of fp16. */
    cr_assert_gt(r.best_ctx[1], r.best_ctx[0] * 3 / 2);
    cr_assert_gt(r.best_ctx[2], r.best_ctx[0] * 5 / 2);
}

Test(plan, max_context_is_the_true_boundary)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){96, 384, 200}, 3, 65536, 16);
    in.nodes[1].runtime = 20 * MiB;
    plan_ok(&in, &r);
    for (int i = 0; i < 3; i++) {
        const plan_stage *st = &r.planned.st[i];
        for (int b = 0; b < PLAN_N_BITS; b++) {
            int c = st->max_ctx[b];
            cr_assert_gt(c, 0);
            cr_assert_leq(need_of(&in, i, st->first, st->last, c, plan_bits[b]), in.nodes[i].budget,
                          "node %d, %d bits: %d does not fit", i, plan_bits[b], c);
            cr_assert_gt(need_of(&in, i, st->first, st->last, c + 1, plan_bits[b]),
                         in.nodes[i].budget, "node %d, %d bits: %d + 1 fits", i, plan_bits[b], c);
            cr_assert_leq(r.planned.max_ctx[b], c);
        }
    }
}

Test(plan, kv_at_target_is_the_engine_formula)
{
    plan_input in;
    plan_result r;
    const int bits[] = {32, 16, 8, 4};
    const int ctxs[] = {1, 63, 64, 65, 4097, 100000};
    for (size_t b = 0; b < 4; b++)
        for (size_t c = 0; c < sizeof ctxs / sizeof *ctxs; c++) {
            nodes_of(&in, (int[]){4096, 4096, 4096}, 3, ctxs[c], bits[b]);
            plan_ok(&in, &r);
            for (int i = 0; i < 3; i++) {
                const plan_stage *st = &r.planned.st[i];
                kv_shape s = {st->last - st->first, 4, 16, KV_BLOCK_DEFAULT};
                cr_assert_eq(st->kv, kv_bytes_for(s, bits[b], ctxs[c]), "%d bits, ctx %d", bits[b],
                             ctxs[c]);
                cr_assert_eq(
                    plan_stage_kv(&pm12, 3, bits[b], ctxs[c]),
                    kv_bytes_for((kv_shape){3, 4, 16, KV_BLOCK_DEFAULT}, bits[b], ctxs[c]));
            }
        }
}

Test(plan, stage_weights_are_the_engine_stage_bytes)
{
    const char *specs[] = {"embedded", M12};
    for (int k = 0; k < 2; k++) {
        char err[256];
        plan_model pm;
        model *m;
        cr_assert_eq(plan_model_probe(specs[k], &pm, err, sizeof err), 0, "%s", err);
        cr_assert_eq(model_load(&m, specs[k], err, sizeof err), 0, "%s", err);
        for (int a = 0; a < pm.cfg.n_layers; a++)
            for (int b = a + 1; b <= pm.cfg.n_layers; b++)
                cr_assert_eq(plan_stage_weights(&pm, a, b), model_stage_bytes(m, a, b), "%s %d:%d",
                             specs[k], a, b);
        model_free(m);
    }
}

/* The planner's scratch is what a stage of the fp32 model holds once it
 * has run its largest chunk and decode batch (what a node's memory guard
 * counts), plus the tail's logits. */
Test(plan, scratch_is_what_a_stage_holds)
{
    enum { N = 48 };
    char err[256];
    model *m;
    cr_assert_eq(model_load(&m, M12, err, sizeof err), 0, "%s", err);
    const int threads[] = {1, 2};
    const int ranges[][2] = {{0, 5}, {5, 12}};
    static float x[N * 64], y[N * 64], logits[64];
    int tokens[N];
    for (int i = 0; i < N; i++)
        tokens[i] = i % 64;
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 2; k++) {
            pool *p;
            fwd_stage *s;
            kv_cache *kvs[N];
            cr_assert_eq(pool_create(&p, threads[t], err, sizeof err), 0, "%s", err);
            cr_assert_eq(fwd_create(&s, m, ranges[k][0], ranges[k][1], p, err, sizeof err), 0, "%s",
                         err);
            for (int i = 0; i < N; i++)
                cr_assert_eq(kv_create(&kvs[i], fwd_kv_shape(s), 16, err, sizeof err), 0, "%s",
                             err);
            cr_assert_eq(fwd_step(s, kvs[0], tokens, x, N, y, logits, NULL, err, sizeof err), 0,
                         "%s", err);
            cr_assert_eq(fwd_step_batch(s, kvs, N, tokens, x, y, NULL, NULL, err, sizeof err), 0,
                         "%s", err);
            size_t tail = ranges[k][1] == 12 ? PLAN_SEQS * 64 * sizeof(float) : 0;
            cr_assert_eq(plan_scratch_bytes(&pm12, ranges[k][1], N, threads[t]),
                         fwd_scratch_bytes(s) + tail, "threads %d, layers %d:%d", threads[t],
                         ranges[k][0], ranges[k][1]);
            for (int i = 0; i < N; i++)
                kv_free(kvs[i]);
            fwd_free(s);
            pool_free(p);
        }
    model_free(m);
}

Test(plan, reserve_is_the_guard_reserve)
{
    cr_assert_eq(plan_reserve(96 * MiB), GUARD_RESERVE_MIN);
    cr_assert_eq(plan_reserve(8192 * MiB), 512 * MiB);
}

Test(plan, current_layout_figures)
{
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){96, 384, 384}, 3, 65536, 16);
    const int cur[] = {0, 4, 4, 8, 8, 12};
    for (int i = 0; i < 3; i++) {
        in.nodes[i].cur_first = cur[2 * i];
        in.nodes[i].cur_last = cur[2 * i + 1];
    }
    plan_ok(&in, &r);
    cr_assert(r.current.known);
    cr_assert(!r.current.fits, "4 layers do not fit the small node");
    cr_assert_eq(r.current.short_node, 0);
    cr_assert_lt(r.current.st[0].headroom, 0);
    cr_assert_lt(r.current.max_ctx[0], 65536);
    cr_assert_geq(r.planned.max_ctx[0], 65536);
    in.nodes[1].cur_first = -1;
    plan_ok(&in, &r);
    cr_assert(!r.current.known);
}

Test(plan, unplannable_input_is_refused)
{
    char err[256];
    plan_input in;
    plan_result r;
    nodes_of(&in, (int[]){96, 96, 96}, 3, 100, 16);
    in.n_nodes = 13;
    for (int i = 3; i < 13; i++)
        in.nodes[i] = in.nodes[0];
    cr_assert_eq(plan_compute(&in, &r, err, sizeof err), -1);
    cr_assert(strstr(err, "12 layers, fewer than the 13 nodes"), "%s", err);
    nodes_of(&in, (int[]){96, 0, 96}, 3, 100, 16);
    cr_assert_eq(plan_compute(&in, &r, err, sizeof err), -1);
    cr_assert(strstr(err, "node n1: budget 0"), "%s", err);
    nodes_of(&in, (int[]){96, 96, 96}, 3, 100, 5);
    cr_assert_eq(plan_compute(&in, &r, err, sizeof err), -1);
    cr_assert(strstr(err, "kv_bits 5"), "%s", err);
}
