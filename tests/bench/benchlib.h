/* benchlib.h: the result table every bench binary prints and stores, and
 * the inferd processes the node benches run.
 *
 * A bench binary opens one part ("engine", "store", ...), adds a row per
 * figure it measured, and closes: the rows are printed as an aligned table
 * on stdout and written as JSON to $BENCH_DIR/<part>.json (default
 * build/bench), with the machine they were measured on. A row that misses
 * its bar is reported as MISS, never as a failure: bars are targets.
 */
#ifndef BENCHLIB_H
#define BENCHLIB_H

#include <stddef.h>
#include <sys/types.h>

#include "engine/proto/client.h"

typedef struct bench bench;

/* NULL when out of memory; bench_add ignores a NULL bench and bench_close
 * returns -1 for it, so callers need one check at the end. */
bench *bench_open(const char *part);

/* target: the bar as text (">= 90 %") or NULL when the row has none.
 * pass: 1 the bar is met, 0 missed, -1 not applicable. A value that is not
 * finite is kept as JSON null and shown as n/a. */
void bench_add(bench *b, const char *name, double value, const char *unit, const char *target,
               int pass);

/* Prints the table, writes the JSON file and frees b. 0 ok, -1 when the
 * file could not be written or a row was lost (message on stderr). */
int bench_close(bench *b);

/* $BENCH_DIR (default build/bench), created when missing; NULL (message
 * on stderr) when it cannot be. Benches keep their inputs there too. */
const char *bench_dir(void);

/* Monotonic clock in seconds, for timing the measured code. */
double bench_now(void);

/* The median of v[n] (sorted in place). */
double bench_median(double *v, int n);

/* Adds a line (printf format) printed under the table and kept in the
 * JSON file's "notes": what limits a figure that missed its bar. */
void bench_note(bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* synth:110m as a GGUF file of llama.cpp file type `type` ("Q8_0") in
 * bench_dir(), written by `$B/bin/inferd quantize` unless a file newer
 * than that binary is there. 0 with its path, or -1 with a message. */
int bench_gguf(const char *type, char *path, size_t len, char *err, size_t errlen);

/* ---- inferd nodes on loopback (the pipeline and batch benches) ---------- */

#define BENCH_STAGES_MAX 4

/* A ring of `inferd serve` processes found on $PATH; one node is a ring
 * of one. Endpoints are tcp://127.0.0.1 ones. */
typedef struct bench_ring {
    int n;
    pid_t pid[BENCH_STAGES_MAX];        /* 0: exited and reaped */
    char control[BENCH_STAGES_MAX][64]; /* control[0] is the head's */
    char telemetry[BENCH_STAGES_MAX][64];
} bench_ring;

/* n free loopback TCP ports, all bound until each is known so none
 * repeats. 0, or -1 with errno set. */
int bench_free_ports(int n, int *ports);

/* Starts n stages (1..BENCH_STAGES_MAX) of model, stage i named "benchI"
 * and holding layers bounds[i]:bounds[i + 1] (n + 1 bounds, from 0 to the
 * model's layers), each with the `inferd serve` options in opts
 * (NULL-terminated; NULL for none). Each stage's --next is the following
 * one's --listen, the last one's the head's. 0, or -1 with a message on
 * stderr and nothing left running. */
int bench_ring_start(bench_ring *r, int n, const char *model, const int *bounds,
                     const char *const *opts);

/* Waits at most timeout_s for every stage to answer status with ok (a
 * stage synthesizing its weights takes a moment; until the last is up, a
 * request would wait on it). 0, or -1 with a message on stderr, at once
 * when a stage exits. */
int bench_ring_wait(bench_ring *r, void *zctx, int timeout_s);

/* SIGTERM to every stage still running, then waits for each. */
void bench_ring_stop(bench_ring *r);

/* A SUB socket connected to a node's telemetry endpoint, subscribed to
 * topic ("step", "node"); NULL with a message on stderr. Subscriptions
 * take a moment to reach the node: open it before what it should see. */
void *bench_tel_open(void *zctx, const char *endpoint, const char *topic);

/* Reads sub's next message, skipping what does not decode. 1 with *t
 * filled (proto_tel_free it), 0 when nothing came for timeout_ms. */
int bench_tel_next(void *sub, int timeout_ms, proto_tel *t);

#endif
