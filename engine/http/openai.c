/* openai.c: the OpenAI-compatible API's JSON (see openai.h). */
#include "openai.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/jsonr.h"
#include "engine/proto/jsonw.h"
#include "engine/proto/opt.h"

/* ---- errors ------------------------------------------------------------- */

int oai_fail(oai_error *e, int status, const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *error_type(int status)
{
    if (status == 401)
        return "authentication_error";
    if (status == 429)
        return "rate_limit_error";
    return status >= 500 ? "server_error" : "invalid_request_error";
}

void oai_from_node(const char *code, const char *message, oai_error *e)
{
    static const struct {
        const char *code;
        int status;
    } map[] = {
        /* kv_oom: a lack of capacity a request ending frees, so 503 (which
         * SDKs retry), not 400 */
        {"too_large", 413}, {"kv_oom", 503},    {"ctx_limit", 400},     {"bad_token", 400},
        {"bad_value", 400}, {"busy", 429},      {"stage_timeout", 503}, {"model_mismatch", 503},
        {"shutdown", 503},  {"cancelled", 503}, {"ring_down", 503},     {"stalled", 503},
    };
    int status = 500;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(code, map[i].code) == 0)
            status = map[i].status;
    oai_fail(e, status, code, NULL, "%s", message);
}

static json_t *str_or_null(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

char *oai_error_json(const oai_error *e)
{
    json_t *o = json_pack("{s:{s:o,s:s,s:o,s:o}}", "error", "message", jw_string(e->message),
                          "type", error_type(e->status), "param", str_or_null(e->param), "code",
                          str_or_null(e->code));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* ---- requests ----------------------------------------------------------- */

/* What a request's fields add up to while they are read. */
typedef struct parsing {
    oai_kind kind;
    const oai_model *model;
    oai_req *out;
    int has_model, has_max, has_max_completion, has_stream_options;
    int chat_logprobs, top_logprobs; /* a chat's logprobs and top_logprobs; -1: absent */
    const json_t *prompt, *messages;
    opt_id row;      /* the field's row, when it has one ... */
    opt_value value; /* ... and its value, checked by it */
} parsing;

/* Reads one field; v is never JSON null (null means absent). */
typedef int (*take_fn)(parsing *p, const char *key, const json_t *v, oai_error *e);

/* Sets a field of the generate request (steals v). */
static int set(parsing *p, const char *key, json_t *v, oai_error *e)
{
    if (json_object_set_new(p->out->generate, key, v))
        return oai_fail(e, 500, "internal", key, "out of memory");
    return 0;
}

static size_t json_len(const json_t *v)
{
    return json_is_array(v) ? json_array_size(v) : json_is_object(v) ? json_object_size(v) : 0;
}

static int bad_type(oai_error *e, const char *key, const char *expected, const json_t *v)
{
    return oai_fail(e, 400, "bad_type", key, "'%s' must be %s, got %s", key, expected, jr_type(v));
}

static int take_model(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    if (!json_is_string(v))
        return bad_type(e, key, "a string", v);
    for (int i = 0; i < p->model->n_names; i++) {
        if (strcmp(json_string_value(v), p->model->names[i]) == 0) {
            p->out->model = p->model->names[i];
            p->has_model = 1;
            return 0;
        }
    }
    return oai_fail(e, 404, "model_not_found", key,
                    "The model '%.128s' does not exist: this node serves '%s'",
                    json_string_value(v), p->model->names[0]);
}

static int take_prompt(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)key, (void)e;
    p->prompt = v;
    return 0;
}

static int take_messages(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    if (!json_is_array(v))
        return bad_type(e, key, "an array of messages", v);
    if (json_array_size(v) == 0)
        return oai_fail(e, 400, "bad_value", key, "'messages' must hold at least one message");
    p->messages = v;
    return 0;
}

static int take_stream(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)key, (void)v, (void)e;
    p->out->stream = (int)p->value.i;
    return 0;
}

