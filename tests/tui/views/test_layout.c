/* test_layout.c: the layout over many terminal sizes.
 *
 * Each check returns a description of the first problem (or NULL), so that
 * the sweeps stay fast and a failure names the size and the pane.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tui/views/layout.h"

static const char *const pane_names[LAYOUT_PANE_COUNT] = {
    "header",    "footer",    "nodes",     "events_pane",  "facts",       "timing",
    "load",      "memory",    "log",       "config_table", "config_edit", "filter",
    "list",      "form",      "progress",  "chart",        "runs",        "detail",
    "plan_form", "plan_bars", "plan_info", "help",         "message"};

static char why[256];

static const char *problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *problem(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return why;
}

static int shown(struct layout_rect r)
{
    return r.w > 0 && r.h > 0;
}

static int overlap(struct layout_rect a, struct layout_rect b)
{
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/* The panes each view must show (besides header and footer). */
static int pane_of_view(enum layout_pane p, enum layout_view v)
{
    switch (p) {
    case LAYOUT_HEADER:
    case LAYOUT_FOOTER:
        return 1;
    case LAYOUT_NODES:
    case LAYOUT_EVENTS_PANE:
        return v == LAYOUT_DASHBOARD;
    case LAYOUT_FACTS:
    case LAYOUT_TIMING:
    case LAYOUT_LOAD:
    case LAYOUT_MEMORY:
    case LAYOUT_LOG:
        return v == LAYOUT_NODE;
    case LAYOUT_CONFIG_TABLE:
    case LAYOUT_CONFIG_EDIT:
        return v == LAYOUT_CONFIG;
    case LAYOUT_FILTER:
        return v == LAYOUT_EVENTS || v == LAYOUT_HISTORY;
    case LAYOUT_LIST:
        return v == LAYOUT_EVENTS;
    case LAYOUT_FORM:
    case LAYOUT_PROGRESS:
    case LAYOUT_CHART:
        return v == LAYOUT_STRESS;
    case LAYOUT_RUNS:
    case LAYOUT_DETAIL:
        return v == LAYOUT_HISTORY;
    case LAYOUT_PLAN_FORM:
    case LAYOUT_PLAN_BARS:
    case LAYOUT_PLAN_INFO:
        return v == LAYOUT_PLAN;
    default:
        return 0;
    }
}

static const char *check_panes(const struct layout *l, int help)
{
    for (int p = 0; p < LAYOUT_PANE_COUNT; p++) {
        struct layout_rect r = l->pane[p];
        if ((r.w > 0) != (r.h > 0) || r.w < 0 || r.h < 0)
            return problem("%s is half empty", pane_names[p]);
        if (!shown(r))
            continue;
        if (r.x < 0 || r.y < 0 || r.x + r.w > l->cols || r.y + r.h > l->rows)
            return problem("%s off screen", pane_names[p]);
        int belongs = pane_of_view(p, l->view) || (p == LAYOUT_HELP && help);
        if (!belongs)
            return problem("%s shown in this view", pane_names[p]);
        for (int q = 0; q < p; q++)
            if (p != LAYOUT_HELP && shown(l->pane[q]) && overlap(r, l->pane[q]))
                return snprintf(why, sizeof why, "%s overlaps %s", pane_names[p], pane_names[q]),
                       why;
    }
    if (help && !shown(l->pane[LAYOUT_HELP]))
        return "no help overlay";
    if (!shown(l->pane[LAYOUT_HEADER]) || !shown(l->pane[LAYOUT_FOOTER]))
        return "no header/footer";
    return NULL;
}

/* Rows of the body (between header and footer) that no pane covers. */
static int uncovered_rows(const struct layout *l, int x)
{
    int n = 0;
    for (int y = 2; y < l->rows - 1; y++) {
        int covered = 0;
        for (int p = 0; p < LAYOUT_HELP; p++) {
            struct layout_rect r = l->pane[p];
            covered |= shown(r) && x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h;
        }
        n += !covered;
    }
    return n;
}

