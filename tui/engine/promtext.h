/* promtext.h: the Prometheus text exposition format (version 0.0.4), read
 * once into a document the engines' tables query by name.
 *
 * Engines export `# HELP` / `# TYPE` lines and samples
 * `name{label="value",...} value [timestamp]`; names may hold colons
 * (`llamacpp:kv_cache_usage_ratio`, `vllm:num_requests_running`). A line
 * that does not parse is skipped and counted: one bad line never hides the
 * others, and the first one is kept as a message naming it.
 */
#ifndef PROMTEXT_H
#define PROMTEXT_H

#include <stddef.h>

typedef struct prom_doc prom_doc;

/* Parses text[0..len) (no NUL needed; a NUL byte is a bad line). NULL only
 * when out of memory. */
prom_doc *prom_parse(const char *text, size_t len);
void prom_free(prom_doc *d);

/* How many lines were skipped, and the first one's problem ("line 3:
 * ..."), "" when none. */
int prom_bad_lines(const prom_doc *d);
const char *prom_problem(const prom_doc *d);

/* The sum of the samples named `name` whose label `label` is `value` (every
 * sample of that name when label is NULL), and in *n (when not NULL) how
 * many there were. NaN and *n = 0 when none: series of one metric that
 * differ by other labels (vLLM's model_name, engine) add up. */
double prom_sum(const prom_doc *d, const char *name, const char *label, const char *value, int *n);

/* A histogram's cumulative buckets, summed over label sets that differ by
 * anything but `le`, in ascending bound order (+Inf last when exported). */
#define PROM_BUCKETS_MAX 40
struct prom_hist {
    int n;
    double le[PROM_BUCKETS_MAX];
    double count[PROM_BUCKETS_MAX];
    double sum, total; /* NAME_sum and NAME_count, NaN when not exported */
};

/* 0 and *h for histogram `name` (its NAME_bucket samples), -1 when it has
 * no bucket or more than PROM_BUCKETS_MAX bounds. */
int prom_hist(const prom_doc *d, const char *name, struct prom_hist *h);

/* Quantile q (0..1) of the observations counted by cumulative buckets, as
 * Prometheus' histogram_quantile computes it: linear inside the bucket the
 * rank falls in, the highest finite bound when it falls in +Inf. NaN when
 * there is no observation, no +Inf bucket or fewer than two buckets. */
double prom_quantile(double q, const struct prom_hist *h);

#endif
