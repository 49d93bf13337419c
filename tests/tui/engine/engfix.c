/* engfix.c: reads the engines' captured answers (engfix.h). */
#include "engfix.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct engfix engfix_load(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, ENGFIX_LLAMACPP "%s", name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: cannot open (tests run from the tree's root)", path);
    struct engfix x = {.status = 200, .body = malloc(1 << 16)};
    cr_assert_not_null(x.body);
    x.len = fread(x.body, 1, (1 << 16) - 1, f);
    fclose(f);
    x.body[x.len] = '\0';
    if (strncmp(x.body, "HTTP/", 5) == 0) {
        /* "HTTP/1.1 200 OK", headers, a blank line, the body */
        x.status = strtol(strchr(x.body, ' ') + 1, NULL, 10);
        char *b = strstr(x.body, "\r\n\r\n");
        size_t skip = b ? 4 : 2;
        b = b ? b : strstr(x.body, "\n\n");
        cr_assert_not_null(b, "%s: no end of headers", path);
        x.len -= (size_t)(b + skip - x.body);
        memmove(x.body, b + skip, x.len + 1);
    }
    return x;
}

void engfix_free(struct engfix *f)
{
    free(f->body);
    f->body = NULL;
}
