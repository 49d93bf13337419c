/* state.h: what the console knows about the cluster, kept in memory.
 *
 * Fed by decoded telemetry (protocol.h), read by the views and the CLI.
 * Per node: a ring of the last STATE_STEP_RING steps (for percentiles over
 * the last seconds), per-second aggregates for the last STATE_SECONDS
 * seconds (for charts), the latest heartbeat, memory, config, the message
 * loss counted from sequence gaps, and liveness. Cluster-wide: totals, the
 * current request, and a ring of events.
 *
 * Time is always passed in (`now`, seconds >= 0 on the console's monotonic
 * clock) and never read inside, so that tests are deterministic. Messages
 * are filed under the second they arrived in, not the node's clock, so
 * that nodes with skewed clocks still line up.
 *
 * Ingest does not allocate. Pointers returned by queries stay valid until
 * the next call that changes the state. Not thread-safe: one thread owns it.
 */
#ifndef STATE_H
#define STATE_H

#include <stdint.h>

#include "engine/proto/protocol.h"
#include "tui/core/alerts.h"
#include "tui/engine/engine.h"

#define STATE_STEP_RING 4096
#define STATE_SECONDS 600
#define STATE_EVENTS 2000

/* Heartbeats come once a second: three missed make a node stale. */
#define STATE_STALE_S 3.0
#define STATE_DOWN_S 10.0
/* A node the console launched that has not sent a heartbeat by then is down. */
#define STATE_START_TIMEOUT_S 120.0

/* The window of the dashboard's p50s, rates and highlights. */
#define STATE_RECENT_S 5
/* A node without a step for this long shows as idle rather than in a
 * phase, and its busy fraction as 0. */
#define STATE_IDLE_S 2.0
/* The dashboard's busy fraction: the mean of the last complete seconds'. */
#define STATE_BUSY_S 2
/* act_max "far above its recent level": the largest act_max of the last
 * STATE_ACT_NOW_S seconds exceeds STATE_ACT_SPIKE times the median of the
 * per-second maxima of the STATE_ACT_BASE_S seconds before them (with at
 * least STATE_ACT_MIN_BASE seconds of data there). Non-finite activations
 * are flagged for STATE_ACT_BASE_S seconds after the last one. */
#define STATE_ACT_NOW_S 5
#define STATE_ACT_BASE_S 60
#define STATE_ACT_MIN_BASE 10
#define STATE_ACT_SPIKE 8.0
typedef struct state state;

enum state_live { STATE_DOWN, STATE_STARTING, STATE_UP, STATE_STALE };

/* Phases of a step; STATE_ANY in queries means both. */
enum state_phase {
    STATE_PREFILL = PROTO_PHASE_PREFILL,
    STATE_DECODE = PROTO_PHASE_DECODE,
    STATE_ANY
};

/* Per-step timings, for percentiles. */
enum state_metric { STATE_STEP_MS, STATE_MODEL_MS, STATE_EVAL_MS, STATE_WAIT_MS };

/* Per-second series, for charts. Timings are the mean of the second;
 * memory and act_max the last and largest value of the second. */
enum state_series {
    STATE_SERIES_STEP_MS,
    STATE_SERIES_MODEL_MS,
    STATE_SERIES_EVAL_MS,
    STATE_SERIES_STEPS,  /* steps in the second */
    STATE_SERIES_TOKENS, /* tokens in the second */
    STATE_SERIES_SEQS,   /* sequences per step (the batch), mean of the second */
    STATE_SERIES_KV_BYTES,
    STATE_SERIES_RSS,
    STATE_SERIES_HEADROOM,
    STATE_SERIES_ACT_MAX,
    /* Model time / wall time, 0..1: the mean of the `busy` the second's
     * steps reported, else the heartbeat's, else (a node that does not
     * say) the second's model_ms summed over its 1000 ms, capped at 1.
     * The node's own figure wins because it counts every step, including
     * those whose message was lost. Any phase. */
    STATE_SERIES_BUSY
};

/* Highlights of a node (bits). */
/* (Orchestration-bound is an alert, with hysteresis: alerts.h.) */
#define STATE_FLAG_LOW_HEADROOM 2u /* headroom < alert_headroom_pct of budget */
#define STATE_FLAG_NONFINITE 4u    /* NaN/Inf activations lately */
#define STATE_FLAG_ACT_SPIKE 8u    /* act_max far above its recent level */
#define STATE_FLAG_FINGERPRINT 16u /* model differs from the other stages' */

/* Memory split for the dashboard's bar: weights + kv + other + headroom
 * make the budget (other = used - weights - kv; each part clamped at 0, so
 * a node over budget shows no headroom rather than a negative one). */
