/* stress.h: the stress runner. It drives the head node of a ring over the
 * control protocol (engine/PROTOCOL.md), listens to the telemetry of every
 * node, and records the run to the store: one leg per configuration, one
 * row per request (client-side timings and the node's own stats), every
 * step message of every node and every event.
 *
 * Or it drives one node of any engine (llama.cpp, vLLM, Ollama, any
 * OpenAI-compatible server, inferd started with --http) through its OpenAI
 * streaming API (stress_http.c): the same modes, with what a client sees
 * (TTFT, the gaps between content chunks) and what the engine reports of
 * itself (`usage`, llama.cpp's `timings`). A growth leg there sends each
 * level as one request of that many tokens (the API has no sessions).
 *
 * Modes:
 *   growth  one session whose context grows from `from` to `to` (by
 *           `factor`, or by `step` tokens), each request appending a
 *           synthetic prompt and generating `gen` tokens; stops at the
 *           target or at the first failure (the field notes' "grow to 200K")
 *   fixed   `requests` requests of `prompt_tokens` + `gen`, keeping up to
 *           `concurrency` in flight at once, optionally at Poisson
 *           arrivals of `rate` per second
 *   soak    fixed-shape requests for `duration_s`; reports drift (the
 *           first against the last decile of requests)
 *   sweep   a grid over kv_bits x prefill_step (x concurrency, for fixed
 *           legs): before each leg the settings are applied live with
 *           `set` and verified from every node's telemetry, then a growth
 *           or fixed leg runs; with `quality`, each leg's speed is
 *           followed by a quality measurement at the leg's kv_bits
 *   quality one leg per kv_bits value: the head scores `text` at kv_bits
 *           32 and at the value over the same tokens (the `quality` op,
 *           engine/PROTOCOL.md 2.7), and the leg records the KL, top-1
 *           agreement and perplexities, overall and per depth bucket.
 *           Nothing is set on the nodes. On an HTTP node (any engine
 *           whose settings infertop restarts it with), a top-k estimate
 *           instead (stress_topk.c): the reference setting, then each
 *           leg's, applied by restart, the text scored position by
 *           position from each engine's top-k logprobs, and the node's
 *           start line restored at the end.
 *
 * Every leg records its concurrency and its aggregate throughput (the
 * tokens all its requests generated over its wall time) in the store.
 *
 * A failure (a refusal, a stage_timeout, a node going down, a client-side
 * timeout) ends its request, and the leg in growth; it is recorded with the
 * context at which it happened. The run goes on with the next leg unless
 * stop_on_failure.
 *
 * The run lives on its own thread so that the console's loop never blocks:
 * stress_start returns at once, stress_progress_get copies a snapshot under
 * a lock, stress_abort asks the run to stop (it is then recorded as
 * aborted, with everything so far kept), stress_wait joins it.
 */
#ifndef STRESS_H
#define STRESS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/proto/opt.h"      /* OPT_CONCURRENCY_MAX, OPT_RUN_TEXT_MAX */
#include "engine/proto/protocol.h" /* PROTO_RING_MAX */
#include "store/store.h"
#include "tui/engine/eng_topk.h"
#include "tui/engine/engine.h"

/* Values in a sweep's kv_bits / prefill_step / concurrency list. */
#define STRESS_LIST_MAX 8
/* Nodes of a ring: as many as a ring frame carries. */
#define STRESS_NODES_MAX PROTO_RING_MAX
#define STRESS_EP_MAX 300     /* an endpoint, with its NUL */
#define STRESS_POINTS_MAX 512 /* newest chart points a run keeps for its watchers */

