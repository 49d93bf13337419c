/* head_job.h: a job's ids and its end (head_job.c), for the queue
 * (head.c) and the steps (head_step.c). */
#ifndef HEAD_JOB_H
#define HEAD_JOB_H

#include "head_state.h"

/* The started job of ring operation op, or NULL (it ended). */
job *head_job_by_op(const head *hd, uint64_t op);
/* The prefill chunk setting for the job: a quality request's own when it
 * gives one, else the node's (PROTO_PREFILL_AUTO or positions). */
int head_job_prefill_step(const head *hd, const job *j);
/* The i-th id the job feeds: a session's pending token, then the prompt. */
int head_job_id(const head *hd, const job *j, int i);
/* 1 while reply frames wait for the job's client (outbox.h): its steps
 * pause, so that what the client has not read stays bounded. */
int head_job_paused(const head *hd, const job *j);
/* Ends the jobs whose client is gone (a reply found no peer) or took no
 * frame for --stall-limit (stalled). */
void head_job_check_clients(head *hd, double now);
/* Ends a job with its final reply (ok when e is NULL) and frees it. */
void head_job_finish(head *hd, job *j, const proto_error *e);
void head_job_fail(head *hd, job *j, proto_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
