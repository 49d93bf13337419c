/* reqhead.c: the check of a request's head (see reqhead.h). */
#include "reqhead.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static reqhead_verdict refuse(reqhead *out, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static reqhead_verdict refuse(reqhead *out, int status, const char *code, const char *fmt, ...)
{
    va_list ap;
    out->status = status;
    out->code = code;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    return REQHEAD_REFUSE;
}

/* The line at p (up to end), its length without CR LF; NULL next when
 * its LF has not come. */
static size_t line_at(const char *p, const char *end, const char **next)
{
    const char *lf = memchr(p, '\n', (size_t)(end - p));
    *next = lf ? lf + 1 : NULL;
    size_t len = (size_t)((lf ? lf : end) - p);
    return lf && len > 0 && p[len - 1] == '\r' ? len - 1 : len;
}

/* A token's characters (RFC 9110 5.6.2). */
static int is_tchar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* METHOD SP TARGET SP HTTP/d.d: 0, or the refusal. *minor11 is set for
 * HTTP/1.1 and later minor versions (which must carry Host). */
static reqhead_verdict request_line(const char *p, size_t len, reqhead *out, int *minor11)
{
    size_t m = 0;
    while (m < len && is_tchar(p[m]))
        m++;
    const char *sp2 = m < len ? memchr(p + m + 1, ' ', len - m - 1) : NULL;
    if (m == 0 || m == len || p[m] != ' ' || !sp2 || sp2 == p + m + 1)
        return refuse(out, 400, "bad_request",
                      "the request line is not 'METHOD TARGET HTTP/1.1' (RFC 9112 3)");
    const char *target = p + m + 1;
    size_t tlen = (size_t)(sp2 - target);
    snprintf(out->path, sizeof out->path, "%.*s", (int)strcspn(target, "? "),
             target); /* bounded by the space after it */
    const char *v = sp2 + 1;
    size_t vlen = len - (size_t)(v - p);
    if (memchr(target, '\t', tlen) || vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[6] != '.' ||
        v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9')
        return refuse(out, 400, "bad_request",
                      "the request line's version is not HTTP/DIGIT.DIGIT (RFC 9112 2.3)");
    if (v[5] != '1')
        return refuse(out, 505, "http_version",
                      "HTTP/%c.%c is not served: this server speaks HTTP/1.0 and HTTP/1.1", v[5],
                      v[7]);
    *minor11 = v[7] >= '1';
    return REQHEAD_OK;
}

/* A Content-Length value (len bytes at v): 1*DIGIT, within 64 bits
 * (libmicrohttpd's test). */
static reqhead_verdict content_length(const char *v, size_t len, reqhead *out)
{
    int shown = len > 32 ? 32 : (int)len;
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(v[i] - '0');
        if (d > 9)
            return refuse(out, 400, "bad_content_length",
                          "Content-Length '%.*s' is not a decimal number of bytes (RFC 9110 8.6)",
                          shown, v);
        if (n > (UINT64_MAX - 1 - d) / 10)
            return refuse(out, 413, "too_large", "Content-Length %.*s%s is past 64 bits", shown, v,
                          len > 32 ? "..." : "");
        n = n * 10 + d;
    }
    return len ? REQHEAD_OK
               : refuse(out, 400, "bad_content_length", "an empty Content-Length (RFC 9110 8.6)");
}

reqhead_verdict reqhead_check(const char *buf, size_t n, int closed, reqhead *out)
{
    memset(out, 0, sizeof *out);
    const char *p = buf, *end = buf + n, *next;
    /* Empty lines before the request line are ignored (RFC 9112 2.2). */
    while (p < end && (*p == '\r' || *p == '\n'))
        p++;
    size_t len = line_at(p, end, &next);
    if (len > REQHEAD_LINE_MAX)
        return refuse(out, 414, "uri_too_long", "the request line is past %d bytes",
                      REQHEAD_LINE_MAX);
    if (!next)
        return closed ? REQHEAD_DROP : REQHEAD_MORE;
    int minor11 = 0;
    if (request_line(p, len, out, &minor11) != REQHEAD_OK)
        return REQHEAD_REFUSE;
    int fields = 0, host = 0;
    const char *cl = NULL;
    size_t cl_len = 0;
    for (p = next;; p = next) {
        if ((size_t)(p - buf) > REQHEAD_MAX)
            return refuse(out, 431, "headers_too_large", "the request's head is past %d bytes",
                          REQHEAD_MAX);
        len = line_at(p, end, &next);
        if (!next)
            return (size_t)(end - buf) > REQHEAD_MAX
                       ? refuse(out, 431, "headers_too_large",
                                "the request's head is past %d bytes", REQHEAD_MAX)
                   : closed ? REQHEAD_DROP
                            : REQHEAD_MORE;
        if (len == 0)
            break;
        if (++fields > REQHEAD_FIELDS_MAX)
            return refuse(out, 431, "headers_too_large", "the request has more than %d fields",
                          REQHEAD_FIELDS_MAX);
        if (*p == ' ' || *p == '\t')
            continue; /* a folded line (RFC 9112 5.2): libmicrohttpd joins it */
        const char *colon = memchr(p, ':', len);
        size_t name = colon ? (size_t)(colon - p) : 0;
        size_t i = 0;
        while (i < name && is_tchar(p[i]))
            i++;
        if (!colon || name == 0 || i < name)
            return refuse(out, 400, "bad_request",
                          "field line %d is not 'Name: value' (RFC 9112 5)", fields);
        const char *v = colon + 1, *ve = p + len;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        if (name == 4 && strncasecmp(p, "Host", 4) == 0)
            host = 1;
        if (name == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
            if (content_length(v, (size_t)(ve - v), out) != REQHEAD_OK)
                return REQHEAD_REFUSE;
            /* Two lengths that differ frame the body two ways (a smuggling
             * risk behind a proxy: RFC 9112 6.3). */
            if (cl && (cl_len != (size_t)(ve - v) || memcmp(cl, v, cl_len) != 0))
                return refuse(out, 400, "bad_content_length",
                              "two different Content-Length fields (RFC 9112 6.3)");
            cl = v, cl_len = (size_t)(ve - v);
        }
    }
    if (minor11 && !host)
        return refuse(out, 400, "bad_request", "an HTTP/1.1 request without Host (RFC 9112 3.2)");
    return REQHEAD_OK;
}