typedef struct stress_opts {
    store_mode mode;
    store_mode leg_mode; /* sweep: STORE_MODE_GROWTH or STORE_MODE_FIXED */
    /* growth */
    int64_t from, to;
    double factor; /* > 1, or 0 when step is used */
    int64_t step;  /* > 0, or 0 when factor is used */
    int gen;       /* tokens generated per request (every mode) */
    /* fixed and soak */
    int64_t requests; /* fixed */
    int prompt_tokens;
    /* Requests in flight at once: one value, or a sweep's list of them. */
    int n_concurrency, concurrency[STRESS_LIST_MAX];
    double rate;       /* arrivals per second (Poisson); 0: as fast as concurrency allows */
    double duration_s; /* soak */
    uint64_t seed;     /* arrivals and sampling */
    /* sweep */
    int n_kv_bits, kv_bits[STRESS_LIST_MAX];
    int n_prefill_step, prefill_step[STRESS_LIST_MAX];
    /* quality, and a sweep's --quality: the text to score (borrowed until
     * stress_start returns; NULL: the shipped excerpt), its name and
     * sha256 for the record, the window and bucket widths (0: the
     * engine's defaults) and the first scored position (-1: the engine's) */
    int quality; /* sweep: a quality measurement after each leg's speed */
    const char *text;
    char text_name[OPT_RUN_TEXT_MAX];
    int64_t ctx, bucket, score_from;
    /* every mode */
    int stop_on_failure;
    int keep_last;    /* sweep: do not restore the settings found at start */
    double timeout_s; /* longest silence of a request (no frame, no step) */
    char name[OPT_RUN_TEXT_MAX];
    char notes[OPT_RUN_TEXT_MAX];
} stress_opts;

/* Defaults: growth 64 -> to by factor 2, gen 8, concurrency 1, timeout
 * 60 s, seed 1. */
void stress_opts_init(stress_opts *o);

/* Checks every field for the mode, naming the first bad one ("--to 32 is
 * below --from 64"). Option names are the headless verb's. */
int stress_opts_check(const stress_opts *o, char *err, size_t errlen);

/* Reads a comma-separated list of whole numbers ("16,4") into v[0..*n),
 * at most STRESS_LIST_MAX; -1 with err naming `flag` and the bad item.
 * Whether the values suit the option is stress_opts_check's to say. */
int stress_parse_list(const char *flag, const char *text, int *v, int *n, char *err, size_t errlen);

/* The legs of a run: a sweep's grid, kv_bits outermost, concurrency
 * innermost (its fixed legs only: a growth leg grows one session);
 * one leg otherwise. */
int stress_leg_count(const stress_opts *o);
/* Leg `leg`'s settings; kv_bits and prefill_step are 0 outside a sweep
 * (the ring's own). */
void stress_leg_at(const stress_opts *o, int leg, store_leg_info *out);

/* The nodes to drive: the head is found among them by its status (the
 * node holding layer 0); every node's telemetry is recorded. */
typedef struct stress_node_ep {
    char control[STRESS_EP_MAX];
    char telemetry[STRESS_EP_MAX];
} stress_node_ep;

#define STRESS_KEY_MAX 512 /* an API key, with its NUL */

/* A node driven through its OpenAI HTTP API. kv_bits and prefill_step are
 * its settings as the cluster file gives them (0: not given, the engine's
 * default), recorded with each leg. */
typedef struct stress_http_node {
    char name[64];
    char url[STRESS_EP_MAX];      /* base URL, without a trailing / */
    char api_key[STRESS_KEY_MAX]; /* "" = none */
    eng_kind engine;
    int kv_bits, prefill_step;
} stress_http_node;

/* Applies a sweep leg's settings to an HTTP node by restarting it, and
 * waits until it answers again: 0 with *took_s the time it took, else -1
 * with err. It runs on the run's thread and blocks it. */
typedef int (*stress_apply_knobs_fn)(void *ctx, int kv_bits, int prefill_step, double *took_s,
                                     char *err, size_t errlen);

typedef struct stress_target {
    char cluster[OPT_RUN_TEXT_MAX]; /* the cluster's label, recorded with the run */
    int n_nodes;                    /* a ring's nodes; 0 with http */
    stress_node_ep nodes[STRESS_NODES_MAX];
    int http; /* drive http_node instead of a ring */
    stress_http_node http_node;
    /* HTTP: how a sweep changes the node's settings; NULL refuses a sweep
     * whose settings differ from the node's. */
    stress_apply_knobs_fn apply_knobs;
    void *knobs_ctx;
} stress_target;

typedef enum stress_state {
    STRESS_STARTING, /* asking every node for its status, waiting for telemetry */
    STRESS_RUNNING,
    STRESS_FINISHED /* stress_wait returns at once */
} stress_state;

#define STRESS_QUALITY_MAX 16  /* legs' quality a watcher sees: the newest */
#define STRESS_QBUCKETS_MAX 32 /* depth buckets of each kept for a chart */

