/* prefill.c: see prefill.h. */
#include "prefill.h"

#include <string.h>

void pf_init(pf_est *e)
{
    memset(e, 0, sizeof *e);
}

void pf_observe(pf_est *e, int n, int depth, double ms)
{
    if (n <= 0 || !(ms >= 0.0))
        return;
    e->depth[e->next] = depth + n / 2.0;
    e->cost[e->next] = ms / n;
    e->next = (e->next + 1) % PF_SAMPLES;
    if (e->count < PF_SAMPLES)
        e->count++;
}

int pf_fit(const pf_est *e, double *a, double *b)
{
    *a = *b = 0.0;
    if (e->count == 0)
        return 0;
    double mx = 0, my = 0;
    for (int i = 0; i < e->count; i++) {
        mx += e->depth[i];
        my += e->cost[i];
    }
    mx /= e->count;
    my /= e->count;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < e->count; i++) {
        sxx += (e->depth[i] - mx) * (e->depth[i] - mx);
        sxy += (e->depth[i] - mx) * (e->cost[i] - my);
    }
    /* A slope needs depths that differ by more than one chunk's worth of
     * noise; a negative one is noise too (cost never falls with depth). */
    if (sxx > 1.0 && sxy > 0.0) {
        *b = sxy / sxx;
        *a = my - *b * mx;
        if (*a < 0.0)
            *a = 0.0;
    } else {
        int latest = (e->next + PF_SAMPLES - 1) % PF_SAMPLES;
        *a = e->cost[latest];
    }
    return 1;
}

static double pf_predict(double a, double b, int depth, int n)
{
    return n * (a + b * (depth + n / 2.0));
}

int pf_choose(const pf_est *e, int depth, double target_ms, int max_chunk)
{
    if (max_chunk < 1)
        max_chunk = 1;
    double a, b;
    if (!pf_fit(e, &a, &b))
        return PF_PROBE < max_chunk ? PF_PROBE : max_chunk;
    /* The predicted time grows with n: the largest n under the target is
     * found by bisection over [1, max_chunk]. */
    int lo = 1, hi = max_chunk;
    if (pf_predict(a, b, depth, hi) <= target_ms)
        return hi;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (pf_predict(a, b, depth, mid) <= target_ms)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}
