/* ui.c: the terminal, the frame loop's drawing half, and the keys every
 * view shares (switching views, help, quit, resize, redraw).
 *
 * Each pane of the layout gets its own window, made again whenever the
 * layout changes (size, view, help, node count). A frame erases and draws
 * every window (a view with own_erase leaves rows whose data did not change
 * alone: erasing and copying them again was a large part of a frame's cost),
 * queues each with wnoutrefresh and ends with one doupdate, so curses
 * sends only the cells that differ from the screen.
 */
#include "ui.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>

#include "draw.h"
#include "meter.h"
#include "view.h"

#define KEY_CTRL_L 12
#define KEY_ESC 27
#define ESC_DELAY_MS 25 /* Esc alone is a key here, not the start of a sequence to wait for */
#define HEADER_TAB_ROW 1
#define WIDE_HEADER_COLS 140
#define HEADER_NUM_COLS 5 /* meter_fmt_num's widest: "99.9k" */
#define HEADER_CTX_COLS 6 /* a context of up to 999999 */
/* The refresh intervals + and - step through, in seconds. */
static const double delay_steps[] = {0.1, 0.2, 0.5, 1, 2, 3, 5, 10};
#define N_DELAY_STEPS ((int)(sizeof delay_steps / sizeof delay_steps[0]))

static const struct ui_view *const views[LAYOUT_VIEW_COUNT] = {
    [LAYOUT_DASHBOARD] = &view_dashboard, [LAYOUT_NODE] = &view_node,
    [LAYOUT_CONFIG] = &view_config,       [LAYOUT_EVENTS] = &view_events,
    [LAYOUT_STRESS] = &view_stress,       [LAYOUT_HISTORY] = &view_history,
    [LAYOUT_PLAN] = &view_plan,
};

/* The keys every view shares; a view's own come first. The jumps' commands
 * are the views they go to. */
enum { G_TAB = LAYOUT_VIEW_COUNT, G_BTAB, G_HELP, G_QUIT, G_PAUSE, G_SLOWER, G_FASTER, G_REDRAW };

static const struct view_key view_keys[] = {
    {{'1', 'd'},
     "1 d",
     NULL,
     "dashboard: a row per node, cluster totals, events",
     LAYOUT_DASHBOARD},
    {{'2', 'n'},
     "2 n",
     NULL,
     "node detail of the selected node (Enter on its row too)",
     LAYOUT_NODE},
    {{'3', 'c'}, "3 c", NULL, "config: prefill_step and kv_bits, live", LAYOUT_CONFIG},
    {{'4', 'e'}, "4 e", NULL, "events of all nodes", LAYOUT_EVENTS},
    {{'5', 's'}, "5 s", NULL, "stress: set up a run, start it, watch it, abort it", LAYOUT_STRESS},
    {{'6', 'H'},
     "6 H",
     NULL,
     "history: recorded runs, a run's summary, compare, export",
     LAYOUT_HISTORY},
    {{'7', 'P'},
     "7 P",
     NULL,
     "plan: layers placed so a target context fits; apply it",
     LAYOUT_PLAN},
    {{'\t'}, "Tab", NULL, "next view", G_TAB},
    {{KEY_BTAB}, "S-Tab", NULL, "previous view", G_BTAB},
};
static const struct view_key any_keys[] = {
    {{0}, "j k arrows", NULL, "select a row or scroll", -1},
    {{0}, "g G", NULL, "first / last;  PgUp PgDn: a page", -1},
    {{0}, "mouse", NULL, "click a row to select it, a tab to switch", -1},
    {{0}, "digits", NULL, "switch views, except in a field: Enter edits, Esc leaves", -1},
    {{'p', ' '},
     "p",
     "pause",
     "pause: the screen stops following the nodes (space too); again resumes",
     G_PAUSE},
    {{'+', '='}, "+ -", NULL, "refresh interval longer / shorter (-d at start)", G_SLOWER},
    {{'-'}, "", NULL, NULL, G_FASTER},
    {{'?', KEY_F(1)}, "?", "help", "this help (F1 too)", G_HELP},
    {{KEY_CTRL_L}, "Ctrl-L", NULL, "redraw", G_REDRAW},
    {{'q', KEY_F(10)}, "q", "quit", "quit (F10 too)", G_QUIT},
};
static const struct view_keys global_tables[] = {KEYS_TABLE("Views", view_keys),
                                                 KEYS_TABLE("Anywhere", any_keys)};

