/* screen.c: a view drawn without a terminal (screen.h). */
#include "screen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/core/cluster.h"

static char row_buf[1024];

void screen_open(struct screen *s, const state *st, enum layout_view view, int cols, int rows,
                 double now)
{
    memset(s, 0, sizeof *s);
    s->out = fopen("/dev/null", "w");
    s->in = fopen("/dev/null", "r");
    cr_assert(s->out && s->in);
    s->term = newterm("xterm", s->out, s->in);
    cr_assert_not_null(s->term);
    set_term(s->term);
    palette_init(&s->pal, 0);
    int n = state_node_count(st), engines = 0;
    for (int i = 0; i < n; i++)
        engines |= state_node_engine(st, i) != NULL;
    s->lay = layout_compute(cols, rows, view, n + (view == LAYOUT_CONFIG), 0, engines);
    cr_assert_not(s->lay.too_small);
    for (int p = 0; p < LAYOUT_PANE_COUNT; p++)
        if (s->lay.pane[p].w > 0 && s->lay.pane[p].h > 0)
            cr_assert_not_null(s->win[p] = newpad(s->lay.pane[p].h, s->lay.pane[p].w));
    s->v.st = st;
    s->v.now = now;
    s->v.wall = 1.7e9;
    s->v.n_nodes = n;
    s->v.lay = &s->lay;
    s->v.win = s->win;
    s->v.g = glyphs_get(0);
    s->v.pal = &s->pal;
    s->v.opt = &s->opt;
    s->v.fresh = 1;
    s->v.goto_view = -1;
    s->v.out = s->acts;
    s->v.max_out = UI_ACTIONS_MAX;
}

void screen_close(struct screen *s)
{
    for (int p = 0; p < LAYOUT_PANE_COUNT; p++)
        if (s->win[p])
            delwin(s->win[p]);
    endwin();
    delscreen(s->term);
    fclose(s->out);
    fclose(s->in);
}

void screen_draw(struct screen *s, const struct ui_view *view)
{
    for (int p = 0; p < LAYOUT_PANE_COUNT; p++)
        if (s->win[p])
            werase(s->win[p]);
    s->v.fresh = 1;
    view->draw(&s->v);
}

const char *screen_row(struct screen *s, enum layout_pane p, int y)
{
    row_buf[0] = '\0';
    if (!s->win[p] || y < 0 || y >= s->lay.pane[p].h)
        return row_buf;
    int w = s->lay.pane[p].w < (int)sizeof row_buf - 1 ? s->lay.pane[p].w : (int)sizeof row_buf - 1;
    mvwinnstr(s->win[p], y, 0, row_buf, w);
    size_t n = strlen(row_buf);
    while (n > 0 && row_buf[n - 1] == ' ')
        row_buf[--n] = '\0';
    return row_buf;
}

int screen_find(struct screen *s, enum layout_pane p, const char *text)
{
    for (int y = 0; y < s->lay.pane[p].h; y++)
        if (strstr(screen_row(s, p, y), text))
            return y;
    return -1;
}

const char *screen_cell(struct screen *s, int y, enum layout_col c)
{
    const struct layout_rect *r = &s->lay.col[c];
    const struct layout_rect *t = &s->lay.pane[LAYOUT_NODES];
    static char cell[128];
    cell[0] = '\0';
    if (!r->w)
        return cell;
    const char *row = screen_row(s, LAYOUT_NODES, y);
    int from = r->x - t->x;
    if ((int)strlen(row) > from)
        snprintf(cell, sizeof cell, "%.*s", r->w, row + from);
    char *p = cell;
    while (*p == ' ')
        p++;
    memmove(cell, p, strlen(p) + 1);
    size_t n = strlen(cell);
    while (n > 0 && cell[n - 1] == ' ')
        cell[--n] = '\0';
    return cell;
}

console_runs *screen_history_open(char *dir, size_t dirlen, char *db, size_t dblen,
                                  void (*record)(store *s))
{
    snprintf(dir, dirlen, "/tmp/infertop-test-views-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(db, dblen, "%s/history.db", dir);
    char err[256];
    store *s = store_open(db, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    record(s);
    store_close(s);
    struct cluster c = {.name = "t"};
    console_runs *runs = console_runs_open(db, &c, err, sizeof err);
    cr_assert_not_null(runs, "%s", err);
    return runs;
}

void screen_history_close(console_runs *runs, const char *dir)
{
    console_runs_free(runs);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}
