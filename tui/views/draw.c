/* draw.c: clipped text, rules, boxes, and the meters on screen. */
#include "draw.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "engine/sys/utf8.h"
#include "meter.h"

int draw_width(const char *s)
{
    return (int)utf8_count(s, strlen(s));
}

/* Writes the bytes [from, to) as they are: one curses call for a run of
 * plain characters rather than one per character. */
static void flush_run(WINDOW *w, const char *from, const char *to)
{
    if (to > from)
        waddnstr(w, from, (int)(to - from));
}

int draw_text(WINDOW *w, const struct glyphs *g, int y, int x, int width, attr_t a, const char *s)
{
    const char *p = s, *run = p, *end = s + strlen(s);
    int total = draw_width(s), cols = 0;
    if (width <= 0)
        return 0;
    wattr_set(w, a, PAIR_NUMBER(a), NULL);
    wmove(w, y, x);
    while (p < end && cols < width) {
        size_t n = utf8_step(p, (size_t)(end - p));
        unsigned char c = (unsigned char)*p;
        if (cols == width - 1 && total > width) {
            flush_run(w, run, p);
            waddstr(w, g->ellipsis);
            run = p;
            cols++;
            break;
        }
        int ascii_only = !g->utf8 && c >= 0x80;
        int control = c < 0x20 || c == 0x7F; /* would move the cursor */
        if (ascii_only || control) {
            flush_run(w, run, p);
            waddch(w, ascii_only ? '?' : ' ');
            run = p + n;
        }
        p += n;
        cols++;
    }
    flush_run(w, run, p);
    wattr_set(w, A_NORMAL, 0, NULL);
    return cols;
}

int draw_textf(WINDOW *w, const struct glyphs *g, int y, int x, int width, attr_t a,
               const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return draw_text(w, g, y, x, width, a, buf);
}

void draw_rjust(WINDOW *w, const struct glyphs *g, int y, int x, int width, attr_t a, const char *s)
{
    int n = draw_width(s);
    if (n < width)
        x += width - n;
    draw_text(w, g, y, x, width, a, s);
}

/* One conversion of the glyph and one curses call for the whole run:
 * waddstr would decode the glyph again for every cell, and the memory
 * bars and rules are drawn every frame. */
void draw_repeat(WINDOW *w, int y, int x, int n, attr_t a, const char *glyph)
{
    wchar_t wc[2] = {0, 0};
    mbstate_t ps;
    cchar_t cc;
    if (n <= 0)
        return;
    memset(&ps, 0, sizeof ps);
    size_t len = mbrtowc(wc, glyph, strlen(glyph), &ps);
    wmove(w, y, x);
    if (len == 0 || len > MB_LEN_MAX || setcchar(&cc, wc, a, PAIR_NUMBER(a), NULL) != OK) {
        wattr_set(w, a, PAIR_NUMBER(a), NULL);
        for (int i = 0; i < n; i++)
            waddstr(w, glyph);
        wattr_set(w, A_NORMAL, 0, NULL);
        return;
    }
    whline_set(w, &cc, n);
}

/* Box lines from the glyph set rather than the ACS characters, which an
 * ASCII-only run in a UTF-8 locale would still send as UTF-8. */
void draw_box(WINDOW *w, const struct glyphs *g, attr_t a)
{
    int h = getmaxy(w), wd = getmaxx(w);
    draw_repeat(w, 0, 1, wd - 2, a, g->hline);
    draw_repeat(w, h - 1, 1, wd - 2, a, g->hline);
    for (int y = 1; y < h - 1; y++) {
        draw_repeat(w, y, 0, 1, a, g->vline);
        draw_repeat(w, y, wd - 1, 1, a, g->vline);
    }
    draw_repeat(w, 0, 0, 1, a, g->corner[0]);
    draw_repeat(w, 0, wd - 1, 1, a, g->corner[1]);
    draw_repeat(w, h - 1, 0, 1, a, g->corner[2]);
    /* draw_repeat does not move the cursor: even the bottom-right cell
     * of the screen takes its corner without scrolling. */
    draw_repeat(w, h - 1, wd - 1, 1, a, g->corner[3]);
}