static int take_stream_options(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    const char *k;
    const json_t *x;
    if (!json_is_object(v))
        return bad_type(e, key, "an object", v);
    json_object_foreach((json_t *)v, k, x)
    {
        if (strcmp(k, "include_usage") != 0)
            return oai_fail(e, 400, "unknown_field", key,
                            "'stream_options' takes only include_usage, got '%.32s'", k);
        if (!json_is_boolean(x))
            return bad_type(e, "stream_options.include_usage", "a boolean", x);
        p->out->include_usage = json_is_true(x);
    }
    p->has_stream_options = 1;
    return 0;
}

static int take_max_tokens(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)v;
    if (strcmp(key, "max_tokens") == 0)
        p->has_max = 1;
    else
        p->has_max_completion = 1;
    if (p->has_max && p->has_max_completion)
        return oai_fail(e, 400, "conflict", key,
                        "give one of 'max_tokens' and 'max_completion_tokens'");
    p->out->max_tokens = (int)p->value.i;
    return 0;
}

/* A sampling parameter, passed on to the generate request as it is named
 * there. v is NULL for the row's default. */
static int take_sampling(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)v;
    return set(p, key,
               opt_defs[p->row].type == OPT_T_NUM ? json_real(p->value.d)
                                                  : json_integer((json_int_t)p->value.i),
               e);
}

/* OpenAI's {"TOKEN_ID": bias} (the ids as strings), checked as the node
 * checks it (the vocabulary's bound is the node's). */
static int take_bias(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    proto_bias b[PROTO_BIAS_MAX];
    int n;
    proto_error pe;
    if (proto_bias_read(v, b, &n, &pe) != 0)
        return oai_fail(e, 400, pe.code == PROTO_E_BAD_TYPE ? "bad_type" : "bad_value", key, "%s",
                        pe.message);
    json_t *o = proto_bias_json(b, n);
    return o ? set(p, key, o, e) : oai_fail(e, 500, "internal", key, "out of memory");
}

/* A completion's logprobs: N; a chat's logprobs (a switch) and
 * top_logprobs, which parse_fields adds up. */
static int take_logprobs(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)v, (void)e;
    int n = (int)p->value.i;
    if (p->kind == OAI_COMPLETION)
        p->out->logprobs = n;
    else if (strcmp(key, "logprobs") == 0)
        p->chat_logprobs = n;
    else
        p->top_logprobs = n;
    return 0;
}

/* The generate request's logprobs: a chat's top_logprobs needs logprobs
 * true, as OpenAI's API has it. */
static int logprobs_field(parsing *p, oai_error *e)
{
    if (p->kind == OAI_CHAT) {
        if (p->top_logprobs >= 0 && p->chat_logprobs != 1)
            return oai_fail(e, 400, "bad_value", "top_logprobs",
                            "'top_logprobs' needs 'logprobs' to be true");
        if (p->chat_logprobs == 1)
            p->out->logprobs = p->top_logprobs >= 0 ? p->top_logprobs : 0;
    }
    return p->out->logprobs < 0 ? 0 : set(p, "logprobs", json_integer(p->out->logprobs), e);
}

/* n choices run as n requests at once, which the node batches: at most
 * its --max-seqs, so that they all run together. */
static int take_n(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)v;
    if (p->value.i > (unsigned long long)p->model->max_seqs)
        return oai_fail(e, 400, "bad_value", key,
                        "'n' is %llu; this node runs at most %d requests at once (--max-seqs)",
                        p->value.i, p->model->max_seqs);
    p->out->n = (int)p->value.i;
    return 0;
}

static int add_stop(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    if (!json_is_string(v))
        return bad_type(e, key, "a string or an array of strings", v);
    if (json_string_length(v) == 0)
        return oai_fail(e, 400, "bad_value", key, "a stop sequence must not be empty");
    if (p->out->stop.n == STOPSEQ_MAX)
        return oai_fail(e, 400, "bad_value", key, "at most %d stop sequences", STOPSEQ_MAX);
    char *s = strdup(json_string_value(v));
    if (!s)
        return oai_fail(e, 500, "internal", key, "out of memory");
    p->out->stop.s[p->out->stop.n++] = s;
    return 0;
}

static int take_stop(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    if (!json_is_array(v))
        return add_stop(p, key, v, e);
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        if (add_stop(p, key, x, e))
            return -1;
    }
    return 0;
}

