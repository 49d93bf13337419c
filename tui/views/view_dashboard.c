/* view_dashboard.c: a row per node and the newest events.
 *
 * The cells that explain a highlight are drawn in the alert style (eval ms
 * for an orchestration-bound node, the headroom figure when low, the
 * name for bad activations, a different model or any alert of alerts.h,
 * the requests for a growing queue, the KV use when over 90%), and the
 * events pane's title lists the reasons in words, so they show without
 * colour too.
 *
 * The rows can be filtered (`/`, a substring of the name, engine or
 * state) and sorted by any column (`<` `>` F6, `I` reverses; the title
 * is marked); the selection is a node, so it follows its row.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "meter.h"
#include "rows.h"
#include "view.h"

enum { D_DETAIL, D_FILTER, D_CLEAR, D_SORT_PREV, D_SORT_NEXT, D_REVERSE, D_RAW };

static const struct view_key dashboard_keys[] = {
    {{0}, "j/k", "select", "select a node (its row follows it when sorted)", -1},
    {{'\n', '\r', KEY_ENTER}, "Enter", "detail", "the selected node's detail", D_DETAIL},
    {{'/'}, "/", "filter", "filter by name, engine or state; Enter keeps, Esc clears", D_FILTER},
    {{27}, "Esc", NULL, "clear the filter", D_CLEAR},
    {{'<'},
     "< >",
     "sort",
     "sort by the previous / next column (F6 too); title marked",
     D_SORT_PREV},
    {{'>', KEY_F(6)}, "", NULL, NULL, D_SORT_NEXT},
    {{'I'}, "I", NULL, "reverse the sort", D_REVERSE},
    {{'y'}, "y", "raw", "the selected node's raw status: its last heartbeat or poll", D_RAW},
    {{0}, "S X R", NULL, "start / stop / restart the selected node (X, R ask y/n)", -1},
};
static const struct view_keys dashboard_table = KEYS_TABLE("Dashboard", dashboard_keys);

/* The sparkline's peak before it ("12.3" and a blank), when the column is
 * this wide. */
#define SPARK_SCALE_COLS 6
#define SPARK_SCALE_MIN_COLS 14

static int cfg_pending(const struct state_config *c)
{
    return c->stage == STATE_CFG_REQUESTED || c->stage == STATE_CFG_ACKED;
}

/* Numbers are right-aligned, and so are their titles. */
static int right_aligned(enum layout_col c)
{
    switch (c) {
    case LAYOUT_COL_STEPS:
    case LAYOUT_COL_MODEL:
    case LAYOUT_COL_EVAL:
    case LAYOUT_COL_KV_BITS:
    case LAYOUT_COL_PREFILL:
    case LAYOUT_COL_BUSY:
    case LAYOUT_COL_BATCH:
    case LAYOUT_COL_TPS:
    case LAYOUT_COL_REQS:
    case LAYOUT_COL_KV_USE:
        return 1;
    default:
        return 0;
    }
}

/* Column c of the node table, or NULL when the layout gave it up. */
static const struct layout_rect *cell(struct view_ctx *v, enum layout_col c)
{
    return v->lay->col[c].w ? &v->lay->col[c] : NULL;
}

/* Text in column c of row y, aligned as the column is. */
static void put(struct view_ctx *v, WINDOW *w, int y, int x0, enum layout_col c, attr_t a,
                const char *text)
{
    const struct layout_rect *r = cell(v, c);
    if (!r)
        return;
    if (right_aligned(c))
        draw_rjust(w, v->g, y, r->x - x0, r->w, a, text);
    else
        draw_text(w, v->g, y, r->x - x0, r->w, a, text);
}

/* The sort column's title is marked beside it: before a right-aligned
 * one (in the gap before the column), after a left-aligned one. */
