/* test_keys.c: the key tables (keys.h) and the dashboard's filter and
 * sort (rows.h), as plain data: what a table makes of the footer and the
 * help, and which rows show in what order. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tui/views/keys.h"
#include "tui/views/rows.h"
#include "tui/views/view.h"

enum { CMD_A, CMD_B, CMD_C };
static const struct view_key rows_ab[] = {
    {{'a', 'A'}, "a", "alpha", "does alpha", CMD_A},
    {{'b'}, "b", NULL, "does beta, help only", CMD_B},
    {{'c'}, "", NULL, NULL, CMD_C},
    {{0}, "mouse", "click", "a line of help, no key", -1},
};
static const struct view_keys table_ab = KEYS_TABLE("AB", rows_ab);

Test(keys, a_code_finds_its_command)
{
    cr_expect_eq(keys_cmd(&table_ab, 'a'), CMD_A);
    cr_expect_eq(keys_cmd(&table_ab, 'A'), CMD_A);
    cr_expect_eq(keys_cmd(&table_ab, 'c'), CMD_C);
    cr_expect_eq(keys_cmd(&table_ab, 'z'), -1);
    cr_expect_eq(keys_cmd(&table_ab, 0), -1); /* 0 ends a row's codes, never matches */
}

Test(keys, the_footer_lists_the_labelled_rows_of_each_table)
{
    static const struct view_key more[] = {{{'q'}, "q", "quit", "quit", 0}};
    static const struct view_keys table_q = KEYS_TABLE("Q", more);
    const struct view_keys *t[] = {&table_ab, &table_q};
    char buf[128];
    keys_footer(t, 2, buf, sizeof buf);
    cr_expect_str_eq(buf, "a:alpha|mouse:click|q:quit");
    /* Too small: whole rows only. */
    keys_footer(t, 2, buf, 14);
    cr_expect_str_eq(buf, "a:alpha");
}

Test(keys, the_help_has_a_heading_then_each_row_that_has_a_line)
{
    const struct view_keys *t[] = {&table_ab};
    struct keys_line l[8];
    int n = keys_help(t, 1, l, 8);
    cr_assert_eq(n, 4);
    cr_expect_null(l[0].keys);
    cr_expect_str_eq(l[0].text, "AB");
    cr_expect_str_eq(l[1].keys, "a");
    cr_expect_str_eq(l[2].text, "does beta, help only");
    cr_expect_str_eq(l[3].keys, "mouse");
    cr_expect_eq(keys_help(t, 1, NULL, 0), 4);
}

/* The views' own tables: each footer word is in the help too (a key is
 * written once, so both come from the same row), and no code is bound to
 * two commands of one view. */
Test(keys, every_view_table_is_consistent)
{
    const struct ui_view *views[] = {&view_dashboard, &view_node,    &view_config, &view_events,
                                     &view_stress,    &view_history, &view_plan};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) {
        const struct view_keys *t = views[i]->keys;
        cr_assert_not_null(t, "%s has no key table", views[i]->name);
        for (int r = 0; r < t->n; r++) {
            if (t->key[r].label)
                cr_expect_not_null(t->key[r].help, "%s: %s", views[i]->name, t->key[r].keys);
            for (int c = 0; c < KEYS_CODES && t->key[r].code[c]; c++)
                cr_expect_eq(keys_cmd(t, t->key[r].code[c]), t->key[r].cmd, "%s: code %d",
                             views[i]->name, t->key[r].code[c]);
        }
    }
}

Test(keys, the_dashboard_footer_names_its_new_keys)
{
    const struct view_keys *t[] = {view_dashboard.keys};
    char buf[256];
    keys_footer(t, 1, buf, sizeof buf);
    cr_expect_neq(strstr(buf, "/:filter"), NULL, "%s", buf);
    cr_expect_neq(strstr(buf, "< >:sort"), NULL, "%s", buf);
    cr_expect_neq(strstr(buf, "y:raw"), NULL, "%s", buf);
    cr_expect_eq(keys_cmd(view_dashboard.keys, KEY_F(6)), keys_cmd(view_dashboard.keys, '>'));
}

/* History's charts key is not `g`, which means "first" everywhere. */
Test(keys, g_is_never_a_view_command)
{
    const struct ui_view *views[] = {&view_dashboard, &view_node,    &view_config, &view_events,
                                     &view_stress,    &view_history, &view_plan};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        cr_expect_eq(keys_cmd(views[i]->keys, 'g'), -1, "%s binds g", views[i]->name);
}

/* ---- rows ---- */

static struct rows_key row(const char *name, const char *engine, const char *state, double busy)
{
    struct rows_key k = {name, engine, state, {0}};
    for (int c = 0; c < LAYOUT_COL_COUNT; c++)
        k.num[c] = NAN;
    k.num[LAYOUT_COL_BUSY] = busy;
    return k;
}

Test(rows, the_filter_matches_name_engine_or_state_ignoring_case)
{
    struct rows_key r = row("stage1", "inferd", "up", 0.5);
    cr_expect(rows_match(&r, ""));
    cr_expect(rows_match(&r, "ge1"));
    cr_expect(rows_match(&r, "INFERD"));
    cr_expect(rows_match(&r, "up"));
    cr_expect_not(rows_match(&r, "llama"));
    cr_expect_not(rows_match(&r, "stage2"));
}

Test(rows, filter_then_sort_by_a_number_or_text_either_way)
{
    struct rows_key r[] = {row("b", "inferd", "up", 0.2), row("a", "vllm", "down", NAN),
                           row("c", "inferd", "up", 0.9), row("d", "inferd", "up", 0.2)};
    int order[4];
    cr_assert_eq(rows_order(r, 4, "", -1, 0, order), 4);
    cr_expect(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
    /* Busy ascending: ties keep their order, NaN last either way. */
    rows_order(r, 4, "", LAYOUT_COL_BUSY, 0, order);
    cr_expect(order[0] == 0 && order[1] == 3 && order[2] == 2 && order[3] == 1);
    rows_order(r, 4, "", LAYOUT_COL_BUSY, 1, order);
    cr_expect(order[0] == 2 && order[1] == 0 && order[2] == 3 && order[3] == 1);
    rows_order(r, 4, "", LAYOUT_COL_NAME, 1, order);
    cr_expect(order[0] == 3 && order[1] == 2 && order[2] == 0 && order[3] == 1);
    cr_assert_eq(rows_order(r, 4, "inferd", LAYOUT_COL_NAME, 0, order), 3);
    cr_expect(order[0] == 0 && order[1] == 2 && order[2] == 3);
    cr_expect_eq(rows_order(r, 4, "nothing", LAYOUT_COL_NAME, 0, order), 0);
}

/* The Plan view's context field: a digit outside it switches views (the
 * view leaves it to ui.c); Enter focuses it, digits are typed, Esc leaves. */
Test(keys, plan_digits_are_typed_only_into_a_focused_field)
{
    struct view_ctx v;
    memset(&v, 0, sizeof v);
    v.goto_view = -1;
    cr_expect_not(view_plan.key(&v, '1'));
    cr_expect_not(v.plan.editing);
    cr_expect(view_plan.key(&v, '\n'));
    cr_expect(v.plan.editing);
    cr_expect(view_plan.key(&v, '1'));
    cr_expect(view_plan.key(&v, '2'));
    cr_expect_str_eq(v.plan.typed, "12");
    cr_expect(view_plan.key(&v, 27));
    cr_expect_not(v.plan.editing);
    cr_expect_not(view_plan.key(&v, '3'));
}