/* A feature this server does not have is accepted only at the value that
 * leaves it off, so that a client never silently gets less than it asked. */
static int unsupported(oai_error *e, const char *key)
{
    return oai_fail(e, 400, "unsupported", key,
                    "'%s' is not supported by this server other than at its default", key);
}

static int take_off(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)p;
    int off = json_is_false(v) || (json_is_integer(v) && json_integer_value(v) == 0) ||
              (json_is_string(v) && json_string_length(v) == 0) ||
              ((json_is_array(v) || json_is_object(v)) && json_len(v) == 0) ||
              (json_is_string(v) && strcmp(json_string_value(v), "none") == 0);
    return off ? 0 : unsupported(e, key);
}

static int take_format(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)p;
    const json_t *type = json_object_get(v, "type");
    return json_is_object(v) && json_len(v) == 1 && json_is_string(type) &&
                   strcmp(json_string_value(type), "text") == 0
               ? 0
               : unsupported(e, key);
}

/* Fields with no effect here: a user id, metadata, storage, priority. */
static int take_ignored(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    (void)p, (void)key, (void)v, (void)e;
    return 0;
}

#define BOTH ((1u << OAI_COMPLETION) | (1u << OAI_CHAT))
#define COMPLETION (1u << OAI_COMPLETION)
#define CHAT (1u << OAI_CHAT)

/* A field with a row of the settings table (opt_table.c: OpenAI's ranges)
 * is checked by it before its take reads p->value. A row without a take
 * is a feature this server lacks, whose row allows only its default. */
#define NO_ROW OPT_COUNT

typedef struct field {
    const char *key;
    unsigned kinds;
    take_fn take;
    opt_id row;
} field;

static const field fields[] = {
    {"model", BOTH, take_model, NO_ROW},
    {"prompt", COMPLETION, take_prompt, NO_ROW},
    {"messages", CHAT, take_messages, NO_ROW},
    {"stream", BOTH, take_stream, OPT_OAI_STREAM},
    {"stream_options", BOTH, take_stream_options, NO_ROW},
    {"max_tokens", BOTH, take_max_tokens, OPT_OAI_MAX_TOKENS},
    {"max_completion_tokens", CHAT, take_max_tokens, OPT_OAI_MAX_TOKENS},
    {"temperature", BOTH, take_sampling, OPT_OAI_TEMPERATURE},
    {"top_p", BOTH, take_sampling, OPT_OAI_TOP_P},
    {"seed", BOTH, take_sampling, OPT_REQ_SEED},
    {"top_k", BOTH, take_sampling, OPT_REQ_TOP_K},
    {"min_p", BOTH, take_sampling, OPT_REQ_MIN_P},
    {"repeat_penalty", BOTH, take_sampling, OPT_REQ_REPEAT_PENALTY},
    {"frequency_penalty", BOTH, take_sampling, OPT_REQ_FREQUENCY_PENALTY},
    {"presence_penalty", BOTH, take_sampling, OPT_REQ_PRESENCE_PENALTY},
    {"logit_bias", BOTH, take_bias, NO_ROW},
    {"stop", BOTH, take_stop, NO_ROW},
    {"n", BOTH, take_n, OPT_OAI_N},
    {"best_of", COMPLETION, NULL, OPT_OAI_BEST_OF},
    {"echo", COMPLETION, take_off, NO_ROW},
    {"suffix", COMPLETION, take_off, NO_ROW},
    {"logprobs", COMPLETION, take_logprobs, OPT_OAI_LOGPROBS},
    {"logprobs", CHAT, take_logprobs, OPT_OAI_CHAT_LOGPROBS},
    {"top_logprobs", CHAT, take_logprobs, OPT_OAI_TOP_LOGPROBS},
    {"tools", CHAT, take_off, NO_ROW},
    {"tool_choice", CHAT, take_off, NO_ROW},
    {"functions", CHAT, take_off, NO_ROW},
    {"function_call", CHAT, take_off, NO_ROW},
    {"response_format", CHAT, take_format, NO_ROW},
    {"parallel_tool_calls", CHAT, take_ignored, NO_ROW},
    {"user", BOTH, take_ignored, NO_ROW},
    {"metadata", BOTH, take_ignored, NO_ROW},
    {"store", BOTH, take_ignored, NO_ROW},
    {"service_tier", BOTH, take_ignored, NO_ROW},
};

