/* cli_engine.c: the fields of a node of any engine (cli_engine.h). */
#include "cli_engine.h"

#include <math.h>
#include <stdio.h>

/* A number of the view, and one the view has in milliseconds (seconds in
 * the exposition). */
#define F(json, metric, help, member)                                                              \
    {                                                                                              \
        json, metric, help, offsetof(struct eng_view, member), 1                                   \
    }
#define MS(json, metric, help, member)                                                             \
    {                                                                                              \
        json, metric, help, offsetof(struct eng_view, member), 1e-3                                \
    }

/* clang-format off */
const struct cli_eng_field cli_eng_fields[] = {
    F("prompt_tps", "prompt_tokens_per_second", "Prompt tokens processed per second.", prompt_tps),
    F("decode_tps", "decode_tokens_per_second", "Tokens generated per second.", decode_tps),
    F("requests_running", "requests_running", "Requests being processed.", requests_running),
    F("requests_waiting", "requests_waiting", "Requests waiting for a place.", requests_waiting),
    F("kv_usage", "kv_usage_ratio", "KV cache in use, 0..1.", kv_usage),
    F("kv_tokens", "kv_tokens", "Tokens held in the KV cache.", kv_tokens),
    F("slots_busy", "slots_busy", "Slots processing a request (llama.cpp).", slots_busy),
    F("slots_total", "slots_total", "Slots of the server (llama.cpp).", slots_total),
    F("n_ctx", "context_tokens", "Context size of the model, tokens.", n_ctx),
    MS("ms_per_token", "decode_seconds_per_token", "Time per decoded token.", ms_per_token),
    F("batch", "batch_size", "Requests per decode step.", batch),
    F("preemptions", "preemptions", "Requests preempted in the window (vLLM).", preemptions),
    F("mem_bytes", "memory_bytes", "Memory the engine says it holds.", mem_bytes),
    MS("ttft_p50_ms", "ttft_p50_seconds", "Time to first token, windowed p50.", hist_p50[ENG_H_TTFT]),
    MS("ttft_p95_ms", "ttft_p95_seconds", "Time to first token, windowed p95.", hist_p95[ENG_H_TTFT]),
    MS("tpot_p95_ms", "tpot_p95_seconds", "Time per output token, windowed p95.", hist_p95[ENG_H_TPOT]),
    MS("e2e_p95_ms", "e2e_p95_seconds", "Request latency end to end, windowed p95.", hist_p95[ENG_H_E2E]),
    MS("queue_p95_ms", "queue_p95_seconds", "Time waited in the queue, windowed p95.", hist_p95[ENG_H_QUEUE]),
    MS("latency_ms", "poll_latency_seconds", "The last poll's slowest round trip.", latency_ms),
};
/* clang-format on */
const int cli_eng_nfields = sizeof cli_eng_fields / sizeof cli_eng_fields[0];

const char *cli_eng_state(eng_health h)
{
    switch (h) {
    case ENG_UP:
        return "up";
    case ENG_LOADING:
        return "loading";
    case ENG_ERROR:
        return "error";
    default:
        return "down";
    }
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void cli_eng_from_status(const json_t *status, struct eng_view *v)
{
    eng_view_init(v, ENG_INFERD);
    v->health = status ? ENG_UP : ENG_DOWN;
    if (!status)
        return;
    const char *model =
        json_string_value(json_object_get(json_object_get(status, "model"), "name"));
    const char *version = json_string_value(json_object_get(status, "version"));
    snprintf(v->model, sizeof v->model, "%s", model ? model : "");
    snprintf(v->version, sizeof v->version, "%s", version ? version : "");
    v->requests_running = num(status, "active");
    v->requests_waiting = num(status, "queued");
    v->n_ctx = num(json_object_get(status, "model"), "seq_len");
    v->mem_bytes = num(json_object_get(status, "memory"), "used");
}
