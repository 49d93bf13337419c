/* view_events.c: every event of every node, newest first, scrollable and
 * filtered by a text typed after `/` (matched, ignoring case, against the
 * node name, kind, code, request id and message). */
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "view.h"

#define LIST_MAX 512 /* tallest list drawn */

static struct state_event_filter events_filter(const struct view_ctx *v)
{
    struct state_event_filter f = {
        .node = -1, .kind = NULL, .text = v->ev.filter[0] ? v->ev.filter : NULL};
    return f;
}

static int list_rows(const struct view_ctx *v)
{
    int h = v->lay->pane[LAYOUT_LIST].h;
    return h < LIST_MAX ? h : LIST_MAX;
}

/* The largest skip that still fills the list. */
static int max_skip(const struct view_ctx *v, int count)
{
    int m = count - list_rows(v);
    return m > 0 ? m : 0;
}

static void events_draw(struct view_ctx *v)
{
    WINDOW *fw = v->win[LAYOUT_FILTER], *lw = v->win[LAYOUT_LIST];
    const struct layout_rect *fp = &v->lay->pane[LAYOUT_FILTER], *lp = &v->lay->pane[LAYOUT_LIST];
    const struct state_event *ev[LIST_MAX];
    struct state_event_filter f = events_filter(v);
    if (!fw || !lw)
        return;
    int count = state_event_count(v->st, &f);
    if (v->ev.skip > max_skip(v, count))
        v->ev.skip = max_skip(v, count);

    int x = draw_text(fw, v->g, 0, 0, fp->w, palette_attr(v->pal, PAL_TITLE), "filter: ");
    if (v->ev.editing)
        x += draw_textf(fw, v->g, 0, x, fp->w - x, palette_attr(v->pal, PAL_PENDING), "%s_",
                        v->ev.filter);
    else if (v->ev.filter[0])
        x += draw_text(fw, v->g, 0, x, fp->w - x, A_BOLD, v->ev.filter);
    else
        x += draw_text(fw, v->g, 0, x, fp->w - x, palette_attr(v->pal, PAL_DIM),
                       "none (/ to type one)");
    int shown_first = count ? v->ev.skip + 1 : 0;
    int shown_last = v->ev.skip + list_rows(v) < count ? v->ev.skip + list_rows(v) : count;
    char pos[64];
    snprintf(pos, sizeof pos, "%d-%d of %d", shown_first, shown_last, count);
    if (fp->w - x > draw_width(pos) + 2)
        draw_rjust(fw, v->g, 0, x, fp->w - x, palette_attr(v->pal, PAL_DIM), pos);

    int n = state_events(v->st, &f, v->ev.skip, list_rows(v), ev);
    for (int i = 0; i < n; i++)
        view_event_line(v, lw, i, lp->w, ev[i]);
    if (n == 0)
        draw_text(lw, v->g, 0, 0, lp->w, palette_attr(v->pal, PAL_DIM),
                  v->ev.filter[0] ? "no event matches the filter" : "no events yet");
}

enum { E_FILTER, E_CLEAR };

static const struct view_key events_keys[] = {
    {{0}, "j/k", "scroll", "scroll; g G: newest / oldest", -1},
    {{'/'}, "/", "filter", "type a filter (Enter keeps it, Esc clears it)", E_FILTER},
    {{27}, "Esc", "clear", "clear the filter", E_CLEAR},
};
static const struct view_keys events_table = KEYS_TABLE("Events", events_keys);

static int events_key(struct view_ctx *v, int key)
{
    if (v->ev.editing) {
        int end = view_type_key(v->ev.filter, sizeof v->ev.filter, key, 0);
        if (end)
            v->ev.editing = 0;
        if (end < 0)
            v->ev.filter[0] = '\0';
        v->ev.skip = 0;
        return 1;
    }
    switch (keys_cmd(&events_table, key)) {
    case E_FILTER:
        v->ev.editing = 1;
        return 1;
    case E_CLEAR:
        v->ev.filter[0] = '\0';
        v->ev.skip = 0;
        return 1;
    }
    struct state_event_filter f = events_filter(v);
    int to =
        view_move(key, v->ev.skip, max_skip(v, state_event_count(v->st, &f)) + 1, list_rows(v) - 1);
    if (to < 0)
        return 0;
    v->ev.skip = to;
    return 1;
}

const struct ui_view view_events = {
    .name = "Events",
    .layout = LAYOUT_EVENTS,
    .draw = events_draw,
    .key = events_key,
    .click = NULL,
    .keys = &events_table,
};
