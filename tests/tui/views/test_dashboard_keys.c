/* test_dashboard_keys.c: the dashboard's filter and sort keys on a drawn
 * dashboard: rows narrow and reorder, the sort column's title is marked,
 * and the selection stays on its node. */
#include <criterion/criterion.h>
#include <string.h>

#include "screen.h"

static state *st;
static struct screen scr;

/* Busy differs so that a numeric sort has an order to find. */
static void setup(void)
{
    static const char *const names[] = {"beta", "alpha", "gamma"};
    st = state_new("keys", 3, names);
    cr_assert_not_null(st);
    for (int i = 0; i < 3; i++) {
        proto_head h = {.seq = 1};
        proto_status s = {0};
        strcpy(h.node, names[i]);
        s.memory.budget = 1000;
        state_ingest_heartbeat(st, i, &h, &s, 1.0);
    }
    screen_open(&scr, st, LAYOUT_DASHBOARD, 120, 30, 1.5);
}

static void teardown(void)
{
    screen_close(&scr);
    state_free(st);
}

TestSuite(dashboard_keys, .init = setup, .fini = teardown);

static void press(const char *keys)
{
    for (; *keys; keys++)
        cr_assert(view_dashboard.key(&scr.v, *keys == 'E' ? 27 : *keys), "key %c", *keys);
    screen_draw(&scr, &view_dashboard);
}

/* The name in row y (1: the first under the titles), without the
 * selection mark. */
static const char *name_at(int y)
{
    const char *c = screen_cell(&scr, y, LAYOUT_COL_NAME);
    return c[0] == '>' ? c + 1 : c;
}

Test(dashboard_keys, sorting_by_name_reorders_and_reverses_the_rows)
{
    screen_draw(&scr, &view_dashboard);
    cr_expect_str_eq(name_at(1), "beta"); /* the cluster's order */
    press(">");
    cr_expect_str_eq(name_at(1), "alpha");
    cr_expect_str_eq(name_at(2), "beta");
    cr_expect_str_eq(name_at(3), "gamma");
    cr_expect_neq(strstr(screen_row(&scr, LAYOUT_NODES, 0), "node^"), NULL, "%s",
                  screen_row(&scr, LAYOUT_NODES, 0));
    press("I");
    cr_expect_str_eq(name_at(1), "gamma");
    cr_expect_neq(strstr(screen_row(&scr, LAYOUT_NODES, 0), "nodev"), NULL);
    /* The selection is still node 0 (beta), now the middle row. */
    cr_expect_eq(scr.v.node, 0);
    cr_expect_eq(screen_cell(&scr, 2, LAYOUT_COL_NAME)[0], '>');
    press("<");
    cr_expect_str_eq(name_at(1), "beta");
}

Test(dashboard_keys, the_filter_narrows_rows_and_escape_clears_it)
{
    press("/mm\n");
    cr_expect_str_eq(name_at(1), "gamma");
    cr_expect_str_eq(name_at(2), "");
    cr_expect_eq(scr.v.node, 2, "the selection moves onto the only row");
    cr_expect_str_eq(scr.v.prompt, "filter: mm");
    press("E");
    cr_expect_str_eq(name_at(3), "gamma");
    cr_expect_str_eq(scr.v.prompt, "");
    /* While typed, keys are the field's: j is a letter, not a move. */
    press("/j");
    cr_expect_str_eq(scr.v.dash.filter, "j");
    press("E");
    cr_expect_str_eq(scr.v.dash.filter, "");
}

Test(dashboard_keys, y_opens_the_raw_status)
{
    press("y");
    cr_expect_eq(scr.v.overlay, VIEW_OVERLAY_RAW);
}