/* Checks v by f's row into p->value. */
static int check_row(parsing *p, const field *f, const json_t *v, oai_error *e)
{
    char why[PROTO_MESSAGE_MAX - 64];
    p->row = f->row;
    opt_json_rc rc = opt_read_json(f->row, v, &p->value, why, sizeof why);
    if (rc == OPT_JSON_OK)
        return 0;
    if (!f->take)
        return unsupported(e, f->key);
    return oai_fail(e, 400, rc == OPT_JSON_BAD_TYPE ? "bad_type" : "bad_value", f->key, "'%s': %s",
                    f->key, why);
}

static int take_field(parsing *p, const char *key, const json_t *v, oai_error *e)
{
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const field *f = &fields[i];
        if (strcmp(key, f->key) != 0 || !(f->kinds & (1u << p->kind)))
            continue;
        if (json_is_null(v))
            return 0;
        if (f->row != NO_ROW && check_row(p, f, v, e))
            return -1;
        return f->take && f->take(p, key, v, e) ? -1 : 0;
    }
    return oai_fail(e, 400, "unknown_field", "", "Unrecognized request argument supplied: %.64s",
                    key);
}

/* A completion's prompt: a string, or token ids; one prompt per request. */
static int completion_prompt(parsing *p, oai_error *e)
{
    const json_t *v = p->prompt;
    if (json_is_array(v) && json_array_size(v) == 1 && !json_is_integer(json_array_get(v, 0)))
        v = json_array_get(v, 0);
    if (json_is_string(v))
        return set(p, "prompt", json_copy((json_t *)v), e);
    if (!json_is_array(v))
        return bad_type(e, "prompt", "a string or an array of token ids", v);
    if (json_array_size(v) == 0)
        return oai_fail(e, 400, "bad_value", "prompt", "'prompt' must not be an empty array");
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
    {
        if (json_is_string(x) || json_is_array(x))
            return oai_fail(e, 400, "unsupported", "prompt",
                            "one prompt per request: 'prompt' holds %zu", json_array_size(v));
        if (!json_is_integer(x))
            return bad_type(e, "prompt", "an array of token ids", x);
        if (json_integer_value(x) < 0 || json_integer_value(x) > PROTO_TOKEN_ID_MAX)
            return oai_fail(e, 400, "bad_value", "prompt",
                            "'prompt': token id %lld is not in 0..%d",
                            (long long)json_integer_value(x), PROTO_TOKEN_ID_MAX);
    }
    return set(p, "tokens", json_deep_copy(v), e);
}

static int message_role(const json_t *m, size_t i, chat_role *out, oai_error *e)
{
    static const struct {
        const char *name;
        chat_role role;
    } roles[] = {{"system", CHAT_SYSTEM},
                 {"developer", CHAT_SYSTEM},
                 {"user", CHAT_USER},
                 {"assistant", CHAT_ASSISTANT}};
    const json_t *r = json_object_get(m, "role");
    if (!json_is_string(r))
        return oai_fail(e, 400, "bad_value", "messages",
                        "messages[%zu] needs a 'role' string (system, developer, user, assistant)",
                        i);
    for (size_t k = 0; k < sizeof roles / sizeof *roles; k++) {
        if (strcmp(json_string_value(r), roles[k].name) == 0) {
            *out = roles[k].role;
            return 0;
        }
    }
    return oai_fail(e, 400, "bad_value", "messages",
                    "messages[%zu]: role '%.32s' is not supported (system, developer, user, "
                    "assistant)",
                    i, json_string_value(r));
}

