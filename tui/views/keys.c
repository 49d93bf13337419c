/* keys.c: what a view's key table produces (keys.h). */
#include "keys.h"

#include <stdio.h>

int keys_cmd(const struct view_keys *t, int code)
{
    for (int i = 0; i < t->n; i++)
        for (int c = 0; c < KEYS_CODES && t->key[i].code[c]; c++)
            if (t->key[i].code[c] == code)
                return t->key[i].cmd;
    return -1;
}

void keys_footer(const struct view_keys *const *t, int n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < n; k++)
        for (int i = 0; i < t[k]->n; i++) {
            const struct view_key *r = &t[k]->key[i];
            if (!r->label)
                continue;
            int w = snprintf(buf + used, len - used, "%s%s:%s", used ? "|" : "", r->keys, r->label);
            if (w < 0 || (size_t)w >= len - used) {
                buf[used] = '\0'; /* the rows that fit, none cut */
                return;
            }
            used += (size_t)w;
        }
}

int keys_help(const struct view_keys *const *t, int n, struct keys_line *out, int max)
{
    int lines = 0;
    for (int k = 0; k < n; k++) {
        if (out && lines < max)
            out[lines] = (struct keys_line){NULL, t[k]->title};
        lines++;
        for (int i = 0; i < t[k]->n; i++) {
            if (!t[k]->key[i].help)
                continue; /* told by the row before */
            if (out && lines < max)
                out[lines] = (struct keys_line){t[k]->key[i].keys, t[k]->key[i].help};
            lines++;
        }
    }
    return lines;
}
