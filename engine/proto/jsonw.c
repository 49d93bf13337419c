/* jsonw.c: a flat JSON object writer over a fixed buffer (see jsonw.h).
 *
 * Numbers are formatted by hand: snprintf with a double conversion costs
 * a few hundred nanoseconds each, and a step message carries a dozen
 * numbers, against a budget of a few microseconds for the whole message.
 */
#include "jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"

void jw_init(jw *w, char *buf, size_t cap)
{
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    w->overflow = cap == 0;
    w->first = 1;
}

/* Keeps one byte for the NUL that jw_end writes. */
static int jw_room(jw *w, size_t n)
{
    if (w->overflow || w->len + n >= w->cap) {
        w->overflow = 1;
        return 0;
    }
    return 1;
}

void jw_raw(jw *w, const char *s, size_t n)
{
    if (!jw_room(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void jw_char(jw *w, char c)
{
    if (!jw_room(w, 1))
        return;
    w->buf[w->len++] = c;
}

void jw_open(jw *w)
{
    jw_char(w, '{');
    w->first = 1;
}

void jw_close(jw *w)
{
    jw_char(w, '}');
}

void jw_key(jw *w, const char *key)
{
    if (!w->first)
        jw_char(w, ',');
    w->first = 0;
    jw_char(w, '"');
    jw_raw(w, key, strlen(key));
    jw_raw(w, "\":", 2);
}

/* The escape of c (a quote, a backslash or a control character) into
 * esc; its length. */
static size_t escape(unsigned char c, char esc[6])
{
    static const char hex[] = "0123456789abcdef";
    esc[0] = '\\';
    switch (c) {
    case '\n':
        esc[1] = 'n';
        return 2;
    case '\r':
        esc[1] = 'r';
        return 2;
    case '\t':
        esc[1] = 't';
        return 2;
    case '"':
    case '\\':
        esc[1] = (char)c;
        return 2;
    }
    memcpy(esc + 1, "u00", 3);
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 15];
    return 6;
}

void jw_quote(const char *s, size_t n, jw_sink *put, void *ctx)
{
    size_t run = 0; /* where the bytes not written yet start */
    put(ctx, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : utf8_seq(s + i, n - i);
        if (k > 0 && c >= 0x20 && c != '"' && c != '\\') {
            i += k; /* copied as it is, with the rest of its run */
            continue;
        }
        char esc[6];
        put(ctx, s + run, i - run);
        if (k == 0) {
            put(ctx, "\\ufffd", 6);
            i += utf8_step(s + i, n - i);
        } else {
            put(ctx, esc, escape(c, esc));
            i++;
        }
        run = i;
    }
    put(ctx, s + run, n - run);
    put(ctx, "\"", 1);
}

static void put_raw(void *w, const char *s, size_t n)
{
    jw_raw(w, s, n);
}

void jw_str(jw *w, const char *s, size_t n)
{
    jw_quote(s, n, put_raw, w);
}

/* Digits of v, most significant first, into w. */
void jw_u64(jw *w, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    jw_raw(w, tmp + sizeof tmp - n, (size_t)n);
}

void jw_i64(jw *w, int64_t v)
{
    if (v < 0) {
        jw_char(w, '-');
        jw_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        jw_u64(w, (uint64_t)v);
    }
}

/* %.6g; null if not finite. */
static void jw_g(jw *w, double v)
{
    char tmp[32];
    if (!isfinite(v)) {
        jw_raw(w, "null", 4);
        return;
    }
    int n = snprintf(tmp, sizeof tmp, "%.6g", v);
    jw_raw(w, tmp, (size_t)n);
}

void jw_fixed(jw *w, double v, int decimals)
{
    static const int64_t scale[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    /* Beyond 1e12 the integer path would overflow; no timing or
     * activation gets there, but the output must stay valid JSON whatever
     * the caller passes. */
    double a = fabs(v);
    if (!isfinite(v) || a >= 1e12 || decimals < 1 || decimals > 6) {
        jw_g(w, v);
        return;
    }
    int64_t m = llround(a * (double)scale[decimals]);
    char tmp[8];
    if (v < 0)
        jw_char(w, '-');
    jw_u64(w, (uint64_t)(m / scale[decimals]));
    int64_t frac = m % scale[decimals];
    tmp[0] = '.';
    for (int i = decimals; i >= 1; i--) {
        tmp[i] = (char)('0' + frac % 10);
        frac /= 10;
    }
    jw_raw(w, tmp, (size_t)decimals + 1);
}

int jw_end(jw *w)
{
    if (w->overflow) {
        if (w->cap)
            w->buf[0] = '\0';
        return -1;
    }
    w->buf[w->len] = '\0';
    return (int)w->len;
}

json_t *jw_string(const char *s)
{
    size_t n = strlen(s);
    char *clean = malloc(3 * n + 1); /* every byte may become U+FFFD */
    if (!clean)
        return NULL;
    size_t len = utf8_clean(clean, 3 * n + 1, s, n);
    json_t *j = json_stringn_nocheck(clean, len);
    free(clean);
    return j;
}
