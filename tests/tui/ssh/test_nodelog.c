/* test_nodelog.c: the node log ring: lines split across chunks, the
 * oldest pushed out, notes, long lines cut on a character boundary,
 * control characters made harmless. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tui/ssh/nodelog.h"

static void feed(nodelog *l, const char *s)
{
    nodelog_feed(l, s, strlen(s));
}

Test(nodelog, lines_split_across_chunks)
{
    nodelog *l = nodelog_new(8);
    cr_assert_not_null(l);
    feed(l, "[NODE] sta");
    cr_assert_eq(nodelog_count(l), 0, "a partial line waits for its end");
    feed(l, "rted\n[STEP] 1\n[STEP");
    cr_assert_eq(nodelog_count(l), 2);
    cr_assert_str_eq(nodelog_line(l, 0, NULL), "[NODE] started");
    cr_assert_str_eq(nodelog_line(l, 1, NULL), "[STEP] 1");
    feed(l, "] 2\r\n");
    cr_assert_eq(nodelog_count(l), 3);
    cr_assert_str_eq(nodelog_line(l, 2, NULL), "[STEP] 2", "CRLF ends a line like LF");
    cr_assert_null(nodelog_line(l, 3, NULL));
    cr_assert_null(nodelog_line(l, -1, NULL));
    nodelog_free(l);
}

Test(nodelog, keeps_the_newest_lines)
{
    nodelog *l = nodelog_new(3);
    char line[32];
    for (int i = 0; i < 10; i++) {
        snprintf(line, sizeof line, "line %d\n", i);
        feed(l, line);
    }
    cr_assert_eq(nodelog_count(l), 3);
    cr_assert_str_eq(nodelog_line(l, 0, NULL), "line 7");
    cr_assert_str_eq(nodelog_line(l, 2, NULL), "line 9");
    nodelog_clear(l);
    cr_assert_eq(nodelog_count(l), 0);
    feed(l, "after\n");
    cr_assert_str_eq(nodelog_line(l, 0, NULL), "after");
    nodelog_free(l);
}

Test(nodelog, note_completes_the_partial_line)
{
    nodelog *l = nodelog_new(4);
    enum nodelog_mark m;
    feed(l, "half");
    nodelog_note(l, NODELOG_ERROR, "%s: %d\nsecond", "connect timeout", 20);
    cr_assert_eq(nodelog_count(l), 2);
    cr_assert_str_eq(nodelog_line(l, 0, &m), "half");
    cr_assert_eq(m, NODELOG_TEXT);
    cr_assert_str_eq(nodelog_line(l, 1, &m), "connect timeout: 20 second", "a note is one line");
    cr_assert_eq(m, NODELOG_ERROR);
    feed(l, "next\n");
    cr_assert_str_eq(nodelog_line(l, 2, &m), "next", "a note leaves no partial line behind");
    cr_assert_eq(m, NODELOG_TEXT);
    nodelog_free(l);
}

Test(nodelog, control_characters_become_spaces)
{
    nodelog *l = nodelog_new(2);
    feed(l, "a\tb\033[31mc\n");
    cr_assert_str_eq(nodelog_line(l, 0, NULL), "a b [31mc");
    nodelog_free(l);
}

Test(nodelog, long_lines_are_cut_on_a_character)
{
    nodelog *l = nodelog_new(2);
    char big[NODELOG_LINE_MAX + 64];
    /* "xy" then 2-byte characters: the cut at NODELOG_LINE_MAX - 1 bytes
     * falls inside one of them, which must go whole. */
    size_t n = 0;
    big[n++] = 'x';
    big[n++] = 'y';
    while (n + 2 < sizeof big) {
        big[n++] = (char)0xC3;
        big[n++] = (char)0xA9;
    }
    nodelog_feed(l, big, n);
    feed(l, "\nshort\n");
    cr_assert_eq(nodelog_count(l), 2);
    const char *cut = nodelog_line(l, 0, NULL);
    size_t len = strlen(cut);
    cr_assert_eq(len, NODELOG_LINE_MAX - 2, "cut before the split character (%zu bytes)", len);
    cr_assert_eq((unsigned char)cut[len - 1], 0xA9);
    cr_assert_str_eq(nodelog_line(l, 1, NULL), "short", "the rest of the long line was dropped");
    nodelog_free(l);
}

Test(nodelog, refuses_an_empty_ring)
{
    cr_assert_null(nodelog_new(0));
}
