/* layout.c: the rectangles of every view, as a pure function of the size.
 *
 * The node table is the one place where width is scarce. Its columns have
 * a minimum width (their title fits) and a rank: as the terminal narrows,
 * the flexible columns (name, memory bar, sparkline) shrink to their
 * minimum first, then columns are given up from the lowest rank. Ranks
 * follow what an operator looks at first: is the node alive, is it
 * compute- or orchestration-bound, how much of the time it computes at
 * all and in batches of what size, does it have memory left, how is it
 * configured, which layers it holds; the phase, steps/s and sparkline
 * come last, as the man page says (infertop.1, THE DASHBOARD). A
 * cluster with HTTP engine nodes ranks what every engine reports (its
 * engine, tok/s, requests, KV use, memory) right after the state: those
 * are all such a row has; a cluster of inferd nodes only ranks them last.
 */
#include "layout.h"

#define HEADER_ROWS 2
#define FOOTER_ROWS 1
#define CONFIG_EDIT_ROWS 3
/* The node facts beside the charts, when wide: a share of the width
 * between these, so that a wide screen shows a fact whole. */
#define FACTS_MIN_COLS 36
#define FACTS_MAX_COLS 64
#define FACTS_ROWS 4 /* ... or above them when narrow */
#define WIDE_COLS 120
#define SIDE_CHART_MIN_COLS 40 /* a chart beside another */
#define LOG_MIN_ROWS 8

struct col_spec {
    const char *title;
    int min, max; /* max 0: takes whatever is left */
};

static const struct col_spec col_specs[LAYOUT_COL_COUNT] = {
    [LAYOUT_COL_NAME] = {"node", 10, 16},     [LAYOUT_COL_ENGINE] = {"engine", 9, 9},
    [LAYOUT_COL_STATE] = {"state", 8, 8},     [LAYOUT_COL_MODEL] = {"model ms", 8, 8},
    [LAYOUT_COL_EVAL] = {"eval ms", 8, 8},    [LAYOUT_COL_BUSY] = {"busy", 4, 4},
    [LAYOUT_COL_MEMORY] = {"memory", 12, 48}, [LAYOUT_COL_BATCH] = {"batch", 5, 5},
    [LAYOUT_COL_KV_BITS] = {"kv", 4, 4},      [LAYOUT_COL_PREFILL] = {"prefill", 7, 7},
    [LAYOUT_COL_PHASE] = {"phase", 7, 7},     [LAYOUT_COL_STEPS] = {"steps/s", 7, 7},
    [LAYOUT_COL_SPARK] = {"step ms", 10, 0},  [LAYOUT_COL_LAYERS] = {"layers", 7, 7},
    [LAYOUT_COL_TPS] = {"tok/s", 6, 6},       [LAYOUT_COL_REQS] = {"reqs", 6, 6},
    [LAYOUT_COL_KV_USE] = {"kv%", 4, 4},
};

/* The columns by rank, the first given up last: for a cluster of inferd
 * nodes, and for one with HTTP engine nodes. */
static const enum layout_col rank_inferd[LAYOUT_COL_COUNT] = {
    LAYOUT_COL_NAME,   LAYOUT_COL_STATE, LAYOUT_COL_MODEL,   LAYOUT_COL_EVAL,    LAYOUT_COL_BUSY,
    LAYOUT_COL_MEMORY, LAYOUT_COL_BATCH, LAYOUT_COL_KV_BITS, LAYOUT_COL_PREFILL, LAYOUT_COL_LAYERS,
    LAYOUT_COL_PHASE,  LAYOUT_COL_STEPS, LAYOUT_COL_SPARK,   LAYOUT_COL_TPS,     LAYOUT_COL_REQS,
    LAYOUT_COL_ENGINE, LAYOUT_COL_KV_USE};
static const enum layout_col rank_engines[LAYOUT_COL_COUNT] = {
    LAYOUT_COL_NAME,   LAYOUT_COL_STATE,   LAYOUT_COL_ENGINE,  LAYOUT_COL_TPS,    LAYOUT_COL_REQS,
    LAYOUT_COL_KV_USE, LAYOUT_COL_MEMORY,  LAYOUT_COL_MODEL,   LAYOUT_COL_EVAL,   LAYOUT_COL_BUSY,
    LAYOUT_COL_BATCH,  LAYOUT_COL_KV_BITS, LAYOUT_COL_PREFILL, LAYOUT_COL_LAYERS, LAYOUT_COL_PHASE,
    LAYOUT_COL_STEPS,  LAYOUT_COL_SPARK};

const char *layout_col_title(enum layout_col c)
{
    return (unsigned)c < LAYOUT_COL_COUNT ? col_specs[c].title : "";
}

static struct layout_rect rect(int x, int y, int w, int h)
{
    struct layout_rect r = {x, y, w, h};
    return r;
}

