/* layout.h: where each part of each view goes, from the terminal size.
 *
 * A pure function of its arguments, so that every size can be tested
 * without a terminal: the views only draw into the rectangles given here.
 * Every view has a header (2 rows) and a footer of keys (1 row). Below
 * LAYOUT_MIN_COLS x LAYOUT_MIN_ROWS nothing but one line saying so is laid
 * out.
 */
#ifndef LAYOUT_H
#define LAYOUT_H

#define LAYOUT_MIN_COLS 80
#define LAYOUT_MIN_ROWS 24

/* Smallest useful sizes, which the layout always grants at or above the
 * minimum terminal size. */
#define LAYOUT_EVENTS_MIN_ROWS 5 /* dashboard events pane: a title and 4 events */
#define LAYOUT_CHART_MIN_ROWS 6
#define LAYOUT_HELP_MAX_COLS 96
#define LAYOUT_HELP_MAX_ROWS 24

enum layout_view {
    LAYOUT_DASHBOARD,
    LAYOUT_NODE,
    LAYOUT_CONFIG,
    LAYOUT_EVENTS,
    LAYOUT_STRESS,
    LAYOUT_HISTORY,
    LAYOUT_PLAN,
    LAYOUT_VIEW_COUNT
};

#define LAYOUT_FORM_COLS 34         /* stress view: the form */
#define LAYOUT_PROGRESS_ROWS 7      /* stress view: the progress lines */
#define LAYOUT_RUNS_MIN_ROWS 6      /* history view: column titles and 5 runs */
#define LAYOUT_PLAN_FORM_ROWS 3     /* plan view: the target, the verdict, its reason */
#define LAYOUT_PLAN_INFO_MIN_ROWS 8 /* plan view: the max-context table and the apply */

/* The panes; a view uses some of them and leaves the others empty. */
enum layout_pane {
    LAYOUT_HEADER,
    LAYOUT_FOOTER,
    LAYOUT_NODES,        /* dashboard: column titles, then a row per node */
    LAYOUT_EVENTS_PANE,  /* dashboard: a title, then the newest events */
    LAYOUT_FACTS,        /* node detail: the node's facts */
    LAYOUT_TIMING,       /* node detail: model_ms / eval_ms by phase over time */
    LAYOUT_LOAD,         /* node detail: busy % and batch size over time */
    LAYOUT_MEMORY,       /* node detail: memory and KV bytes over time */
    LAYOUT_LOG,          /* node detail: the log tail, when there is room */
    LAYOUT_CONFIG_TABLE, /* config: column titles, then a row per node */
    LAYOUT_CONFIG_EDIT,  /* config: the edit line and its status */
    LAYOUT_FILTER,       /* events view: the filter line */
    LAYOUT_LIST,         /* events view: the events */
    LAYOUT_FORM,         /* stress view: the run's options */
    LAYOUT_PROGRESS,     /* stress view: state, leg, context, failures */
    LAYOUT_CHART,        /* stress view: decode tok/s against context */
    LAYOUT_RUNS,         /* history view: the runs, one a row */
    LAYOUT_DETAIL,       /* history view: the chosen run's summary, or the comparison */
    LAYOUT_PLAN_FORM,    /* plan view: target context and kv_bits, the verdict */
    LAYOUT_PLAN_BARS,    /* plan view: a row per node, current and planned memory */
    LAYOUT_PLAN_INFO,    /* plan view: max contexts, the apply's progress */
    LAYOUT_HELP,         /* the help overlay: drawn over the others */
    LAYOUT_MESSAGE,      /* "terminal too small", alone */
    LAYOUT_PANE_COUNT
};

/* Node table columns, in display order. Which ones are shown depends on
 * the width and on whether the cluster has HTTP engine nodes: see layout.c
 * for the order in which they are given up. */
enum layout_col {
    LAYOUT_COL_NAME,
    LAYOUT_COL_ENGINE, /* inferd, llama.cpp, ... */
    LAYOUT_COL_STATE,
    LAYOUT_COL_LAYERS,
    LAYOUT_COL_PHASE,
    LAYOUT_COL_BUSY,  /* model time / wall time, "idle" when not stepping */
    LAYOUT_COL_BATCH, /* sequences per step */
    LAYOUT_COL_TPS,   /* decode tokens per second */
    LAYOUT_COL_REQS,  /* requests running/waiting */
    LAYOUT_COL_STEPS,
    LAYOUT_COL_MODEL,
    LAYOUT_COL_EVAL,
    LAYOUT_COL_KV_USE, /* the engine's KV cache use, 0..100% */
    LAYOUT_COL_MEMORY,
    LAYOUT_COL_KV_BITS,
    LAYOUT_COL_PREFILL,
    LAYOUT_COL_SPARK,
    LAYOUT_COL_COUNT
};

/* w == 0 or h == 0: not shown. */
struct layout_rect {
    int x, y, w, h;
};

struct layout {
    int cols, rows;
    enum layout_view view;
    int too_small; /* only LAYOUT_MESSAGE is set */
    struct layout_rect pane[LAYOUT_PANE_COUNT];
    /* Node table columns: x (absolute) and w; y and h are the table's.
     * A column with w == 0 was given up for lack of width. */
    struct layout_rect col[LAYOUT_COL_COUNT];
};

/* n_nodes: how many node rows the dashboard and config tables would like
 * (they scroll when fewer fit). help: lay out the help overlay too.
 * engines: some node is an HTTP engine, so that the columns every engine
 * reports (engine, tok/s, requests, KV use) come before inferd's own. */
struct layout layout_compute(int cols, int rows, enum layout_view view, int n_nodes, int help,
                             int engines);

/* The column's title, for the views and the tests. */
const char *layout_col_title(enum layout_col c);

#endif