static void draw_titles(struct view_ctx *v, WINDOW *w, int x0)
{
    for (int c = 0; c < LAYOUT_COL_COUNT; c++) {
        const char *title = layout_col_title((enum layout_col)c);
        attr_t a = palette_attr(v->pal, PAL_TITLE);
        const struct layout_rect *r = cell(v, (enum layout_col)c);
        if (!r)
            continue;
        if (c == v->dash.sort_by - 1) {
            int len = (int)strlen(title);
            int x = right_aligned((enum layout_col)c) ? r->x + r->w - len - 1 : r->x + len;
            draw_text(w, v->g, 0, x - x0, 1, a | A_BOLD,
                      v->dash.rev ? v->g->sort_down : v->g->sort_up);
            a |= A_BOLD | A_UNDERLINE;
        }
        put(v, w, 0, x0, (enum layout_col)c, a, title);
    }
}

static void draw_num(struct view_ctx *v, WINDOW *w, int y, int x0, enum layout_col c, double val,
                     attr_t a)
{
    char buf[16];
    meter_fmt_num(val, buf, sizeof buf);
    put(v, w, y, x0, c, a, buf);
}

/* "3/12" running/waiting, "-" for a number not reported. */
static void draw_reqs(struct view_ctx *v, WINDOW *w, int y, int x0, double running, double waiting,
                      attr_t a)
{
    char r[16], q[16], buf[34];
    view_fmt_count(running, r, sizeof r);
    view_fmt_count(waiting, q, sizeof q);
    if (isnan(running) && isnan(waiting))
        snprintf(buf, sizeof buf, "-");
    else
        snprintf(buf, sizeof buf, "%s/%s", r, q);
    put(v, w, y, x0, LAYOUT_COL_REQS, a, buf);
}

/* The node's decode tokens per second over STATE_RECENT_S: NaN when none
 * of those seconds was heard. */
static double decode_tps(struct view_ctx *v, int node)
{
    double tokens[STATE_RECENT_S], sum = 0;
    int heard = 0;
    state_series(v->st, node, STATE_SERIES_TOKENS, STATE_DECODE, STATE_RECENT_S, v->now, tokens);
    for (int i = 0; i < STATE_RECENT_S; i++)
        if (!isnan(tokens[i])) {
            sum += tokens[i];
            heard++;
        }
    return heard ? sum / STATE_RECENT_S : NAN;
}