/* A message's content: a string, or text parts joined. */
static int message_content(const json_t *m, size_t i, sbuf *out, oai_error *e)
{
    const json_t *c = json_object_get(m, "content");
    if (json_is_string(c)) {
        sbuf_put(out, json_string_value(c), json_string_length(c));
        return 0;
    }
    if (!json_is_array(c))
        return oai_fail(e, 400, "bad_value", "messages",
                        "messages[%zu] needs a 'content' string or array of text parts", i);
    size_t k;
    const json_t *part;
    json_array_foreach(c, k, part)
    {
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0 ||
            !json_is_string(text))
            return oai_fail(e, 400, "unsupported", "messages",
                            "messages[%zu].content[%zu]: only {\"type\":\"text\",\"text\":...} "
                            "parts are supported",
                            i, k);
        sbuf_put(out, json_string_value(text), json_string_length(text));
    }
    return 0;
}

static int check_message_keys(const json_t *m, size_t i, oai_error *e)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        if (strcmp(k, "role") && strcmp(k, "content") && strcmp(k, "name"))
            return oai_fail(e, 400, "unsupported", "messages",
                            "messages[%zu]: field '%.32s' is not supported (role, content, name)",
                            i, k);
    }
    return 0;
}

/* The chat rendered with the model's format into the prompt. */
static int chat_prompt(parsing *p, oai_error *e)
{
    size_t n = json_array_size(p->messages);
    chat_msg *msgs = calloc(n, sizeof *msgs);
    sbuf *texts = calloc(n, sizeof *texts);
    int rc = -1;
    if (!msgs || !texts) {
        oai_fail(e, 500, "internal", "messages", "out of memory for %zu messages", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(p->messages, i);
        if (!json_is_object(m)) {
            oai_fail(e, 400, "bad_type", "messages", "messages[%zu] must be an object, got %s", i,
                     jr_type(m));
            goto out;
        }
        if (check_message_keys(m, i, e) || message_role(m, i, &msgs[i].role, e) ||
            message_content(m, i, &texts[i], e))
            goto out;
        sbuf_put(&texts[i], "", 0);
        msgs[i].content = texts[i].data ? texts[i].data : "";
    }
    size_t len = chat_render(p->model->chat, msgs, (int)n, NULL, 0);
    char *prompt = malloc(len + 1);
    if (!prompt) {
        oai_fail(e, 500, "internal", "messages", "out of memory for a %zu-byte prompt", len);
        goto out;
    }
    chat_render(p->model->chat, msgs, (int)n, prompt, len + 1);
    rc = set(p, "prompt", json_string(prompt), e);
    /* The format's markers (<|im_start|>, [INST], ...) are the model's
     * control tokens, not text; the plain format has none, so a user's
     * "<s>" stays text there. As in llama.cpp's server, markers a user
     * types inside a message of a marked format become tokens too. */
    if (!rc && p->model->chat != CHAT_PLAIN)
        rc = set(p, "special", json_true(), e);
    free(prompt);
out:
    for (size_t i = 0; texts && i < n; i++)
        sbuf_free(&texts[i]);
    free(texts);
    free(msgs);
    return rc;
}

/* OpenAI's defaults of the sampling parameters, which are not the node's:
 * their rows'. */
static int sampling_defaults(parsing *p, oai_error *e)
{
    char err[256];
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const char *def = fields[i].row == NO_ROW ? NULL : opt_defs[fields[i].row].def;
        if (fields[i].take != take_sampling || !def)
            continue;
        p->row = fields[i].row;
        if (opt_check_text(p->row, def, &p->value, err, sizeof err) != 0)
            return oai_fail(e, 500, "internal", fields[i].key, "default: %s", err);
        if (take_sampling(p, fields[i].key, NULL, e))
            return -1;
    }
    return 0;
}

static int parse_fields(parsing *p, const json_t *root, oai_error *e)
{
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)root, key, v)
    {
        if (take_field(p, key, v, e))
            return -1;
    }
    if (!p->has_model)
        return oai_fail(e, 400, "missing_field", "model",
                        "'model' is required (this node "
                        "serves '%s')",
                        p->model->names[0]);
    if (p->has_stream_options && !p->out->stream)
        return oai_fail(e, 400, "bad_value", "stream_options",
                        "'stream_options' is only allowed when 'stream' is true");
    if (logprobs_field(p, e))
        return -1;
    if (p->kind == OAI_CHAT)
        return p->messages
                   ? chat_prompt(p, e)
                   : oai_fail(e, 400, "missing_field", "messages", "'messages' is required");
    return p->prompt ? completion_prompt(p, e)
                     : oai_fail(e, 400, "missing_field", "prompt", "'prompt' is required");
}

