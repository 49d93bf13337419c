/* legend.h: what every abbreviation on screen means.
 *
 * The header's fields, the dashboard's columns and highlights, the
 * sparkline's scale, the config view's columns and the memory bars, as
 * "word\tmeaning" lines (a line without a tab is a heading) that the help
 * overlay shows after the keys. Kept apart from the keys so that each is
 * written once: the keys by the views' key tables, the words here.
 */
#ifndef LEGEND_H
#define LEGEND_H

/* The legend's lines; *n gets their count. */
const char *const *legend_lines(int *n);

#endif
