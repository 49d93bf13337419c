/* head_step.h: the head's steps and their flights (head_step.c). */
#ifndef HEAD_STEP_H
#define HEAD_STEP_H

#include "head_state.h"

/* 1 when a step can run now; head_step_run runs one. */
int head_step_ready(const head *hd);
void head_step_run(head *hd);
/* The tail's answers: to a prefill chunk (token, logits), to a batch. */
void head_step_on_chunk(head *hd, const ring_frame *f);
void head_step_on_batch(head *hd, const ring_frame *f);
/* A flight past --step-timeout fails every running request. */
void head_step_check_deadlines(head *hd, double now);
/* The flight of frame (op, step), or -1; taking it off the list; failing
 * its jobs (a stage reported the step failed). */
int head_flight_find(const head *hd, uint64_t op, int64_t step);
void head_flight_take(head *hd, int i, flight *out);
void head_flight_fail(head *hd, const flight *fl, proto_code code, const char *message);

#endif
