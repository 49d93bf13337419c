/* test_view_quality.c: quality beside speed on screen. The History view
 * shows a quality run's settings with the figures `infertop history show`
 * prints for it, and charts the KL by depth; the Stress view shows the
 * runner's measured legs the same way; the Config view, while kv_bits is
 * edited, shows the last measurement of the target setting on the model,
 * or says there is none. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "screen.h"
#include "tui/stress/console_runs.h"

static char dir[64], db[128];
static state *st;
static console_runs *runs;
static struct screen scr;

static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* A quality run of kv_bits 32 (KL 0) and 4 (KL 0.0625), two buckets each. */
static void record_quality(store *s)
{
    store_run_info info = {
        .name = "q", .mode = STORE_MODE_QUALITY, .cluster = "{\"model\":\"m1\"}"};
    int64_t run;
    char err[256];
    cr_assert_eq(store_run_begin(s, &info, &run, err, sizeof err), 0, "%s", err);
    for (int leg = 0; leg < 2; leg++) {
        store_leg_info li = {.kv_bits = leg ? 4 : 32, .prefill_step = 48, .concurrency = 1};
        store_leg_start(s, run, leg, &li);
        double kl = leg ? 0.0625 : 0.0;
        store_quality_bucket b[2] = {{.from = 0,
                                      .to = 64,
                                      .positions = 0,
                                      .kl_mean = NAN,
                                      .kl_p99 = NAN,
                                      .kl_max = NAN,
                                      .top1 = NAN,
                                      .ppl_ref = NAN,
                                      .ppl_test = NAN},
                                     {.from = 64,
                                      .to = 128,
                                      .positions = 315,
                                      .kl_mean = kl,
                                      .kl_p99 = 4 * kl,
                                      .kl_max = 8 * kl,
                                      .top1 = 1 - kl,
                                      .ppl_ref = 33.75,
                                      .ppl_test = 33.75 + 100 * kl}};
        store_quality q = {.run = run,
                           .leg = leg,
                           .kv_bits = li.kv_bits,
                           .ref_kv_bits = 32,
                           .ctx = 128,
                           .score_from = 64,
                           .windows = 5,
                           .positions = 315,
                           .kl_mean = kl,
                           .kl_p99 = 4 * kl,
                           .kl_max = 8 * kl,
                           .top1 = 1 - kl,
                           .ppl_ref = 33.75,
                           .ppl_test = 33.75 + 100 * kl,
                           .ppl_ref_err = NAN,
                           .text_name = "text.txt",
                           .model = "m1",
                           .t = 1.7e9,
                           .buckets = b,
                           .n_buckets = 2};
        memcpy(q.text_sha256, sha, sizeof sha);
        cr_assert_eq(store_quality_add(s, &q), 0);
        store_leg_end(s, run, leg, STORE_COMPLETED);
    }
    store_run_end(s, run, STORE_COMPLETED, NULL);
    cr_assert_eq(store_flush(s, err, sizeof err), 0, "%s", err);
}

static void setup(void)
{
    runs = screen_history_open(dir, sizeof dir, db, sizeof db, record_quality);
    static const char *const names[] = {"n"};
    st = state_new("t", 1, names);
}

static void teardown(void)
{
    screen_close(&scr);
    screen_history_close(runs, dir);
    state_free(st);
}

TestSuite(view_quality, .init = setup, .fini = teardown);

/* The row of pane p holding every one of the words, or -1. */
static int row_with(enum layout_pane p, const char *const *words)
{
    for (int y = 0; y < scr.lay.pane[p].h; y++) {
        const char *row = screen_row(&scr, p, y);
        int all = 1;
        for (const char *const *w = words; *w && all; w++)
            all = strstr(row, *w) != NULL;
        if (all)
            return y;
    }
    return -1;
}

Test(view_quality, history_shows_each_setting_and_charts_kl_by_depth)
{
    screen_open(&scr, st, LAYOUT_HISTORY, 120, 40, 1.0);
    scr.opt.runs = runs;
    screen_draw(&scr, &view_history);
    int head = row_with(LAYOUT_DETAIL, (const char *const[]){"KL_MEAN", "TOP1", "DEC_TPS", NULL});
    cr_assert_geq(head, 0, "the quality table's titles");
    int ref = row_with(LAYOUT_DETAIL, (const char *const[]){"0   32", " 0 ", "1.000", NULL});
    int kv4 = row_with(LAYOUT_DETAIL,
                       (const char *const[]){"1   4", "0.0625", "0.25", "0.938", "40.00", NULL});
    cr_expect_gt(ref, head, "kv_bits 32: KL 0, top-1 1");
    cr_expect_gt(kv4, ref, "kv_bits 4: KL 0.0625, p99 0.25, top-1 0.938, ppl 40");

    scr.v.hist.charts = 1;
    screen_draw(&scr, &view_history);
    cr_expect_geq(screen_find(&scr, LAYOUT_DETAIL, "KL by depth"), 0, "the chart's title");
    cr_expect_geq(screen_find(&scr, LAYOUT_DETAIL, "kv 4"), 0, "kv 4 charted");
    cr_expect_lt(screen_find(&scr, LAYOUT_DETAIL, "kv 32"), 0, "the reference is not charted");
}

