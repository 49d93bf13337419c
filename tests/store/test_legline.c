/* test_legline.c: a leg's summary line as text, the cells `history show`
 * and the console's History view both print. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "store/store.h"

static store_leg_summary leg(void)
{
    store_leg_summary l = {.idx = 2,
                           .kv_bits = 4,
                           .prefill_step = 512,
                           .concurrency = 8,
                           .max_context = 4096,
                           .agg_tps = 325.25,
                           .requests = 6,
                           .failed = 1,
                           .ttft_p95_ms = 20.04};
    l.decode_tps = (store_dist){.count = 5, .p50 = 218.94};
    l.ttft_ms = (store_dist){.count = 5, .p50 = 12};
    return l;
}

Test(legline, one_line_per_leg)
{
    store_leg_summary l = leg();
    store_leg_line ln;
    store_leg_line_of(&l, &ln);
    static const char *const want[STORE_LEG_COLS] = {
        "2", "4", "512", "8", "6", "1", "4096", "218.9", "325.2", "12", "20.0",
    };
    for (int c = 0; c < STORE_LEG_COLS; c++)
        cr_expect_str_eq(ln.cell[c], want[c], "column %s", store_leg_heads[c]);
}

Test(legline, missing_figures_are_dashes)
{
    store_leg_summary l = leg();
    l.max_context = -1;
    l.agg_tps = NAN;
    l.ttft_p95_ms = NAN;
    l.decode_tps.count = l.ttft_ms.count = 0;
    store_leg_line ln;
    store_leg_line_of(&l, &ln);
    for (int c = STORE_LEG_MAX_CTX; c < STORE_LEG_COLS; c++)
        cr_expect_str_eq(ln.cell[c], "-", "column %s", store_leg_heads[c]);
    cr_expect_str_eq(ln.cell[STORE_LEG_REQS], "6", "counts stay integers");
}

Test(legline, ratio_of_the_rates_only)
{
    store_leg_summary a = leg(), b = leg();
    b.decode_tps.p50 = 2 * a.decode_tps.p50;
    b.agg_tps = NAN;
    store_leg_line ln;
    store_leg_ratio_of(&a, &b, &ln);
    cr_expect_str_eq(ln.cell[STORE_LEG_DECODE], "2.00");
    cr_expect_str_eq(ln.cell[STORE_LEG_AGG], "-");
    cr_expect_str_eq(ln.cell[STORE_LEG_TTFT50], "1.00");
    cr_expect_str_eq(ln.cell[STORE_LEG_KV], "");
    cr_expect_str_eq(ln.cell[STORE_LEG_REQS], "");
}

Test(legline, numbers)
{
    char buf[32];
    store_fmt_num(6.0, 2, buf, sizeof buf);
    cr_expect_str_eq(buf, "6", "a count is not 6.00");
    store_fmt_num(6.125, 2, buf, sizeof buf);
    cr_expect_str_eq(buf, "6.12");
    store_fmt_num(INFINITY, 1, buf, sizeof buf);
    cr_expect_str_eq(buf, "-");
}
