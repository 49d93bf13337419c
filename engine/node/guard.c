/* guard.c: see guard.h. */
#include "guard.h"

#include <stdio.h>

#include "engine/sys/memstat.h"

/* The smaller of two limits where 0 means "none". */
static size_t min_limit(size_t a, size_t b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return a < b ? a : b;
}

void guard_from(size_t mem_limit, size_t cgroup_limit, size_t rss, size_t mem_available,
                guard_mem *out)
{
    size_t os = mem_available ? rss + mem_available : 0;
    out->limit = min_limit(mem_limit, cgroup_limit);
    out->host_available = mem_available;
    out->budget = min_limit(out->limit, os);
    out->rss = rss;
    out->unpaged = 0;
    size_t share = out->budget / GUARD_RESERVE_DIV;
    out->reserve = share > GUARD_RESERVE_MIN ? share : GUARD_RESERVE_MIN;
}

void guard_measure(size_t mem_limit, guard_mem *out)
{
    guard_from(mem_limit, mem_cgroup_limit(), mem_rss(), mem_available(), out);
}

size_t guard_used(const guard_mem *g)
{
    return g->rss + g->unpaged;
}

size_t guard_available(const guard_mem *g)
{
    size_t used = guard_used(g);
    return g->budget > used ? g->budget - used : 0;
}

int64_t guard_headroom(const guard_mem *g)
{
    return (int64_t)g->budget - (int64_t)guard_used(g);
}

guard_verdict guard_admit(const guard_mem *g, size_t needed, size_t idle, size_t *evict, char *err,
                          size_t errlen)
{
    size_t available = guard_available(g);
    /* Saturating: a need near SIZE_MAX must not wrap into a small one. */
    size_t want = needed > SIZE_MAX - g->reserve ? SIZE_MAX : needed + g->reserve;
    *evict = 0;
    if (want <= available)
        return GUARD_FITS;
    if (want - available <= idle) {
        *evict = want - available;
        return GUARD_EVICT;
    }
    snprintf(err, errlen,
             "needs %zu bytes, available %zu bytes of budget %zu (used %zu, reserve %zu%s)", needed,
             available, g->budget, guard_used(g), g->reserve,
             idle ? ", idle sessions included" : "");
    return GUARD_REFUSE;
}

int guard_ctx(int max_ctx, int ctx, char *err, size_t errlen)
{
    if (max_ctx <= 0 || ctx <= max_ctx)
        return 0;
    snprintf(err, errlen, "context of %d positions would pass --max-ctx %d", ctx, max_ctx);
    return -1;
}
