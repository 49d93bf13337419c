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
#include "opt.h"

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
    [PROTO_E_RING_DOWN] = "ring_down",
    [PROTO_E_STALLED] = "stalled",
};

static const char *const ring_state_names[] = {
    [PROTO_RING_LOADING] = "loading", [PROTO_RING_UP] = "up", [PROTO_RING_DOWN] = "down"};

const char *proto_ring_state_name(int state)
{
    return (unsigned)state <= PROTO_RING_DOWN ? ring_state_names[state] : "loading";
}

/* The state of a name; an unknown one (a newer node's) reads as loading:
 * not known to be up. */
int proto_ring_state_parse(const char *name)
{
    for (int i = PROTO_RING_LOADING; i <= PROTO_RING_DOWN; i++)
        if (strcmp(name, ring_state_names[i]) == 0)
            return i;
    return PROTO_RING_LOADING;
}

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
    [PROTO_OP_QUALITY] = "quality",
    [PROTO_OP_EMBED] = "embed",
};

const char *proto_op_name(proto_op op)
{
    return (unsigned)op < PROTO_OP_COUNT ? op_names[op] : "unknown";
}

/* The fields each op takes besides v, id, op and its prompt input, each
 * checked by its row of the settings table (opt_table.c: its wire name,
 * type and range) and stored into the request. */
#define FIELD(id, store, member) OPT_FIELD(id, store, proto_request, member)
#define FIELD_GIVEN(id, store, member, given)                                                      \
    OPT_FIELD_GIVEN(id, store, proto_request, member, given)

static const opt_field set_fields[] = {
    FIELD_GIVEN(OPT_PREFILL_STEP, OPT_ST_INT, set.prefill_step, set.has_prefill_step),
    FIELD_GIVEN(OPT_KV_BITS, OPT_ST_INT, set.kv_bits, set.has_kv_bits),
};
static const opt_field generate_fields[] = {
    FIELD(OPT_REQ_MAX_TOKENS, OPT_ST_INT, generate.max_tokens),
    FIELD(OPT_REQ_TEMPERATURE, OPT_ST_FLOAT, generate.temperature),
    FIELD(OPT_REQ_TOP_P, OPT_ST_FLOAT, generate.top_p),
    FIELD_GIVEN(OPT_REQ_SEED, OPT_ST_U64, generate.seed, generate.has_seed),
    FIELD(OPT_REQ_TOP_K, OPT_ST_INT, generate.top_k),
    FIELD(OPT_REQ_MIN_P, OPT_ST_FLOAT, generate.min_p),
    FIELD(OPT_REQ_REPEAT_PENALTY, OPT_ST_FLOAT, generate.repeat_penalty),
    FIELD(OPT_REQ_PRESENCE_PENALTY, OPT_ST_FLOAT, generate.presence_penalty),
    FIELD(OPT_REQ_FREQUENCY_PENALTY, OPT_ST_FLOAT, generate.frequency_penalty),
    FIELD_GIVEN(OPT_REQ_LOGPROBS, OPT_ST_INT, generate.logprobs, generate.has_logprobs),
    FIELD(OPT_REQ_SESSION, OPT_ST_TEXT, generate.session),
    FIELD(OPT_REQ_SOURCE, OPT_ST_TEXT, generate.source),
    FIELD(OPT_REQ_SPECIAL, OPT_ST_INT, generate.special),
};
static const opt_field cancel_fields[] = {FIELD(OPT_REQ_TARGET, OPT_ST_TEXT, target),
                                          FIELD(OPT_REQ_CANCEL_STALLED, OPT_ST_INT, stalled)};
static const opt_field drop_fields[] = {FIELD(OPT_REQ_SESSION, OPT_ST_TEXT, session)};
static const opt_field eval_fields[] = {FIELD(OPT_REQ_LOGITS, OPT_ST_INT, eval_logits)};
static const opt_field quality_fields[] = {
    FIELD_GIVEN(OPT_KV_BITS, OPT_ST_INT, quality.kv_bits, quality.has_kv_bits),
    FIELD(OPT_QUALITY_CTX, OPT_ST_INT, quality.ctx),
    FIELD_GIVEN(OPT_QUALITY_SCORE_FROM, OPT_ST_INT, quality.score_from, quality.has_score_from),
    FIELD_GIVEN(OPT_PREFILL_STEP, OPT_ST_INT, quality.prefill_step, quality.has_prefill_step),
    FIELD(OPT_QUALITY_BUCKET, OPT_ST_INT, quality.bucket),
};
/* A prompt input, read once the frame is known to hold only one. */
static const opt_field synthetic_field =
    FIELD(OPT_REQ_SYNTHETIC, OPT_ST_INT, generate.synthetic_tokens);