static int shown_rect(struct layout_rect r)
{
    return r.w > 0 && r.h > 0;
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Gives a shown column c up to `want` more of the `extra` columns left (no
 * more than its max); returns what is left. */
static int grow(int *w, enum layout_col c, int extra, int want)
{
    if (!w[c])
        return extra;
    int room = col_specs[c].max ? col_specs[c].max - w[c] : want;
    int give = clamp(want < room ? want : room, 0, extra);
    w[c] += give;
    return extra - give;
}

/* Widths first (by rank), then positions (in display order), one space
 * between columns. */
static void layout_columns(struct layout *l, struct layout_rect table, int engines)
{
    const enum layout_col *by_rank = engines ? rank_engines : rank_inferd;
    int w[LAYOUT_COL_COUNT] = {0};
    int used = 0;
    for (int rank = 0; rank < LAYOUT_COL_COUNT; rank++) {
        enum layout_col c = by_rank[rank];
        int need = col_specs[c].min + (used ? 1 : 0);
        if (used + need > table.w)
            break; /* strictly by rank: a wider table never loses one */
        w[c] = col_specs[c].min;
        used += need;
    }
    int extra = table.w - used;
    extra = grow(w, LAYOUT_COL_NAME, extra, extra);
    if (w[LAYOUT_COL_SPARK])
        extra = grow(w, LAYOUT_COL_MEMORY, extra, extra / 2);
    extra = grow(w, LAYOUT_COL_SPARK, extra, extra);
    grow(w, LAYOUT_COL_MEMORY, extra, extra);

    int x = table.x;
    for (int c = 0; c < LAYOUT_COL_COUNT; c++) {
        if (!w[c])
            continue;
        l->col[c] = rect(x, table.y, w[c], table.h);
        x += w[c] + 1;
    }
}

/* A table of n rows under a title row, in at most `avail` rows. */
static int table_rows(int n_nodes, int avail)
{
    return 1 + clamp(n_nodes, 1, avail - 1);
}

static void layout_dashboard(struct layout *l, struct layout_rect body, int n_nodes, int engines)
{
    int h = table_rows(n_nodes, body.h - LAYOUT_EVENTS_MIN_ROWS);
    l->pane[LAYOUT_NODES] = rect(body.x, body.y, body.w, h);
    l->pane[LAYOUT_EVENTS_PANE] = rect(body.x, body.y + h, body.w, body.h - h);
    layout_columns(l, l->pane[LAYOUT_NODES], engines);
}

/* Facts beside the charts when wide, above them when not; the log tail
 * below the charts when two rows of them keep their minimum. The charts
 * in three rows (timing, load, memory) when each keeps its minimum, else
 * the load charts share the memory row, on its right, and the facts give
 * them the width two charts need. */
static void layout_node(struct layout *l, struct layout_rect body)
{
    struct layout_rect charts = body;
    int wide = body.w >= WIDE_COLS;
    if (!wide) {
        l->pane[LAYOUT_FACTS] = rect(body.x, body.y, body.w, FACTS_ROWS);
        charts.y += FACTS_ROWS;
        charts.h -= FACTS_ROWS;
    }
    if (charts.h >= 2 * LAYOUT_CHART_MIN_ROWS + LOG_MIN_ROWS) {
        int log_h = charts.h / 3 > LOG_MIN_ROWS ? charts.h / 3 : LOG_MIN_ROWS;
        charts.h -= log_h;
        l->pane[LAYOUT_LOG] = rect(charts.x, charts.y + charts.h, charts.w, log_h);
    }
    int rows = charts.h >= 3 * LAYOUT_CHART_MIN_ROWS ? 3 : 2;
    if (wide) {
        int facts = clamp(body.w * 3 / 8, FACTS_MIN_COLS, FACTS_MAX_COLS);
        if (rows == 2)
            facts = clamp(body.w - 2 * SIDE_CHART_MIN_COLS, FACTS_MIN_COLS, facts);
        l->pane[LAYOUT_FACTS] = rect(body.x + body.w - facts, body.y, facts, body.h);
        charts.w -= facts;
        if (shown_rect(l->pane[LAYOUT_LOG]))
            l->pane[LAYOUT_LOG].w = charts.w;
    }
    int h = charts.h / rows, y = charts.y;
    l->pane[LAYOUT_TIMING] = rect(charts.x, y, charts.w, h);
    y += h;
    if (rows == 3) {
        l->pane[LAYOUT_LOAD] = rect(charts.x, y, charts.w, h);
        y += h;
    }
    struct layout_rect last = rect(charts.x, y, charts.w, charts.y + charts.h - y);
    if (rows == 3) {
        l->pane[LAYOUT_MEMORY] = last;
    } else {
        int half = last.w / 2;
        l->pane[LAYOUT_MEMORY] = rect(last.x, last.y, half, last.h);
        l->pane[LAYOUT_LOAD] = rect(last.x + half, last.y, last.w - half, last.h);
    }
}

static void layout_config(struct layout *l, struct layout_rect body, int n_nodes)
{
    int h = table_rows(n_nodes, body.h - CONFIG_EDIT_ROWS);
    l->pane[LAYOUT_CONFIG_TABLE] = rect(body.x, body.y, body.w, h);
    l->pane[LAYOUT_CONFIG_EDIT] =
        rect(body.x, body.y + body.h - CONFIG_EDIT_ROWS, body.w, CONFIG_EDIT_ROWS);
}

static void layout_events(struct layout *l, struct layout_rect body)
{
    l->pane[LAYOUT_FILTER] = rect(body.x, body.y, body.w, 1);
    l->pane[LAYOUT_LIST] = rect(body.x, body.y + 1, body.w, body.h - 1);
}

/* The form on the left, progress above the chart on the right. */
static void layout_stress(struct layout *l, struct layout_rect body)
{
    l->pane[LAYOUT_FORM] = rect(body.x, body.y, LAYOUT_FORM_COLS, body.h);
    int x = body.x + LAYOUT_FORM_COLS + 1, w = body.w - LAYOUT_FORM_COLS - 1;
    l->pane[LAYOUT_PROGRESS] = rect(x, body.y, w, LAYOUT_PROGRESS_ROWS);
    l->pane[LAYOUT_CHART] =
        rect(x, body.y + LAYOUT_PROGRESS_ROWS, w, body.h - LAYOUT_PROGRESS_ROWS);
}

/* A status line, the runs (a third of the rest), the detail below. */
static void layout_history(struct layout *l, struct layout_rect body)
{
    l->pane[LAYOUT_FILTER] = rect(body.x, body.y, body.w, 1);
    int runs = (body.h - 1) / 3 > LAYOUT_RUNS_MIN_ROWS ? (body.h - 1) / 3 : LAYOUT_RUNS_MIN_ROWS;
    l->pane[LAYOUT_RUNS] = rect(body.x, body.y + 1, body.w, runs);
    l->pane[LAYOUT_DETAIL] = rect(body.x, body.y + 1 + runs, body.w, body.h - 1 - runs);
}

/* The target on top, the nodes' bars (a title, a row each, a legend),
 * the max-context table and the apply's progress below. */
static void layout_plan(struct layout *l, struct layout_rect body, int n_nodes)
{
    l->pane[LAYOUT_PLAN_FORM] = rect(body.x, body.y, body.w, LAYOUT_PLAN_FORM_ROWS);
    int avail = body.h - LAYOUT_PLAN_FORM_ROWS - LAYOUT_PLAN_INFO_MIN_ROWS;
    int h = clamp(n_nodes, 1, avail - 2) + 2;
    l->pane[LAYOUT_PLAN_BARS] = rect(body.x, body.y + LAYOUT_PLAN_FORM_ROWS, body.w, h);
    int y = body.y + LAYOUT_PLAN_FORM_ROWS + h;
    l->pane[LAYOUT_PLAN_INFO] = rect(body.x, y, body.w, body.y + body.h - y);
}

struct layout layout_compute(int cols, int rows, enum layout_view view, int n_nodes, int help,
                             int engines)
{
    struct layout l = {.cols = cols, .rows = rows, .view = view};
    if (cols < LAYOUT_MIN_COLS || rows < LAYOUT_MIN_ROWS) {
        l.too_small = 1;
        if (cols > 0 && rows > 0)
            l.pane[LAYOUT_MESSAGE] = rect(0, 0, cols, 1);
        return l;
    }
    l.pane[LAYOUT_HEADER] = rect(0, 0, cols, HEADER_ROWS);
    l.pane[LAYOUT_FOOTER] = rect(0, rows - FOOTER_ROWS, cols, FOOTER_ROWS);
    struct layout_rect body = rect(0, HEADER_ROWS, cols, rows - HEADER_ROWS - FOOTER_ROWS);
    switch (view) {
    case LAYOUT_DASHBOARD:
        layout_dashboard(&l, body, n_nodes, engines);
        break;
    case LAYOUT_NODE:
        layout_node(&l, body);
        break;
    case LAYOUT_CONFIG:
        layout_config(&l, body, n_nodes);
        break;
    case LAYOUT_EVENTS:
        layout_events(&l, body);
        break;
    case LAYOUT_STRESS:
        layout_stress(&l, body);
        break;
    case LAYOUT_HISTORY:
        layout_history(&l, body);
        break;
    case LAYOUT_PLAN:
        layout_plan(&l, body, n_nodes);
        break;
    case LAYOUT_VIEW_COUNT:
        break;
    }
    if (help) {
        int w = cols - 4 < LAYOUT_HELP_MAX_COLS ? cols - 4 : LAYOUT_HELP_MAX_COLS;
        int h = rows - 2 < LAYOUT_HELP_MAX_ROWS ? rows - 2 : LAYOUT_HELP_MAX_ROWS;
        l.pane[LAYOUT_HELP] = rect((cols - w) / 2, (rows - h) / 2, w, h);
    }
    return l;
}
