/* meter.h: the numbers and pictures of the console, without curses.
 *
 * Pure functions that turn values into text and cells: compact number
 * formats, the memory bar's split, sparkline levels, and a dot canvas for
 * line charts (braille cells of 2x4 dots, or ASCII cells of 1x3 dots).
 * draw.h puts their results on screen; the tests check them directly.
 */
#ifndef METER_H
#define METER_H

#include <stddef.h>
#include <stdint.h>

#include "glyphs.h"

/* Bytes in at most 4 columns, powers of 1024: "512B", "1.5K", "12M",
 * "999M", "1.0G". */
void meter_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* A rate, a duration in ms or a context with 3 significant digits where
 * they fit, in at most 5 columns: "0.52", "12.3", "1234", "12.3k" (for
 * 12 300), "60.2M"; "-" for NaN or infinity. */
void meter_fmt_num(double v, char *buf, size_t len);

/* Seconds as the two largest units: "45s", "12m05s", "3h12m", "2d03h". */
void meter_fmt_duration(double s, char *buf, size_t len);

/* Splits `width` columns between the memory bar's parts (weights, KV,
 * other, headroom; GLYPHS_MEM_COUNT of them) in proportion to their bytes,
 * by largest remainder: the columns always sum to width and each part is
 * within one column of its exact share. All zero when every part is 0. */
void meter_membar(const uint64_t part[GLYPHS_MEM_COUNT], int width, int cols[GLYPHS_MEM_COUNT]);

/* Sparkline levels 0..levels-1 of n values scaled from 0 to the largest
 * finite value (all 0 when it is not positive); -1 for a NaN value. */
void meter_spark(const double *v, int n, int levels, int *level);

/* ---- line charts ---- */

#define METER_SERIES_MAX 8

/* A chart area of cols x rows cells, dx x dy dots each. The caller gives
 * the two arrays of cols*rows bytes, row-major from the top left. */
struct meter_canvas {
    int cols, rows;
    int dx, dy;      /* 2x4 (braille) or 1x3 (ASCII) */
    uint8_t *dots;   /* per cell: bit (y*dx + x) for the dot at x, y (y from the top) */
    uint8_t *series; /* per cell: bit i when series i put a dot there */
};

/* Clears the canvas. braille: 2x4 dots per cell, else 1x3. */
void meter_canvas_init(struct meter_canvas *c, int cols, int rows, int braille, uint8_t *dots,
                       uint8_t *series);

/* Plots n values, one per dot column, right-aligned (the last value in the
 * rightmost column; older values that do not fit are left out). Values
 * scale from lo (bottom dot row) to hi (top) and are clamped; NaN leaves
 * a gap. Consecutive values are joined by a vertical run so that steep
 * changes stay a line. dashed: only every other cell column is drawn, to
 * tell a series apart without colour. series: 0..METER_SERIES_MAX-1. */
void meter_canvas_plot(struct meter_canvas *c, const double *v, int n, double lo, double hi,
                       int series, int dashed);

/* Plots n points (x[i], y[i]) joined in order by straight lines: x scales
 * from xlo (left dot column) to xhi (right), y from ylo (bottom) to yhi,
 * both clamped. A point with a NaN coordinate is left out and breaks the
 * line; a point alone is one dot. series and dashed as above. */
void meter_canvas_plot_xy(struct meter_canvas *c, const double *x, const double *y, int n,
                          double xlo, double xhi, double ylo, double yhi, int series, int dashed);

/* The unicode braille character (U+2800..U+28FF) of a cell's dots (2x4). */
unsigned meter_braille(unsigned dots);

/* The glyph of cell (x, y) as a NUL-terminated string in out (at least 5
 * bytes): braille in UTF-8 for 2x4 canvases; for 1x3 an ASCII character:
 * ' ' empty, '\'' top, '-' middle, '_' bottom, '|' more than one dot. */
void meter_canvas_cell(const struct meter_canvas *c, int x, int y, char out[5]);

#endif
