/* nodelog.h: the last lines of a node's log as the console shows them.
 *
 * A ring of complete lines, fed with the chunks of a `logs -f` job as
 * they come over SSH: a chunk may end in the middle of a line, whose
 * rest waits for the next chunk. Lines are kept printable (control
 * characters become spaces) and cut at NODELOG_LINE_MAX - 1 bytes, so
 * that a binary or runaway log cannot upset the terminal or the memory.
 * No curses, no threads: the app feeds it, the node view reads it.
 */
#ifndef NODELOG_H
#define NODELOG_H

#include <stddef.h>

#define NODELOG_LINE_MAX 512

typedef struct nodelog nodelog;

/* Whose words a line is: the node's log, or the console's own note. */
enum nodelog_mark { NODELOG_TEXT, NODELOG_INFO, NODELOG_ERROR };

/* A ring of the last `cap` lines (>= 1). NULL when out of memory. */
nodelog *nodelog_new(int cap);
void nodelog_free(nodelog *l);

/* Forgets every line, the waiting partial one too. */
void nodelog_clear(nodelog *l);

/* Appends a chunk of the log: each completed line enters the ring. */
void nodelog_feed(nodelog *l, const char *data, size_t n);

/* Adds a line of the console's own (mark NODELOG_INFO or NODELOG_ERROR:
 * "connecting", why the follow failed) after completing the partial
 * line, if any. */
void nodelog_note(nodelog *l, enum nodelog_mark mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* How many lines the ring holds, and the i-th of them (0 the oldest) with
 * its mark in *mark when mark is not NULL; NULL when i is out of range. */
int nodelog_count(const nodelog *l);
const char *nodelog_line(const nodelog *l, int i, enum nodelog_mark *mark);

#endif
