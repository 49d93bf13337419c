/* test_eng_poll.c: one node's polls through each engine's table, against
 * llama-server's captured answers (every file of
 * tests/fixtures/engines/llama.cpp) and, for the engines without
 * captures, answers written here from their documentation. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <string.h>

#include "engfix.h"
#include "tui/engine/engine.h"

static eng_poll *p;

static void teardown(void)
{
    eng_poll_free(p);
    p = NULL;
}

TestSuite(eng_poll, .fini = teardown);

/* The index of `path` among engine k's endpoints. */
static int ep_of(eng_kind k, const char *path)
{
    int n;
    const struct eng_endpoint *e = eng_endpoints(k, &n);
    for (int i = 0; i < n; i++)
        if (strcmp(e[i].path, path) == 0)
            return i;
    cr_assert_fail("%s has no %s", eng_name(k), path);
    return -1;
}

static void answer(eng_kind k, const char *path, long status, const char *body)
{
    eng_poll_answer(p, ep_of(k, path), status, body, strlen(body), 3.0);
}

static void answer_file(eng_kind k, const char *path, const char *file)
{
    struct engfix f = engfix_load(file);
    eng_poll_answer(p, ep_of(k, path), f.status, f.body, f.len, 2.0);
    engfix_free(&f);
}

/* One round of llama-server at `t`: /health, /metrics, /slots from the
 * captures named (NULL: not asked), /props when props is set. */
static struct eng_view llama_round(double t, const char *health, const char *metrics,
                                   const char *slots, int props)
{
    eng_poll_begin(p, t);
    if (health)
        answer_file(ENG_LLAMACPP, "/health", health);
    if (metrics)
        answer_file(ENG_LLAMACPP, "/metrics", metrics);
    if (slots)
        answer_file(ENG_LLAMACPP, "/slots", slots);
    if (props)
        answer_file(ENG_LLAMACPP, "/props", "props.json");
    struct eng_view v;
    eng_poll_end(p, t + 0.01, &v);
    return v;
}

Test(eng_poll, llamacpp_endpoints_in_order)
{
    int n;
    const struct eng_endpoint *e = eng_endpoints(ENG_LLAMACPP, &n);
    cr_assert_eq(n, 4);
    const char *want[] = {"/health", "/metrics", "/slots", "/props"};
    for (int i = 0; i < n; i++)
        cr_assert_str_eq(e[i].path, want[i]);
    cr_assert_eq(e[3].once, 1, "/props is asked once");
    cr_assert_eq(e[1].once, 0);
    eng_endpoints(ENG_INFERD, &n);
    cr_assert_eq(n, 0, "inferd is not polled over HTTP");
}

Test(eng_poll, llamacpp_idle_busy_after_give_rates)
{
    p = eng_poll_new(ENG_LLAMACPP);
    struct eng_view v =
        llama_round(100, "health-idle.http", "metrics-idle.txt", "slots-idle.json", 1);
    cr_assert_eq(v.kind, ENG_LLAMACPP);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_str_empty(v.problem);
    cr_assert_str_eq(v.model, "/work/steering/shared/fixtures/gguf/s260-F16.gguf");
    cr_assert_eq(v.n_ctx, 512);
    cr_assert_eq(v.slots_busy, 0);
    cr_assert_eq(v.slots_total, 4);
    cr_assert_eq(v.requests_running, 0);
    cr_assert_eq(v.kv_usage, 0, "an idle engine's 0 is reported, not unknown");
    /* One poll: no window yet, so no rate. */
    cr_assert(isnan(v.prompt_tps) && isnan(v.decode_tps) && isnan(v.ms_per_token));
    cr_assert_eq(v.latency_ms, 2.0);
    cr_assert_eq(v.polled_at, 100.01);

    v = llama_round(101, "health-busy.http", "metrics-busy.txt", "slots-busy.json", 0);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_eq(v.prompt_tps, 192.0, "192 prompt tokens in 1 s");
    /* tokens_predicted_total is still 0 (added when a request ends): the
     * rate comes from the decode calls' busy slots, 24 x 3.91667. */
    cr_assert_float_eq(v.decode_tps, 24 * 3.91667, 1e-9);
    cr_assert(isnan(v.ms_per_token), "no token decoded in the window");
    cr_assert_eq(v.requests_running, 4);
    cr_assert_eq(v.requests_waiting, 0);
    cr_assert_float_eq(v.kv_usage, 0.137695, 1e-9);
    cr_assert_eq(v.kv_tokens, 282);
    cr_assert_float_eq(v.batch, 3.91667, 1e-9);
    cr_assert_eq(v.slots_busy, 4);
    cr_assert_eq(v.slots_total, 4);
    /* /props was not asked again: what it told stays. */
    cr_assert_eq(v.n_ctx, 512);
    cr_assert(strstr(v.model, "s260-F16.gguf"));
    /* llama.cpp has no latency histograms nor preemptions. */
    cr_assert(isnan(v.hist_p50[ENG_H_TTFT]) && isnan(v.preemptions) && isnan(v.mem_bytes));

    v = llama_round(102, "health-idle.http", "metrics-after.txt", "slots-idle.json", 0);
    /* The window runs from the idle poll, 2 s before. */
    cr_assert_eq(v.prompt_tps, 98.0);
    cr_assert_float_eq(v.decode_tps, 433 * 3.76905 / 2, 1e-9, "about 1632 tokens in 2 s");
    cr_assert_float_eq(v.ms_per_token, 25153.0 / 1632.0, 1e-9);
    cr_assert_eq(v.slots_busy, 0);
    cr_assert_float_eq(v.kv_usage, 0.672363, 1e-9);
}

