/* test_guard.c: the memory budget is the tightest of its three limits, and
 * admission fits, evicts or refuses exactly at the reserve's edge. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/node/guard.h"

#define MiB ((size_t)1 << 20)

Test(guard, budget_is_the_tightest_limit)
{
    guard_mem g;
    guard_from(0, 0, 100 * MiB, 900 * MiB, &g);
    cr_assert_eq(g.budget, 1000 * MiB, "RSS + MemAvailable without other limits");
    guard_from(512 * MiB, 0, 100 * MiB, 900 * MiB, &g);
    cr_assert_eq(g.budget, 512 * MiB, "--mem-limit");
    guard_from(512 * MiB, 256 * MiB, 100 * MiB, 900 * MiB, &g);
    cr_assert_eq(g.budget, 256 * MiB, "cgroup limit");
    guard_from(0, 2048 * MiB, 100 * MiB, 300 * MiB, &g);
    cr_assert_eq(g.budget, 400 * MiB, "what the OS can give");
    cr_assert_eq(guard_available(&g), 300 * MiB);
    cr_assert_eq(guard_headroom(&g), (int64_t)(300 * MiB));
}

Test(guard, reserve_is_a_share_with_a_floor)
{
    guard_mem g;
    guard_from(64 * MiB, 0, 0, 0, &g);
    cr_assert_eq(g.reserve, GUARD_RESERVE_MIN);
    guard_from(16384 * MiB, 0, 0, 0, &g);
    cr_assert_eq(g.reserve, 1024 * MiB, "budget / 16");
}

Test(guard, admit_fits_evicts_or_refuses)
{
    guard_mem g;
    guard_from(256 * MiB, 0, 100 * MiB, 0, &g); /* available 156 MiB, reserve 32 MiB */
    size_t evict;
    char err[512] = "";
    cr_assert_eq(guard_admit(&g, 124 * MiB, 0, &evict, err, sizeof err), GUARD_FITS);
    cr_assert_eq(guard_admit(&g, 124 * MiB + 1, 50 * MiB, &evict, err, sizeof err), GUARD_EVICT);
    cr_assert_eq(evict, 1, "frees just what is missing");
    cr_assert_eq(guard_admit(&g, 174 * MiB, 50 * MiB, &evict, err, sizeof err), GUARD_EVICT);
    cr_assert_eq(evict, 50 * MiB);
    cr_assert_eq(guard_admit(&g, 174 * MiB, 50 * MiB - 1, &evict, err, sizeof err), GUARD_REFUSE);
    char want[128];
    snprintf(want, sizeof want, "needs %zu bytes, available %zu bytes of budget %zu", 174 * MiB,
             156 * MiB, 256 * MiB);
    cr_assert(strstr(err, want), "%s", err);
}

Test(guard, over_budget_has_nothing_available)
{
    guard_mem g;
    guard_from(64 * MiB, 0, 100 * MiB, 0, &g);
    cr_assert_eq(guard_available(&g), 0);
    cr_assert_eq(guard_headroom(&g), -(int64_t)(36 * MiB));
    size_t evict;
    char err[512];
    cr_assert_eq(guard_admit(&g, 1, 0, &evict, err, sizeof err), GUARD_REFUSE);
}

Test(guard, ctx_cap)
{
    char err[256];
    cr_assert_eq(guard_ctx(0, 1 << 30, err, sizeof err), 0, "0 is no cap");
    cr_assert_eq(guard_ctx(100, 100, err, sizeof err), 0);
    cr_assert_eq(guard_ctx(100, 101, err, sizeof err), -1);
    cr_assert(strstr(err, "101") && strstr(err, "--max-ctx 100"), "%s", err);
}

/* A need near SIZE_MAX (a saturated kv_bytes_for) is refused, never
 * wrapped by the reserve into a small one. */
Test(guard, huge_need_is_refused)
{
    guard_mem g;
    guard_from((size_t)1 << 30, 0, (size_t)100 << 20, 0, &g);
    size_t evict;
    char err[256];
    cr_assert_eq(guard_admit(&g, SIZE_MAX, 0, &evict, err, sizeof err), GUARD_REFUSE);
    cr_assert_eq(guard_admit(&g, SIZE_MAX - 1, (size_t)1 << 20, &evict, err, sizeof err),
                 GUARD_REFUSE);
}
