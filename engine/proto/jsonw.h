/* jsonw.h: writes one flat JSON object into a caller's buffer, without
 * allocating. The hot telemetry encoders use it (a step message is written
 * every step of every request); everything else builds jansson objects.
 *
 * Strings are escaped for JSON and sanitized by jw_quote: invalid UTF-8
 * becomes U+FFFD, so the output always parses.
 */
#ifndef JSONW_H
#define JSONW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct jw {
    char *buf;
    size_t cap;
    size_t len;
    int overflow; /* set once anything did not fit; the rest is dropped */
    int first;    /* no key written yet in the open object */
} jw;

void jw_init(jw *w, char *buf, size_t cap);
void jw_open(jw *w);                 /* { */
void jw_close(jw *w);                /* } */
void jw_key(jw *w, const char *key); /* [,]"key": (key needs no escaping) */
void jw_raw(jw *w, const char *s, size_t n);
void jw_str(jw *w, const char *s, size_t n); /* jw_quote */
void jw_i64(jw *w, int64_t v);
void jw_u64(jw *w, uint64_t v);
/* Rounded to a fixed number of decimals (1..6), written without printf;
 * null if not finite. */
void jw_fixed(jw *w, double v, int decimals);

/* NUL-terminates. Returns the length, or -1 if the buffer was too small. */
int jw_end(jw *w);

/* Where jw_quote writes: the next n bytes of its output. */
typedef void jw_sink(void *ctx, const char *s, size_t n);

/* s[0..n) as a JSON string literal, quotes included, through put: '"', '\\'
 * and control characters escaped (\n, \r and \t short, the others as
 * \u00XX) and each invalid UTF-8 subpart (see utf8.h) as \ufffd, so that
 * the output always parses. The tree's one JSON string escaper: whatever
 * writes JSON by hand, into a fixed buffer or a growing one, calls it. */
void jw_quote(const char *s, size_t n, jw_sink *put, void *ctx);

/* A jansson string of s, sanitized as utf8_clean does (json_string refuses
 * invalid UTF-8, and a byte-fallback token or a cut message can be). NULL
 * only when out of memory. */
json_t *jw_string(const char *s);

#endif
