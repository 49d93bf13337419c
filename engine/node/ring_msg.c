/* ring_msg.c: the kinds of stage-to-stage frames, and their payloads
 * checked field by field against a table per kind and decoded, in the
 * same walk, into the struct of the kind (see ring_msg.h). */
#include "ring_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/curve.h"
#include "engine/proto/opt.h"
#include "engine/proto/protocol.h"

static const char *const kind_names[RING_KIND_COUNT] = {
    [RING_PREPARE] = "prepare",   [RING_START] = "start",   [RING_HIDDEN] = "hidden",
    [RING_TOKEN] = "token",       [RING_END] = "end",       [RING_SET] = "set",
    [RING_DROP] = "drop",         [RING_REPORT] = "report", [RING_SET_CHECK] = "set_check",
    [RING_SET_UNDO] = "set_undo", [RING_LOGITS] = "logits", [RING_BATCH] = "batch",
    [RING_TOKENS] = "tokens",     [RING_PROBE] = "probe",
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
    F_FINGERPRINT, /* RING_FINGERPRINT_LEN lowercase hex characters */
    F_CODE,        /* an error code this build knows: a proto_code */
    F_KIND,        /* a frame kind's name: a ring_kind */
    F_INT,         /* an integer in [lo, hi]: an int or an int64_t */
    F_NUM,         /* a number in [lo, hi]: a double */
    F_BOOL,        /* an int */
    F_ROW,         /* a setting, checked by its row of the settings table */
    F_IDS,         /* an array of lo..hi F_IDs: a ring_ids */
    F_OPS,         /* an array of lo..hi ring operations (integers >= 1): a ring_ops */
    F_STAGES,      /* an array of lo..hi `entry` objects: a ring_stages */
    F_OBJECT,      /* an `entry` object (checked only) */
    F_BIAS         /* a logit_bias map (proto_bias_read): a ring_bias */
} fld_type;

/* A field of a payload: how it is checked, and where it goes in the struct
 * the payload decodes into (ring_msg.h), by offset as opt_field does for
 * control requests. A field of size 0 is checked only. */
typedef struct fld fld;
struct fld {
    const char *key;
    fld_type type;
    int required;
    double lo, hi;
    const fld *entry; /* F_STAGES, F_OBJECT: the fields of an entry */
    opt_id row;       /* F_ROW: the setting's row ... */
    opt_store store;  /* ... how it is stored ... */
    size_t given;     /* ... and the offset of its has_ flag, or OPT_NO_GIVEN */
    size_t at, size;  /* offsetof and sizeof the member */
};

#define REQ 1
#define OPT 0
#define I64 1e19 /* past the int64 range of JSON integers: any of them */
/* Where a field goes: member m of the struct st. */
#define MEMBER(st, m) .at = offsetof(st, m), .size = sizeof(((st *)0)->m)
/* A field stored into member m of st (the field's name). */
#define FIELD(st, m, t, req, l, h, e)                                                              \
    {                                                                                              \
        .key = #m, .type = t, .required = req, .lo = l, .hi = h, .entry = e,                       \
        .given = OPT_NO_GIVEN, MEMBER(st, m)                                                       \
    }
/* A field the handlers do not read: checked, and passed on as it came. */
#define CHECKED(k, t, req, l, h, e)                                                                \
    {                                                                                              \
        .key = k, .type = t, .required = req, .lo = l, .hi = h, .entry = e, .given = OPT_NO_GIVEN  \
    }
/* A setting, checked by its row: stored (as opt_field_take stores a
 * control request's field) into member m of st, setting the flag `has`
 * when it came, or checked only. */
#define ROW(st, k, m, req, id, how)                                                                \
    {                                                                                              \
        .key = k, .type = F_ROW, .required = req, .row = id, .store = how, .given = OPT_NO_GIVEN,  \
        MEMBER(st, m)                                                                              \
    }
#define ROW_HAS(st, k, m, has, req, id, how)                                                       \
    {                                                                                              \
        .key = k, .type = F_ROW, .required = req, .row = id, .store = how,                         \
        .given = offsetof(st, has), MEMBER(st, m)                                                  \
    }
#define ROW_CHECKED(k, req, id)                                                                    \
    {                                                                                              \
        .key = k, .type = F_ROW, .required = req, .row = id, .given = OPT_NO_GIVEN                 \
    }
#define END                                                                                        \
    {                                                                                              \
        .key = NULL                                                                                \
    }