int oai_parse(oai_kind kind, const char *body, size_t len, const oai_model *model, oai_req *out,
              oai_error *e)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    out->n = 1;
    out->logprobs = -1;
    out->max_tokens = kind == OAI_CHAT ? PROTO_DEFAULT_MAX_TOKENS : OAI_COMPLETION_MAX_TOKENS;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return oai_fail(e, 400, "bad_json", "", "the body is not valid JSON: %s (at byte %d)",
                        jerr.text, jerr.position);
    out->generate = json_pack("{s:s}", "source", "http");
    parsing p = {.kind = kind, .model = model, .out = out, .chat_logprobs = -1, .top_logprobs = -1};
    int rc = out->generate ? 0 : oai_fail(e, 500, "internal", "", "out of memory");
    if (!rc)
        rc = sampling_defaults(&p, e);
    if (!rc && !json_is_object(root))
        rc = oai_fail(e, 400, "not_object", "", "the body must be a JSON object, got %s",
                      jr_type(root));
    if (!rc)
        rc = parse_fields(&p, root, e);
    if (!rc)
        rc = set(&p, "max_tokens", json_integer(out->max_tokens), e);
    json_decref(root);
    if (rc)
        oai_req_free(out);
    return rc;
}

void oai_req_free(oai_req *r)
{
    for (int i = 0; i < r->stop.n; i++)
        free((char *)r->stop.s[i]);
    json_decref(r->generate);
    memset(r, 0, sizeof *r);
}

/* ---- responses and chunks ----------------------------------------------- */

static const char *object_name(oai_kind kind, int chunk)
{
    if (kind == OAI_CHAT)
        return chunk ? "chat.completion.chunk" : "chat.completion";
    return "text_completion";
}

/* {"id":..,"object":..,"created":..,"model":..,"choices":[ */
static void put_head(sbuf *b, const oai_reply *r, int chunk)
{
    sbuf_puts(b, "{\"id\":");
    sbuf_json_str(b, r->id, strlen(r->id));
    sbuf_printf(b, ",\"object\":\"%s\",\"created\":%lld,\"model\":", object_name(r->kind, chunk),
                r->created);
    sbuf_json_str(b, r->model, strlen(r->model));
    sbuf_puts(b, ",\"choices\":[");
}

static void put_finish(sbuf *b, const char *logprobs, const char *finish)
{
    sbuf_puts(b, ",\"logprobs\":");
    sbuf_puts(b, logprobs ? logprobs : "null");
    sbuf_puts(b, ",\"finish_reason\":");
    if (finish)
        sbuf_printf(b, "\"%s\"}", finish);
    else
        sbuf_puts(b, "null}");
}

static void put_usage(sbuf *b, int prompt_tokens, int completion_tokens)
{
    sbuf_printf(b, "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}",
                prompt_tokens, completion_tokens, prompt_tokens + completion_tokens);
}

char *oai_response(const oai_reply *r, const oai_choice *c, int n, int prompt_tokens,
                   int completion_tokens)
{
    sbuf b = {0};
    put_head(&b, r, 0);
    for (int i = 0; i < n; i++) {
        sbuf_printf(&b, "%s{\"index\":%d,", i ? "," : "", i);
        if (r->kind == OAI_CHAT) {
            sbuf_puts(&b, "\"message\":{\"role\":\"assistant\",\"content\":");
            sbuf_json_str(&b, c[i].text, c[i].len);
            sbuf_puts(&b, "}");
        } else {
            sbuf_puts(&b, "\"text\":");
            sbuf_json_str(&b, c[i].text, c[i].len);
        }
        put_finish(&b, c[i].logprobs, c[i].finish);
    }
    sbuf_puts(&b, "],");
    put_usage(&b, prompt_tokens, completion_tokens);
    sbuf_puts(&b, "}");
    return sbuf_take(&b, NULL);
}

