/* meter.c: number formats, the memory bar split, sparklines, dot canvas. */
#include "meter.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"

void meter_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "BKMGTPE";
    double v = (double)bytes;
    int u = 0;
    if (bytes < 1000) {
        snprintf(buf, len, "%uB", (unsigned)bytes);
        return;
    }
    /* 1000..1023 of a unit would need 5 columns: show them as 1.0 of the next. */
    while (v >= 1000 && u < 6) {
        v /= 1024;
        u++;
    }
    if (v < 9.95)
        snprintf(buf, len, "%.1f%c", v, units[u]);
    else
        snprintf(buf, len, "%.0f%c", v, units[u]);
}

void meter_fmt_num(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(buf, len, "-");
    else if (a < 9.995)
        snprintf(buf, len, "%.2f", v);
    else if (a < 99.95)
        snprintf(buf, len, "%.1f", v);
    else if (a < 9999.5)
        snprintf(buf, len, "%.0f", v);
    else if (a < 99950)
        snprintf(buf, len, "%.1fk", v / 1000);
    else if (a < 999500)
        snprintf(buf, len, "%.0fk", v / 1000);
    else if (a < 9.995e6)
        snprintf(buf, len, "%.2fM", v / 1e6);
    else if (a < 99.95e6)
        snprintf(buf, len, "%.1fM", v / 1e6);
    else
        snprintf(buf, len, "%.0fM", v / 1e6);
}

void meter_fmt_duration(double s, char *buf, size_t len)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "-");
        return;
    }
    unsigned long t = (unsigned long)s;
    if (t < 60)
        snprintf(buf, len, "%lus", t);
    else if (t < 3600)
        snprintf(buf, len, "%lum%02lus", t / 60, t % 60);
    else if (t < 86400)
        snprintf(buf, len, "%luh%02lum", t / 3600, t % 3600 / 60);
    else
        snprintf(buf, len, "%lud%02luh", t / 86400, t % 86400 / 3600);
}

void meter_membar(const uint64_t part[GLYPHS_MEM_COUNT], int width, int cols[GLYPHS_MEM_COUNT])
{
    unsigned __int128 total = 0;
    unsigned __int128 rem[GLYPHS_MEM_COUNT];
    int given = 0;
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++)
        total += part[i];
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++) {
        cols[i] = 0;
        rem[i] = 0;
    }
    if (total == 0 || width <= 0)
        return;
    for (int i = 0; i < GLYPHS_MEM_COUNT; i++) {
        unsigned __int128 exact = (unsigned __int128)part[i] * (unsigned)width;
        cols[i] = (int)(exact / total);
        rem[i] = exact % total;
        given += cols[i];
    }
    /* Largest remainders get the columns that flooring left over; ties go
     * to the earlier part. */
    while (given < width) {
        int best = 0;
        for (int i = 1; i < GLYPHS_MEM_COUNT; i++)
            if (rem[i] > rem[best])
                best = i;
        cols[best]++;
        rem[best] = 0;
        given++;
    }
}

void meter_spark(const double *v, int n, int levels, int *level)
{
    double hi = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] > hi)
            hi = v[i];
    for (int i = 0; i < n; i++) {
        if (isnan(v[i])) {
            level[i] = -1;
        } else if (hi <= 0) {
            level[i] = 0;
        } else {
            double f = v[i] / hi;
            int l = (int)lround(f * (levels - 1));
            level[i] = l < 0 ? 0 : l >= levels ? levels - 1 : l;
        }
    }
}

void meter_canvas_init(struct meter_canvas *c, int cols, int rows, int braille, uint8_t *dots,
                       uint8_t *series)
{
    c->cols = cols > 0 ? cols : 0;
    c->rows = rows > 0 ? rows : 0;
    c->dx = braille ? 2 : 1;
    c->dy = braille ? 4 : 3;
    c->dots = dots;
    c->series = series;
    memset(dots, 0, (size_t)c->cols * (size_t)c->rows);
    memset(series, 0, (size_t)c->cols * (size_t)c->rows);
}

static void canvas_set(struct meter_canvas *c, int x, int y, int series)
{
    int cell = (y / c->dy) * c->cols + x / c->dx;
    c->dots[cell] |= (uint8_t)(1u << ((y % c->dy) * c->dx + x % c->dx));
    c->series[cell] |= (uint8_t)(1u << series);
}

