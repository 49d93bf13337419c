/* embed.c: POST /v1/embeddings against the node (see embed.h). */
#include "embed.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/client.h"
#include "engine/proto/opt.h"

/* How often a wait looks at the stop flag. */
#define WAKE_MS 100
/* The longest the node may stay silent on an input (as gen.c's). */
#define NODE_SILENCE_MS 600000

static int bad_type(oai_error *e, const char *expected, const json_t *v)
{
    return oai_fail(e, 400, "bad_type", "input", "'input' must be %s, got %s", expected,
                    json_is_array(v)    ? "an array"
                    : json_is_object(v) ? "an object"
                                        : "another type");
}

/* A token array: non-empty, every id in range (the vocabulary's bound is
 * the node's check). */
static int token_array(const json_t *a, size_t at, oai_error *e)
{
    if (json_array_size(a) == 0)
        return oai_fail(e, 400, "bad_value", "input", "'input[%zu]' is an empty token array", at);
    size_t i;
    const json_t *x;
    json_array_foreach(a, i, x)
    {
        if (!json_is_integer(x))
            return bad_type(e, "token ids (integers)", x);
        if (json_integer_value(x) < 0 || json_integer_value(x) > PROTO_TOKEN_ID_MAX)
            return oai_fail(e, 400, "bad_value", "input", "'input': token id %lld is not in 0..%d",
                            (long long)json_integer_value(x), PROTO_TOKEN_ID_MAX);
    }
    return 0;
}

static int one_input(const json_t *v, size_t at, oai_error *e)
{
    if (json_is_string(v))
        return json_string_length(v) > 0
                   ? 0
                   : oai_fail(e, 400, "bad_value", "input", "'input[%zu]' is an empty string", at);
    if (json_is_array(v))
        return token_array(v, at, e);
    return bad_type(e, "a string, token ids, or an array of either", v);
}

/* input: one string or token array, or an array of them, into r->inputs. */
static int take_input(embed_req *r, const json_t *v, oai_error *e)
{
    const json_t *first = json_is_array(v) ? json_array_get(v, 0) : NULL;
    int one = json_is_string(v) || (json_is_array(v) && json_is_integer(first));
    if (!one && !json_is_array(v))
        return bad_type(e, "a string, token ids, or an array of either", v);
    if (!one && json_array_size(v) == 0)
        return oai_fail(e, 400, "bad_value", "input", "'input' must hold at least one input");
    if (!one && json_array_size(v) > EMBED_INPUTS_MAX)
        return oai_fail(e, 400, "bad_value", "input", "'input' holds %zu inputs; at most %d",
                        json_array_size(v), EMBED_INPUTS_MAX);
    r->inputs = one ? json_pack("[O]", v) : json_deep_copy(v);
    if (!r->inputs)
        return oai_fail(e, 500, "internal", "input", "out of memory");
    size_t i;
    const json_t *x;
    json_array_foreach(r->inputs, i, x)
    {
        if (one_input(x, i, e))
            return -1;
    }
    return 0;
}

/* A field checked by its row of the settings table into *val. */
static int by_row(opt_id row, const char *key, const json_t *v, opt_value *val, oai_error *e)
{
    char why[PROTO_MESSAGE_MAX - 64];
    opt_json_rc rc = opt_read_json(row, v, val, why, sizeof why);
    if (rc == OPT_JSON_OK)
        return 0;
    return oai_fail(e, 400, rc == OPT_JSON_BAD_TYPE ? "bad_type" : "bad_value", key, "'%s': %s",
                    key, why);
}