static const char *check_view(const struct layout *l, int n_nodes)
{
    const struct layout_rect *p = l->pane;
    switch (l->view) {
    case LAYOUT_DASHBOARD: {
        int fits = l->rows - 3 - 1 - LAYOUT_EVENTS_MIN_ROWS;
        int want = n_nodes < fits ? n_nodes : fits;
        if (p[LAYOUT_NODES].h != 1 + want)
            return "node table is not as tall as it should be";
        if (p[LAYOUT_EVENTS_PANE].h < LAYOUT_EVENTS_MIN_ROWS)
            return "events pane too short";
        break;
    }
    case LAYOUT_NODE:
        if (p[LAYOUT_TIMING].h < LAYOUT_CHART_MIN_ROWS ||
            p[LAYOUT_LOAD].h < LAYOUT_CHART_MIN_ROWS || p[LAYOUT_MEMORY].h < LAYOUT_CHART_MIN_ROWS)
            return "chart below its minimum height";
        if (p[LAYOUT_TIMING].w < 40 || p[LAYOUT_LOAD].w < 40)
            return "charts too narrow";
        if (!shown(p[LAYOUT_FACTS]))
            return "no facts";
        if (l->rows >= 40 && !shown(p[LAYOUT_LOG]))
            return "no log tail on a tall terminal";
        break;
    case LAYOUT_CONFIG:
        if (p[LAYOUT_CONFIG_TABLE].h < 2 || !shown(p[LAYOUT_CONFIG_EDIT]))
            return "config panes";
        break;
    case LAYOUT_EVENTS:
        if (p[LAYOUT_FILTER].h != 1 || p[LAYOUT_LIST].h < 10)
            return "events view panes";
        break;
    case LAYOUT_STRESS:
        if (p[LAYOUT_FORM].h < 16 || p[LAYOUT_PROGRESS].h != LAYOUT_PROGRESS_ROWS)
            return "stress form or progress too short";
        if (p[LAYOUT_CHART].h < LAYOUT_CHART_MIN_ROWS || p[LAYOUT_CHART].w < 40)
            return "stress chart below its minimum";
        break;
    case LAYOUT_HISTORY:
        if (p[LAYOUT_FILTER].h != 1 || p[LAYOUT_RUNS].h < LAYOUT_RUNS_MIN_ROWS)
            return "history runs pane too short";
        if (p[LAYOUT_DETAIL].h < 10)
            return "history detail too short";
        break;
    case LAYOUT_PLAN: {
        int fits = l->rows - 3 - LAYOUT_PLAN_FORM_ROWS - LAYOUT_PLAN_INFO_MIN_ROWS - 2;
        int want = n_nodes < fits ? n_nodes : fits;
        if (p[LAYOUT_PLAN_FORM].h != LAYOUT_PLAN_FORM_ROWS)
            return "plan form";
        if (p[LAYOUT_PLAN_BARS].h != 2 + want)
            return "plan bars not as tall as they should be";
        if (p[LAYOUT_PLAN_INFO].h < LAYOUT_PLAN_INFO_MIN_ROWS)
            return "plan info too short";
        break;
    }
    case LAYOUT_VIEW_COUNT:
        break;
    }
    if (l->view != LAYOUT_CONFIG && (uncovered_rows(l, 0) || uncovered_rows(l, l->cols - 1)))
        return "rows of the body left unused";
    return NULL;
}

static const char *check_columns(const struct layout *l, int engines)
{
    struct layout_rect t = l->pane[LAYOUT_NODES];
    int end = t.x;
    for (int c = 0; c < LAYOUT_COL_COUNT; c++) {
        struct layout_rect r = l->col[c];
        if (!r.w)
            continue;
        if (r.x < end)
            return problem("column %d overlaps", c);
        if (r.x + r.w > t.x + t.w)
            return problem("column %d too wide", c);
        if (r.w < (int)strlen(layout_col_title(c)))
            return problem("column %d narrower than its title", c);
        end = r.x + r.w + 1;
    }
    static const enum layout_col core[] = {LAYOUT_COL_NAME, LAYOUT_COL_STATE, LAYOUT_COL_MODEL,
                                           LAYOUT_COL_EVAL, LAYOUT_COL_MEMORY};
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
        if (!l->col[core[i]].w)
            return "a core column was dropped";
    static const enum layout_col every_engine[] = {LAYOUT_COL_ENGINE, LAYOUT_COL_TPS,
                                                   LAYOUT_COL_REQS, LAYOUT_COL_KV_USE};
    for (size_t i = 0; engines && i < sizeof every_engine / sizeof every_engine[0]; i++)
        if (!l->col[every_engine[i]].w)
            return "a column every engine reports was dropped";
    return NULL;
}

