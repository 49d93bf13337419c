/* view_config.c: prefill_step and kv_bits of every node, edited live.
 *
 * A row per node and a last row for all nodes. Keys edit a draft of the
 * selected row: Enter focuses the field (digits are then typed into it;
 * outside a field they switch views), +/- double or halve prefill_step or
 * step kv_bits, `a` sets auto, `b` cycles kv_bits; Enter again hands the
 * draft to the app as a set action and Esc drops it. What happens next is
 * the state's: the row says pending until the node acknowledges and its
 * telemetry shows the values, or shows the node's error as it came.
 *
 * Only inferd changes them live: another engine's node takes them by a
 * restart with a new start line, and its row's mode says "restart".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "draw.h"
#include "engine/proto/opt.h"
#include "tui/core/desired.h"
#include "tui/stress/console_runs.h"
#include "ui.h"
#include "view.h"

/* The values, their ranges and choices are the settings table's rows
 * (OPT_PREFILL_STEP, OPT_KV_BITS); only the editor's own steps are here. */
#define PREFILL_PLUS_MAX 8192 /* where +/- stop; typed values may go up to the row's limit */
#define TYPED_DIGITS 5        /* enough for PROTO_PREFILL_STEP_MAX */
#define KV_BITS_MAX 8         /* room for the row's choices */

/* Columns of the table, from the pane's left edge. */
enum {
    COL_NAME = 1,
    COL_STATE = 14,
    COL_PREFILL = 24,
    COL_EFFECTIVE = 38,
    COL_KV = 48,
    COL_MODE = 58,
    COL_STATUS = 67
};

static int all_row(const struct view_ctx *v)
{
    return v->cfg.row == v->n_nodes;
}

/* How a row's change is applied: live (inferd), by restart (any other
 * engine), or both for all nodes of a mixed cluster. */
struct apply_mode {
    const char *word, *note; /* the mode column; what the message after a send adds */
    enum palette_role role;
};

static const struct apply_mode mode_live = {"live", "", PAL_DIM};
static const struct apply_mode mode_restart = {"restart", " (applied by restarting the node)",
                                               PAL_PENDING};
static const struct apply_mode mode_mixed = {
    "mixed", " (live on inferd nodes, by a restart on the others)", PAL_PENDING};

static const struct apply_mode *row_mode(const struct view_ctx *v, int row)
{
    int live = 0, restart = 0;
    for (int i = row == v->n_nodes ? 0 : row; i < v->n_nodes; i++) {
        if (state_node_engine(v->st, i))
            restart++;
        else
            live++;
        if (row != v->n_nodes)
            break;
    }
    return live && restart ? &mode_mixed : restart ? &mode_restart : &mode_live;
}

static const char *row_name(const struct view_ctx *v, int row)
{
    return row == v->n_nodes ? "all nodes" : state_node_name(v->st, row);
}

/* The values in effect of a row; for all nodes, the first known ones,
 * with *mixed (1 prefill_step, 2 kv_bits) when the nodes that know differ. */
static void row_current(const struct view_ctx *v, int row, int *prefill, int *kv_bits, int *mixed)
{
    *prefill = -1;
    *kv_bits = 0;
    *mixed = 0;
    for (int i = row == v->n_nodes ? 0 : row; i < v->n_nodes; i++) {
        const struct state_config *c = state_node_config(v->st, i);
        if (c->prefill_step >= 0 && *prefill >= 0 && c->prefill_step != *prefill)
            *mixed |= 1;
        if (c->kv_bits > 0 && *kv_bits > 0 && c->kv_bits != *kv_bits)
            *mixed |= 2;
        if (*prefill < 0)
            *prefill = c->prefill_step;
        if (*kv_bits == 0)
            *kv_bits = c->kv_bits;
        if (row != v->n_nodes)
            break;
    }
}

/* ---- drawing ---- */

/* A node's change column: where the last change is, or, once it ended,
 * the settings the node lacks of those the operator set. */