void oai_chunk(sbuf *out, const oai_reply *r, int index, const char *text, size_t len,
               const char *logprobs, const char *finish)
{
    sbuf_puts(out, "data: ");
    put_head(out, r, 1);
    if (r->kind == OAI_CHAT) {
        sbuf_printf(out, "{\"index\":%d,\"delta\":{", index);
        if (text) {
            sbuf_puts(out, "\"content\":");
            sbuf_json_str(out, text, len);
        }
        sbuf_puts(out, "}");
    } else {
        sbuf_printf(out, "{\"index\":%d,\"text\":", index);
        sbuf_json_str(out, text ? text : "", text ? len : 0);
    }
    put_finish(out, logprobs, finish);
    sbuf_puts(out, "]}\n\n");
}

void oai_chunk_role(sbuf *out, const oai_reply *r, int index)
{
    sbuf_puts(out, "data: ");
    put_head(out, r, 1);
    sbuf_printf(out, "{\"index\":%d,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}", index);
    put_finish(out, NULL, NULL);
    sbuf_puts(out, "]}\n\n");
}

void oai_chunk_usage(sbuf *out, const oai_reply *r, int prompt_tokens, int completion_tokens)
{
    sbuf_puts(out, "data: ");
    put_head(out, r, 1);
    sbuf_puts(out, "],");
    put_usage(out, prompt_tokens, completion_tokens);
    sbuf_puts(out, "}\n\n");
}

void oai_chunk_error(sbuf *out, const oai_error *e)
{
    char *text = oai_error_json(e);
    if (!text) {
        out->failed = 1;
        return;
    }
    sbuf_printf(out, "data: %s\n\n", text);
    free(text);
}

void oai_chunk_done(sbuf *out)
{
    sbuf_puts(out, "data: [DONE]\n\n");
}

/* One model entry: OpenAI's fields, and the context as vLLM gives it. */
static json_t *model_entry(const char *name, long long created, int ctx)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:i}", "id", name, "object", "model", "created",
                     (json_int_t)created, "owned_by", "inferd", "max_model_len", ctx);
}

static char *dump(json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

char *oai_models(const oai_model *m, long long created, int ctx)
{
    json_t *data = json_array();
    for (int i = 0; data && i < m->n_names; i++)
        json_array_append_new(data, model_entry(m->names[i], created, ctx));
    return dump(data ? json_pack("{s:s,s:o}", "object", "list", "data", data) : NULL);
}

char *oai_model_info(const char *name, long long created, int ctx)
{
    return dump(model_entry(name, created, ctx));
}

char *oai_props(const oai_model *m, const proto_status *st, int ctx)
{
    json_t *names = json_array();
    for (int i = 0; names && i < m->n_names; i++)
        json_array_append_new(names, json_string(m->names[i]));
    /* The defaults a request gets: OpenAI's where they differ from the
     * node's, each its row's (openai.c's fields). */
    json_t *defaults = json_object();
    for (size_t i = 0; defaults && i < sizeof fields / sizeof *fields; i++) {
        const opt_def *d = fields[i].row == NO_ROW ? NULL : &opt_defs[fields[i].row];
        opt_value v;
        char err[128];
        if (d && d->def && fields[i].take == take_sampling &&
            opt_check_text(fields[i].row, d->def, &v, err, sizeof err) == 0)
            json_object_set_new(defaults, fields[i].key,
                                d->type == OPT_T_NUM ? json_real(v.d)
                                                     : json_integer((json_int_t)v.i));
    }
    if (defaults)
        json_object_set_new(defaults, "n_ctx", json_integer(ctx));
    return dump(names && defaults
                    ? json_pack("{s:s,s:o,s:i,s:i,s:s,s:s,s:o,s:{s:i,s:i,s:i,s:s}}", "model",
                                st->model.name, "model_alias", names, "n_ctx", ctx, "total_slots",
                                st->config.max_seqs, "chat_template", st->model.chat_template,
                                "build_info", st->version, "default_generation_settings", defaults,
                                "meta", "n_ctx_train", st->model.seq_len, "n_vocab",
                                st->model.vocab_size, "n_layers", st->model.n_layers, "format",
                                st->model.format)
                    : NULL);
}
