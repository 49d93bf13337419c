/* protocol.c: error codes, ops, the request decoder and endpoint checks.
 *
 * The request decoder is the node's only door for untrusted bytes, so it
 * checks everything a handler would otherwise have to: the frame size, the
 * JSON, the envelope (v, id, op), that every field is one the op takes,
 * and each field's type and range. A handler that gets a proto_request can
 * use it without further checks (the vocabulary bound aside).
 */
#include "protocol.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/utf8.h"
#include "jsonr.h"

static const char *const code_names[PROTO_CODE_COUNT] = {
    [PROTO_OK] = "ok",
    [PROTO_E_TOO_LARGE] = "too_large",
    [PROTO_E_BAD_JSON] = "bad_json",
    [PROTO_E_NOT_OBJECT] = "not_object",
    [PROTO_E_BAD_VERSION] = "bad_version",
    [PROTO_E_BAD_ID] = "bad_id",
    [PROTO_E_UNKNOWN_OP] = "unknown_op",
    [PROTO_E_UNKNOWN_FIELD] = "unknown_field",
    [PROTO_E_MISSING_FIELD] = "missing_field",
    [PROTO_E_BAD_TYPE] = "bad_type",
    [PROTO_E_BAD_VALUE] = "bad_value",
    [PROTO_E_CONFLICT] = "conflict",
    [PROTO_E_BAD_TOKEN] = "bad_token",
    [PROTO_E_NOT_FOUND] = "not_found",
    [PROTO_E_KV_OOM] = "kv_oom",
    [PROTO_E_CTX_LIMIT] = "ctx_limit",
    [PROTO_E_STAGE_TIMEOUT] = "stage_timeout",
    [PROTO_E_MODEL_MISMATCH] = "model_mismatch",
    [PROTO_E_CANCELLED] = "cancelled",
    [PROTO_E_BUSY] = "busy",
    [PROTO_E_SHUTDOWN] = "shutdown",
    [PROTO_E_INTERNAL] = "internal",
};

const char *proto_code_name(proto_code code)
{
    return (unsigned)code < PROTO_CODE_COUNT ? code_names[code] : "internal";
}

proto_code proto_code_parse(const char *name)
{
    for (int i = 0; i < PROTO_CODE_COUNT; i++)
        if (strcmp(name, code_names[i]) == 0)
            return (proto_code)i;
    return PROTO_CODE_COUNT;
}

int proto_fail(proto_error *err, proto_code code, const char *field, const char *fmt, ...)
{
    va_list ap;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *const op_names[PROTO_OP_COUNT] = {
    [PROTO_OP_STATUS] = "status",
    [PROTO_OP_SET] = "set",
    [PROTO_OP_GENERATE] = "generate",
    [PROTO_OP_CANCEL] = "cancel",
    [PROTO_OP_DROP_SESSION] = "drop_session",
    [PROTO_OP_EVAL] = "eval",
};

const char *proto_op_name(proto_op op)
{
    return (unsigned)op < PROTO_OP_COUNT ? op_names[op] : "unknown";
}

/* The fields each op takes besides v, id and op; the error message for an
 * unknown field lists them. */
static const char *const op_fields[PROTO_OP_COUNT][11] = {
    [PROTO_OP_STATUS] = {NULL},
    [PROTO_OP_SET] = {"prefill_step", "kv_bits", NULL},
    [PROTO_OP_GENERATE] = {"prompt", "tokens", "synthetic_tokens", "max_tokens", "temperature",
                           "top_p", "seed", "session", "source", "special", NULL},
    [PROTO_OP_CANCEL] = {"target", NULL},
    [PROTO_OP_DROP_SESSION] = {"session", NULL},
    [PROTO_OP_EVAL] = {"prompt", "tokens", "logits", NULL},
};

/* A received string shortened for a message, cut at a character boundary
 * (jansson has checked it is UTF-8). */
static const char *clip(const char *s, char *buf, size_t cap)
{
    size_t n = strlen(s);
    if (n < cap) {
        memcpy(buf, s, n + 1);
        return buf;
    }
    n = utf8_cut(s, cap - 4);
    memcpy(buf, s, n);
    memcpy(buf + n, "...", 4);
    return buf;
}

/* NULL if s is a valid id, session or target name, else what is wrong. */
static const char *name_problem(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > PROTO_ID_MAX)
        return "is longer than 64 bytes";
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return "contains a control character";
    return NULL;
}