/* A leg's quality beside its speed, for the Stress and History views. */
typedef struct stress_quality_leg {
    int leg, kv_bits;
    int ref_kv_bits, topk; /* the reference; topk: k of a top-k estimate, 0 when full */
    double kl_mean, kl_p99, kl_max, top1, ppl_ref, ppl_test;
    double decode_p50; /* the leg's decode tok/s p50 (a sweep's legs); NaN without */
    int n_buckets;     /* the first STRESS_QBUCKETS_MAX */
    int64_t bucket_from[STRESS_QBUCKETS_MAX], bucket_to[STRESS_QBUCKETS_MAX];
    double bucket_kl[STRESS_QBUCKETS_MAX]; /* mean KL; NaN for a bucket not scored */
} stress_quality_leg;

/* A stored measurement as a view's row. */
void stress_quality_leg_of(const store_quality *q, double decode_p50, stress_quality_leg *out);

/* The text a quality measurement scores: path's bytes, or (path NULL)
 * the excerpt built into infertop (contrib/quality/text-en.txt, named
 * stress_text_builtin_name). A new string to free(); NULL with err
 * naming the file and why (unreadable, empty, a NUL byte). */
char *stress_text_load(const char *path, char *err, size_t errlen);
extern const char stress_text_builtin_name[];

/* What the run is doing, for a progress bar or the console's Stress view. */
typedef struct stress_progress {
    stress_state state;
    store_mode mode;
    int64_t run_id; /* 0 until the run is recorded */
    int leg, n_legs;
    int kv_bits, prefill_step; /* of the current leg */
    int concurrency;           /* of the current leg */
    int64_t requests_done, requests_failed;
    int64_t requests_total; /* -1 when not known in advance (soak) */
    int in_flight;
    int64_t ctx, ctx_target; /* growth: context reached and the leg's target */
    /* The p50 of the current leg's ok requests' decode tok/s: the
     * History's DEC_TPS of the leg, computed the same way (store_percentile). */
    double decode_p50;
    double agg_tps; /* the current leg's generated tokens / its time so far */
    double elapsed_s;
    double eta_s;           /* < 0: unknown */
    int64_t telemetry_lost; /* messages lost, counted from seq gaps */
    store_status status;    /* STORE_RUNNING until finished */
    char last_error[OPT_RUN_TEXT_MAX];
    int measuring; /* a quality measurement is in flight */
    int n_quality; /* legs measured, the newest STRESS_QUALITY_MAX in quality[] */
    stress_quality_leg quality[STRESS_QUALITY_MAX]; /* in leg order */
} stress_progress;

/* What the run measured beyond the store's rows, once finished. */
typedef struct stress_drift {
    int valid;                        /* at least 10 ok requests */
    double ttft_first, ttft_last;     /* mean TTFT ms, first and last decile */
    double e2e_first, e2e_last;       /* mean E2E ms */
    double decode_first, decode_last; /* mean decode tok/s */
} stress_drift;

typedef struct stress_result {
    store_status status;
    int64_t run_id;
    int64_t requests, failed;           /* as the history holds them */
    int64_t unrecorded;                 /* requests that ended but the history lacks (rows lost) */
    double wall_s;                      /* from the first request sent to the last ended */
    double req_per_s;                   /* ok requests / wall_s */
    double tok_per_s;                   /* generated tokens of ok requests / wall_s */
    stress_drift drift;                 /* soak */
    int64_t measurements;               /* quality measurements the head answered (ok or not) */
    char failure[OPT_RUN_TEXT_MAX * 2]; /* the first failure or the setup error, "" when none */
    int store_failed;                   /* the history could not be written (failure says why) */
} stress_result;

typedef struct stress_run stress_run;

/* Validates the options and starts the run's thread; it connects, records
 * the run in db (borrowed: keep it open until stress_wait returns) and
 * runs. -1 with err for bad options or when the thread cannot start; a
 * node that cannot be reached shows up as a failed run instead. */
int stress_start(stress_run **out, const stress_opts *o, const stress_target *t, store *db,
                 char *err, size_t errlen);

void stress_progress_get(stress_run *r, stress_progress *p);

/* Copies the chart points of the ok requests after the first `seen`
 * (counted from the run's start) into out, at most max, oldest first, and
 * returns how many; *seen becomes the count copied up to. Points older
 * than the newest STRESS_POINTS_MAX are skipped. */
