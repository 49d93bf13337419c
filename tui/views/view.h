/* view.h: what the views share with ui.c.
 *
 * A view is a small vtable: it draws into the panes of its layout and
 * handles the keys it knows; ui.c handles the rest (switching views,
 * help, quit, resize). Views read the state and write nothing but their
 * own part of the context: selection and scroll positions, and requests
 * back to ui.c (an action, a message, a question to confirm, another view).
 */
#ifndef VIEW_H
#define VIEW_H

#include <curses.h>
#include <stdarg.h>

#include "glyphs.h"
#include "keys.h"
#include "layout.h"
#include "palette.h"
#include "tui/core/action.h"
#include "tui/core/state.h"
#include "tui/plan/plan.h"
#include "tui/plan/plan_gather.h"
#include "tui/stress/stress.h"

/* The display options (ui.h): views that read them include ui.h. */
struct ui_options;

#define VIEW_MESSAGE_MAX 256
#define VIEW_FILTER_MAX 64
#define VIEW_TYPED_MAX 8

/* The config editor: a row (a node, or n_nodes for "all nodes") and a
 * field; while editing, draft holds the changed fields. */
enum view_cfg_field { VIEW_CFG_PREFILL, VIEW_CFG_KV_BITS };

struct view_config_edit {
    int row, top;
    enum view_cfg_field field;
    int editing;
    proto_set_args draft;
    char typed[VIEW_TYPED_MAX]; /* digits typed into the field, "" when none */
};

struct view_events_pos {
    int skip; /* newest events scrolled past */
    char filter[VIEW_FILTER_MAX];
    int editing; /* typing into the filter */
};

/* The Stress view's form: the field under the cursor and, while one is
 * being edited, the text typed into it. */
#define VIEW_FORM_TEXT 64
struct view_stress_form {
    int field, top, editing; /* top: the first field shown */
    char text[VIEW_FORM_TEXT];
    int ready; /* opts holds the defaults */
    stress_opts opts;
};

/* The History view: the selected run, the marked one (0: none), what the
 * detail pane shows and how, the status filter and the sort. */
enum view_hist_detail { VIEW_HIST_SUMMARY, VIEW_HIST_COMPARE };
struct view_history_pos {
    int sel, top, detail_top;
    int64_t marked;
    int64_t compare_a, compare_b;
    enum view_hist_detail detail;
    int charts; /* the detail pane charts the run(s) rather than tabulating them */
    int leg;    /* the leg charted */
    int status; /* index into the statuses the filter cycles through */
    int sort_context;
    int stale; /* list again before drawing */
};

/* The Plan view: the target being edited, and the plan drawn from it. */
enum view_plan_field { VIEW_PLAN_CTX, VIEW_PLAN_KV_BITS, VIEW_PLAN_FIELDS };
struct view_plan_pos {
    enum view_plan_field field;
    int editing;
    char typed[VIEW_TYPED_MAX + 4]; /* digits typed into the context, "" when none */
    int ctx, kv_bits;               /* the target; 0 until first shown */
    int ok;                         /* 1: in, result and from hold a plan */
    char why[256];                  /* !ok: why there is none */
    plan_model model;               /* probed once per spec */
    plan_input in;
    plan_result result;
    enum plan_from from[PLAN_NODES_MAX];
};

/* The dashboard's filter (typed after '/') and sort. */
struct view_dash_pos {
    char filter[VIEW_FILTER_MAX];
    int editing; /* typing into the filter */
    int sort_by; /* 1 + the layout_col rows are sorted by; 0 (zeroed): the cluster file's order */
    int rev;     /* the sort reversed */
};

/* What is drawn over the view: the help, or the selected node's raw status. */
enum view_overlay { VIEW_OVERLAY_NONE, VIEW_OVERLAY_HELP, VIEW_OVERLAY_RAW };

struct view_ctx {
    /* Set by ui.c before each draw and key. */
    const state *st;
    double now;
    double wall; /* the wall clock (unix seconds) at `now`, for event times */
    int n_nodes;
    const struct layout *lay;
    WINDOW *const *win; /* per pane, NULL when not shown */
    const struct glyphs *g;
    const struct palette *pal;
    const struct ui_options *opt;
    int fresh; /* the panes are new or blank since the last frame */

    /* Kept across frames. */
    int node;     /* the selected node: dashboard and node detail */
    int node_top; /* the dashboard's first shown node */
    struct view_config_edit cfg;
    struct view_events_pos ev;
    struct view_dash_pos dash;
    enum view_overlay overlay; /* set by a view (y) or ui.c (?) */
    int overlay_top;           /* the overlay's first line shown */
    uint64_t events_key;       /* what the dashboard's events rows show (own_erase) */
    struct view_stress_form form;
    struct view_history_pos hist;
    struct view_plan_pos plan;

    /* Requests back to ui.c. */
    int goto_view; /* a layout_view, or -1 */
    struct action *out;
    int n_out, max_out;
    char message[VIEW_MESSAGE_MAX];
    int message_error;
    char prompt[VIEW_MESSAGE_MAX]; /* a field's text or a filter in force, first in the footer */
    int confirm;                   /* a question is asked: confirm_act on 'y' */
    struct action confirm_act;
    char question[VIEW_MESSAGE_MAX];
};

