/* shellword.h: command lines as the console writes them for a POSIX
 * shell (cluster.c's derived `start` lines) and reads them back
 * (plan_file.c's edit of a `start` line's --layers). */
#ifndef SHELLWORD_H
#define SHELLWORD_H

#include <stddef.h>

/* Writes w to buf as one shell word: as it is when every character is
 * plain, else in single quotes, a leading "~/" left outside them so that
 * the shell expands it. Returns the length the word needs (as snprintf);
 * buf holds it when that is below len. */
size_t shellword_quote(const char *w, char *buf, size_t len);

/* The next word of a command line from *p: 1 with its text unquoted in
 * word and where it starts in *start, *p moved past it; 0 at the end; -1
 * when a quote is not closed or the word does not fit. Reads single and
 * double quotes and backslashes, so every word shellword_quote writes. */
int shellword_next(const char **p, char *word, size_t len, const char **start);

/* 1 when the (unquoted) word is an assignment NAME=VALUE, which sets the
 * environment of the command it comes before. */
int shellword_assignment(const char *word);

#endif
