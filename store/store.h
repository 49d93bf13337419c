/* store.h: the run history of infertop, in SQLite.
 *
 * One `store` handle owns two connections to one database file: a query
 * connection used by the calling threads (queries, store_run_begin) and a
 * writer connection owned by a background thread that drains a bounded
 * queue of rows (steps, events, requests, legs, run ends) in batched
 * transactions. Recording functions other than store_run_begin never touch
 * the disk: they copy the row into the queue, or count it as dropped when
 * the queue is full (the count lands in runs.dropped_rows).
 *
 * Conventions: functions return 0 on success and -1 on error with a message
 * in err; functions about one run return 1 when no run has that id. Times
 * are Unix seconds (UTC, fractional). store/SCHEMA.md documents the tables.
 */
#ifndef STORE_H
#define STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct store store;

#define STORE_NODE_MAX 64 /* node names are shorter than this */

typedef struct store_options {
    size_t queue_capacity; /* rows the writer queue holds; 0: 65536 */
    int busy_timeout_ms;   /* wait for other writers this long; 0: 5000 */
} store_options;

/* $XDG_DATA_HOME/infertop/history.db, else ~/.local/share/infertop/history.db. */
int store_default_path(char *buf, size_t len, char *err, size_t errlen);

/* Opens or creates the database at path (NULL: the default path, whose
 * directory is created). Upgrades an older schema, refuses a newer one
 * without modifying it, and marks runs whose process died as aborted.
 * opt may be NULL. NULL on error. */
store *store_open(const char *path, const store_options *opt, char *err, size_t errlen);

/* Waits until every row queued before the call is committed (or dropped).
 * -1 when a write failed since the previous flush, with the first error. */
int store_flush(store *s, char *err, size_t errlen);

/* Without waiting: 1 with the first error when a write failed since the
 * previous flush (a full disk, "the disk holding PATH is full": the rows
 * are lost), else 0. */
int store_write_error(store *s, char *err, size_t errlen);

/* Drains the queue, stops the writer and closes both connections. */
void store_close(store *s);

typedef struct store_stats {
    uint64_t queued;  /* rows accepted into the queue */
    uint64_t written; /* rows committed */
    uint64_t dropped; /* rows refused (queue full) or lost (write error) */
    size_t pending;   /* rows in the queue now */
    size_t capacity;
} store_stats;

void store_stats_get(store *s, store_stats *st);

/* ---- recording (used by the stress runner) ---- */

typedef enum store_mode {
    STORE_MODE_GROWTH,
    STORE_MODE_FIXED,
    STORE_MODE_SOAK,
    STORE_MODE_SWEEP,
    STORE_MODE_QUALITY /* a quality measurement per kv_bits setting (schema 8) */
} store_mode;

#define STORE_MODE_COUNT 5

typedef enum store_status {
    STORE_RUNNING,
    STORE_COMPLETED,
    STORE_FAILED,
    STORE_ABORTED
} store_status;

typedef enum store_phase { STORE_PHASE_PREFILL, STORE_PHASE_DECODE } store_phase;

const char *store_mode_name(store_mode m);
const char *store_status_name(store_status st);
const char *store_phase_name(store_phase p);

typedef struct store_run_info {
    const char *name;  /* may be NULL */
    const char *notes; /* may be NULL */
    store_mode mode;
    const char *params;         /* JSON object of the run's parameters, or NULL */
    const char *cluster;        /* JSON object: name, model, engine, nodes[], or NULL */
    const char *engine;         /* the engine driven ("inferd", "llama.cpp", ...); NULL: inferd */
    const char *engine_version; /* as the engine reported it; may be NULL */
} store_run_info;

/* The one recording call that writes synchronously: it inserts the runs
 * row and returns its id. Call it before the run starts. It also keeps
 * room on the disk (256 KiB, in an unlinked file) for the ends of runs:
 * when the disk fills, the rows after are lost, but the ends of the
 * handle's runs (leg and run ends, events) are still written from that
 * room. Refused when the disk has no room for it. */
int store_run_begin(store *s, const store_run_info *info, int64_t *run_id, char *err,
                    size_t errlen);

