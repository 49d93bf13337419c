/* app.h: the console's one loop, and `infertop` without a verb.
 *
 * app_run polls the links' sockets, the terminal (STDIN_FILENO), a
 * self-pipe for signals, the hooks' descriptor (SSH results) and the HTTP
 * watcher's (ewatch.h: the nodes of other engines, polled on a thread of
 * its own every second) together with zmq_poll, with a timeout up to the next thing due (the
 * state's liveness tick, a request's deadline, the next frame, the hooks' next wish). It feeds the
 * state, turns the operator's keys into requests and node actions, and redraws: it never blocks on
 * the network, on disk or on SSH (remote.h runs that on threads of its own).
 *
 * Telemetry is read at most once per frame: between two frames it waits in
 * ZeroMQ's queue, so nodes publishing hundreds of steps a second cost the
 * console UI_FPS wake-ups a second rather than one per message.
 */
#ifndef APP_H
#define APP_H

#include <stddef.h>

#include "engine/proto/opt.h"
#include "tui/core/hooks.h"
#include "tui/core/links.h"
#include "tui/core/state.h"
#include "tui/views/ui.h"

/* How often liveness is recomputed (stale, down) and the rates redrawn. */
#define APP_TICK_S 0.5

/* The app's clock: seconds on CLOCK_MONOTONIC, the `now` of state, links
 * and ui. */
double app_now(void);

/* The display options every dashboard verb takes (--no-color, --ascii,
 * --readonly) out of its parsed command line. */
void app_ui_options(const opt_vals *v, struct ui_options *o);

/* Opens the run history of the Stress and History views (db: --db, or
 * NULL for the default path) with the cluster's nodes as the stress
 * target, into uo->runs (the caller frees it with console_runs_free).
 * -1 with err when a given db cannot be opened; when the default one
 * cannot, uo->runs stays NULL and those views say so. */
int app_open_runs(const char *db, const struct cluster *c, struct ui_options *uo, char *err,
                  size_t errlen);

/* The state and the links of a cluster's nodes, in the file's order; the
 * state knows each node's engine, and the links ask the inferd nodes to
 * identify themselves (links_identify). -1 with err
 * filled and nothing to free on failure. */
int app_connect(const struct cluster *c, double now, state **st, links **l, char *err,
                size_t errlen);

/* Runs the dashboard until the operator quits or SIGINT, SIGTERM or SIGHUP
 * comes, watching uo->cluster's HTTP nodes meanwhile. Returns 0, or -1
 * with err filled when the terminal or polling failed, or a node's
 * api_key_file cannot be read. */
int app_run(const struct ui_options *uo, state *st, links *l, const struct app_hooks *hooks,
            char *err, size_t errlen);

/* `infertop [-c FILE] [--db PATH] [--no-color] [--ascii] [--readonly]`,
 * parsed (OPT_V_CONSOLE): the dashboard on the cluster file. Returns an
 * exit code (cli.h). */
int app_main(const opt_vals *v);

#endif
