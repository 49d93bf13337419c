/* plan_job.h: the console's apply of a plan, off its loop.
 *
 * The Plan view proposes a layout (the one it shows); once the operator
 * confirms, the app starts the apply (plan_apply.h) on the job's own
 * thread, with its own copy of the cluster. Every tick of the loop moves
 * the apply's progress lines into the state's events (kind "plan", on the
 * node they are about); when an apply succeeds, the console's cluster
 * takes the rewritten file's layers and command lines, and so do the node
 * actions of its remote. At most one apply at a time. One thread (the
 * app's loop) calls everything here.
 */
#ifndef PLAN_JOB_H
#define PLAN_JOB_H

#include <stddef.h>

#include "tui/core/cluster.h"
#include "tui/core/state.h"
#include "tui/ssh/nodepool.h"
#include "tui/ssh/remote.h"

typedef struct plan_job plan_job;

/* c: the console's cluster, r: its remote (NULL: none); both borrowed,
 * and changed after a successful apply. NULL when out of memory. */
plan_job *plan_job_new(struct cluster *c, remote *r);
/* Waits for an apply still running (it cannot be cut short halfway
 * without leaving the ring in pieces). NULL is fine. */
void plan_job_free(plan_job *j);

/* The layout to apply when asked: node i holds [first[i], last[i]).
 * Ignored while an apply runs. */
void plan_job_propose(plan_job *j, const int *first, const int *last, int n_nodes);

/* Starts applying the proposed layout to a copy of the cluster. -1 with
 * err when an apply runs already or nothing was proposed for its nodes. */
int plan_job_start(plan_job *j, const nodepool_opts *o, char *err, size_t errlen);

/* 1 while an apply runs. */
int plan_job_running(const plan_job *j);

enum plan_job_state { PLAN_JOB_IDLE, PLAN_JOB_RUNNING, PLAN_JOB_DONE };

/* Moves the progress into st's events. Once an apply has ended it is
 * joined, the cluster follows it when it succeeded, and PLAN_JOB_DONE is
 * returned (once). */
enum plan_job_state plan_job_tick(plan_job *j, state *st, double now);

#endif