Test(eng_poll, window_starts_at_the_newest_poll_at_or_before_its_length)
{
    p = eng_poll_new(ENG_LLAMACPP);
    llama_round(0, "health-idle.http", "metrics-idle.txt", NULL, 0);
    llama_round(3, "health-busy.http", "metrics-busy.txt", NULL, 0);
    struct eng_view v = llama_round(6, "health-idle.http", "metrics-after.txt", NULL, 0);
    /* The window would start at 1 s: the idle poll at 0 is the newest
     * at or before it, so the rates are over 6 s. */
    cr_assert_float_eq(v.prompt_tps, 196.0 / 6.0, 1e-12);
    v = llama_round(9, "health-idle.http", "metrics-after.txt", NULL, 0);
    /* Now from the busy poll at 3 s (the one at 6 s is inside). */
    cr_assert_float_eq(v.prompt_tps, 4.0 / 6.0, 1e-12);
    /* Polls further apart than the window still give a rate. */
    v = llama_round(30, "health-idle.http", "metrics-after.txt", NULL, 0);
    cr_assert_eq(v.prompt_tps, 0.0);
}

Test(eng_poll, a_late_secondary_endpoint_is_a_problem_not_down)
{
    p = eng_poll_new(ENG_LLAMACPP);
    eng_poll_begin(p, 0);
    answer_file(ENG_LLAMACPP, "/health", "health-busy.http");
    answer_file(ENG_LLAMACPP, "/metrics", "metrics-busy.txt");
    answer(ENG_LLAMACPP, "/slots", 0, "Operation timed out after 2000 milliseconds");
    struct eng_view v;
    eng_poll_end(p, 0, &v);
    cr_assert_eq(v.health, ENG_UP, "/health answered");
    cr_assert(strstr(v.problem, "GET /slots: Operation timed out"), "%s", v.problem);
    cr_assert_eq(v.requests_running, 4);
}

Test(eng_poll, counter_going_down_is_a_restart_not_a_negative_rate)
{
    p = eng_poll_new(ENG_LLAMACPP);
    llama_round(0, "health-idle.http", "metrics-after.txt", NULL, 0);
    struct eng_view v = llama_round(1, "health-idle.http", "metrics-idle.txt", NULL, 0);
    cr_assert(isnan(v.prompt_tps) && isnan(v.decode_tps) && isnan(v.ms_per_token), "%g %g",
              v.prompt_tps, v.decode_tps);
    /* The window starts again at the restart. */
    v = llama_round(2, "health-idle.http", "metrics-busy.txt", NULL, 0);
    cr_assert_eq(v.prompt_tps, 192.0);
}