/* The prompt inputs, in proto_input's order. */
static const char *const input_names[] = {"prompt", "tokens", "synthetic_tokens"};

static const struct {
    const opt_field *fields;
    size_t n;
    int inputs; /* the first this many of input_names */
} op_fields[PROTO_OP_COUNT] = {
#define FIELDS(a) a, sizeof a / sizeof *a
    [PROTO_OP_STATUS] = {NULL, 0, 0},
    [PROTO_OP_SET] = {FIELDS(set_fields), 0},
    [PROTO_OP_GENERATE] = {FIELDS(generate_fields), 3},
    [PROTO_OP_CANCEL] = {FIELDS(cancel_fields), 0},
    [PROTO_OP_DROP_SESSION] = {FIELDS(drop_fields), 0},
    [PROTO_OP_EVAL] = {FIELDS(eval_fields), 2},
    [PROTO_OP_QUALITY] = {FIELDS(quality_fields), 2},
    [PROTO_OP_EMBED] = {NULL, 0, 2},
#undef FIELDS
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

static int unknown_field(proto_op op, const char *key, proto_error *err)
{
    char list[320] = "", buf[PROTO_FIELD_MAX];
    size_t len = 0;
    int n = op_fields[op].inputs + (int)op_fields[op].n;
    /* A list that outgrew the buffer stops there rather than past it. */
    for (int i = 0; i < n && len < sizeof list; i++) {
        int k = i - op_fields[op].inputs;
        const char *name = k < 0 ? input_names[i] : opt_defs[op_fields[op].fields[k].id].wire;
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", name);
    }
    clip(key, buf, sizeof buf);
    return proto_fail(err, PROTO_E_UNKNOWN_FIELD, buf,
                      "field '%s' is not taken by op '%s' (it takes %s)", buf, op_names[op],
                      len ? list : "no fields");
}

/* Checks a field by its row and stores it into the request. */
static int take(const opt_field *f, const json_t *v, proto_request *out, proto_error *err)
{
    char why[PROTO_MESSAGE_MAX - 64];
    const char *key = opt_defs[f->id].wire;
    switch (opt_field_take(f, v, out, why, sizeof why)) {
    case OPT_JSON_OK:
        return 0;
    case OPT_JSON_BAD_TYPE:
        return proto_fail(err, PROTO_E_BAD_TYPE, key, "field '%s': %s", key, why);
    case OPT_JSON_BAD_VALUE:
        break;
    }
    return proto_fail(err, PROTO_E_BAD_VALUE, key, "field '%s': %s", key, why);
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

/* The one prompt input noted by decode_fields (out->generate.input says
 * which); op: whose it is, for the message when none is given. */
static int decode_input(const json_t *v, proto_op op, proto_request *out, proto_error *err)
{
    proto_generate_args *a = &out->generate;
    if (!v)
        return proto_fail(
            err, PROTO_E_MISSING_FIELD, "prompt", "op '%s' needs one of %s", op_names[op],
            op == PROTO_OP_GENERATE ? "prompt, tokens, synthetic_tokens" : "prompt, tokens");
    if (a->input == PROTO_INPUT_TOKENS)
        return decode_tokens(v, a, err);
    if (a->input == PROTO_INPUT_SYNTHETIC)
        return take(&synthetic_field, v, out, err);
    if (!json_is_string(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, "prompt",
                          "field 'prompt': expected a string, got %s", jr_type(v));
    size_t len = json_string_length(v);
    a->prompt = malloc(len + 1);
    if (!a->prompt)
        return proto_fail(err, PROTO_E_INTERNAL, "prompt", "out of memory for a %zu-byte prompt",
                          len);
    memcpy(a->prompt, json_string_value(v), len + 1);
    a->prompt_len = len;
    return 0;
}

int proto_bias_read(const json_t *v, proto_bias *out, int *n, proto_error *err)
{
    const char *key;
    const json_t *x;
    char why[PROTO_MESSAGE_MAX - 64];
    *n = 0;
    if (!json_is_object(v))
        return proto_fail(err, PROTO_E_BAD_TYPE, "logit_bias",
                          "'logit_bias' must be an object {\"TOKEN_ID\": bias}, got %s",
                          jr_type(v));
    if (json_object_size(v) > PROTO_BIAS_MAX)
        return proto_fail(err, PROTO_E_BAD_VALUE, "logit_bias",
                          "'logit_bias' holds %zu tokens; at most %d", json_object_size(v),
                          PROTO_BIAS_MAX);
    json_object_foreach((json_t *)v, key, x)
    {
        char *end;
        long id = strtol(key, &end, 10);
        if (!key[0] || *end || id < 0 || id > PROTO_TOKEN_ID_MAX)
            return proto_fail(err, PROTO_E_BAD_VALUE, "logit_bias",
                              "'logit_bias': key '%.32s' is not a token id (0..%d)", key,
                              PROTO_TOKEN_ID_MAX);
        opt_value val;
        opt_json_rc rc = opt_read_json(OPT_REQ_LOGIT_BIAS, x, &val, why, sizeof why);
        if (rc != OPT_JSON_OK)
            return proto_fail(err, rc == OPT_JSON_BAD_TYPE ? PROTO_E_BAD_TYPE : PROTO_E_BAD_VALUE,
                              "logit_bias", "'logit_bias' of token %ld: %s", id, why);
        out[(*n)++] = (proto_bias){(int)id, (float)val.d};
    }
    return 0;
}

json_t *proto_bias_json(const proto_bias *b, int n)
{
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", b[i].token);
        if (json_object_set_new(o, key, json_real(b[i].bias))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* A generate's logit_bias, allocated for its entries. */
static int decode_bias(const json_t *v, proto_generate_args *g, proto_error *err)
{
    if (json_is_object(v) && json_object_size(v) > 0 && json_object_size(v) <= PROTO_BIAS_MAX &&
        !(g->bias = malloc(json_object_size(v) * sizeof *g->bias)))
        return proto_fail(err, PROTO_E_INTERNAL, "logit_bias", "out of memory");
    return proto_bias_read(v, g->bias, &g->n_bias, err);
}

/* Reads the op's fields in one walk of the frame: each known field is
 * checked and stored; the prompt input is only noted in *input (and
 * out->generate.input), as reading it allocates. */
static int decode_fields(json_t *root, proto_op op, proto_request *out, const json_t **input,
                         proto_error *err)
{
    const char *key;
    json_t *v;

    json_object_foreach(root, key, v)
    {
        if (!strcmp(key, "v") || !strcmp(key, "id") || !strcmp(key, "op"))
            continue;
        int in = op_fields[op].inputs;
        while (in-- > 0 && strcmp(key, input_names[in]) != 0)
            ;
        if (in >= 0) {
            if (*input)
                return proto_fail(err, PROTO_E_CONFLICT, key,
                                  "fields '%s' and '%s' exclude each other: give exactly one "
                                  "prompt input",
                                  input_names[out->generate.input], key);
            *input = v;
            out->generate.input = (proto_input)in;
            continue;
        }
        if (op == PROTO_OP_GENERATE && !strcmp(key, "logit_bias")) {
            if (decode_bias(v, &out->generate, err))
                return -1;
            continue;
        }
        const opt_field *f = opt_field_find(op_fields[op].fields, op_fields[op].n, key);
        if (!f)
            return unknown_field(op, key, err);
        if (take(f, v, out, err))
            return -1;
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
        "unknown op '%s' (expected status, set, generate, cancel, drop_session, eval, quality)",
        clip(json_string_value(v), buf, sizeof buf));
}

static int decode_envelope(const json_t *root, proto_request *out, proto_error *err)
{
    const json_t *v = json_object_get(root, "v");
    const json_t *id = json_object_get(root, "id");
    char why[PROTO_MESSAGE_MAX - 64];
    opt_value idv;

    /* The id first, silently: even a request that fails further down gets
     * its error reply under its own id. */
    opt_json_rc id_rc =
        id ? opt_read_json(OPT_REQ_ID, id, &idv, why, sizeof why) : OPT_JSON_BAD_TYPE;
    if (id_rc == OPT_JSON_OK)
        snprintf(out->id, sizeof out->id, "%s", idv.s);

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
    if (id_rc != OPT_JSON_OK)
        return proto_fail(err, PROTO_E_BAD_ID, "id", "field 'id': %s", why);
    return decode_op(root, &out->op, err);
}

static int decode_root(json_t *root, proto_request *out, proto_error *err)
{
    const json_t *input = NULL;

    if (!json_is_object(root))
        return proto_fail(err, PROTO_E_NOT_OBJECT, "", "expected a JSON object, got %s",
                          jr_type(root));
    if (decode_envelope(root, out, err))
        return -1;
    if (out->op == PROTO_OP_GENERATE)
        opt_field_defaults(generate_fields, sizeof generate_fields / sizeof *generate_fields, out);
    if (out->op == PROTO_OP_QUALITY)
        opt_field_defaults(quality_fields, sizeof quality_fields / sizeof *quality_fields, out);
    if (decode_fields(root, out->op, out, &input, err))
        return -1;
    switch (out->op) {
    case PROTO_OP_STATUS:
        return 0;
    case PROTO_OP_SET:
        if (!out->set.has_prefill_step && !out->set.has_kv_bits)
            return proto_fail(err, PROTO_E_MISSING_FIELD, "prefill_step",
                              "op 'set' needs prefill_step, kv_bits or both");
        return 0;
    case PROTO_OP_GENERATE:
        return decode_input(input, out->op, out, err);
    case PROTO_OP_CANCEL:
        if (!out->target[0])
            return proto_fail(err, PROTO_E_MISSING_FIELD, "target",
                              "op 'cancel' needs field 'target' (the request id to cancel)");
        return 0;
    case PROTO_OP_DROP_SESSION:
        if (!out->session[0])
            return proto_fail(err, PROTO_E_MISSING_FIELD, "session",
                              "op 'drop_session' needs field 'session'");
        return 0;
    case PROTO_OP_EVAL:
    case PROTO_OP_EMBED:
        /* An eval is a prefill that reports every position, an embed one
         * that pools them: generate's prompt input, nothing to generate,
         * no session. */
        out->generate.temperature = PROTO_DEFAULT_TEMPERATURE;
        out->generate.top_p = PROTO_DEFAULT_TOP_P;
        return decode_input(input, out->op, out, err);
    case PROTO_OP_QUALITY:
        /* Two evals of one text: prefills that generate nothing. */
        if (!out->quality.has_kv_bits)
            return proto_fail(err, PROTO_E_MISSING_FIELD, "kv_bits",
                              "op 'quality' needs field 'kv_bits' (the setting to measure "
                              "against 32)");
        if (out->quality.has_score_from && out->quality.ctx &&
            out->quality.score_from >= out->quality.ctx - 1)
            return proto_fail(err, PROTO_E_BAD_VALUE, "score_from",
                              "field 'score_from': %d leaves no position of a %d-token window "
                              "to score (expected below %d)",
                              out->quality.score_from, out->quality.ctx, out->quality.ctx - 1);
        out->generate.temperature = PROTO_DEFAULT_TEMPERATURE;
        out->generate.top_p = PROTO_DEFAULT_TOP_P;
        return decode_input(input, out->op, out, err);
    case PROTO_OP_COUNT:
        break;
    }
    return proto_fail(err, PROTO_E_INTERNAL, "op", "op %d has no decoder", (int)out->op);
}

size_t proto_max_body(int ctx)
{
    return (size_t)(ctx > 0 ? ctx : 0) * PROTO_BODY_PER_TOKEN + PROTO_MAX_FRAME;
}

int proto_request_decode(const void *buf, size_t len, proto_request *out, proto_error *err)
{
    return proto_request_decode_max(buf, len, PROTO_MAX_FRAME, out, err);
}

int proto_request_decode_max(const void *buf, size_t len, size_t max, proto_request *out,
                             proto_error *err)
{
    json_error_t jerr;

    memset(out, 0, sizeof *out);
    memset(err, 0, sizeof *err);
    if (len > max)
        return proto_fail(err, PROTO_E_TOO_LARGE, "", "frame is %zu bytes, the limit is %zu", len,
                          max);
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
    free(req->generate.bias);
    req->generate.prompt = NULL;
    req->generate.tokens = NULL;
    req->generate.bias = NULL;
    req->generate.n_bias = 0;
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
