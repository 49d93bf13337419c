/* head_ring.h: what the head's ring operations (requests in head.c, set
 * in head_set.c) share: sending a frame around the ring, and waiting for
 * it to come back with a deadline that names the stage that fell silent. */
#ifndef HEAD_RING_H
#define HEAD_RING_H

#include <stddef.h>
#include <stdint.h>

#include "head_state.h"

/* Sends a frame of `kind` with obj as its JSON; a failure is logged (the
 * round's deadline then reports it). */
void head_send(head *hd, ring_kind kind, uint64_t op, json_t *obj);
/* A new JSON object with the head's endpoint and CURVE key, for frames
 * the stages answer by reporting to the head. */
json_t *head_frame_json(const head *hd);
/* Starts waiting for a frame: its deadline is --step-timeout from now. */
void head_pending_arm(const head *hd, pending *w, ring_kind kind, uint64_t op, int64_t step);
/* Stage members[idx] reported handling w's frame. */
void head_pending_report(pending *w, int idx);
/* The index in members of the stage that did not pass w's frame on, or
 * -1 when the ring is not known yet. */
int head_silent_index(const head *hd, const pending *w);
/* Names the stage that did not pass w's frame on. */
void head_silent_stage(const head *hd, const pending *w, char *out, size_t len);

#endif