Test(eng_poll, llamacpp_without_metrics_says_the_flag_and_shows_the_rest)
{
    p = eng_poll_new(ENG_LLAMACPP);
    eng_poll_begin(p, 0);
    answer_file(ENG_LLAMACPP, "/health", "health-idle.http");
    /* llama-server's answer without --metrics */
    answer(ENG_LLAMACPP, "/metrics", 501,
           "{\"error\":{\"code\":501,\"message\":\"This server does not support metrics endpoint. "
           "Start it with `--metrics`\",\"type\":\"not_supported_error\"}}");
    answer_file(ENG_LLAMACPP, "/slots", "slots-busy.json");
    struct eng_view v;
    eng_poll_end(p, 0, &v);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_str_eq(v.problem, "start llama-server with --metrics");
    cr_assert_eq(v.slots_busy, 4);
    cr_assert(isnan(v.requests_running) && isnan(v.kv_usage));

    eng_poll_begin(p, 1);
    answer_file(ENG_LLAMACPP, "/health", "health-idle.http");
    answer(ENG_LLAMACPP, "/metrics", 501, "");
    answer(ENG_LLAMACPP, "/slots", 404, "Not Found");
    eng_poll_end(p, 1, &v);
    cr_assert_str_eq(v.problem, "start llama-server with --metrics --slots");
    cr_assert(isnan(v.slots_busy));

    eng_poll_begin(p, 2);
    answer_file(ENG_LLAMACPP, "/health", "health-idle.http");
    answer_file(ENG_LLAMACPP, "/metrics", "metrics-busy.txt");
    answer(ENG_LLAMACPP, "/slots", 501, "");
    eng_poll_end(p, 2, &v);
    cr_assert_str_eq(v.problem, "start llama-server with --slots");
    cr_assert_eq(v.requests_running, 4);
}

Test(eng_poll, llamacpp_loading_error_and_down)
{
    p = eng_poll_new(ENG_LLAMACPP);
    struct eng_view v;
    eng_poll_begin(p, 0);
    answer(
        ENG_LLAMACPP, "/health", 503,
        "{\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}");
    answer(ENG_LLAMACPP, "/metrics", 503, "");
    eng_poll_end(p, 0, &v);
    cr_assert_eq(v.health, ENG_LOADING);
    cr_assert_str_eq(v.problem, "GET /health: HTTP 503: Loading model");

    /* llama-server's 500, its message carried to the node's line. */
    eng_poll_begin(p, 1);
    answer_file(ENG_LLAMACPP, "/health", "error-bad-json.http");
    eng_poll_end(p, 1, &v);
    cr_assert_eq(v.health, ENG_ERROR);
    cr_assert(strncmp(v.problem, "GET /health: HTTP 500: [json.exception.parse_error.101]", 55) ==
                  0,
              "%s", v.problem);

    eng_poll_begin(p, 2);
    eng_poll_answer(p, 0, 0, "Connection refused", 18, 0.1);
    eng_poll_answer(p, 1, 0, "Connection refused", 18, 0.1);
    eng_poll_end(p, 2, &v);
    cr_assert_eq(v.health, ENG_DOWN);
    cr_assert_str_eq(v.problem, "GET /health: Connection refused");
    cr_assert(isnan(v.requests_running) && isnan(v.latency_ms));
}

Test(eng_poll, answers_of_other_endpoints_are_problems_not_numbers)
{
    p = eng_poll_new(ENG_LLAMACPP);
    /* A chat answer where /slots is expected, a stream where /metrics is. */
    struct eng_view v = llama_round(0, "health-idle.http", NULL, "chat.json", 0);
    cr_assert_str_eq(v.problem, "GET /slots: not an array of slots");
    cr_assert(isnan(v.slots_busy) && isnan(v.slots_total));

    v = llama_round(1, "health-idle.http", "chat-stream.sse", NULL, 0);
    cr_assert(strncmp(v.problem, "GET /metrics: line 1: ", 22) == 0, "%s", v.problem);
    cr_assert(isnan(v.requests_running) && isnan(v.kv_usage));

    /* A completion is JSON but no props: nothing is made up from it. */
    eng_poll_free(p);
    p = eng_poll_new(ENG_LLAMACPP);
    eng_poll_begin(p, 0);
    answer_file(ENG_LLAMACPP, "/props", "completion.json");
    eng_poll_end(p, 0, &v);
    cr_assert_str_empty(v.model);
    cr_assert(isnan(v.n_ctx) && isnan(v.slots_total));
}

