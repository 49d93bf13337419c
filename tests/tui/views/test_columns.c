/* test_columns.c: the dashboard drawn at 80, 100, 120 and 200 columns
 * shows the columns the man page says, giving them up in its order
 * (infertop.1, THE DASHBOARD): read back from the drawn title row. */
#include <criterion/criterion.h>
#include <string.h>

#include "screen.h"

static state *st;
static struct screen scr;

static void setup(void)
{
    static const char *const names[] = {"stage0", "stage1"};
    st = state_new("ring", 2, names);
    cr_assert_not_null(st);
}

static void teardown(void)
{
    state_free(st); /* each width's screen is closed as it is read */
}

TestSuite(columns, .init = setup, .fini = teardown);

/* The man page's order for a cluster of inferd nodes, first given up
 * first: the HTTP engines' columns, the sparkline, steps/s, phase,
 * layers, prefill_step, kv_bits, batch, memory, busy, eval and model ms. */
static const enum layout_col given_up[] = {
    LAYOUT_COL_KV_USE, LAYOUT_COL_ENGINE, LAYOUT_COL_REQS,   LAYOUT_COL_TPS,     LAYOUT_COL_SPARK,
    LAYOUT_COL_STEPS,  LAYOUT_COL_PHASE,  LAYOUT_COL_LAYERS, LAYOUT_COL_PREFILL, LAYOUT_COL_KV_BITS,
    LAYOUT_COL_BATCH,  LAYOUT_COL_MEMORY, LAYOUT_COL_BUSY,   LAYOUT_COL_EVAL,    LAYOUT_COL_MODEL};
#define N_GIVEN_UP ((int)(sizeof given_up / sizeof given_up[0]))

/* Whether the drawn title row holds column c's title, whole, in its place. */
static int title_shown(enum layout_col c)
{
    return scr.lay.col[c].w > 0 && strcmp(screen_cell(&scr, 0, c), layout_col_title(c)) == 0;
}

/* How many of given_up are gone at cols, checking that they are the
 * first ones of the list and that the others are drawn whole. */
static int gone_at(int cols)
{
    screen_open(&scr, st, LAYOUT_DASHBOARD, cols, 30, 1.0);
    screen_draw(&scr, &view_dashboard);
    cr_assert(title_shown(LAYOUT_COL_NAME) && title_shown(LAYOUT_COL_STATE), "%d cols", cols);
    int gone = 0;
    while (gone < N_GIVEN_UP && !title_shown(given_up[gone]))
        gone++;
    for (int i = gone; i < N_GIVEN_UP; i++)
        cr_assert(title_shown(given_up[i]), "%d cols: %s given up before %s", cols,
                  layout_col_title(given_up[i]), layout_col_title(given_up[gone]));
    screen_close(&scr);
    return gone;
}

Test(columns, each_width_shows_the_man_pages_columns)
{
    /* 80: down to model, eval, busy, memory, batch, kv, prefill. */
    cr_expect_eq(gone_at(80), 8, "80 columns: %d gone", gone_at(80));
    /* 100: layers, phase and steps/s come back; not the sparkline. */
    cr_expect_eq(gone_at(100), 5, "100 columns: %d gone", gone_at(100));
    /* 120: the sparkline and tok/s too. */
    cr_expect_eq(gone_at(120), 3, "120 columns: %d gone", gone_at(120));
    cr_expect_eq(gone_at(200), 0, "200 columns: everything");
}

/* Every width between: what is shown is always what the order leaves. */
Test(columns, narrowing_gives_up_in_order)
{
    int last = 0;
    for (int cols = 200; cols >= 80; cols -= 3) {
        int gone = gone_at(cols);
        cr_assert_geq(gone, last, "%d cols brought a column back", cols);
        last = gone;
    }
}
