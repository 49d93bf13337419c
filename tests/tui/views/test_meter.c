/* test_meter.c: the console's pure drawing parts: number formats, the
 * memory bar split, sparkline levels, the braille and ASCII chart cells,
 * and the glyph sets. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tui/views/glyphs.h"
#include "tui/views/meter.h"
#include "tui/views/view.h"

TestSuite(meter);

static void check_bytes(uint64_t b, const char *want)
{
    char buf[16];
    meter_fmt_bytes(b, buf, sizeof buf);
    cr_expect_str_eq(buf, want, "%llu bytes: got \"%s\", want \"%s\"", (unsigned long long)b, buf,
                     want);
}

Test(meter, bytes_use_powers_of_1024)
{
    check_bytes(0, "0B");
    check_bytes(512, "512B");
    check_bytes(999, "999B");
    check_bytes(1000, "1.0K");
    check_bytes(1536, "1.5K");
    check_bytes(12ull << 20, "12M");
    check_bytes(999ull << 20, "999M");
    check_bytes(1023ull << 20, "1.0G");
    check_bytes(4ull << 30, "4.0G");
    check_bytes(3ull << 40, "3.0T");
}

Test(meter, bytes_never_take_more_than_4_columns)
{
    char buf[16];
    for (uint64_t b = 1; b < (1ull << 62); b = b * 3 / 2 + 1) {
        meter_fmt_bytes(b, buf, sizeof buf);
        cr_assert_leq(strlen(buf), 4, "%llu bytes became \"%s\"", (unsigned long long)b, buf);
    }
}

static void check_num(double v, const char *want)
{
    char buf[16];
    meter_fmt_num(v, buf, sizeof buf);
    cr_expect_str_eq(buf, want, "%g: got \"%s\", want \"%s\"", v, buf, want);
}

Test(meter, numbers_keep_three_significant_digits)
{
    check_num(NAN, "-");
    check_num(INFINITY, "-");
    check_num(0, "0.00");
    check_num(0.523, "0.52");
    check_num(12.34, "12.3");
    check_num(29.0, "29.0");
    check_num(1234.4, "1234");
    check_num(12300, "12.3k");
    check_num(250000, "250k");
    /* Contexts of the Plan view. */
    check_num(1.2e6, "1.20M");
    check_num(60214016, "60.2M");
    check_num(1 << 30, "1074M");
}

Test(meter, durations_show_two_units)
{
    char buf[16];
    meter_fmt_duration(45, buf, sizeof buf);
    cr_expect_str_eq(buf, "45s");
    meter_fmt_duration(725, buf, sizeof buf);
    cr_expect_str_eq(buf, "12m05s");
    meter_fmt_duration(3 * 3600 + 12 * 60, buf, sizeof buf);
    cr_expect_str_eq(buf, "3h12m");
    meter_fmt_duration(2 * 86400 + 3 * 3600 + 5, buf, sizeof buf);
    cr_expect_str_eq(buf, "2d03h");
}

Test(meter, membar_sums_to_the_width_and_follows_the_proportions)
{
    static const uint64_t parts[][GLYPHS_MEM_COUNT] = {
        {1ull << 30, 300ull << 20, 200ull << 20, 2600ull << 20},
        {1, 1, 1, 1},
        {0, 0, 0, 5},
        {7, 0, 3, 0},
        {1ull << 40, 1, 1, 1},
        {UINT64_MAX / 4, UINT64_MAX / 4, UINT64_MAX / 4, UINT64_MAX / 4},
    };
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
        long double total = 0;
        for (int i = 0; i < GLYPHS_MEM_COUNT; i++)
            total += parts[p][i];
        for (int width = 1; width <= 60; width++) {
            int cols[GLYPHS_MEM_COUNT], sum = 0;
            meter_membar(parts[p], width, cols);
            for (int i = 0; i < GLYPHS_MEM_COUNT; i++) {
                long double exact = parts[p][i] * (long double)width / total;
                cr_assert_lt(fabsl(cols[i] - exact), 1.0L,
                             "parts #%zu width %d segment %d: %d columns for %.2Lf", p, width, i,
                             cols[i], exact);
                if (parts[p][i] == 0)
                    cr_assert_eq(cols[i], 0);
                sum += cols[i];
            }
            cr_assert_eq(sum, width, "parts #%zu width %d: columns sum to %d", p, width, sum);
        }
    }
}

Test(meter, membar_of_nothing_is_empty)
{
    uint64_t zero[GLYPHS_MEM_COUNT] = {0};
    int cols[GLYPHS_MEM_COUNT] = {9, 9, 9, 9};
    meter_membar(zero, 20, cols);
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++)
        cr_expect_eq(cols[i], 0);
}

Test(meter, membar_quarter_each)
{
    uint64_t part[GLYPHS_MEM_COUNT] = {25, 25, 25, 25};
    int cols[GLYPHS_MEM_COUNT];
    meter_membar(part, 40, cols);
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++)
        cr_expect_eq(cols[i], 10);
}