static void draw_status(struct view_ctx *v, WINDOW *w, int y, int width, int node)
{
    const struct state_config *c = state_node_config(v->st, node);
    proto_set_args drift;
    if (c->stage != STATE_CFG_REQUESTED && c->stage != STATE_CFG_ACKED &&
        view_drift(v, node, &drift)) {
        char want[64];
        desired_describe(&drift, want, sizeof want);
        draw_textf(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_ERROR),
                   "drift: desired %s", want);
        return;
    }
    char want[64];
    desired_describe(&c->want, want, sizeof want);
    switch (c->stage) {
    case STATE_CFG_NONE:
        draw_text(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_DIM), "-");
        break;
    case STATE_CFG_REQUESTED:
        draw_textf(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_PENDING),
                   "pending %s (sent %.1fs ago)", want, v->now - c->t_requested);
        break;
    case STATE_CFG_ACKED:
        draw_textf(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_PENDING),
                   "pending %s (acknowledged)", want);
        break;
    case STATE_CFG_CONFIRMED:
        draw_textf(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_OK), "confirmed %s",
                   want);
        break;
    case STATE_CFG_FAILED:
        draw_textf(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_ERROR), "error: %s",
                   c->error);
        break;
    }
}

/* The all-nodes row's status: how many are where. */
static void draw_all_status(struct view_ctx *v, WINDOW *w, int y, int width)
{
    int n[STATE_CFG_FAILED + 1] = {0};
    for (int i = 0; i < v->n_nodes; i++)
        n[state_node_config(v->st, i)->stage]++;
    int pending = n[STATE_CFG_REQUESTED] + n[STATE_CFG_ACKED];
    enum palette_role r = n[STATE_CFG_FAILED] ? PAL_ERROR : pending ? PAL_PENDING : PAL_DIM;
    if (!pending && !n[STATE_CFG_FAILED] && !n[STATE_CFG_CONFIRMED])
        draw_text(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, PAL_DIM), "-");
    else
        draw_textf(w, v->g, y, COL_STATUS, width, palette_attr(v->pal, r),
                   "%d pending, %d confirmed, %d failed", pending, n[STATE_CFG_CONFIRMED],
                   n[STATE_CFG_FAILED]);
}

/* A value cell: the value in effect, or "old -> new" for a draft. */
static void draw_value(struct view_ctx *v, WINDOW *w, int y, int x, int width, const char *cur,
                       const char *draft, int selected)
{
    attr_t a = selected ? palette_attr(v->pal, PAL_SELECT) : A_NORMAL;
    if (!draft) {
        draw_text(w, v->g, y, x, width, a, cur);
        return;
    }
    draw_textf(w, v->g, y, x, width, a | palette_attr(v->pal, PAL_PENDING), "%s%s%s", cur,
               v->g->arrow, draft);
}

