/* fixture.h: a history database in a fresh mkdtemp directory, and helpers
 * that record rows with values the tests can recompute. */
#ifndef STORE_FIXTURE_H
#define STORE_FIXTURE_H

#include <sqlite3.h>

#include "store/store.h"

typedef struct fx {
    char dir[64];
    char path[128];
    store *s;
} fx;

/* Creates the directory and opens the store (s). Asserts on failure. */
void fx_open(fx *f);
/* Closes the store (if open) and removes the directory. */
void fx_close(fx *f);

int64_t fx_run(store *s, store_mode mode, const char *name, const char *model);
/* A step with the given timings; other fields derived from seq. */
void fx_step(store *s, int64_t run, int leg, int64_t req, const char *node, store_phase phase,
             double step_ms, double model_ms, double eval_ms, int64_t pos);
void fx_request(store *s, int64_t run, int leg, int64_t idx, int64_t ctx_before, int64_t ctx_after,
                int ok, double ttft, double tpot, double decode_tps);
/* Runs SQL on a separate connection (asserts success). */
void fx_sql(const char *path, const char *sql);
/* The first column of the first row of a query, as an integer. */
long long fx_int(const char *path, const char *sql);

/* Deterministic values in [lo, lo + span) from a seed and an index. */
double fx_value(unsigned seed, unsigned i, double lo, double span);
/* Nearest-rank pN of v[0..n) computed by sorting a copy. */
double fx_pct(const double *v, size_t n, int pct);
double fx_max(const double *v, size_t n);

#endif
