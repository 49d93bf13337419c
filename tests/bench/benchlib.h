/* benchlib.h: the result table every bench binary prints and stores.
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

#endif
