/* view_history.c: the runs of the history store, newest first (or by max
 * context), filtered by status; the selected run's summary below them
 * (per leg, then per node with the bottleneck node marked); two runs side
 * by side once one is marked (m) and another compared with it (C); either
 * charted against context instead of tabulated (g), a leg at a time (l);
 * the shown run's requests exported as CSV (x).
 *
 * The queries run here, on the UI thread: see console_runs.h for why that
 * is acceptable. The list is read again when the view opens and on r. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "draw.h"
#include "meter.h"
#include "tui/stress/console_runs.h"
#include "ui.h"
#include "view.h"

static const char *const statuses[] = {NULL, "completed", "failed", "aborted", "running"};
#define N_STATUSES ((int)(sizeof statuses / sizeof statuses[0]))

static const store_run_list *listed(struct view_ctx *v)
{
    return console_runs_listed(v->opt->runs);
}

static const store_run *selected(struct view_ctx *v)
{
    const store_run_list *l = listed(v);
    return l->n ? &l->runs[v->hist.sel] : NULL;
}

static void reload(struct view_ctx *v)
{
    char err[256];
    if (console_runs_list(v->opt->runs, statuses[v->hist.status], v->hist.sort_context, err,
                          sizeof err) != 0)
        view_message(v, 1, "history: %s", err);
    size_t n = listed(v)->n;
    if ((size_t)v->hist.sel >= n)
        v->hist.sel = n ? (int)n - 1 : 0;
}

static void draw_status(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_FILTER];
    int width = v->lay->pane[LAYOUT_FILTER].w;
    char marked[32] = "none";
    if (v->hist.marked)
        snprintf(marked, sizeof marked, "run %lld", (long long)v->hist.marked);
    draw_textf(w, v->g, 0, 0, width, palette_attr(v->pal, PAL_TITLE),
               "status: %s   sort: %s   marked: %s   %zu runs",
               statuses[v->hist.status] ? statuses[v->hist.status] : "any",
               v->hist.sort_context ? "max context" : "newest", marked, listed(v)->n);
}

static void draw_runs(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_RUNS];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_RUNS];
    const store_run_list *l = listed(v);
    draw_textf(w, v->g, 0, 0, p->w, A_BOLD, "%-3s %5s  %-16s %-7s %-10s %9s %5s %6s %6s  %s", "",
               "run", "name", "mode", "status", "max ctx", "legs", "reqs", "failed", "started");
    int rows = p->h - 1;
    view_scroll_to(v->hist.sel, rows, &v->hist.top);
    for (int i = 0; i < rows && (size_t)(v->hist.top + i) < l->n; i++) {
        const store_run *r = &l->runs[v->hist.top + i];
        char when[32];
        time_t t = (time_t)r->started;
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
        int sel = v->hist.top + i == v->hist.sel;
        attr_t a = sel ? palette_attr(v->pal, PAL_SELECT) : A_NORMAL;
        draw_textf(w, v->g, i + 1, 0, p->w, a,
                   "%-3s %5lld  %-16.16s %-7s %-10s %9lld %5lld %6lld %6lld  %s",
                   r->id == v->hist.marked ? "[m]" : "", (long long)r->id, r->name, r->mode,
                   r->status, (long long)r->max_context, (long long)r->n_legs,
                   (long long)r->n_requests, (long long)r->n_failed, when);
    }
    if (l->n == 0)
        draw_text(w, v->g, 1, 0, p->w, palette_attr(v->pal, PAL_DIM),
                  "no runs in the history (start one from the Stress view)");
}

/* The node of a leg and phase with the largest eval_ms p50: the stage the
 * ring waits on. */
static int bottleneck(const store_summary *s, int leg, const char *phase)
{
    int best = -1;
    for (size_t i = 0; i < s->n_groups; i++) {
        const store_step_group *g = &s->groups[i];
        if (g->leg != leg || strcmp(g->phase, phase) != 0)
            continue;
        if (best < 0 || g->eval_ms.p50 > s->groups[best].eval_ms.p50)
            best = (int)i;
    }
    return best;
}

/* A leg line of the History view: the cells store_leg_line_of gives the
 * CLI too, after a lead (the run, in a comparison). */
struct leg_row {
    const char *lead;
    store_leg_line ln;
};

/* Rows of leg lines under their titles from y, each column as wide as its
 * widest cell; returns the row after the last drawn. */
