/* stress_int.h: what the files of the stress runner share, from the top
 * down: stress.c the run's life and thread, stress_modes.c the legs,
 * stress_wire.c the connection to the ring, stress_record.c the recording
 * of what comes back, stress_progress.c what watchers see. Other modules
 * use stress.h. */
#ifndef STRESS_INT_H
#define STRESS_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/proto/client.h"
#include "engine/proto/protocol.h"
#include "stress.h"

#define ST_INFLIGHT_MAX 16     /* the most requests in flight (--concurrency) */
#define ST_IDMAP 256           /* recent request ids kept to attribute late steps */
#define ST_NODE_DOWN_MS 3000.0 /* a node without a heartbeat this long is down */
#define ST_SETTLE_MS 300.0     /* telemetry still taken in after the last request */

/* One node of the ring, as its status and telemetry describe it. */
typedef struct st_node {
    char name[PROTO_NAME_MAX + 1];
    stress_node_ep ep;
    proto_status status;       /* its status reply at start */
    double seen_ms;            /* clock_ms() of its last telemetry message; 0: none yet */
    int down;                  /* no heartbeat for ST_NODE_DOWN_MS (+ 2 x slowest_ms) */
    double slowest_ms;         /* its longest step so far */
    int kv_bits, prefill_step; /* last seen in its telemetry; -1: not since reset */
    int has_seq;
    uint64_t seq;
} st_node;

/* A generate request in flight. Times are clock_ms(). */
typedef struct st_req {
    char id[PROTO_ID_MAX + 1];
    int64_t idx;
    int leg;
    char session[PROTO_ID_MAX + 1]; /* "" when none */
    int64_t ctx_before, ctx_target;
    int prompt_tokens, gen;
    double t_sent, t_first, t_prev, t_activity;
    double *itl; /* gaps between token frames, ms; room for gen */
    int n_tokens;
    /* step_ms of the request's steps, by node (ring order) and phase
     * (0 prefill, 1 decode), summed as they come. */
    double step_sum[STRESS_NODES_MAX][2];
    int step_n[STRESS_NODES_MAX][2];
} st_req;

/* A request that ended, for the leg that sent it. */
typedef struct st_outcome {
    int64_t idx;
    int ok;
    char code[PROTO_CODE_MAX];
    char message[PROTO_MESSAGE_MAX];
    int64_t ctx_before, ctx_after;
    int gen_tokens;
    double ttft_ms, e2e_ms, decode_tps; /* < 0: unknown */
    store_point point;                  /* ok requests: the request as a chart point */
} st_outcome;

struct stress_run {
    stress_opts o;
    stress_target target;
    store *db;
    int64_t run;

    void *zctx;
    client *ctl; /* the head's control socket */
    void *sub;   /* every node's telemetry */
    int n_nodes;
    st_node nodes[STRESS_NODES_MAX]; /* in ring order once connected */
    int64_t telemetry_lost;

    int leg, n_legs, kv_bits, prefill_step; /* the leg running and its settings */
    int64_t next_idx;
    st_req inflight[ST_INFLIGHT_MAX];
    int n_inflight;
    struct {
        char id[PROTO_ID_MAX + 1];
        int64_t idx;
        int leg;
    } idmap[ST_IDMAP];
    int idmap_next;
    st_outcome done[ST_INFLIGHT_MAX]; /* ended, not yet taken by the leg */
    int n_done;

    /* The control call awaited (set, drop_session): its id and reply. */
    char call_id[PROTO_ID_MAX + 1];
    int call_done;
    proto_reply call_reply;

    /* What the result reports. */
    double t_first_sent, t_last_end; /* clock_ms(); 0: none */
    int64_t ok_requests, failed_requests, gen_tokens_ok;
    double *soak_v; /* soak: ttft, e2e, decode tok/s of each ok request, 3 per request */
    size_t soak_n, soak_cap;
    char failure[STRESS_TEXT_MAX * 2];
    int store_broken;  /* the store could not write: the run stops */
    stress_result res; /* filled when the run ends */

    pthread_t thread;
    int started;
    atomic_int abort;
    pthread_mutex_t mu; /* guards prog, points, leg_fraction, t0_ms, t_end_ms */
    stress_progress prog;
    store_point points[STRESS_POINTS_MAX]; /* a ring of the newest chart points */
    size_t n_points;                       /* every point so far; the ring holds the newest */
    double leg_fraction; /* how far the current leg is, 0..1, for the ETA */
    double t0_ms, t_end_ms;
};

/* ---- stress_wire.c ---- */

/* Asks every node for its status, finds the head, connects the control
 * socket and the telemetry, and waits for a heartbeat of every node. */
int st_connect(stress_run *r, char *err, size_t errlen);
void st_disconnect(stress_run *r);

/* The cluster JSON of the run (text, free()), NULL when out of memory. */
char *st_cluster_json(const stress_run *r);

/* Waits at most timeout_ms for frames and telemetry, handles them all and
 * checks the timers (silent requests, silent nodes). -1 on a socket error. */
int st_pump(stress_run *r, int timeout_ms, char *err, size_t errlen);

/* Sends a generate request (args: the op's fields, a session among them
 * when it has one) and tracks it. */
int st_send(stress_run *r, json_t *args, int64_t ctx_before, int64_t ctx_target, int prompt_tokens,
            int gen, char *err, size_t errlen);

/* Takes the oldest ended request: 1, or 0 when none has ended. */
int st_take(stress_run *r, st_outcome *out);

/* Sends a control request and pumps until its final frame: 1 with *out
 * (proto_reply_free it), 0 when nothing came for timeout_ms, -1 on error. */
int st_call(stress_run *r, const char *op, json_t *args, proto_reply *out, int timeout_ms,
            char *err, size_t errlen);

/* Ends every request in flight with code and message (recorded as failed)
 * and cancels them on the head. */
void st_end_all(stress_run *r, const char *code, const char *message);

/* ---- stress_record.c ---- */

/* Ends inflight[i]: records its row and hands its outcome to the leg. ok:
 * stats is the node's final stats; else code and message say why. */
void st_finish(stress_run *r, int i, int ok, const json_t *stats, const char *code,
               const char *message);

/* Records a telemetry message (steps, events) and follows each node's
 * liveness, config and message loss. */
void st_on_telemetry(stress_run *r, const proto_tel *t);

/* Records a runner event (kind, detail: stolen, may be NULL). */
void st_event(stress_run *r, const char *node, const char *kind, json_t *detail);

/* 1 once the store failed to write a row (a full disk), with the failure
 * recorded and shown: the run must stop, since what it would record next
 * is lost. 0 while writes succeed. */
int st_store_failed(stress_run *r);

/* ---- stress_modes.c ---- */

/* Runs every leg of the run; returns the run's status. */
store_status st_run_legs(stress_run *r);

/* ---- stress_progress.c ---- */

int st_aborted(stress_run *r);
/* Progress updates from the run's thread (under the lock). */
/* A leg starts (r->leg, n_legs, kv_bits, prefill_step); total -1 and
 * ctx_target -1 when unknown. */
void st_progress_leg(stress_run *r, int64_t requests_total, int64_t ctx_target);
void st_progress_request(stress_run *r, const st_outcome *o, int64_t ctx);
/* How far the current leg is, for the ETA. */
void st_progress_work(stress_run *r, double done, double total);
void st_progress_error(stress_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