/* Entries of "stages": a stage's identity, and its verdict. */
#define STAGE(m, type, required, lo, hi) FIELD(ring_stage, m, type, required, lo, hi, NULL)
#define NAME STAGE(name, F_TEXT, REQ, 1, PROTO_NAME_MAX)
#define FINGERPRINT STAGE(fingerprint, F_FINGERPRINT, REQ, 0, 0)
#define NEXT STAGE(next, F_OPT_ENDPOINT, REQ, 0, 0)
#define FIRST STAGE(first, F_INT, REQ, 0, RING_LAYERS_MAX - 1)
#define LAST STAGE(last, F_INT, REQ, 1, RING_LAYERS_MAX)
#define VERDICT                                                                                    \
    STAGE(ok, F_BOOL, REQ, 0, 0), STAGE(code, F_CODE, OPT, 0, 0),                                  \
        STAGE(message, F_TEXT, OPT, 0, PROTO_MESSAGE_MAX - 1)

static const fld prepare_entry[] = {
    NAME,
    FINGERPRINT,
    STAGE(model, F_TEXT, REQ, 1, RING_MODEL_MAX),
    FIRST,
    LAST,
    CHECKED("n_layers", F_INT, REQ, 1, RING_LAYERS_MAX, NULL),
    NEXT,
    VERDICT,
    CHECKED("needed", F_INT, OPT, 0, I64, NULL),
    CHECKED("available", F_INT, OPT, 0, I64, NULL),
    CHECKED("budget", F_INT, OPT, 0, I64, NULL),
    STAGE(chunk, F_INT, OPT, 1, PROTO_PREFILL_STEP_MAX),
    END,
};

/* A probe's: who the stage is, nothing asked of it. */
static const fld probe_entry[] = {
    NAME,  FINGERPRINT, STAGE(model, F_TEXT, REQ, 1, RING_MODEL_MAX),
    FIRST, LAST,        CHECKED("n_layers", F_INT, REQ, 1, RING_LAYERS_MAX, NULL),
    NEXT,  END,
};

/* A start's: the ring as the head saw it. */
static const fld member_entry[] = {NAME, FINGERPRINT, FIRST, LAST, NEXT, END};

/* What a conversion did: the set's reply carries it as it came. */
static const fld conversion[] = {
    ROW_CHECKED("from_bits", REQ, OPT_KV_BITS),
    ROW_CHECKED("to_bits", REQ, OPT_KV_BITS),
    CHECKED("ms", F_NUM, REQ, 0, 1e12, NULL),
    CHECKED("bytes_before", F_INT, REQ, 0, I64, NULL),
    CHECKED("bytes_after", F_INT, REQ, 0, I64, NULL),
    END,
};

static const fld set_entry[] = {
    NAME,
    FIRST,
    LAST,
    ROW_CHECKED("prefill_step", OPT, OPT_PREFILL_STEP),
    ROW_CHECKED("kv_bits", OPT, OPT_KV_BITS),
    CHECKED("kv", F_OBJECT, OPT, 0, 0, conversion),
    VERDICT,
    END,
};

/* The head's endpoint and key come with every frame it starts once it
 * knows them (PROTOCOL.md: "Frames from the head"). */
#define HEAD_FIELDS(st)                                                                            \
    FIELD(st, head, F_ENDPOINT, OPT, 0, 0, NULL), FIELD(st, head_key, F_KEY, OPT, 0, 0, NULL)
/* A request's place: the context the session holds, and after the request. */
#define CONTEXT(st)                                                                                \
    FIELD(st, req, F_ID, REQ, 0, 0, NULL), FIELD(st, session, F_SESSION, REQ, 0, 0, NULL),         \
        FIELD(st, pos, F_INT, REQ, 0, RING_CTX_MAX, NULL),                                         \
        FIELD(st, ctx, F_INT, REQ, 1, RING_CTX_MAX, NULL)

static const fld prepare_msg[] = {
    HEAD_FIELDS(ring_msg_prepare),
    CONTEXT(ring_msg_prepare),
    FIELD(ring_msg_prepare, chunk, F_INT, REQ, 1, PROTO_PREFILL_STEP_MAX, NULL),
    FIELD(ring_msg_prepare, eval, F_BOOL, OPT, 0, 0, NULL),
    ROW(ring_msg_prepare, "quality_bits", quality_bits, OPT, OPT_KV_BITS, OPT_ST_INT),
    FIELD(ring_msg_prepare, drop, F_IDS, REQ, 0, RING_DROP_MAX, NULL),
    FIELD(ring_msg_prepare, running, F_OPS, OPT, 0, RING_RUNNING_MAX, NULL),
    FIELD(ring_msg_prepare, stages, F_STAGES, REQ, 0, PROTO_RING_MAX, prepare_entry),
    END,
};

