/* view_plan.c: the Plan view. The target context and kv_bits are fields
 * the operator edits; the plan (tui/plan) is drawn again from the state
 * at every frame: a row per node with the memory bar of its current and
 * its planned layout against its budget, the largest context each layout
 * supports, and the progress of an apply. `a` applies, once confirmed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "engine/proto/opt.h"
#include "meter.h"
#include "tui/core/cluster.h"
#include "tui/plan/plan_job.h"
#include "tui/ssh/remote.h"
#include "ui.h"
#include "view.h"

#define NAME_COLS 17  /* the node's name, its budget, a blank */
#define BUDGET_COLS 6 /* the budget, right-aligned before the blank */
#define LAYERS_COLS 8
#define CTX_COLS 12
#define CTX_DEFAULT 4096

#define KV_BITS_MAX 8 /* room for the choices of kv_bits' row */

/* ---- the plan, from what the console knows ---- */

/* Node i as the planner sees it: its last status while it is up, its
 * facts if the node view fetched them (what the CLI asks for itself). */
static void seen_of(const struct view_ctx *v, int i, plan_seen *s)
{
    memset(s, 0, sizeof *s);
    struct state_node_view nv;
    state_node_view(v->st, i, v->now, &nv);
    const proto_status *st = state_node_status(v->st, i);
    if (st && (nv.live == STATE_UP || nv.live == STATE_STALE)) {
        s->up = 1;
        s->status = *st;
    }
    const char *why;
    int failed;
    const nodectl_facts *f = v->opt->remote ? remote_facts(v->opt->remote, i, &why, &failed) : NULL;
    if (f) {
        s->has_facts = 1;
        s->facts = *f;
    }
}

static int plan_from_state(struct view_ctx *v, plan_seen *seen)
{
    struct view_plan_pos *p = &v->plan;
    const struct cluster *c = v->opt->cluster;
    int any_up = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        seen_of(v, i, &seen[i]);
        any_up |= seen[i].up;
    }
    /* The nodes' own kv_bits is the default, once one of them has said. */
    if (!p->kv_bits && any_up)
        p->kv_bits = plan_pick_kv_bits(c, seen);
    p->in.kv_bits = p->kv_bits ? p->kv_bits : plan_pick_kv_bits(c, seen);
    if (plan_pick_model(c, seen, NULL, &p->model, p->why, sizeof p->why) != 0) {
        p->model.spec[0] = '\0';
        return -1;
    }
    if (!p->ctx)
        p->ctx = CTX_DEFAULT;
    p->in.model = &p->model;
    p->in.ctx = p->ctx;
    p->in.margin_pct = (int)opt_default_int(OPT_PLAN_MARGIN);
    if (plan_fill_nodes(c, seen, &p->in, p->from, p->why, sizeof p->why) != 0)
        return -1;
    return plan_compute(&p->in, &p->result, p->why, sizeof p->why);
}

static void compute(struct view_ctx *v)
{
    struct view_plan_pos *p = &v->plan;
    const struct cluster *c = v->opt->cluster;
    p->ok = 0;
    if (!c) {
        snprintf(p->why, sizeof p->why, "no cluster file: the plan needs the nodes' memory");
        return;
    }
    if (c->n_nodes > PLAN_NODES_MAX) {
        snprintf(p->why, sizeof p->why, "%d nodes: the planner takes up to %d", c->n_nodes,
                 PLAN_NODES_MAX);
        return;
    }
    plan_seen *seen = calloc((size_t)c->n_nodes, sizeof *seen);
    if (!seen) {
        snprintf(p->why, sizeof p->why, "out of memory");
        return;
    }
    p->ok = plan_from_state(v, seen) == 0;
    free(seen);
}

/* ---- drawing ---- */

static void draw_field(struct view_ctx *v, WINDOW *w, int *x, const char *label,
                       enum view_plan_field f, const char *value)
{
    const struct view_plan_pos *p = &v->plan;
    int width = getmaxx(w);
    *x += draw_text(w, v->g, 0, *x, width - *x, palette_attr(v->pal, PAL_DIM), label) + 1;
    char shown[32];
    if (p->editing && p->field == f)
        snprintf(shown, sizeof shown, "[%s_]", p->typed);
    else
        snprintf(shown, sizeof shown, "[%s]", value);
    attr_t a = p->field == f ? palette_attr(v->pal, PAL_SELECT) : A_BOLD;
    *x += draw_text(w, v->g, 0, *x, width - *x, a, shown) + 3;
}

