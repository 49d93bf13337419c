/* glyphs.c: the two glyph sets and the locale test that picks one. */
#include "glyphs.h"

#include <langinfo.h>
#include <strings.h>

static const struct glyphs utf8_set = {
    .utf8 = 1,
    .mem = {"\u2588", "\u2593", "\u2592", "\u2591"}, /* full, dark, medium, light shade */
    .spark = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"},
    .hline = "\u2500",
    .vline = "\u2502",
    .corner = {"\u250c", "\u2510", "\u2514", "\u2518"},
    .ellipsis = "\u2026",
    .select = "\u25b6",
    .arrow = "\u2192",
    .fp_differs = "FP\u2260",
    .solid = "\u2500\u2500",
    .dashed = "\u2504\u2504",
    .sort_up = "\u25b4",
    .sort_down = "\u25be",
};

/* ASCII levels rise from the baseline to a full cell. */
static const struct glyphs ascii_set = {
    .utf8 = 0,
    .mem = {"#", "%", "=", "."},
    .spark = {"_", ".", ",", "-", "~", "+", "*", "#"},
    .hline = "-",
    .vline = "|",
    .corner = {"+", "+", "+", "+"},
    .ellipsis = "~",
    .select = ">",
    .arrow = "->",
    .fp_differs = "FP!=",
    .solid = "--",
    .dashed = "- ",
    .sort_up = "^",
    .sort_down = "v",
};

const struct glyphs *glyphs_get(int utf8)
{
    return utf8 ? &utf8_set : &ascii_set;
}

int glyphs_locale_utf8(void)
{
    const char *cs = nl_langinfo(CODESET);
    return cs && (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "utf8") == 0);
}
