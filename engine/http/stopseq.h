/* stopseq.h: OpenAI's `stop` sequences over text that arrives a token at
 * a time. The text ends before the first stop sequence it contains; until
 * then, the tail that could still grow into one is held back, so that a
 * client never receives text that turns out to be past the end. */
#ifndef STOPSEQ_H
#define STOPSEQ_H

#include <stddef.h>

#define STOPSEQ_MAX 4 /* as OpenAI allows */

typedef struct stopseq {
    int n;
    const char *s[STOPSEQ_MAX]; /* non-empty, borrowed */
} stopseq;

/* text[0..len) is everything generated so far, and text[0..sent) went out
 * already. Sets *emit to how far the text may go out now. Returns 1 when a
 * stop sequence starts at *emit (the text ends there), 0 otherwise. */
int stopseq_scan(const stopseq *st, const char *text, size_t len, size_t sent, size_t *emit);

#endif