void draw_membar(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x,
                 int width, const struct state_memory *m, int low)
{
    static const enum palette_role role[GLYPHS_MEM_COUNT] = {PAL_WEIGHTS, PAL_KV, PAL_OTHER,
                                                             PAL_HEADROOM};
    if (!m->known || m->weights + m->kv + m->other + m->headroom == 0) {
        draw_text(w, g, y, x, width, palette_attr(p, PAL_DIM), "-");
        return;
    }
    /* The headroom figure takes 5 columns when the bar keeps at least 6. */
    int bar = width >= 11 ? width - 5 : width;
    uint64_t part[GLYPHS_MEM_COUNT] = {m->weights, m->kv, m->other, m->headroom};
    int cols[GLYPHS_MEM_COUNT];
    meter_membar(part, bar, cols);
    int cx = x;
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++) {
        draw_repeat(w, y, cx, cols[i], palette_attr(p, role[i]), g->mem[i]);
        cx += cols[i];
    }
    if (bar == width)
        return;
    char free_s[16];
    if (m->headroom_signed < 0)
        snprintf(free_s, sizeof free_s, "OVER");
    else
        meter_fmt_bytes(m->headroom, free_s, sizeof free_s);
    enum palette_role fig = low ? PAL_ALERT : m->headroom_signed < 0 ? PAL_ERROR : PAL_TEXT;
    draw_rjust(w, g, y, x + bar, 5, palette_attr(p, fig), free_s);
}

void draw_spark(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x, int width,
                const double *v, int n)
{
    int level[DRAW_CHART_MAX_COLS];
    if (n > width) {
        v += n - width;
        n = width;
    }
    if (n > DRAW_CHART_MAX_COLS) {
        v += n - DRAW_CHART_MAX_COLS;
        n = DRAW_CHART_MAX_COLS;
    }
    meter_spark(v, n, GLYPHS_SPARK_LEVELS, level);
    for (int i = 0; i < n; i++)
        draw_repeat(w, y, x + width - n + i, 1, palette_attr(p, PAL_SPARK),
                    level[i] < 0 ? " " : g->spark[level[i]]);
}

#define AXIS_COLS 6 /* "12.3k" and a space */

int draw_chart_points(const struct glyphs *g, int width)
{
    int cols = width - AXIS_COLS;
    if (cols > DRAW_CHART_MAX_COLS)
        cols = DRAW_CHART_MAX_COLS;
    return cols > 0 ? cols * (g->utf8 ? 2 : 1) : 0;
}

static const enum palette_role series_role[2] = {PAL_SERIES_A, PAL_SERIES_B};

/* The title, then each series' line style and label. */
static void chart_legend(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x,
                         int width, const char *title, const char *const *labels, int ns)
{
    int cx = x + draw_text(w, g, y, x, width, palette_attr(p, PAL_TITLE), title);
    for (int i = 0; i < ns && i < 2; i++) {
        int room = x + width - cx;
        if (room < 4)
            return;
        cx += 2;
        draw_text(w, g, y, cx, 2, palette_attr(p, series_role[i]), i == 0 ? g->solid : g->dashed);
        cx += 3;
        cx += draw_text(w, g, y, cx, x + width - cx, A_NORMAL, labels[i]);
    }
}

/* The canvas's cells at (y, x), each in the colour of the series in it. */
static void chart_blit(WINDOW *w, const struct palette *p, int y, int x,
                       const struct meter_canvas *c)
{
    char cell[5];
    for (int r = 0; r < c->rows; r++)
        for (int col = 0; col < c->cols; col++) {
            uint8_t who = c->series[r * c->cols + col];
            if (!who)
                continue;
            enum palette_role role = who == 3   ? PAL_SERIES_AB
                                     : who == 2 ? PAL_SERIES_B
                                                : PAL_SERIES_A;
            meter_canvas_cell(c, col, r, cell);
            draw_repeat(w, y + r, x + col, 1, palette_attr(p, role), cell);
        }
}