static void draw_row(struct view_ctx *v, WINDOW *w, int y, int row, int width)
{
    int sel = row == v->cfg.row, drafting = sel && v->cfg.editing;
    int prefill, kv_bits, mixed;
    char cur_p[16], cur_k[16], new_p[16], new_k[16];
    proto_set_args drift = {0};
    row_current(v, row, &prefill, &kv_bits, &mixed);
    if (row < v->n_nodes)
        view_drift(v, row, &drift);
    view_fmt_prefill(prefill, cur_p, sizeof cur_p);
    if (mixed & 1)
        snprintf(cur_p, sizeof cur_p, "mixed");
    else if (drift.has_prefill_step)
        snprintf(cur_p + strlen(cur_p), sizeof cur_p - strlen(cur_p), "*");
    if (mixed & 2)
        snprintf(cur_k, sizeof cur_k, "mixed");
    else if (kv_bits > 0)
        snprintf(cur_k, sizeof cur_k, "%d%s", kv_bits, drift.has_kv_bits ? "*" : "");
    else
        snprintf(cur_k, sizeof cur_k, "-");
    /* The focused field shows a cursor until it holds a value. */
    if (drafting && v->cfg.field == VIEW_CFG_PREFILL &&
        (v->cfg.typed[0] || !v->cfg.draft.has_prefill_step))
        snprintf(new_p, sizeof new_p, "%s_", v->cfg.typed);
    else
        view_fmt_prefill(v->cfg.draft.prefill_step, new_p, sizeof new_p);
    if (drafting && v->cfg.field == VIEW_CFG_KV_BITS &&
        (v->cfg.typed[0] || !v->cfg.draft.has_kv_bits))
        snprintf(new_k, sizeof new_k, "%s_", v->cfg.typed);
    else
        snprintf(new_k, sizeof new_k, "%d", v->cfg.draft.kv_bits);

    if (sel)
        draw_text(w, v->g, y, 0, 1, palette_attr(v->pal, PAL_SELECT), v->g->select);
    draw_text(w, v->g, y, COL_NAME, COL_STATE - COL_NAME - 1, A_BOLD, row_name(v, row));
    if (row < v->n_nodes) {
        enum state_live l = state_node_live(v->st, row, v->now);
        draw_text(w, v->g, y, COL_STATE, COL_PREFILL - COL_STATE - 1,
                  palette_attr(v->pal, view_live_role(l)), view_live_word(l));
        int eff = state_node_config(v->st, row)->prefill_effective;
        char eff_s[16];
        view_fmt_prefill(eff > 0 ? eff : -1, eff_s, sizeof eff_s);
        draw_text(w, v->g, y, COL_EFFECTIVE, COL_KV - COL_EFFECTIVE - 1, A_NORMAL, eff_s);
    } else {
        int up = 0;
        for (int i = 0; i < v->n_nodes; i++)
            up += state_node_live(v->st, i, v->now) == STATE_UP;
        draw_textf(w, v->g, y, COL_STATE, COL_PREFILL - COL_STATE - 1, A_NORMAL, "%d/%d up", up,
                   v->n_nodes);
    }
    draw_value(v, w, y, COL_PREFILL, COL_EFFECTIVE - COL_PREFILL - 1, cur_p,
               drafting && v->cfg.draft.has_prefill_step ? new_p : NULL,
               sel && v->cfg.field == VIEW_CFG_PREFILL);
    const struct apply_mode *mode = row_mode(v, row);
    draw_text(w, v->g, y, COL_MODE, COL_STATUS - COL_MODE - 1, palette_attr(v->pal, mode->role),
              mode->word);
    draw_value(v, w, y, COL_KV, COL_MODE - COL_KV - 1, cur_k,
               drafting && v->cfg.draft.has_kv_bits ? new_k : NULL,
               sel && v->cfg.field == VIEW_CFG_KV_BITS);
    if (row < v->n_nodes)
        draw_status(v, w, y, width - COL_STATUS, row);
    else
        draw_all_status(v, w, y, width - COL_STATUS);
}

static void draw_table(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_CONFIG_TABLE];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_CONFIG_TABLE];
    static const struct {
        int x;
        const char *title;
    } cols[] = {{COL_NAME, "node"},          {COL_STATE, "state"}, {COL_PREFILL, "prefill_step"},
                {COL_EFFECTIVE, "in steps"}, {COL_KV, "kv_bits"},  {COL_MODE, "mode"},
                {COL_STATUS, "change"}};
    if (!w)
        return;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        draw_text(w, v->g, 0, cols[i].x, p->w - cols[i].x, palette_attr(v->pal, PAL_TITLE),
                  cols[i].title);
    int rows = p->h - 1;
    view_scroll_to(v->cfg.row, rows, &v->cfg.top);
    for (int i = 0; i < rows && v->cfg.top + i <= v->n_nodes; i++)
        draw_row(v, w, 1 + i, v->cfg.top + i, p->w);
}

/* While kv_bits is edited: what the target setting cost in quality the
 * last time it was measured on this model, from the history (a lookup
 * when the setting changes, kept until the next). */
static int draw_quality(struct view_ctx *v, WINDOW *w, int y, int width)
{
    if (!v->cfg.editing || !v->cfg.draft.has_kv_bits || !v->opt->runs)
        return 0;
    struct state_cluster_view cv;
    state_cluster_view(v->st, v->now, &cv);
    int kv = v->cfg.draft.kv_bits;
    const store_quality *q =
        cv.model && cv.model[0] ? console_runs_quality_last(v->opt->runs, cv.model, kv) : NULL;
    if (!q) {
        draw_textf(w, v->g, y, 0, width, palette_attr(v->pal, PAL_DIM),
                   "kv_bits %d: no quality measured on %s yet (infertop stress quality)", kv,
                   cv.model && cv.model[0] ? cv.model : "this model");
        return 1;
    }
    char when[32];
    time_t t = (time_t)q->t;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime_r(&t, &tm));
    /* A top-k estimate (an inferd node measured over HTTP) has no perplexity. */
    char est[64] = "";
    if (q->topk > 0)
        store_fmt_estimate(q->topk, est, sizeof est);
    else
        snprintf(est, sizeof est, "ppl %.2f vs %.2f", q->ppl_test, q->ppl_ref);
    draw_textf(w, v->g, y, 0, width, palette_attr(v->pal, PAL_TITLE),
               "kv_bits %d on %s: KL mean %.3g (p99 %.3g) nats, top-1 %.3f, %s; run %lld, %s", kv,
               q->model, q->kl_mean, q->kl_p99, q->top1, est, (long long)q->run, when);
    return 1;
}