Test(eng_poll, openai_models_reachability_and_latency)
{
    p = eng_poll_new(ENG_OPENAI);
    struct eng_view v;
    eng_poll_begin(p, 0);
    answer_file(ENG_OPENAI, "/v1/models", "models.json");
    eng_poll_end(p, 0, &v);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_str_eq(v.model, "/work/steering/shared/fixtures/gguf/s260-F16.gguf");
    cr_assert_eq(v.latency_ms, 2.0);
    cr_assert(isnan(v.n_ctx), "llama.cpp's /v1/models has no max_model_len");
    cr_assert(isnan(v.decode_tps) && isnan(v.kv_usage));

    eng_poll_begin(p, 1);
    answer(ENG_OPENAI, "/v1/models", 401,
           "{\"error\":{\"message\":\"Invalid API Key\",\"type\":\"authentication_error\"}}");
    eng_poll_end(p, 1, &v);
    cr_assert_eq(v.health, ENG_ERROR);
    cr_assert_str_eq(v.problem,
                     "GET /v1/models: HTTP 401: Invalid API Key (check the node's api_key_file)");
}

/* vLLM has no capture: these expositions are written from the names in
 * vLLM's documentation and source (docs/design/metrics.md,
 * vllm/v1/metrics/loggers.py), two data-parallel engines of one model.
 * TTFT at the first poll: 4 requests <= 0.1 s; at the second, 10 more:
 * 2 <= 0.1, 6 in (0.1, 0.5], 2 in (0.5, 1]. Over the window: p50 is rank
 * 5 of 10, 3 of the 6 in (0.1, 0.5] past the 2: 0.1 + 0.4 * 3/6 = 0.3 s;
 * p95 is rank 9.5, 1.5 of the 2 in (0.5, 1]: 0.875 s. Cumulative, p50
 * would read 0.1 + 0.4 * 1/6: the test fails if deltas are not taken. */
static const char vllm_t0[] =
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0\n"
    "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 0.0\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n"
    "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.25\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1000.0\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 5000.0\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 7.0\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.2\n";
static const char vllm_t2[] =
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4.0\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 6.0\n"
    "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.75\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1400.0\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 5600.0\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 9.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 5.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 8.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 9.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 9.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 1.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.5\",model_name=\"m\"} 4.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1.0\",model_name=\"m\"} 5.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 5.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 14.0\n"
    /* before v0.11, inter-token latency under its older name */
    "vllm:time_per_output_token_seconds_bucket{le=\"0.01\",model_name=\"m\"} 0.0\n"
    "vllm:time_per_output_token_seconds_bucket{le=\"0.025\",model_name=\"m\"} 10.0\n"
    "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 10.0\n";

static struct eng_view vllm_round(double t, const char *metrics, int once)
{
    eng_poll_begin(p, t);
    answer(ENG_VLLM, "/health", 200, "");
    answer(ENG_VLLM, "/metrics", 200, metrics);
    if (once) {
        answer(ENG_VLLM, "/v1/models", 200,
               "{\"object\":\"list\",\"data\":[{\"id\":\"meta-llama/Llama-3.1-8B-Instruct\","
               "\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":8192}]}");
        answer(ENG_VLLM, "/version", 200, "{\"version\":\"0.10.1\"}");
    }
    struct eng_view v;
    eng_poll_end(p, t, &v);
    return v;
}

