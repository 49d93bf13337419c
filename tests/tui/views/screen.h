/* screen.h: a view drawn without a terminal, for the tests to read.
 *
 * Curses runs on /dev/null (newterm) and each pane of the layout is a pad
 * of its size, so that a view draws into it as into the windows ui.c
 * makes; screen_find reads the cells back as text. One screen at a time
 * (curses has one); Criterion runs each test in its own process. */
#ifndef TEST_SCREEN_H
#define TEST_SCREEN_H

#include "tui/stress/console_runs.h"
#include "tui/views/layout.h"
#include "tui/views/ui.h"
#include "tui/views/view.h"

struct screen {
    SCREEN *term;
    FILE *out, *in;
    struct layout lay;
    WINDOW *win[LAYOUT_PANE_COUNT];
    struct palette pal;
    struct ui_options opt;
    struct view_ctx v;
    struct action acts[UI_ACTIONS_MAX];
};

/* Lays out view at cols x rows for the nodes of st (engines: some node is
 * an HTTP engine) and binds st at `now`. */
void screen_open(struct screen *s, const state *st, enum layout_view view, int cols, int rows,
                 double now);
void screen_close(struct screen *s);

/* Draws the view once, its panes erased first. */
void screen_draw(struct screen *s, const struct ui_view *view);

/* Row y of pane p as text, trailing blanks cut ("" outside the pane). */
const char *screen_row(struct screen *s, enum layout_pane p, int y);
/* The first row of pane p holding text, or -1. */
int screen_find(struct screen *s, enum layout_pane p, const char *text);
/* The text of column c of row y in the dashboard's node table, blanks cut. */
const char *screen_cell(struct screen *s, int y, enum layout_col c);

/* A history database in a fresh directory (its path into dir, the
 * database's into db), filled by record, and the console's runs over it
 * as the History and Config views read them. Asserts on failure. */
console_runs *screen_history_open(char *dir, size_t dirlen, char *db, size_t dblen,
                                  void (*record)(store *s));
/* Frees runs and removes dir. */
void screen_history_close(console_runs *runs, const char *dir);

#endif
