/* head_step.h: the head's steps and their flights (head_step.c). */
#ifndef HEAD_STEP_H
#define HEAD_STEP_H

#include "node.h"

/* 1 when a step can run now; head_step_run runs one. */
int head_step_ready(const node *nd);
void head_step_run(node *nd);
/* The tail's answers: to a prefill chunk (token, logits), to a batch. */
void head_step_on_chunk(node *nd, const ring_frame *f);
void head_step_on_batch(node *nd, const ring_frame *f);
/* A flight past --step-timeout fails every running request. */
void head_step_check_deadlines(node *nd, double now);
/* The flight of frame (op, step), or -1; taking it off the list; failing
 * its jobs (a stage reported the step failed). */
int head_flight_find(const node *nd, uint64_t op, int64_t step);
void head_flight_take(node *nd, int i, flight *out);
void head_flight_fail(node *nd, const flight *fl, proto_code code, const char *message);

#endif