static void draw_form(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_PLAN_FORM];
    const struct view_plan_pos *p = &v->plan;
    if (!w)
        return;
    int width = getmaxx(w), x = 0;
    char ctx[24], bits[8];
    snprintf(ctx, sizeof ctx, "%d", p->ctx);
    snprintf(bits, sizeof bits, "%d", p->in.kv_bits);
    draw_field(v, w, &x, "target context", VIEW_PLAN_CTX, ctx);
    draw_field(v, w, &x, "kv_bits", VIEW_PLAN_KV_BITS, bits);
    if (p->model.spec[0])
        draw_textf(w, v->g, 0, x, width - x, palette_attr(v->pal, PAL_DIM), "model %s",
                   p->model.spec);
    if (!p->ok) {
        draw_text(w, v->g, 1, 0, width, palette_attr(v->pal, PAL_ERROR), p->why);
        return;
    }
    const plan_result *r = &p->result;
    const plan_layout *l = &r->planned;
    if (r->feasible) {
        draw_textf(w, v->g, 1, 0, width, palette_attr(v->pal, PAL_OK),
                   "the plan fits context %d at kv_bits %d on every node: %s", p->ctx,
                   p->in.kv_bits, r->change ? "a change" : "no change");
        draw_text(w, v->g, 2, 0, width, palette_attr(v->pal, PAL_DIM), r->why);
        return;
    }
    char shortfall[16];
    meter_fmt_bytes((uint64_t)-l->st[l->short_node].headroom, shortfall, sizeof shortfall);
    draw_textf(w, v->g, 1, 0, width, palette_attr(v->pal, PAL_ERROR),
               "no layout fits context %d at kv_bits %d: %s is short by %s even in the best one",
               p->ctx, p->in.kv_bits, p->in.nodes[l->short_node].name, shortfall);
}

/* One layout's range and memory bar for node i, in width columns at x. */
static void draw_stage(struct view_ctx *v, WINDOW *w, int y, int x, int width, const plan_layout *l,
                       int i)
{
    if (!l->known) {
        draw_text(w, v->g, y, x, width, palette_attr(v->pal, PAL_DIM), "-");
        return;
    }
    const plan_stage *s = &l->st[i];
    uint64_t budget = v->plan.in.nodes[i].budget;
    draw_textf(w, v->g, y, x, LAYERS_COLS, A_NORMAL, "%d:%d", s->first, s->last);
    struct state_memory m = {
        .budget = budget,
        .weights = s->weights,
        .kv = s->kv,
        .other = s->reserve + s->scratch + s->runtime,
        .headroom = s->headroom > 0 ? (uint64_t)s->headroom : 0,
        .headroom_signed = s->headroom,
        .known = 1,
    };
    double low_pct = alerts_settings(state_alerts(v->st))->headroom_pct;
    int low = s->headroom >= 0 && (double)s->headroom < low_pct / 100 * (double)budget;
    draw_membar(w, v->g, v->pal, y, x + LAYERS_COLS, width - LAYERS_COLS, &m, low);
}

static void draw_legend(struct view_ctx *v, WINDOW *w, int y)
{
    static const char *const words[GLYPHS_MEM_COUNT] = {"weights", "KV at target",
                                                        "reserve+scratch+runtime", "free"};
    static const enum palette_role role[GLYPHS_MEM_COUNT] = {PAL_WEIGHTS, PAL_KV, PAL_OTHER,
                                                             PAL_HEADROOM};
    int x = 0, width = getmaxx(w);
    for (int k = 0; k < GLYPHS_MEM_COUNT && x < width; k++) {
        draw_repeat(w, y, x, 2, palette_attr(v->pal, role[k]), v->g->mem[k]);
        x += 3;
        x += draw_text(w, v->g, y, x, width - x, palette_attr(v->pal, PAL_DIM), words[k]) + 2;
    }
}

