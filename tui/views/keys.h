/* keys.h: a view's keys as one table (htop's FunctionBar idea).
 *
 * Each row binds key codes to one of the view's commands and says how the
 * footer names it and what the help says of it, so a key is written once:
 * the view's key function asks the table which command a code is, the
 * footer lists the rows with a label, and the help lists every row under
 * the table's title. No curses here: the tables and what they produce are
 * plain data (and unit-tested as such).
 */
#ifndef KEYS_H
#define KEYS_H

#include <stddef.h>

#define KEYS_CODES 4

struct view_key {
    int code[KEYS_CODES]; /* the key codes it answers to, 0 ending; none: a help line only */
    const char *keys;     /* as the footer and help show them: "j/k", "Enter" */
    const char *label;    /* the footer's word for it; NULL: in the help only */
    const char *help;     /* the help's line; NULL: the row before tells of it too */
    int cmd;              /* the view's command */
};

struct view_keys {
    const char *title; /* the help's heading */
    const struct view_key *key;
    int n;
};

#define KEYS_TABLE(title, rows)                                                                    \
    {                                                                                              \
        (title), (rows), (int)(sizeof(rows) / sizeof((rows)[0]))                                   \
    }

/* The command of the row that answers to code, or -1 when none does. */
int keys_cmd(const struct view_keys *t, int code);

/* The footer of tables t[0..n): each labelled row as "keys:label", the
 * rows joined with '|', in order. */
void keys_footer(const struct view_keys *const *t, int n, char *buf, size_t len);

/* A line of the help: a heading (keys NULL) or a key and what it does. */
struct keys_line {
    const char *keys, *text;
};

/* The help of tables t[0..n): each table's title then its rows. Writes at
 * most max lines to out (NULL: none) and returns how many there are. */
int keys_help(const struct view_keys *const *t, int n, struct keys_line *out, int max);

#endif