Test(meter, spark_scales_from_zero_to_the_largest_value)
{
    double v[] = {0, 5, 10, NAN, 2.5, 10};
    int level[6];
    meter_spark(v, 6, 8, level);
    cr_expect_eq(level[0], 0);
    cr_expect_eq(level[1], 4); /* 0.5 * 7 = 3.5 rounds away from zero */
    cr_expect_eq(level[2], 7);
    cr_expect_eq(level[3], -1);
    cr_expect_eq(level[4], 2);
    cr_expect_eq(level[5], 7);
}

Test(meter, spark_of_zeros_stays_at_the_bottom)
{
    double v[] = {0, 0, NAN};
    int level[3];
    meter_spark(v, 3, 8, level);
    cr_expect_eq(level[0], 0);
    cr_expect_eq(level[1], 0);
    cr_expect_eq(level[2], -1);
}

Test(meter, braille_dot_numbering)
{
    cr_expect_eq(meter_braille(0), 0x2800);
    cr_expect_eq(meter_braille(0xFF), 0x28FF);
    cr_expect_eq(meter_braille(1u << 0), 0x2801); /* x0 y0: dot 1 */
    cr_expect_eq(meter_braille(1u << 1), 0x2808); /* x1 y0: dot 4 */
    cr_expect_eq(meter_braille(1u << 4), 0x2804); /* x0 y2: dot 3 */
    cr_expect_eq(meter_braille(1u << 6), 0x2840); /* x0 y3: dot 7 */
    cr_expect_eq(meter_braille(1u << 7), 0x2880); /* x1 y3: dot 8 */
}

/* A 2x1-cell braille canvas is 4 dots wide and 4 high. */
Test(meter, canvas_plots_a_rising_line_in_braille)
{
    uint8_t dots[2], series[2];
    struct meter_canvas c;
    double v[] = {0, 1, 2, 3};
    char cell[5];
    meter_canvas_init(&c, 2, 1, 1, dots, series);
    meter_canvas_plot(&c, v, 4, 0, 3, 0, 0);
    /* Column 0 holds 0 (bottom, y3); column 1 joins 0..1 (y3, y2); column
     * 2 joins 1..2 (y2, y1); column 3 joins 2..3 (y1, y0). */
    cr_expect_eq(dots[0], (1u << 6) | (1u << 7) | (1u << 5));
    cr_expect_eq(dots[1], (1u << 4) | (1u << 2) | (1u << 3) | (1u << 1));
    cr_expect_eq(series[0], 1);
    meter_canvas_cell(&c, 0, 0, cell);
    cr_expect_eq(strlen(cell), 3);
}

Test(meter, canvas_keeps_the_newest_values_and_leaves_gaps_for_nan)
{
    uint8_t dots[1], series[1];
    struct meter_canvas c;
    double v[] = {9, 9, 9, NAN, 1};
    meter_canvas_init(&c, 1, 1, 1, dots, series);
    meter_canvas_plot(&c, v, 5, 0, 1, 2, 0);
    /* Two dot columns: NaN (nothing), then 1 at the top right. */
    cr_expect_eq(dots[0], 1u << 1);
    cr_expect_eq(series[0], 1u << 2);
}

