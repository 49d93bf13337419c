/* busy.h: how much of its wall time a node spends computing, over the
 * last second (busy %), and how long it sat idle waiting for input
 * before a step (a step message's wait_ms). Fed by the end of each step
 * with its model time; read by telemetry. Times are clock_ms(). */
#ifndef BUSY_H
#define BUSY_H

/* Steps remembered: a second of steps at more than a thousand a second
 * counts the oldest ones as fully inside the window, which over-counts
 * nothing that matters (busy is then near 100% anyway). */
#define BUSY_STEPS 1024
#define BUSY_WINDOW_MS 1000.0

typedef struct busy {
    double end[BUSY_STEPS], model[BUSY_STEPS]; /* a ring of the last steps */
    int next, count;
    double idle_from; /* since when the node has had nothing to run */
} busy;

void busy_init(busy *b, double now);
/* A step that started at t0 and ended at now, computing for model_ms.
 * Returns the time the node sat idle before it (0 when it had work). */
double busy_step(busy *b, double t0, double now, double model_ms);
/* The node gets work after a time without any: idle time before its
 * next step counts from now, not from its last step. */
void busy_idle(busy *b, double now);
/* Model time over wall time in the last BUSY_WINDOW_MS, 0..1. */
double busy_ratio(const busy *b, double now);

#endif
