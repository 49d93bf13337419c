/* clock.h: a monotonic clock for step timings (immune to wall-clock jumps). */
#ifndef CLOCK_H
#define CLOCK_H

/* Milliseconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double clock_ms(void);

#endif
