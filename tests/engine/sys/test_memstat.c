/* test_memstat.c: memory figures from /proc and the cgroup, and the clock. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/sys/clock.h"
#include "engine/sys/memstat.h"

#define MiB (1024 * 1024)

Test(memstat, rss_tracks_touched_memory)
{
    size_t before = mem_rss();
    cr_assert(before > 0);
    size_t bytes = 64 * MiB;
    char *p = malloc(bytes);
    cr_assert_not_null(p);
    memset(p, 1, bytes); /* touched pages count in RSS, untouched do not */
    size_t after = mem_rss();
    cr_assert(after >= before + 60 * MiB, "rss %zu -> %zu", before, after);
    cr_assert(mem_peak_rss() >= after);
    free(p);
}

Test(memstat, available_and_limit)
{
    size_t avail = mem_available();
    cr_assert(avail > 0);
    size_t limit = mem_cgroup_limit();
    /* No limit (0), or one this process already lives within. */
    cr_assert(limit == 0 || limit >= mem_rss(), "limit %zu", limit);
}

Test(memstat, clock_is_monotonic_milliseconds)
{
    double t0 = clock_ms();
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double t1 = clock_ms();
    cr_assert(t1 - t0 >= 19.0, "slept 20 ms, clock moved %f ms", t1 - t0);
}