struct ui {
    struct ui_options opt;
    SCREEN *screen;
    struct palette pal;
    const struct ui_view *view;
    int help;   /* an overlay is open (what the layout was made for) */
    int paused; /* the state's changes are not drawn */
    /* While paused: the state and the clock as they were, which every
     * view draws (scrolling or switching views shows the same moment). */
    state *frozen;
    double frozen_now;
    const state *live; /* the state and clock of the call, paused or not */
    double live_now;
    int stale;    /* the state changed since the last frame */
    double delay; /* seconds between frames for the state's changes */

    struct layout lay;
    int lay_nodes, lay_help, lay_engines; /* what lay was computed for, besides size and view */
    int have_layout;
    WINDOW *win[LAYOUT_PANE_COUNT];
    int erase_screen; /* the panes moved: cells no pane covers hold old text */

    int dirty, need_clear;
    double last_frame;
    int tab_x[LAYOUT_VIEW_COUNT + 1]; /* the tabs' columns on the header's second row */

    struct view_ctx v;
};

/* ---- layout and windows ---- */

static void free_windows(ui *u)
{
    for (int p = 0; p < LAYOUT_PANE_COUNT; p++) {
        if (u->win[p])
            delwin(u->win[p]);
        u->win[p] = NULL;
    }
}

static int layout_nodes(const ui *u)
{
    /* The config table has a row for all nodes after the nodes. */
    return u->v.n_nodes + (u->view->layout == LAYOUT_CONFIG);
}

/* Whether some node is an HTTP engine (its columns then rank first). */
static int has_engines(const ui *u)
{
    for (int i = 0; i < u->v.n_nodes; i++)
        if (state_node_engine(u->v.st, i))
            return 1;
    return 0;
}

/* Lays out again when the size, view, help, node count or engines
 * changed. A window that cannot be made leaves its pane empty. */
static void ensure_layout(ui *u)
{
    int n = layout_nodes(u), engines = has_engines(u);
    u->help = u->v.overlay != VIEW_OVERLAY_NONE;
    if (u->have_layout && u->lay.cols == COLS && u->lay.rows == LINES &&
        u->lay.view == u->view->layout && u->lay_nodes == n && u->lay_help == u->help &&
        u->lay_engines == engines)
        return;
    free_windows(u);
    u->lay = layout_compute(COLS, LINES, u->view->layout, n, u->help, engines);
    u->lay_nodes = n;
    u->lay_help = u->help;
    u->lay_engines = engines;
    u->have_layout = 1;
    for (int p = 0; p < LAYOUT_PANE_COUNT; p++) {
        const struct layout_rect *r = &u->lay.pane[p];
        if (r->w > 0 && r->h > 0)
            u->win[p] = newwin(r->h, r->w, r->y, r->x);
    }
    u->erase_screen = 1;
    u->v.fresh = 1;
    u->dirty = 1;
}

static void set_view(ui *u, enum layout_view to)
{
    if (to == LAYOUT_NODE && u->v.n_nodes == 0)
        return;
    u->view = views[to];
}

/* ---- open and close ---- */

ui *ui_open(const struct ui_options *o, char *err, size_t errlen)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(err, errlen, "the console needs a terminal on stdin and stdout");
        return NULL;
    }
    ui *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(err, errlen, "out of memory for the console");
        return NULL;
    }
    u->opt = *o;
    setlocale(LC_CTYPE, "");
    int utf8 = !o->ascii && glyphs_locale_utf8();
    const char *nc = getenv("NO_COLOR");
    int color = !o->no_color && !(nc && nc[0]);

    u->screen = newterm(NULL, stdout, stdin);
    if (!u->screen) {
        const char *term = getenv("TERM");
        snprintf(err, errlen, "cannot set up terminal \"%s\" (check TERM)", term ? term : "");
        free(u);
        return NULL;
    }
    set_term(u->screen);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(ESC_DELAY_MS);
    /* With typeahead checks, doupdate polls stdin every few lines it
     * sends: a syscall each time, for a frame small enough that keys never
     * wait long for it anyway. */
    typeahead(-1);
    curs_set(0);
    if (o->mouse) {
        mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED, NULL);
        mouseinterval(0);
    }
    palette_init(&u->pal, color);

    u->view = views[LAYOUT_DASHBOARD];
    u->v.g = glyphs_get(utf8);
    u->v.pal = &u->pal;
    u->v.opt = &u->opt;
    u->v.win = u->win;
    u->v.lay = &u->lay;
    u->v.goto_view = -1;
    u->dirty = 1;
    u->need_clear = 1;
    u->last_frame = -1e9;
    u->delay = o->delay > 0 ? o->delay : UI_DELAY_DEFAULT;
    return u;
}

