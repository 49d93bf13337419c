/* draw.h: curses helpers shared by the views: clipped text, rules and
 * boxes, and the meters of meter.h put on screen.
 *
 * Text is counted in columns (one per UTF-8 character). With the ASCII
 * glyph set every byte >= 0x80 of a text (a node name, an error message)
 * is drawn as '?', so that nothing but ASCII ever reaches the terminal.
 */
#ifndef DRAW_H
#define DRAW_H

#include <curses.h>
#include <stddef.h>

#include "glyphs.h"
#include "palette.h"
#include "tui/core/state.h"

/* Widest and tallest chart drawn; a larger area is cut to this. */
#define DRAW_CHART_MAX_COLS 400
#define DRAW_CHART_MAX_ROWS 100

/* Writes s at (y, x) in at most width columns, cut with the ellipsis
 * glyph when longer. Returns the columns written. */
int draw_text(WINDOW *w, const struct glyphs *g, int y, int x, int width, attr_t a, const char *s);
int draw_textf(WINDOW *w, const struct glyphs *g, int y, int x, int width, attr_t a,
               const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* s right-aligned in width columns. */
void draw_rjust(WINDOW *w, const struct glyphs *g, int y, int x, int width, attr_t a,
                const char *s);
/* The number of columns s takes. */
int draw_width(const char *s);
/* n copies of a one-column glyph. */
void draw_repeat(WINDOW *w, int y, int x, int n, attr_t a, const char *glyph);
/* A border around the whole window. */
void draw_box(WINDOW *w, const struct glyphs *g, attr_t a);

/* The memory bar split weights / KV / other / headroom against the
 * budget, with the headroom (or "OVER") after it when width allows, in
 * the alert style when low; "-" while the node has not reported memory. */
void draw_membar(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x,
                 int width, const struct state_memory *m, int low);

/* A sparkline of n values, right-aligned in width columns. */
void draw_spark(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x, int width,
                const double *v, int n);

/* One line of a chart: label, values one per dot column (oldest first). */
struct draw_series {
    const char *label;
    const double *v;
    int n;
};

/* A line chart in the rectangle (y, x, width, height) of w: a title row
 * with a legend, a y axis labelled with fmt, and up to two series (the
 * first solid, the second dashed, and each in its colour) scaled from 0
 * to the largest value or to hi when hi > 0. */
void draw_chart(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x, int width,
                int height, const char *title, const struct draw_series *s, int ns, double hi,
                void (*fmt)(double v, char *buf, size_t len));

/* The dot columns a chart of that width has (so callers fetch enough). */
int draw_chart_points(const struct glyphs *g, int width);

/* The most points of a series draw_plot plots: the newest are kept. */
#define DRAW_PLOT_MAX_POINTS 4096

/* A series of an x-y plot: n points (x[i], y[i]) joined in that order; a
 * NaN breaks the line. */
struct draw_xy {
    const char *label;
    const double *x, *y;
    int n;
};

struct draw_plot {
    const char *title;
    const char *xname; /* what x is: "context", "request" */
    int log_x;         /* x on a log scale (points with x <= 0 are left out) */
    int shared;        /* both series on one y scale */
    const struct draw_xy *s;
    int ns; /* 1 or 2 */
};

/* An x-y plot in the rectangle (y, x, width, height) of w: a title row
 * with a legend, the plot with a y axis on the left for the first series
 * and, unless shared, one on the right for the second (each from 0 to its
 * largest value), and a bottom row with the x range and the axis name.
 * The first series is solid, the second dashed. */
void draw_plot(WINDOW *w, const struct glyphs *g, const struct palette *p, int y, int x, int width,
               int height, const struct draw_plot *pl);

#endif