static void draw_bars(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_PLAN_BARS];
    const struct view_plan_pos *p = &v->plan;
    if (!w)
        return;
    int width = getmaxx(w), rows = getmaxy(w);
    int half = (width - NAME_COLS) / 2;
    attr_t title = palette_attr(v->pal, PAL_TITLE);
    draw_text(w, v->g, 0, 0, NAME_COLS - BUDGET_COLS - 1, title, "node");
    draw_rjust(w, v->g, 0, NAME_COLS - BUDGET_COLS - 1, BUDGET_COLS, title, "budget");
    if (!p->ok)
        return;
    const plan_result *r = &p->result;
    draw_textf(w, v->g, 0, NAME_COLS, half - 1, title, "current layout%s",
               !r->current.known ? ": unknown"
               : r->current.fits ? ": fits"
                                 : ": does not fit");
    draw_text(w, v->g, 0, NAME_COLS + half, half, title, "planned layout");
    int n = p->in.n_nodes < rows - 2 ? p->in.n_nodes : rows - 2;
    for (int i = 0; i < n; i++) {
        char budget[16];
        meter_fmt_bytes(p->in.nodes[i].budget, budget, sizeof budget);
        draw_text(w, v->g, 1 + i, 0, NAME_COLS - BUDGET_COLS - 2, A_NORMAL, p->in.nodes[i].name);
        draw_rjust(w, v->g, 1 + i, NAME_COLS - BUDGET_COLS - 1, BUDGET_COLS,
                   palette_attr(v->pal, p->from[i] == PLAN_FROM_STATUS ? PAL_TEXT : PAL_DIM),
                   budget);
        draw_stage(v, w, 1 + i, NAME_COLS, half - 1, &r->current, i);
        draw_stage(v, w, 1 + i, NAME_COLS + half, half, &r->planned, i);
    }
    draw_legend(v, w, rows - 1);
}

static void ctx_cell(char *buf, size_t len, int known, int ctx)
{
    if (!known)
        snprintf(buf, len, "-");
    else if (ctx >= OPT_PLAN_CTX_MAX) {
        char max[16];
        meter_fmt_num(OPT_PLAN_CTX_MAX, max, sizeof max);
        snprintf(buf, len, ">=%s", max);
    } else {
        meter_fmt_num(ctx, buf, len);
    }
}

static void ctx_row(struct view_ctx *v, WINDOW *w, int y, const char *what, int known,
                    const int *max_ctx)
{
    int width = getmaxx(w);
    draw_text(w, v->g, y, 0, 22, A_NORMAL, what);
    for (int b = 0; b < PLAN_N_BITS; b++) {
        char cell[24];
        ctx_cell(cell, sizeof cell, known, max_ctx[b]);
        draw_rjust(w, v->g, y, 22 + b * CTX_COLS, CTX_COLS < width ? CTX_COLS : width, A_NORMAL,
                   cell);
    }
}

/* The apply's lines, oldest first, in the rows from y down. */
static void draw_progress(struct view_ctx *v, WINDOW *w, int y)
{
    int width = getmaxx(w), rows = getmaxy(w) - y;
    const char *state = !v->opt->plan ? "not available here (no SSH driver)"
                        : plan_job_running(v->opt->plan)
                            ? "running: every node restarts"
                            : "a applies the planned layout (asks y/n)";
    draw_textf(w, v->g, y, 0, width, palette_attr(v->pal, PAL_TITLE), "apply: %s", state);
    if (rows < 2)
        return;
    const struct state_event *ev[64];
    struct state_event_filter f = {.node = -1, .kind = "plan", .text = NULL};
    int n = state_events(v->st, &f, 0, rows - 1 < 64 ? rows - 1 : 64, ev);
    for (int i = 0; i < n; i++)
        view_event_line(v, w, y + 1 + i, width, ev[n - 1 - i]);
}

static void draw_info(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_PLAN_INFO];
    const struct view_plan_pos *p = &v->plan;
    if (!w)
        return;
    int y = 0;
    if (p->ok) {
        const plan_result *r = &p->result;
        draw_text(w, v->g, y, 0, 22, palette_attr(v->pal, PAL_TITLE), "max context");
        static const char *const bits[PLAN_N_BITS] = {"kv_bits 16", "8", "4"};
        for (int b = 0; b < PLAN_N_BITS; b++)
            draw_rjust(w, v->g, y, 22 + b * CTX_COLS, CTX_COLS, palette_attr(v->pal, PAL_TITLE),
                       bits[b]);
        ctx_row(v, w, ++y, "current layout", r->current.known, r->current.max_ctx);
        ctx_row(v, w, ++y, "planned layout", 1, r->planned.max_ctx);
        ctx_row(v, w, ++y, "any layout", 1, r->best_ctx);
        y += 2;
    }
    draw_progress(v, w, y);
}

static void plan_draw(struct view_ctx *v)
{
    compute(v);
    draw_form(v);
    draw_bars(v);
    draw_info(v);
}

/* ---- keys ---- */

