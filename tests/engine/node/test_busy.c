/* test_busy.c: a node's busy ratio over the last second and its idle
 * time before a step, from step end times and model times. */
#include <criterion/criterion.h>

#include "engine/node/busy.h"

Test(busy, ratio_counts_the_last_second_only)
{
    busy b;
    busy_init(&b, 0.0);
    cr_assert_float_eq(busy_ratio(&b, 500.0), 0.0, 1e-12);
    /* steps of 10 ms compute every 20 ms: half busy */
    for (int i = 1; i <= 100; i++)
        busy_step(&b, 20.0 * i - 12.0, 20.0 * i, 10.0);
    cr_assert_float_eq(busy_ratio(&b, 2000.0), 0.5, 1e-9);
    /* half a second later, half the window holds those steps */
    cr_assert_float_eq(busy_ratio(&b, 2500.0), 0.25, 1e-9);
    /* a step whose compute straddles the window's start counts its part */
    busy_init(&b, 0.0);
    busy_step(&b, 0.0, 1100.0, 300.0);
    cr_assert_float_eq(busy_ratio(&b, 1900.0), 0.2, 1e-9);
    cr_assert_float_eq(busy_ratio(&b, 2100.0), 0.0, 1e-12);
}

Test(busy, ratio_is_capped_at_one)
{
    busy b;
    busy_init(&b, 0.0);
    /* more steps than the ring remembers, each reporting more compute than
     * wall time (clock granularity) */
    for (int i = 1; i <= 3 * BUSY_STEPS; i++)
        busy_step(&b, i - 1.0, (double)i, 1.5);
    cr_assert_float_eq(busy_ratio(&b, 3.0 * BUSY_STEPS), 1.0, 1e-12);
}

Test(busy, idle_time_before_a_step)
{
    busy b;
    busy_init(&b, 100.0);
    /* the first step started 40 ms after the node got its first work */
    busy_idle(&b, 160.0);
    cr_assert_float_eq(busy_step(&b, 200.0, 230.0, 25.0), 40.0, 1e-9);
    /* the next one started at once */
    cr_assert_float_eq(busy_step(&b, 230.0, 260.0, 25.0), 0.0, 1e-9);
    /* then the node waited 15 ms for input */
    cr_assert_float_eq(busy_step(&b, 275.0, 300.0, 20.0), 15.0, 1e-9);
}
