/* ewatch.h: the console's HTTP watcher of engine nodes (engine.h).
 *
 * One thread runs libcurl's multi interface over every HTTP node: each
 * round, at the console's refresh interval, it asks each node the
 * endpoints of its engine (eng_endpoints) at once, hands the answers to the
 * node's eng_poll and keeps the resulting view. The console's loop never
 * waits on it: it polls ewatch_fd with its other descriptors and takes the
 * views that changed (ewatch_take), which it files into its state.
 *
 * A request may take at most the interval (and never more than
 * EWATCH_TIMEOUT_S), so that a node that stops answering shows as down
 * within a round or two.
 */
#ifndef EWATCH_H
#define EWATCH_H

#include <stddef.h>

#include "engine.h"

#define EWATCH_TIMEOUT_S 2.0

/* One node to watch. Nodes of kind ENG_INFERD are skipped (they speak
 * ZeroMQ), so a cluster's nodes can be passed as they are, by index. */
struct ewatch_target {
    eng_kind kind;
    const char *url;          /* base URL, "http://host:port" */
    const char *api_key_file; /* NULL or "": no bearer token */
};

typedef struct ewatch ewatch;

/* Copies the targets and starts the thread; the first round starts at
 * once. -1 with err when a key file cannot be read or the thread cannot
 * start. */
int ewatch_start(ewatch **out, const struct ewatch_target *t, int n, double interval_s, char *err,
                 size_t errlen);
/* Readable when a round has ended since the last ewatch_take. */
int ewatch_fd(const ewatch *w);
/* 1 and *out when node i's view changed since the last take, else 0.
 * Reading the descriptor's wake-up is done here. */
int ewatch_take(ewatch *w, int i, struct eng_view *out);
/* Stops the thread, frees everything. NULL is fine. */
void ewatch_stop(ewatch *w);

/* The CLI's one-shot form: polls the targets `rounds` times, gap_s apart
 * (two rounds give rates), blocking, and fills out[0..n). Inferd targets
 * are left as eng_view_init made them. -1 with err only when a key file
 * cannot be read or out of memory; a node that does not answer is a view
 * with health ENG_DOWN. */
int ewatch_once(const struct ewatch_target *t, int n, int rounds, double gap_s,
                struct eng_view *out, char *err, size_t errlen);

#endif
