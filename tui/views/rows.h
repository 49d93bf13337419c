/* rows.h: which of the dashboard's node rows show, and in what order.
 *
 * A row is described by its text fields (matched by the filter) and a
 * number per column (what the column shows, NaN when nothing); the filter
 * and the sort are plain functions of those, without curses or a state.
 */
#ifndef ROWS_H
#define ROWS_H

#include "layout.h"

struct rows_key {
    const char *name, *engine, *state; /* what the filter matches */
    double num[LAYOUT_COL_COUNT];      /* what a numeric column sorts by */
};

/* Whether the filter is a substring of the row's name, engine or state,
 * ignoring case; "" matches every row. */
int rows_match(const struct rows_key *r, const char *filter);

/* The rows the filter matches, ordered by column col (-1: as given), in
 * reverse when rev; ties and NaN keep the given order, NaN last. Writes
 * their indices to order and returns how many. */
int rows_order(const struct rows_key *rows, int n, const char *filter, int col, int rev,
               int *order);

#endif