/* The cells of an inferd node: its steps, memory and knobs. */
static void draw_inferd_cells(struct view_ctx *v, WINDOW *w, int y, int x0, int node,
                              const struct state_node_view *nv)
{
    const struct layout_rect *r;
    const struct state_config *cfg = state_node_config(v->st, node);
    const proto_status *s = state_node_status(v->st, node);
    char buf[32];
    int live = nv->live == STATE_UP || nv->live == STATE_STALE;
    attr_t alert = palette_attr(v->pal, PAL_ALERT);
    attr_t dim = palette_attr(v->pal, PAL_DIM);
    const struct alert_settings *set = alerts_settings(state_alerts(v->st));

    if (nv->layer_first >= 0)
        snprintf(buf, sizeof buf, "%d:%d", nv->layer_first, nv->layer_last);
    else
        snprintf(buf, sizeof buf, "-");
    put(v, w, y, x0, LAYOUT_COL_LAYERS, A_NORMAL, buf);
    /* A head whose ring is broken is not idle: it refuses everything
     * (the alerts line says at which stage). */
    int broken = live && state_ring_broken(v->st, node);
    const char *ph = !live                        ? "-"
                     : broken                     ? "broken"
                     : nv->phase == STATE_PREFILL ? "prefill"
                     : nv->phase == STATE_DECODE  ? "decode"
                                                  : "idle";
    put(v, w, y, x0, LAYOUT_COL_PHASE, broken ? alert : nv->phase < 0 ? dim : A_NORMAL, ph);
    view_fmt_busy(live ? nv->busy : NAN, nv->phase < 0, buf, sizeof buf);
    /* Busy is neither good nor bad until it saturates the node. */
    double busy_pct = 100 * nv->busy;
    put(v, w, y, x0, LAYOUT_COL_BUSY,
        nv->phase < 0 || !live      ? dim
        : busy_pct >= set->busy_pct ? palette_attr(v->pal, PAL_PENDING)
                                    : A_NORMAL,
        buf);
    view_fmt_batch(live ? nv->batch : NAN, buf, sizeof buf);
    put(v, w, y, x0, LAYOUT_COL_BATCH, nv->phase < 0 ? dim : A_NORMAL, buf);
    if (cell(v, LAYOUT_COL_TPS))
        draw_num(v, w, y, x0, LAYOUT_COL_TPS, live ? decode_tps(v, node) : NAN, A_NORMAL);
    draw_reqs(v, w, y, x0, s && live ? s->active : NAN, s && live ? s->queued : NAN, A_NORMAL);
    draw_num(v, w, y, x0, LAYOUT_COL_STEPS, nv->steps_per_s, A_NORMAL);
    draw_num(v, w, y, x0, LAYOUT_COL_MODEL, nv->model_p50, A_NORMAL);
    /* Eval within the alert's ratio of model time is the ring doing its
     * job; over it (held: the alert) it is not. */
    unsigned alerts = alerts_active(state_alerts(v->st), node);
    draw_num(v, w, y, x0, LAYOUT_COL_EVAL, nv->eval_p50,
             alerts & ALERT_BIT(ALERT_EVAL)                    ? alert
             : nv->eval_p50 <= set->eval_ratio * nv->model_p50 ? palette_attr(v->pal, PAL_OK)
                                                               : A_NORMAL);
    /* inferd holds no KV cache of a fixed size: the memory bar says it. */
    put(v, w, y, x0, LAYOUT_COL_KV_USE, dim, "-");
    if ((r = cell(v, LAYOUT_COL_MEMORY)))
        draw_membar(w, v->g, v->pal, y, r->x - x0, r->w, &nv->mem,
                    (nv->flags & STATE_FLAG_LOW_HEADROOM) != 0);
    attr_t cfg_a = cfg_pending(cfg)                 ? palette_attr(v->pal, PAL_PENDING)
                   : cfg->stage == STATE_CFG_FAILED ? palette_attr(v->pal, PAL_ERROR)
                                                    : A_NORMAL;
    /* A value other than the operator set (desired_sync.h) is marked `*`. */
    proto_set_args drift;
    view_drift(v, node, &drift);
    attr_t drift_a = palette_attr(v->pal, PAL_ERROR);
    if (cfg->kv_bits > 0)
        snprintf(buf, sizeof buf, "%d%s", cfg->kv_bits, drift.has_kv_bits ? "*" : "");
    else
        snprintf(buf, sizeof buf, "-");
    put(v, w, y, x0, LAYOUT_COL_KV_BITS, drift.has_kv_bits ? drift_a : cfg_a, buf);
    view_fmt_prefill(cfg->prefill_step >= 0       ? cfg->prefill_step
                     : cfg->prefill_effective > 0 ? cfg->prefill_effective
                                                  : -1,
                     buf, sizeof buf);
    if (drift.has_prefill_step)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "*");
    put(v, w, y, x0, LAYOUT_COL_PREFILL, drift.has_prefill_step ? drift_a : cfg_a, buf);
    if ((r = cell(v, LAYOUT_COL_SPARK))) {
        /* Each row is scaled to its own peak: the peak leads the line when
         * the column has room for it (the legend, `?`, says so). */
        double series[DRAW_CHART_MAX_COLS];
        int scale = r->w >= SPARK_SCALE_MIN_COLS ? SPARK_SCALE_COLS : 0;
        int n = r->w - 1 - scale < DRAW_CHART_MAX_COLS ? r->w - 1 - scale : DRAW_CHART_MAX_COLS;
        state_series(v->st, node, STATE_SERIES_STEP_MS, STATE_ANY, n, v->now, series);
        if (scale) {
            double peak = NAN;
            for (int i = 0; i < n; i++)
                if (isfinite(series[i]) && !(series[i] <= peak))
                    peak = series[i];
            meter_fmt_num(peak, buf, sizeof buf);
            draw_rjust(w, v->g, y, r->x - x0, scale - 1, dim, buf);
        }
        draw_spark(w, v->g, v->pal, y, r->x - x0 + 1 + scale, n, series, n);
    }
}