static void check(int cols, int rows, enum layout_view v, int n_nodes, int help, int engines)
{
    struct layout l = layout_compute(cols, rows, v, n_nodes, help, engines);
    const char *e = l.too_small ? "too small at a supported size" : check_panes(&l, help);
    if (!e)
        e = check_view(&l, n_nodes);
    if (!e && v == LAYOUT_DASHBOARD)
        e = check_columns(&l, engines);
    if (e)
        cr_assert_fail("%dx%d view %d nodes %d help %d engines %d: %s", cols, rows, v, n_nodes,
                       help, engines, e);
}

Test(layout, every_view_fits_from_80x24_to_300x100)
{
    static const int nodes[] = {1, 3, 12, 64};
    for (int cols = 80; cols <= 300; cols += (cols < 130 ? 1 : 7))
        for (int rows = 24; rows <= 100; rows += (rows < 45 ? 1 : 5))
            for (int v = 0; v < LAYOUT_VIEW_COUNT; v++)
                for (size_t n = 0; n < sizeof nodes / sizeof nodes[0]; n++) {
                    check(cols, rows, v, nodes[n], 0, 0);
                    check(cols, rows, v, nodes[n], 1, 0);
                    check(cols, rows, v, nodes[n], 0, 1);
                }
}

Test(layout, below_80x24_says_so_on_one_line)
{
    static const int sizes[][2] = {{79, 24}, {80, 23}, {79, 100}, {300, 23}, {40, 12},
                                   {1, 1},   {0, 0},   {10, 0},   {0, 10},   {-5, 30}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int v = 0; v < LAYOUT_VIEW_COUNT; v++) {
            int cols = sizes[i][0], rows = sizes[i][1];
            struct layout l = layout_compute(cols, rows, v, 3, 1, 0);
            cr_assert(l.too_small, "%dx%d", cols, rows);
            for (int p = 0; p < LAYOUT_PANE_COUNT; p++) {
                struct layout_rect r = l.pane[p];
                if (p != LAYOUT_MESSAGE) {
                    cr_assert(!shown(r), "%dx%d: %s shown", cols, rows, pane_names[p]);
                } else if (cols > 0 && rows > 0) {
                    cr_assert(r.x == 0 && r.y == 0 && r.w == cols && r.h == 1, "%dx%d", cols, rows);
                } else {
                    cr_assert(!shown(r), "%dx%d: nowhere to draw", cols, rows);
                }
            }
        }
}

/* A wider terminal never shows fewer columns, with or without engines. */
Test(layout, columns_only_appear_as_width_grows)
{
    for (int engines = 0; engines < 2; engines++) {
        struct layout prev = layout_compute(80, 30, LAYOUT_DASHBOARD, 3, 0, engines);
        for (int cols = 81; cols <= 300; cols++) {
            struct layout l = layout_compute(cols, 30, LAYOUT_DASHBOARD, 3, 0, engines);
            for (int c = 0; c < LAYOUT_COL_COUNT; c++)
                if (prev.col[c].w && !l.col[c].w)
                    cr_assert_fail("%d cols: column %s dropped", cols, layout_col_title(c));
            prev = l;
        }
    }
}