static void draw_edit(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_CONFIG_EDIT];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_CONFIG_EDIT];
    char want[64];
    if (!w)
        return;
    draw_repeat(w, 0, 0, p->w, palette_attr(v->pal, PAL_DIM), v->g->hline);
    if (v->cfg.editing) {
        desired_describe(&v->cfg.draft, want, sizeof want);
        draw_textf(w, v->g, 1, 0, p->w, palette_attr(v->pal, PAL_PENDING), "%s: %s%s",
                   row_name(v, v->cfg.row), want[0] ? want : "type digits, or + - a b",
                   "   Enter: apply   Esc: cancel");
    } else if (!all_row(v)) {
        const struct state_config *c = state_node_config(v->st, v->cfg.row);
        if (c->stage == STATE_CFG_FAILED)
            draw_textf(w, v->g, 1, 0, p->w, palette_attr(v->pal, PAL_ERROR), "%s: %s",
                       row_name(v, v->cfg.row), c->error);
        else if (c->stage == STATE_CFG_REQUESTED || c->stage == STATE_CFG_ACKED) {
            desired_describe(&c->want, want, sizeof want);
            draw_textf(w, v->g, 1, 0, p->w, palette_attr(v->pal, PAL_PENDING), "%s: %s pending, %s",
                       row_name(v, v->cfg.row), want,
                       c->stage == STATE_CFG_REQUESTED
                           ? "waiting for the node to answer"
                           : "acknowledged, waiting for telemetry to show it");
        } else if (c->stage == STATE_CFG_CONFIRMED)
            draw_textf(w, v->g, 1, 0, p->w, palette_attr(v->pal, PAL_OK),
                       "%s: confirmed by telemetry %.1fs after the request",
                       row_name(v, v->cfg.row), c->t_confirmed - c->t_requested);
    }
    if (draw_quality(v, w, 2, p->w))
        return;
    if (v->opt->readonly)
        draw_text(w, v->g, 2, 0, p->w, palette_attr(v->pal, PAL_DIM),
                  "read-only (--readonly): config changes are disabled");
    else {
        char prefill[64], bits[64];
        opt_range(OPT_PREFILL_STEP, prefill, sizeof prefill);
        opt_range(OPT_KV_BITS, bits, sizeof bits);
        draw_textf(w, v->g, 2, 0, p->w, palette_attr(v->pal, PAL_DIM),
                   "prefill_step %s: digits, +/- x2 /2, a auto   kv_bits %s: b, +/-", prefill,
                   bits);
    }
}

static void config_draw(struct view_ctx *v)
{
    if (v->cfg.row > v->n_nodes)
        v->cfg.row = v->n_nodes;
    draw_table(v);
    draw_edit(v);
}

/* ---- editing ---- */

static void begin_edit(struct view_ctx *v)
{
    int prefill, kv_bits, mixed;
    if (v->cfg.editing)
        return;
    row_current(v, v->cfg.row, &prefill, &kv_bits, &mixed);
    memset(&v->cfg.draft, 0, sizeof v->cfg.draft);
    v->cfg.draft.prefill_step = prefill;
    v->cfg.draft.kv_bits = kv_bits;
    v->cfg.typed[0] = '\0';
    v->cfg.editing = 1;
}

static void cancel_edit(struct view_ctx *v)
{
    v->cfg.editing = 0;
    v->cfg.typed[0] = '\0';
}

/* +/- on prefill_step: double or halve, from the size steps use when the
 * setting is auto or unknown, else from the row's default. */
static void step_prefill(struct view_ctx *v, int up)
{
    const opt_def *d = &opt_defs[OPT_PREFILL_STEP];
    int p = v->cfg.draft.prefill_step;
    if (p <= 0 && !all_row(v))
        p = state_node_config(v->st, v->cfg.row)->prefill_effective;
    if (p <= 0) {
        opt_value def = {0};
        char why[128];
        p = opt_check_text(OPT_PREFILL_STEP, d->def, &def, why, sizeof why) == 0 ? (int)def.i
                                                                                 : (int)d->lo;
    } else {
        p = up ? p * 2 : p / 2;
    }
    if (p < (int)d->lo)
        p = (int)d->lo;
    if (p > PREFILL_PLUS_MAX)
        p = PREFILL_PLUS_MAX;
    v->cfg.draft.prefill_step = p;
    v->cfg.draft.has_prefill_step = 1;
}