/* Reads a name field into out (PROTO_ID_MAX + 1 bytes). */
static int get_name(const json_t *v, const char *field, char *out, proto_error *err)
{
    if (!json_is_string(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, field, "field '%s': expected a string, got %s",
                          field, jr_type(v));
    const char *problem = name_problem(json_string_value(v), json_string_length(v));
    if (problem)
        return proto_fail(err, PROTO_E_BAD_VALUE, field,
                          "field '%s' %s (expected 1..%d bytes, no control characters)", field,
                          problem, PROTO_ID_MAX);
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

static int get_int(const json_t *v, const char *field, long long lo, long long hi, long long *out,
                   proto_error *err)
{
    if (!json_is_integer(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, field, "field '%s': expected an integer, got %s",
                          field, jr_type(v));
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return proto_fail(err, PROTO_E_BAD_VALUE, field,
                          "field '%s': expected %lld..%lld, got %lld", field, lo, hi, x);
    *out = x;
    return 0;
}

/* A number (integer or real). lo_open: the lower bound itself is excluded. */
static int get_number(const json_t *v, const char *field, double lo, int lo_open, double hi,
                      double *out, proto_error *err)
{
    if (!json_is_number(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, field, "field '%s': expected a number, got %s",
                          field, jr_type(v));
    double x = json_number_value(v);
    if (x < lo || (lo_open && x == lo) || x > hi)
        return proto_fail(err, PROTO_E_BAD_VALUE, field, "field '%s': expected %s%g, %g], got %g",
                          field, lo_open ? "(" : "[", lo, hi, x);
    *out = x;
    return 0;
}

static int decode_set(const json_t *root, proto_set_args *a, proto_error *err)
{
    const json_t *ps = json_object_get(root, "prefill_step");
    const json_t *kb = json_object_get(root, "kv_bits");
    long long x;

    if (!ps && !kb)
        return proto_fail(err, PROTO_E_MISSING_FIELD, "prefill_step",
                          "op 'set' needs prefill_step, kv_bits or both");
    if (json_is_string(ps)) {
        char buf[40];
        if (strcmp(json_string_value(ps), "auto") != 0)
            return proto_fail(err, PROTO_E_BAD_VALUE, "prefill_step",
                              "field 'prefill_step': expected 1..%d or \"auto\", got \"%s\"",
                              PROTO_PREFILL_STEP_MAX, clip(json_string_value(ps), buf, sizeof buf));
        a->has_prefill_step = 1;
        a->prefill_step = PROTO_PREFILL_AUTO;
    } else if (ps) {
        if (!json_is_integer(ps))
            return proto_fail(err, PROTO_E_BAD_TYPE, "prefill_step",
                              "field 'prefill_step': expected an integer or \"auto\", got %s",
                              jr_type(ps));
        if (get_int(ps, "prefill_step", 1, PROTO_PREFILL_STEP_MAX, &x, err))
            return -1;
        a->has_prefill_step = 1;
        a->prefill_step = (int)x;
    }
    if (kb) {
        if (!json_is_integer(kb))
            return proto_fail(err, PROTO_E_BAD_TYPE, "kv_bits",
                              "field 'kv_bits': expected one of 32, 16, 8, 4, got %s", jr_type(kb));
        x = json_integer_value(kb);
        if (x != 32 && x != 16 && x != 8 && x != 4)
            return proto_fail(err, PROTO_E_BAD_VALUE, "kv_bits",
                              "field 'kv_bits': expected one of 32, 16, 8, 4, got %lld", x);
        a->has_kv_bits = 1;
        a->kv_bits = (int)x;
    }
    return 0;
}

static int decode_tokens(const json_t *v, proto_generate_args *a, proto_error *err)
{
    if (!json_is_array(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, "tokens",
                          "field 'tokens': expected an array of token ids, got %s", jr_type(v));
    size_t n = json_array_size(v);
    if (n == 0)
        return proto_fail(err, PROTO_E_BAD_VALUE, "tokens",
                          "field 'tokens': expected at least one token id, got []");
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(v, i);
        if (!json_is_integer(t))
            return proto_fail(err, PROTO_E_BAD_TYPE, "tokens",
                              "field 'tokens': element %zu is %s, expected an integer", i,
                              jr_type(t));
        long long id = json_integer_value(t);
        if (id < 0 || id > PROTO_TOKEN_ID_MAX)
            return proto_fail(err, PROTO_E_BAD_VALUE, "tokens",
                              "field 'tokens': element %zu is %lld, expected 0..%d", i, id,
                              PROTO_TOKEN_ID_MAX);
    }
    a->tokens = malloc(n * sizeof *a->tokens);
    if (!a->tokens)
        return proto_fail(err, PROTO_E_INTERNAL, "tokens", "out of memory for %zu tokens", n);
    for (size_t i = 0; i < n; i++)
        a->tokens[i] = (int)json_integer_value(json_array_get(v, i));
    a->n_tokens = (int)n;
    return 0;
}

/* op: whose input it is, for the message when none is given (eval takes
 * no synthetic_tokens: check_fields has refused it already). */
static int decode_input(const json_t *root, proto_op op, proto_generate_args *a, proto_error *err)
{
    static const char *const names[] = {"prompt", "tokens", "synthetic_tokens"};
    const json_t *src[3];
    int n = 0, which = 0;

    for (int i = 0; i < 3; i++) {
        src[i] = json_object_get(root, names[i]);
        if (!src[i])
            continue;
        if (n++)
            return proto_fail(err, PROTO_E_CONFLICT, names[i],
                              "fields '%s' and '%s' exclude each other: give exactly one "
                              "prompt input",
                              names[which], names[i]);
        which = i;
    }
    if (n == 0)
        return proto_fail(
            err, PROTO_E_MISSING_FIELD, "prompt", "op '%s' needs one of %s", op_names[op],
            op == PROTO_OP_EVAL ? "prompt, tokens" : "prompt, tokens, synthetic_tokens");

    a->input = (proto_input)which;
    if (which == PROTO_INPUT_TOKENS)
        return decode_tokens(src[which], a, err);
    if (which == PROTO_INPUT_SYNTHETIC) {
        long long x;
        if (get_int(src[which], "synthetic_tokens", 1, PROTO_SYNTHETIC_MAX, &x, err))
            return -1;
        a->synthetic_tokens = (int)x;
        return 0;
    }
    if (!json_is_string(src[which]))
        return proto_fail(err, PROTO_E_BAD_TYPE, "prompt",
                          "field 'prompt': expected a string, got %s", jr_type(src[which]));
    size_t len = json_string_length(src[which]);
    a->prompt = malloc(len + 1);
    if (!a->prompt)
        return proto_fail(err, PROTO_E_INTERNAL, "prompt", "out of memory for a %zu-byte prompt",
                          len);
    memcpy(a->prompt, json_string_value(src[which]), len + 1);
    a->prompt_len = len;
    return 0;
}

static int decode_generate(const json_t *root, proto_generate_args *a, proto_error *err)
{
    const json_t *v;
    long long x;
    double d;

    a->max_tokens = PROTO_DEFAULT_MAX_TOKENS;
    a->temperature = PROTO_DEFAULT_TEMPERATURE;
    a->top_p = PROTO_DEFAULT_TOP_P;
    if ((v = json_object_get(root, "max_tokens"))) {
        if (get_int(v, "max_tokens", 0, PROTO_MAX_TOKENS_MAX, &x, err))
            return -1;
        a->max_tokens = (int)x;
    }
    if ((v = json_object_get(root, "temperature"))) {
        if (get_number(v, "temperature", 0, 0, PROTO_TEMPERATURE_MAX, &d, err))
            return -1;
        a->temperature = (float)d;
    }
    if ((v = json_object_get(root, "top_p"))) {
        if (get_number(v, "top_p", 0, 1, 1, &d, err))
            return -1;
        a->top_p = (float)d;
    }
    if ((v = json_object_get(root, "seed"))) {
        if (get_int(v, "seed", 0, INT64_MAX, &x, err))
            return -1;
        a->has_seed = 1;
        a->seed = (uint64_t)x;
    }
    if ((v = json_object_get(root, "session")) && get_name(v, "session", a->session, err))
        return -1;
    if ((v = json_object_get(root, "source")) && get_name(v, "source", a->source, err))
        return -1;
    if ((v = json_object_get(root, "special"))) {
        if (!json_is_boolean(v))
            return proto_fail(err, PROTO_E_BAD_TYPE, "special",
                              "field 'special': expected true or false, got %s", jr_type(v));
        a->special = json_is_true(v);
    }
    /* Last: the prompt input is the only part that allocates. */
    return decode_input(root, PROTO_OP_GENERATE, a, err);
}

/* An eval is a prefill that reports every position: generate's prompt
 * input, nothing to generate, no session. */
static int decode_eval(const json_t *root, proto_request *out, proto_error *err)
{
    const json_t *v = json_object_get(root, "logits");
    if (v && !json_is_boolean(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, "logits",
                          "field 'logits': expected true or false, got %s", jr_type(v));
    out->eval_logits = json_is_true(v);
    out->generate.max_tokens = 0;
    out->generate.temperature = PROTO_DEFAULT_TEMPERATURE;
    out->generate.top_p = PROTO_DEFAULT_TOP_P;
    return decode_input(root, PROTO_OP_EVAL, &out->generate, err);
}

static int op_takes(proto_op op, const char *key)
{
    if (!strcmp(key, "v") || !strcmp(key, "id") || !strcmp(key, "op"))
        return 1;
    for (int i = 0; op_fields[op][i]; i++)
        if (!strcmp(key, op_fields[op][i]))
            return 1;
    return 0;
}

static int check_fields(json_t *root, proto_op op, proto_error *err)
{
    const char *key;
    json_t *v;

    json_object_foreach(root, key, v)
    {
        if (op_takes(op, key))
            continue;
        char list[160] = "", buf[PROTO_FIELD_MAX];
        size_t len = 0;
        for (int i = 0; op_fields[op][i]; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    op_fields[op][i]);
        clip(key, buf, sizeof buf);
        return proto_fail(err, PROTO_E_UNKNOWN_FIELD, buf,
                          "field '%s' is not taken by op '%s' (it takes %s)", buf, op_names[op],
                          len ? list : "no fields");
    }
    return 0;
}

static int decode_op(const json_t *root, proto_op *op, proto_error *err)
{
    const json_t *v = json_object_get(root, "op");
    char buf[40];

    if (!v)
        return proto_fail(err, PROTO_E_UNKNOWN_OP, "op", "field 'op' is missing");
    if (!json_is_string(v))
        return proto_fail(err, PROTO_E_UNKNOWN_OP, "op", "field 'op': expected a string, got %s",
                          jr_type(v));
    for (int i = 0; i < PROTO_OP_COUNT; i++) {
        if (!strcmp(json_string_value(v), op_names[i])) {
            *op = (proto_op)i;
            return 0;
        }
    }
    return proto_fail(
        err, PROTO_E_UNKNOWN_OP, "op",
        "unknown op '%s' (expected status, set, generate, cancel, drop_session, eval)",
        clip(json_string_value(v), buf, sizeof buf));
}

static int decode_envelope(const json_t *root, proto_request *out, proto_error *err)
{
    const json_t *v = json_object_get(root, "v");
    const json_t *id = json_object_get(root, "id");

    /* The id first, silently: even a request that fails further down gets
     * its error reply under its own id. */
    if (json_is_string(id) && !name_problem(json_string_value(id), json_string_length(id)))
        memcpy(out->id, json_string_value(id), json_string_length(id) + 1);

    if (!v)
        return proto_fail(err, PROTO_E_BAD_VERSION, "v", "field 'v' is missing (expected %d)",
                          PROTO_VERSION);
    if (!json_is_integer(v))
        return proto_fail(err, PROTO_E_BAD_VERSION, "v",
                          "field 'v': expected the integer %d, got %s", PROTO_VERSION, jr_type(v));
    if (json_integer_value(v) != PROTO_VERSION)
        return proto_fail(err, PROTO_E_BAD_VERSION, "v",
                          "field 'v': version %lld is not supported (this node speaks %d)",
                          (long long)json_integer_value(v), PROTO_VERSION);
    if (!id)
        return proto_fail(err, PROTO_E_BAD_ID, "id", "field 'id' is missing");
    if (!json_is_string(id))
        return proto_fail(err, PROTO_E_BAD_ID, "id", "field 'id': expected a string, got %s",
                          jr_type(id));
    const char *problem = name_problem(json_string_value(id), json_string_length(id));
    if (problem)
        return proto_fail(err, PROTO_E_BAD_ID, "id",
                          "field 'id' %s (expected 1..%d bytes, no control characters)", problem,
                          PROTO_ID_MAX);
    return decode_op(root, &out->op, err);
}

static int decode_root(json_t *root, proto_request *out, proto_error *err)
{
    const json_t *v;

    if (!json_is_object(root))
        return proto_fail(err, PROTO_E_NOT_OBJECT, "", "expected a JSON object, got %s",
                          jr_type(root));
    if (decode_envelope(root, out, err) || check_fields(root, out->op, err))
        return -1;
    switch (out->op) {
    case PROTO_OP_STATUS:
        return 0;
    case PROTO_OP_SET:
        return decode_set(root, &out->set, err);
    case PROTO_OP_GENERATE:
        return decode_generate(root, &out->generate, err);
    case PROTO_OP_CANCEL:
        if (!(v = json_object_get(root, "target")))
            return proto_fail(err, PROTO_E_MISSING_FIELD, "target",
                              "op 'cancel' needs field 'target' (the request id to cancel)");
        return get_name(v, "target", out->target, err);
    case PROTO_OP_DROP_SESSION:
        if (!(v = json_object_get(root, "session")))
            return proto_fail(err, PROTO_E_MISSING_FIELD, "session",
                              "op 'drop_session' needs field 'session'");
        return get_name(v, "session", out->session, err);
    case PROTO_OP_EVAL:
        return decode_eval(root, out, err);
    case PROTO_OP_COUNT:
        break;
    }
    return proto_fail(err, PROTO_E_INTERNAL, "op", "op %d has no decoder", (int)out->op);
}

int proto_request_decode(const void *buf, size_t len, proto_request *out, proto_error *err)
{
    json_error_t jerr;

    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    if (len > PROTO_MAX_FRAME)
        return proto_fail(err, PROTO_E_TOO_LARGE, "", "frame is %zu bytes, the limit is %d", len,
                          PROTO_MAX_FRAME);
    if (!buf)
        return proto_fail(err, PROTO_E_BAD_JSON, "", "empty frame");
    /* Duplicate keys are refused: which of two "kv_bits" a node applied
     * would otherwise depend on the parser. */
    json_t *root = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return proto_fail(err, PROTO_E_BAD_JSON, "", "not valid JSON at byte %d: %s", jerr.position,
                          jerr.text);
    int rc = decode_root(root, out, err);
    json_decref(root);
    if (rc)
        proto_request_free(out);
    return rc;
}

void proto_request_free(proto_request *req)
{
    free(req->generate.prompt);
    free(req->generate.tokens);
    req->generate.prompt = NULL;
    req->generate.tokens = NULL;
    req->generate.prompt_len = 0;
    req->generate.n_tokens = 0;
}

/* The host part of a tcp bind endpoint "tcp://HOST:PORT" or
 * "tcp://[V6]:PORT", into host. */
static int tcp_host(const char *ep, char *host, size_t cap)
{
    const char *h = ep + strlen("tcp://"), *end;
    if (*h == '[') {
        h++;
        end = strchr(h, ']');
    } else {
        end = strrchr(h, ':');
    }
    if (!end || (size_t)(end - h) >= cap)
        return -1;
    memcpy(host, h, (size_t)(end - h));
    host[end - h] = '\0';
    return 0;
}

int proto_endpoint_is_loopback(const char *endpoint)
{
    char host[128];
    unsigned char addr[16];

    if (!strncmp(endpoint, "ipc://", 6) || !strncmp(endpoint, "inproc://", 9))
        return 1;
    if (strncmp(endpoint, "tcp://", 6) || tcp_host(endpoint, host, sizeof host))
        return 0;
    if (!strcmp(host, "localhost") || !strcmp(host, "lo"))
        return 1;
    if (inet_pton(AF_INET, host, addr) == 1)
        return addr[0] == 127;
    if (inet_pton(AF_INET6, host, addr) == 1)
        return memcmp(addr, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0;
    return 0;
}
