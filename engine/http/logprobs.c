/* logprobs.c: a choice's token logprobs in OpenAI's shapes (see logprobs.h). */
#include "logprobs.h"

#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"

int lp_add(lp_list *l, size_t offset, int token, const proto_logprobs *lp)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        lp_token *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (lp_token){offset, token, *lp};
    return 0;
}

void lp_free(lp_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* A token's piece: its string (valid UTF-8) and its bytes. */
typedef struct piece {
    json_t *str, *bytes;
} piece;

static piece piece_of(const tokenizer *t, int id)
{
    size_t len = 0;
    const char *s = t ? tok_piece(t, id, 1, &len) : NULL;
    if (!s)
        len = 0;
    /* U+FFFD is three bytes for each invalid one at most. */
    char *clean = malloc(3 * len + 1);
    piece p = {NULL, json_array()};
    if (clean) {
        utf8_clean(clean, 3 * len + 1, s ? s : "", len);
        p.str = json_string(clean);
    }
    for (size_t i = 0; p.bytes && i < len; i++)
        json_array_append_new(p.bytes, json_integer((unsigned char)s[i]));
    free(clean);
    return p;
}

/* {"token","logprob","bytes"}: a chat entry's head, or an alternative. */
static json_t *chat_entry(const tokenizer *t, int id, double logprob)
{
    piece p = piece_of(t, id);
    return json_pack("{s:o*,s:f,s:o*}", "token", p.str, "logprob", logprob, "bytes", p.bytes);
}

static json_t *chat_shape(const tokenizer *t, const lp_token *v, int from, int to)
{
    json_t *content = json_array();
    for (int i = from; content && i < to; i++) {
        json_t *e = chat_entry(t, v[i].token, v[i].lp.logprob), *top = json_array();
        for (int k = 0; top && k < v[i].lp.n_top; k++)
            json_array_append_new(top, chat_entry(t, v[i].lp.top[k], v[i].lp.top_lp[k]));
        if (!e || !top || json_object_set_new(e, "top_logprobs", top) ||
            json_array_append_new(content, e)) {
            json_decref(e);
            json_decref(content);
            return NULL;
        }
    }
    return content ? json_pack("{s:o,s:n}", "content", content, "refusal") : NULL;
}

/* {TOKEN: logprob}: the alternatives, then the chosen token; a string two
 * ids share keeps the first (the more probable). */
static void put_alt(json_t *map, const tokenizer *t, int id, double logprob)
{
    piece p = piece_of(t, id);
    json_decref(p.bytes);
    if (p.str && !json_object_get(map, json_string_value(p.str)))
        json_object_set_new(map, json_string_value(p.str), json_real(logprob));
    json_decref(p.str);
}

static json_t *completion_shape(const tokenizer *t, const lp_token *v, int from, int to,
                                const char *text)
{
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(),
           *offsets = json_array();
    int failed = !tokens || !lps || !tops || !offsets;
    for (int i = from; !failed && i < to; i++) {
        piece p = piece_of(t, v[i].token);
        json_decref(p.bytes);
        json_t *map = json_object();
        for (int k = 0; map && k < v[i].lp.n_top; k++)
            put_alt(map, t, v[i].lp.top[k], v[i].lp.top_lp[k]);
        if (!p.str || !map) {
            json_decref(p.str);
            json_decref(map);
            failed = 1;
            break;
        }
        put_alt(map, t, v[i].token, v[i].lp.logprob);
        failed =
            json_array_append_new(tokens, p.str) ||
            json_array_append_new(lps, json_real(v[i].lp.logprob)) ||
            json_array_append_new(tops, map) ||
            json_array_append_new(offsets, json_integer((json_int_t)utf8_count(text, v[i].offset)));
    }
    if (failed) {
        json_decref(tokens);
        json_decref(lps);
        json_decref(tops);
        json_decref(offsets);
        return NULL;
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs",
                     tops, "text_offset", offsets);
}

char *lp_render(oai_kind kind, const tokenizer *t, const lp_token *v, int from, int to,
                const char *text)
{
    json_t *o = kind == OAI_CHAT ? chat_shape(t, v, from, to)
                                 : completion_shape(t, v, from, to, text ? text : "");
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}
