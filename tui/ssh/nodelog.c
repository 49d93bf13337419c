/* nodelog.c: the log ring (nodelog.h). Lines live in one block of
 * cap * NODELOG_LINE_MAX bytes allocated once: feeding never allocates. */
#include "nodelog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"

struct nodelog {
    char (*lines)[NODELOG_LINE_MAX];
    unsigned char *marks; /* an enum nodelog_mark per line */
    int cap;
    int first, n; /* the oldest line's slot, and how many are kept */
    char partial[NODELOG_LINE_MAX];
    size_t plen;
    int full; /* the partial line was cut: drop the rest up to its newline */
};

nodelog *nodelog_new(int cap)
{
    if (cap < 1)
        return NULL;
    nodelog *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->lines = calloc((size_t)cap, sizeof *l->lines);
    l->marks = calloc((size_t)cap, 1);
    if (!l->lines || !l->marks) {
        free(l->lines);
        free(l->marks);
        free(l);
        return NULL;
    }
    l->cap = cap;
    return l;
}

void nodelog_free(nodelog *l)
{
    if (!l)
        return;
    free(l->lines);
    free(l->marks);
    free(l);
}

void nodelog_clear(nodelog *l)
{
    l->first = l->n = 0;
    l->plen = 0;
    l->full = 0;
}

/* The partial line becomes the newest line of the ring, pushing out the
 * oldest when full. */
static void push_partial(nodelog *l, enum nodelog_mark mark)
{
    int slot = (l->first + l->n) % l->cap;
    if (l->n == l->cap)
        l->first = (l->first + 1) % l->cap;
    else
        l->n++;
    l->marks[slot] = (unsigned char)mark;
    memcpy(l->lines[slot], l->partial, l->plen);
    l->lines[slot][l->plen] = '\0';
    l->plen = 0;
    l->full = 0;
}

/* A cut must not split a UTF-8 sequence: the terminal would show its
 * stray bytes as garbage. Drops the last sequence when it is incomplete. */
static void cut_to_char(nodelog *l)
{
    l->plen = utf8_cut(l->partial, l->plen);
    l->full = 1;
}

void nodelog_feed(nodelog *l, const char *data, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c == '\n') {
            push_partial(l, NODELOG_TEXT);
            continue;
        }
        if (c == '\r')
            continue; /* CRLF logs end their lines at the '\n' */
        if (l->full)
            continue;
        l->partial[l->plen++] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
        if (l->plen + 1 == NODELOG_LINE_MAX)
            cut_to_char(l);
    }
}

void nodelog_note(nodelog *l, enum nodelog_mark mark, const char *fmt, ...)
{
    char line[NODELOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    if (l->plen > 0)
        push_partial(l, NODELOG_TEXT);
    /* Through the feed, for the same cleaning; a newline in the note
     * would end a line early, so there is none. */
    for (char *p = line; (p = strchr(p, '\n'));)
        *p = ' ';
    nodelog_feed(l, line, strlen(line));
    push_partial(l, mark);
}

int nodelog_count(const nodelog *l)
{
    return l->n;
}

const char *nodelog_line(const nodelog *l, int i, enum nodelog_mark *mark)
{
    if (i < 0 || i >= l->n)
        return NULL;
    int slot = (l->first + i) % l->cap;
    if (mark)
        *mark = (enum nodelog_mark)l->marks[slot];
    return l->lines[slot];
}