static int take_field(embed_req *r, const oai_model *m, int dim, const char *key, const json_t *v,
                      oai_error *e)
{
    opt_value val;
    if (json_is_null(v))
        return 0;
    if (strcmp(key, "model") == 0) {
        for (int i = 0; json_is_string(v) && i < m->n_names; i++)
            if (strcmp(json_string_value(v), m->names[i]) == 0) {
                r->model = m->names[i];
                return 0;
            }
        return oai_fail(e, 404, "model_not_found", key,
                        "The model '%.128s' does not exist: this node serves '%s'",
                        json_is_string(v) ? json_string_value(v) : "?", m->names[0]);
    }
    if (strcmp(key, "input") == 0)
        return take_input(r, v, e);
    if (strcmp(key, "encoding_format") == 0) {
        if (by_row(OPT_OAI_ENCODING_FORMAT, key, v, &val, e))
            return -1;
        r->base64 = strcmp(json_string_value(v), "base64") == 0;
        return 0;
    }
    if (strcmp(key, "dimensions") == 0) {
        if (by_row(OPT_OAI_DIMENSIONS, key, v, &val, e))
            return -1;
        return val.i == (unsigned long long)dim
                   ? 0
                   : oai_fail(e, 400, "unsupported", key,
                              "'dimensions' %llu: this model's embeddings have %d (no "
                              "truncation)",
                              val.i, dim);
    }
    if (strcmp(key, "user") == 0)
        return 0;
    return oai_fail(e, 400, "unknown_field", "", "Unrecognized request argument supplied: %.64s",
                    key);
}

int embed_parse(const char *body, size_t len, const oai_model *m, int dim, embed_req *out,
                oai_error *e)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return oai_fail(e, 400, "bad_json", "", "the body is not valid JSON: %s (at byte %d)",
                        jerr.text, jerr.position);
    int rc = json_is_object(root)
                 ? 0
                 : oai_fail(e, 400, "not_object", "", "the body must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (!rc)
            rc = take_field(out, m, dim, key, v, e);
    }
    if (!rc && !out->model)
        rc = oai_fail(e, 400, "missing_field", "model",
                      "'model' is required (this node serves '%s')", m->names[0]);
    if (!rc && !out->inputs)
        rc = oai_fail(e, 400, "missing_field", "input", "'input' is required");
    json_decref(root);
    if (rc)
        embed_req_free(out);
    return rc;
}

void embed_req_free(embed_req *r)
{
    json_decref(r->inputs);
    memset(r, 0, sizeof *r);
}

/* Unit length (in double), as llama.cpp's embd_normalize 2; a zero vector
 * stays zero. */
static void l2_normalize(float *v, int dim)
{
    double ss = 0.0;
    for (int i = 0; i < dim; i++)
        ss += (double)v[i] * v[i];
    if (ss <= 0.0)
        return;
    double inv = 1.0 / sqrt(ss);
    for (int i = 0; i < dim; i++)
        v[i] = (float)(v[i] * inv);
}

/* A vector as base64 (RFC 4648, padded) of its little-endian float32s
 * (the hosts we run on are little-endian). Written here: OpenSSL's
 * encoder is engine/model's alone (tests/layering/rules). */
static json_t *base64_of(const float *v, int dim)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = (const unsigned char *)v;
    size_t n = (size_t)dim * sizeof *v, o = 0;
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        out[o++] = abc[w >> 18 & 63];
        out[o++] = abc[w >> 12 & 63];
        out[o++] = i + 1 < n ? abc[w >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? abc[w & 63] : '=';
    }
    out[o] = '\0';
    json_t *s = json_string(out);
    free(out);
    return s;
}