/* The dot of v in 0..dots-1 scaled from lo to hi (clamped); -1 for NaN. */
static int scale_dot(double v, double lo, double hi, int dots)
{
    if (isnan(v))
        return -1;
    double f = hi > lo ? (v - lo) / (hi - lo) : 0;
    if (f < 0)
        f = 0;
    if (f > 1)
        f = 1;
    return (int)lround(f * (dots - 1));
}

/* The dot row (from the top) of a value; -1 for NaN. */
static int canvas_row(const struct meter_canvas *c, double v, double lo, double hi)
{
    int h = c->rows * c->dy;
    int d = scale_dot(v, lo, hi, h);
    return d < 0 ? -1 : h - 1 - d;
}

/* A dashed series keeps every other cell column. */
static void plot_dot(struct meter_canvas *c, int x, int y, int series, int dashed)
{
    if (!dashed || (x / c->dx) % 2 == 0)
        canvas_set(c, x, y, series);
}

void meter_canvas_plot(struct meter_canvas *c, const double *v, int n, double lo, double hi,
                       int series, int dashed)
{
    int w = c->cols * c->dx;
    int prev = -1;
    if (w == 0 || c->rows == 0)
        return;
    for (int x = 0; x < w; x++) {
        int i = n - w + x;
        int y = i >= 0 ? canvas_row(c, v[i], lo, hi) : -1;
        if (y >= 0) {
            int from = prev >= 0 ? prev : y;
            int a = from < y ? from : y, b = from < y ? y : from;
            /* The vertical run from the previous value goes in this
             * column, so that a jump reads as one stroke. */
            for (int yy = a; yy <= b; yy++)
                plot_dot(c, x, yy, series, dashed);
        }
        prev = y;
    }
}

/* The dots of the straight line from (x0, y0) to (x1, y1): one per step
 * along the longer axis, so the line has no holes. */
static void plot_line(struct meter_canvas *c, int x0, int y0, int x1, int y1, int series,
                      int dashed)
{
    int steps = abs(x1 - x0) > abs(y1 - y0) ? abs(x1 - x0) : abs(y1 - y0);
    for (int t = 0; t <= steps; t++) {
        double f = steps ? (double)t / steps : 0.0;
        plot_dot(c, x0 + (int)lround(f * (x1 - x0)), y0 + (int)lround(f * (y1 - y0)), series,
                 dashed);
    }
}

void meter_canvas_plot_xy(struct meter_canvas *c, const double *x, const double *y, int n,
                          double xlo, double xhi, double ylo, double yhi, int series, int dashed)
{
    int w = c->cols * c->dx;
    int px = -1, py = -1;
    if (w == 0 || c->rows == 0)
        return;
    for (int i = 0; i < n; i++) {
        int cx = scale_dot(x[i], xlo, xhi, w);
        int cy = canvas_row(c, y[i], ylo, yhi);
        if (cx < 0 || cy < 0) {
            px = -1;
            continue;
        }
        if (px >= 0)
            plot_line(c, px, py, cx, cy, series, dashed);
        else
            plot_dot(c, cx, cy, series, dashed);
        px = cx;
        py = cy;
    }
}

unsigned meter_braille(unsigned dots)
{
    /* Braille numbers its dots down the left column (1, 2, 3), down the
     * right (4, 5, 6), then the bottom row (7, 8). */
    static const unsigned bit_of[8] = {0x01, 0x08, 0x02, 0x10, 0x04, 0x20, 0x40, 0x80};
    unsigned cp = 0x2800;
    for (int i = 0; i < 8; i++)
        if (dots & (1u << i))
            cp |= bit_of[i];
    return cp;
}

void meter_canvas_cell(const struct meter_canvas *c, int x, int y, char out[5])
{
    unsigned d = c->dots[y * c->cols + x];
    if (c->dx == 2) {
        out[utf8_encode(meter_braille(d), out)] = '\0';
        return;
    }
    static const char one[8] = {' ', '\'', '-', '|', '_', '|', '|', '|'};
    out[0] = one[d & 7];
    out[1] = '\0';
}
