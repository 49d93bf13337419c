/* tok_stream.c: the streaming decoder (see tokenizer.h). Tokens may end in
 * the middle of a UTF-8 character (byte tokens, byte-level BPE): the tail
 * that could still complete is held back until the next token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"

#include "tokenizer.h"
#include "tokenizer_int.h"

struct tok_stream {
    const tokenizer *t;
    int special;
    int prev;   /* the last token pushed, -1 before the first */
    char *held; /* bytes not returned yet */
    size_t n_held, held_cap;
    char *out; /* what the last call returned */
    size_t out_cap;
};

static int reserve(char **p, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    char *q = realloc(*p, c);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

tok_stream *tok_stream_new(const tokenizer *t, int special)
{
    tok_stream *s = calloc(1, sizeof *s);
    /* Never NULL buffers: memcpy and memmove want real pointers. */
    if (!s || reserve(&s->held, &s->held_cap, 1) != 0 || reserve(&s->out, &s->out_cap, 1) != 0) {
        tok_stream_free(s);
        return NULL;
    }
    s->t = t;
    s->special = special;
    s->prev = -1;
    return s;
}

void tok_stream_free(tok_stream *s)
{
    if (!s)
        return;
    free(s->held);
    free(s->out);
    free(s);
}

/* Moves the held bytes that are settled to out: whole characters as they
 * are, broken ones as U+FFFD; at the end (`all`) a cut-off one too. */
static const char *drain(tok_stream *s, int all, size_t *len)
{
    if (reserve(&s->out, &s->out_cap, 3 * s->n_held + 1) != 0)
        return NULL;
    size_t i = 0, n = 0;
    while (i < s->n_held) {
        int k = utf8_check(s->held + i, s->n_held - i);
        if (k == 0 && !all)
            break;
        if (k > 0) {
            memcpy(s->out + n, s->held + i, (size_t)k);
            n += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(s->out + n, "\xEF\xBF\xBD", 3);
            n += 3;
            i += k < 0 ? (size_t)-k : s->n_held - i;
        }
    }
    memmove(s->held, s->held + i, s->n_held - i);
    s->n_held -= i;
    s->out[n] = '\0';
    *len = n;
    return s->out;
}

const char *tok_stream_push(tok_stream *s, int token, size_t *len)
{
    size_t n;
    char buf[TOK_DECODE_BUF];
    const char *p = tok_piece(s->t, token, s->special, &n);
    if (!p) {
        n = (size_t)snprintf(buf, sizeof buf, "<%d>", token);
        p = buf;
    } else if (n > 0 && p[0] == ' ' && tok_drops_space(s->t, token, s->prev)) {
        p++;
        n--;
    }
    s->prev = token;
    if (reserve(&s->held, &s->held_cap, s->n_held + n) != 0)
        return NULL;
    memcpy(s->held + s->n_held, p, n);
    s->n_held += n;
    return drain(s, 0, len);
}

const char *tok_stream_flush(tok_stream *s, size_t *len)
{
    return drain(s, 1, len);
}