/* delta +1 toward more bits, -1 toward fewer (the row lists them from
 * most to fewest); 0 cycles down and wraps. */
static void step_kv_bits(struct view_ctx *v, int delta)
{
    unsigned long long all[KV_BITS_MAX];
    int n = opt_choices(OPT_KV_BITS, all, KV_BITS_MAX), i = 0;
    while (i < n && all[i] != (unsigned long long)v->cfg.draft.kv_bits)
        i++;
    if (i == n)
        i = 0;
    else if (delta == 0)
        i = (i + 1) % n;
    else
        i = delta > 0 ? (i > 0 ? i - 1 : 0) : (i + 1 < n ? i + 1 : i);
    v->cfg.draft.kv_bits = (int)all[i];
    v->cfg.draft.has_kv_bits = 1;
}

/* Digits go into the selected field; the field's value follows them. */
static void type_digit(struct view_ctx *v, int key)
{
    size_t n = strlen(v->cfg.typed);
    if (n >= TYPED_DIGITS)
        return;
    v->cfg.typed[n] = (char)key;
    v->cfg.typed[n + 1] = '\0';
    int val = atoi(v->cfg.typed);
    if (v->cfg.field == VIEW_CFG_PREFILL) {
        v->cfg.draft.prefill_step = val;
        v->cfg.draft.has_prefill_step = 1;
    } else {
        v->cfg.draft.kv_bits = val;
        v->cfg.draft.has_kv_bits = 1;
    }
}

static void backspace(struct view_ctx *v)
{
    size_t n = strlen(v->cfg.typed);
    if (n == 0)
        return;
    v->cfg.typed[n - 1] = '\0';
    int val = atoi(v->cfg.typed);
    if (v->cfg.field == VIEW_CFG_PREFILL) {
        v->cfg.draft.prefill_step = val;
        v->cfg.draft.has_prefill_step = n > 1;
    } else {
        v->cfg.draft.kv_bits = val;
        v->cfg.draft.has_kv_bits = n > 1;
    }
}

/* A drafted value as the row reads it; -1 with the message shown when the
 * row refuses it. */
static int check_field(struct view_ctx *v, opt_id id, int value)
{
    opt_value val = {.i = (unsigned long long)value}, got = {0};
    char text[32], range[64], why[256];
    opt_format(id, &val, text, sizeof text);
    if (value >= 0 && opt_check_text(id, text, &got, why, sizeof why) == 0)
        return 0;
    opt_range(id, range, sizeof range);
    view_message(v, 1, "%s %d is not valid: %s", opt_defs[id].wire, value, range);
    return -1;
}

static void apply_edit(struct view_ctx *v)
{
    const proto_set_args *d = &v->cfg.draft;
    char what[64];
    if (!v->cfg.editing || (!d->has_prefill_step && !d->has_kv_bits)) {
        view_message(v, 0, "nothing to apply: type a value, +/-, a or b first");
        return;
    }
    if ((d->has_prefill_step && check_field(v, OPT_PREFILL_STEP, d->prefill_step) != 0) ||
        (d->has_kv_bits && check_field(v, OPT_KV_BITS, d->kv_bits) != 0))
        return;
    struct action a = {
        .kind = ACT_SET_CONFIG, .node = all_row(v) ? ACT_ALL_NODES : v->cfg.row, .set = *d};
    view_emit(v, &a);
    desired_describe(d, what, sizeof what);
    view_message(v, 0, "sent to %s: %s%s", row_name(v, v->cfg.row), what,
                 row_mode(v, v->cfg.row)->note);
    cancel_edit(v);
}

enum { C_LEFT, C_RIGHT, C_ENTER, C_CANCEL, C_BACKSPACE, C_PLUS, C_MINUS, C_AUTO, C_BITS };