/* The calls below queue a row and return 0, or -1 when the row was not
 * queued (queue full, unknown run, name too long, bad JSON): it is counted
 * as dropped and, for a known run, in runs.dropped_rows. */
/* A leg's settings. concurrency: the requests the leg keeps in flight at
 * once (1 for a growth leg, which grows one session). */
typedef struct store_leg_info {
    int kv_bits, prefill_step, concurrency;
} store_leg_info;

int store_leg_start(store *s, int64_t run, int leg, const store_leg_info *info);
/* Also computes the leg's max_context and aggregate tok/s from its
 * requests recorded before. */
int store_leg_end(store *s, int64_t run, int leg, store_status status);

typedef struct store_request {
    int64_t run;
    int leg;
    int64_t idx;         /* request number within the run, from 0 */
    const char *session; /* may be NULL */
    int64_t ctx_before, ctx_after;
    int64_t prompt_tokens, gen_tokens;
    double ttft_ms, prefill_ms, prefill_tps, decode_tps, tpot_ms, e2e_ms; /* < 0: unknown */
    double itl_p50_ms, itl_p99_ms; /* inter-token latencies; < 0: unknown */
    /* Mean step_ms of the request's prefill (decode) steps on the node
     * where that mean is largest; < 0: unknown. */
    double prefill_step_ms, decode_step_ms;
    int ok;                 /* 1 ok, 0 failed */
    const char *error_code; /* failed requests: "timeout", "refused", "node_down", ... */
    const char *error_message;
    double t; /* when it ended; 0: now */
} store_request;

int store_request_add(store *s, const store_request *r);

typedef struct store_step {
    int64_t run;
    int leg;
    int64_t req; /* request number within the run; < 0: none */
    const char *node;
    int64_t step;
    store_phase phase;
    int64_t tokens, pos;
    double step_ms, model_ms, eval_ms, wait_ms;
    int64_t kv_bytes;
    int kv_bits, prefill_step;
    int64_t rss, headroom;
    double t; /* 0: now */
} store_step;

int store_step_add(store *s, const store_step *st);

typedef struct store_event {
    int64_t run;        /* 0: not part of a run */
    const char *node;   /* may be NULL */
    const char *kind;   /* "config", "refusal", "timeout", "node_down", "node_up", "note" */
    const char *detail; /* JSON object, or NULL for {} */
    double t;           /* 0: now */
} store_event;

int store_event_add(store *s, const store_event *e);

/* What a leg's quality measurement found: the test setting's
 * distributions against the reference's (kv_bits 32) over the same
 * tokens, overall and by depth bucket (positions within a window).
 * Figures are NaN where the engine sent none (a bucket of no scored
 * positions). store/SCHEMA.md, tables quality and quality_buckets. */
typedef struct store_quality_bucket {
    int64_t from, to, positions;
    double kl_mean, kl_p99, kl_max, top1, ppl_ref, ppl_test;
} store_quality_bucket;

#define STORE_SHA256_HEX 65 /* a sha256 as hex, with its NUL */

typedef struct store_quality {
    int64_t run;
    int leg;
    int kv_bits, ref_kv_bits;
    int64_t ctx, score_from, windows, positions;
    double kl_mean, kl_p99, kl_max, top1, ppl_ref, ppl_test, ppl_ref_err;
    char *text_name; /* the text measured: its file, or the shipped one's name */
    char text_sha256[STORE_SHA256_HEX];
    char *model;
    double t; /* when it was measured; 0: now */
    /* k of a top-k estimate (another engine's setting, from its top-k
     * logprobs: stress_topk.c); 0 for inferd's full-vocabulary measure */
    int topk;
    store_quality_bucket *buckets;
    size_t n_buckets;
} store_quality;

/* Queues leg q->leg's quality of run q->run (the leg started before);
 * everything is copied. A leg has at most one. */
int store_quality_add(store *s, const store_quality *q);

/* failure: why the run failed or was aborted, or NULL. */
int store_run_end(store *s, int64_t run, store_status status, const char *failure);

