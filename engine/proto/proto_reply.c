/* proto_reply.c: reply frames (node -> client), request statistics and the
 * status object shared by the status reply and the node heartbeat. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"
#include "jsonr.h"
#include "jsonw.h"
#include "protocol.h"

/* Byte counts are unsigned; JSON integers here are signed 64-bit. */
static json_int_t clamp_u64(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (json_int_t)v;
}

/* json_real refuses NaN and infinities; they travel as null. */
static json_t *real_or_null(double v)
{
    json_t *j = json_real(v);
    return j ? j : json_null();
}

static json_t *reply_head(const char *id, int done)
{
    return json_pack("{s:i,s:o,s:b}", "v", PROTO_VERSION, "id", jw_string(id), "done", done);
}

static char *dump_and_free(json_t *o)
{
    if (!o)
        return NULL;
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

json_t *proto_embedding_json(const double *sum, int dim, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < dim; i++)
        if (json_array_append_new(a, real_or_null(n > 0 ? sum[i] / n : 0.0))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* A token frame with logprobs: rarer, and its doubles want every digit. */
static char *token_with_lp(const char *id, int token, const char *text, const proto_logprobs *lp)
{
    json_t *o = reply_head(id, 0), *top = json_array();
    int failed = !o || !top;
    for (int i = 0; !failed && i < lp->n_top; i++)
        failed = json_array_append_new(
            top, json_pack("{s:i,s:f}", "token", lp->top[i], "logprob", lp->top_lp[i]));
    if (failed || json_object_set_new(o, "token", json_integer(token)) ||
        json_object_set_new(o, "text", jw_string(text)) ||
        json_object_set_new(o, "logprob", real_or_null(lp->logprob)) ||
        json_object_set_new(o, "top_logprobs", top)) {
        json_decref(o);
        if (failed)
            json_decref(top);
        return NULL;
    }
    return dump_and_free(o);
}

char *proto_reply_token(const char *id, int token, const char *text, const proto_logprobs *lp)
{
    if (lp && lp->n_top >= 0)
        return token_with_lp(id, token, text, lp);
    /* A token frame goes out for every generated token, so it is written
     * directly rather than through a jansson tree. */
    size_t cap = 64 + 6 * (strlen(id) + strlen(text));
    char *buf = malloc(cap);
    jw w;

    if (!buf)
        return NULL;
    jw_init(&w, buf, cap);
    jw_open(&w);
    jw_key(&w, "v");
    jw_i64(&w, PROTO_VERSION);
    jw_key(&w, "id");
    jw_str(&w, id, strlen(id));
    jw_key(&w, "done");
    jw_raw(&w, "false", 5);
    jw_key(&w, "token");
    jw_i64(&w, token);
    jw_key(&w, "text");
    jw_str(&w, text, strlen(text));
    jw_close(&w);
    if (jw_end(&w) < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int proto_logprobs_check(const proto_logprobs *lp, int asked, int vocab, char *err, size_t errlen)
{
    int want = asked < vocab ? asked : vocab;
    if (lp->n_top != want) {
        snprintf(err, errlen, "logprobs with %d alternatives, %d asked (vocabulary %d)", lp->n_top,
                 asked, vocab);
        return -1;
    }
    if (want < 0)
        return 0;
    if (!(lp->logprob <= 0.0) || !isfinite(lp->logprob)) {
        snprintf(err, errlen, "logprob %g (expected a finite value <= 0)", lp->logprob);
        return -1;
    }
    for (int i = 0; i < lp->n_top; i++) {
        if (lp->top[i] < 0 || lp->top[i] >= vocab || !isfinite(lp->top_lp[i]) ||
            !(lp->top_lp[i] <= (i ? lp->top_lp[i - 1] : 0.0))) {
            snprintf(err, errlen,
                     "top_logprobs[%d]: token %d, logprob %g (expected 0..%d, finite, <= 0 and "
                     "not above the one before)",
                     i, lp->top[i], lp->top_lp[i], vocab - 1);
            return -1;
        }
    }
    return 0;
}

/* A token frame's "logprob" and "top_logprobs", into out->lp (n_top -1
 * when the frame has neither). */
static int decode_logprobs(const json_t *root, proto_reply *out, char *err, size_t errlen)
{
    const json_t *lp = json_object_get(root, "logprob"),
                 *top = json_object_get(root, "top_logprobs");
    out->lp.n_top = -1;
    if (!out->has_token || (!lp && !top)) /* an eval chunk's logprob is its own */
        return 0;
    if (!json_is_number(lp) || !json_is_array(top) || json_array_size(top) > PROTO_LOGPROBS_MAX) {
        snprintf(err, errlen,
                 "reply: 'logprob' must be a number and 'top_logprobs' an array of at most %d",
                 PROTO_LOGPROBS_MAX);
        return -1;
    }
    out->lp.logprob = json_number_value(lp);
    out->lp.n_top = (int)json_array_size(top);
    for (int i = 0; i < out->lp.n_top; i++) {
        const json_t *e = json_array_get(top, (size_t)i), *t = json_object_get(e, "token"),
                     *x = json_object_get(e, "logprob");
        if (!json_is_integer(t) || !json_is_number(x) || json_integer_value(t) < 0 ||
            json_integer_value(t) > PROTO_TOKEN_ID_MAX) {
            snprintf(err, errlen, "reply: top_logprobs[%d] needs a token id and a logprob", i);
            return -1;
        }
        out->lp.top[i] = (int)json_integer_value(t);
        out->lp.top_lp[i] = json_number_value(x);
    }
    return 0;
}

char *proto_reply_ok(const char *id, const json_t *results)
{
    json_t *o = reply_head(id, 1);
    /* jansson's update takes a non-const source but only reads it (and
     * takes references to its values). */
    if (!o || json_object_set_new(o, "ok", json_true()) ||
        (results && json_object_update_missing(o, (json_t *)results))) {
        json_decref(o);
        return NULL;
    }
    return dump_and_free(o);
}

char *proto_reply_error(const char *id, const proto_error *err)
{
    return proto_reply_error_with(id, err, NULL);
}

char *proto_reply_error_with(const char *id, const proto_error *err, const json_t *results)
{
    json_t *e = json_pack("{s:s,s:o}", "code", proto_code_name(err->code), "message",
                          jw_string(err->message));
    if (e && err->field[0] && json_object_set_new(e, "field", jw_string(err->field))) {
        json_decref(e);
        return NULL;
    }
    json_t *o = reply_head(id, 1);
    if (!o || !e || json_object_set_new(o, "ok", json_false()) ||
        json_object_set_new(o, "error", e) ||
        (results && json_object_update_missing(o, (json_t *)results))) {
        json_decref(o);
        return NULL;
    }
    return dump_and_free(o);
}

char *proto_reply_eval(const char *id, int pos, const proto_eval_row *rows, int n, int vocab)
{
    json_t *o = reply_head(id, 0);
    json_t *tokens = json_array(), *top1 = json_array(), *logprob = json_array();
    int failed = !o || !tokens || !top1 || !logprob;
    for (int i = 0; !failed && i < n; i++)
        failed = json_array_append_new(tokens, json_integer(rows[i].token)) ||
                 json_array_append_new(top1, json_integer(rows[i].top1)) ||
                 json_array_append_new(logprob, real_or_null(rows[i].logprob));
    if (failed || json_object_set_new(o, "pos", json_integer(pos)) ||
        json_object_set_new(o, "tokens", tokens) || json_object_set_new(o, "top1", top1) ||
        json_object_set_new(o, "logprob", logprob) ||
        (vocab > 0 && json_object_set_new(o, "vocab", json_integer(vocab)))) {
        /* set_new took each array it was given, even when it failed. */
        json_decref(o);
        return NULL;
    }
    return dump_and_free(o);
}

char *proto_reply_quality(const char *id, int window, int pos, const double *kl, const int *agree,
                          int n)
{
    json_t *o = reply_head(id, 0);
    json_t *kls = json_array(), *agrees = json_array();
    int failed = !o || !kls || !agrees;
    for (int i = 0; !failed && i < n; i++)
        failed = json_array_append_new(kls, real_or_null(kl[i])) ||
                 json_array_append_new(agrees, json_integer(agree[i]));
    if (failed || json_object_set_new(o, "window", json_integer(window)) ||
        json_object_set_new(o, "pos", json_integer(pos)) ||
        json_object_set_new(o, "n", json_integer(n)) || json_object_set_new(o, "kl", kls) ||
        json_object_set_new(o, "agree", agrees)) {
        json_decref(o);
        return NULL;
    }
    return dump_and_free(o);
}

/* Element i of an eval chunk's array `key`: an integer in [lo, hi], or
 * (logprob) a number or null. */
static int eval_elem(const json_t *a, const char *key, size_t i, int integer, double *out,
                     char *err, size_t errlen)
{
    const json_t *v = json_array_get(a, i);
    if (integer && json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= PROTO_TOKEN_ID_MAX) {
        *out = (double)json_integer_value(v);
        return 0;
    }
    if (!integer && (json_is_number(v) || json_is_null(v))) {
        *out = json_is_null(v) ? NAN : json_number_value(v);
        return 0;
    }
    snprintf(err, errlen, "eval reply: %s[%zu] is %s, expected %s", key, i, jr_type(v),
             integer ? "a token id" : "a number");
    return -1;
}

int proto_eval_decode(const proto_reply *r, int *pos, proto_eval_row **rows, int *n, int *vocab,
                      char *err, size_t errlen)
{
    static const char *const keys[3] = {"tokens", "top1", "logprob"};
    const json_t *a[3];
    *rows = NULL;
    *pos = -1;
    *vocab = 0;
    if (r->done || !json_object_get(r->json, "pos"))
        return 0;
    if (jr_int(r->json, "pos", pos, err, errlen) || jr_int(r->json, "vocab", vocab, err, errlen))
        return -1;
    for (int k = 0; k < 3; k++)
        a[k] = json_object_get(r->json, keys[k]);
    size_t count = json_array_size(a[0]);
    if (*pos < 0 || *vocab < 0 || count == 0 || json_array_size(a[1]) != count ||
        json_array_size(a[2]) != count) {
        snprintf(err, errlen, "eval reply: pos %d, vocab %d and arrays of %zu, %zu, %zu entries",
                 *pos, *vocab, count, json_array_size(a[1]), json_array_size(a[2]));
        return -1;
    }
    size_t want = (size_t)*vocab * count * sizeof(float);
    if ((*vocab ? want : 0) != r->data_len) {
        snprintf(err, errlen, "eval reply: %zu bytes of logits for %zu rows of %d", r->data_len,
                 count, *vocab);
        return -1;
    }
    *rows = malloc(count * sizeof **rows);
    if (!*rows) {
        snprintf(err, errlen, "out of memory for %zu eval rows", count);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        double v[3];
        for (int k = 0; k < 3; k++) {
            if (eval_elem(a[k], keys[k], i, k < 2, &v[k], err, errlen) != 0) {
                free(*rows);
                *rows = NULL;
                return -1;
            }
        }
        (*rows)[i] = (proto_eval_row){.token = (int)v[0], .top1 = (int)v[1], .logprob = v[2]};
    }
    *n = (int)count;
    return 1;
}

json_t *proto_stats_json(const proto_stats *s)
{
    return json_pack("{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:i}", "prompt_tokens", s->prompt_tokens,
                     "gen_tokens", s->gen_tokens, "ttft_ms", real_or_null(s->ttft_ms), "prefill_ms",
                     real_or_null(s->prefill_ms), "prefill_tps", real_or_null(s->prefill_tps),
                     "decode_tps", real_or_null(s->decode_tps), "e2e_ms", real_or_null(s->e2e_ms),
                     "ctx", s->ctx);
}

int proto_stats_from_json(const json_t *obj, proto_stats *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "stats: expected an object, got %s", obj ? jr_type(obj) : "nothing");
        return -1;
    }
    if (jr_int(obj, "prompt_tokens", &out->prompt_tokens, err, errlen) ||
        jr_int(obj, "gen_tokens", &out->gen_tokens, err, errlen) ||
        jr_num(obj, "ttft_ms", &out->ttft_ms, err, errlen) ||
        jr_num(obj, "prefill_ms", &out->prefill_ms, err, errlen) ||
        jr_num(obj, "prefill_tps", &out->prefill_tps, err, errlen) ||
        jr_num(obj, "decode_tps", &out->decode_tps, err, errlen) ||
        jr_num(obj, "e2e_ms", &out->e2e_ms, err, errlen) ||
        jr_int(obj, "ctx", &out->ctx, err, errlen))
        return -1;
    return 0;
}

int proto_reply_decode(const void *buf, size_t len, proto_reply *out, char *err, size_t errlen)
{
    json_error_t jerr;
    int v = 0;

    memset(out, 0, sizeof *out);
    out->lp.n_top = -1;
    json_t *root = json_loadb(buf, len, JSON_DECODE_ANY, &jerr);
    if (!root) {
        snprintf(err, errlen, "reply is not valid JSON at byte %d: %s", jerr.position, jerr.text);
        return -1;
    }
    out->json = root;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "reply: expected a JSON object, got %s", jr_type(root));
        goto fail;
    }
    if (jr_int(root, "v", &v, err, errlen))
        goto fail;
    if (v != PROTO_VERSION) {
        snprintf(err, errlen, "reply: field 'v' is %d, expected %d", v, PROTO_VERSION);
        goto fail;
    }
    const json_t *token = json_object_get(root, "token");
    if (jr_str(root, "id", out->id, sizeof out->id, err, errlen) ||
        jr_bool(root, "done", &out->done, err, errlen) ||
        jr_int(root, "token", &out->token, err, errlen))
        goto fail;
    out->has_token = token != NULL;
    const json_t *text = json_object_get(root, "text");
    out->text = json_is_string(text) ? json_string_value(text) : "";
    if (decode_logprobs(root, out, err, errlen))
        goto fail;
    if (!out->done)
        return 0;
    if (!json_is_boolean(json_object_get(root, "ok"))) {
        snprintf(err, errlen, "reply: a final frame needs a boolean 'ok'");
        goto fail;
    }
    out->ok = json_is_true(json_object_get(root, "ok"));
    if (out->ok)
        return 0;
    const json_t *e = json_object_get(root, "error");
    if (!json_is_object(e) || !json_is_string(json_object_get(e, "code"))) {
        snprintf(err, errlen, "reply: an error frame needs an 'error' object with a 'code'");
        goto fail;
    }
    if (jr_str(e, "code", out->code, sizeof out->code, err, errlen) ||
        jr_str(e, "message", out->message, sizeof out->message, err, errlen) ||
        jr_str(e, "field", out->field, sizeof out->field, err, errlen))
        goto fail;
    return 0;
fail:
    proto_reply_free(out);
    return -1;
}