static const fld start_msg[] = {
    HEAD_FIELDS(ring_msg_start),
    CONTEXT(ring_msg_start),
    ROW(ring_msg_start, "quality_bits", quality_bits, OPT, OPT_KV_BITS, OPT_ST_INT),
    ROW(ring_msg_start, "temperature", temperature, REQ, OPT_REQ_TEMPERATURE, OPT_ST_FLOAT),
    ROW(ring_msg_start, "top_p", top_p, REQ, OPT_REQ_TOP_P, OPT_ST_FLOAT),
    FIELD(ring_msg_start, seed, F_INT, REQ, -I64, I64, NULL),
    ROW(ring_msg_start, "top_k", top_k, OPT, OPT_REQ_TOP_K, OPT_ST_INT),
    ROW(ring_msg_start, "min_p", min_p, OPT, OPT_REQ_MIN_P, OPT_ST_FLOAT),
    ROW(ring_msg_start, "repeat_penalty", repeat_penalty, OPT, OPT_REQ_REPEAT_PENALTY,
        OPT_ST_FLOAT),
    ROW(ring_msg_start, "presence_penalty", presence_penalty, OPT, OPT_REQ_PRESENCE_PENALTY,
        OPT_ST_FLOAT),
    ROW(ring_msg_start, "frequency_penalty", frequency_penalty, OPT, OPT_REQ_FREQUENCY_PENALTY,
        OPT_ST_FLOAT),
    FIELD(ring_msg_start, logit_bias, F_BIAS, OPT, 0, 0, NULL),
    ROW_HAS(ring_msg_start, "logprobs", logprobs, has_logprobs, OPT, OPT_REQ_LOGPROBS, OPT_ST_INT),
    FIELD(ring_msg_start, stages, F_STAGES, REQ, 0, PROTO_RING_MAX, member_entry),
    END,
};

static const fld end_msg[] = {
    CHECKED("req", F_ID, REQ, 0, 0, NULL),
    FIELD(ring_msg_end, ok, F_BOOL, REQ, 0, 0, NULL),
    END,
};

static const fld set_msg[] = {
    HEAD_FIELDS(ring_msg_set),
    ROW_HAS(ring_msg_set, "prefill_step", args.prefill_step, args.has_prefill_step, OPT,
            OPT_PREFILL_STEP, OPT_ST_INT),
    ROW_HAS(ring_msg_set, "kv_bits", args.kv_bits, args.has_kv_bits, OPT, OPT_KV_BITS, OPT_ST_INT),
    FIELD(ring_msg_set, stages, F_STAGES, REQ, 0, PROTO_RING_MAX, set_entry),
    END,
};

static const fld probe_msg[] = {
    HEAD_FIELDS(ring_msg_probe),
    FIELD(ring_msg_probe, stages, F_STAGES, REQ, 0, PROTO_RING_MAX, probe_entry),
    END,
};

static const fld drop_msg[] = {
    FIELD(ring_msg_drop, sessions, F_IDS, REQ, 1, RING_DROP_MAX, NULL),
    END,
};

static const fld report_msg[] = {
    FIELD(ring_msg_report, name, F_TEXT, REQ, 1, PROTO_NAME_MAX, NULL),
    FIELD(ring_msg_report, first, F_INT, REQ, 0, RING_LAYERS_MAX - 1, NULL),
    FIELD(ring_msg_report, of, F_KIND, REQ, 0, 0, NULL),
    FIELD(ring_msg_report, ok, F_BOOL, REQ, 0, 0, NULL),
    FIELD(ring_msg_report, code, F_CODE, OPT, 0, 0, NULL),
    FIELD(ring_msg_report, message, F_TEXT, OPT, 0, PROTO_MESSAGE_MAX - 1, NULL),
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
    case RING_PROBE:
        return probe_msg;
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

/* The kind named s, or 0 for none. */
static ring_kind kind_parse(const char *s)
{
    for (int k = 1; k < RING_KIND_COUNT; k++)
        if (strcmp(s, ring_kind_name((ring_kind)k)) == 0)
            return (ring_kind)k;
    return 0;
}

/* Where f's value goes in dst, or NULL when it is checked only. */
static void *member_of(const fld *f, void *dst)
{
    return dst && f->size ? (char *)dst + f->at : NULL;
}

static int check_object(const json_t *o, const fld *fields, const char *path, void *dst, char *err,
                        size_t errlen);

/* A string field of one of the string types. */
static int check_string(const json_t *v, const fld *f, const char *path, void *dst, char *err,
                        size_t errlen)
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
        ok = kind_parse(s) != 0;
        break;
    default:
        break;
    }
    char buf[48];
    if (!ok)
        return bad(err, errlen, path, string_expected(f->type), shown(s, len, buf, sizeof buf));
    void *at = member_of(f, dst);
    if (at && f->type == F_CODE)
        *(proto_code *)at = proto_code_parse(s);
    else if (at && f->type == F_KIND)
        *(ring_kind *)at = kind_parse(s);
    else if (at)
        /* Checked: no NUL inside, and no longer than the member's bound. */
        snprintf(at, f->size, "%s", s);
    return 0;
}

