/* node.h: the state of one `inferd serve` process, shared by the files
 * that make up the server (internal to it):
 *
 *   serve.c   options, sockets, the main loop, control requests, status
 *   head.c    requests on the head stage: queue, admission round, steps,
 *             deadlines, replies; `set` and session drops for the ring
 *   stage.c   this node's layers: admission, a request's cache, live
 *             config, and the frames a non-head stage handles
 *
 * One thread runs everything: the main loop polls the control socket and
 * the ring between steps, so status, set and cancel are answered between
 * steps and while the head waits for the rest of the ring.
 */
#ifndef NODE_H
#define NODE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "curve.h"
#include "forward.h"
#include "guard.h"
#include "kvcache.h"
#include "model.h"
#include "pool.h"
#include "prefill.h"
#include "protocol.h"
#include "ring.h"
#include "sampler.h"
#include "session.h"
#include "steplog.h"
#include "telemetry.h"
#include "tokenizer.h"

typedef struct serve_opts {
    const char *name;
    const char *model;     /* NULL: embedded */
    const char *tokenizer; /* NULL: embedded */
    const char *control;
    const char *telemetry;
    const char *listen; /* NULL: no ring */
    const char *next;
    const char *log;
    const char *pidfile;
    const char *curve_secret;  /* the node's key file: CURVE on both sockets */
    const char *curve_clients; /* directory of allowed client keys */
    int first, last;           /* layers held; last -1: to the end */
    size_t mem_limit;          /* 0: auto */
    int max_ctx;               /* 0: no cap */
    int threads;
    int prefill_step; /* PROTO_PREFILL_AUTO or positions */
    int kv_bits;
    double step_timeout_ms;
    double step_target_ms;
} serve_opts;

/* Where a control request came from: the ROUTER's routing id, and whether
 * the client put an empty delimiter frame before the payload (REQ does). */
typedef struct peer {
    unsigned char id[256];
    size_t id_len;
    int delimiter;
} peer;

/* This node's part of the request in flight: its layers' cache and, on the
 * tail, the sampler. */
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
    JOB_PREPARE, /* the admission round is going around the ring */
    JOB_STEP,    /* ready to run the next step */
    JOB_WAIT     /* a step's hidden states are out; waiting for its token */
} job_state;

/* A generate request on the head. */
typedef struct job {
    peer from;
    proto_request req; /* owns the prompt */
    job_state state;
    double t_recv, t_begin, t_first, t_prefill_end; /* clock_ms: received, steps start, ... */
    uint64_t op;
    uint64_t seed;
    int *ids;   /* a text prompt's ids (see job_prompt) */
    int n_ids;  /* ids to feed: a session's pending token, then the prompt */
    int *chunk; /* the ids of the prefill step in flight */
    int chunk_cap;
    int fed;      /* prompt ids fed so far */
    int pos0;     /* context held before the request (a session's) */
    int pending0; /* the session's pending token before the request */
    int begun;    /* every stage set up: start telemetry sent */
    int generated;
    int last_token; /* the token the next decode step feeds */
    int64_t step;
    pending wait; /* the ring operation in flight */
    /* the step in flight */
    int step_n, step_pos, step_chunk, step_decode;
    double step_t0;
    fwd_stats step_st;
} job;

#define NODE_QUEUE_MAX 16

/* A `set` the head sent around the ring. */
typedef struct set_op {
    int live;
    peer from;
    char id[PROTO_ID_MAX + 1];
    pending wait;
} set_op;

typedef struct node {
    serve_opts o;
    model *m;
    const model_config *cfg;
    pool *pool;
    fwd_stage *fwd;
    tokenizer *tok; /* head only */
    int head, tail; /* this node's place: first and/or last stage */
    void *zctx;
    void *control;
    int curve; /* 1: CURVE on control and telemetry */
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
    pf_est pf;

    stage_req cur;
    char head_ep[PROTO_TEXT_MAX];   /* the head's --listen as the ring reaches it */
    member members[PROTO_RING_MAX]; /* the ring in order, head first */
    int n_members;                  /* 0: not known yet */

    /* head */
    uint64_t next_op;
    job *queue[NODE_QUEUE_MAX]; /* queue[0] is the job in flight once started */
    int n_queue;
    set_op set;

    guard_mem mem; /* last measure, for telemetry */
    double mem_t;
    double t_start, next_heartbeat;
} node;

/* serve.c */
void node_reply(node *nd, const peer *to, char *payload); /* frees payload */
void node_reply_error(node *nd, const peer *to, const char *id, proto_code code, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));
void node_event(node *nd, proto_event_kind kind, const char *req, const char *code,
                const json_t *detail, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
const guard_mem *node_mem(node *nd, int fresh);
/* A json entry describing this stage (name, fingerprint, layers, next). */
json_t *node_identity(const node *nd);

/* stage.c */
typedef struct stage_admission {
    proto_code code; /* PROTO_OK, KV_OOM, CTX_LIMIT or NOT_FOUND */
    char message[PROTO_MESSAGE_MAX];
    size_t needed, available, budget;
} stage_admission;

/* Checks that a request reaching context ctx, on session (may be "") whose
 * context the head holds at pos, fits this stage; evicts idle sessions
 * (appending their names to `evicted`) when that makes it fit. */
void stage_admit(node *nd, const char *session, int pos, int ctx, json_t *evicted,
                 stage_admission *out);
/* Sets up nd->cur for a request. */
int stage_begin(node *nd, uint64_t op, const char *req, const char *session, int pos, int ctx,
                const proto_generate_args *sampling, uint64_t seed, proto_error *e);
/* Ends nd->cur: a session keeps its cache (rolled back to where it was
 * when !ok), anything else is freed. Returns the session's length. */
void stage_end(node *nd, int ok, int pending_token);
/* Applies a set at this step boundary; fills result (this stage's entry). */
int stage_apply_set(node *nd, const proto_set_args *set, json_t *result, proto_error *e);
void stage_drop_sessions(node *nd, const json_t *names);
/* Runs one step of this stage's layers on nd->cur and checks its numbers. */
int stage_forward(node *nd, const int *tokens, const float *x_in, int n, float *x_out,
                  float *logits, fwd_stats *st, proto_error *e);
/* Publishes and logs one step of this stage. */
void stage_publish(node *nd, int64_t step, int decode, int n, int pos, int chunk, double step_ms,
                   const fwd_stats *st, double wait_ms);
/* A frame on a non-head stage. */
void stage_on_frame(node *nd, ring_frame *f);
size_t stage_kv_bytes(const node *nd); /* the request's cache and the sessions' */
/* Reads a set's fields from a SET frame or request. */
int stage_set_from_json(const json_t *obj, proto_set_args *out);
json_t *stage_set_to_json(const proto_set_args *set);

/* head.c */
void head_generate(node *nd, const peer *from, proto_request *req); /* takes req */
void head_cancel(node *nd, const peer *from, const proto_request *req);
void head_set(node *nd, const peer *from, const proto_request *req);
void head_drop(node *nd, const peer *from, const proto_request *req);
void head_on_frame(node *nd, ring_frame *f);
/* Deadlines, queued work and one step when one is ready. */
void head_tick(node *nd);
/* 1 when head_tick has a step to run right away (poll must not sleep). */
int head_busy(const node *nd);
/* The nearest deadline (clock_ms), or a large value. */
double head_deadline(const node *nd);
/* Fails everything in flight or queued with `shutdown`. */
void head_shutdown(node *nd);
int head_active(const node *nd);

#endif
