/* alerts.h: what the console raises about a node, and when it clears.
 *
 *   down     inferd: its liveness says down; an HTTP engine: its last poll
 *            had no answer
 *   loading  an HTTP engine answers but is not ready (llama.cpp's 503)
 *   queue    its waiting requests rose and have not fallen for
 *            --alert-queue-s seconds
 *   kv       its KV cache is over ALERTS_KV_HIGH full (until it is back
 *            under ALERTS_KV_CLEAR)
 *   ttft     its windowed TTFT p95 is over alert_ttft_ms
 *   eval     an inferd node's eval ms p50 is over alert_eval_ratio times
 *            its model ms p50 and over alert_eval_floor_ms: the ring's
 *            orchestration, not the model, takes its time (EVAL>MODEL)
 *   ring     the head of an inferd ring says its ring is broken at a
 *            stage (its status' ring_health): it refuses every request
 *            until the ring answers again
 *
 * Queue, kv and ttft need an engine that reports the number (NaN clears
 * them). The measured alerts (ttft, eval) hold for alert_hold samples
 * (state ticks) before they are raised, and are gone for as many before
 * they clear, so that a number hovering at its threshold is one alert,
 * not one a second; down, loading and ring are facts and raised at once.
 * The thresholds are rows of the settings table, [cluster] keys, and
 * (queue, ttft) flags of the dashboard too. The state owns one alerts and moves
 * it on at each state_tick (state.c's one call), logging every raise and
 * clear as an event; the views read what is active. This module knows
 * nothing of the state: it is given each node's liveness and view.
 */
#ifndef ALERTS_H
#define ALERTS_H

#include <stddef.h>

#include "engine/proto/opt.h"
#include "tui/engine/engine.h"

#define ALERTS_KV_HIGH 0.90
#define ALERTS_KV_CLEAR 0.80
/* A node not heard from since the console started is down only after
 * this long: the first heartbeat takes up to a second, and a start-up
 * full of raised-and-cleared alerts would hide the real ones. */
#define ALERTS_GRACE_S 10.0

enum alert_kind {
    ALERT_DOWN,
    ALERT_LOADING,
    ALERT_QUEUE,
    ALERT_KV,
    ALERT_TTFT,
    ALERT_EVAL,
    ALERT_RING,
    ALERT_COUNT
};
#define ALERT_BIT(k) (1u << (k))

/* Each a row of the settings table (alerts.c maps them). */
struct alert_settings {
    double queue_s;       /* alert_queue_s */
    double ttft_ms;       /* alert_ttft_ms: also where TTFT turns red */
    double eval_ratio;    /* alert_eval_ratio */
    double eval_floor_ms; /* alert_eval_floor_ms */
    double hold;          /* alert_hold: samples */
    double busy_pct;      /* alert_busy_pct: busy turns yellow at or above */
    double headroom_pct;  /* alert_headroom_pct: LOW MEM under it */
};

/* The settings table's defaults. */
void alerts_defaults(struct alert_settings *s);
/* What a command line gave, over what s holds (a cluster file's). */
void alerts_read(const opt_vals *v, struct alert_settings *s);
/* Sets the setting of row id from a value its row checked; -1 when id
 * is not an alert setting. */
int alerts_set(struct alert_settings *s, opt_id id, const opt_value *val);

/* One node's sample, for the measured alerts: its eval and model ms p50
 * (NaN when it has not stepped lately). */
struct alert_sample {
    int down;                 /* its liveness says down */
    const struct eng_view *e; /* its engine's last poll, NULL for inferd */
    double model_ms, eval_ms;
    /* inferd's head: the stage its ring is broken at and why (its last
     * status); NULL while the ring answers or the node is not a head. */
    const char *ring_stage, *ring_why;
};

/* A condition held for `hold` samples before it turns on, and gone for
 * as many before it turns off. */
struct alert_hold {
    int on, run; /* run: samples in a row that disagree with `on` */
};
int alerts_hold_step(struct alert_hold *h, int holds, int hold);

typedef struct alerts alerts;

/* For n_nodes nodes, with the defaults. NULL when out of memory. */
alerts *alerts_new(int n_nodes);
/* A copy (state_copy's); NULL when out of memory. */
alerts *alerts_copy(const alerts *a);
void alerts_free(alerts *a);
void alerts_configure(alerts *a, const struct alert_settings *s);

/* An alert raised or cleared, and why, for the events ring. */
struct alert_change {
    enum alert_kind kind;
    int raised;
    char message[ENG_TEXT_MAX + 64];
};

/* Moves node's alerts on to `now` with its sample. Writes the changes to
 * out (room for ALERT_COUNT) and returns how many. */
int alerts_note(alerts *a, int node, const struct alert_sample *smp, double now,
                struct alert_change *out);
/* The settings in force, for the views' colours. */
const struct alert_settings *alerts_settings(const alerts *a);

/* The node's active alerts (ALERT_BIT of each), and their count over
 * every node. */
unsigned alerts_active(const alerts *a, int node);
int alerts_total(const alerts *a);

/* "DOWN LOADING QUEUE KV>90% TTFT EVAL>MODEL": the short words of bits. */
void alerts_text(unsigned bits, char *buf, size_t len);

#endif