static int draw_leg_rows(struct view_ctx *v, WINDOW *w, int y, int width, int h,
                         const char *lead_head, const struct leg_row *rows, size_t n)
{
    int cw[STORE_LEG_COLS], lw = lead_head ? (int)strlen(lead_head) : 0;
    for (int c = 0; c < STORE_LEG_COLS; c++)
        cw[c] = (int)strlen(store_leg_heads[c]);
    for (size_t i = 0; i < n; i++) {
        if (lead_head && (int)strlen(rows[i].lead) > lw)
            lw = (int)strlen(rows[i].lead);
        for (int c = 0; c < STORE_LEG_COLS; c++)
            if ((int)strlen(rows[i].ln.cell[c]) > cw[c])
                cw[c] = (int)strlen(rows[i].ln.cell[c]);
    }
    for (size_t i = 0; i <= n && y < h; i++) {
        char line[512];
        int k = 0;
        if (lead_head)
            k += snprintf(line, sizeof line, "%-*s", lw, i ? rows[i - 1].lead : lead_head);
        for (int c = 0; c < STORE_LEG_COLS; c++)
            k += snprintf(line + k, sizeof line - (size_t)k, "%s%*s", k ? "  " : "", cw[c],
                          i ? rows[i - 1].ln.cell[c] : store_leg_heads[c]);
        draw_text(w, v->g, y++, 0, width, i ? A_NORMAL : A_BOLD, line);
    }
    return y;
}

/* The run's quality measurements beside its legs' speed (decode p50),
 * in r; the rows used (0: the run measured none). */
static int draw_quality(struct view_ctx *v, WINDOW *w, struct layout_rect r, int64_t id)
{
    char err[256];
    const store_quality_list *l = console_runs_quality(v->opt->runs, id, err, sizeof err);
    const store_summary *s =
        l && l->n ? console_runs_summary(v->opt->runs, id, err, sizeof err) : NULL;
    if (!l || !s || !l->n)
        return 0;
    static stress_quality_leg rows[STRESS_QUALITY_MAX];
    size_t first = l->n > STRESS_QUALITY_MAX ? l->n - STRESS_QUALITY_MAX : 0;
    int n = 0;
    for (size_t i = first; i < l->n; i++) {
        double dec = NAN;
        for (size_t k = 0; k < s->n_legs; k++)
            if (s->legs[k].idx == l->q[i].leg && s->legs[k].decode_tps.count)
                dec = s->legs[k].decode_tps.p50;
        stress_quality_leg_of(&l->q[i], dec, &rows[n++]);
    }
    view_quality(v, w, r, rows, n);
    return r.h;
}

static void draw_summary(struct view_ctx *v, WINDOW *w, int width, int h)
{
    const store_run *sel = selected(v);
    char err[256];
    if (!sel)
        return;
    const store_summary *s = console_runs_summary(v->opt->runs, sel->id, err, sizeof err);
    if (!s) {
        draw_text(w, v->g, 0, 0, width, palette_attr(v->pal, PAL_ERROR), err);
        return;
    }
    int y = 0;
    draw_textf(w, v->g, y++, 0, width, palette_attr(v->pal, PAL_TITLE),
               "run %lld %s  %s %s  model %s  max context %lld", (long long)s->run.id, s->run.name,
               s->run.mode, s->run.status, s->run.model, (long long)s->run.max_context);
    struct leg_row *rows = calloc(s->n_legs + 1, sizeof *rows);
    if (!rows) {
        draw_text(w, v->g, y, 0, width, palette_attr(v->pal, PAL_ERROR), "out of memory");
        return;
    }
    for (size_t i = 0; i < s->n_legs; i++)
        store_leg_line_of(&s->legs[i], &rows[i].ln);
    y = draw_leg_rows(v, w, y, width, h, NULL, rows, s->n_legs);
    free(rows);
    if (s->failure.found && y < h)
        draw_textf(w, v->g, y++, 0, width, palette_attr(v->pal, PAL_ERROR),
                   "first failure: leg %d request %lld at context %lld: %s %s", s->failure.leg,
                   (long long)s->failure.request, (long long)s->failure.ctx_before, s->failure.code,
                   s->failure.message);
    /* Quality beside speed, a table here (c charts its KL by depth). */
    const store_quality_list *q = console_runs_quality(v->opt->runs, sel->id, err, sizeof err);
    if (q && q->n && y + 3 < h) {
        int rows = 2 + (int)(q->n < STRESS_QUALITY_MAX ? q->n : STRESS_QUALITY_MAX);
        struct layout_rect qr = {0, y + 1, width - 1, rows < h - y - 1 ? rows : h - y - 1};
        y += 1 + draw_quality(v, w, qr, sel->id);
    }
    if (y < h)
        draw_textf(w, v->g, y++, 0, width, A_BOLD, "%-4s %-12s %-8s %17s %17s %17s", "leg", "node",
                   "phase", "step ms p50/p99", "model ms p50/p99", "eval ms p50/p99");
    for (size_t i = 0; i < s->n_groups && y < h; i++) {
        const store_step_group *g = &s->groups[i];
        int slow = bottleneck(s, g->leg, g->phase) == (int)i;
        attr_t a = slow ? palette_attr(v->pal, PAL_ALERT) | A_BOLD : A_NORMAL;
        draw_textf(w, v->g, y++, 0, width, a,
                   "%-4d %-12.12s %-8s %8.2f/%-8.2f %8.2f/%-8.2f %8.2f/%-8.2f%s", g->leg, g->node,
                   g->phase, g->step_ms.p50, g->step_ms.p99, g->model_ms.p50, g->model_ms.p99,
                   g->eval_ms.p50, g->eval_ms.p99, slow ? "  bottleneck" : "");
    }
}

