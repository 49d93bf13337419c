/* jsonr.c: typed field reads (see jsonr.h). */
#include "jsonr.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/sys/utf8.h"

const char *jr_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

static int jr_wrong(const char *key, const char *expected, const json_t *v, char *err,
                    size_t errlen)
{
    snprintf(err, errlen, "field '%s': expected %s, got %s", key, expected, jr_type(v));
    return -1;
}

/* The integer at key within [lo, hi]; 1 if read, 0 if missing, -1 on error. */
static int jr_range(const json_t *o, const char *key, long long lo, long long hi, long long *out,
                    char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return jr_wrong(key, "an integer", v, err, errlen);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) {
        snprintf(err, errlen, "field '%s': %lld is out of range %lld..%lld", key, x, lo, hi);
        return -1;
    }
    *out = x;
    return 1;
}

int jr_int(const json_t *o, const char *key, int *out, char *err, size_t errlen)
{
    long long x;
    int rc = jr_range(o, key, INT32_MIN, INT32_MAX, &x, err, errlen);
    if (rc > 0)
        *out = (int)x;
    return rc < 0 ? -1 : 0;
}

int jr_i64(const json_t *o, const char *key, int64_t *out, char *err, size_t errlen)
{
    long long x;
    int rc = jr_range(o, key, INT64_MIN, INT64_MAX, &x, err, errlen);
    if (rc > 0)
        *out = x;
    return rc < 0 ? -1 : 0;
}

/* JSON integers are read as signed 64-bit, so a u64 tops out at 2^63 - 1:
 * far beyond any byte count or sequence number a node reaches. */
int jr_u64(const json_t *o, const char *key, uint64_t *out, char *err, size_t errlen)
{
    long long x;
    int rc = jr_range(o, key, 0, INT64_MAX, &x, err, errlen);
    if (rc > 0)
        *out = (uint64_t)x;
    return rc < 0 ? -1 : 0;
}

int jr_num(const json_t *o, const char *key, double *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (json_is_null(v))
        *out = NAN;
    else if (json_is_number(v))
        *out = json_number_value(v);
    else
        return jr_wrong(key, "a number", v, err, errlen);
    return 0;
}

int jr_bool(const json_t *o, const char *key, int *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return jr_wrong(key, "a boolean", v, err, errlen);
    *out = json_is_true(v);
    return 0;
}

int jr_str(const json_t *o, const char *key, char *out, size_t cap, char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return jr_wrong(key, "a string", v, err, errlen);
    utf8_clean(out, cap, json_string_value(v), json_string_length(v));
    return 0;
}