Test(meter, canvas_dashed_series_skips_every_other_cell)
{
    uint8_t dots[4], series[4];
    struct meter_canvas c;
    double v[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    meter_canvas_init(&c, 4, 1, 1, dots, series);
    meter_canvas_plot(&c, v, 8, 0, 1, 1, 1);
    cr_expect_neq(dots[0], 0);
    cr_expect_eq(dots[1], 0);
    cr_expect_neq(dots[2], 0);
    cr_expect_eq(dots[3], 0);
}

/* x-y plots on a 2x1-cell braille canvas: 4 x 4 dots, x and y 0..3. */
static void plot_xy4(const double *x, const double *y, int n, uint8_t dots[2])
{
    uint8_t series[2];
    struct meter_canvas c;
    meter_canvas_init(&c, 2, 1, 1, dots, series);
    meter_canvas_plot_xy(&c, x, y, n, 0, 3, 0, 3, 0, 0);
}

/* The bit of dot (x, y) within its cell, y from the top. */
#define DOT(x, y) (1u << ((y)*2 + (x) % 2))

Test(meter, xy_joins_points_by_value_not_by_index)
{
    uint8_t dots[2];
    double x[] = {0, 3}, y[] = {0, 3};
    plot_xy4(x, y, 2, dots);
    /* The diagonal: (0, bottom) .. (3, top), one dot per column. */
    cr_expect_eq(dots[0], DOT(0, 3) | DOT(1, 2));
    cr_expect_eq(dots[1], DOT(2, 1) | DOT(3, 0));
}

Test(meter, xy_nan_breaks_the_line_and_a_lone_point_is_a_dot)
{
    uint8_t dots[2];
    double x[] = {0, 1, 2, 3}, y[] = {0, NAN, 0, 0};
    plot_xy4(x, y, 4, dots);
    cr_expect_eq(dots[0], DOT(0, 3), "nothing joins the first point over the gap");
    cr_expect_eq(dots[1], DOT(2, 3) | DOT(3, 3));
}

Test(meter, xy_clamps_to_the_ranges)
{
    uint8_t dots[2];
    double x[] = {-5, 99}, y[] = {99, 99};
    plot_xy4(x, y, 2, dots);
    cr_expect_eq(dots[0], DOT(0, 0) | DOT(1, 0));
    cr_expect_eq(dots[1], DOT(2, 0) | DOT(3, 0));
}

Test(meter, xy_dashed_series_skips_every_other_cell)
{
    uint8_t dots[4], series[4];
    struct meter_canvas c;
    double x[] = {0, 7}, y[] = {1, 1};
    meter_canvas_init(&c, 4, 1, 1, dots, series);
    meter_canvas_plot_xy(&c, x, y, 2, 0, 7, 0, 1, 1, 1);
    cr_expect_neq(dots[0], 0);
    cr_expect_eq(dots[1], 0);
    cr_expect_neq(dots[2], 0);
    cr_expect_eq(dots[3], 0);
    cr_expect_eq(series[2], 1u << 1);
}

Test(meter, ascii_canvas_cells)
{
    uint8_t dots[3], series[3];
    struct meter_canvas c;
    double v[] = {0, 0.5, 1};
    char cell[5];
    meter_canvas_init(&c, 3, 1, 0, dots, series);
    cr_assert_eq(c.dx, 1);
    cr_assert_eq(c.dy, 3);
    double flat[] = {0, 0.5, 1};
    for (int i = 0; i < 3; i++) {
        meter_canvas_init(&c, 1, 1, 0, dots, series);
        meter_canvas_plot(&c, &flat[i], 1, 0, 1, 0, 0);
        meter_canvas_cell(&c, 0, 0, cell);
        cr_expect_str_eq(cell, i == 0 ? "_" : i == 1 ? "-" : "'", "value %g", flat[i]);
    }
    meter_canvas_init(&c, 3, 1, 0, dots, series);
    meter_canvas_plot(&c, v, 3, 0, 1, 0, 0);
    meter_canvas_cell(&c, 2, 0, cell);
    cr_expect_str_eq(cell, "|"); /* a jump joins two dots in one cell */
}

TestSuite(glyphs);

static void expect_ascii(const char *what, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        cr_expect_lt(*p, 0x80, "ASCII glyph %s holds byte 0x%02x", what, *p);
}

Test(glyphs, ascii_set_is_ascii_only)
{
    const struct glyphs *g = glyphs_get(0);
    cr_assert_eq(g->utf8, 0);
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++)
        expect_ascii("mem", g->mem[i]);
    for (int i = 0; i < GLYPHS_SPARK_LEVELS; i++)
        expect_ascii("spark", g->spark[i]);
    for (int i = 0; i < 4; i++)
        expect_ascii("corner", g->corner[i]);
    expect_ascii("hline", g->hline);
    expect_ascii("vline", g->vline);
    expect_ascii("ellipsis", g->ellipsis);
    expect_ascii("select", g->select);
    expect_ascii("arrow", g->arrow);
    expect_ascii("fp_differs", g->fp_differs);
    expect_ascii("solid", g->solid);
    expect_ascii("dashed", g->dashed);
}

/* Without colour only the glyph tells the memory segments apart. */
static void expect_distinct(const char *const *s, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            cr_expect_str_neq(s[i], s[j], "glyphs %d and %d are both \"%s\"", i, j, s[i]);
}

Test(glyphs, memory_segments_and_spark_levels_are_distinct)
{
    for (int utf8 = 0; utf8 < 2; utf8++) {
        const struct glyphs *g = glyphs_get(utf8);
        expect_distinct(g->mem, GLYPHS_MEM_COUNT);
        expect_distinct(g->spark, GLYPHS_SPARK_LEVELS);
    }
}

Test(glyphs, flag_reasons_in_ascii)
{
    char buf[128];
    view_flags_text(glyphs_get(0),
                    STATE_FLAG_LOW_HEADROOM | STATE_FLAG_NONFINITE | STATE_FLAG_ACT_SPIKE |
                        STATE_FLAG_FINGERPRINT,
                    buf, sizeof buf);
    cr_expect_str_eq(buf, "LOW MEM NaN ACT! FP!=");
    view_flags_text(glyphs_get(1), STATE_FLAG_FINGERPRINT, buf, sizeof buf);
    cr_expect_str_eq(buf, "FP\u2260");
    view_flags_text(glyphs_get(0), 0, buf, sizeof buf);
    cr_expect_str_eq(buf, "");
}
