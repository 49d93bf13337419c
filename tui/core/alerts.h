/* alerts.h: what the console raises about a node, and when it clears.
 *
 *   down     inferd: its liveness says down; an HTTP engine: its last poll
 *            had no answer
 *   loading  an HTTP engine answers but is not ready (llama.cpp's 503)
 *   queue    its waiting requests rose and have not fallen for
 *            --alert-queue-s seconds
 *   kv       its KV cache is over ALERTS_KV_HIGH full (until it is back
 *            under ALERTS_KV_CLEAR)
 *   ttft     its windowed TTFT p95 is over --alert-ttft-ms
 *
 * The last three need an engine that reports the number (NaN clears
 * them); inferd nodes get `down` only. The state owns one alerts and moves
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

enum alert_kind { ALERT_DOWN, ALERT_LOADING, ALERT_QUEUE, ALERT_KV, ALERT_TTFT, ALERT_COUNT };
#define ALERT_BIT(k) (1u << (k))

struct alert_settings {
    double queue_s; /* --alert-queue-s */
    double ttft_ms; /* --alert-ttft-ms */
};

/* The settings table's defaults, and what a command line gave. */
void alerts_defaults(struct alert_settings *s);
void alerts_read(const opt_vals *v, struct alert_settings *s);

typedef struct alerts alerts;

/* For n_nodes nodes, with the defaults. NULL when out of memory. */
alerts *alerts_new(int n_nodes);
void alerts_free(alerts *a);
void alerts_configure(alerts *a, const struct alert_settings *s);

/* An alert raised or cleared, and why, for the events ring. */
struct alert_change {
    enum alert_kind kind;
    int raised;
    char message[ENG_TEXT_MAX + 64];
};

/* Moves node's alerts on to `now`: down is what its liveness says, e its
 * engine's last poll (NULL for inferd). Writes the changes to out (room
 * for ALERT_COUNT) and returns how many. */
int alerts_note(alerts *a, int node, int down, const struct eng_view *e, double now,
                struct alert_change *out);

/* The node's active alerts (ALERT_BIT of each), and their count over
 * every node. */
unsigned alerts_active(const alerts *a, int node);
int alerts_total(const alerts *a);

/* "DOWN LOADING QUEUE KV>90% TTFT": the short words of bits. */
void alerts_text(unsigned bits, char *buf, size_t len);

#endif
