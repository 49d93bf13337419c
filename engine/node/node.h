/* node.h: what the parts of one `inferd serve` process share (internal to
 * the server), from the top down, each with a state of its own:
 *
 *   serve.c   sockets, the main loop, control requests, status (its
 *             state is file-local)
 *   head.c    requests on the head stage: queue, admission round,
 *             deadlines, replies; session drops (head_step.c: batched and
 *             pipelined steps; head_job.c: a request's ids and its end;
 *             struct head in head_state.h)
 *   stage.c   this node's layers: what it holds, and the frames a non-head
 *             stage handles (stage_admit.c: admission; stage_req.c: a
 *             request's cache and steps; stage_config.c: live config;
 *             struct stage in stage_state.h)
 *   node.c    what all three use: replies, events, memory, identity
 *
 * Each calls only the ones below it, through their headers (head.h,
 * stage.h, this one), and reaches the others' state only through them.
 * One thread runs everything but the tokenizer of text prompts
 * (tokwork.h): the main loop polls the control socket and the ring
 * between steps, so status, set and cancel are answered between steps
 * and while the head waits for the rest of the ring. The compute
 * pool's threads run inside a step only.
 */
#ifndef NODE_H
#define NODE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "clients.h"
#include "engine/model/model.h"
#include "engine/proto/curve.h"
#include "engine/proto/protocol.h"
#include "guard.h"
#include "options.h"
#include "outbox.h"
#include "ring.h"
#include "steplog.h"
#include "telemetry.h"

/* One stage of the ring as the admission round saw it. */
typedef struct member {
    char name[PROTO_NAME_MAX + 1];
    char fingerprint[65];
    int first, last;
    char next[PROTO_TEXT_MAX]; /* its --next: the following stage's endpoint */
} member;

/* Requests running at once, at most (--max-seqs). */
#define NODE_SEQS_MAX PROTO_SEQS_MAX

/* What every part of the node reads: its options, model and place in the
 * ring, the sockets they all write to, and the ring as it is known here.
 * The server fills it in and owns what it points to; the head (head.h)
 * and the stage (stage.h) keep the rest of their state to themselves. */
typedef struct node {
    serve_opts o; /* o.last is the real last layer once the model is loaded */
    model *m;
    const model_config *cfg;
    int head, tail;             /* this node's place: first and/or last stage */
    void *control;              /* the control ROUTER, for replies */
    outbox *out;                /* replies waiting for their peer to read */
    const curve_keypair *curve; /* this node's keys; NULL: CURVE off */
    ring *ring;                 /* NULL for a single node */
    tel *tel;
    steplog *log;

    /* The ring: the head learns it from its admission rounds, another
     * stage from the head's frames. */
    char head_ep[PROTO_TEXT_MAX];     /* the head's --listen as the ring reaches it */
    char head_key[CURVE_Z85_LEN + 1]; /* with CURVE: the head's public key, from its frames */
    member members[PROTO_RING_MAX];   /* the ring in order, head first */
    int n_members;                    /* 0: not known yet */

    guard_mem mem; /* last measure (node_mem) */
    double mem_t;
    int paged_in; /* every page of the stage's weights was resident once */
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
/* A stage as the ring knows it, from its entry in a frame's "stages". */
void node_member(member *m, const ring_stage *s);

#endif
