/* shellword.c: writing and reading shell words (shellword.h). */
#include "shellword.h"

#include <string.h>

static void put_c(char *buf, size_t len, size_t *at, char c)
{
    if (*at + 1 < len)
        buf[*at] = c;
    (*at)++;
}

size_t shellword_quote(const char *w, char *buf, size_t len)
{
    static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                                "_@%+=:,./-";
    size_t at = 0;
    if (strncmp(w, "~/", 2) == 0) {
        put_c(buf, len, &at, '~');
        put_c(buf, len, &at, '/');
        w += 2;
    }
    int quote = !*w || w[strspn(w, plain)];
    if (quote)
        put_c(buf, len, &at, '\'');
    for (; *w; w++) {
        if (*w == '\'' && quote)
            for (const char *q = "'\\''"; *q; q++)
                put_c(buf, len, &at, *q);
        else
            put_c(buf, len, &at, *w);
    }
    if (quote)
        put_c(buf, len, &at, '\'');
    if (len)
        buf[at < len ? at : len - 1] = '\0';
    return at;
}

int shellword_next(const char **p, char *word, size_t len, const char **start)
{
    const char *s = *p + strspn(*p, " \t\r\n");
    size_t n = 0;
    *p = s;
    if (!*s)
        return 0;
    *start = s;
    while (*s && !strchr(" \t\r\n", *s)) {
        char c = *s++;
        if (c == '\'') {
            const char *end = strchr(s, '\'');
            if (!end)
                return -1;
            for (; s < end; s++)
                put_c(word, len, &n, *s);
            s++;
        } else if (c == '"') {
            for (; *s && *s != '"'; s++) {
                if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
                    s++;
                put_c(word, len, &n, *s);
            }
            if (!*s)
                return -1;
            s++;
        } else {
            if (c == '\\' && *s)
                c = *s++;
            put_c(word, len, &n, c);
        }
    }
    if (n >= len)
        return -1;
    word[n] = '\0';
    *p = s;
    return 1;
}

int shellword_assignment(const char *w)
{
    size_t n = strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789");
    return n > 0 && !(w[0] >= '0' && w[0] <= '9') && w[n] == '=';
}
