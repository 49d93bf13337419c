/* head_state.h: the head's state, shared by the files that make it up
 * (head.c, head_job.c, head_step.c, head_set.c, head_ring.c) and by
 * nobody else: serve.c goes through head.h and head_set.h. */
#ifndef HEAD_STATE_H
#define HEAD_STATE_H

#include "engine/compute/sampler.h"
#include "engine/model/tokenizer.h"
#include "node.h"
#include "prefill.h"
#include "stage.h"
#include "tokwork.h"

/* A ring operation the head waits for, with its deadline and the stages
 * that reported having handled it (bit i: members[i]). */
typedef struct pending {
    int live;
    ring_kind kind;
    uint64_t op;
    int64_t step;
    double deadline;
    uint32_t reported[(PROTO_RING_MAX + 31) / 32];
} pending;

typedef enum job_state {
    JOB_QUEUED,
    JOB_TOKENIZE, /* a text prompt is with the tokenizer's thread */
    JOB_PREPARE,  /* the admission round is going around the ring */
    JOB_RUN       /* admitted: its steps run, batched with other requests' */
} job_state;

/* A quality request's windows, pairs of steps and figures (head_quality.c). */
typedef struct head_quality head_quality;

/* A generate, eval or quality request on the head. */
typedef struct job {
    peer from;
    proto_request req; /* owns the prompt */
    job_state state;
    double t_recv, t_begin, t_first, t_prefill_end; /* clock_ms: received, steps start, ... */
    uint64_t op;
    uint64_t seed;
    int *ids;      /* a text prompt's ids (see job_prompt) */
    int n_text;    /* how many; -1: the tokenizer ran out of memory */
    int submitted; /* the text prompt is with the tokenizer's thread */
    int tokenized; /* ids and n_text are back from it */
    int n_ids;     /* ids to feed: a session's pending token, then the prompt */
    int *chunk;    /* the ids of the prefill step being built */
    int chunk_cap;
    int max_chunk; /* the largest prefill chunk every stage admitted */
    int sent;      /* prompt ids sent into steps so far */
    int fed;       /* prompt ids whose steps came back */
    int in_flight; /* its steps out on the ring */
    int pos0;      /* context held before the request (a session's) */
    int pending0;  /* the session's pending token before the request */
    int begun;     /* every stage set up: start telemetry sent */
    int generated;
    int last_token;    /* the token the next decode step feeds */
    int64_t step;      /* the number the next step of this request carries */
    pending wait;      /* the admission round */
    float *logits;     /* an eval on a single node: the step's logits [n][vocab] */
    size_t logits_cap; /* floats */
    head_quality *q;   /* a quality request's, else NULL */
    double *embed;     /* an embed: the final norm's rows summed so far [dim] */
} job;

/* Requests waiting for a place beside the --max-seqs running ones. */
#define NODE_QUEUE_MAX 16

#define NODE_DEPTH_MAX PROTO_DEPTH_MAX

/* A step the head sent around the ring and waits for: one request's
 * prefill chunk (RING_HIDDEN) or a batch of decode positions (RING_BATCH,
 * jobs listed by their ops in the frame's order). */
typedef struct flight {
    pending wait;
    int batch;
    int pos, n;     /* a chunk's positions; a batch's requests */
    double head_ms; /* the head's compute for it */
    uint64_t ops[NODE_SEQS_MAX];
} flight;

/* A `set` the head sends around the ring in two phases (PROTOCOL.md "Live
 * config"): check on every stage, then apply; a stage that fails to apply
 * has the ones that did put back (undo). */
typedef struct set_op {
    int live;
    peer from;
    char id[PROTO_ID_MAX + 1];
    proto_set_args args;
    pending wait;        /* the round in flight: RING_SET_CHECK, RING_SET or RING_SET_UNDO */
    proto_error failure; /* the undo round's reason */
} set_op;

/* Whether the ring answers (head_health.c): loading until a frame first
 * comes back whole, down from a stage timeout until a probe comes back. */
typedef struct ring_health {
    int state;                      /* PROTO_RING_LOADING, _UP, _DOWN */
    char stage[PROTO_NAME_MAX + 1]; /* down: the stage it could not reach */
    char why[PROTO_MESSAGE_MAX];    /* down: the timeout that said so */
    pending probe;                  /* the probe out now (live when one is) */
    uint64_t first_probe;           /* probes from this op on answer for the state */
    double next_probe;              /* clock_ms */
    unsigned changes;               /* +1 at every change of state or stage */
} ring_health;

/* head.h names it for the rest of the node, which sees no more of it. */
typedef struct head head;
struct head {
    node *nd;
    stage *st;      /* this node's own stage: the head runs its layers too */
    tokenizer *tok; /* nd->head only */
    tokwork *tokw;  /* nd->head only: tok's thread for text prompts */
    pf_est pf;
    uint64_t next_op;
    job *queue[NODE_QUEUE_MAX + NODE_SEQS_MAX]; /* in arrival order, running and waiting */
    int n_queue;
    flight flights[NODE_DEPTH_MAX]; /* steps out on the ring, oldest first */
    int n_flights;
    int64_t next_batch; /* the number the next batch frame carries */
    int decode_turn;    /* 1: the next step is a decode batch, when both kinds wait */
    set_op set;
    ring_health health;
};

#endif
