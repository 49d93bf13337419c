/* utf8.c: UTF-8 boundaries and validity (see utf8.h). */
#include "utf8.h"

#include <string.h>

int utf8_check(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0], lo = 0x80, hi = 0xBF; /* the second byte's range */
    int need;

    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return -1; /* a continuation byte, or the lead of an overlong form */
    if (c < 0xE0) {
        need = 2;
    } else if (c < 0xF0) {
        need = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* no overlong forms */
        hi = c == 0xED ? 0x9F : 0xBF; /* no surrogates */
    } else if (c < 0xF5) {
        need = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; /* nothing past U+10FFFF */
    } else {
        return -1;
    }
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= n)
            return 0;
        if (p[i] < lo || p[i] > hi)
            return -i;
        lo = 0x80;
        hi = 0xBF;
    }
    return need;
}

size_t utf8_seq(const char *s, size_t n)
{
    int k = utf8_check(s, n);
    return k > 0 ? (size_t)k : 0;
}

size_t utf8_step(const char *s, size_t n)
{
    int k = utf8_check(s, n);
    return k > 0 ? (size_t)k : k < 0 ? (size_t)-k : n;
}

size_t utf8_count(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i += utf8_step(s + i, n - i))
        count++;
    return count;
}

size_t utf8_cut(const char *s, size_t n)
{
    /* A cut-off character has at most three of its bytes here: its lead
     * and up to two continuation bytes. */
    size_t i = n;
    while (i > 0 && n - i < 3 && utf8_is_cont((unsigned char)s[i - 1]))
        i--;
    if (i > 0 && utf8_check(s + i - 1, n - i + 1) == 0)
        return i - 1;
    return n;
}

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
    static const unsigned char lead_bits[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    size_t k = utf8_seq(s, n);
    if (k == 0)
        return 0;
    uint32_t v = (unsigned char)s[0] & lead_bits[k];
    for (size_t i = 1; i < k; i++)
        v = v << 6 | ((unsigned char)s[i] & 0x3F);
    *cp = v;
    return k;
}

size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_clean(char *dst, size_t cap, const char *src, size_t n)
{
    static const char fffd[] = "\xEF\xBF\xBD";
    size_t o = 0;

    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        /* A NUL would end the string early for whoever reads dst. */
        size_t k = src[i] ? utf8_seq(src + i, n - i) : 0;
        const char *from = k ? src + i : fffd;
        size_t len = k ? k : 3;
        if (o + len >= cap)
            break;
        memcpy(dst + o, from, len);
        o += len;
        i += k ? k : utf8_step(src + i, n - i);
    }
    dst[o] = '\0';
    return o;
}
