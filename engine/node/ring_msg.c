/* ring_msg.c: the kinds of stage-to-stage frames, and their payloads
 * checked field by field against a table per kind (see ring_msg.h). */
#include "ring_msg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/proto/curve.h"
#include "engine/proto/opt.h"
#include "engine/proto/protocol.h"

static const char *const kind_names[RING_KIND_COUNT] = {
    [RING_PREPARE] = "prepare",   [RING_START] = "start",   [RING_HIDDEN] = "hidden",
    [RING_TOKEN] = "token",       [RING_END] = "end",       [RING_SET] = "set",
    [RING_DROP] = "drop",         [RING_REPORT] = "report", [RING_SET_CHECK] = "set_check",
    [RING_SET_UNDO] = "set_undo", [RING_LOGITS] = "logits", [RING_BATCH] = "batch",
    [RING_TOKENS] = "tokens",
};

const char *ring_kind_name(ring_kind kind)
{
    if (kind <= 0 || kind >= RING_KIND_COUNT)
        return "unknown";
    return kind_names[kind];
}

typedef enum fld_type {
    F_ID,       /* a request id or session name: 1..64 bytes, no control characters */
    F_SESSION,  /* "" (none) or an F_ID */
    F_TEXT,     /* a string of at most hi bytes */
    F_ENDPOINT, /* tcp://, ipc:// or inproc://, printable, < PROTO_TEXT_MAX bytes */
    F_OPT_ENDPOINT /* "" or an F_ENDPOINT (the tail's --next is never empty) */,
    F_KEY,         /* a Z85 CURVE public key */
    F_FINGERPRINT, /* 64 lowercase hex characters */
    F_CODE,        /* an error code this build knows */
    F_KIND,        /* a frame kind's name */
    F_INT,         /* an integer in [lo, hi] */
    F_NUM,         /* a number in [lo, hi] */
    F_BOOL,
    F_ROW,       /* a setting, checked by its row of the settings table (lo) */
    F_IDS,       /* an array of at most hi F_IDs */
    F_OPS,       /* an array of at most hi ring operations (integers >= 1) */
    F_STAGES,    /* an array of at most PROTO_RING_MAX entries of `entry` */
    F_CONVERSION /* a set entry's kv: what a conversion did */
} fld_type;

typedef struct fld fld;
struct fld {
    const char *key;
    fld_type type;
    int required;
    double lo, hi;    /* F_ROW: lo is the row's opt_id */
    const fld *entry; /* F_STAGES: the fields of an entry */
};

#define REQ 1
#define OPT 0
#define I64 1e19 /* past the int64 range of JSON integers: any of them */
#define ROW(key, required, id)                                                                     \
    {                                                                                              \
        key, F_ROW, required, id, 0, NULL                                                          \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, 0, 0, 0, 0, NULL                                                                     \
    }

/* Entries of "stages": a stage's identity, and its verdict. */
static const fld prepare_entry[] = {
    {"name", F_TEXT, REQ, 1, PROTO_NAME_MAX, NULL},
    {"fingerprint", F_FINGERPRINT, REQ, 0, 0, NULL},
    {"model", F_TEXT, REQ, 1, 255, NULL},
    {"first", F_INT, REQ, 0, RING_LAYERS_MAX - 1, NULL},
    {"last", F_INT, REQ, 1, RING_LAYERS_MAX, NULL},
    {"n_layers", F_INT, REQ, 1, RING_LAYERS_MAX, NULL},
    {"next", F_OPT_ENDPOINT, REQ, 0, 0, NULL},
    {"ok", F_BOOL, REQ, 0, 0, NULL},
    {"code", F_CODE, OPT, 0, 0, NULL},
    {"message", F_TEXT, OPT, 0, PROTO_MESSAGE_MAX - 1, NULL},
    {"needed", F_INT, OPT, 0, I64, NULL},
    {"available", F_INT, OPT, 0, I64, NULL},
    {"budget", F_INT, OPT, 0, I64, NULL},
    {"chunk", F_INT, OPT, 1, PROTO_PREFILL_STEP_MAX, NULL},
    END,
};

static const fld member_entry[] = {
    {"name", F_TEXT, REQ, 1, PROTO_NAME_MAX, NULL},
    {"fingerprint", F_FINGERPRINT, REQ, 0, 0, NULL},
    {"first", F_INT, REQ, 0, RING_LAYERS_MAX - 1, NULL},
    {"last", F_INT, REQ, 1, RING_LAYERS_MAX, NULL},
    {"next", F_OPT_ENDPOINT, REQ, 0, 0, NULL},
    END,
};