void ui_close(ui *u)
{
    if (!u)
        return;
    free_windows(u);
    endwin();
    delscreen(u->screen);
    state_free(u->frozen);
    free(u);
}

/* ---- per call ---- */

static void bind_state(ui *u, const state *st, double now)
{
    u->live = st;
    u->live_now = now;
    u->v.st = u->frozen ? u->frozen : st;
    u->v.now = u->frozen ? u->frozen_now : now;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    u->v.wall = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    u->v.n_nodes = state_node_count(st);
    if (u->v.node >= u->v.n_nodes)
        u->v.node = u->v.n_nodes > 0 ? u->v.n_nodes - 1 : 0;
    if (u->view->layout == LAYOUT_NODE && u->v.n_nodes == 0)
        u->view = views[LAYOUT_DASHBOARD];
    ensure_layout(u);
}

void ui_mark_dirty(ui *u)
{
    u->stale = 1;
}

void ui_message(ui *u, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    view_vmessage(&u->v, 0, fmt, ap);
    va_end(ap);
    u->dirty = 1;
}

int ui_node_shown(const ui *u)
{
    return u->view->layout == LAYOUT_NODE && u->v.n_nodes > 0 ? u->v.node : -1;
}

double ui_frame_due(const ui *u, double now)
{
    /* A key is answered at once (at UI_FPS); the state's changes wait for
     * the refresh interval, and while paused for nothing. */
    double at = u->dirty ? u->last_frame + 1.0 / UI_FPS : INFINITY;
    if (u->stale && !u->paused)
        at = fmin(at, u->last_frame + u->delay);
    if (isinf(at))
        return -1;
    return at > now ? at - now : 0;
}

/* ---- keys ---- */

static void click(ui *u, const MEVENT *ev)
{
    if (u->v.overlay) {
        u->v.overlay = VIEW_OVERLAY_NONE;
        return;
    }
    if (ev->y == HEADER_TAB_ROW && !u->lay.too_small) {
        for (int t = 0; t < LAYOUT_VIEW_COUNT; t++)
            if (ev->x >= u->tab_x[t] && ev->x < u->tab_x[t + 1])
                set_view(u, (enum layout_view)t);
        return;
    }
    if (u->view->click && !u->lay.too_small)
        u->view->click(&u->v, ev->y, ev->x);
}

/* The help's tables: the views, each view's keys, then the keys of any. */
#define HELP_TABLES (LAYOUT_VIEW_COUNT + 2)
static int help_tables(const struct view_keys **t)
{
    int n = 0;
    t[n++] = &global_tables[0];
    for (int i = 0; i < LAYOUT_VIEW_COUNT; i++)
        t[n++] = views[i]->keys;
    t[n++] = &global_tables[1];
    return n;
}

/* The next refresh interval of the steps, longer (dir 1) or shorter (-1). */
static double step_delay(double d, int dir)
{
    for (int i = 0; i < N_DELAY_STEPS; i++) {
        int k = dir > 0 ? i : N_DELAY_STEPS - 1 - i;
        if (dir > 0 ? delay_steps[k] > d + 1e-9 : delay_steps[k] < d - 1e-9)
            return delay_steps[k];
    }
    return d;
}

/* Keys no view took. */
static void global_key(ui *u, int key)
{
    int cmd = -1;
    for (int t = 0; t < 2 && cmd < 0; t++)
        cmd = keys_cmd(&global_tables[t], key);
    if (cmd >= 0 && cmd < LAYOUT_VIEW_COUNT) {
        set_view(u, (enum layout_view)cmd);
        return;
    }
    switch (cmd) {
    case G_QUIT: {
        struct action a = {.kind = ACT_QUIT, .node = ACT_ALL_NODES};
        view_emit(&u->v, &a);
        break;
    }
    case G_HELP:
        u->v.overlay = VIEW_OVERLAY_HELP;
        u->v.overlay_top = 0;
        break;
    case G_TAB:
    case G_BTAB: {
        int step = cmd == G_TAB ? 1 : LAYOUT_VIEW_COUNT - 1;
        enum layout_view to = (enum layout_view)((u->view->layout + step) % LAYOUT_VIEW_COUNT);
        if (to == LAYOUT_NODE && u->v.n_nodes == 0)
            to = (enum layout_view)((to + step) % LAYOUT_VIEW_COUNT);
        set_view(u, to);
        break;
    }
    case G_PAUSE:
        u->paused = !u->paused;
        /* The views go back to the live state before the copy goes. */
        u->v.st = u->live;
        u->v.now = u->live_now;
        state_free(u->frozen);
        u->frozen = NULL;
        if (u->paused && !(u->frozen = state_copy(u->live)))
            view_message(&u->v, 1, "paused, but out of memory for a still copy: values move");
        u->frozen_now = u->live_now;
        if (u->frozen)
            u->v.st = u->frozen;
        break;
    case G_SLOWER:
    case G_FASTER:
        u->delay = step_delay(u->delay, cmd == G_SLOWER ? 1 : -1);
        view_message(&u->v, 0, "refresh every %.1f s", u->delay);
        break;
    }
}

