/* engine.h: the inference engines infertop watches and drives, and what it
 * knows of one node of each.
 *
 * inferd nodes speak the control and telemetry protocol (tui/core/links.h)
 * and show the most. Every other engine is an HTTP server watched by
 * polling its own endpoints at the console's refresh interval (ewatch.h):
 *
 *   llama.cpp  llama-server: /health, /metrics (--metrics), /slots
 *              (--slots), /props once
 *   vllm       /health, /metrics, /v1/models, /version
 *   ollama     /api/version, /api/ps (it exports no metrics)
 *   openai     any OpenAI-compatible server: /v1/models, reachability and
 *              latency only
 *
 * What a poll found is one struct eng_view, the same for every engine: a
 * number an engine does not report is NaN (shown `-`, never 0).
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>

/* In the order of the cluster file's `engine` choices (engine/proto's row
 * OPT_CF_ENGINE, the one list of their names). */
typedef enum eng_kind { ENG_INFERD, ENG_LLAMACPP, ENG_VLLM, ENG_OLLAMA, ENG_OPENAI } eng_kind;
#define ENG_COUNT 5

/* "inferd", "llama.cpp", ... */
const char *eng_name(eng_kind k);

typedef enum eng_health {
    ENG_UNKNOWN, /* not polled yet */
    ENG_UP,      /* answering and ready */
    ENG_LOADING, /* answering, not ready (llama.cpp /health 503 while loading) */
    ENG_ERROR,   /* answering with an error */
    ENG_DOWN     /* not answering: refused, timed out, reset */
} eng_health;

/* The latency histograms an engine exports (vLLM), as windowed
 * percentiles. */
typedef enum eng_hist { ENG_H_TTFT, ENG_H_TPOT, ENG_H_E2E, ENG_H_QUEUE, ENG_H_COUNT } eng_hist;

#define ENG_TEXT_MAX 256
#define ENG_MODELS_MAX 8

/* A model an engine has loaded (Ollama /api/ps). */
struct eng_model {
    char name[ENG_TEXT_MAX];
    double size, size_vram; /* bytes, NaN when not told */
    char expires[64];       /* as the engine gives it, "" when not told */
};

/* Rates and percentiles are over the window: from the oldest poll kept
 * that is at most ENG_WINDOW_S old to the newest. */
#define ENG_WINDOW_S 5.0

struct eng_view {
    eng_kind kind;
    eng_health health;
    /* Why it is down or in error, or what the operator should do to see
     * more ("start llama-server with --metrics"); "" when nothing. */
    char problem[ENG_TEXT_MAX];
    char model[ENG_TEXT_MAX]; /* "" when not told */
    char version[64];         /* "" when not told */
    double n_ctx;             /* llama.cpp /props, vLLM max_model_len */
    double prompt_tps;        /* prompt tokens per second */
    double decode_tps;        /* generated tokens per second */
    double ms_per_token;      /* ms per decoded token (llama.cpp) */
    double requests_running;  /* llama.cpp processing, vLLM running */
    double requests_waiting;  /* llama.cpp deferred, vLLM waiting */
    double kv_usage;          /* 0..1 */
    double kv_tokens;         /* llama.cpp kv_cache_tokens */
    double batch;             /* llama.cpp busy slots per decode */
    double slots_busy, slots_total;
    double preemptions;                                  /* vLLM, in the window */
    double hist_p50[ENG_H_COUNT], hist_p95[ENG_H_COUNT]; /* ms */
    double mem_bytes;  /* what the engine says it holds (Ollama size) */
    double latency_ms; /* the last poll's slowest round trip */
    int n_models;
    struct eng_model models[ENG_MODELS_MAX];
    double polled_at; /* when the last poll ended, on the poller's clock; 0 never */
};

/* A view with every number NaN, health ENG_UNKNOWN. */
void eng_view_init(struct eng_view *v, eng_kind k);

/* ---- one node's polls ---------------------------------------------------
 *
 * The poller (ewatch.h) is the same for every engine: at each round it
 * asks eng_endpoints' paths and hands each answer in; the engine's own
 * table (eng_<name>.c) maps it to the view. The poll keeps the counters of
 * the last polls to derive rates and windowed percentiles. */

struct eng_endpoint {
    const char *path; /* "/metrics" */
    int once;         /* asked until it answers 200, then never again (/props) */
};

/* The endpoints of engine k, in the order a round asks them. *n is 0 for
 * inferd (not polled over HTTP). */
const struct eng_endpoint *eng_endpoints(eng_kind k, int *n);

typedef struct eng_poll eng_poll;

eng_poll *eng_poll_new(eng_kind k); /* NULL when out of memory */
void eng_poll_free(eng_poll *p);

/* A round of polls starts at `now` (seconds on the poller's clock). */
void eng_poll_begin(eng_poll *p, double now);
/* The answer to endpoint index `ep` of the round: its HTTP status and
 * body, or status 0 and `body` the transport's error ("connection
 * refused", "timed out") when there was no answer. latency_ms is the
 * request's round trip. */
void eng_poll_answer(eng_poll *p, int ep, long status, const char *body, size_t len,
                     double latency_ms);
/* Ends the round at `now` and fills *out with what is known. */
void eng_poll_end(eng_poll *p, double now, struct eng_view *out);

#endif