static const fld set_entry[] = {
    {"name", F_TEXT, REQ, 1, PROTO_NAME_MAX, NULL},
    {"first", F_INT, REQ, 0, RING_LAYERS_MAX - 1, NULL},
    {"last", F_INT, REQ, 1, RING_LAYERS_MAX, NULL},
    {"ok", F_BOOL, REQ, 0, 0, NULL},
    ROW("prefill_step", OPT, OPT_PREFILL_STEP),
    ROW("kv_bits", OPT, OPT_KV_BITS),
    {"kv", F_CONVERSION, OPT, 0, 0, NULL},
    {"code", F_CODE, OPT, 0, 0, NULL},
    {"message", F_TEXT, OPT, 0, PROTO_MESSAGE_MAX - 1, NULL},
    END,
};

static const fld conversion[] = {
    ROW("from_bits", REQ, OPT_KV_BITS),        ROW("to_bits", REQ, OPT_KV_BITS),
    {"ms", F_NUM, REQ, 0, 1e12, NULL},         {"bytes_before", F_INT, REQ, 0, I64, NULL},
    {"bytes_after", F_INT, REQ, 0, I64, NULL}, END,
};

/* The head's endpoint and key come with every frame it starts once it
 * knows them (PROTOCOL.md: "Frames from the head"). */
#define HEAD_FIELDS                                                                                \
    {"head", F_ENDPOINT, OPT, 0, 0, NULL},                                                         \
    {                                                                                              \
        "head_key", F_KEY, OPT, 0, 0, NULL                                                         \
    }

static const fld prepare_msg[] = {
    HEAD_FIELDS,
    {"req", F_ID, REQ, 0, 0, NULL},
    {"session", F_SESSION, REQ, 0, 0, NULL},
    {"pos", F_INT, REQ, 0, RING_CTX_MAX, NULL},
    {"ctx", F_INT, REQ, 1, RING_CTX_MAX, NULL},
    {"chunk", F_INT, REQ, 1, PROTO_PREFILL_STEP_MAX, NULL},
    {"eval", F_BOOL, OPT, 0, 0, NULL},
    {"drop", F_IDS, REQ, 0, RING_DROP_MAX, NULL},
    {"running", F_OPS, OPT, 0, RING_RUNNING_MAX, NULL},
    {"stages", F_STAGES, REQ, 0, 0, prepare_entry},
    END,
};

static const fld start_msg[] = {
    HEAD_FIELDS,
    {"req", F_ID, REQ, 0, 0, NULL},
    {"session", F_SESSION, REQ, 0, 0, NULL},
    {"pos", F_INT, REQ, 0, RING_CTX_MAX, NULL},
    {"ctx", F_INT, REQ, 1, RING_CTX_MAX, NULL},
    ROW("temperature", REQ, OPT_REQ_TEMPERATURE),
    ROW("top_p", REQ, OPT_REQ_TOP_P),
    {"seed", F_INT, REQ, -I64, I64, NULL},
    {"stages", F_STAGES, REQ, 0, 0, member_entry},
    END,
};

static const fld end_msg[] = {
    {"req", F_ID, REQ, 0, 0, NULL},
    {"ok", F_BOOL, REQ, 0, 0, NULL},
    END,
};

static const fld set_msg[] = {
    HEAD_FIELDS,
    ROW("prefill_step", OPT, OPT_PREFILL_STEP),
    ROW("kv_bits", OPT, OPT_KV_BITS),
    {"stages", F_STAGES, REQ, 0, 0, set_entry},
    END,
};

static const fld drop_msg[] = {
    {"sessions", F_IDS, REQ, 1, RING_DROP_MAX, NULL},
    END,
};

static const fld report_msg[] = {
    {"name", F_TEXT, REQ, 1, PROTO_NAME_MAX, NULL},
    {"first", F_INT, REQ, 0, RING_LAYERS_MAX - 1, NULL},
    {"of", F_KIND, REQ, 0, 0, NULL},
    {"ok", F_BOOL, REQ, 0, 0, NULL},
    {"code", F_CODE, OPT, 0, 0, NULL},
    {"message", F_TEXT, OPT, 0, PROTO_MESSAGE_MAX - 1, NULL},
    END,
};