void proto_reply_free(proto_reply *r)
{
    json_decref(r->json);
    free(r->data);
    r->json = NULL;
    r->text = NULL;
    r->data = NULL;
    r->data_len = 0;
}

/* The head's view of its ring: a state, and when down the stage and why. */
static json_t *ring_health_json(const proto_status *s)
{
    json_t *o = json_pack("{s:s}", "state", proto_ring_state_name(s->ring_health.state));
    if (o && s->ring_health.state == PROTO_RING_DOWN &&
        (json_object_set_new(o, "stage", jw_string(s->ring_health.stage)) ||
         json_object_set_new(o, "message", jw_string(s->ring_health.message)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* model.shape, when the node knows it. -1 when out of memory. */
static int status_shape_json(json_t *o, const proto_status *s)
{
    if (s->model.n_layer_bytes <= 0)
        return 0;
    json_t *layers = json_array();
    for (int l = 0; layers && l < s->model.n_layer_bytes && l < PROTO_LAYERS_MAX; l++)
        if (json_array_append_new(layers, json_integer(clamp_u64(s->model.layer_bytes[l])))) {
            json_decref(layers);
            layers = NULL;
        }
    json_t *shape =
        json_pack("{s:i,s:b,s:I,s:I,s:o}", "head_dim", s->model.head_dim, "shared_classifier",
                  s->model.shared_classifier, "embed_bytes", clamp_u64(s->model.embed_bytes),
                  "out_bytes", clamp_u64(s->model.out_bytes), "layer_bytes", layers);
    return shape ? json_object_set_new(json_object_get(o, "model"), "shape", shape) : -1;
}

/* What the node shares with others on its host. -1 when out of memory. */
static int status_host_json(json_t *o, const proto_status *s)
{
    json_t *m = json_object_get(o, "memory");
    if (json_object_set_new(m, "unpaged", json_integer(clamp_u64(s->memory.unpaged))) ||
        json_object_set_new(m, "limit", json_integer(clamp_u64(s->memory.limit))) ||
        json_object_set_new(m, "host_available", json_integer(clamp_u64(s->memory.host_available))))
        return -1;
    return s->host_id[0] ? json_object_set_new(o, "host_id", jw_string(s->host_id)) : 0;
}

json_t *proto_status_json(const char *node, const proto_status *s)
{
    json_t *ring = json_array();
    for (int i = 0; ring && i < s->n_ring && i < PROTO_RING_MAX; i++) {
        if (json_array_append_new(ring, jw_string(s->ring[i]))) {
            json_decref(ring);
            ring = NULL;
        }
    }
    json_t *prefill = s->config.prefill_step == PROTO_PREFILL_AUTO
                          ? json_string("auto")
                          : json_integer(s->config.prefill_step);
    json_t *o = json_pack(
        "{s:o,s:o,"
        "s:{s:o,s:o,s:o,s:o,s:o,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:[i,i]},"
        "s:{s:o,s:i,s:i,s:i,s:i,s:i},"
        "s:{s:I,s:I,s:I,s:I,s:I,s:I},"
        "s:i,s:i,s:i,s:o,s:o,s:i,s:i,s:o,s:{s:b}}",
        "node", jw_string(node), "version", jw_string(s->version), "model", "name",
        jw_string(s->model.name), "fingerprint", jw_string(s->model.fingerprint), "format",
        jw_string(s->model.format), "arch", jw_string(s->model.arch), "weight_types",
        jw_string(s->model.weight_types), "dim", s->model.dim, "hidden_dim", s->model.hidden_dim,
        "n_layers", s->model.n_layers, "n_heads", s->model.n_heads, "n_kv_heads",
        s->model.n_kv_heads, "vocab_size", s->model.vocab_size, "seq_len", s->model.seq_len,
        "layers", s->model.layer_first, s->model.layer_last, "config", "prefill_step", prefill,
        "kv_bits", s->config.kv_bits, "threads", s->config.threads, "max_ctx", s->config.max_ctx,
        "max_seqs", s->config.max_seqs, "pipeline_depth", s->config.pipeline_depth, "memory",
        "budget", clamp_u64(s->memory.budget), "used", clamp_u64(s->memory.used), "headroom",
        (json_int_t)s->memory.headroom, "weights_bytes", clamp_u64(s->memory.weights_bytes),
        "kv_bytes", clamp_u64(s->memory.kv_bytes), "rss", clamp_u64(s->memory.rss), "sessions",
        s->sessions, "active", s->active, "queued", s->queued, "busy", real_or_null(s->busy),
        "uptime_s", real_or_null(s->uptime_s), "stage", s->stage, "n_stages", s->n_stages, "ring",
        ring, "security", "curve", s->curve);
    if (o && s->model.chat_template[0] &&
        json_object_set_new(json_object_get(o, "model"), "chat_template",
                            jw_string(s->model.chat_template))) {
        json_decref(o);
        return NULL;
    }
    if (o && (status_shape_json(o, s) || status_host_json(o, s))) {
        json_decref(o);
        return NULL;
    }
    if (o && s->cpu_path[0] && json_object_set_new(o, "cpu_path", jw_string(s->cpu_path))) {
        json_decref(o);
        return NULL;
    }
    if (o && s->warning[0] &&
        json_object_set_new(json_object_get(o, "security"), "warning", jw_string(s->warning))) {
        json_decref(o);
        return NULL;
    }
    if (o && s->ring_health.known && json_object_set_new(o, "ring_health", ring_health_json(s))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int status_config(const json_t *c, proto_status *out, char *err, size_t errlen)
{
    const json_t *ps = json_object_get(c, "prefill_step");
    if (json_is_string(ps) && !strcmp(json_string_value(ps), "auto"))
        out->config.prefill_step = PROTO_PREFILL_AUTO;
    else if (jr_int(c, "prefill_step", &out->config.prefill_step, err, errlen))
        return -1;
    return jr_int(c, "kv_bits", &out->config.kv_bits, err, errlen) ||
                   jr_int(c, "threads", &out->config.threads, err, errlen) ||
                   jr_int(c, "max_ctx", &out->config.max_ctx, err, errlen) ||
                   jr_int(c, "max_seqs", &out->config.max_seqs, err, errlen) ||
                   jr_int(c, "pipeline_depth", &out->config.pipeline_depth, err, errlen)
               ? -1
               : 0;
}

static int status_model(const json_t *m, proto_status *out, char *err, size_t errlen)
{
    const json_t *layers = json_object_get(m, "layers");
    if (layers) {
        if (!json_is_array(layers) || json_array_size(layers) != 2 ||
            !json_is_integer(json_array_get(layers, 0)) ||
            !json_is_integer(json_array_get(layers, 1))) {
            snprintf(err, errlen, "status: field 'model.layers': expected [first, last]");
            return -1;
        }
        out->model.layer_first = (int)json_integer_value(json_array_get(layers, 0));
        out->model.layer_last = (int)json_integer_value(json_array_get(layers, 1));
    }
    return jr_str(m, "name", out->model.name, sizeof out->model.name, err, errlen) ||
                   jr_str(m, "fingerprint", out->model.fingerprint, sizeof out->model.fingerprint,
                          err, errlen) ||
                   jr_str(m, "format", out->model.format, sizeof out->model.format, err, errlen) ||
                   jr_str(m, "arch", out->model.arch, sizeof out->model.arch, err, errlen) ||
                   jr_str(m, "weight_types", out->model.weight_types,
                          sizeof out->model.weight_types, err, errlen) ||
                   jr_int(m, "dim", &out->model.dim, err, errlen) ||
                   jr_int(m, "hidden_dim", &out->model.hidden_dim, err, errlen) ||
                   jr_int(m, "n_layers", &out->model.n_layers, err, errlen) ||
                   jr_int(m, "n_heads", &out->model.n_heads, err, errlen) ||
                   jr_int(m, "n_kv_heads", &out->model.n_kv_heads, err, errlen) ||
                   jr_int(m, "vocab_size", &out->model.vocab_size, err, errlen) ||
                   jr_int(m, "seq_len", &out->model.seq_len, err, errlen) ||
                   jr_str(m, "chat_template", out->model.chat_template,
                          sizeof out->model.chat_template, err, errlen)
               ? -1
               : 0;
}

static int status_shape(const json_t *sh, proto_status *out, char *err, size_t errlen)
{
    const json_t *layers = json_object_get(sh, "layer_bytes");
    if (!json_is_array(layers) || json_array_size(layers) > PROTO_LAYERS_MAX) {
        snprintf(err, errlen,
                 "status: field 'model.shape.layer_bytes': expected an array of up "
                 "to %d byte counts",
                 PROTO_LAYERS_MAX);
        return -1;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(layers, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            snprintf(err, errlen,
                     "status: field 'model.shape.layer_bytes': element %zu is %s, "
                     "expected a byte count",
                     i, jr_type(v));
            return -1;
        }
        out->model.layer_bytes[i] = (uint64_t)json_integer_value(v);
    }
    out->model.n_layer_bytes = (int)json_array_size(layers);
    return jr_int(sh, "head_dim", &out->model.head_dim, err, errlen) ||
                   jr_bool(sh, "shared_classifier", &out->model.shared_classifier, err, errlen) ||
                   jr_u64(sh, "embed_bytes", &out->model.embed_bytes, err, errlen) ||
                   jr_u64(sh, "out_bytes", &out->model.out_bytes, err, errlen)
               ? -1
               : 0;
}

static int status_memory(const json_t *m, proto_status *out, char *err, size_t errlen)
{
    return jr_u64(m, "budget", &out->memory.budget, err, errlen) ||
                   jr_u64(m, "used", &out->memory.used, err, errlen) ||
                   jr_i64(m, "headroom", &out->memory.headroom, err, errlen) ||
                   jr_u64(m, "weights_bytes", &out->memory.weights_bytes, err, errlen) ||
                   jr_u64(m, "kv_bytes", &out->memory.kv_bytes, err, errlen) ||
                   jr_u64(m, "rss", &out->memory.rss, err, errlen) ||
                   jr_u64(m, "unpaged", &out->memory.unpaged, err, errlen) ||
                   jr_u64(m, "limit", &out->memory.limit, err, errlen) ||
                   jr_u64(m, "host_available", &out->memory.host_available, err, errlen)
               ? -1
               : 0;
}

static int status_ring(const json_t *ring, proto_status *out, char *err, size_t errlen)
{
    if (!json_is_array(ring)) {
        snprintf(err, errlen, "status: field 'ring': expected an array, got %s", jr_type(ring));
        return -1;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(ring, i, v)
    {
        if (i >= PROTO_RING_MAX)
            break;
        if (!json_is_string(v)) {
            snprintf(err, errlen, "status: field 'ring': element %zu is %s, expected a string", i,
                     jr_type(v));
            return -1;
        }
        utf8_clean(out->ring[i], sizeof out->ring[i], json_string_value(v), json_string_length(v));
        out->n_ring = (int)i + 1;
    }
    return 0;
}

static int status_ring_health(const json_t *h, proto_status *out, char *err, size_t errlen)
{
    char state[16] = "";
    if (jr_str(h, "state", state, sizeof state, err, errlen) ||
        jr_str(h, "stage", out->ring_health.stage, sizeof out->ring_health.stage, err, errlen) ||
        jr_str(h, "message", out->ring_health.message, sizeof out->ring_health.message, err,
               errlen))
        return -1;
    out->ring_health.known = 1;
    out->ring_health.state = proto_ring_state_parse(state);
    return 0;
}

/* A sub-object of a status: absent is fine, another type is not. */
static int status_part(const json_t *obj, const char *key, const json_t **out, char *err,
                       size_t errlen)
{
    *out = json_object_get(obj, key);
    if (*out && !json_is_object(*out)) {
        snprintf(err, errlen, "status: field '%s': expected an object, got %s", key, jr_type(*out));
        return -1;
    }
    return 0;
}

int proto_status_from_json(const json_t *obj, proto_status *out, char *err, size_t errlen)
{
    const json_t *model, *config, *memory, *security, *health;

    memset(out, 0, sizeof *out);
    out->busy = NAN; /* an older node does not say */
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "status: expected an object, got %s", obj ? jr_type(obj) : "nothing");
        return -1;
    }
    if (status_part(obj, "model", &model, err, errlen) ||
        status_part(obj, "config", &config, err, errlen) ||
        status_part(obj, "memory", &memory, err, errlen) ||
        status_part(obj, "security", &security, err, errlen))
        return -1;
    const json_t *shape = model ? json_object_get(model, "shape") : NULL;
    if ((model && status_model(model, out, err, errlen)) ||
        (shape && status_shape(shape, out, err, errlen)) ||
        (config && status_config(config, out, err, errlen)) ||
        (memory && status_memory(memory, out, err, errlen)) ||
        (json_object_get(obj, "ring") &&
         status_ring(json_object_get(obj, "ring"), out, err, errlen)))
        return -1;
    if (security && (jr_bool(security, "curve", &out->curve, err, errlen) ||
                     jr_str(security, "warning", out->warning, sizeof out->warning, err, errlen)))
        return -1;
    if (status_part(obj, "ring_health", &health, err, errlen) ||
        (health && status_ring_health(health, out, err, errlen)))
        return -1;
    return jr_str(obj, "version", out->version, sizeof out->version, err, errlen) ||
                   jr_str(obj, "host_id", out->host_id, sizeof out->host_id, err, errlen) ||
                   jr_str(obj, "cpu_path", out->cpu_path, sizeof out->cpu_path, err, errlen) ||
                   jr_int(obj, "sessions", &out->sessions, err, errlen) ||
                   jr_int(obj, "active", &out->active, err, errlen) ||
                   jr_int(obj, "queued", &out->queued, err, errlen) ||
                   jr_num(obj, "busy", &out->busy, err, errlen) ||
                   jr_num(obj, "uptime_s", &out->uptime_s, err, errlen) ||
                   jr_int(obj, "stage", &out->stage, err, errlen) ||
                   jr_int(obj, "n_stages", &out->n_stages, err, errlen)
               ? -1
               : 0;
}