struct state_memory {
    uint64_t budget, weights, kv, other, headroom;
    int64_t headroom_signed; /* negative when over budget */
    int known;               /* 0 until a step or heartbeat told */
};

/* Where a live config change is. */
enum state_cfg_stage {
    STATE_CFG_NONE,      /* nothing asked */
    STATE_CFG_REQUESTED, /* sent, no reply yet */
    STATE_CFG_ACKED,     /* the node said ok, telemetry does not show it yet */
    STATE_CFG_CONFIRMED, /* telemetry shows the requested values */
    STATE_CFG_FAILED     /* the node refused: see error */
};

struct state_config {
    int kv_bits;           /* in effect, from telemetry; 0 = not known yet */
    int prefill_step;      /* as configured (PROTO_PREFILL_AUTO or a size); -1 = not known */
    int prefill_effective; /* the chunk size steps report (auto resolved); 0 = none yet */
    proto_set_args want;   /* the last request */
    enum state_cfg_stage stage;
    double t_requested, t_acked, t_confirmed;
    char error[PROTO_MESSAGE_MAX];
};

/* One row of the dashboard. */
struct state_node_view {
    const char *name;
    enum state_live live;
    int phase;                   /* STATE_PREFILL, STATE_DECODE, or -1 when idle */
    int layer_first, layer_last; /* -1 until a heartbeat told */
    double steps_per_s;          /* over STATE_RECENT_S */
    /* Model time / wall time, 0..1: STATE_SERIES_BUSY over the last
     * STATE_BUSY_S complete seconds; 0 once the node has been idle
     * (phase -1); NaN when nothing was heard in those seconds. */
    double busy;
    /* Sequences per step over STATE_RECENT_S (1 for a node that runs one
     * request at a time); NaN without steps. */
    double batch;
    double model_p50, eval_p50; /* over STATE_RECENT_S, NaN without steps */
    struct state_memory mem;
    unsigned flags;
    uint64_t received, lost, restarts;
    const char *fingerprint; /* "" until a heartbeat told */
};

/* The dashboard header. */
struct state_cluster_view {
    const char *name;
    int nodes_up, nodes_total;
    const char *req;        /* the request in flight, "" when none */
    const char *req_source; /* who sent it ("control", "http"), "" when none or untold */
    int ctx_pos;            /* the last context position a step reported */
    /* The ring head's prefill and tail's decode over STATE_RECENT_S, plus
     * the rates the HTTP nodes that are up report. */
    double prefill_tps, decode_tps;
    double last_ttft_ms; /* NaN before the first finished request */
    uint64_t lost;
    /* The model as the first node with a status names it, else as the
     * first HTTP node's poll does: "" before any.
     * weight_types: "Q4_K_M: q4_K 25, ..." for a GGUF file, else "f32". */
    const char *model, *weight_types;
};

/* One entry of the events ring: a node's event or the console's own. */
struct state_event {
    double t;
    int node;                  /* node index, -1 for the console itself */
    char kind[PROTO_CODE_MAX]; /* "config_applied", ..., or the console's "node_down", ... */
    char req[PROTO_ID_MAX + 1];
    char code[PROTO_CODE_MAX];
    char message[PROTO_MESSAGE_MAX];
};

/* Which events to show; NULL / -1 fields match everything. kind matches a
 * prefix ("node_" is every liveness change); text matches, ignoring case,
 * anywhere in the message, kind, code, request id or node name. */
struct state_event_filter {
    int node;
    const char *kind;
    const char *text;
};

/* names: the nodes in pipeline order (the cluster file's order). NULL when
 * out of memory. */
state *state_new(const char *cluster_name, int n_nodes, const char *const *names);
void state_free(state *st);
/* A copy to read while the original goes on (the console's pause); NULL
 * when out of memory. Freed with state_free. */
state *state_copy(const state *st);

int state_node_count(const state *st);
const char *state_node_name(const state *st, int node);
/* The index of the node called name, or -1. */
int state_node_index(const state *st, const char *name);

/* ---- ingest: node is the index of the node the message came from ---- */

void state_ingest_step(state *st, int node, const proto_head *h, const proto_step *s, double now);
void state_ingest_heartbeat(state *st, int node, const proto_head *h, const proto_status *s,
                            double now);
void state_ingest_req(state *st, int node, const proto_head *h, const proto_req_msg *m, double now);
void state_ingest_event(state *st, int node, const proto_head *h, const proto_event *e, double now);
/* Dispatches a decoded telemetry message on its topic (unknown: counted
 * for loss, otherwise skipped). */