static int check_number(const json_t *v, const fld *f, const char *path, void *dst, char *err,
                        size_t errlen)
{
    char expected[64], got[32];
    snprintf(expected, sizeof expected, "%s in %.0f..%.0f",
             f->type == F_INT ? "an integer" : "a number", f->lo, f->hi);
    if (f->type == F_INT ? !json_is_integer(v) : !json_is_number(v))
        return bad(err, errlen, path, expected, type_name(v));
    double x = json_number_value(v);
    if (!(x >= f->lo && x <= f->hi)) {
        if (f->type == F_INT)
            snprintf(got, sizeof got, "%lld", (long long)json_integer_value(v));
        else
            snprintf(got, sizeof got, "%g", x);
        return bad(err, errlen, path, expected, got);
    }
    void *at = member_of(f, dst);
    if (at && f->type == F_NUM)
        *(double *)at = x;
    else if (at && f->size == sizeof(int))
        *(int *)at = (int)json_integer_value(v);
    else if (at)
        *(int64_t *)at = json_integer_value(v);
    return 0;
}

/* A setting, by its row; stored as a control request's field is. */
static int check_row(const json_t *v, const fld *f, const char *path, void *dst, char *err,
                     size_t errlen)
{
    char why[160];
    opt_value value;
    opt_field of = {f->row, f->store, f->at, f->given, f->size};
    int rc = member_of(f, dst) ? (int)opt_field_take(&of, v, dst, why, sizeof why)
                               : opt_check_json(f->row, v, &value, why, sizeof why);
    if (rc == 0)
        return 0;
    snprintf(err, errlen, "field '%.100s': %.120s", path, why);
    return -1;
}

/* A list field: an array of f->lo..f->hi entries, `what` they are;
 * expected says so, for the entries' messages too. */
#define LIST_EXPECTED_MAX 64
static int check_list(const json_t *v, const fld *f, const char *what, const char *path,
                      char *expected, char *err, size_t errlen)
{
    snprintf(expected, LIST_EXPECTED_MAX, "an array of %.0f..%.0f %s", f->lo, f->hi, what);
    if (!json_is_array(v))
        return bad(err, errlen, path, expected, type_name(v));
    size_t n = json_array_size(v);
    if (n < (size_t)f->lo || n > (size_t)f->hi)
        return bad(err, errlen, path, expected, n < (size_t)f->lo ? "fewer" : "more");
    return 0;
}

static int store_ids(ring_ids *ids, const json_t *v, const char *path, char *err, size_t errlen)
{
    size_t i;
    const json_t *e;
    if (json_array_size(v) == 0)
        return 0;
    ids->v = malloc(json_array_size(v) * sizeof *ids->v);
    if (!ids->v) {
        snprintf(err, errlen, "field '%.100s': out of memory for %zu session names", path,
                 json_array_size(v));
        return -1;
    }
    json_array_foreach(v, i, e) snprintf(ids->v[i], sizeof ids->v[i], "%s", json_string_value(e));
    ids->n = (int)json_array_size(v);
    return 0;
}

/* F_IDS and F_OPS: lists of session names, of ring operations. */
static int check_scalars(const json_t *v, const fld *f, const char *path, void *dst, char *err,
                         size_t errlen)
{
    char expected[LIST_EXPECTED_MAX];
    size_t i;
    const json_t *e;
    int ids = f->type == F_IDS;
    if (check_list(v, f, ids ? "session names" : "operations", path, expected, err, errlen) != 0)
        return -1;
    json_array_foreach(v, i, e)
    {
        int ok = ids ? json_is_string(e) && id_ok(json_string_value(e), json_string_length(e))
                     : json_is_integer(e) && json_integer_value(e) >= 1;
        if (!ok)
            return bad(err, errlen, path, expected, "a bad entry");
    }
    void *at = member_of(f, dst);
    if (!at)
        return 0;
    if (ids)
        return store_ids(at, v, path, err, errlen);
    ring_ops *ops = at;
    json_array_foreach(v, i, e)
    {
        ops->v[ops->n++] = (uint64_t)json_integer_value(e);
    }
    return 0;
}