/* A y axis of `rows` rows at (y, x): hi (none when not positive) at the
 * top and 0 at the bottom in AXIS_COLS - 1 columns, the rule beside them
 * on the side of the plot. */
static void chart_axis(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x,
                       int rows, double hi, int right, void (*fmt)(double v, char *buf, size_t len))
{
    char label[16] = "";
    attr_t dim = palette_attr(p, PAL_DIM);
    if (hi > 0)
        fmt(hi, label, sizeof label);
    int lx = right ? x + 1 : x, rule = right ? x : x + AXIS_COLS - 1;
    for (int r = 0; r < rows; r++)
        draw_repeat(w, y + r, rule, 1, dim, g->vline);
    if (right) {
        draw_text(w, g, y, lx, AXIS_COLS - 1, dim, label);
        draw_text(w, g, y + rows - 1, lx, AXIS_COLS - 1, dim, "0");
    } else {
        draw_rjust(w, g, y, lx, AXIS_COLS - 1, dim, label);
        draw_rjust(w, g, y + rows - 1, lx, AXIS_COLS - 1, dim, "0");
    }
}

static void chart_empty(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x,
                        int cols, int rows)
{
    draw_text(w, g, y + rows / 2, x + 1, cols - 1, palette_attr(p, PAL_DIM), "no data yet");
}

static double largest(const double *v, int n)
{
    double hi = 0;
    for (int j = 0; j < n; j++)
        if (isfinite(v[j]) && v[j] > hi)
            hi = v[j];
    return hi;
}

void draw_chart(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x, int width,
                int height, const char *title, const struct draw_series *s, int ns, double hi,
                void (*fmt)(double v, char *buf, size_t len))
{
    uint8_t dots[DRAW_CHART_MAX_COLS * DRAW_CHART_MAX_ROWS];
    uint8_t series[DRAW_CHART_MAX_COLS * DRAW_CHART_MAX_ROWS];
    struct meter_canvas c;
    const char *labels[2] = {ns > 0 ? s[0].label : "", ns > 1 ? s[1].label : ""};
    int cols = width - AXIS_COLS, rows = height - 1;

    chart_legend(w, g, p, y, x, width, title, labels, ns);
    if (cols <= 0 || rows <= 0)
        return;
    if (cols > DRAW_CHART_MAX_COLS)
        cols = DRAW_CHART_MAX_COLS;
    if (rows > DRAW_CHART_MAX_ROWS)
        rows = DRAW_CHART_MAX_ROWS;
    if (ns > 2)
        ns = 2;
    if (hi <= 0)
        for (int i = 0; i < ns; i++)
            hi = fmax(hi, largest(s[i].v, s[i].n));
    int empty = hi <= 0;
    if (empty)
        hi = 1;

    meter_canvas_init(&c, cols, rows, g->utf8, dots, series);
    for (int i = 0; i < ns; i++)
        meter_canvas_plot(&c, s[i].v, s[i].n, 0, hi, i, i == 1);

    chart_axis(w, g, p, y + 1, x, rows, empty ? 0 : hi, 0, fmt);
    chart_blit(w, p, y + 1, x + AXIS_COLS, &c);
    if (empty)
        chart_empty(w, g, p, y + 1, x + AXIS_COLS, cols, rows);
}

/* The x range of the plot's points, log10 of it on a log scale. */
static void plot_x_range(const struct draw_plot *pl, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < pl->ns; i++)
        for (int j = 0; j < pl->s[i].n; j++) {
            double v = pl->s[i].x[j];
            if (!isfinite(v) || (pl->log_x && v <= 0))
                continue;
            *lo = fmin(*lo, v);
            *hi = fmax(*hi, v);
        }
}

/* An x label: contexts and request numbers are whole, so "64" and not
 * "64.0"; large ones compact ("200k"). */