Test(eng_poll, vllm_sums_series_and_windows_histograms)
{
    p = eng_poll_new(ENG_VLLM);
    struct eng_view v = vllm_round(10, vllm_t0, 1);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_str_empty(v.problem);
    cr_assert_str_eq(v.model, "meta-llama/Llama-3.1-8B-Instruct");
    cr_assert_eq(v.n_ctx, 8192);
    cr_assert_str_eq(v.version, "0.10.1");
    cr_assert_eq(v.requests_running, 5, "summed over the engines");
    cr_assert_eq(v.requests_waiting, 1);
    cr_assert_eq(v.kv_usage, 0.375, "a ratio averages over the engines");
    cr_assert(isnan(v.hist_p50[ENG_H_TTFT]) && isnan(v.preemptions), "one poll, no window");
    cr_assert(isnan(v.slots_busy) && isnan(v.ms_per_token) && isnan(v.kv_tokens));

    v = vllm_round(12, vllm_t2, 0);
    cr_assert_str_eq(v.version, "0.10.1", "asked once, kept");
    cr_assert_eq(v.n_ctx, 8192);
    cr_assert_eq(v.requests_waiting, 6);
    cr_assert_eq(v.kv_usage, 0.75, "read under its name before v0.10");
    cr_assert_eq(v.prompt_tps, 200.0);
    cr_assert_eq(v.decode_tps, 300.0);
    cr_assert_eq(v.preemptions, 2.0, "preemptions in the window, not a rate");
    cr_assert_float_eq(v.hist_p50[ENG_H_TTFT], 300.0, 1e-9);
    cr_assert_float_eq(v.hist_p95[ENG_H_TTFT], 875.0, 1e-9);
    /* The older TPOT name appeared only now: no window for it yet; e2e
     * and queue are not exported here at all. */
    cr_assert(isnan(v.hist_p50[ENG_H_TPOT]));
    cr_assert(isnan(v.hist_p50[ENG_H_E2E]) && isnan(v.hist_p95[ENG_H_QUEUE]));
}

Test(eng_poll, ollama_version_and_loaded_models)
{
    p = eng_poll_new(ENG_OLLAMA);
    struct eng_view v;
    eng_poll_begin(p, 0);
    /* The shapes of Ollama's API documentation (docs/api.md). */
    answer(ENG_OLLAMA, "/api/version", 200, "{\"version\":\"0.5.7\"}");
    answer(
        ENG_OLLAMA, "/api/ps", 200,
        "{\"models\":[{\"name\":\"mistral:latest\",\"model\":\"mistral:latest\","
        "\"size\":5137025024,\"digest\":\"2ae6f6dd7a3dd734790bbbf58b8909a606e0e7e97e94b7604e0aa7a"
        "e4490e6d8\",\"expires_at\":\"2024-06-04T14:38:31.83753-07:00\",\"size_vram\":"
        "5137025024},{\"name\":\"tiny:latest\",\"size\":1000,\"size_vram\":0}]}");
    eng_poll_end(p, 0, &v);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_str_eq(v.version, "0.5.7");
    cr_assert_eq(v.n_models, 2);
    cr_assert_str_eq(v.models[0].name, "mistral:latest");
    cr_assert_eq(v.models[0].size, 5137025024.0);
    cr_assert_eq(v.models[0].size_vram, 5137025024.0);
    cr_assert_str_eq(v.models[0].expires, "2024-06-04T14:38:31.83753-07:00");
    cr_assert_str_empty(v.models[1].expires);
    cr_assert_eq(v.mem_bytes, 5137026024.0);
    cr_assert_str_eq(v.model, "mistral:latest");
    cr_assert(isnan(v.decode_tps) && isnan(v.prompt_tps) && isnan(v.kv_usage),
              "Ollama exports no metrics");
}

/* Every capture is read by a test (above, or test_eng_topk.c for the
 * completion-topk ones): a new one added without a test fails here. */
Test(eng_poll, every_llamacpp_capture_is_tested)
{
    static const char *const used[] = {
        "chat-stream.sse",
        "chat.json",
        "completion.json",
        "error-bad-json.http",
        "health-busy.http",
        "health-idle.http",
        "metrics-after.txt",
        "metrics-busy.txt",
        "metrics-idle.txt",
        "models.json",
        "props.json",
        "slots-busy.json",
        "slots-idle.json",
        "completion-topk.json",
        "completion-topk-withheld.json",
    };
    DIR *d = opendir(ENGFIX_LLAMACPP);
    cr_assert_not_null(d);
    int seen = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        int found = 0;
        for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
            found |= strcmp(used[i], e->d_name) == 0;
        cr_assert(found, "%s has no test", e->d_name);
        seen++;
    }
    closedir(d);
    cr_assert_eq(seen, (int)(sizeof used / sizeof used[0]));
}
