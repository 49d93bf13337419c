/* test_view_config.c: the config view's keys, without a terminal: what a
 * key sequence hands to the app, and what it refuses. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/proto/opt.h"
#include "tui/views/layout.h"
#include "tui/views/ui.h"
#include "tui/views/view.h"

#include "screen.h"

static state *st;
static struct layout lay;
static struct ui_options opt;
static struct view_ctx v;
static struct action out[UI_ACTIONS_MAX];

static void heartbeat(int node, int prefill, int kv_bits)
{
    proto_head h = {.seq = 1};
    proto_status s = {0};
    strcpy(h.node, state_node_name(st, node));
    s.config.prefill_step = prefill;
    s.config.kv_bits = kv_bits;
    s.memory.budget = 1000;
    state_ingest_heartbeat(st, node, &h, &s, 1.0);
}

static void setup(void)
{
    static const char *const names[] = {"a", "b"};
    st = state_new("test", 2, names);
    cr_assert_not_null(st);
    heartbeat(0, 512, 16);
    heartbeat(1, PROTO_PREFILL_AUTO, 8);
    lay = layout_compute(120, 40, LAYOUT_CONFIG, 3, 0, 0);
    memset(&opt, 0, sizeof opt);
    memset(&v, 0, sizeof v);
    v.st = st;
    v.now = 2.0;
    v.n_nodes = 2;
    v.lay = &lay;
    v.g = glyphs_get(0);
    v.opt = &opt;
    v.out = out;
    v.max_out = UI_ACTIONS_MAX;
    v.goto_view = -1;
}

static void teardown(void)
{
    state_free(st);
}

TestSuite(view_config, .init = setup, .fini = teardown);

/* Feeds the keys of s ('\n' is Enter, 'E' Escape) and checks each is the view's. */
static void keys(const char *s)
{
    for (; *s; s++) {
        int k = *s == 'E' ? 27 : *s;
        cr_assert(view_config.key(&v, k), "key '%c' was not the config view's", *s);
    }
}

Test(view_config, cycling_kv_bits_sends_a_set_to_the_node)
{
    keys("lb\n");
    cr_assert_eq(v.n_out, 1);
    cr_expect_eq(out[0].kind, ACT_SET_CONFIG);
    cr_expect_eq(out[0].node, 0);
    cr_expect(out[0].set.has_kv_bits);
    cr_expect_eq(out[0].set.kv_bits, 8); /* 16 -> 8 */
    cr_expect_not(out[0].set.has_prefill_step);
    cr_expect_not(v.cfg.editing);
}

Test(view_config, plus_and_minus_double_and_halve_prefill_step)
{
    keys("++-\n");
    cr_assert_eq(v.n_out, 1);
    cr_expect(out[0].set.has_prefill_step);
    cr_expect_eq(out[0].set.prefill_step, 1024); /* 512 * 2 * 2 / 2 */
    cr_expect_not(out[0].set.has_kv_bits);
}

Test(view_config, prefill_step_stops_at_8192)
{
    for (int i = 0; i < 10; i++)
        keys("+");
    keys("\n");
    cr_assert_eq(v.n_out, 1);
    cr_expect_eq(out[0].set.prefill_step, 8192);
}

Test(view_config, typed_digits_and_auto)
{
    keys("j\n2048\n");
    cr_assert_eq(v.n_out, 1);
    cr_expect_eq(out[0].node, 1);
    cr_expect_eq(out[0].set.prefill_step, 2048);
    keys("a\n");
    cr_assert_eq(v.n_out, 2);
    cr_expect_eq(out[1].set.prefill_step, PROTO_PREFILL_AUTO);
}

Test(view_config, last_row_is_every_node)
{
    keys("Gl-\n");
    cr_assert_eq(v.n_out, 1);
    cr_expect_eq(out[0].node, ACT_ALL_NODES);
    cr_expect_eq(out[0].set.kv_bits, 8); /* node a's 16, one step down */
}

Test(view_config, escape_drops_the_draft)
{
    keys("lbE");
    cr_expect_not(v.cfg.editing);
    keys("\n\n"); /* focus, then apply an empty draft */
    cr_expect_eq(v.n_out, 0);
    cr_expect_neq(strstr(v.message, "nothing to apply"), NULL, "message: %s", v.message);
}