/* ---- queries ---- */

typedef struct store_run {
    int64_t id;
    char *name, *notes, *mode, *status, *model, *params, *cluster,
        *failure;          /* failure may be NULL */
    char *engine;          /* "inferd", "llama.cpp", "vllm", "ollama", "openai" */
    char *engine_version;  /* may be NULL: not reported */
    double started, ended; /* ended 0 while running */
    int64_t max_context;   /* largest ctx_after of an ok request; -1 none */
    int64_t last_context;  /* furthest context (max step pos) reached; -1 none */
    int64_t dropped_rows;
    int64_t n_legs, n_requests, n_failed;
} store_run;

typedef struct store_run_list {
    store_run *runs;
    size_t n;
} store_run_list;

typedef struct store_run_filter {
    const char *mode, *status; /* NULL: any */
    const char *model;         /* exact cluster model name; NULL: any */
    const char *engine;        /* exact engine name; NULL: any */
    const char *text;          /* substring of name or notes; NULL: any */
    double since, until;       /* started in [since, until); 0: unbounded */
    int limit;                 /* 0: 50 */
    int offset;
} store_run_filter;

/* Newest first. */
int store_runs_list(store *s, const store_run_filter *f, store_run_list *out, char *err,
                    size_t errlen);
void store_run_list_free(store_run_list *l);

int store_run_get(store *s, int64_t id, store_run *out, char *err, size_t errlen);
void store_run_free(store_run *r);

/* Percentiles are nearest-rank: pN is the smallest value with at least N%
 * of the values at or below it (the ceil(N/100 * count)-th smallest).
 * All zero when count is 0. */
typedef struct store_dist {
    int64_t count;
    double p50, p90, p99, max;
} store_dist;

/* The store_dist of v's n values, which it reorders. */
void store_dist_compute(double *v, size_t n, store_dist *out);

/* The nearest-rank pct-th percentile (pct in [0, 100]) of v's n > 0 values,
 * which it reorders: the definition every history summary uses, so that the
 * console's live figures read the same as the history's. */
double store_percentile(double *v, size_t n, double pct);

typedef struct store_step_group {
    int leg;
    char node[STORE_NODE_MAX];
    char phase[8];
    store_dist step_ms, model_ms, eval_ms;
} store_step_group;

typedef struct store_leg_summary {
    int idx, kv_bits, prefill_step;
    int concurrency; /* requests kept in flight at once */
    char status[12];
    int64_t max_context; /* -1: no ok request */
    /* Generated tokens of all the leg's requests / the leg's wall time (the
     * first request sent to the last ended); NaN without requests. */
    double agg_tps;
    int64_t requests, failed;
    store_dist ttft_ms, tpot_ms, decode_tps, prefill_tps, e2e_ms; /* over ok requests */
    double ttft_p95_ms; /* the summary line's second TTFT figure; NaN without ok requests */
} store_leg_summary;

typedef struct store_failure {
    int found; /* 0: no request failed */
    int leg;
    int64_t request, ctx_before;
    char *code, *message;
} store_failure;

typedef struct store_summary {
    store_run run;
    store_leg_summary *legs; /* by idx */
    size_t n_legs;
    store_step_group *groups; /* by leg, node, phase */
    size_t n_groups;
    store_failure failure; /* the first failed request */
} store_summary;

int store_run_summary(store *s, int64_t run, store_summary *out, char *err, size_t errlen);
void store_summary_free(store_summary *sum);

/* One ok request of a run as a point of its charts against context. */
typedef struct store_point {
    int leg;
    int64_t idx;
    int64_t ctx; /* ctx_after */
    double prefill_tps, decode_tps;
    double prefill_step_ms, decode_step_ms; /* the slowest node's means */
    /* Each figure is NaN where the request has none. */
} store_point;

typedef struct store_curve {
    store_point *points; /* in request order */
    size_t n;
} store_curve;

/* The ok requests of run as chart points. It reads the run's requests and
 * not its steps, so it stays quick on the console's thread however long
 * the run. 1 when there is no such run. */
