/* sbuf.h: a growable text buffer, for what the HTTP server writes whose
 * size it cannot know up front (exposition text, SSE events, bodies). Once
 * an allocation fails the buffer stays failed and drops the rest, so that a
 * writer checks once at the end. */
#ifndef SBUF_H
#define SBUF_H

#include <stddef.h>

typedef struct sbuf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
    int failed;
} sbuf;

/* Room for n more bytes at once (a body of known length: one allocation). */
void sbuf_reserve(sbuf *b, size_t n);
void sbuf_put(sbuf *b, const char *s, size_t n);
void sbuf_puts(sbuf *b, const char *s);
void sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s[0..n) as a JSON string literal (jw_quote: quotes included, invalid
 * UTF-8 as U+FFFD). */
void sbuf_json_str(sbuf *b, const char *s, size_t n);
/* Forgets the first n bytes. */
void sbuf_drop(sbuf *b, size_t n);
/* The text (the caller frees it) and its length; the buffer is empty
 * again. NULL when an allocation failed (nothing to free then). */
char *sbuf_take(sbuf *b, size_t *len);
void sbuf_free(sbuf *b);

#endif