static void ask_apply(struct view_ctx *v)
{
    const struct view_plan_pos *p = &v->plan;
    if (view_refuse_readonly(v, "plan applies"))
        return;
    if (!v->opt->plan) {
        view_message(v, 1, "applying is not available here: it restarts nodes over SSH");
        return;
    }
    if (plan_job_running(v->opt->plan)) {
        view_message(v, 0, "a plan is being applied: its progress is below");
        return;
    }
    if (!p->ok || !p->result.feasible) {
        view_message(v, 1, "nothing to apply: %s", p->ok ? "no layout fits the target" : p->why);
        return;
    }
    if (!p->result.change) {
        view_message(v, 0, "nothing to apply: %s", p->result.why);
        return;
    }
    int first[PLAN_NODES_MAX], last[PLAN_NODES_MAX];
    char ranges[VIEW_MESSAGE_MAX] = "";
    for (int i = 0; i < p->in.n_nodes; i++) {
        first[i] = p->result.planned.st[i].first;
        last[i] = p->result.planned.st[i].last;
        size_t used = strlen(ranges);
        snprintf(ranges + used, sizeof ranges - used, "%s%s %d:%d", i ? ", " : "",
                 p->in.nodes[i].name, first[i], last[i]);
    }
    plan_job_propose(v->opt->plan, first, last, p->in.n_nodes);
    struct action a = {.kind = ACT_PLAN_APPLY, .node = ACT_ALL_NODES};
    view_ask(v, &a, "apply %.150s, restarting every node over SSH?", ranges);
}

static void set_ctx(struct view_ctx *v, long long ctx)
{
    if (ctx < 1 || ctx > OPT_PLAN_CTX_MAX) {
        view_message(v, 1, "target context %lld: expected 1 to %d", ctx, OPT_PLAN_CTX_MAX);
        return;
    }
    v->plan.ctx = (int)ctx;
}

static void edit_key(struct view_ctx *v, int key)
{
    struct view_plan_pos *p = &v->plan;
    int end = view_type_key(p->typed, sizeof p->typed, key, 1);
    if (end)
        p->editing = 0;
    if (end > 0 && p->typed[0])
        set_ctx(v, atoll(p->typed));
}

/* kv_bits one step along its row's choices (dir 1) or back (dir -1),
 * around. */
static void cycle_bits(struct view_plan_pos *p, int dir)
{
    unsigned long long all[KV_BITS_MAX];
    int n = opt_choices(OPT_KV_BITS, all, KV_BITS_MAX), i = 0;
    unsigned long long bits = (unsigned long long)(p->kv_bits ? p->kv_bits : p->in.kv_bits);
    while (i < n && all[i] != bits)
        i++;
    p->kv_bits = (int)all[((i < n ? i : 0) + dir + n) % n];
}

enum { P_APPLY, P_ENTER, P_PLUS, P_MINUS };

static const struct view_key plan_keys[] = {
    {{0}, "j/k", "field", "choose target context or kv_bits", -1},
    {{'\n', '\r', KEY_ENTER},
     "Enter",
     "edit",
     "type the context (digits; Enter sets it, Esc leaves); cycle kv_bits",
     P_ENTER},
    {{'+', '='}, "+/-", "x2 /2", "target context x2 or /2; kv_bits up/down", P_PLUS},
    {{'-'}, "", NULL, NULL, P_MINUS},
    {{'a'}, "a", "apply", "apply the plan: restart every node over SSH (asks y/n)", P_APPLY},
    {{0}, "bars", NULL, "weights, KV at target, reserve+scratch+runtime, free", -1},
};
static const struct view_keys plan_table = KEYS_TABLE("Plan", plan_keys);

static int plan_key(struct view_ctx *v, int key)
{
    struct view_plan_pos *p = &v->plan;
    if (p->editing) {
        edit_key(v, key);
        return 1;
    }
    int ctx_field = p->field == VIEW_PLAN_CTX;
    switch (keys_cmd(&plan_table, key)) {
    case P_APPLY:
        ask_apply(v);
        return 1;
    case P_ENTER:
        if (ctx_field) {
            p->editing = 1;
            p->typed[0] = '\0';
        } else {
            cycle_bits(p, 1);
        }
        return 1;
    case P_PLUS:
    case P_MINUS:
        if (ctx_field)
            set_ctx(v, key == '-' ? p->ctx / 2 : 2LL * p->ctx);
        else
            cycle_bits(p, key == '-' ? 1 : -1);
        return 1;
    }
    int to = view_move(key, p->field, VIEW_PLAN_FIELDS, VIEW_PLAN_FIELDS);
    if (to < 0)
        return 0;
    p->field = (enum view_plan_field)to;
    return 1;
}

const struct ui_view view_plan = {
    .name = "Plan",
    .layout = LAYOUT_PLAN,
    .draw = plan_draw,
    .key = plan_key,
    .click = NULL,
    .keys = &plan_table,
};
