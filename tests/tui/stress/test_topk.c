/* test_topk.c: the top-k KL of stress quality's estimate on an HTTP node
 * (stress_topk_kl), against examples computed by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tui/stress/stress.h"

/* A top-k list of n tokens and their probabilities, most probable first. */
static eng_topk list(int n, const char *const *pieces, const double *p)
{
    eng_topk t;
    memset(&t, 0, sizeof t);
    t.n = n;
    for (int i = 0; i < n; i++) {
        strcpy(t.piece[i], pieces[i]);
        t.logprob[i] = log(p[i]);
    }
    return t;
}

Test(topk_kl, identical_lists_are_zero_to_the_last_bit)
{
    static const char *const pc[] = {" the", ",", " a", "."};
    static const double p[] = {0.61, 0.2, 0.1, 0.05};
    eng_topk a = list(4, pc, p), b = list(4, pc, p);
    int agree = -1;
    cr_assert_eq(stress_topk_kl(&a, &b, &agree), 0.0);
    cr_assert_eq(agree, 1);
}

/* ref A .5, B .3, C .1 (rest .1); test A .4, B .2, D .2 (rest .2). Both
 * hold A and B: ref (.5, .3, rest .2), test (.4, .2, rest .4), so
 * KL = .5 ln(.5/.4) + .3 ln(.3/.2) + .2 ln(.2/.4) = 0.0945818719775651. */
Test(topk_kl, hand_computed_example)
{
    static const char *const rp[] = {"A", "B", "C"}, *const tp[] = {"A", "B", "D"};
    static const double r[] = {0.5, 0.3, 0.1}, t[] = {0.4, 0.2, 0.2};
    eng_topk ref = list(3, rp, r), test = list(3, tp, t);
    int agree = 0;
    double kl = stress_topk_kl(&ref, &test, &agree);
    cr_assert(fabs(kl - 0.0945818719775651) < 1e-6, "kl %.12g", kl);
    cr_assert_eq(agree, 1);
}

/* The lists sum past 1 (an engine's rounding): the rest is floored at
 * 1e-10 and each side renormalised. ref (.7, .4, 1e-10) / 1.1000000001,
 * test (.6, .3, .1): KL 0.10739736807494409. Top-1 differs when the
 * orders do. */
Test(topk_kl, renormalised_and_floored)
{
    static const char *const rp[] = {"x", "y"}, *const tp[] = {"x", "y"};
    static const double r[] = {0.7, 0.4}, t[] = {0.6, 0.3};
    eng_topk ref = list(2, rp, r), test = list(2, tp, t);
    int agree = 0;
    double kl = stress_topk_kl(&ref, &test, &agree);
    cr_assert(fabs(kl - 0.10739736807494409) < 1e-6, "kl %.12g", kl);
    static const char *const swapped[] = {"y", "x"};
    static const double s[] = {0.5, 0.4};
    eng_topk other = list(2, swapped, s);
    stress_topk_kl(&ref, &other, &agree);
    cr_assert_eq(agree, 0);
}

/* No token in common: everything is the rest on both sides, KL 0 (the
 * estimate's lower bound says nothing then), top-1 disagrees. */
Test(topk_kl, disjoint_lists)
{
    static const char *const rp[] = {"a"}, *const tp[] = {"b"};
    static const double r[] = {0.9}, t[] = {0.8};
    eng_topk ref = list(1, rp, r), test = list(1, tp, t);
    int agree = 1;
    cr_assert_eq(stress_topk_kl(&ref, &test, &agree), 0.0);
    cr_assert_eq(agree, 0);
}
