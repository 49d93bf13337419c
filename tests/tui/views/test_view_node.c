/* test_view_node.c: the node view of each HTTP engine: llama.cpp's slots
 * and problem, vLLM's latency percentiles, Ollama's loaded models, an
 * OpenAI-compatible server's reachability. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "screen.h"

static state *st;
static struct screen scr;
static struct eng_view ev;

static void setup(void)
{
    static const char *const names[] = {"n"};
    st = state_new("t", 1, names);
    cr_assert_not_null(st);
}

static void teardown(void)
{
    screen_close(&scr);
    state_free(st);
}

TestSuite(view_node, .init = setup, .fini = teardown);

/* The node runs engine k, its last poll ev (filled by the test). */
static void show(eng_kind k)
{
    state_node_set_engine(st, 0, k);
    ev.kind = k;
    if (ev.health == ENG_UNKNOWN)
        ev.health = ENG_UP;
    state_ingest_engine(st, 0, &ev, 1.0);
    state_tick(st, 1.0);
    screen_open(&scr, st, LAYOUT_NODE, 160, 50, 1.0);
    screen_draw(&scr, &view_node);
}

static void expect_in(enum layout_pane p, const char *text)
{
    cr_expect_geq(screen_find(&scr, p, text), 0, "\"%s\" not shown", text);
}

/* The row of pane p holding key holds each of the texts after it too
 * (a NULL ends them). */
static void expect_row(enum layout_pane p, const char *key, ...)
{
    int y = screen_find(&scr, p, key);
    cr_assert_geq(y, 0, "\"%s\" not shown", key);
    char row[1024];
    snprintf(row, sizeof row, "%s", screen_row(&scr, p, y));
    va_list ap;
    va_start(ap, key);
    for (const char *t; (t = va_arg(ap, const char *));)
        cr_expect_neq(strstr(row, t), NULL, "\"%s\" not in: %s", t, row);
    va_end(ap);
}

Test(view_node, llama_cpp_slots_batch_kv_and_problem)
{
    eng_view_init(&ev, ENG_LLAMACPP);
    ev.slots_busy = 3;
    ev.slots_total = 4;
    ev.batch = 3;
    ev.ms_per_token = 12.5;
    ev.kv_tokens = 900;
    ev.n_ctx = 2048;
    strcpy(ev.model, "stories260K.gguf");
    strcpy(ev.problem, "start llama-server with --metrics");
    show(ENG_LLAMACPP);
    /* The problem heads the widest pane, and comes in the facts right
     * after the state, before any number. */
    cr_expect_str_eq(screen_row(&scr, LAYOUT_TIMING, 0), "start llama-server with --metrics");
    int problem = screen_find(&scr, LAYOUT_FACTS, "start llama-server");
    cr_expect_geq(problem, 0);
    cr_expect_lt(problem, screen_find(&scr, LAYOUT_FACTS, "model"));
    expect_in(LAYOUT_FACTS, "llama.cpp");
    expect_in(LAYOUT_FACTS, "3 / 4 (busy / total)");
    expect_in(LAYOUT_FACTS, "3.0 busy slots per decode");
    expect_in(LAYOUT_FACTS, "12.5 ms");
    expect_in(LAYOUT_FACTS, "stories260K.gguf");
    expect_in(LAYOUT_FACTS, "2048");
    expect_in(LAYOUT_MEMORY, "slots 3 of 4 busy");
    expect_in(LAYOUT_MEMORY, "900 tokens (n_ctx 2048)");
    /* NaN stays `-`. */
    expect_in(LAYOUT_FACTS, "- / - (prompt / decode)");
}

Test(view_node, vllm_latency_percentiles_and_preemptions)
{
    eng_view_init(&ev, ENG_VLLM);
    ev.hist_p50[ENG_H_TTFT] = 120;
    ev.hist_p95[ENG_H_TTFT] = 480;
    ev.hist_p50[ENG_H_TPOT] = 21.5;
    ev.preemptions = 2;
    strcpy(ev.version, "0.10.1");
    show(ENG_VLLM);
    expect_row(LAYOUT_TIMING, "TTFT", "120", "480", NULL);
    /* TPOT's p95 is not reported: `-`. */
    expect_row(LAYOUT_TIMING, "TPOT", "21.5", " -", NULL);
    expect_in(LAYOUT_TIMING, "queue");
    expect_in(LAYOUT_TIMING, "e2e");
    expect_in(LAYOUT_FACTS, "vllm 0.10.1");
    expect_in(LAYOUT_FACTS, "2 in the window");
}

Test(view_node, ollama_loaded_models)
{
    eng_view_init(&ev, ENG_OLLAMA);
    ev.n_models = 2;
    strcpy(ev.models[0].name, "llama3:8b");
    ev.models[0].size = 5.0 * 1024 * 1024 * 1024;
    ev.models[0].size_vram = 4.0 * 1024 * 1024 * 1024;
    strcpy(ev.models[0].expires, "2025-11-27T23:59:00Z");
    strcpy(ev.models[1].name, "qwen2:0.5b");
    ev.models[1].size = 512.0 * 1024 * 1024;
    ev.models[1].size_vram = NAN;
    show(ENG_OLLAMA);
    expect_row(LAYOUT_LOAD, "llama3:8b", "5.0G", "4.0G", "2025-11-27T23:59:00Z", NULL);
    /* No vram or expiry told: `-`. */
    expect_row(LAYOUT_LOAD, "qwen2:0.5b", "512M", " -", NULL);
}

Test(view_node, openai_reachability_and_latency)
{
    eng_view_init(&ev, ENG_OPENAI);
    ev.latency_ms = 12.3;
    show(ENG_OPENAI);
    expect_in(LAYOUT_FACTS, "openai");
    expect_in(LAYOUT_FACTS, "up");
    expect_in(LAYOUT_FACTS, "12.3 ms");
    expect_in(LAYOUT_TIMING, "openai exports no latency histograms");
}

Test(view_node, engine_down_says_why)
{
    eng_view_init(&ev, ENG_OPENAI);
    ev.health = ENG_DOWN;
    strcpy(ev.problem, "connection refused");
    show(ENG_OPENAI);
    int state = screen_find(&scr, LAYOUT_FACTS, "down");
    cr_expect_geq(state, 0);
    expect_in(LAYOUT_FACTS, "connection refused");
    expect_in(LAYOUT_FACTS, "DOWN");
}
