/* view_quality.c: what each leg's kv_bits cost in quality, beside its
 * speed, for the Stress view (the runner's progress) and the History view
 * (a run's stored measurements): a two-column table, speed on the left
 * and quality against kv_bits 32 on the right, and below it a chart of
 * the KL by depth bucket of the two settings measured last. It draws only
 * what it is handed. */
#include <math.h>
#include <stdio.h>

#include "draw.h"
#include "meter.h"
#include "view.h"

/* KL is small (1e-4 nats is typical at 8 bits): significant digits. */
static void fmt_kl(double v, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%.3g", v);
    else
        snprintf(buf, len, "-");
}

static void fmt_fixed(double v, int decimals, char *buf, size_t len)
{
    if (isfinite(v))
        snprintf(buf, len, "%.*f", decimals, v);
    else
        snprintf(buf, len, "-");
}

/* The table: a title, column titles, then a row per leg. Returns the rows used. */
static int draw_table(struct view_ctx *v, WINDOW *w, struct layout_rect r,
                      const stress_quality_leg *q, int n)
{
    attr_t title = palette_attr(v->pal, PAL_TITLE);
    /* The newest leg's reference and kind: a run measures one way. */
    char est[48] = "";
    if (q[n - 1].topk > 0) {
        est[0] = ',';
        est[1] = ' ';
        store_fmt_estimate(q[n - 1].topk, est + 2, sizeof est - 2);
    }
    draw_textf(w, v->g, r.y, r.x, r.w, title, "speed        | quality against kv_bits %d%s",
               q[n - 1].ref_kv_bits, est);
    draw_textf(w, v->g, r.y + 1, r.x, r.w, title, "%-3s %-4s %7s | %8s %8s %6s %7s", "LEG", "KV",
               "DEC_TPS", "KL_MEAN", "KL_P99", "TOP1", "PPL");
    int rows = 2;
    /* The newest legs when they do not all fit. */
    int first = n - (r.h - rows) > 0 ? n - (r.h - rows) : 0;
    for (int i = first; i < n && rows < r.h; i++, rows++) {
        char dec[16], kl[16], p99[16], top1[16], ppl[16];
        meter_fmt_num(q[i].decode_p50, dec, sizeof dec);
        fmt_kl(q[i].kl_mean, kl, sizeof kl);
        fmt_kl(q[i].kl_p99, p99, sizeof p99);
        fmt_fixed(q[i].top1, 3, top1, sizeof top1);
        fmt_fixed(q[i].ppl_test, 2, ppl, sizeof ppl);
        draw_textf(w, v->g, r.y + rows, r.x, r.w, A_NORMAL, "%-3d %-4d %7s | %8s %8s %6s %7s",
                   q[i].leg, q[i].kv_bits, dec, kl, p99, top1, ppl);
    }
    return rows;
}

/* The KL of a leg's scored buckets against their middle position. */
static int bucket_points(const stress_quality_leg *q, double *x, double *y)
{
    int n = 0;
    for (int k = 0; k < q->n_buckets; k++) {
        if (isnan(q->bucket_kl[k]))
            continue;
        x[n] = 0.5 * (double)(q->bucket_from[k] + q->bucket_to[k]);
        y[n++] = q->bucket_kl[k];
    }
    return n;
}

void view_quality(struct view_ctx *v, WINDOW *w, struct layout_rect r, const stress_quality_leg *q,
                  int n)
{
    if (n <= 0 || r.h < 3)
        return;
    /* The table takes what it needs, the chart the rest when it fits. */
    int want = 2 + n;
    int chart = r.h - want >= LAYOUT_CHART_MIN_ROWS ? r.h - want : 0;
    if (!chart && r.h >= 2 + 2 + LAYOUT_CHART_MIN_ROWS)
        chart = LAYOUT_CHART_MIN_ROWS;
    struct layout_rect t = {r.x, r.y, r.w, r.h - chart};
    int used = draw_table(v, w, t, q, n);
    if (!chart)
        return;
    /* The two settings measured last that are not the reference itself. */
    static double xs[2][STRESS_QBUCKETS_MAX], ys[2][STRESS_QBUCKETS_MAX];
    char labels[2][24];
    struct draw_xy s[2];
    int ns = 0;
    for (int i = n - 1; i >= 0 && ns < 2; i--) {
        if (q[i].kv_bits == 32)
            continue;
        int np = bucket_points(&q[i], xs[ns], ys[ns]);
        if (np == 0)
            continue;
        snprintf(labels[ns], sizeof labels[ns], "kv %d", q[i].kv_bits);
        s[ns] = (struct draw_xy){labels[ns], xs[ns], ys[ns], np};
        ns++;
    }
    if (!ns)
        return;
    struct draw_plot pl = {
        .title = "KL by depth (nats)", .xname = "position", .shared = 1, .s = s, .ns = ns};
    draw_plot(w, v->g, v->pal, r.y + used, r.x, r.w, r.h - used, &pl);
}