/* The cells of an HTTP engine's node: what its last poll found, `-` for
 * what the engine does not report. Its ms per token stands in the model
 * ms column (the closest thing it exports); inferd's own columns (layers,
 * phase, busy, steps, eval, knobs) are `-`. */
static void draw_engine_cells(struct view_ctx *v, WINDOW *w, int y, int x0,
                              const struct eng_view *e, unsigned alerts)
{
    static const enum layout_col inferd_only[] = {
        LAYOUT_COL_LAYERS, LAYOUT_COL_PHASE,   LAYOUT_COL_BUSY,   LAYOUT_COL_STEPS,
        LAYOUT_COL_EVAL,   LAYOUT_COL_KV_BITS, LAYOUT_COL_PREFILL};
    attr_t alert = palette_attr(v->pal, PAL_ALERT);
    attr_t dim = palette_attr(v->pal, PAL_DIM);
    char buf[32];
    for (size_t i = 0; i < sizeof inferd_only / sizeof inferd_only[0]; i++)
        put(v, w, y, x0, inferd_only[i], dim, "-");
    view_fmt_batch(e->batch, buf, sizeof buf);
    put(v, w, y, x0, LAYOUT_COL_BATCH, A_NORMAL, buf);
    draw_num(v, w, y, x0, LAYOUT_COL_TPS, e->decode_tps, A_NORMAL);
    draw_reqs(v, w, y, x0, e->requests_running, e->requests_waiting,
              alerts & ALERT_BIT(ALERT_QUEUE) ? alert : A_NORMAL);
    draw_num(v, w, y, x0, LAYOUT_COL_MODEL, e->ms_per_token, A_NORMAL);
    if (isnan(e->kv_usage))
        snprintf(buf, sizeof buf, "-");
    else
        snprintf(buf, sizeof buf, "%.0f%%", 100.0 * e->kv_usage);
    put(v, w, y, x0, LAYOUT_COL_KV_USE, alerts & ALERT_BIT(ALERT_KV) ? alert : A_NORMAL, buf);
    if (isnan(e->mem_bytes))
        snprintf(buf, sizeof buf, "-");
    else
        meter_fmt_bytes(e->mem_bytes > 0 ? (uint64_t)e->mem_bytes : 0, buf, sizeof buf);
    put(v, w, y, x0, LAYOUT_COL_MEMORY, isnan(e->mem_bytes) ? dim : A_NORMAL, buf);
}

static void draw_node_row(struct view_ctx *v, WINDOW *w, int y, int x0, int node,
                          const struct state_node_view *nv)
{
    const struct layout_rect *r;
    const struct eng_view *e = state_node_engine(v->st, node);
    unsigned alerts = alerts_active(state_alerts(v->st), node);
    struct view_state vs;

    if ((r = cell(v, LAYOUT_COL_NAME))) {
        int sel = node == v->node;
        unsigned name_flags = STATE_FLAG_NONFINITE | STATE_FLAG_ACT_SPIKE | STATE_FLAG_FINGERPRINT;
        attr_t a = (nv->flags & name_flags) || alerts ? palette_attr(v->pal, PAL_ALERT)
                   : sel                              ? palette_attr(v->pal, PAL_SELECT)
                                                      : A_BOLD;
        if (sel)
            draw_text(w, v->g, y, r->x - x0, 1, palette_attr(v->pal, PAL_SELECT), v->g->select);
        draw_text(w, v->g, y, r->x - x0 + 1, r->w - 1, a, nv->name);
    }
    put(v, w, y, x0, LAYOUT_COL_ENGINE, A_NORMAL, eng_name(e ? e->kind : ENG_INFERD));
    view_node_state(v->st, node, v->now, &vs);
    put(v, w, y, x0, LAYOUT_COL_STATE, palette_attr(v->pal, vs.role), vs.word);
    if (e)
        draw_engine_cells(v, w, y, x0, e, alerts);
    else
        draw_inferd_cells(v, w, y, x0, node, nv);
}