void state_ingest(state *st, int node, const proto_tel *t, double now);

/* ---- nodes of other engines (tui/engine), watched over HTTP ---- */

/* Node `node` runs engine k (every node is inferd until told). */
void state_node_set_engine(state *st, int node, eng_kind k);
/* The result of a poll of an HTTP engine's node (ewatch.h). Its liveness
 * is the poll's: ENG_UP is up, ENG_LOADING starting, anything else down at
 * once (no heartbeat, so never stale); a change is logged as node_up,
 * node_starting or node_down with the view's problem as the message. A
 * node the console launched (state_mark_starting) stays starting until a
 * poll finds it up or STATE_START_TIMEOUT_S passes. */
void state_ingest_engine(state *st, int node, const struct eng_view *v, double now);
/* The last poll of an HTTP engine's node; NULL for an inferd node. */
const struct eng_view *state_node_engine(const state *st, int node);
/* Any node as the view every engine shares: an HTTP node's last poll, or
 * what an inferd node's telemetry says in those terms (health from its
 * liveness, model and requests from its heartbeat, prompt and decode
 * tokens per second it processed over STATE_RECENT_S, its batch and
 * memory in use); the rest NaN. For a listing of a mixed cluster
 * (`infertop metrics`). */
void state_node_summary(const state *st, int node, double now, struct eng_view *out);

/* ---- what the console itself knows ---- */

/* Moves liveness on with the clock (stale, down) and logs each change. */
void state_tick(state *st, double now);
/* The console launched the node: starting until its first heartbeat. */
void state_mark_starting(state *st, int node, double now);
/* The node's process is known dead (SSH said so): down at once. */
void state_mark_down(state *st, int node, const char *why, double now);
/* Adds the console's own event (kind e.g. "ssh", "stress"). */
void state_event_add(state *st, int node, const char *kind, double now, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A set request was sent to the node, and then its reply came. */
void state_config_request(state *st, int node, const proto_set_args *want, double now);
void state_config_reply(state *st, int node, int ok, const char *error, double now);

/* ---- queries ---- */

enum state_live state_node_live(const state *st, int node, double now);
void state_node_view(const state *st, int node, double now, struct state_node_view *out);
void state_cluster_view(const state *st, double now, struct state_cluster_view *out);
const struct state_config *state_node_config(const state *st, int node);
/* The last heartbeat, NULL before the first. */
const proto_status *state_node_status(const state *st, int node);
/* 1 when node is the head of an inferd ring whose last status says the
 * ring is broken (ring_health.stage names where). */
int state_ring_broken(const state *st, int node);
/* From the node's last status: 1 when it is the head of a ring (holds
 * layer 0 and not the last), resp. a stage after the head (does not hold
 * layer 0). 0 before any status. */
int state_ring_head(const state *st, int node);
int state_ring_stage(const state *st, int node);
unsigned state_node_flags(const state *st, int node, double now);
/* How often the node restarted (its sequence numbers went back) since the
 * console first heard it: the restarts of state_node_view, without the
 * rest of the view. */
uint64_t state_node_restarts(const state *st, int node);

/* Percentiles of a metric over the steps of the last `window` seconds in
 * the given phase (at most the ring's STATE_STEP_RING newest steps). q in
 * [0, 1]; nearest-rank, as in the history (store_percentile). Returns how
 * many steps there were; 0 leaves out[] NaN. */
int state_percentiles(const state *st, int node, enum state_metric m, int phase, double window,
                      double now, const double *q, int nq, double *out);

/* Steps per second over the last `seconds` complete seconds. */
double state_steps_per_s(const state *st, int node, int phase, int seconds, double now);

/* Per-second values of the last n complete seconds, oldest first, in
 * out[0..n-1]; NaN for a second without data. n is at most STATE_SECONDS.
 * phase applies to the timing, steps, tokens and seqs series. */
void state_series(const state *st, int node, enum state_series kind, int phase, int n, double now,
                  double *out);

/* Events newest first: the matching ones after skipping `skip` of them, at
 * most max into out. Returns how many were written; state_event_count says
 * how many match in all (for a scroll bar). */
int state_events(const state *st, const struct state_event_filter *f, int skip, int max,
                 const struct state_event **out);
int state_event_count(const state *st, const struct state_event_filter *f);

/* ---- alerts (alerts.h): moved on at each state_tick ---- */

const alerts *state_alerts(const state *st);
/* The thresholds (the console's --alert-* flags); the table's defaults
 * until called. */
void state_alert_settings(state *st, const struct alert_settings *s);

#endif
