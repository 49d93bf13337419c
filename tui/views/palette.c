/* palette.c: colour pairs for the roles; a 256-colour set, an 8-colour
 * mapping of it, and attributes alone. */
#include "palette.h"

struct role_spec {
    short fg256, fg8; /* -1: the terminal's default */
    attr_t extra;     /* added in every mode */
    attr_t mono;      /* instead of colour when there is none */
};

/* Pair numbers are role + 1. Backgrounds stay the terminal's own: the
 * selection and the current tab use reverse video, which reads on any
 * theme. */
static const struct role_spec specs[PAL_COUNT] = {
    [PAL_TEXT] = {-1, -1, 0, 0},
    [PAL_DIM] = {245, COLOR_WHITE, 0, A_DIM},
    [PAL_TITLE] = {110, COLOR_CYAN, A_BOLD, A_BOLD},
    [PAL_TAB] = {250, COLOR_WHITE, 0, 0},
    [PAL_TAB_ON] = {231, COLOR_WHITE, A_BOLD | A_REVERSE, A_BOLD | A_REVERSE},
    [PAL_SELECT] = {-1, -1, A_REVERSE, A_REVERSE},
    [PAL_UP] = {40, COLOR_GREEN, A_BOLD, A_BOLD},
    [PAL_STALE] = {220, COLOR_YELLOW, A_BOLD, A_UNDERLINE},
    [PAL_DOWN] = {196, COLOR_RED, A_BOLD, A_REVERSE},
    [PAL_STARTING] = {44, COLOR_CYAN, 0, 0},
    [PAL_WEIGHTS] = {33, COLOR_BLUE, 0, 0},
    [PAL_KV] = {170, COLOR_MAGENTA, 0, 0},
    [PAL_OTHER] = {214, COLOR_YELLOW, 0, 0},
    [PAL_HEADROOM] = {240, COLOR_GREEN, 0, A_DIM},
    [PAL_SERIES_A] = {39, COLOR_CYAN, 0, 0},
    [PAL_SERIES_B] = {208, COLOR_YELLOW, 0, 0},
    [PAL_SERIES_AB] = {255, COLOR_WHITE, A_BOLD, A_BOLD},
    [PAL_SPARK] = {75, COLOR_CYAN, 0, 0},
    [PAL_ALERT] = {203, COLOR_RED, A_BOLD | A_REVERSE, A_BOLD | A_REVERSE},
    [PAL_PENDING] = {220, COLOR_YELLOW, 0, A_BOLD},
    [PAL_OK] = {40, COLOR_GREEN, 0, 0},
    [PAL_ERROR] = {196, COLOR_RED, A_BOLD, A_BOLD},
    [PAL_KEY] = {117, COLOR_CYAN, A_BOLD, A_BOLD},
};

void palette_init(struct palette *p, int use_color)
{
    p->colors = 0;
    if (use_color && has_colors() && start_color() == OK) {
        use_default_colors();
        p->colors = COLORS >= 256 ? 256 : 8;
    }
    for (int r = 0; r < PAL_COUNT; r++) {
        const struct role_spec *s = &specs[r];
        if (!p->colors) {
            p->attr[r] = s->mono;
            continue;
        }
        short fg = p->colors == 256 ? s->fg256 : s->fg8;
        if (init_pair((short)(r + 1), fg, -1) == ERR) {
            p->attr[r] = s->mono;
            continue;
        }
        p->attr[r] = COLOR_PAIR(r + 1) | s->extra;
    }
}