/* What the filter and the sort read of node i: what its row shows. */
static void row_key(struct view_ctx *v, int i, const struct state_node_view *nv, struct rows_key *k)
{
    const struct eng_view *e = state_node_engine(v->st, i);
    const proto_status *s = state_node_status(v->st, i);
    const struct state_config *cfg = state_node_config(v->st, i);
    struct view_state vs;
    view_node_state(v->st, i, v->now, &vs);
    k->name = state_node_name(v->st, i);
    k->engine = eng_name(e ? e->kind : ENG_INFERD);
    k->state = vs.word;
    for (int c = 0; c < LAYOUT_COL_COUNT; c++)
        k->num[c] = NAN;
    if (e) {
        k->num[LAYOUT_COL_BATCH] = e->batch;
        k->num[LAYOUT_COL_TPS] = e->decode_tps;
        k->num[LAYOUT_COL_REQS] = e->requests_running + e->requests_waiting;
        k->num[LAYOUT_COL_MODEL] = e->ms_per_token;
        k->num[LAYOUT_COL_KV_USE] = e->kv_usage;
        k->num[LAYOUT_COL_MEMORY] = e->mem_bytes;
        return;
    }
    k->num[LAYOUT_COL_LAYERS] = nv->layer_first >= 0 ? nv->layer_first : NAN;
    k->num[LAYOUT_COL_PHASE] = nv->phase;
    k->num[LAYOUT_COL_BUSY] = nv->busy;
    k->num[LAYOUT_COL_BATCH] = nv->batch;
    k->num[LAYOUT_COL_TPS] = decode_tps(v, i);
    k->num[LAYOUT_COL_REQS] = s ? (double)s->active + s->queued : NAN;
    k->num[LAYOUT_COL_STEPS] = nv->steps_per_s;
    k->num[LAYOUT_COL_MODEL] = nv->model_p50;
    k->num[LAYOUT_COL_EVAL] = nv->eval_p50;
    k->num[LAYOUT_COL_MEMORY] =
        nv->mem.known ? (double)(nv->mem.weights + nv->mem.kv + nv->mem.other) : NAN;
    k->num[LAYOUT_COL_KV_BITS] = cfg->kv_bits > 0 ? cfg->kv_bits : NAN;
    k->num[LAYOUT_COL_PREFILL] = cfg->prefill_step >= 0 ? cfg->prefill_step : NAN;
}

/* The nodes the rows show, in their order; the selection moves onto the
 * first of them when its node is filtered out. Returns how many. */
static int shown_nodes(struct view_ctx *v, const struct state_node_view *nv, int *order)
{
    struct rows_key keys[v->n_nodes > 0 ? v->n_nodes : 1];
    for (int i = 0; i < v->n_nodes; i++)
        row_key(v, i, &nv[i], &keys[i]);
    int n = rows_order(keys, v->n_nodes, v->dash.filter, v->dash.sort_by - 1, v->dash.rev, order);
    int at = 0;
    while (at < n && order[at] != v->node)
        at++;
    if (at == n && n > 0)
        v->node = order[0];
    return n;
}

static void node_views(struct view_ctx *v, struct state_node_view *nv)
{
    for (int i = 0; i < v->n_nodes; i++)
        state_node_view(v->st, i, v->now, &nv[i]);
}

static void draw_nodes(struct view_ctx *v, const struct state_node_view *nv)
{
    WINDOW *w = v->win[LAYOUT_NODES];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_NODES];
    int order[v->n_nodes > 0 ? v->n_nodes : 1];
    if (!w)
        return;
    int rows = p->h - 1, n = shown_nodes(v, nv, order), at = 0;
    werase(w);
    draw_titles(v, w, p->x);
    while (at < n && order[at] != v->node)
        at++;
    view_scroll_to(at, rows, &v->node_top);
    for (int i = 0; i < rows && v->node_top + i < n; i++)
        draw_node_row(v, w, 1 + i, p->x, order[v->node_top + i], &nv[order[v->node_top + i]]);
    if (n == 0)
        draw_text(w, v->g, 1, 1, p->w - 1, palette_attr(v->pal, PAL_DIM),
                  "no node matches the filter (Esc clears it)");
}

