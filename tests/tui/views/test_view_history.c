/* test_view_history.c: the History view prints a run's legs with the
 * numbers `infertop history` prints for the same run, and a comparison's
 * counts as integers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cli/run.h"
#include "screen.h"
#include "tui/cli/cli.h"
#include "tui/stress/console_runs.h"

static char dir[64], db[128];
static state *st;
static console_runs *runs;
static struct screen scr;

/* A sweep of two legs, kv 16 then kv 4, of three requests each. */
static int64_t record_sweep(store *s)
{
    store_run_info info = {.name = "sweep", .mode = STORE_MODE_SWEEP};
    int64_t run;
    char err[256];
    cr_assert_eq(store_run_begin(s, &info, &run, err, sizeof err), 0, "%s", err);
    for (int leg = 0; leg < 2; leg++) {
        store_leg_info li = {.kv_bits = leg ? 4 : 16, .prefill_step = 256, .concurrency = 2};
        store_leg_start(s, run, leg, &li);
        for (int j = 0; j < 3; j++) {
            store_request r = {.run = run,
                               .leg = leg,
                               .idx = 3 * leg + j,
                               .ctx_before = 0,
                               .ctx_after = 100 + j,
                               .prompt_tokens = 64,
                               .gen_tokens = 36 + j,
                               .ttft_ms = 12.25 + 3 * j + leg,
                               .prefill_ms = -1,
                               .prefill_tps = -1,
                               .decode_tps = 218.94 + 11 * j - 50 * leg,
                               .tpot_ms = -1,
                               .e2e_ms = 500,
                               .itl_p50_ms = -1,
                               .itl_p99_ms = -1,
                               .prefill_step_ms = -1,
                               .decode_step_ms = -1,
                               .ok = !(leg && j == 2),
                               .error_code = leg && j == 2 ? "timeout" : NULL,
                               .error_message = leg && j == 2 ? "no answer" : NULL,
                               .t = 1000.0 + 10 * leg + j};
            store_request_add(s, &r);
        }
        store_leg_end(s, run, leg, STORE_COMPLETED);
    }
    store_run_end(s, run, STORE_COMPLETED, NULL);
    cr_assert_eq(store_flush(s, err, sizeof err), 0, "%s", err);
    return run;
}

/* Two sweeps: runs 1 and 2. */
static void record_two(store *s)
{
    record_sweep(s);
    record_sweep(s);
}

static void setup(void)
{
    runs = screen_history_open(dir, sizeof dir, db, sizeof db, record_two);
    static const char *const names[] = {"n"};
    st = state_new("t", 1, names);
}

static void teardown(void)
{
    screen_close(&scr);
    screen_history_close(runs, dir);
    state_free(st);
}

TestSuite(view_history, .init = setup, .fini = teardown);

/* `infertop history ARGS --db db`'s standard output. */
static char *cli_output(const char *const *args)
{
    char path[128];
    snprintf(path, sizeof path, "%s/out", dir);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *f = fopen(path, "w");
    cr_assert(saved >= 0 && f);
    dup2(fileno(f), STDOUT_FILENO);
    int rc = cli_test_run(cli_history, args);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    fclose(f);
    cr_assert_eq(rc, 0);
    f = fopen(path, "r");
    static char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    return out;
}

/* The words of a line, single-spaced: the CLI and the view align
 * columns differently, the figures are what must agree. */
static void words(const char *line, char *out, size_t len)
{
    size_t k = 0;
    for (const char *p = line; *p && *p != '\n' && k + 1 < len; p++)
        if (*p != ' ' || (k && out[k - 1] != ' '))
            out[k++] = *p;
    while (k && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
}

/* The line of text starting (after blanks) with `lead`, as words. */
static int find_line(const char *text, const char *lead, char *out, size_t len)
{
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        words(l, out, len);
        if (strncmp(out, lead, strlen(lead)) == 0)
            return 0;
    }
    return -1;
}

/* The row of pane p whose words start with `lead`, as words; -1 if none. */
static int screen_line(enum layout_pane p, const char *lead, char *out, size_t len)
{
    for (int y = 0; y < scr.lay.pane[p].h; y++) {
        words(screen_row(&scr, p, y), out, len);
        if (strncmp(out, lead, strlen(lead)) == 0)
            return y;
    }
    return -1;
}

static void expect_same_line(enum layout_pane p, const char *cli, const char *lead)
{
    char want[512], got[512];
    cr_assert_eq(find_line(cli, lead, want, sizeof want), 0, "no \"%s\" line in:\n%s", lead, cli);
    cr_assert_geq(screen_line(p, lead, got, sizeof got), 0, "\"%s\" not on screen", lead);
    cr_expect_str_eq(got, want);
}

Test(view_history, legs_read_as_the_cli_prints_them)
{
    screen_open(&scr, st, LAYOUT_HISTORY, 120, 40, 1.0);
    scr.opt.runs = runs;
    screen_draw(&scr, &view_history);
    const char *cli = cli_output((const char *const[]){"history", "show", "2", "--db", db, NULL});
    expect_same_line(LAYOUT_DETAIL, cli, "LEG KV PREFILL");
    /* Leg 0: decode p50 229.9, TTFT p50 15.2, p95 18.2; leg 1: one failed. */
    expect_same_line(LAYOUT_DETAIL, cli, "0 16 256 2 3 0");
    expect_same_line(LAYOUT_DETAIL, cli, "1 4 256 2 3 1");
    cr_expect_geq(screen_find(&scr, LAYOUT_DETAIL, "229.9"), 0);
}

Test(view_history, compare_pairs_legs_and_counts_integers)
{
    screen_open(&scr, st, LAYOUT_HISTORY, 120, 40, 1.0);
    scr.opt.runs = runs;
    scr.v.hist.compare_a = 1;
    scr.v.hist.compare_b = 2;
    scr.v.hist.detail = VIEW_HIST_COMPARE;
    screen_draw(&scr, &view_history);
    const char *cli =
        cli_output((const char *const[]){"history", "compare", "1", "2", "--db", db, NULL});
    expect_same_line(LAYOUT_DETAIL, cli, "A 0 16");
    expect_same_line(LAYOUT_DETAIL, cli, "B 0 16");
    expect_same_line(LAYOUT_DETAIL, cli, "B/A");
    char row[512];
    cr_assert_geq(screen_line(LAYOUT_DETAIL, "run requests", row, sizeof row), 0);
    cr_expect_str_eq(row, "run requests 6 6 0 1", "counts are integers");
}