static int check_stages(const json_t *v, const fld *f, const char *path, void *dst, char *err,
                        size_t errlen)
{
    char expected[LIST_EXPECTED_MAX], sub[128];
    size_t i;
    const json_t *e;
    if (check_list(v, f, "stages", path, expected, err, errlen) != 0)
        return -1;
    ring_stages *list = member_of(f, dst);
    json_array_foreach(v, i, e)
    {
        snprintf(sub, sizeof sub, "%.100s.%zu", path, i);
        if (check_object(e, f->entry, sub, list ? &list->v[i] : NULL, err, errlen) != 0)
            return -1;
    }
    if (list)
        list->n = (int)json_array_size(v);
    return 0;
}

static int check_value(const json_t *v, const fld *f, const char *path, void *dst, char *err,
                       size_t errlen)
{
    switch (f->type) {
    case F_INT:
    case F_NUM:
        return check_number(v, f, path, dst, err, errlen);
    case F_BOOL:
        if (!json_is_boolean(v))
            return bad(err, errlen, path, "a boolean", type_name(v));
        if (member_of(f, dst))
            *(int *)member_of(f, dst) = json_is_true(v);
        return 0;
    case F_ROW:
        return check_row(v, f, path, dst, err, errlen);
    case F_IDS:
    case F_OPS:
        return check_scalars(v, f, path, dst, err, errlen);
    case F_STAGES:
        return check_stages(v, f, path, dst, err, errlen);
    case F_OBJECT:
        return check_object(v, f->entry, path, member_of(f, dst), err, errlen);
    case F_BIAS: {
        static _Thread_local ring_bias scratch; /* checked only: where it goes */
        ring_bias *b = member_of(f, dst) ? member_of(f, dst) : &scratch;
        proto_error pe;
        if (proto_bias_read(v, b->v, &b->n, &pe) == 0)
            return 0;
        snprintf(err, errlen, "%.100s: %.150s", path, pe.message);
        return -1;
    }
    default:
        return check_string(v, f, path, dst, err, errlen);
    }
}

static const fld *field_named(const fld *fields, const char *key)
{
    for (const fld *f = fields; f->key; f++)
        if (strcmp(f->key, key) == 0)
            return f;
    return NULL;
}

/* Checks an object field by field and stores each into dst (NULL: checks
 * only). */
static int check_object(const json_t *o, const fld *fields, const char *path, void *dst, char *err,
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
        if (check_value(v, f, sub, dst, err, errlen) != 0)
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
static int check_relations(ring_kind kind, const ring_msg *m, char *err, size_t errlen)
{
    int pos = -1, ctx = 0;
    if (kind == RING_PREPARE)
        pos = m->prepare.pos, ctx = m->prepare.ctx;
    else if (kind == RING_START)
        pos = m->start.pos, ctx = m->start.ctx;
    if (pos >= 0 && ctx <= pos) {
        snprintf(err, errlen, "field 'ctx': %d is not past pos %d", ctx, pos);
        return -1;
    }
    if ((kind == RING_SET || kind == RING_SET_CHECK) && !m->set.args.has_prefill_step &&
        !m->set.args.has_kv_bits) {
        snprintf(err, errlen, "a %s frame without prefill_step or kv_bits", ring_kind_name(kind));
        return -1;
    }
    return 0;
}

int ring_msg_decode(ring_kind kind, const json_t *o, ring_msg **out, char *err, size_t errlen)
{
    const fld *fields = msg_fields(kind);
    *out = NULL;
    if (!fields) {
        snprintf(err, errlen, "a %s frame carries no JSON", ring_kind_name(kind));
        return -1;
    }
    ring_msg *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "%s frame: out of memory", ring_kind_name(kind));
        return -1;
    }
    char msg[256];
    if (check_object(o, fields, "", m, msg, sizeof msg) != 0 ||
        check_relations(kind, m, msg, sizeof msg) != 0) {
        ring_msg_free(kind, m);
        snprintf(err, errlen, "%s frame: %.255s", ring_kind_name(kind), msg);
        return -1;
    }
    *out = m;
    return 0;
}

void ring_msg_free(ring_kind kind, ring_msg *m)
{
    const fld *fields = msg_fields(kind);
    if (!m)
        return;
    /* Lists of names are the only allocations, and only at the top. */
    for (const fld *f = fields; f && f->key; f++)
        if (f->type == F_IDS)
            free(((ring_ids *)member_of(f, m))->v);
    free(m);
}
