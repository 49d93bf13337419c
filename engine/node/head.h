/* head.h: requests on the head stage (head.c): queue, admission round,
 * batched and pipelined steps, deadlines, replies; session drops for the
 * ring (`set` is head_set.h). Called
 * by the main loop in serve.c. */
#ifndef HEAD_H
#define HEAD_H

#include "node.h"

/* Queues a generate or an eval; takes req. It runs once one of the
 * --max-seqs places is free. */
void head_enqueue(node *nd, const peer *from, proto_request *req);
void head_cancel(node *nd, const peer *from, const proto_request *req);
void head_drop(node *nd, const peer *from, const proto_request *req);
void head_on_frame(node *nd, ring_frame *f);
/* A client's connection closed: its requests, running or queued, end. */
void head_client_gone(node *nd, client_tag conn);
/* Deadlines, queued work and one step when one is ready. */
void head_tick(node *nd);
/* 1 when head_tick has a step to run right away (poll must not sleep). */
int head_busy(const node *nd);
/* The nearest deadline (clock_ms), or a large value. */
double head_deadline(const node *nd);
/* Fails everything in flight or queued with `shutdown`. */
void head_shutdown(node *nd);
int head_active(const node *nd); /* requests holding a place */
int head_queued(const node *nd); /* requests waiting for one */

#endif