Test(view_config, bad_kv_bits_are_refused_before_sending)
{
    keys("l\n5\n");
    cr_expect_eq(v.n_out, 0);
    cr_expect(v.message_error);
    cr_expect_neq(strstr(v.message, "kv_bits 5"), NULL, "message: %s", v.message);
}

Test(view_config, readonly_refuses_every_edit)
{
    opt.readonly = 1;
    keys("lb\n+\n\n");
    cr_expect_eq(v.n_out, 0);
    cr_expect_not(v.cfg.editing);
    cr_expect_not(view_config.key(&v, '1')); /* no field took focus: a view switch */
}

Test(view_config, readonly_says_so)
{
    opt.readonly = 1;
    keys("b");
    cr_expect_neq(strstr(v.message, "read-only"), NULL, "message: %s", v.message);
}

/* Digits switch views until Enter gives the field focus, and again after
 * Esc gives it back. */
Test(view_config, digits_are_typed_only_into_a_focused_field)
{
    cr_expect_not(view_config.key(&v, '1'));
    cr_expect_not(v.cfg.editing);
    keys("\n1");
    cr_expect(v.cfg.editing);
    cr_expect_str_eq(v.cfg.typed, "1");
    keys("E");
    cr_expect_not(v.cfg.editing);
    cr_expect_not(view_config.key(&v, '7'));
    cr_expect_eq(v.n_out, 0);
}

Test(view_config, other_keys_are_left_to_the_ui)
{
    cr_expect_not(view_config.key(&v, 'q'));
    cr_expect_not(view_config.key(&v, '\t'));
    cr_expect_not(view_config.key(&v, 'e'));
}

/* The refusal of a typed value and the hint under the table name the same
 * range: the settings table's row, which the node enforces too. */
Test(view_config, typed_values_are_checked_by_the_table_rows)
{
    char range[64];
    keys("\n99999\n");
    cr_expect_eq(v.n_out, 0);
    cr_expect(v.message_error);
    opt_range(OPT_PREFILL_STEP, range, sizeof range);
    cr_expect_str_eq(range, "1..65536 or auto");
    cr_expect_neq(strstr(v.message, "prefill_step 99999"), NULL, "message: %s", v.message);
    cr_expect_neq(strstr(v.message, range), NULL, "message: %s", v.message);
    /* The row's largest value goes through. */
    keys("E\n65536\n");
    cr_assert_eq(v.n_out, 1);
    cr_expect_eq(out[0].set.prefill_step, PROTO_PREFILL_STEP_MAX);
    keys("l\n7\n");
    cr_expect_eq(v.n_out, 1);
    cr_expect_neq(strstr(v.message, "kv_bits 7 is not valid: 32, 16, 8 or 4"), NULL, "message: %s",
                  v.message);
}

/* Only inferd takes the knobs live: another engine's row says restart,
 * all nodes of a mixed cluster say mixed, and a send says how it applies. */
Test(view_config, http_engine_rows_say_restart)
{
    struct screen scr;
    state_node_set_engine(st, 1, ENG_LLAMACPP);
    screen_open(&scr, st, LAYOUT_CONFIG, 120, 40, 2.0);
    screen_draw(&scr, &view_config);
    cr_expect_neq(strstr(screen_row(&scr, LAYOUT_CONFIG_TABLE, 0), "mode"), NULL);
    const char *row = screen_row(&scr, LAYOUT_CONFIG_TABLE, 1);
    cr_expect(strstr(row, "live") && !strstr(row, "restart"), "node a (inferd): %s", row);
    row = screen_row(&scr, LAYOUT_CONFIG_TABLE, 2);
    cr_expect_neq(strstr(row, "restart"), NULL, "node b (llama.cpp): %s", row);
    row = screen_row(&scr, LAYOUT_CONFIG_TABLE, 3);
    cr_expect_neq(strstr(row, "mixed"), NULL, "all nodes: %s", row);
    cr_assert(view_config.key(&scr.v, 'j'));
    cr_assert(view_config.key(&scr.v, 'b'));
    cr_assert(view_config.key(&scr.v, '\n'));
    cr_expect_neq(strstr(scr.v.message, "restarting"), NULL, "message: %s", scr.v.message);
    screen_close(&scr);
}