static void handle_key(ui *u, int key)
{
    struct view_ctx *v = &u->v;
    if (key == KEY_RESIZE || keys_cmd(&global_tables[1], key) == G_REDRAW) {
        u->need_clear = 1;
        u->dirty = 1;
        ensure_layout(u);
        return;
    }
    u->dirty = 1;
    v->message[0] = '\0';
    if (key == KEY_MOUSE) {
        MEVENT ev;
        if (getmouse(&ev) == OK && (ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED)))
            click(u, &ev);
        return;
    }
    if (v->confirm) {
        v->confirm = 0;
        if (key == 'y' || key == 'Y')
            view_emit(v, &v->confirm_act);
        else
            view_message(v, 0, "cancelled");
        return;
    }
    if (v->overlay) {
        const struct view_keys *t[HELP_TABLES];
        if (!view_overlay_key(v, t, help_tables(t), key))
            v->overlay = VIEW_OVERLAY_NONE;
        return;
    }
    v->goto_view = -1;
    if (!u->lay.too_small && u->view->key(v, key)) {
        if (v->goto_view >= 0)
            set_view(u, (enum layout_view)v->goto_view);
        return;
    }
    global_key(u, key);
}

int ui_handle_input(ui *u, const state *st, double now, struct action *out, int max)
{
    bind_state(u, st, now);
    u->v.out = out;
    u->v.max_out = max;
    u->v.n_out = 0;
    while (u->v.n_out < max) {
        int key = wgetch(stdscr);
        if (key == ERR)
            break;
        handle_key(u, key);
        ensure_layout(u);
    }
    u->v.out = NULL;
    return u->v.n_out;
}

/* ---- drawing ---- */

/* A label and its value, the value given `cols` columns however long it
 * is, so that the fields after it stay where they are. */
static void header_item(ui *u, WINDOW *w, int *x, const char *label, const char *value,
                        attr_t value_attr, int cols)
{
    int width = getmaxx(w);
    if (*x >= width)
        return;
    if (label[0])
        *x += draw_text(w, u->v.g, 0, *x, width - *x, palette_attr(&u->pal, PAL_DIM), label) + 1;
    if (*x >= width)
        return;
    int n = draw_text(w, u->v.g, 0, *x, width - *x, value_attr, value);
    *x += (n > cols ? n : cols) + 2;
}

/* The HTTP engines' decode tok/s summed (NaN when none reports it), the
 * inferd nodes, and the nodes up as their rows say (an engine's by its
 * polls). */
struct header_counts {
    int up, inferd, engines;
    double engines_tps;
};

static void count_nodes(const ui *u, struct header_counts *c)
{
    memset(c, 0, sizeof *c);
    c->engines_tps = NAN;
    for (int i = 0; i < u->v.n_nodes; i++) {
        struct view_state vs;
        view_node_state(u->v.st, i, u->v.now, &vs);
        c->up += vs.up;
        const struct eng_view *e = state_node_engine(u->v.st, i);
        if (!e) {
            c->inferd++;
            continue;
        }
        c->engines++;
        if (!isnan(e->decode_tps))
            c->engines_tps = (isnan(c->engines_tps) ? 0 : c->engines_tps) + e->decode_tps;
    }
}

/* What the inferd ring is doing: its context, rates and TTFT (the request
 * in flight, whose id has no fixed width, is in the events pane's title).
 * Beside HTTP engines its rates say "ring", so that they are not read as
 * the cluster's. */
