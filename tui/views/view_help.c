/* view_help.c: the help overlay (F1 or ?), drawn over the current view. */
#include "draw.h"
#include "legend.h"
#include "view.h"

/* "key\tmeaning"; a line without a tab is a heading. */
static const char *const help_lines[] = {
    "Views",
    "1 d\tdashboard: a row per node, cluster totals, events",
    "2 n Enter\tnode detail of the selected node",
    "3 c\tconfig: prefill_step and kv_bits, live",
    "4 e\tevents of all nodes",
    "5 s\tstress: set up a run, start it, watch it, abort it",
    "6 H\thistory: recorded runs, a run's summary, compare, export",
    "7 P\tplan: layers placed so a target context fits; apply it",
    "Tab S-Tab\tnext / previous view",
    "Moving",
    "j k arrows\tselect a row or scroll",
    "h l arrows\tprevious / next node (detail), field (config)",
    "g G\tfirst / last;  PgUp PgDn: a page",
    "mouse\tclick a row to select it, a tab to switch",
    "Config (digits there are values, use Tab to switch views)",
    "0-9\ttype prefill_step or kv_bits; Backspace erases",
    "+ -\tprefill_step x2 or /2; kv_bits up/down",
    "a  b\tprefill_step auto;  cycle kv_bits",
    "Enter Esc\tapply the change / drop it",
    "Events",
    "/\ttype a filter (Enter keeps it, Esc clears it)",
    "Stress",
    "j k Enter\tchoose a field, edit it (choices cycle); Enter on start runs",
    "a\tabort the run going (kept in the history as aborted)",
    "History",
    "Enter\tthe selected run's legs and nodes (bottleneck marked)",
    "m C\tmark a run; compare the marked run with the selected one",
    "g l\tchart tok/s and step ms against context; next leg",
    "x\twrite the shown run's requests to ./infertop-run-ID.csv",
    "f o r\tcycle the status filter; sort by max context; reload",
    "[ ]\tscroll the comparison",
    "Plan (digits type the target context; Tab or d to leave)",
    "j k Enter\tchoose target context or kv_bits; type the context, cycle bits",
    "+ -\ttarget context x2 or /2",
    "a\tapply the plan: restart every node over SSH (asks y/n)",
    "Plan bars\tweights, KV at target, reserve+scratch+runtime, free",
    "Nodes",
    "S X R\tstart / stop / restart the selected node (X, R ask y/n)",
    "detail\tfollows the node's log over SSH, shows its host facts",
    "Anywhere",
    "? F1\tthis help;  Ctrl-L redraw;  q quit",
};

#define KEY_LINES ((int)(sizeof help_lines / sizeof help_lines[0]))
#define KEY_COLS 12

/* The keys, then the legend (legend.h). */
static int help_count(void)
{
    int n;
    legend_lines(&n);
    return KEY_LINES + n;
}

static const char *help_line(int i)
{
    int n;
    const char *const *legend = legend_lines(&n);
    return i < KEY_LINES ? help_lines[i] : legend[i - KEY_LINES];
}

static int help_rows(const struct view_ctx *v)
{
    return v->lay->pane[LAYOUT_HELP].h - 2;
}

void view_help_draw(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_HELP];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_HELP];
    if (!w)
        return;
    draw_box(w, v->g, palette_attr(v->pal, PAL_TITLE));
    draw_text(w, v->g, 0, 2, p->w - 4, palette_attr(v->pal, PAL_TITLE),
              " infertop help: j/k scroll, any other key closes ");
    int rows = help_rows(v), inner = p->w - 4, total = help_count();
    if (v->help_top > total - rows)
        v->help_top = total - rows > 0 ? total - rows : 0;
    for (int i = 0; i < rows && v->help_top + i < total; i++) {
        const char *line = help_line(v->help_top + i);
        const char *tab = line;
        while (*tab && *tab != '\t')
            tab++;
        if (!*tab) {
            draw_text(w, v->g, 1 + i, 2, inner, palette_attr(v->pal, PAL_TITLE), line);
            continue;
        }
        char key[KEY_COLS + 1];
        int n = (int)(tab - line) < KEY_COLS ? (int)(tab - line) : KEY_COLS;
        for (int k = 0; k < n; k++)
            key[k] = line[k];
        key[n] = '\0';
        draw_text(w, v->g, 1 + i, 3, KEY_COLS, palette_attr(v->pal, PAL_KEY), key);
        draw_text(w, v->g, 1 + i, 3 + KEY_COLS, inner - KEY_COLS - 1, A_NORMAL, tab + 1);
    }
}

int view_help_key(struct view_ctx *v, int key)
{
    int to = view_move(key, v->help_top, help_count() - help_rows(v) + 1, help_rows(v));
    if (to < 0)
        return 0;
    v->help_top = to;
    return 1;
}