static const struct view_key config_keys[] = {
    {{0}, "j/k", "row", "choose a node, or all nodes (the last row)", -1},
    {{KEY_LEFT, 'h'}, "h/l", "field", "prefill_step or kv_bits", C_LEFT},
    {{KEY_RIGHT, 'l'}, "", NULL, NULL, C_RIGHT},
    {{'\n', '\r', KEY_ENTER},
     "Enter",
     "edit/apply",
     "edit the field (digits are then typed); again: apply the change",
     C_ENTER},
    {{27}, "Esc", "cancel", "drop the change and leave the field", C_CANCEL},
    {{0}, "0-9", NULL, "in a field: prefill_step or kv_bits; Backspace erases", -1},
    {{KEY_BACKSPACE, 127, 8}, "", NULL, NULL, C_BACKSPACE},
    {{'+', '='}, "+ -", "step", "prefill_step x2 or /2; kv_bits up/down", C_PLUS},
    {{'-'}, "", NULL, NULL, C_MINUS},
    {{'a'}, "a", NULL, "prefill_step auto", C_AUTO},
    {{'b'}, "b", NULL, "cycle kv_bits", C_BITS},
};
static const struct view_keys config_table = KEYS_TABLE("Config", config_keys);

/* A key that changes the draft: the field takes focus first. */
static void edit_step(struct view_ctx *v, int cmd)
{
    begin_edit(v);
    v->cfg.typed[0] = '\0';
    if (cmd == C_AUTO) {
        v->cfg.field = VIEW_CFG_PREFILL;
        v->cfg.draft.prefill_step = PROTO_PREFILL_AUTO;
        v->cfg.draft.has_prefill_step = 1;
    } else if (cmd == C_BITS) {
        v->cfg.field = VIEW_CFG_KV_BITS;
        step_kv_bits(v, 0);
    } else if (v->cfg.field == VIEW_CFG_PREFILL) {
        step_prefill(v, cmd == C_PLUS);
    } else {
        step_kv_bits(v, cmd == C_MINUS ? -1 : 1);
    }
}

static int config_key(struct view_ctx *v, int key)
{
    const struct layout_rect *p = &v->lay->pane[LAYOUT_CONFIG_TABLE];
    int to = view_move(key, v->cfg.row, v->n_nodes + 1, p->h - 1);
    if (to >= 0) {
        if (to != v->cfg.row)
            cancel_edit(v);
        v->cfg.row = to;
        if (to < v->n_nodes)
            v->node = to;
        return 1;
    }
    if (v->cfg.editing && key >= '0' && key <= '9') {
        type_digit(v, key);
        return 1;
    }
    int cmd = keys_cmd(&config_table, key);
    switch (cmd) {
    case C_LEFT:
    case C_RIGHT:
        v->cfg.field = cmd == C_LEFT ? VIEW_CFG_PREFILL : VIEW_CFG_KV_BITS;
        v->cfg.typed[0] = '\0';
        return 1;
    case C_CANCEL:
        cancel_edit(v);
        return 1;
    case C_BACKSPACE:
        backspace(v);
        return 1;
    case C_ENTER:
        if (v->cfg.editing)
            apply_edit(v);
        else if (!view_refuse_readonly(v, "config changes"))
            begin_edit(v);
        return 1;
    case C_PLUS:
    case C_MINUS:
    case C_AUTO:
    case C_BITS:
        if (!view_refuse_readonly(v, "config changes"))
            edit_step(v, cmd);
        return 1;
    }
    return 0;
}

static int config_click(struct view_ctx *v, int y, int x)
{
    const struct layout_rect *p = &v->lay->pane[LAYOUT_CONFIG_TABLE];
    int row = v->cfg.top + y - p->y - 1;
    if (x < p->x || y <= p->y || y >= p->y + p->h || row > v->n_nodes)
        return 0;
    if (row != v->cfg.row)
        cancel_edit(v);
    v->cfg.row = row;
    if (row < v->n_nodes)
        v->node = row;
    if (x - p->x >= COL_KV && x - p->x < COL_MODE)
        v->cfg.field = VIEW_CFG_KV_BITS;
    else if (x - p->x >= COL_PREFILL && x - p->x < COL_EFFECTIVE)
        v->cfg.field = VIEW_CFG_PREFILL;
    return 1;
}

const struct ui_view view_config = {
    .name = "Config",
    .layout = LAYOUT_CONFIG,
    .draw = config_draw,
    .key = config_key,
    .click = config_click,
    .keys = &config_table,
};
