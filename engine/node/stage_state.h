/* stage_state.h: the stage's state, shared by the files that make it up
 * (stage.c, stage_admit.c, stage_req.c, stage_config.c) and by nobody
 * else: the rest of the node goes through stage.h. */
#ifndef STAGE_STATE_H
#define STAGE_STATE_H

#include "busy.h"
#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "engine/compute/sampler.h"
#include "node.h"
#include "session.h"

/* stage.h names both for the rest of the node, which sees no more of them. */
typedef struct stage stage;
typedef struct stage_req stage_req;

/* This node's part of a request running on the ring: its layers' cache
 * and, on the tail, the sampler. A node holds up to --max-seqs of them. */
struct stage_req {
    int live;
    uint64_t op;
    char req[PROTO_ID_MAX + 1];
    char session[PROTO_ID_MAX + 1]; /* "" for none */
    kv_cache *kv;                   /* the cache the step in progress runs on */
    /* A quality request's other cache: it holds a test cache at its own
     * bits and a reference at 32 (which a set never converts); kv is the
     * reference while ref_now. NULL for any other request. */
    kv_cache *other;
    int ref_now;
    int pos0;          /* context held before the request (a session's) */
    int ctx;           /* context the request was admitted for */
    sampler *smp;      /* tail only */
    int logprobs;      /* tail: the alternatives asked with each token, -1: none */
    float *lp_row;     /* tail, with logprobs: the raw logits the sampler overwrites */
    int64_t next_step; /* the step the next hidden frame must carry */
    int numeric;       /* a numeric event was raised for this request */
};

/* The last set this stage applied, so that an undo can put it back. */
typedef struct set_undo {
    uint64_t op; /* 0: none */
    int kv_bits, prefill_step;
} set_undo;

struct stage {
    node *nd;
    pool *pool;
    fwd_stage *fwd;
    sess_table *sessions;
    float *logits; /* tail: [max_seqs][vocab] */

    int kv_bits;      /* live config */
    int prefill_step; /* PROTO_PREFILL_AUTO or positions */
    set_undo undo;
    busy busy; /* this node's compute time, for telemetry */

    stage_req reqs[NODE_SEQS_MAX]; /* live ones: the requests running here */
    int n_reqs;
};

/* 1 for a running request whose cache is at the stage's live kv_bits
 * (every one but a quality request's). */
int stage_req_follows_set(const stage_req *c);
/* The running requests' caches and the sessions'. */
size_t stage_kv_bytes(const stage *sg);
/* "stage 'name' (layers a:b)", for messages. */
void stage_name_layers(const stage *sg, char *buf, size_t len);

#endif
