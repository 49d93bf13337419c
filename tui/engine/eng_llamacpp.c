/* eng_llamacpp.c: llama.cpp's llama-server (engine.h), its table.
 *
 * /metrics and /slots answer only when the server was started with
 * --metrics and --slots; without them the rest still shows and the node
 * says which flags to add. Names as llama-server exports them (checked
 * against the captures in tests/fixtures/engines/llama.cpp). */
#include <stddef.h>
#include <stdio.h>

#include "eng_map.h"

/* /slots: one object per slot, `is_processing` while it serves. */
static int read_slots(struct eng_view *v, const char *body, size_t len, char *why, size_t whylen)
{
    json_t *j = eng_json_load(body, len, why, whylen), *slot;
    if (!j)
        return -1;
    if (!json_is_array(j)) {
        json_decref(j);
        snprintf(why, whylen, "not an array of slots");
        return -1;
    }
    size_t i;
    v->slots_busy = 0;
    json_array_foreach(j, i, slot) v->slots_busy +=
        json_is_true(json_object_get(slot, "is_processing"));
    v->slots_total = (double)json_array_size(j);
    json_decref(j);
    return 0;
}

/* /props: the model's path, each slot's context, the slots. */
static int read_props(struct eng_view *v, const char *body, size_t len, char *why, size_t whylen)
{
    json_t *j = eng_json_load(body, len, why, whylen);
    if (!j)
        return -1;
    eng_json_text(v->model, sizeof v->model, j, "model_path");
    v->n_ctx = eng_json_num(json_object_get(j, "default_generation_settings"), "n_ctx");
    v->slots_total = eng_json_num(j, "total_slots");
    json_decref(j);
    return 0;
}

static const struct eng_ep_row eps[] = {
    {.path = "/health"},
    {.path = "/metrics", .metrics = 1, .flag = "--metrics"},
    {.path = "/slots", .read = read_slots, .flag = "--slots"},
    {.path = "/props", .once = 1, .read = read_props},
};

static const struct eng_gauge_row gauges[] = {
    {offsetof(struct eng_view, requests_running), {"llamacpp:requests_processing"}, ENG_SUM},
    {offsetof(struct eng_view, requests_waiting), {"llamacpp:requests_deferred"}, ENG_SUM},
    {offsetof(struct eng_view, kv_usage), {"llamacpp:kv_cache_usage_ratio"}, ENG_MEAN},
    {offsetof(struct eng_view, kv_tokens), {"llamacpp:kv_cache_tokens"}, ENG_SUM},
    /* Typed a counter, but an average since the start (busy slots per
     * llama_decode call). */
    {offsetof(struct eng_view, batch), {"llamacpp:n_busy_slots_per_decode"}, ENG_MEAN},
};

/* llama-server adds a request's tokens to tokens_predicted_total when the
 * request ends, so during a long stream that counter stands still. Busy
 * slots summed over decode calls move at every call: n_decode_total x
 * n_busy_slots_per_decode, which equals tokens_predicted_total once the
 * streams end (433 x 3.76905 = 1632 in metrics-after.txt). */
enum { PROMPT_TOKENS, PREDICTED_TOKENS, PREDICTED_SECONDS, SLOT_DECODES };
static const struct eng_counter_row counters[] = {
    [PROMPT_TOKENS] = {{"llamacpp:prompt_tokens_total"}},
    [PREDICTED_TOKENS] = {{"llamacpp:tokens_predicted_total"}},
    [PREDICTED_SECONDS] = {{"llamacpp:tokens_predicted_seconds_total"}},
    [SLOT_DECODES] = {{"llamacpp:n_decode_total"}, .times = "llamacpp:n_busy_slots_per_decode"},
};

static const struct eng_delta_row deltas[] = {
    {offsetof(struct eng_view, prompt_tps), PROMPT_TOKENS, ENG_PER_SECOND, 1},
    {offsetof(struct eng_view, decode_tps), SLOT_DECODES, ENG_PER_SECOND, 1},
    /* The closest it exports to inferd's model_ms: decode time per token
     * (summed over slots, so per stream). */
    {offsetof(struct eng_view, ms_per_token), PREDICTED_SECONDS, PREDICTED_TOKENS, 1000},
};

const struct eng_table eng_llamacpp_table = {
    .start_with = "start llama-server with",
    ENG_ROWS(eps, eps),
    ENG_ROWS(gauges, gauges),
    ENG_ROWS(counters, counters),
    ENG_ROWS(deltas, deltas),
};