Test(layout, column_drop_order)
{
    struct layout l = layout_compute(80, 24, LAYOUT_DASHBOARD, 3, 0, 0);
    cr_assert_eq(l.col[LAYOUT_COL_SPARK].w, 0, "the sparkline goes before the knobs");
    cr_assert_eq(l.col[LAYOUT_COL_LAYERS].w, 0);
    cr_assert_eq(l.col[LAYOUT_COL_STEPS].w, 0, "the rate goes before busy and batch");
    cr_assert_eq(l.col[LAYOUT_COL_PHASE].w, 0, "busy tells idle nodes at 80 columns");
    cr_assert_gt(l.col[LAYOUT_COL_BUSY].w, 0);
    cr_assert_gt(l.col[LAYOUT_COL_BATCH].w, 0);
    cr_assert_gt(l.col[LAYOUT_COL_KV_BITS].w, 0);
    cr_assert_gt(l.col[LAYOUT_COL_PREFILL].w, 0);
    /* Busy and batch sit between phase and the rate, numbers in titles' width. */
    l = layout_compute(120, 40, LAYOUT_DASHBOARD, 3, 0, 0);
    cr_assert_lt(l.col[LAYOUT_COL_PHASE].x, l.col[LAYOUT_COL_BUSY].x);
    cr_assert_lt(l.col[LAYOUT_COL_BUSY].x, l.col[LAYOUT_COL_BATCH].x);
    cr_assert_lt(l.col[LAYOUT_COL_BATCH].x, l.col[LAYOUT_COL_STEPS].x);
    cr_assert_eq(l.col[LAYOUT_COL_BUSY].w, 4, "\"100%\" and \"idle\" fit");
    cr_assert_eq(l.col[LAYOUT_COL_BATCH].w, 5, "\"12.5\" fits");

    /* Of an inferd cluster, every column of inferd's own at 120; what
     * every engine reports comes after. */
    l = layout_compute(120, 40, LAYOUT_DASHBOARD, 3, 0, 0);
    for (int c = 0; c < LAYOUT_COL_COUNT; c++)
        if (c != LAYOUT_COL_ENGINE && c != LAYOUT_COL_TPS && c != LAYOUT_COL_REQS &&
            c != LAYOUT_COL_KV_USE)
            cr_assert_gt(l.col[c].w, 0, "120 columns show %s", layout_col_title(c));
    cr_assert_eq(l.col[LAYOUT_COL_ENGINE].w, 0, "inferd's own columns before the engine's");
    cr_assert_geq(l.col[LAYOUT_COL_SPARK].w, 10);
    l = layout_compute(150, 40, LAYOUT_DASHBOARD, 3, 0, 0);
    for (int c = 0; c < LAYOUT_COL_COUNT; c++)
        cr_assert_gt(l.col[c].w, 0, "150 columns show %s", layout_col_title(c));

    /* Display order follows the enum; widths fill the table exactly. */
    l = layout_compute(200, 40, LAYOUT_DASHBOARD, 3, 0, 0);
    struct layout_rect last = l.col[LAYOUT_COL_SPARK];
    cr_assert_eq(last.x + last.w, 200);
    cr_assert_eq(l.col[LAYOUT_COL_NAME].w, 16);
    cr_assert_eq(l.col[LAYOUT_COL_NAME].x, 0);
}

Test(layout, node_table_scrolls_when_nodes_do_not_fit)
{
    struct layout l = layout_compute(100, 24, LAYOUT_DASHBOARD, 40, 0, 0);
    cr_assert_eq(l.pane[LAYOUT_NODES].h, 1 + 24 - 3 - 1 - LAYOUT_EVENTS_MIN_ROWS);
    cr_assert_eq(l.pane[LAYOUT_EVENTS_PANE].h, LAYOUT_EVENTS_MIN_ROWS);
    l = layout_compute(100, 60, LAYOUT_DASHBOARD, 3, 0, 0);
    cr_assert_eq(l.pane[LAYOUT_NODES].h, 4);
    cr_assert_eq(l.pane[LAYOUT_EVENTS_PANE].h, 60 - 3 - 4, "events take the rest");
}

/* The load charts get a row of their own when three rows of charts keep
 * their minimum, and share the memory row (on its right) when not. */
