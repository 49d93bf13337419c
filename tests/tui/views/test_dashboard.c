/* test_dashboard.c: the dashboard drawn for a mixed cluster: the engine
 * of each row, `-` for what an engine does not report (never 0), and the
 * alerts on the rows. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "screen.h"

static state *st;
static struct screen scr;

enum { RING, LLAMA, VLLM, N_NODES };

static void setup(void)
{
    static const char *const names[N_NODES] = {"ring0", "llama", "vllm"};
    st = state_new("mixed", N_NODES, names);
    cr_assert_not_null(st);
    proto_head h = {.seq = 1};
    proto_status s = {0};
    strcpy(h.node, "ring0");
    s.memory.budget = 1000;
    s.active = 1;
    s.queued = 3;
    state_ingest_heartbeat(st, RING, &h, &s, 1.0);

    struct eng_view v;
    state_node_set_engine(st, LLAMA, ENG_LLAMACPP);
    eng_view_init(&v, ENG_LLAMACPP);
    v.health = ENG_UP;
    v.decode_tps = 42.5;
    v.requests_running = 2;
    v.kv_usage = 0.95;
    v.ms_per_token = 12.5;
    state_ingest_engine(st, LLAMA, &v, 1.0);
    /* vLLM answering, with every number NaN: none was reported. */
    state_node_set_engine(st, VLLM, ENG_VLLM);
    eng_view_init(&v, ENG_VLLM);
    v.health = ENG_LOADING;
    state_ingest_engine(st, VLLM, &v, 1.0);
    state_tick(st, 1.5);
}

static void teardown(void)
{
    screen_close(&scr);
    state_free(st);
}

TestSuite(dashboard, .init = setup, .fini = teardown);

/* Node i's row of the table (under its titles). */
#define CELL(node, col) screen_cell(&scr, 1 + (node), (col))

Test(dashboard, engine_rows_show_their_engine_and_dashes_for_nan)
{
    screen_open(&scr, st, LAYOUT_DASHBOARD, 140, 30, 1.5);
    screen_draw(&scr, &view_dashboard);
    cr_expect_str_eq(CELL(RING, LAYOUT_COL_ENGINE), "inferd");
    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_ENGINE), "llama.cpp");
    cr_expect_str_eq(CELL(VLLM, LAYOUT_COL_ENGINE), "vllm");
    cr_expect_str_eq(CELL(RING, LAYOUT_COL_STATE), "up");
    cr_expect_str_eq(CELL(VLLM, LAYOUT_COL_STATE), "loading");

    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_TPS), "42.5");
    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_REQS), "2/-");
    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_KV_USE), "95%");
    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_MODEL), "12.5", "ms per token under model ms");
    /* Every number of the vLLM row is NaN: `-`, never 0. */
    static const enum layout_col nums[] = {LAYOUT_COL_TPS,    LAYOUT_COL_REQS,  LAYOUT_COL_KV_USE,
                                           LAYOUT_COL_MEMORY, LAYOUT_COL_MODEL, LAYOUT_COL_BATCH};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        cr_expect_str_eq(CELL(VLLM, nums[i]), "-", "column %s", layout_col_title(nums[i]));
    /* inferd's requests come from its heartbeat. */
    cr_expect_str_eq(CELL(RING, LAYOUT_COL_REQS), "1/3");
    cr_expect_str_eq(CELL(RING, LAYOUT_COL_KV_USE), "-");
}

/* 80 columns of a mixed cluster keep the engine, tok/s, requests, KV use
 * and memory. */
Test(dashboard, narrow_terminal_keeps_what_every_engine_reports)
{
    screen_open(&scr, st, LAYOUT_DASHBOARD, 80, 24, 1.5);
    screen_draw(&scr, &view_dashboard);
    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_ENGINE), "llama.cpp");
    cr_expect_str_eq(CELL(LLAMA, LAYOUT_COL_KV_USE), "95%");
    int titles = screen_find(&scr, LAYOUT_NODES, "engine");
    cr_expect_eq(titles, 0);
    cr_expect_neq(strstr(screen_row(&scr, LAYOUT_NODES, 0), "memory"), NULL);
}

/* The KV alert on llama and the loading one on vllm are named on the
 * events pane's title, and were logged as events. */
Test(dashboard, alerts_are_named_and_logged)
{
    screen_open(&scr, st, LAYOUT_DASHBOARD, 140, 30, 1.5);
    screen_draw(&scr, &view_dashboard);
    const char *title = screen_row(&scr, LAYOUT_EVENTS_PANE, 0);
    cr_expect_neq(strstr(title, "llama KV>90%"), NULL, "title: %s", title);
    cr_expect_neq(strstr(title, "vllm LOADING"), NULL, "title: %s", title);
    cr_expect_geq(screen_find(&scr, LAYOUT_EVENTS_PANE, "kv: cache 95% used"), 1);
    cr_expect_eq(alerts_total(state_alerts(st)), 2);
}