static void fmt_x(double v, char *buf, size_t len)
{
    if (v == floor(v) && fabs(v) < 1e5)
        snprintf(buf, len, "%.0f", v);
    else
        meter_fmt_num(v, buf, len);
}

/* The bottom row: the x range under the plot, the axis's name between. */
static void plot_x_axis(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x,
                        int cols, const struct draw_plot *pl, double lo, double hi)
{
    char a[16], b[16], name[48];
    attr_t dim = palette_attr(p, PAL_DIM);
    fmt_x(lo, a, sizeof a);
    fmt_x(hi, b, sizeof b);
    snprintf(name, sizeof name, "%s%s", pl->xname, pl->log_x ? " (log)" : "");
    int la = draw_text(w, g, y, x, cols, dim, a);
    int lb = draw_width(b);
    draw_rjust(w, g, y, x + cols - lb, lb, dim, b);
    int ln = draw_width(name);
    if (la + ln + lb + 2 <= cols)
        draw_text(w, g, y, x + (cols - ln) / 2, ln, dim, name);
}

void draw_plot(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x, int width,
               int height, const struct draw_plot *pl)
{
    uint8_t dots[DRAW_CHART_MAX_COLS * DRAW_CHART_MAX_ROWS];
    uint8_t series[DRAW_CHART_MAX_COLS * DRAW_CHART_MAX_ROWS];
    struct meter_canvas c;
    int ns = pl->ns < 2 ? pl->ns : 2;
    const char *labels[2] = {ns > 0 ? pl->s[0].label : "", ns > 1 ? pl->s[1].label : ""};
    int two_axes = ns == 2 && !pl->shared;
    int cols = width - AXIS_COLS * (two_axes ? 2 : 1), rows = height - 2;

    chart_legend(w, g, p, y, x, width, pl->title, labels, ns);
    if (cols <= 0 || rows <= 0)
        return;
    if (cols > DRAW_CHART_MAX_COLS)
        cols = DRAW_CHART_MAX_COLS;
    if (rows > DRAW_CHART_MAX_ROWS)
        rows = DRAW_CHART_MAX_ROWS;
    double hi[2] = {0, 0};
    for (int i = 0; i < ns; i++)
        hi[i] = largest(pl->s[i].y, pl->s[i].n);
    if (!two_axes)
        hi[0] = hi[1] = fmax(hi[0], hi[1]);
    double xlo, xhi;
    plot_x_range(pl, &xlo, &xhi);

    chart_axis(w, g, p, y + 1, x, rows, hi[0], 0, meter_fmt_num);
    if (two_axes)
        chart_axis(w, g, p, y + 1, x + AXIS_COLS + cols, rows, hi[1], 1, meter_fmt_num);
    if (xlo > xhi || (hi[0] <= 0 && hi[1] <= 0)) {
        chart_empty(w, g, p, y + 1, x + AXIS_COLS, cols, rows);
        return;
    }
    meter_canvas_init(&c, cols, rows, g->utf8, dots, series);
    for (int i = 0; i < ns; i++) {
        const struct draw_xy *s = &pl->s[i];
        double xs[DRAW_PLOT_MAX_POINTS];
        int n = s->n < DRAW_PLOT_MAX_POINTS ? s->n : DRAW_PLOT_MAX_POINTS;
        const double *sx = s->x + (s->n - n), *sy = s->y + (s->n - n);
        for (int j = 0; j < n; j++)
            xs[j] = !pl->log_x ? sx[j] : sx[j] > 0 ? log10(sx[j]) : NAN;
        double lo = pl->log_x ? log10(xlo) : xlo, top = pl->log_x ? log10(xhi) : xhi;
        meter_canvas_plot_xy(&c, xs, sy, n, lo, top, 0, hi[i] > 0 ? hi[i] : 1, i, i == 1);
    }
    chart_blit(w, p, y + 1, x + AXIS_COLS, &c);
    plot_x_axis(w, g, p, y + 1 + rows, x + AXIS_COLS, cols, pl, xlo, xhi);
}