/* The legs of both runs as `history compare` prints them: a pair's A and
 * B lines and B's figures over A's, a leg without a partner alone. */
static int draw_pairs(struct view_ctx *v, WINDOW *w, int y, int width, int h,
                      const store_compare *c)
{
    struct leg_row *rows = calloc(3 * c->n_pairs + 1, sizeof *rows);
    size_t n = 0;
    if (!rows) {
        draw_text(w, v->g, y, 0, width, palette_attr(v->pal, PAL_ERROR), "out of memory");
        return y + 1;
    }
    for (size_t i = 0; i < c->n_pairs; i++) {
        const store_leg_pair *p = &c->pairs[i];
        const store_leg_summary *a = p->a >= 0 ? &c->a.legs[p->a] : NULL;
        const store_leg_summary *b = p->b >= 0 ? &c->b.legs[p->b] : NULL;
        if (a) {
            rows[n].lead = b ? "A" : "A only";
            store_leg_line_of(a, &rows[n++].ln);
        }
        if (b) {
            rows[n].lead = a ? "B" : "B only";
            store_leg_line_of(b, &rows[n++].ln);
        }
        if (a && b) {
            rows[n].lead = "B/A";
            store_leg_ratio_of(a, b, &rows[n++].ln);
        }
    }
    y = draw_leg_rows(v, w, y, width, h, "RUN", rows, n);
    free(rows);
    return y;
}

static void draw_compare(struct view_ctx *v, WINDOW *w, int width, int h)
{
    char err[256];
    const store_compare *c =
        console_runs_compare(v->opt->runs, v->hist.compare_a, v->hist.compare_b, err, sizeof err);
    if (!c) {
        draw_text(w, v->g, 0, 0, width, palette_attr(v->pal, PAL_ERROR), err);
        return;
    }
    char ha[32], hb[32];
    snprintf(ha, sizeof ha, "run %lld", (long long)c->a.run.id);
    snprintf(hb, sizeof hb, "run %lld", (long long)c->b.run.id);
    draw_textf(w, v->g, 0, 0, width, palette_attr(v->pal, PAL_TITLE),
               "compare run %lld (%s, %s) with run %lld (%s, %s)", (long long)c->a.run.id,
               c->a.run.name, c->a.run.status, (long long)c->b.run.id, c->b.run.name,
               c->b.run.status);
    int y = draw_pairs(v, w, 1, width, h, c);
    if (y >= h)
        return;
    draw_textf(w, v->g, y++, 0, width, A_BOLD, "%-34s %-18s %12s %12s %12s %8s", "key", "metric",
               ha, hb, "delta", "ratio");
    int rows = h - y;
    if (v->hist.detail_top > (int)c->n - rows)
        v->hist.detail_top = (int)c->n > rows ? (int)c->n - rows : 0;
    for (int i = 0; i < rows && (size_t)(v->hist.detail_top + i) < c->n; i++) {
        const store_delta *d = &c->rows[v->hist.detail_top + i];
        char a[24], b[24], dl[24], r[24];
        /* Counts print as integers: store_fmt_num keeps whole values whole. */
        store_fmt_num(d->a, 2, a, sizeof a);
        store_fmt_num(d->b, 2, b, sizeof b);
        store_fmt_num(d->delta, 2, dl, sizeof dl);
        store_fmt_num(d->ratio, 2, r, sizeof r);
        draw_textf(w, v->g, y + i, 0, width, A_NORMAL, "%-34.34s %-18.18s %12s %12s %12s %8s",
                   d->key, d->metric, a, b, dl, r);
    }
}

