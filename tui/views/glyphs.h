/* glyphs.h: the characters the console draws with, UTF-8 or ASCII-only.
 *
 * Every glyph the views put on screen that is not plain text comes from
 * one of two sets, chosen once at start: the UTF-8 set (block elements,
 * braille, box drawing) or the ASCII set, whose strings hold no byte
 * >= 0x80 so that an ASCII-only terminal never sees one. Each segment of
 * the memory bar has its own glyph, so the bar reads without colour.
 */
#ifndef GLYPHS_H
#define GLYPHS_H

#define GLYPHS_SPARK_LEVELS 8

/* Memory bar segments, in drawing order. */
enum glyphs_mem { GLYPHS_WEIGHTS, GLYPHS_KV, GLYPHS_OTHER, GLYPHS_HEADROOM, GLYPHS_MEM_COUNT };

struct glyphs {
    int utf8;                               /* braille charts, else the ASCII chart cells */
    const char *mem[GLYPHS_MEM_COUNT];      /* one column each */
    const char *spark[GLYPHS_SPARK_LEVELS]; /* lowest to highest, one column each */
    const char *hline, *vline;              /* rules and borders */
    const char *corner[4];      /* box corners: top left, top right, bottom left, bottom right */
    const char *ellipsis;       /* a cut text's last column */
    const char *select;         /* marks the selected row */
    const char *arrow;          /* "from -> to" in the config editor */
    const char *fp_differs;     /* the fingerprint highlight */
    const char *solid, *dashed; /* chart legend samples (two columns) */
    const char *sort_up, *sort_down; /* beside the sort column's title: ascending, descending */
};

/* The UTF-8 set when utf8 is non-zero, else the ASCII set. */
const struct glyphs *glyphs_get(int utf8);

/* Whether the locale's codeset (nl_langinfo(CODESET)) is UTF-8; call
 * after setlocale(LC_CTYPE, ""). */
int glyphs_locale_utf8(void);

#endif
