/* clock.h: a monotonic clock for step timings (immune to wall-clock jumps). */
#ifndef CLOCK_H
#define CLOCK_H

#include <time.h>

/* Milliseconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double clock_ms(void);

/* CLOCK_REALTIME ms from now: the absolute deadline pthread_cond_timedwait
 * takes (its condition variables use the wall clock by default). */
struct timespec clock_deadline(long ms);

#endif