/* The charted leg as a title's scope: "" for a run of one leg. */
static void leg_scope(struct view_ctx *v, int64_t id, char *buf, size_t len)
{
    char err[256];
    const store_summary *s = console_runs_summary(v->opt->runs, id, err, sizeof err);
    buf[0] = '\0';
    if (!s)
        return;
    if (v->hist.leg >= (int)s->n_legs)
        v->hist.leg = 0;
    if (s->n_legs < 2)
        return;
    const store_leg_summary *l = &s->legs[v->hist.leg];
    snprintf(buf, len, "leg %d/%zu kv %d prefill %d conc %d", l->idx + 1, s->n_legs, l->kv_bits,
             l->prefill_step, l->concurrency);
}

static void draw_charts(struct view_ctx *v, WINDOW *w, struct layout_rect r)
{
    char err[256], scope[96];
    int cmp = v->hist.detail == VIEW_HIST_COMPARE;
    int64_t a = cmp ? v->hist.compare_a : selected(v) ? selected(v)->id : 0;
    if (!a)
        return;
    /* A run with quality: the quality below its curves (alone when it
     * has no requests to chart: a quality run). */
    if (!cmp) {
        const store_run *sel = selected(v);
        int speed = sel && sel->n_requests > 0;
        struct layout_rect qr = r;
        if (speed) {
            qr.y = r.y + r.h / 2;
            qr.h = r.h - r.h / 2;
        }
        if (draw_quality(v, w, qr, a) && !speed)
            return;
        if (speed && console_runs_quality(v->opt->runs, a, err, sizeof err) &&
            console_runs_quality(v->opt->runs, a, err, sizeof err)->n)
            r.h /= 2;
    }
    leg_scope(v, a, scope, sizeof scope);
    const store_curve *ca = console_runs_curve(v->opt->runs, a, err, sizeof err);
    const store_curve *cb =
        ca && cmp ? console_runs_curve(v->opt->runs, v->hist.compare_b, err, sizeof err) : NULL;
    if (!ca || (cmp && !cb))
        draw_text(w, v->g, r.y, r.x, r.w, palette_attr(v->pal, PAL_ERROR), err);
    else if (cmp)
        view_curves_compare(v, w, r, ca, a, cb, v->hist.compare_b, v->hist.leg, scope);
    else
        view_curves_run(v, w, r, ca->points, ca->n, v->hist.leg, scope);
}

static void history_draw(struct view_ctx *v)
{
    WINDOW *dw = v->win[LAYOUT_DETAIL];
    if (!v->win[LAYOUT_FILTER] || !v->win[LAYOUT_RUNS] || !dw)
        return;
    if (!v->opt->runs) {
        draw_text(v->win[LAYOUT_FILTER], v->g, 0, 0, v->lay->pane[LAYOUT_FILTER].w,
                  palette_attr(v->pal, PAL_ERROR), "no run history store (see --db)");
        return;
    }
    if (v->fresh)
        reload(v);
    draw_status(v);
    draw_runs(v);
    const struct layout_rect *p = &v->lay->pane[LAYOUT_DETAIL];
    struct layout_rect r = {0, 0, p->w - 1, p->h};
    if (v->hist.charts)
        draw_charts(v, dw, r);
    else if (v->hist.detail == VIEW_HIST_COMPARE)
        draw_compare(v, dw, p->w, p->h);
    else
        draw_summary(v, dw, p->w, p->h);
}

static void mark(struct view_ctx *v)
{
    const store_run *r = selected(v);
    if (!r)
        return;
    v->hist.marked = v->hist.marked == r->id ? 0 : r->id;
    if (v->hist.marked)
        view_message(v, 0, "run %lld marked: select another run and press C to compare",
                     (long long)r->id);
}

