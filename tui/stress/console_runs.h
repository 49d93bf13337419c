/* console_runs.h: the console's stress runs and run history, behind the
 * Stress and History views.
 *
 * Owned by the app (app_main, the demo), which calls console_runs_tick on
 * every turn of its loop; the views read what it holds through
 * ui_options.runs. At most one stress run at a time: it runs on the
 * runner's own thread (stress.h), so that the console never waits on the
 * network or the disk for it; a tick only copies its progress.
 *
 * The history queries (list, summary, compare, curve, quality, export) run on the calling
 * thread, the UI's. That is acceptable because each is bounded: the list
 * is one page, a finished run's summary reads its stored step aggregates
 * rather than its steps (store/stepstats.c), a curve reads requests and
 * not steps, and an export is an explicit operator action on one run.
 */
#ifndef CONSOLE_RUNS_H
#define CONSOLE_RUNS_H

#include <stddef.h>

#include "store/store.h"
#include "stress.h"

struct cluster;

#define CONSOLE_RUNS_POINTS 512 /* chart points kept of the current run */
#define CONSOLE_RUNS_PAGE 200   /* runs the History view lists */

typedef struct console_runs console_runs;

/* The nodes of a cluster file as the stress runner's target. -1 with err
 * when the cluster has too many nodes. */
int console_runs_target(const struct cluster *c, stress_target *t, char *err, size_t errlen);
/* Node `name` of a cluster file as an HTTP target (its url, engine, key
 * and settings). -1 with err naming the node when it has no url, or its
 * api_key_file cannot be read. */
int console_runs_http_target(const struct cluster *c, const char *name, stress_target *t, char *err,
                             size_t errlen);

/* Opens the store at db_path (NULL: the default path) and takes the
 * cluster's nodes as the target of the runs started here. NULL with err. */
console_runs *console_runs_open(const char *db_path, const struct cluster *c, char *err,
                                size_t errlen);
/* Aborts and joins a run still going, then closes the store. NULL is fine. */
void console_runs_free(console_runs *c);

/* Starts a run (-1 with err: bad options, one already running). */
int console_runs_start(console_runs *c, const stress_opts *o, char *err, size_t errlen);
void console_runs_abort(console_runs *c);
/* Takes the run's progress in; joins it once finished. Returns 1 while a
 * run is going (the app redraws every frame then), else 0. */
int console_runs_tick(console_runs *c);

/* The last progress taken in; 0 when no run was started yet. */
int console_runs_progress(const console_runs *c, stress_progress *p);
/* The chart points of the current (or last) run, one per ok request,
 * oldest first: the newest CONSOLE_RUNS_POINTS. */
size_t console_runs_points(const console_runs *c, const store_point **points);

/* ---- history ---- */

/* Lists the newest runs again, with status (NULL: any); sort_context
 * orders them by max context (largest first) rather than newest first.
 * Forgets the summary and comparison kept, which a run still going makes
 * out of date. */
int console_runs_list(console_runs *c, const char *status, int sort_context, char *err,
                      size_t errlen);
const store_run_list *console_runs_listed(const console_runs *c);
/* The summary of run id (kept until another is asked for). NULL with err. */
const store_summary *console_runs_summary(console_runs *c, int64_t id, char *err, size_t errlen);
/* Runs a against b (kept until another pair is asked for). NULL with err. */
const store_compare *console_runs_compare(console_runs *c, int64_t a, int64_t b, char *err,
                                          size_t errlen);
/* The chart points of run id (the two asked for last are kept). NULL with
 * err. */
const store_curve *console_runs_curve(console_runs *c, int64_t id, char *err, size_t errlen);
/* The quality measured on each leg of run id (kept until another run is
 * asked for). NULL with err. */
const store_quality_list *console_runs_quality(console_runs *c, int64_t id, char *err,
                                               size_t errlen);
/* The latest quality measured of kv_bits on model by inferd, or NULL:
 * one indexed lookup when the setting asked about changes (the Config
 * view asks while kv_bits is edited), the answer kept until then. A
 * lookup that fails is "none". */
const store_quality *console_runs_quality_last(console_runs *c, const char *model, int kv_bits);
/* Writes run id's requests as CSV to path. */
int console_runs_export(console_runs *c, int64_t id, const char *path, char *err, size_t errlen);

#endif
