/* ui.h: the ncurses console, the views over a state (state.h).
 *
 * The UI never fetches anything and never blocks: the application loop
 * owns the sockets and the clock, feeds the state, and calls in here.
 *
 *   ui *u = ui_open(&opts, err, sizeof err);
 *   loop:
 *       zmq_poll(... STDIN_FILENO for POLLIN ..., timeout) -- the UI reads
 *           the terminal on stdin, so there is no ui_fd(): poll
 *           STDIN_FILENO. Take the timeout from ui_frame_due() too.
 *       stdin readable, poll interrupted by a signal (SIGWINCH: ncurses
 *           turns a resize into a key), or any tick:
 *           n = ui_handle_input(u, st, now, acts, UI_ACTIONS_MAX);
 *           for each action: act on it (quit, send a set, ...)
 *       state changed (telemetry, replies, state_tick): ui_mark_dirty(u)
 *       ui_draw(u, st, now)   -- draws only when dirty and the frame is due
 *   ui_close(u);
 *
 * Frame limiting lives here: a frame only when something changed, at most
 * UI_FPS a second after a key and one every refresh interval (-d) for the
 * state's changes, none for those while paused (p). Each frame writes every window with
 * wnoutrefresh and ends with one doupdate; the screen is cleared only on
 * a resize and on Ctrl-L.
 *
 * Not thread-safe; one ui per process (curses has one screen).
 */
#ifndef UI_H
#define UI_H

#include <stddef.h>

#include "engine/proto/protocol.h"
#include "tui/core/action.h"
#include "tui/core/state.h"

struct cluster;
struct desired_sync;
struct console_runs;
struct plan_job;
struct remote;

#define UI_FPS 10
/* Seconds between frames drawn for the state's changes, unless -d says. */
#define UI_DELAY_DEFAULT 1.0
/* Enough room for every action one call can produce from a burst of keys. */
#define UI_ACTIONS_MAX 16

typedef struct ui ui;

struct ui_options {
    int no_color; /* --no-color; the NO_COLOR environment variable also turns colour off */
    int ascii;    /* --ascii; otherwise ASCII unless the locale's codeset is UTF-8 */
    int readonly; /* --readonly: config edits and node actions are refused */
    int mouse;    /* report mouse clicks (select rows, switch views) */
    double delay; /* -d: seconds between frames for the state's changes; 0: UI_DELAY_DEFAULT.
                   * + and - change it while running; keys are answered at once. */
    /* Optional: shown in node detail (SSH target, endpoints, start
     * command). NULL when there is no cluster file (e.g. a demo). Borrowed:
     * must outlive the ui. */
    const struct cluster *cluster;
    /* Optional: the nodes' logs and facts over SSH for node detail (remote.h).
     * NULL: the log pane shows the node's events. Borrowed like cluster. */
    const struct remote *remote;
    /* Optional: the stress runs and run history of the Stress and History
     * views (console_runs.h). NULL: those views say there is no store.
     * Borrowed like cluster. */
    struct console_runs *runs;
    /* Optional: where the Plan view's layout is applied from (plan_job.h).
     * NULL: applying is not available (the view says so). Borrowed. */
    struct plan_job *plan;
    /* Optional: the desired settings the console keeps the nodes at, and
     * their drift for the views (desired_sync.h). NULL: none shown or kept.
     * Borrowed. */
    struct desired_sync *desired;
};

/* Sets up the terminal (initscr on stdin/stdout, raw keys, no echo,
 * non-blocking reads, keypad, colours, mouse). Calls setlocale(LC_CTYPE, "")
 * so that ncursesw can write UTF-8; LC_NUMERIC stays "C" so that numbers
 * keep their '.' everywhere else. NULL with err filled when the terminal
 * cannot be used. */
ui *ui_open(const struct ui_options *o, char *err, size_t errlen);
/* Restores the terminal. NULL is fine. */
void ui_close(ui *u);

/* Reads every pending key and mouse event without waiting, and writes the
 * actions they produce to out (at most max; keys past a full out stay
 * queued for the next call). Returns the number of actions. Marks the UI
 * dirty when a key changed what is shown; handles KEY_RESIZE and Ctrl-L. */
int ui_handle_input(ui *u, const state *st, double now, struct action *out, int max);

/* The state changed: the frame due at the refresh interval redraws (none
 * while paused). */
void ui_mark_dirty(ui *u);

/* Shows a one-line message in the footer until the next key (e.g. the
 * app's "cannot reach node b"). Marks the UI dirty. */
void ui_message(ui *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The node the node view shows, -1 when another view is open: the app
 * follows that node's log while it is shown. */
int ui_node_shown(const ui *u);

/* Seconds until ui_draw would draw: 0 when due now, a positive wait when
 * the last frame was too recent (see above), -1 when nothing is to be
 * drawn. A poll timeout for the app. */
double ui_frame_due(const ui *u, double now);

/* Draws a frame when one is due (ui_frame_due).
 * Returns 1 when it drew, 0 when not. now: the app's monotonic clock in
 * seconds, the same clock the state is fed with. */
int ui_draw(ui *u, const state *st, double now);

#endif
