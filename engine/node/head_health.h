/* head_health.h: whether the head's ring answers (head_health.c), for
 * the head's other files: a stage timeout marks the ring down at the
 * stage that fell silent, requests are refused at once with ring_down
 * while it is, and probes go around the ring until one comes back. */
#ifndef HEAD_HEALTH_H
#define HEAD_HEALTH_H

#include "head_state.h"

/* A wait of w ran out (why says which and how long): the ring is down at
 * the stage that did not pass w's frame on, and every request not yet
 * running ends with ring_down. */
void head_health_broken(head *hd, const pending *w, const char *why);
/* 1 with e filled (ring_down, naming the stage) while the ring is down. */
int head_health_refuse(const head *hd, proto_error *e);
/* A ring round came back whole: the ring answers. */
void head_health_seen(head *hd);
/* Sends the next probe when one is due. */
void head_health_tick(head *hd, double now);
/* When head_health_tick has something to do (clock_ms), or a large value. */
double head_health_deadline(const head *hd);
/* A probe frame came back to the head. */
void head_health_on_probe(head *hd, const ring_frame *f);
/* The probe out now with ring operation op, for the reports of the
 * stages it passed; NULL for none. */
pending *head_health_wait(head *hd, uint64_t op);
/* A stage refused the probe (a ring longer than PROTO_RING_MAX): down at
 * that stage, for that reason. */
void head_health_refused(head *hd, const char *stage, const char *message);

#endif