static const fld *msg_fields(ring_kind kind)
{
    switch (kind) {
    case RING_PREPARE:
        return prepare_msg;
    case RING_START:
        return start_msg;
    case RING_END:
        return end_msg;
    case RING_SET:
    case RING_SET_CHECK:
    case RING_SET_UNDO:
        return set_msg;
    case RING_DROP:
        return drop_msg;
    case RING_REPORT:
        return report_msg;
    default:
        return NULL;
    }
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static int bad(char *err, size_t errlen, const char *path, const char *expected, const char *got)
{
    snprintf(err, errlen, "field '%.100s': expected %.80s, got %.40s", path, expected, got);
    return -1;
}

/* A received string for a message: quoted, cut, control bytes as '?'. */
static const char *shown(const char *s, size_t len, char *buf, size_t cap)
{
    size_t n = len < cap - 6 ? len : cap - 6;
    buf[0] = '"';
    for (size_t i = 0; i < n; i++)
        buf[i + 1] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    snprintf(buf + n + 1, cap - n - 1, "%s\"", n < len ? "..." : "");
    return buf;
}

static const char *string_expected(fld_type t)
{
    switch (t) {
    case F_ID:
        return "1..64 bytes without control characters";
    case F_SESSION:
        return "\"\" or 1..64 bytes without control characters";
    case F_TEXT:
        return "a string of bounded length";
    case F_ENDPOINT:
    case F_OPT_ENDPOINT:
        return "a tcp://, ipc:// or inproc:// endpoint";
    case F_KEY:
        return "a 40-character Z85 key";
    case F_FINGERPRINT:
        return "64 lowercase hex characters";
    case F_CODE:
        return "an error code";
    default:
        return "a frame kind";
    }
}

static int id_ok(const char *s, size_t len)
{
    if (len == 0 || len > PROTO_ID_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

static int endpoint_ok(const char *s, size_t len)
{
    if (len >= PROTO_TEXT_MAX || (strncmp(s, "tcp://", 6) != 0 && strncmp(s, "ipc://", 6) != 0 &&
                                  strncmp(s, "inproc://", 9) != 0))
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

static int key_ok(const char *s, size_t len)
{
    static const char z85[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              ".-:+=^!/*?&<>()[]{}@%$#";
    if (len != CURVE_Z85_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!s[i] || !strchr(z85, s[i]))
            return 0;
    return 1;
}

static int fingerprint_ok(const char *s, size_t len)
{
    if (len != 64)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int kind_ok(const char *s)
{
    for (int k = 1; k < RING_KIND_COUNT; k++)
        if (strcmp(s, ring_kind_name((ring_kind)k)) == 0)
            return 1;
    return 0;
}

static int check_object(const json_t *o, const fld *fields, const char *path, char *err,
                        size_t errlen);

/* A string field of one of the string types. */
static int check_string(const json_t *v, const fld *f, const char *path, char *err, size_t errlen)
{
    if (!json_is_string(v))
        return bad(err, errlen, path, "a string", type_name(v));
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    int ok = 0;
    switch (f->type) {
    case F_ID:
        ok = id_ok(s, len);
        break;
    case F_SESSION:
        ok = len == 0 || id_ok(s, len);
        break;
    case F_TEXT:
        ok = len >= (size_t)f->lo && len <= (size_t)f->hi && strlen(s) == len;
        break;
    case F_ENDPOINT:
        ok = endpoint_ok(s, len);
        break;
    case F_OPT_ENDPOINT:
        ok = len == 0 || endpoint_ok(s, len);
        break;
    case F_KEY:
        ok = key_ok(s, len);
        break;
    case F_FINGERPRINT:
        ok = fingerprint_ok(s, len);
        break;
    case F_CODE:
        ok = proto_code_parse(s) != PROTO_CODE_COUNT && proto_code_parse(s) != PROTO_OK;
        break;
    case F_KIND:
        ok = kind_ok(s);
        break;
    default:
        break;
    }
    char buf[48];
    return ok ? 0
              : bad(err, errlen, path, string_expected(f->type), shown(s, len, buf, sizeof buf));
}

static int check_number(const json_t *v, const fld *f, const char *path, char *err, size_t errlen)
{
    char expected[64], got[32];
    snprintf(expected, sizeof expected, "%s in %.0f..%.0f",
             f->type == F_INT ? "an integer" : "a number", f->lo, f->hi);
    if (f->type == F_INT ? !json_is_integer(v) : !json_is_number(v))
        return bad(err, errlen, path, expected, type_name(v));
    double x = json_number_value(v);
    int ok = x >= f->lo && x <= f->hi;
    if (f->type == F_INT)
        snprintf(got, sizeof got, "%lld", (long long)json_integer_value(v));
    else
        snprintf(got, sizeof got, "%g", x);
    return ok ? 0 : bad(err, errlen, path, expected, got);
}

static int check_value(const json_t *v, const fld *f, const char *path, char *err, size_t errlen)
{
    char sub[128];
    size_t i;
    const json_t *e;
    switch (f->type) {
    case F_INT:
    case F_NUM:
        return check_number(v, f, path, err, errlen);
    case F_BOOL:
        return json_is_boolean(v) ? 0 : bad(err, errlen, path, "a boolean", type_name(v));
    case F_ROW: {
        opt_value value;
        char why[160];
        if (opt_check_json((opt_id)f->lo, v, &value, why, sizeof why) == 0)
            return 0;
        snprintf(err, errlen, "field '%.100s': %.120s", path, why);
        return -1;
    }
    case F_IDS:
        snprintf(sub, sizeof sub, "an array of %.0f..%.0f session names", f->lo, f->hi);
        if (!json_is_array(v) || json_array_size(v) < (size_t)f->lo ||
            json_array_size(v) > (size_t)f->hi)
            return bad(err, errlen, path, sub, type_name(v));
        json_array_foreach(v, i, e)
        {
            if (!json_is_string(e) || !id_ok(json_string_value(e), json_string_length(e)))
                return bad(err, errlen, path, sub, "a bad entry");
        }
        return 0;
    case F_OPS:
        snprintf(sub, sizeof sub, "an array of at most %.0f operations", f->hi);
        if (!json_is_array(v) || json_array_size(v) > (size_t)f->hi)
            return bad(err, errlen, path, sub, type_name(v));
        json_array_foreach(v, i, e)
        {
            if (!json_is_integer(e) || json_integer_value(e) < 1)
                return bad(err, errlen, path, sub, "a bad entry");
        }
        return 0;
    case F_STAGES:
        if (!json_is_array(v) || json_array_size(v) > PROTO_RING_MAX)
            return bad(err, errlen, path, "an array of at most 16 stages",
                       json_is_array(v) ? "more" : type_name(v));
        json_array_foreach(v, i, e)
        {
            snprintf(sub, sizeof sub, "%.100s.%zu", path, i);
            if (check_object(e, f->entry, sub, err, errlen) != 0)
                return -1;
        }
        return 0;
    case F_CONVERSION:
        return check_object(v, conversion, path, err, errlen);
    default:
        return check_string(v, f, path, err, errlen);
    }
}

static const fld *field_named(const fld *fields, const char *key)
{
    for (const fld *f = fields; f->key; f++)
        if (strcmp(f->key, key) == 0)
            return f;
    return NULL;
}

static int check_object(const json_t *o, const fld *fields, const char *path, char *err,
                        size_t errlen)
{
    char sub[128];
    if (!json_is_object(o))
        return bad(err, errlen, path[0] ? path : "(payload)", "an object", type_name(o));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        snprintf(sub, sizeof sub, "%.60s%s%.60s", path, path[0] ? "." : "", key);
        const fld *f = field_named(fields, key);
        if (!f) {
            snprintf(err, errlen, "field '%.127s' is not a field of this frame", sub);
            return -1;
        }
        if (check_value(v, f, sub, err, errlen) != 0)
            return -1;
    }
    for (const fld *f = fields; f->key; f++) {
        if (f->required && !json_object_get(o, f->key)) {
            snprintf(err, errlen, "field '%.100s%s%s' is missing", path, path[0] ? "." : "",
                     f->key);
            return -1;
        }
    }
    return 0;
}

/* What the tables cannot say: relations between fields. */
static int check_relations(ring_kind kind, const json_t *o, char *err, size_t errlen)
{
    if (kind == RING_PREPARE || kind == RING_START) {
        json_int_t pos = json_integer_value(json_object_get(o, "pos"));
        json_int_t ctx = json_integer_value(json_object_get(o, "ctx"));
        if (ctx <= pos) {
            snprintf(err, errlen, "field 'ctx': %lld is not past pos %lld", (long long)ctx,
                     (long long)pos);
            return -1;
        }
    }
    if ((kind == RING_SET || kind == RING_SET_CHECK) && !json_object_get(o, "prefill_step") &&
        !json_object_get(o, "kv_bits")) {
        snprintf(err, errlen, "a %s frame without prefill_step or kv_bits", ring_kind_name(kind));
        return -1;
    }
    return 0;
}

int ring_msg_check(ring_kind kind, const json_t *o, char *err, size_t errlen)
{
    const fld *fields = msg_fields(kind);
    if (!fields) {
        snprintf(err, errlen, "a %s frame carries no JSON", ring_kind_name(kind));
        return -1;
    }
    char msg[256];
    if (check_object(o, fields, "", msg, sizeof msg) != 0 ||
        check_relations(kind, o, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s frame: %.255s", ring_kind_name(kind), msg);
        return -1;
    }
    return 0;
}
