/* head.h: requests on the head stage (head.c): queue, admission round,
 * batched and pipelined steps, deadlines, replies; session drops for the
 * ring (`set` is head_set.h). Called by the main loop in serve.c, on
 * every node: one that is not the head answers these requests itself
 * (set, drop) or refuses them. What the head holds is its own
 * (head_state.h). */
#ifndef HEAD_H
#define HEAD_H

#include "node.h"
#include "stage.h"

typedef struct head head;

/* Sets up the head of the node's requests, which runs its steps on st;
 * on the head stage (nd->head) loads the tokenizer and starts its thread.
 * nd and st must outlive it. */
int head_create(head **out, node *nd, stage *st, char *err, size_t errlen);
void head_free(head *hd); /* NULL: nothing */
/* The tokenizer thread's descriptor, readable when it has news (poll);
 * -1 when the node is not the head. */
int head_tokenizer_fd(const head *hd);
/* The head stage's tokenizer (NULL elsewhere): only read, so other
 * threads may use it while the node runs (as its tokenizer thread does). */
const struct tokenizer *head_tok(const head *hd);

/* Queues a generate or an eval; takes req. It runs once one of the
 * --max-seqs places is free. */
void head_enqueue(head *hd, const peer *from, proto_request *req);
void head_cancel(head *hd, const peer *from, const proto_request *req);
void head_drop(head *hd, const peer *from, const proto_request *req);
void head_on_frame(head *hd, ring_frame *f);
/* A client's connection closed: its requests, running or queued, end. */
void head_client_gone(head *hd, client_tag conn);
/* Deadlines, queued work and one step when one is ready. */
void head_tick(head *hd);
/* 1 when head_tick has a step to run right away (poll must not sleep). */
int head_busy(const head *hd);
/* The nearest deadline (clock_ms), or a large value. */
double head_deadline(const head *hd);
/* Fails everything in flight or queued with `shutdown`. */
void head_shutdown(head *hd);
/* The ring's health, on the head of a ring (head_health.h): fills
 * s->ring_health, which stays unknown elsewhere. */
void head_ring_health(const head *hd, proto_status *s);
/* A count that changes with the ring's health, so that the node can
 * publish a heartbeat at once rather than at the next second. */
unsigned head_health_changes(const head *hd);
int head_active(const head *hd); /* requests holding a place */
int head_queued(const head *hd); /* requests waiting for one */

#endif
