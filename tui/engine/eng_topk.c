/* eng_topk.c: a position's top-k, asked and read (eng_topk.h). */
#include "eng_topk.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_map.h"

char *eng_topk_body(const char *model, const int *tokens, int n, int k)
{
    json_t *ids = json_array();
    for (int i = 0; ids && i < n; i++)
        if (json_array_append_new(ids, json_integer(tokens[i])) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    json_t *o = ids ? json_pack("{ss so si si si}", "model", model, "prompt", ids, "max_tokens", 1,
                                "temperature", 0, "logprobs", k)
                    : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* Adds one alternative; a text already there keeps the first (an engine
 * that names two ids by one text lists the more probable first). */
static int add(eng_topk *out, const char *piece, const json_t *lp, char *why, size_t whylen)
{
    if (!json_is_number(lp) || !(json_number_value(lp) <= 0.0)) {
        snprintf(why, whylen, "the logprob of token \"%.40s\" is not a number <= 0", piece);
        return -1;
    }
    for (int i = 0; i < out->n; i++)
        if (strncmp(out->piece[i], piece, ENG_TOPK_PIECE - 1) == 0)
            return 0;
    if (out->n == ENG_TOPK_MAX)
        return 0;
    snprintf(out->piece[out->n], ENG_TOPK_PIECE, "%s", piece);
    out->logprob[out->n++] = json_number_value(lp);
    return 0;
}

/* Most probable first; equal ones keep the engine's order. */
static void sort(eng_topk *t)
{
    for (int i = 1; i < t->n; i++)
        for (int j = i; j > 0 && t->logprob[j] > t->logprob[j - 1]; j--) {
            char p[ENG_TOPK_PIECE];
            double l = t->logprob[j];
            memcpy(p, t->piece[j], sizeof p);
            memcpy(t->piece[j], t->piece[j - 1], sizeof p);
            memcpy(t->piece[j - 1], p, sizeof p);
            t->logprob[j] = t->logprob[j - 1];
            t->logprob[j - 1] = l;
        }
}

static int read_alts(const json_t *lps, eng_topk *out, char *why, size_t whylen)
{
    const json_t *content = json_object_get(lps, "content");
    if (json_is_array(content)) {
        const json_t *top = json_object_get(json_array_get(content, 0), "top_logprobs"), *e;
        size_t i;
        if (!json_is_array(top)) {
            snprintf(why, whylen, "logprobs.content[0] has no top_logprobs array");
            return -1;
        }
        json_array_foreach(top, i, e)
        {
            const char *piece = json_string_value(json_object_get(e, "token"));
            if (!piece) {
                snprintf(why, whylen, "logprobs.content[0].top_logprobs[%zu] has no token", i);
                return -1;
            }
            if (add(out, piece, json_object_get(e, "logprob"), why, whylen) != 0)
                return -1;
        }
        return 0;
    }
    const json_t *map = json_array_get(json_object_get(lps, "top_logprobs"), 0), *lp;
    const char *piece;
    if (!json_is_object(map)) {
        snprintf(why, whylen, "logprobs has neither content nor top_logprobs[0]");
        return -1;
    }
    json_object_foreach((json_t *)map, piece,
                        lp) if (add(out, piece, lp, why, whylen) != 0) return -1;
    return 0;
}

int eng_topk_read(const char *body, size_t len, eng_topk *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    json_t *j = eng_json_load(body, len, why, whylen);
    if (!j)
        return -1;
    const json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    const json_t *lps = json_object_get(choice, "logprobs");
    int rc = -1;
    if (json_is_null(lps) && json_is_string(json_object_get(choice, "text")))
        rc = 1;
    else if (!json_is_object(lps))
        snprintf(why, whylen, "choices[0] has no logprobs (does the engine take `logprobs`?)");
    else if (read_alts(lps, out, why, whylen) != 0)
        out->n = 0;
    else if (out->n == 0)
        snprintf(why, whylen, "the logprobs list no alternative token");
    else
        rc = 0;
    json_decref(j);
    if (rc == 0)
        sort(out);
    return rc;
}