int store_run_curve(store *s, int64_t run, store_curve *out, char *err, size_t errlen);
void store_curve_free(store_curve *c);

/* One compared figure: key names the leg/node/phase ("run", "leg 0",
 * "leg 0 node1 decode"), metric the figure ("step_ms p50"). delta = b - a,
 * ratio = b / a (NaN when a side is missing or a is 0). */
typedef struct store_delta {
    char *key, *metric;
    int has_a, has_b;
    double a, b, delta, ratio;
} store_delta;

/* A leg of each compared run with the same settings: kv_bits, prefill_step
 * and concurrency, or concurrency alone between runs of two engines,
 * whose kv_bits and prefill_step are each engine's own. Legs with equal
 * settings pair in their order; a leg without a partner is a pair with
 * -1 on the other side. */
typedef struct store_leg_pair {
    int a, b; /* indices into a.legs and b.legs; -1: none */
} store_leg_pair;

typedef struct store_compare {
    store_summary a, b;
    store_leg_pair *pairs; /* A's legs in order, then B's unpaired ones */
    size_t n_pairs;
    store_delta *rows;
    size_t n;
} store_compare;

/* Legs are matched by their settings (store_leg_pair; a pair's key names
 * them: "kv 16 prefill 64 conc 1"), step groups by (pair, node, phase). */
int store_run_compare(store *s, int64_t a, int64_t b, store_compare *out, char *err, size_t errlen);
void store_compare_free(store_compare *c);

/* ---- a leg on one line: the figures the CLI and the console both print ---- */

enum store_leg_col {
    STORE_LEG_IDX,
    STORE_LEG_KV,
    STORE_LEG_PREFILL,
    STORE_LEG_CONC,
    STORE_LEG_REQS,
    STORE_LEG_FAILED,
    STORE_LEG_MAX_CTX,
    STORE_LEG_DECODE, /* decode tok/s p50 over the ok requests */
    STORE_LEG_AGG,    /* agg_tps */
    STORE_LEG_TTFT50,
    STORE_LEG_TTFT95,
    STORE_LEG_COLS
};

#define STORE_CELL_MAX 24

typedef struct store_leg_line {
    char cell[STORE_LEG_COLS][STORE_CELL_MAX];
} store_leg_line;

/* The columns' titles, and two lines explaining them. */
extern const char *const store_leg_heads[STORE_LEG_COLS];
extern const char store_leg_legend[];

/* A figure as text: "-" when not finite, an integer when whole, else
 * `decimals` decimals. */
void store_fmt_num(double v, int decimals, char *buf, size_t len);

/* What a quality measurement is, as every output says it: "top-k
 * estimate (k=20)" for a store_quality.topk of 20, "full" for 0, "-" for
 * < 0 (none measured). */
void store_fmt_estimate(int topk, char *buf, size_t len);

/* The leg's figures as text: counts as integers, rates and times with
 * one decimal, "-" where there is none. */
void store_leg_line_of(const store_leg_summary *l, store_leg_line *out);

/* B's figures over A's in the rate and time columns ("1.25"), "" in the
 * others. */
void store_leg_ratio_of(const store_leg_summary *a, const store_leg_summary *b,
                        store_leg_line *out);

/* What store_best_settings ranks by. */
typedef enum store_best_by {
    STORE_BEST_CONTEXT, /* per (kv_bits, prefill_step): the largest context, then decode tok/s */
    STORE_BEST_AGG_TPS  /* per (kv_bits, prefill_step, concurrency): a leg's aggregate tok/s */
} store_best_by;

typedef struct store_best_row {
    char *model, *cluster, *engine;
    int kv_bits, prefill_step;
    int concurrency;     /* STORE_BEST_AGG_TPS; 0 in the context ranking (any) */
    int64_t max_context; /* STORE_BEST_CONTEXT: largest ctx_after of an ok request; -1 none */
    double decode_tps;   /* STORE_BEST_CONTEXT: best decode tok/s of a request there; -1 none */
    double agg_tps;      /* STORE_BEST_AGG_TPS: the best leg's aggregate tok/s; -1 none */
    int64_t run;         /* the run holding that request (leg); 0 none */
    int64_t runs;        /* runs that tried this setting */
    /* The latest quality measured of the setting's kv_bits on the model
     * (store_quality_last); NaN and 0 when none. kv_bits 32 is the
     * reference itself: KL 0 and top-1 1 without a measurement. */
    double kl_mean, top1;
    int64_t quality_run;
    int quality_topk; /* that measurement's k when a top-k estimate, else 0 */
} store_best_row;