size_t stress_points_since(stress_run *r, size_t *seen, store_point *out, size_t max);

/* Asks the run to stop: requests in flight are cancelled and recorded,
 * the run is marked aborted. Safe from any thread (not a signal handler). */
void stress_abort(stress_run *r);

/* Joins the run and fills *res. */
void stress_wait(stress_run *r, stress_result *res);

void stress_free(stress_run *r);

/* ---- the pure parts, exposed for the tests ---- */

/* The context level after `level` in a growth leg: times factor (or plus
 * step), clipped to `to`; always above level while level < to. A leg's
 * levels are from, stress_growth_next(from, ...), ... up to to. */
int64_t stress_growth_next(int64_t level, int64_t to, double factor, int64_t step);

/* Synthetic prompt tokens that bring a session from ctx to target, given
 * that a session which generated before carries one pending token and a
 * request of gen tokens feeds all but the last one. < 1 when the target
 * cannot be reached by one request. */
int64_t stress_prompt_for(int64_t ctx, int64_t target, int gen);

/* A seeded generator of Poisson arrivals: exponential gaps of mean
 * 1/rate seconds. */
typedef struct stress_rng {
    uint64_t s;
} stress_rng;

void stress_rng_seed(stress_rng *g, uint64_t seed);
double stress_rng_gap(stress_rng *g, double rate);

/* Seconds left given the elapsed time and the work done out of total; < 0
 * when it cannot be told yet (nothing done, or total unknown). */
double stress_eta(double elapsed_s, double done, double total);

/* Drift of soak requests, in the order they ended: means over the first
 * and the last decile. */
void stress_drift_of(const double *ttft, const double *e2e, const double *decode, size_t n,
                     stress_drift *d);

/* ---- the top-k estimate of an HTTP node's quality (stress_topk.c) ---- */

/* The top-k KL, KL(ref || test) in nats, of one position: both
 * distributions coarsened to the tokens both top-k lists hold (matched by
 * text) and one bucket for every other token, whose mass is 1 minus
 * theirs (at least STRESS_TOPK_FLOOR), each then renormalised to sum 1.
 * Coarsening never raises a KL, so this is a lower bound of the full
 * one; identical lists give 0 exactly. *agree: 1 when both lists' most
 * probable token is the same. */
#define STRESS_TOPK_FLOOR 1e-10
double stress_topk_kl(const eng_topk *ref, const eng_topk *test, int *agree);

/* ---- the OpenAI stream, read as it comes (stress_sse.c) ---- */

#define STRESS_SSE_LINE_MAX 65536 /* a longer event is an engine's bug: dropped */

/* What a server-sent event stream of completion chunks told so far. The
 * counts and rates are < 0 until the engine reports them. */
typedef struct stress_sse {
    char line[STRESS_SSE_LINE_MAX];
    size_t len;
    int overlong;              /* the current line did not fit: skipped to its end */
    int done;                  /* `data: [DONE]` */
    int finished;              /* a chunk with a finish_reason */
    int64_t chunks;            /* chunks that carried content */
    int64_t prompt_tokens;     /* usage */
    int64_t completion_tokens; /* usage */
    double prompt_ms;          /* llama.cpp timings */
    double prompt_tps, decode_tps;
    int error;     /* an error event came: code and message say what */
    char code[64]; /* its error.code (a string or a number), else its type */
    char message[256];
} stress_sse;

void stress_sse_init(stress_sse *s);
/* Takes len more bytes of the stream; returns how many content chunks
 * they completed (for the caller to time). */
int stress_sse_feed(stress_sse *s, const char *data, size_t len);

/* The store's error_code of a failed request over HTTP, and its message:
 *  - status >= 400, or an error event in the stream (body: its JSON, or
 *    the response body): `context_overflow` when the engine says the
 *    prompt does not fit (llama.cpp's exceed_context_size_error or its
 *    "exceeds the available context size", vLLM's "maximum context
 *    length", inferd's ctx_limit and kv_oom), else `http_status` with
 *    "HTTP <status>: <message>" (an error event on a 200 stream: `error`);
 *  - otherwise a transfer that ended before [DONE] or a finish:
 *    `disconnect`, with transport saying why ("" when it ended cleanly). */
void stress_http_classify(long status, const char *body, const char *transport, char *code,
                          size_t codelen, char *message, size_t msglen);

#endif
