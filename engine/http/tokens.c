/* tokens.c: /tokenize and /detokenize (see tokens.h). */
#include "tokens.h"

#include <stdlib.h>
#include <string.h>

#include "engine/proto/jsonr.h"
#include "sbuf.h"

/* The body as an object, each key one of `keys` (NULL-terminated). */
static json_t *load(const char *body, size_t len, const char *const *keys, oai_error *e)
{
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        oai_fail(e, 400, "bad_json", "", "the body is not valid JSON: %s (at byte %d)", jerr.text,
                 jerr.position);
        return NULL;
    }
    if (!json_is_object(root)) {
        oai_fail(e, 400, "not_object", "", "the body must be a JSON object, got %s", jr_type(root));
        json_decref(root);
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        const char *const *k = keys;
        while (*k && strcmp(*k, key) != 0)
            k++;
        if (!*k) {
            oai_fail(e, 400, "unknown_field", key, "Unrecognized request argument supplied: %.64s",
                     key);
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

/* A boolean field: def when absent or null; -1 with e filled. */
static int flag(const json_t *root, const char *key, int def, oai_error *e)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return def;
    if (!json_is_boolean(v))
        return oai_fail(e, 400, "bad_type", key, "'%s' must be a boolean, got %s", key, jr_type(v));
    return json_is_true(v);
}

/* `model`, when given, must be one of the node's names (as vLLM checks). */
static int check_model(const json_t *root, const oai_model *m, oai_error *e)
{
    const json_t *v = json_object_get(root, "model");
    if (!v || json_is_null(v))
        return 0;
    for (int i = 0; json_is_string(v) && i < m->n_names; i++)
        if (strcmp(json_string_value(v), m->names[i]) == 0)
            return 0;
    return oai_fail(e, 404, "model_not_found", "model", "The model '%.128s' does not exist",
                    json_is_string(v) ? json_string_value(v) : "?");
}

static char *dump(json_t *o, oai_error *e)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        oai_fail(e, 500, "internal", NULL, "out of memory");
    return text;
}

/* The text: llama.cpp's `content` or vLLM's `prompt` (both may come, as
 * clients that speak to either send them; then they must agree). */
static const json_t *text_of(const json_t *root, oai_error *e)
{
    const json_t *c = json_object_get(root, "content"), *p = json_object_get(root, "prompt");
    if (c && p && !json_equal((json_t *)c, (json_t *)p)) {
        oai_fail(e, 400, "conflict", "prompt", "give one of 'content' and 'prompt'");
        return NULL;
    }
    const json_t *v = c ? c : p;
    if (!v)
        oai_fail(e, 400, "missing_field", "content", "'content' is required");
    else if (!json_is_string(v)) {
        oai_fail(e, 400, "bad_type", c ? "content" : "prompt", "the text must be a string, got %s",
                 jr_type(v));
        return NULL;
    }
    return v;
}

char *tokens_tokenize(const tokenizer *t, const oai_model *m, const char *body, size_t len,
                      oai_error *e)
{
    static const char *const keys[] = {
        "content",       "prompt",      "model", "add_special", "add_special_tokens",
        "parse_special", "with_pieces", NULL};
    json_t *root = load(body, len, keys, e);
    if (!root)
        return NULL;
    const json_t *text = text_of(root, e);
    int add = text && !check_model(root, m, e) ? flag(root, "add_special", 0, e) : -1;
    int add_vllm = add >= 0 ? flag(root, "add_special_tokens", add, e) : -1;
    int parse = add_vllm >= 0 ? flag(root, "parse_special", 1, e) : -1;
    int pieces = parse >= 0 ? flag(root, "with_pieces", 0, e) : -1;
    char *out = NULL;
    int *ids = NULL;
    char err[256];
    int n = pieces < 0
                ? -2
                : tok_tokenize(t, json_string_value(text), json_string_length(text),
                               (add_vllm ? TOK_ADD_BOS : 0) | (parse ? TOK_PARSE_SPECIAL : 0), &ids,
                               err, sizeof err);
    if (n == -1)
        oai_fail(e, 500, "internal", "content", "tokenizing: %s", err);
    if (n >= 0) {
        json_t *list = json_array();
        for (int i = 0; list && i < n; i++) {
            size_t plen = 0;
            const char *piece = tok_piece(t, ids[i], 1, &plen);
            json_array_append_new(list, pieces ? json_pack("{s:i,s:s%}", "id", ids[i], "piece",
                                                           piece ? piece : "", plen)
                                               : json_integer(ids[i]));
        }
        out = dump(list ? json_pack("{s:o,s:i}", "tokens", list, "count", n) : NULL, e);
    }
    free(ids);
    json_decref(root);
    return out;
}

char *tokens_detokenize(const tokenizer *t, const oai_model *m, const char *body, size_t len,
                        oai_error *e)
{
    static const char *const keys[] = {"tokens", "model", NULL};
    json_t *root = load(body, len, keys, e);
    if (!root)
        return NULL;
    const json_t *list = json_object_get(root, "tokens");
    int ok = check_model(root, m, e) == 0;
    if (ok && !json_is_array(list)) {
        oai_fail(e, 400, list ? "bad_type" : "missing_field", "tokens",
                 "'tokens' must be an array of token ids");
        ok = 0;
    }
    sbuf text = {0};
    size_t i;
    const json_t *x;
    int prev = -1, vocab = tok_vocab_size(t);
    json_array_foreach(ok ? list : NULL, i, x)
    {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= vocab) {
            oai_fail(e, 400, "bad_token", "tokens", "tokens[%zu] is not a token id (0..%d)", i,
                     vocab - 1);
            ok = 0;
            break;
        }
        char buf[TOK_DECODE_BUF];
        int id = (int)json_integer_value(x);
        sbuf_puts(&text, tok_decode(t, prev, id, buf));
        prev = id;
    }
    char *out = ok && !text.failed
                    ? dump(json_pack("{s:s%}", "content", text.data ? text.data : "", text.len), e)
                    : NULL;
    if (ok && text.failed)
        oai_fail(e, 500, "internal", NULL, "out of memory");
    sbuf_free(&text);
    json_decref(root);
    return out;
}