typedef struct store_best {
    store_best_by by;
    store_best_row *rows;
    size_t n;
} store_best;

/* A quality floor: only settings whose latest quality measurement has
 * kl_mean <= max_kl and top1 >= min_top1 are ranked (a setting never
 * measured is left out). NaN: that bound is not applied. */
typedef struct store_quality_floor {
    double max_kl, min_top1;
} store_quality_floor;

/* Per model, cluster name, engine and setting, best first by `by`, over
 * the legs of speed runs (a quality run's legs measure no speed).
 * model, cluster and engine filter when not NULL; floor (NULL: none)
 * keeps the settings whose quality passes it. */
int store_best_settings(store *s, const char *model, const char *cluster, const char *engine,
                        store_best_by by, const store_quality_floor *floor, store_best *out,
                        char *err, size_t errlen);
void store_best_free(store_best *b);

/* The quality measured on each leg of a run, by leg. 1: no such run. */
typedef struct store_quality_list {
    store_quality *q;
    size_t n;
} store_quality_list;

int store_run_quality(store *s, int64_t run, store_quality_list *out, char *err, size_t errlen);
void store_quality_list_free(store_quality_list *l);

/* The latest quality measured of kv_bits on model by engine (NULL:
 * inferd): 0 with *out (store_quality_free it), 1 when there is none. */
int store_quality_last(store *s, const char *model, const char *engine, int kv_bits,
                       store_quality *out, char *err, size_t errlen);
void store_quality_free(store_quality *q);

/* JSON of one measurement (its buckets included); NULL when out of memory. */
json_t *store_quality_json(const store_quality *q);

/* Deletes finished runs started before `before` with all their rows;
 * VACUUMs afterwards when vacuum is set. */
int store_prune(store *s, double before, int vacuum, int64_t *deleted, char *err, size_t errlen);

/* ---- export ---- */

typedef enum store_export_what {
    STORE_EXPORT_REQUESTS,
    STORE_EXPORT_STEPS,
    STORE_EXPORT_SUMMARY
} store_export_what;

typedef enum store_format { STORE_FORMAT_CSV, STORE_FORMAT_JSON } store_format;

typedef enum store_cell_type { STORE_NULL, STORE_INT, STORE_REAL, STORE_TEXT } store_cell_type;

typedef struct store_cell {
    store_cell_type type;
    int64_t i;
    double d;
    const char *s;
} store_cell;

/* Called first with cells NULL (the header: column names), then once per
 * row; returning non-zero stops the stream. */
typedef int (*store_row_fn)(void *ctx, int ncol, const char *const *names, const store_cell *cells);

/* Streams the rows of a run (steps may be millions) in a stable order. */
int store_export_each(store *s, int64_t run, store_export_what what, store_row_fn fn, void *ctx,
                      char *err, size_t errlen);

/* The rows of a summary, flattened: section ("request" or "step"), leg,
 * kv_bits, prefill_step, node, phase, metric, count, p50, p90, p99, max.
 * -1 when fn stopped it. */
int store_summary_each(const store_summary *sum, store_row_fn fn, void *ctx);

/* CSV (RFC 4180, with a header) or JSON (an array of objects; the summary
 * as the object of store_summary_json). */
int store_export(store *s, int64_t run, store_export_what what, store_format fmt, FILE *out,
                 char *err, size_t errlen);

/* JSON forms of the query results, for --json output and exports.
 * New references; NULL when out of memory. */
json_t *store_run_list_json(const store_run_list *l);
json_t *store_summary_json(const store_summary *sum);
json_t *store_compare_json(const store_compare *c);
json_t *store_best_json(const store_best *b);

#endif