static void ring_items(ui *u, WINDOW *w, int *x, const struct state_cluster_view *cv, int mixed)
{
    char buf[64], tps[32];
    const struct alert_settings *set = alerts_settings(state_alerts(u->v.st));
    view_fmt_count(cv->ctx_pos, buf, sizeof buf);
    header_item(u, w, x, "ctx", buf, A_BOLD, HEADER_CTX_COLS);
    meter_fmt_num(cv->prefill_tps, tps, sizeof tps);
    header_item(u, w, x, mixed ? "ring tok/s prefill" : "tok/s prefill", tps, A_BOLD,
                HEADER_NUM_COLS);
    *x -= 1;
    meter_fmt_num(cv->decode_tps, tps, sizeof tps);
    header_item(u, w, x, "decode", tps, A_BOLD, HEADER_NUM_COLS);
    meter_fmt_num(cv->last_ttft_ms, tps, sizeof tps);
    snprintf(buf, sizeof buf, "%s%s", tps, isnan(cv->last_ttft_ms) ? "" : " ms");
    header_item(
        u, w, x, "TTFT", buf,
        palette_attr(&u->pal, view_grade(cv->last_ttft_ms, set->ttft_ms / 2, set->ttft_ms)) |
            A_BOLD,
        HEADER_NUM_COLS + 3);
}

static void draw_header(ui *u)
{
    WINDOW *w = u->win[LAYOUT_HEADER];
    struct state_cluster_view cv;
    struct header_counts hc;
    char buf[64], tps[32];
    int x = 0;
    if (!w)
        return;
    state_cluster_view(u->v.st, u->v.now, &cv);
    count_nodes(u, &hc);

    /* The program's name only where it does not push the numbers out. */
    if (getmaxx(w) >= WIDE_HEADER_COLS)
        header_item(u, w, &x, "", "infertop", palette_attr(&u->pal, PAL_TITLE), 0);
    header_item(u, w, &x, "", cv.name, A_BOLD, 0);
    snprintf(buf, sizeof buf, "%d/%d up", hc.up, cv.nodes_total);
    header_item(u, w, &x, "nodes", buf,
                palette_attr(&u->pal, hc.up == cv.nodes_total ? PAL_UP : PAL_STALE), 8);
    int n_alerts = alerts_total(state_alerts(u->v.st));
    snprintf(buf, sizeof buf, "%d", n_alerts);
    header_item(
        u, w, &x, "alerts", buf,
        n_alerts ? palette_attr(&u->pal, PAL_ERROR) | A_BOLD : palette_attr(&u->pal, PAL_OK), 2);
    if (hc.engines) {
        meter_fmt_num(hc.engines_tps, tps, sizeof tps);
        header_item(u, w, &x, "engines tok/s", tps, A_BOLD, HEADER_NUM_COLS);
    }
    if (hc.inferd)
        ring_items(u, w, &x, &cv, hc.engines > 0);
    if (cv.model[0]) {
        /* The file type ("Q4_K_M") says the weights' precision in a word;
         * the node view lists every tensor type. */
        int type_len = (int)strcspn(cv.weight_types, ":");
        snprintf(buf, sizeof buf, "%s %.*s", cv.model, type_len, cv.weight_types);
        header_item(u, w, &x, "model", buf, A_BOLD, 0);
    }
    /* Rare, and last so that it moves nothing when it comes. */
    if (cv.lost) {
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)cv.lost);
        header_item(u, w, &x, "lost", buf, palette_attr(&u->pal, PAL_PENDING), 0);
    }

    x = 0;
    for (int t = 0; t < LAYOUT_VIEW_COUNT; t++) {
        const struct ui_view *vw = views[t];
        int on = vw == u->view;
        if (t == LAYOUT_NODE && u->v.n_nodes > 0)
            snprintf(buf, sizeof buf, " %d %s: %s ", t + 1, vw->name,
                     state_node_name(u->v.st, u->v.node));
        else
            snprintf(buf, sizeof buf, " %d %s ", t + 1, vw->name);
        u->tab_x[t] = x;
        x += draw_text(w, u->v.g, HEADER_TAB_ROW, x, getmaxx(w) - x,
                       palette_attr(&u->pal, on ? PAL_TAB_ON : PAL_TAB), buf) +
             1;
    }
    u->tab_x[LAYOUT_VIEW_COUNT] = x;
    /* How the screen is refreshed, right of the tabs where it fits. */
    snprintf(buf, sizeof buf, "%severy %.1fs%s", u->paused ? "PAUSED  " : "", u->delay,
             u->opt.readonly ? "  READ-ONLY" : "");
    if (getmaxx(w) - x > (int)strlen(buf))
        draw_rjust(w, u->v.g, HEADER_TAB_ROW, x, getmaxx(w) - x - 1,
                   palette_attr(&u->pal, u->paused || u->opt.readonly ? PAL_PENDING : PAL_DIM),
                   buf);
}