Test(layout, node_detail_load_charts_row_or_beside_memory)
{
    struct layout small = layout_compute(80, 24, LAYOUT_NODE, 3, 0, 0);
    cr_assert_eq(small.pane[LAYOUT_LOAD].y, small.pane[LAYOUT_MEMORY].y);
    struct layout_rect mem = small.pane[LAYOUT_MEMORY];
    cr_assert_eq(small.pane[LAYOUT_LOAD].x, mem.x + mem.w);
    cr_assert_eq(small.pane[LAYOUT_LOAD].h, small.pane[LAYOUT_MEMORY].h);
    struct layout tall = layout_compute(120, 40, LAYOUT_NODE, 3, 0, 0);
    cr_assert_eq(tall.pane[LAYOUT_LOAD].y, tall.pane[LAYOUT_TIMING].y + tall.pane[LAYOUT_TIMING].h);
    cr_assert_eq(tall.pane[LAYOUT_MEMORY].y, tall.pane[LAYOUT_LOAD].y + tall.pane[LAYOUT_LOAD].h);
    cr_assert_eq(tall.pane[LAYOUT_LOAD].w, tall.pane[LAYOUT_TIMING].w);
    cr_assert(shown(tall.pane[LAYOUT_LOG]), "the log keeps its place");
}

Test(layout, node_detail_puts_facts_beside_charts_when_wide)
{
    struct layout narrow = layout_compute(100, 30, LAYOUT_NODE, 3, 0, 0);
    cr_assert_eq(narrow.pane[LAYOUT_FACTS].w, 100);
    cr_assert_lt(narrow.pane[LAYOUT_FACTS].y, narrow.pane[LAYOUT_TIMING].y);
    struct layout wide = layout_compute(160, 50, LAYOUT_NODE, 3, 0, 0);
    cr_assert_eq(wide.pane[LAYOUT_FACTS].y, wide.pane[LAYOUT_TIMING].y);
    cr_assert_eq(wide.pane[LAYOUT_FACTS].x + wide.pane[LAYOUT_FACTS].w, 160);
    cr_assert(shown(wide.pane[LAYOUT_LOG]));
}

/* With HTTP engine nodes, 80 columns show what every engine reports
 * (state, engine, tok/s, requests, KV use, memory) and the timing, and
 * give up inferd's busy, batch and knobs first. */
Test(layout, engine_columns_rank_first_with_engines)
{
    struct layout l = layout_compute(80, 24, LAYOUT_DASHBOARD, 3, 0, 1);
    static const enum layout_col shown80[] = {
        LAYOUT_COL_NAME,   LAYOUT_COL_STATE,  LAYOUT_COL_ENGINE, LAYOUT_COL_TPS, LAYOUT_COL_REQS,
        LAYOUT_COL_KV_USE, LAYOUT_COL_MEMORY, LAYOUT_COL_MODEL,  LAYOUT_COL_EVAL};
    for (size_t i = 0; i < sizeof shown80 / sizeof shown80[0]; i++)
        cr_expect_gt(l.col[shown80[i]].w, 0, "80 columns show %s", layout_col_title(shown80[i]));
    cr_expect_eq(l.col[LAYOUT_COL_BUSY].w, 0);
    cr_expect_eq(l.col[LAYOUT_COL_KV_BITS].w, 0);
    cr_expect_geq(l.col[LAYOUT_COL_ENGINE].w, (int)strlen("llama.cpp"));
    /* Without engines, the same width keeps inferd's columns of today. */
    l = layout_compute(80, 24, LAYOUT_DASHBOARD, 3, 0, 0);
    cr_expect_eq(l.col[LAYOUT_COL_ENGINE].w, 0);
    cr_expect_gt(l.col[LAYOUT_COL_PREFILL].w, 0);
    /* The engine sits right after the name. */
    l = layout_compute(200, 40, LAYOUT_DASHBOARD, 3, 0, 1);
    cr_expect_eq(l.col[LAYOUT_COL_ENGINE].x,
                 l.col[LAYOUT_COL_NAME].x + l.col[LAYOUT_COL_NAME].w + 1);
}