struct ui_view {
    const char *name; /* the tab title */
    enum layout_view layout;
    void (*draw)(struct view_ctx *v);
    /* Returns 1 when the key was the view's, 0 to let ui.c handle it. */
    int (*key)(struct view_ctx *v, int key);
    /* A click at the screen's (y, x); 1 when it meant something. NULL: none. */
    int (*click)(struct view_ctx *v, int y, int x);
    /* Its keys: what they do, the footer, its part of the help (keys.h). */
    const struct view_keys *keys;
    /* 1: draw erases what it redraws, so that rows whose data did not change
     * are left alone (fresh says when everything must be drawn); 0: ui.c
     * erases every pane before draw. */
    int own_erase;
};

extern const struct ui_view view_dashboard;
extern const struct ui_view view_node;
extern const struct ui_view view_config;
extern const struct ui_view view_events;
extern const struct ui_view view_stress;
extern const struct ui_view view_history;
extern const struct ui_view view_plan;

/* The overlay (help or raw status) over any view; its keys scroll it (1)
 * or close it (0). The help lists the tables of keys t[0..n). */
void view_overlay_draw(struct view_ctx *v, const struct view_keys *const *t, int n);
int view_overlay_key(struct view_ctx *v, const struct view_keys *const *t, int n, int key);
/* A key typed into the text field buf: Backspace erases, a printable key
 * (a digit only when digits) is added. 1 when the key was Enter, -1 Esc
 * (the field gives focus back in both cases), 0 otherwise. */
int view_type_key(char *buf, size_t len, int key, int digits);

/* ---- requests back to ui.c, in view_common.c ---- */

void view_emit(struct view_ctx *v, const struct action *a);
void view_message(struct view_ctx *v, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void view_vmessage(struct view_ctx *v, int error, const char *fmt, va_list ap);
/* Asks "question? y/n" in the footer; 'y' emits a. */
void view_ask(struct view_ctx *v, const struct action *a, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* In read-only mode, says so and returns 1. */
int view_refuse_readonly(struct view_ctx *v, const char *what);

/* ---- shared by the views, in view_common.c ---- */

const char *view_live_word(enum state_live l);
enum palette_role view_live_role(enum state_live l);
/* A node's state as the views show it: its liveness, or for an HTTP
 * engine what its last poll found ("loading", "error"); up: counted as up. */
struct view_state {
    const char *word;
    enum palette_role role;
    int up;
};
void view_node_state(const state *st, int node, double now, struct view_state *out);
/* A node's highlights and alerts in words: "EVAL>MODEL QUEUE KV>90%". */
void view_node_alerts_text(const struct view_ctx *v, int node, unsigned flags, char *buf,
                           size_t len);
/* The short reasons of a node's highlight flags, space separated. */
void view_flags_text(const struct glyphs *g, unsigned flags, char *buf, size_t len);
/* A movement key applied to a selection of n items with a page of `page`
 * rows: returns the new index, or -1 when key is no movement. */
int view_move(int key, int sel, int n, int page);
/* Keeps sel visible in a list of `rows` rows starting at *top. */
void view_scroll_to(int sel, int rows, int *top);
/* Node start/stop/restart keys (S, X, R) on node `node`; stop and restart
 * are confirmed first. */
int view_node_action_key(struct view_ctx *v, int key, int node);
/* One event as a line at row y of w, in width columns. */
void view_event_line(struct view_ctx *v, WINDOW *w, int y, int width, const struct state_event *e);
/* What node's config lacks of the settings the operator set
 * (desired_sync.h): 1 when it drifted, with the desired values in *drift;
 * 0 without drift or without desired settings (a demo). */
int view_drift(const struct view_ctx *v, int node, proto_set_args *drift);
/* prefill_step as shown: "auto", a size, or "-" when unknown. */
void view_fmt_prefill(int prefill, char *buf, size_t len);
/* A busy fraction as shown: "73%", "idle" for an idle node, "-" for NaN. */
void view_fmt_busy(double busy, int idle, char *buf, size_t len);
/* How a number reads against its thresholds (warn <= bad): PAL_OK under
 * warn, PAL_PENDING under bad, PAL_ALERT from bad on, PAL_DIM for NaN. */
enum palette_role view_grade(double v, double warn, double bad);
/* A count an engine reports (requests, slots, tokens): "12", "-" for NaN. */
void view_fmt_count(double n, char *buf, size_t len);
/* Sequences per step as shown: "1.0", "12.5", "64", or "-" for NaN. */
void view_fmt_batch(double batch, char *buf, size_t len);

/* ---- a run's requests charted against context, in view_curves.c ---- */

/* The points of leg `leg` in the rectangle r of w: tok/s (prefill and
 * decode) and the slowest node's step ms (prefill chunk and decode step),
 * each series on its own axis. scope ends the first chart's title. */
void view_curves_run(struct view_ctx *v, WINDOW *w, struct layout_rect r, const store_point *p,
                     size_t n, int leg, const char *scope);
/* Runs a (solid) and b (dashed), leg `leg` of each, on shared axes:
 * decode tok/s, prefill tok/s, decode step ms, as many as fit in r. */
void view_curves_compare(struct view_ctx *v, WINDOW *w, struct layout_rect r, const store_curve *a,
                         int64_t ida, const store_curve *b, int64_t idb, int leg,
                         const char *scope);

/* ---- quality beside speed, in view_quality.c ---- */

/* The legs' quality in r of w: a table (speed | KL, top-1, perplexity)
 * and, when r has the rows, a chart of the KL by depth bucket of the two
 * settings measured last that are not the reference. */
void view_quality(struct view_ctx *v, WINDOW *w, struct layout_rect r, const stress_quality_leg *q,
                  int n);

#endif
