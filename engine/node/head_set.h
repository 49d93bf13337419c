/* head_set.h: `set` from the head of a ring, or applied at once on a node
 * alone (head_set.c). Called by the main loop (serve.c) and head.c. */
#ifndef HEAD_SET_H
#define HEAD_SET_H

#include "node.h"

typedef struct head head; /* head.h */

void head_set(head *hd, const peer *from, const proto_request *req);
/* A SET_CHECK, SET or SET_UNDO frame back at the head. */
void head_set_on_frame(head *hd, const ring_frame *f);
/* Fails or undoes the set whose round's deadline has passed. */
void head_set_check_deadline(head *hd, double now);
/* Answers the set in flight with `shutdown`. */
void head_set_shutdown(head *hd);

#endif
