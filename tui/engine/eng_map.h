/* eng_map.h: what one engine's table (eng_<name>.c) tells the generic
 * poll (eng_poll.c). Private to tui/engine.
 *
 * A table is data: the endpoints a round asks, and for /metrics which
 * Prometheus names feed which eng_view field. The little code an engine
 * needs (reading its JSON answers) sits beside its table as readers. */
#ifndef ENG_MAP_H
#define ENG_MAP_H

#include <jansson.h>
#include <stddef.h>

#include "engine.h"

/* Reads a 200 answer's body into v. 0, or -1 with why (what the body
 * lacked) for the node's problem line. */
typedef int (*eng_read_fn)(struct eng_view *v, const char *body, size_t len, char *why,
                           size_t whylen);

struct eng_ep_row {
    const char *path;
    int once;         /* engine.h: asked until it answers 200 */
    int metrics;      /* the Prometheus exposition, read with the table's rows */
    eng_read_fn read; /* a JSON answer's reader; NULL: only its status counts */
    const char *flag; /* when it answers 404 or 501, the start flag that turns it on */
};

/* A metric may have had another name in older releases: the first name
 * the exposition has is read. */
#define ENG_NAMES 2

/* Gauges: NAME's value, summed over its label sets or averaged (a ratio
 * of each of several engines is not a ratio once summed). */
enum eng_agg { ENG_SUM, ENG_MEAN };
struct eng_gauge_row {
    size_t field; /* offsetof(struct eng_view, ...) */
    const char *names[ENG_NAMES];
    enum eng_agg agg;
};

/* Counters the window's deltas are taken of, referred to by index. */
#define ENG_COUNTERS_MAX 8
struct eng_counter_row {
    const char *names[ENG_NAMES];
    /* When given, the counter is NAME times the mean of this series (a
     * count kept as calls x average per call). */
    const char *times;
};

/* field = scale * delta(counter num) / (seconds of the window, or
 * delta(counter den), or 1). */
enum { ENG_PER_SECOND = -1, ENG_IN_WINDOW = -2 };
struct eng_delta_row {
    size_t field;
    int num, den; /* counter indexes; den may be ENG_PER_SECOND or ENG_IN_WINDOW */
    double scale;
};

/* Histograms in seconds, shown as the window's p50/p95 in ms. */
struct eng_hist_row {
    eng_hist h;
    const char *names[ENG_NAMES];
};

#define ENG_EPS_MAX 6

struct eng_table {
    const char *start_with; /* the hint's words before the flags: "start llama-server with" */
    const struct eng_ep_row *eps;
    int n_eps; /* eps[0] is the one that says whether the engine is up */
    const struct eng_gauge_row *gauges;
    int n_gauges;
    const struct eng_counter_row *counters;
    int n_counters;
    const struct eng_delta_row *deltas;
    int n_deltas;
    const struct eng_hist_row *hists;
    int n_hists;
};

/* .eps = eps, .n_eps = its length (and so for every row array). */
#define ENG_ROWS(member, a) .member = (a), .n_##member = (int)(sizeof(a) / sizeof((a)[0]))

extern const struct eng_table eng_llamacpp_table, eng_vllm_table, eng_ollama_table,
    eng_openai_table;

/* Readers shared by tables (eng_json.c, eng_openai.c). */
int eng_read_version(struct eng_view *v, const char *body, size_t len, char *why,
                     size_t whylen); /* {"version": "..."} */
int eng_read_models(struct eng_view *v, const char *body, size_t len, char *why,
                    size_t whylen); /* /v1/models: data[0].id, max_model_len */

/* Copies a JSON string member into dst (size bytes), "" when absent. */
void eng_json_text(char *dst, size_t size, json_t *obj, const char *key);
/* A JSON number member, NaN when absent or not a number. */
double eng_json_num(json_t *obj, const char *key);
/* Parses body as JSON; NULL with why when it is not. */
json_t *eng_json_load(const char *body, size_t len, char *why, size_t whylen);

#endif