/* "key:what|key:what" with the keys in their own colour. */
static void draw_footer(ui *u)
{
    WINDOW *w = u->win[LAYOUT_FOOTER];
    const struct view_ctx *v = &u->v;
    int width, x = 0;
    if (!w)
        return;
    width = getmaxx(w);
    if (v->confirm) {
        draw_textf(w, v->g, 0, 0, width, palette_attr(&u->pal, PAL_PENDING) | A_BOLD, "%s y/n",
                   v->question);
        return;
    }
    if (v->message[0]) {
        draw_text(w, v->g, 0, 0, width,
                  palette_attr(&u->pal, v->message_error ? PAL_ERROR : PAL_PENDING), v->message);
        return;
    }
    char hints[VIEW_MESSAGE_MAX];
    if (v->overlay) {
        snprintf(hints, sizeof hints, "j/k:scroll|any key:close");
    } else {
        const struct view_keys *t[] = {u->view->keys, &global_tables[1]};
        keys_footer(t, 2, hints, sizeof hints);
    }
    if (v->prompt[0])
        x += draw_text(w, v->g, 0, 0, width, palette_attr(&u->pal, PAL_PENDING), v->prompt) + 2;
    for (const char *p = hints; *p && x < width;) {
        const char *colon = strchr(p, ':'), *bar = strchr(p, '|');
        if (!bar)
            bar = p + strlen(p);
        if (!colon || colon > bar)
            colon = bar;
        char key[32], what[64];
        snprintf(key, sizeof key, "%.*s", (int)(colon - p), p);
        snprintf(what, sizeof what, "%.*s", colon < bar ? (int)(bar - colon - 1) : 0, colon + 1);
        /* Whole entries only: the ones that do not fit are in the help. */
        if (x + (int)(strlen(key) + 1 + strlen(what)) > width)
            break;
        x += draw_text(w, v->g, 0, x, width - x, palette_attr(&u->pal, PAL_KEY), key);
        if (x < width)
            x += draw_text(w, v->g, 0, x, width - x, A_NORMAL, " ");
        if (x < width)
            x += draw_text(w, v->g, 0, x, width - x, A_NORMAL, what) + 2;
        p = *bar ? bar + 1 : bar;
    }
}

static void draw_too_small(ui *u)
{
    WINDOW *w = u->win[LAYOUT_MESSAGE];
    if (!w)
        return;
    werase(w);
    draw_textf(w, u->v.g, 0, 0, getmaxx(w), A_BOLD,
               "terminal too small: %dx%d, infertop needs %dx%d", COLS, LINES, LAYOUT_MIN_COLS,
               LAYOUT_MIN_ROWS);
    wnoutrefresh(w);
}

int ui_draw(ui *u, const state *st, double now)
{
    if (ui_frame_due(u, now) != 0)
        return 0;
    bind_state(u, st, now);
    if (u->need_clear) {
        clearok(curscr, TRUE);
        u->need_clear = 0;
    }
    if (u->erase_screen) {
        werase(stdscr);
        wnoutrefresh(stdscr);
        u->erase_screen = 0;
    }
    if (u->lay.too_small) {
        draw_too_small(u);
    } else {
        for (int p = 0; p < LAYOUT_PANE_COUNT; p++)
            if (u->win[p] && (!u->view->own_erase || p == LAYOUT_HEADER || p == LAYOUT_FOOTER ||
                              p == LAYOUT_HELP))
                werase(u->win[p]);
        draw_header(u);
        draw_footer(u);
        u->view->draw(&u->v);
        if (u->v.overlay) {
            const struct view_keys *t[HELP_TABLES];
            view_overlay_draw(&u->v, t, help_tables(t));
        }
        for (int p = 0; p < LAYOUT_PANE_COUNT; p++)
            if (u->win[p] && p != LAYOUT_HELP)
                wnoutrefresh(u->win[p]);
        if (u->win[LAYOUT_HELP])
            wnoutrefresh(u->win[LAYOUT_HELP]);
    }
    doupdate();
    u->v.fresh = u->help; /* the overlay covers rows a view would leave alone */
    u->dirty = 0;
    u->stale = 0;
    u->last_frame = now;
    return 1;
}
