/* fuzz_promtext.c: libFuzzer target for the Prometheus text reader, which
 * reads whatever an engine's /metrics answers.
 *
 * Each input is an exposition. The reader must return a document (or
 * NULL only out of memory), count a bad line exactly when it names one,
 * and answer every query, histograms and quantiles included, without
 * reading out of bounds; a quantile is NaN or within the bounds. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tui/engine/promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    prom_doc *d = prom_parse((const char *)data, size);
    if (!d)
        return 0;
    if ((prom_bad_lines(d) > 0) != (prom_problem(d)[0] != '\0'))
        abort();
    /* Names the seeds and the dictionary use, so that found inputs reach
     * the queries with samples to match. */
    static const char *const names[] = {"llamacpp:prompt_tokens_total", "a", "h", "vllm:x"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int n;
        double v = prom_sum(d, names[i], NULL, NULL, &n);
        if (n == 0 && !isnan(v))
            abort();
        prom_sum(d, names[i], "le", "+Inf", NULL);
        struct prom_hist h;
        if (prom_hist(d, names[i], &h) != 0)
            continue;
        if (h.n < 1 || h.n > PROM_BUCKETS_MAX)
            abort();
        for (int b = 1; b < h.n; b++)
            if (!(h.le[b - 1] < h.le[b]))
                abort();
        /* Between the lowest bound (or 0) and the highest finite one. */
        double lo = h.le[0] < 0 ? h.le[0] : 0, hi = h.le[h.n > 1 ? h.n - 2 : 0];
        for (double q = 0; q <= 1; q += 0.25) {
            double x = prom_quantile(q, &h);
            if (!isnan(x) && (x < lo || x > hi))
                abort();
        }
    }
    prom_free(d);
    return 0;
}
