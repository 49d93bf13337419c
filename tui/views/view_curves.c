/* view_curves.c: a stress run's requests charted against context, for the
 * Stress view (the run going) and the History view (a recorded run, or
 * two compared).
 *
 * A point is an ok request: the context it reached, its prefill and
 * decode tok/s, and the mean step time of the slowest node in each phase
 * (store_point). Growth runs spread context over orders of magnitude
 * (64 .. 200K by doubling), so x goes on a log scale when it spans 16x or
 * more; fixed and soak runs keep one context, so their points are drawn
 * in request order instead. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "draw.h"
#include "view.h"

struct metric {
    const char *label;
    size_t off; /* of the double in store_point */
};

static const struct metric m_prefill_tps = {"prefill tok/s", offsetof(store_point, prefill_tps)};
static const struct metric m_decode_tps = {"decode tok/s", offsetof(store_point, decode_tps)};
static const struct metric m_prefill_ms = {"prefill chunk ms",
                                           offsetof(store_point, prefill_step_ms)};
static const struct metric m_decode_ms = {"decode step ms", offsetof(store_point, decode_step_ms)};

static double metric_of(const store_point *p, const struct metric *m)
{
    return *(const double *)((const char *)p + m->off);
}

/* What x is for a set of runs' points of one leg. */
struct x_axis {
    int by_request; /* the context hardly moves: request order */
    int log_x;
};

static void ctx_range(const store_point *p, size_t n, int leg, double *lo, double *hi)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i].leg != leg)
            continue;
        *lo = fmin(*lo, (double)p[i].ctx);
        *hi = fmax(*hi, (double)p[i].ctx);
    }
}

static struct x_axis x_axis_of(const store_point *a, size_t na, const store_point *b, size_t nb,
                               int leg)
{
    double lo = INFINITY, hi = -INFINITY;
    ctx_range(a, na, leg, &lo, &hi);
    ctx_range(b, nb, leg, &lo, &hi);
    struct x_axis ax = {.by_request = !(lo > 0 && hi >= 2 * lo)};
    ax.log_x = !ax.by_request && hi >= 16 * lo;
    return ax;
}

/* The points of leg as x and y of metric m; returns how many. */
static int series_of(const store_point *p, size_t n, int leg, struct x_axis ax,
                     const struct metric *m, double *x, double *y)
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].leg != leg)
            continue;
        x[k] = ax.by_request ? (double)p[i].idx : (double)p[i].ctx;
        y[k++] = metric_of(&p[i], m);
    }
    return k;
}

/* One chart's data: two series, each from its own points. */
struct chart {
    char title[96];
    const store_point *p[2];
    size_t n[2];
    const struct metric *m[2];
    const char *label[2];
    int shared;
};

/* The series need 2 x (n[0] + n[1]) doubles of buf. */
static void draw_one(struct view_ctx *v, WINDOW *w, int y, int x, int width, int height,
                     const struct chart *c, int leg, struct x_axis ax, double *buf)
{
    struct draw_xy s[2];
    for (int i = 0; i < 2; i++) {
        double *xs = buf, *ys = buf + c->n[i];
        buf += 2 * c->n[i];
        s[i] = (struct draw_xy){c->label[i], xs, ys,
                                series_of(c->p[i], c->n[i], leg, ax, c->m[i], xs, ys)};
    }
    struct draw_plot pl = {c->title, ax.by_request ? "request" : "context", ax.log_x, c->shared, s,
                           2};
    draw_plot(w, v->g, v->pal, y, x, width, height, &pl);
}

/* The charts stacked in r, as many as keep LAYOUT_CHART_MIN_ROWS each. */
static void draw_stack(struct view_ctx *v, WINDOW *w, struct layout_rect r, const struct chart *c,
                       int nc, int leg, struct x_axis ax)
{
    int fit = r.h / LAYOUT_CHART_MIN_ROWS;
    if (fit < 1)
        fit = 1;
    if (nc > fit)
        nc = fit;
    size_t most = 0;
    for (int i = 0; i < nc; i++)
        if (c[i].n[0] + c[i].n[1] > most)
            most = c[i].n[0] + c[i].n[1];
    double *buf = malloc((2 * most + 1) * sizeof *buf);
    if (!buf) {
        draw_text(w, v->g, r.y, r.x, r.w, palette_attr(v->pal, PAL_ERROR), "charts: out of memory");
        return;
    }
    int y = r.y;
    for (int i = 0; i < nc; i++) {
        int h = i == nc - 1 ? r.y + r.h - y : r.h / nc;
        draw_one(v, w, y, r.x, r.w, h, &c[i], leg, ax, buf);
        y += h;
    }
    free(buf);
}

/* The first chart's title: what it shows, then the scope (", leg 2 ..."). */
static void title_of(struct chart *c, const char *what, const char *scope)
{
    snprintf(c->title, sizeof c->title, "%s%s%s", what, scope[0] ? ", " : "", scope);
}

void view_curves_run(struct view_ctx *v, WINDOW *w, struct layout_rect r, const store_point *p,
                     size_t n, int leg, const char *scope)
{
    struct chart c[2] = {
        {.m = {&m_prefill_tps, &m_decode_tps}},
        {.m = {&m_prefill_ms, &m_decode_ms}},
    };
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            c[i].p[j] = p;
            c[i].n[j] = n;
            c[i].label[j] = c[i].m[j]->label;
        }
    title_of(&c[0], "tok/s", scope);
    title_of(&c[1], "step ms on the slowest node", "");
    draw_stack(v, w, r, c, 2, leg, x_axis_of(p, n, NULL, 0, leg));
}

void view_curves_compare(struct view_ctx *v, WINDOW *w, struct layout_rect r, const store_curve *a,
                         int64_t ida, const store_curve *b, int64_t idb, int leg, const char *scope)
{
    static const struct metric *const shown[3] = {&m_decode_tps, &m_prefill_tps, &m_decode_ms};
    char la[24], lb[24];
    snprintf(la, sizeof la, "run %lld", (long long)ida);
    snprintf(lb, sizeof lb, "run %lld", (long long)idb);
    struct chart c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (struct chart){.p = {a->points, b->points},
                              .n = {a->n, b->n},
                              .m = {shown[i], shown[i]},
                              .label = {la, lb},
                              .shared = 1};
        title_of(&c[i], shown[i]->label, i == 0 ? scope : "");
    }
    draw_stack(v, w, r, c, 3, leg, x_axis_of(a->points, a->n, b->points, b->n, leg));
}
