/* test_percentile.c: store_dist_compute, the one definition of a
 * percentile in infertop (nearest rank: a value that occurred). */
#include <criterion/criterion.h>

#include "store/store.h"

Test(store_percentile, nearest_rank_of_one_to_ten)
{
    double v[] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10};
    store_dist d;
    store_dist_compute(v, 10, &d);
    cr_expect_eq(d.count, 10);
    cr_expect_eq(d.p50, 5);
    cr_expect_eq(d.p90, 9);
    cr_expect_eq(d.p99, 10);
    cr_expect_eq(d.max, 10);
}

Test(store_percentile, rank_is_rounded_up)
{
    double twelve[12];
    for (int i = 0; i < 12; i++)
        twelve[i] = 12 - i;
    store_dist d;
    store_dist_compute(twelve, 12, &d);
    cr_expect_eq(d.p50, 6);  /* ceil(0.5 * 12) = 6th smallest */
    cr_expect_eq(d.p90, 11); /* ceil(10.8) = 11th */
    cr_expect_eq(d.p99, 12);
}

Test(store_percentile, one_value_and_none)
{
    double one[] = {3.5};
    store_dist d;
    store_dist_compute(one, 1, &d);
    cr_expect_eq(d.count, 1);
    cr_expect_eq(d.p50, 3.5);
    cr_expect_eq(d.p99, 3.5);
    cr_expect_eq(d.max, 3.5);
    store_dist_compute(NULL, 0, &d);
    cr_expect_eq(d.count, 0);
    cr_expect_eq(d.p50, 0);
    cr_expect_eq(d.max, 0);
}

Test(store_percentile, repeated_values)
{
    double v[] = {2, 2, 2, 1, 1, 9};
    store_dist d;
    store_dist_compute(v, 6, &d);
    cr_expect_eq(d.p50, 2); /* 3rd smallest */
    cr_expect_eq(d.p90, 9); /* 6th */
    cr_expect_eq(d.max, 9);
}
