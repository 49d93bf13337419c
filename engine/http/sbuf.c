/* sbuf.c: a growable text buffer (see sbuf.h). */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/jsonw.h"

static int reserve(sbuf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) {
        b->failed = 1;
        return -1;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

void sbuf_reserve(sbuf *b, size_t n)
{
    reserve(b, n);
}

void sbuf_put(sbuf *b, const char *s, size_t n)
{
    if (reserve(b, n) != 0)
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sbuf_puts(sbuf *b, const char *s)
{
    sbuf_put(b, s, strlen(s));
}

void sbuf_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void put(void *b, const char *s, size_t n)
{
    sbuf_put(b, s, n);
}

void sbuf_json_str(sbuf *b, const char *s, size_t n)
{
    jw_quote(s, n, put, b);
}

void sbuf_drop(sbuf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data)
        b->data[b->len] = '\0';
}

char *sbuf_take(sbuf *b, size_t *len)
{
    if (b->failed || reserve(b, 0) != 0) {
        sbuf_free(b);
        return NULL;
    }
    b->data[b->len] = '\0';
    char *text = b->data;
    if (len)
        *len = b->len;
    memset(b, 0, sizeof *b);
    return text;
}

void sbuf_free(sbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