/* "alerts: b EVAL>MODEL  c LOW MEM NaN  d QUEUE" after the pane title. */
static void draw_alerts(struct view_ctx *v, WINDOW *w, int x, int width,
                        const struct state_node_view *nv)
{
    char text[512], reasons[128];
    size_t n = 0;
    text[0] = '\0';
    for (int i = 0; i < v->n_nodes; i++) {
        view_node_alerts_text(v, i, nv[i].flags, reasons, sizeof reasons);
        if (!reasons[0])
            continue;
        int k = snprintf(text + n, sizeof text - n, "%s%s %s",
                         n ? "  " : "alerts: ", state_node_name(v->st, i), reasons);
        if (k < 0 || (size_t)k >= sizeof text - n)
            break;
        n += (size_t)k;
    }
    if (n)
        draw_text(w, v->g, 0, x, width, palette_attr(v->pal, PAL_ERROR), text);
}

/* Which events the rows show, and where: FNV-1a over each shown slot and
 * its time (a slot is written once, when its event comes) and the pane's size. */
static uint64_t events_key(const struct state_event *const *ev, int n, int w, int h)
{
    uint64_t k = 0xcbf29ce484222325ull;
    const int size[2] = {w, h};
    const unsigned char *b = (const unsigned char *)size;
    for (size_t i = 0; i < sizeof size; i++)
        k = (k ^ b[i]) * 0x100000001b3ull;
    for (int i = 0; i < n; i++) {
        const void *slot = ev[i];
        b = (const unsigned char *)&slot;
        for (size_t j = 0; j < sizeof slot; j++)
            k = (k ^ b[j]) * 0x100000001b3ull;
        b = (const unsigned char *)&ev[i]->t;
        for (size_t j = 0; j < sizeof ev[i]->t; j++)
            k = (k ^ b[j]) * 0x100000001b3ull;
    }
    return k;
}

/* The title row changes with the alerts; the event rows only when an event
 * comes, which is rare next to frames: they are left alone otherwise. */
static void draw_events_pane(struct view_ctx *v, const struct state_node_view *nv)
{
    WINDOW *w = v->win[LAYOUT_EVENTS_PANE];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_EVENTS_PANE];
    const struct state_event *ev[256];
    struct state_event_filter all = {.node = -1};
    if (!w)
        return;
    wmove(w, 0, 0);
    wclrtoeol(w);
    int x = draw_text(w, v->g, 0, 0, p->w, palette_attr(v->pal, PAL_TITLE), "events ");
    draw_repeat(w, 0, x, 2, palette_attr(v->pal, PAL_DIM), v->g->hline);
    /* The request in flight on the right (its events carry its id too). */
    struct state_cluster_view cv;
    char req[2 * PROTO_ID_MAX + 16] = "";
    state_cluster_view(v->st, v->now, &cv);
    /* The sender when it is not the control socket (the usual case). */
    int src = cv.req_source[0] && strcmp(cv.req_source, "control") != 0;
    if (cv.req[0])
        snprintf(req, sizeof req, "req %s%s%s%s", cv.req, src ? " (" : "", src ? cv.req_source : "",
                 src ? ")" : "");
    int req_w = req[0] ? (int)strlen(req) + 2 : 0;
    if (req_w && req_w < p->w - x - 3)
        draw_rjust(w, v->g, 0, p->w - req_w, req_w, A_BOLD, req);
    else
        req_w = 0;
    draw_alerts(v, w, x + 3, p->w - x - 3 - req_w, nv);
    int max = p->h - 1 < 256 ? p->h - 1 : 256;
    int n = state_events(v->st, &all, 0, max, ev);
    uint64_t key = events_key(ev, n, p->w, p->h);
    if (!v->fresh && key == v->events_key)
        return;
    v->events_key = key;
    wmove(w, 1, 0);
    wclrtobot(w);
    for (int i = 0; i < n; i++)
        view_event_line(v, w, 1 + i, p->w, ev[i]);
    if (n == 0)
        draw_text(w, v->g, 1, 0, p->w, palette_attr(v->pal, PAL_DIM), "no events yet");
}

/* Each node's view once per frame: rows and alerts share it, and its
 * percentiles are the frame's costliest queries. */
