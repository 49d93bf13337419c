/* node.h: the state of one `inferd serve` process, shared by the files
 * that make up the server (internal to it), from the top down:
 *
 *   serve.c   sockets, the main loop, control requests, status
 *   head.c    requests on the head stage: queue, admission round,
 *             deadlines, replies; session drops (head_step.c: batched and
 *             pipelined steps; head_job.c: a request's ids and its end)
 *   stage.c   this node's layers: admission, a request's cache, live
 *             config, and the frames a non-head stage handles
 *   node.c    what all three use: replies, events, memory, identity
 *
 * Each calls only the ones below it, through their headers (head.h,
 * stage.h, this one). One thread runs everything but the tokenizer of
 * text prompts (tokwork.h): the main loop polls the control socket and the
 * ring between steps, so status, set and cancel are answered between
 * steps and while the head waits for the rest of the ring. The compute
 * pool's threads run inside a step only.
 */
#ifndef NODE_H
#define NODE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "busy.h"
#include "clients.h"
#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "engine/compute/sampler.h"
#include "engine/model/model.h"
#include "engine/model/tokenizer.h"
#include "engine/proto/curve.h"
#include "engine/proto/protocol.h"
#include "guard.h"
#include "options.h"
#include "prefill.h"
#include "ring.h"
#include "session.h"
#include "steplog.h"
#include "telemetry.h"
#include "tokwork.h"

/* Where a control request came from: the ROUTER's routing id, whether
 * the client put an empty delimiter frame before the payload (REQ does),
 * and the connection, to notice when it closes. */
typedef struct peer {
    unsigned char id[256];
    size_t id_len;
    int delimiter;
    client_tag conn;
} peer;

/* This node's part of a request running on the ring: its layers' cache
 * and, on the tail, the sampler. A node holds up to --max-seqs of them. */
typedef struct stage_req {
    int live;
    uint64_t op;
    char req[PROTO_ID_MAX + 1];
    char session[PROTO_ID_MAX + 1]; /* "" for none */
    kv_cache *kv;
    int pos0;          /* context held before the request (a session's) */
    int ctx;           /* context the request was admitted for */
    sampler *smp;      /* tail only */
    int64_t next_step; /* the step the next hidden frame must carry */
    int numeric;       /* a numeric event was raised for this request */
} stage_req;

/* One stage of the ring as the admission round saw it. */
typedef struct member {
    char name[PROTO_NAME_MAX + 1];
    char fingerprint[65];
    int first, last;
    char next[PROTO_TEXT_MAX]; /* its --next: the following stage's endpoint */
} member;

/* A ring operation the head waits for, with its deadline and the stages
 * that reported having handled it (bit i: members[i]). */
typedef struct pending {
    int live;
    ring_kind kind;
    uint64_t op;
    int64_t step;
    double deadline;
    unsigned reported;
} pending;

typedef enum job_state {
    JOB_QUEUED,
    JOB_TOKENIZE, /* a text prompt is with the tokenizer's thread */
    JOB_PREPARE,  /* the admission round is going around the ring */
    JOB_RUN       /* admitted: its steps run, batched with other requests' */
} job_state;

/* A generate or eval request on the head. */
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
} job;

/* Requests waiting for a place beside the --max-seqs running ones. */
#define NODE_QUEUE_MAX 16
#define NODE_SEQS_MAX PROTO_SEQS_MAX
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

/* The last set this stage applied, so that an undo can put it back. */
typedef struct set_undo {
    uint64_t op; /* 0: none */
    int kv_bits, prefill_step;
} set_undo;

typedef struct node {
    serve_opts o;
    model *m;
    const model_config *cfg;
    pool *pool;
    fwd_stage *fwd;
    tokenizer *tok; /* head only */
    tokwork *tokw;  /* head only: tok's thread for text prompts */
    int head, tail; /* this node's place: first and/or last stage */
    void *zctx;
    void *control;
    clients *clients; /* the control socket's connections */
    int curve;        /* 1: CURVE on control, telemetry and the ring's links */
    curve_keypair curve_keys;
    curve_allow *allow;
    curve_zap *zap;
    char warning[PROTO_MESSAGE_MAX];
    ring *ring; /* NULL for a single node */
    tel *tel;
    steplog *log;
    sess_table *sessions;
    float *logits; /* tail: [vocab] */

    int kv_bits;      /* live config */
    int prefill_step; /* PROTO_PREFILL_AUTO or positions */
    int max_seqs;     /* requests running at once */
    busy busy;        /* this node's compute time, for telemetry */
    pf_est pf;
    set_undo undo;

    stage_req reqs[NODE_SEQS_MAX]; /* live ones: the requests running here */
    int n_reqs;
    char head_ep[PROTO_TEXT_MAX];     /* the head's --listen as the ring reaches it */
    char head_key[CURVE_Z85_LEN + 1]; /* with CURVE: the head's public key, from its frames */
    member members[PROTO_RING_MAX];   /* the ring in order, head first */
    int n_members;                    /* 0: not known yet */

    /* head */
    uint64_t next_op;
    job *queue[NODE_QUEUE_MAX + NODE_SEQS_MAX]; /* in arrival order, running and waiting */
    int n_queue;
    flight flights[NODE_DEPTH_MAX]; /* steps out on the ring, oldest first */
    int n_flights;
    int64_t next_batch; /* the number the next batch frame carries */
    int decode_turn;    /* 1: the next step is a decode batch, when both kinds wait */
    set_op set;

    guard_mem mem; /* last measure, for telemetry */
    double mem_t;
    double t_start, next_heartbeat;
} node;

/* node.c: what head.c, stage.c and serve.c share */
void node_reply(node *nd, const peer *to, char *payload); /* frees payload */
/* The same with data (len bytes, copied) as a second frame of the reply:
 * an eval chunk's logits. */
void node_reply_with(node *nd, const peer *to, char *payload, const void *data, size_t len);
void node_reply_error(node *nd, const peer *to, const char *id, proto_code code, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));
void node_event(node *nd, proto_event_kind kind, const char *req, const char *code,
                const json_t *detail, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
const guard_mem *node_mem(node *nd, int fresh);
/* A json entry describing this stage (name, fingerprint, layers, next). */
json_t *node_identity(const node *nd);

#endif
