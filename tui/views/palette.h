/* palette.h: what each role on screen looks like, in 256, 8 or no colours.
 *
 * Views ask for a role, never a colour, so that the three terminal kinds
 * stay one code path. Without colour every role is plain or an attribute
 * (bold, reverse, dim) and meters fall back on their distinct glyphs.
 */
#ifndef PALETTE_H
#define PALETTE_H

#include <curses.h>

enum palette_role {
    PAL_TEXT,
    PAL_DIM,    /* labels, idle values */
    PAL_TITLE,  /* pane titles, column titles */
    PAL_TAB,    /* the view tabs */
    PAL_TAB_ON, /* the current view's tab */
    PAL_SELECT, /* the selected row */
    PAL_UP,
    PAL_STALE,
    PAL_DOWN,
    PAL_STARTING,
    PAL_WEIGHTS, /* memory bar segments */
    PAL_KV,
    PAL_OTHER,
    PAL_HEADROOM,
    PAL_SERIES_A,  /* first chart line (model_ms, rss) */
    PAL_SERIES_B,  /* second chart line (eval_ms, kv) */
    PAL_SERIES_AB, /* a cell both lines pass through */
    PAL_SPARK,
    PAL_ALERT,   /* highlighted cells: orchestration-bound, low memory, ... */
    PAL_PENDING, /* a config change on its way */
    PAL_OK,      /* a config change confirmed */
    PAL_ERROR,   /* errors as the node sent them */
    PAL_KEY,     /* key names in the footer and help */
    PAL_COUNT
};

struct palette {
    int colors; /* 0 (none), 8 or 256 */
    attr_t attr[PAL_COUNT];
};

/* Sets up colour pairs after initscr. use_color 0 gives the attribute-only
 * palette even on a colour terminal. */
void palette_init(struct palette *p, int use_color);

static inline attr_t palette_attr(const struct palette *p, enum palette_role r)
{
    return p->attr[r];
}

#endif