Test(view_quality, stress_shows_the_runners_measured_legs)
{
    screen_open(&scr, st, LAYOUT_STRESS, 120, 40, 1.0);
    scr.opt.runs = runs;
    /* The runner's rows as the progress hands them, from the stored run. */
    store_quality_list l;
    char err[256];
    store *s = store_open(db, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(store_run_quality(s, 1, &l, err, sizeof err), 0, "%s", err);
    stress_quality_leg q[2];
    for (int i = 0; i < 2; i++)
        stress_quality_leg_of(&l.q[i], i ? 81.5 : 90.25, &q[i]);
    store_quality_list_free(&l);
    store_close(s);
    WINDOW *w = scr.win[LAYOUT_CHART];
    struct layout_rect r = {0, 0, scr.lay.pane[LAYOUT_CHART].w - 1, scr.lay.pane[LAYOUT_CHART].h};
    view_quality(&scr.v, w, r, q, 2);
    cr_expect_geq(row_with(LAYOUT_CHART, (const char *const[]){"speed", "quality", NULL}), 0);
    cr_expect_geq(row_with(LAYOUT_CHART, (const char *const[]){"1   4", "81.5", "0.0625", NULL}), 0,
                  "speed and quality on one row");
    cr_expect_geq(screen_find(&scr, LAYOUT_CHART, "KL by depth"), 0);
}

/* An HTTP node's legs, estimated from top-k logprobs against the
 * engine's reference: the title says which, and with what k. */
Test(view_quality, a_topk_estimate_says_so)
{
    screen_open(&scr, st, LAYOUT_STRESS, 120, 40, 1.0);
    store_quality_list l;
    char err[256];
    store *s = store_open(db, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(store_run_quality(s, 1, &l, err, sizeof err), 0, "%s", err);
    stress_quality_leg q[2];
    for (int i = 0; i < 2; i++) {
        l.q[i].topk = 20;
        l.q[i].ref_kv_bits = 16;
        stress_quality_leg_of(&l.q[i], NAN, &q[i]);
    }
    store_quality_list_free(&l);
    store_close(s);
    WINDOW *w = scr.win[LAYOUT_CHART];
    struct layout_rect r = {0, 0, scr.lay.pane[LAYOUT_CHART].w - 1, scr.lay.pane[LAYOUT_CHART].h};
    view_quality(&scr.v, w, r, q, 2);
    cr_expect_geq(
        screen_find(&scr, LAYOUT_CHART, "quality against kv_bits 16, top-k estimate (k=20)"), 0,
        "%s", screen_row(&scr, LAYOUT_CHART, 0));
}

static void heartbeat_model(const char *model)
{
    proto_head h = {.seq = 1};
    proto_status s = {0};
    strcpy(h.node, state_node_name(st, 0));
    snprintf(s.model.name, sizeof s.model.name, "%s", model);
    s.config.prefill_step = 512;
    s.config.kv_bits = 16;
    s.memory.budget = 1000;
    state_ingest_heartbeat(st, 0, &h, &s, 1.0);
}

Test(view_quality, config_shows_the_last_measurement_of_the_target_setting)
{
    heartbeat_model("m1");
    screen_open(&scr, st, LAYOUT_CONFIG, 120, 40, 2.0);
    scr.opt.runs = runs;
    scr.v.cfg.editing = 1;
    scr.v.cfg.draft.has_kv_bits = 1;
    scr.v.cfg.draft.kv_bits = 4;
    screen_draw(&scr, &view_config);
    cr_expect_geq(
        row_with(LAYOUT_CONFIG_EDIT, (const char *const[]){"kv_bits 4 on m1", "KL mean 0.0625",
                                                           "top-1 0.938", "run 1", NULL}),
        0, "%s", screen_row(&scr, LAYOUT_CONFIG_EDIT, 2));
    scr.v.cfg.draft.kv_bits = 8;
    screen_draw(&scr, &view_config);
    cr_expect_geq(screen_find(&scr, LAYOUT_CONFIG_EDIT, "kv_bits 8: no quality measured on m1"), 0,
                  "%s", screen_row(&scr, LAYOUT_CONFIG_EDIT, 2));
    scr.v.cfg.editing = 0;
    screen_draw(&scr, &view_config);
    cr_expect_lt(screen_find(&scr, LAYOUT_CONFIG_EDIT, "no quality measured"), 0,
                 "only while kv_bits is edited");
}
