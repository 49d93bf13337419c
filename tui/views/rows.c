/* rows.c: the dashboard's filter and sort (rows.h). */
#include "rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int rows_match(const struct rows_key *r, const char *filter)
{
    return !filter[0] || strcasestr(r->name, filter) || strcasestr(r->engine, filter) ||
           strcasestr(r->state, filter);
}

/* Whether column c sorts by text (name, engine, state) rather than number. */
static int text_col(enum layout_col c)
{
    return c == LAYOUT_COL_NAME || c == LAYOUT_COL_ENGINE || c == LAYOUT_COL_STATE;
}

static const char *text_of(const struct rows_key *r, enum layout_col c)
{
    return c == LAYOUT_COL_NAME ? r->name : c == LAYOUT_COL_ENGINE ? r->engine : r->state;
}

/* a before b: <0; NaN after every number whatever the direction. */
static int compare(const struct rows_key *a, const struct rows_key *b, enum layout_col c, int rev)
{
    int d;
    if (text_col(c)) {
        d = strcasecmp(text_of(a, c), text_of(b, c));
    } else {
        double x = a->num[c], y = b->num[c];
        if (isnan(x) || isnan(y))
            return isnan(x) - isnan(y);
        d = (x > y) - (x < y);
    }
    return rev ? -d : d;
}

int rows_order(const struct rows_key *rows, int n, const char *filter, int col, int rev, int *order)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (rows_match(&rows[i], filter))
            order[m++] = i;
    if (col < 0 || col >= LAYOUT_COL_COUNT)
        return m;
    /* Insertion sort: stable, and a dashboard has a handful of rows. */
    for (int i = 1; i < m; i++) {
        int k = order[i], j = i;
        while (j > 0 && compare(&rows[order[j - 1]], &rows[k], (enum layout_col)col, rev) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    return m;
}