static void dashboard_draw(struct view_ctx *v)
{
    struct state_node_view nv[v->n_nodes > 0 ? v->n_nodes : 1];
    node_views(v, nv);
    draw_nodes(v, nv);
    draw_events_pane(v, nv);
}

/* The filter in force, first in the footer; while typed, with a cursor. */
static void filter_prompt(struct view_ctx *v)
{
    if (v->dash.editing)
        snprintf(v->prompt, sizeof v->prompt, "filter: %s_  (Enter keeps, Esc clears)",
                 v->dash.filter);
    else if (v->dash.filter[0])
        snprintf(v->prompt, sizeof v->prompt, "filter: %s", v->dash.filter);
    else
        v->prompt[0] = '\0';
}

/* The next column shown to the right (dir 1) or left (-1) of the sort
 * column, or -1 (the cluster file's order) past the last. The sparkline
 * has nothing to sort by. */
static int next_sort(const struct view_ctx *v, int dir)
{
    int c = v->dash.sort_by - 1;
    for (int i = 0; i <= LAYOUT_COL_COUNT; i++) {
        c += dir;
        if (c >= LAYOUT_COL_COUNT)
            c = -1;
        else if (c < -1)
            c = LAYOUT_COL_COUNT - 1;
        if (c < 0 || (v->lay->col[c].w && c != LAYOUT_COL_SPARK))
            return c;
    }
    return -1;
}

static int dashboard_key(struct view_ctx *v, int key)
{
    const struct layout_rect *p = &v->lay->pane[LAYOUT_NODES];
    if (v->dash.editing) {
        int end = view_type_key(v->dash.filter, sizeof v->dash.filter, key, 0);
        if (end)
            v->dash.editing = 0;
        if (end < 0)
            v->dash.filter[0] = '\0';
        filter_prompt(v);
        return 1;
    }
    struct state_node_view nv[v->n_nodes > 0 ? v->n_nodes : 1];
    int order[v->n_nodes > 0 ? v->n_nodes : 1], at = 0;
    node_views(v, nv);
    int n = shown_nodes(v, nv, order);
    while (at < n && order[at] != v->node)
        at++;
    int to = view_move(key, at, n, p->h - 1);
    if (to >= 0) {
        v->node = order[to];
        return 1;
    }
    switch (keys_cmd(&dashboard_table, key)) {
    case D_DETAIL:
        if (n > 0)
            v->goto_view = LAYOUT_NODE;
        return 1;
    case D_FILTER:
        v->dash.editing = 1;
        break;
    case D_CLEAR:
        v->dash.filter[0] = '\0';
        break;
    case D_SORT_PREV:
    case D_SORT_NEXT:
        v->dash.sort_by = 1 + next_sort(v, keys_cmd(&dashboard_table, key) == D_SORT_NEXT ? 1 : -1);
        return 1;
    case D_REVERSE:
        v->dash.rev = !v->dash.rev;
        return 1;
    case D_RAW:
        if (n > 0) {
            v->overlay = VIEW_OVERLAY_RAW;
            v->overlay_top = 0;
        }
        return 1;
    default:
        return view_node_action_key(v, key, v->node);
    }
    filter_prompt(v);
    return 1;
}

static int dashboard_click(struct view_ctx *v, int y, int x)
{
    const struct layout_rect *p = &v->lay->pane[LAYOUT_NODES];
    struct state_node_view nv[v->n_nodes > 0 ? v->n_nodes : 1];
    int order[v->n_nodes > 0 ? v->n_nodes : 1];
    int row = y - p->y - 1;
    if (x < p->x || x >= p->x + p->w || row < 0 || row >= p->h - 1)
        return 0;
    node_views(v, nv);
    if (v->node_top + row >= shown_nodes(v, nv, order))
        return 0;
    v->node = order[v->node_top + row];
    return 1;
}

const struct ui_view view_dashboard = {
    .name = "Dashboard",
    .layout = LAYOUT_DASHBOARD,
    .draw = dashboard_draw,
    .key = dashboard_key,
    .click = dashboard_click,
    .keys = &dashboard_table,
    .own_erase = 1,
};