static void compare(struct view_ctx *v)
{
    const store_run *r = selected(v);
    if (!r || !v->hist.marked || v->hist.marked == r->id) {
        view_message(v, 1, "mark a run with m, select another, then C");
        return;
    }
    v->hist.compare_a = v->hist.marked;
    v->hist.compare_b = r->id;
    v->hist.detail = VIEW_HIST_COMPARE;
    v->hist.detail_top = 0;
}

static void export_shown(struct view_ctx *v)
{
    const store_run *r = selected(v);
    char path[64], err[512];
    if (!r)
        return;
    int64_t id = v->hist.detail == VIEW_HIST_COMPARE ? v->hist.compare_b : r->id;
    snprintf(path, sizeof path, "./infertop-run-%lld.csv", (long long)id);
    if (console_runs_export(v->opt->runs, id, path, err, sizeof err) != 0)
        view_message(v, 1, "export: %s", err);
    else
        view_message(v, 0, "run %lld's requests written to %s", (long long)id, path);
}

enum {
    H_SUMMARY,
    H_MARK,
    H_COMPARE,
    H_EXPORT,
    H_CHARTS,
    H_LEG,
    H_RELOAD,
    H_STATUS,
    H_SORT,
    H_DOWN,
    H_UP
};

static const struct view_key history_keys[] = {
    {{0}, "j/k", "run", "choose a run", -1},
    {{'\n', '\r', KEY_ENTER},
     "Enter",
     "summary",
     "the selected run's legs and nodes (bottleneck marked)",
     H_SUMMARY},
    {{'v'}, "v", "charts", "chart tok/s and step ms against context (again: the table)", H_CHARTS},
    {{'l'}, "l", "leg", "the next leg charted", H_LEG},
    {{'m'}, "m", "mark", "mark a run", H_MARK},
    {{'C'}, "C", "compare", "compare the marked run with the selected one", H_COMPARE},
    {{'x'}, "x", "export", "write the shown run's requests to ./infertop-run-ID.csv", H_EXPORT},
    {{'f'}, "f", "status", "cycle the status filter", H_STATUS},
    {{'o'}, "o", "sort", "sort by max context (again: by time)", H_SORT},
    {{'r'}, "r", "reload", "list the runs again", H_RELOAD},
    {{']'}, "[ ]", NULL, "scroll the comparison", H_DOWN},
    {{'['}, "", NULL, NULL, H_UP},
};
static const struct view_keys history_table = KEYS_TABLE("History", history_keys);

static int history_key(struct view_ctx *v, int key)
{
    if (!v->opt->runs)
        return 0;
    switch (keys_cmd(&history_table, key)) {
    case H_SUMMARY:
        v->hist.detail = VIEW_HIST_SUMMARY;
        return 1;
    case H_MARK:
        mark(v);
        return 1;
    case H_COMPARE:
        compare(v);
        return 1;
    case H_EXPORT:
        export_shown(v);
        return 1;
    case H_CHARTS:
        v->hist.charts = !v->hist.charts;
        return 1;
    case H_LEG:
        v->hist.leg++;
        return 1; /* back to 0 past the last (leg_scope) */
    case H_RELOAD:
        reload(v);
        return 1;
    case H_STATUS:
        v->hist.status = (v->hist.status + 1) % N_STATUSES;
        v->hist.sel = 0;
        reload(v);
        return 1;
    case H_SORT:
        v->hist.sort_context = !v->hist.sort_context;
        v->hist.sel = 0;
        reload(v);
        return 1;
    case H_DOWN:
        v->hist.detail_top++;
        return 1;
    case H_UP:
        if (v->hist.detail_top > 0)
            v->hist.detail_top--;
        return 1;
    }
    int rows = v->lay->pane[LAYOUT_RUNS].h - 1;
    int to = view_move(key, v->hist.sel, (int)listed(v)->n, rows);
    if (to < 0)
        return 0;
    v->hist.sel = to;
    v->hist.detail = VIEW_HIST_SUMMARY;
    v->hist.leg = 0;
    return 1;
}

const struct ui_view view_history = {
    .name = "History",
    .layout = LAYOUT_HISTORY,
    .draw = history_draw,
    .key = history_key,
    .click = NULL,
    .keys = &history_table,
};
