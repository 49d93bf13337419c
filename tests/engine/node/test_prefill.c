/* test_prefill.c: prefill_step=auto probes first, then picks the largest
 * chunk its fitted cost model keeps under the target, smaller when deeper. */
#include <criterion/criterion.h>

#include "engine/node/prefill.h"

/* Cost of a chunk under a + b * depth per position. */
static double cost(double a, double b, int depth, int n)
{
    return n * (a + b * (depth + n / 2.0));
}

Test(prefill, probes_before_any_sample)
{
    pf_est e;
    pf_init(&e);
    cr_assert_eq(pf_choose(&e, 0, 2000.0, PF_AUTO_MAX), PF_PROBE);
    cr_assert_eq(pf_choose(&e, 0, 2000.0, 16), 16, "never past max_chunk");
}

Test(prefill, flat_cost_divides_the_target)
{
    pf_est e;
    pf_init(&e);
    pf_observe(&e, 64, 0, 64 * 0.5); /* 0.5 ms per position */
    cr_assert_eq(pf_choose(&e, 0, 100.0, PF_AUTO_MAX), 200);
    cr_assert_eq(pf_choose(&e, 0, 1e9, PF_AUTO_MAX), PF_AUTO_MAX);
    cr_assert_eq(pf_choose(&e, 0, 0.1, PF_AUTO_MAX), 1, "at least one position");
}

Test(prefill, fits_depth_cost_and_shrinks_deeper)
{
    const double a = 0.2, b = 0.0001;
    pf_est e;
    pf_init(&e);
    for (int d = 0; d < 8 * 512; d += 512)
        pf_observe(&e, 512, d, cost(a, b, d, 512));
    double fa, fb;
    cr_assert_eq(pf_fit(&e, &fa, &fb), 1);
    cr_assert_float_eq(fa, a, 1e-9);
    cr_assert_float_eq(fb, b, 1e-12);

    int shallow = pf_choose(&e, 0, 500.0, PF_AUTO_MAX);
    int deep = pf_choose(&e, 100000, 500.0, PF_AUTO_MAX);
    cr_assert_lt(deep, shallow);
    /* The largest n under the target: n fits, n + 1 does not. */
    cr_assert_leq(cost(a, b, 100000, deep), 500.0);
    cr_assert_gt(cost(a, b, 100000, deep + 1), 500.0);
    cr_assert_leq(cost(a, b, 0, shallow), 500.0);
    cr_assert_gt(cost(a, b, 0, shallow + 1), 500.0);
}

Test(prefill, keeps_only_recent_samples)
{
    pf_est e;
    pf_init(&e);
    for (int i = 0; i < PF_SAMPLES; i++)
        pf_observe(&e, 100, 0, 100.0); /* 1 ms per position */
    for (int i = 0; i < PF_SAMPLES; i++)
        pf_observe(&e, 100, 0, 10.0); /* the machine got faster */
    cr_assert_eq(pf_choose(&e, 0, 50.0, PF_AUTO_MAX), 500);
}
