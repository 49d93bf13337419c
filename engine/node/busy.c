/* busy.c: a node's compute time over the last second (see busy.h). */
#include "busy.h"

#include <string.h>

void busy_init(busy *b, double now)
{
    memset(b, 0, sizeof *b);
    b->idle_from = now;
}

double busy_step(busy *b, double t0, double now, double model_ms)
{
    double idle = t0 > b->idle_from ? t0 - b->idle_from : 0.0;
    b->end[b->next] = now;
    b->model[b->next] = model_ms;
    b->next = (b->next + 1) % BUSY_STEPS;
    if (b->count < BUSY_STEPS)
        b->count++;
    /* Idle from now until the next step starts (at once when work waits). */
    b->idle_from = now;
    return idle;
}

void busy_idle(busy *b, double now)
{
    b->idle_from = now;
}

/* The part of a step's compute inside the window: compute is taken to be
 * the last model_ms of the step, when it ran. */
static double overlap(double end, double model, double from)
{
    double start = end - model;
    if (end <= from)
        return 0.0;
    return start >= from ? model : end - from;
}

double busy_ratio(const busy *b, double now)
{
    double from = now - BUSY_WINDOW_MS, sum = 0.0;
    for (int i = 0; i < b->count; i++) {
        int k = (b->next - 1 - i + BUSY_STEPS) % BUSY_STEPS;
        if (b->end[k] <= from)
            break;
        sum += overlap(b->end[k], b->model[k], from);
    }
    double r = sum / BUSY_WINDOW_MS;
    return r > 1.0 ? 1.0 : r;
}
