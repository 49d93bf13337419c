/* prefill.h: the chunk size of prefill_step=auto.
 *
 * The rule: the largest chunk, at most PF_AUTO_MAX positions, whose
 * predicted step time stays under the target (--step-target-ms). The
 * prediction models the cost of one position at context depth d as
 * a + b * d (weights are read once per chunk position; attention reads
 * the whole context so far), so a chunk of n positions starting at depth d
 * costs n * (a + b * (d + n / 2)). a and b are fitted by least squares to
 * the last PF_SAMPLES prefill steps this node measured (ms per position
 * against the chunk's middle depth); with too few samples to see a slope,
 * b is 0 and a is the latest ms per position. Before any sample the chunk
 * is PF_PROBE positions: small enough to be quick, large enough to measure.
 */
#ifndef PREFILL_H
#define PREFILL_H

#define PF_AUTO_MAX 8192
#define PF_PROBE 64
#define PF_SAMPLES 8

typedef struct pf_est {
    double depth[PF_SAMPLES]; /* middle depth of the chunk */
    double cost[PF_SAMPLES];  /* ms per position */
    int count;                /* samples held, up to PF_SAMPLES */
    int next;                 /* where the next sample goes */
} pf_est;

void pf_init(pf_est *e);

/* A prefill step of n positions starting at depth took ms. */
void pf_observe(pf_est *e, int n, int depth, double ms);

/* The chunk for a step starting at depth (1..max_chunk). */
int pf_choose(const pf_est *e, int depth, double target_ms, int max_chunk);

/* The fitted a (ms per position) and b (ms per position per position of
 * depth); 0 when there are no samples. */
int pf_fit(const pf_est *e, double *a, double *b);

#endif
