/* percentile.c: nearest-rank percentiles of a set of values.
 *
 * pN is the ceil(N/100 * count)-th smallest value (for count > 0): always a
 * value that occurred, never an interpolation. Ranks are found by selection
 * (O(n) per rank), not by sorting: a summary ranks millions of values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int store_dvec_push(store_dvec *d, double x)
{
    if (d->n == d->cap) {
        size_t ncap = d->cap ? 2 * d->cap : 256;
        double *grown = realloc(d->v, ncap * sizeof *grown);
        if (!grown)
            return -1;
        d->v = grown;
        d->cap = ncap;
    }
    d->v[d->n++] = x;
    return 0;
}

/* Rearranges v so that v[k] is the (k+1)-th smallest, with nothing larger
 * before it and nothing smaller after it (Hoare's selection). */
static void select_kth(double *v, ptrdiff_t n, ptrdiff_t k)
{
    ptrdiff_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* Index in sorted order of the nearest-rank pN of n values. */
static ptrdiff_t rank_index(size_t pct, size_t n)
{
    size_t rank = (pct * n + 99) / 100;
    return rank ? (ptrdiff_t)rank - 1 : 0;
}

double store_percentile(double *v, size_t n, double pct)
{
    /* The slack absorbs binary fractions: 100 * 0.9 is 90.00000000000001. */
    double rank = ceil(pct * (double)n / 100.0 - 1e-9);
    ptrdiff_t k = rank < 1 ? 0 : rank > (double)n ? (ptrdiff_t)n - 1 : (ptrdiff_t)rank - 1;
    select_kth(v, (ptrdiff_t)n, k);
    return v[k];
}

void store_dist_compute(double *v, size_t n, store_dist *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return;
    out->count = (int64_t)n;
    double max = v[0];
    for (size_t i = 1; i < n; i++)
        if (v[i] > max)
            max = v[i];
    out->max = max;
    /* After selecting p99, the values at or below it are the first i99+1:
     * p90 is found among them, then p50 among the first i90+1. */
    ptrdiff_t i99 = rank_index(99, n), i90 = rank_index(90, n), i50 = rank_index(50, n);
    select_kth(v, (ptrdiff_t)n, i99);
    out->p99 = v[i99];
    select_kth(v, i99 + 1, i90);
    out->p90 = v[i90];
    select_kth(v, i90 + 1, i50);
    out->p50 = v[i50];
}

void store_dist_of(store_dvec *d, store_dist *out)
{
    store_dist_compute(d->v, d->n, out);
}
