/* eng_vllm.c: vLLM's OpenAI server (engine.h), its table.
 *
 * Names checked against vLLM's own source and documentation: the V1
 * engine's Prometheus logger (vllm/v1/metrics/loggers.py, v0.10) and
 * docs/design/metrics.md on main (late 2025). Every series carries a
 * `model_name` label (and `engine` with data parallelism), so series add
 * up; a renamed metric is read under either name, the newer first. */
#include <stddef.h>

#include "eng_map.h"

static const struct eng_ep_row eps[] = {
    {.path = "/health"},
    {.path = "/metrics", .metrics = 1},
    {.path = "/v1/models", .once = 1, .read = eng_read_models},
    {.path = "/version", .once = 1, .read = eng_read_version},
};

static const struct eng_gauge_row gauges[] = {
    {offsetof(struct eng_view, requests_running), {"vllm:num_requests_running"}, ENG_SUM},
    {offsetof(struct eng_view, requests_waiting), {"vllm:num_requests_waiting"}, ENG_SUM},
    /* gpu_cache_usage_perc before v0.10; a fraction despite the name. */
    {offsetof(struct eng_view, kv_usage),
     {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
     ENG_MEAN},
};

enum { PROMPT_TOKENS, GENERATION_TOKENS, PREEMPTIONS };
static const struct eng_counter_row counters[] = {
    [PROMPT_TOKENS] = {{"vllm:prompt_tokens_total"}},
    [GENERATION_TOKENS] = {{"vllm:generation_tokens_total"}},
    [PREEMPTIONS] = {{"vllm:num_preemptions_total"}},
};

static const struct eng_delta_row deltas[] = {
    {offsetof(struct eng_view, prompt_tps), PROMPT_TOKENS, ENG_PER_SECOND, 1},
    {offsetof(struct eng_view, decode_tps), GENERATION_TOKENS, ENG_PER_SECOND, 1},
    {offsetof(struct eng_view, preemptions), PREEMPTIONS, ENG_IN_WINDOW, 1},
};

static const struct eng_hist_row hists[] = {
    {ENG_H_TTFT, {"vllm:time_to_first_token_seconds"}},
    /* inter_token_latency_seconds replaced time_per_output_token_seconds
     * (v0.11); both are exported during the deprecation. */
    {ENG_H_TPOT, {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}},
    {ENG_H_E2E, {"vllm:e2e_request_latency_seconds"}},
    {ENG_H_QUEUE, {"vllm:request_queue_time_seconds"}},
};

const struct eng_table eng_vllm_table = {
    ENG_ROWS(eps, eps),       ENG_ROWS(gauges, gauges), ENG_ROWS(counters, counters),
    ENG_ROWS(deltas, deltas), ENG_ROWS(hists, hists),
};