static json_t *floats_of(const float *v, int dim)
{
    json_t *a = json_array();
    for (int i = 0; a && i < dim; i++)
        if (json_array_append_new(a, json_real(v[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

char *embed_response(const embed_req *r, float *vecs, int n, int dim, int prompt_tokens)
{
    json_t *data = json_array();
    for (int i = 0; data && i < n; i++) {
        float *v = vecs + (size_t)i * dim;
        l2_normalize(v, dim);
        json_t *x = r->base64 ? base64_of(v, dim) : floats_of(v, dim);
        if (!x || json_array_append_new(data, json_pack("{s:s,s:i,s:o}", "object", "embedding",
                                                        "index", i, "embedding", x))) {
            json_decref(data);
            return NULL;
        }
    }
    json_t *o = data ? json_pack("{s:s,s:o,s:s,s:{s:i,s:i}}", "object", "list", "data", data,
                                 "model", r->model, "usage", "prompt_tokens", prompt_tokens,
                                 "total_tokens", prompt_tokens)
                     : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* One input's embed request on the node: its vector into v [dim] and its
 * positions added to *tokens. 0, or -1 with e filled. */
static int embed_one(const gen_env *env, client *c, const json_t *input, float *v, int dim,
                     int *tokens, oai_error *e)
{
    char err[256], id[PROTO_ID_MAX + 1];
    json_t *args = json_pack("{s:O}", json_is_string(input) ? "prompt" : "tokens", input);
    int rc = args ? client_send(c, "embed", args, id, sizeof id, err, sizeof err) : -1;
    json_decref(args);
    if (rc != 0)
        return oai_fail(e, 500, "internal", NULL, "sending to the node: %s", args ? err : "");
    for (int waited = 0;; waited += WAKE_MS) {
        proto_reply r;
        int got = client_recv(c, &r, WAKE_MS, err, sizeof err);
        int gone = env->gone && atomic_load(env->gone);
        if (atomic_load(env->stopping) || gone || (got == 0 && waited >= NODE_SILENCE_MS)) {
            if (got == 1)
                proto_reply_free(&r);
            if (gone)
                return oai_fail(e, 0, NULL, NULL, "the client went away");
            return got == 0 && waited >= NODE_SILENCE_MS
                       ? oai_fail(e, 504, "timeout", NULL, "the node did not answer within %d ms",
                                  NODE_SILENCE_MS)
                       : oai_fail(e, 503, "shutdown", NULL, "the node is shutting down");
        }
        if (got < 0)
            return oai_fail(e, 500, "internal", NULL, "the node's reply: %s", err);
        if (got == 0)
            continue;
        if (!r.done || strcmp(r.id, id) != 0) {
            proto_reply_free(&r);
            continue;
        }
        const json_t *emb = json_object_get(r.json, "embedding");
        proto_stats st;
        if (!r.ok) {
            oai_from_node(r.code, r.message, e);
            rc = -1;
        } else if (!json_is_array(emb) || json_array_size(emb) != (size_t)dim ||
                   proto_stats_from_json(json_object_get(r.json, "stats"), &st, err, sizeof err) !=
                       0) {
            rc = oai_fail(e, 500, "internal", NULL, "the node's embedding is not %d numbers", dim);
        } else {
            for (int i = 0; i < dim; i++)
                v[i] = (float)json_number_value(json_array_get(emb, (size_t)i));
            *tokens += st.prompt_tokens;
        }
        proto_reply_free(&r);
        return rc;
    }
}

char *embed_run(const gen_env *env, const embed_req *r, int dim, oai_error *e)
{
    char err[256];
    client *c;
    if (client_open(&c, env->zctx, env->control, NULL, err, sizeof err) != 0) {
        oai_fail(e, 500, "internal", NULL, "cannot reach the node: %s", err);
        return NULL;
    }
    int n = (int)json_array_size(r->inputs), tokens = 0;
    float *vecs = malloc((size_t)n * (size_t)dim * sizeof *vecs);
    char *body = NULL;
    if (!vecs)
        oai_fail(e, 500, "internal", NULL, "out of memory for %d embeddings", n);
    int i = 0;
    while (vecs && i < n &&
           embed_one(env, c, json_array_get(r->inputs, (size_t)i), vecs + (size_t)i * dim, dim,
                     &tokens, e) == 0)
        i++;
    if (vecs && i == n && !(body = embed_response(r, vecs, n, dim, tokens)))
        oai_fail(e, 500, "internal", NULL, "out of memory");
    free(vecs);
    client_close(c);
    return body;
}
