/* test_opt_json.c: the settings table's checks of JSON values and its
 * field-list decoder (engine/proto/opt.h, opt_field.c). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "engine/proto/opt.h"
#include "engine/proto/protocol.h"

static opt_json_rc read_text(opt_id id, const char *json, opt_value *v, char *err, size_t errlen)
{
    json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
    cr_assert_not_null(j, "%s", json);
    opt_json_rc rc = opt_read_json(id, j, v, err, errlen);
    json_decref(j);
    return rc;
}

/* A value of the wrong JSON type and a value out of range are told apart
 * (the protocols' bad_type and bad_value), each saying what was expected
 * as JSON and what came. */
Test(opt, json_type_and_value_told_apart)
{
    opt_value v;
    char err[256];

    cr_assert_eq(read_text(OPT_KV_BITS, "\"16\"", &v, err, sizeof err), OPT_JSON_BAD_TYPE);
    cr_assert_eq(read_text(OPT_KV_BITS, "16.0", &v, err, sizeof err), OPT_JSON_BAD_TYPE);
    cr_assert_eq(read_text(OPT_KV_BITS, "5", &v, err, sizeof err), OPT_JSON_BAD_VALUE);
    cr_assert_str_eq(err, "expected 32, 16, 8 or 4, got 5");
    cr_assert_eq(read_text(OPT_KV_BITS, "8", &v, err, sizeof err), OPT_JSON_OK);
    cr_assert_eq(v.i, 8);

    /* An INT's word comes as a string: another string is a bad value. */
    cr_assert_eq(read_text(OPT_PREFILL_STEP, "\"fast\"", &v, err, sizeof err), OPT_JSON_BAD_VALUE);
    cr_assert_str_eq(err, "expected an integer in 1..65536 or \"auto\", got \"fast\"");
    cr_assert_eq(read_text(OPT_PREFILL_STEP, "\"auto\"", &v, err, sizeof err), OPT_JSON_OK);
    cr_assert_eq(v.i, PROTO_PREFILL_AUTO);
    cr_assert_eq(read_text(OPT_PREFILL_STEP, "1.5", &v, err, sizeof err), OPT_JSON_BAD_TYPE);

    cr_assert_eq(read_text(OPT_REQ_SPECIAL, "1", &v, err, sizeof err), OPT_JSON_BAD_TYPE);
    cr_assert_str_eq(err, "expected true or false, got 1");
    cr_assert_eq(read_text(OPT_REQ_SEED, "-1", &v, err, sizeof err), OPT_JSON_BAD_VALUE);
}

/* top_p's lower bound is open; ids may hold no control characters. */
Test(opt, open_bound_and_control_characters)
{
    opt_value v;
    char err[256];

    cr_assert_eq(read_text(OPT_REQ_TOP_P, "0", &v, err, sizeof err), OPT_JSON_BAD_VALUE);
    cr_assert_str_eq(err, "expected a number above 0 and at most 1, got 0");
    cr_assert_eq(read_text(OPT_REQ_TOP_P, "1e-9", &v, err, sizeof err), OPT_JSON_OK);
    cr_assert_eq(opt_check_text(OPT_REQ_TOP_P, "0", &v, err, sizeof err), -1);
    cr_assert_eq(opt_check_text(OPT_REQ_TOP_P, "1", &v, err, sizeof err), 0);

    cr_assert_eq(read_text(OPT_REQ_SESSION, "\"a\\nb\"", &v, err, sizeof err), OPT_JSON_BAD_VALUE);
    cr_assert_str_eq(err, "expected a string of 1..64 bytes without control characters, got "
                          "\"a?b\"");
    cr_assert_eq(read_text(OPT_REQ_SESSION, "\"\"", &v, err, sizeof err), OPT_JSON_BAD_VALUE);
    /* A long value is cut for the message at a character boundary. */
    char many[1 + 40 * 6 + 2] = "\"";
    for (int i = 0; i < 40; i++)
        strcat(many, "\\u00e9");
    strcat(many, "\"");
    cr_assert_eq(read_text(OPT_REQ_SESSION, many, &v, err, sizeof err), OPT_JSON_BAD_VALUE);
    json_t *message = json_string(err);
    cr_assert_not_null(message, "not UTF-8: %s", err);
    json_decref(message);
    cr_assert_eq(read_text(OPT_REQ_SESSION, "\"caf\\u00e9\"", &v, err, sizeof err), OPT_JSON_OK);
}

typedef struct fields_dst {
    int max_tokens;
    float temperature;
    uint64_t seed;
    int has_seed;
    char session[PROTO_ID_MAX + 1];
} fields_dst;

static const opt_field dst_fields[] = {
    OPT_FIELD(OPT_REQ_MAX_TOKENS, OPT_ST_INT, fields_dst, max_tokens),
    OPT_FIELD(OPT_REQ_TEMPERATURE, OPT_ST_FLOAT, fields_dst, temperature),
    OPT_FIELD_GIVEN(OPT_REQ_SEED, OPT_ST_U64, fields_dst, seed, has_seed),
    OPT_FIELD(OPT_REQ_SESSION, OPT_ST_TEXT, fields_dst, session),
};
#define N_DST (sizeof dst_fields / sizeof *dst_fields)

/* A field list finds fields by their rows' wire names, stores each into
 * its member (and its given flag), and puts the rows' defaults first. */
Test(opt, field_list_decodes_into_a_struct)
{
    fields_dst d;
    char err[256];
    memset(&d, 0xff, sizeof d);
    d.has_seed = 0;
    opt_field_defaults(dst_fields, N_DST, &d);
    cr_assert_eq(d.max_tokens, PROTO_DEFAULT_MAX_TOKENS);
    cr_assert_float_eq(d.temperature, PROTO_DEFAULT_TEMPERATURE, 1e-6);
    cr_assert_eq(d.has_seed, 0);

    json_t *o = json_loads("{\"seed\":9007199254740993,\"session\":\"s1\",\"max_tokens\":0,"
                           "\"temperature\":0.25,\"nope\":1}",
                           0, NULL);
    cr_assert_not_null(o);
    const char *key;
    json_t *v;
    int unknown = 0;
    json_object_foreach(o, key, v)
    {
        const opt_field *f = opt_field_find(dst_fields, N_DST, key);
        if (!f) {
            unknown++;
            continue;
        }
        cr_assert_eq(opt_field_take(f, v, &d, err, sizeof err), OPT_JSON_OK, "%s: %s", key, err);
    }
    json_decref(o);
    cr_assert_eq(unknown, 1);
    cr_assert_eq(d.max_tokens, 0);
    cr_assert_float_eq(d.temperature, 0.25, 1e-6);
    cr_assert_eq(d.seed, 9007199254740993ull);
    cr_assert_eq(d.has_seed, 1);
    cr_assert_str_eq(d.session, "s1");

    /* A refused value leaves the member as it was. */
    json_t *bad = json_integer(2000000);
    cr_assert_eq(opt_field_take(&dst_fields[0], bad, &d, err, sizeof err), OPT_JSON_BAD_VALUE);
    json_decref(bad);
    cr_assert_eq(d.max_tokens, 0);
}

/* Every row with a wire name has a default its own checker takes. */
Test(opt, wire_rows_defaults_check)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if (!d->wire || !d->def)
            continue;
        opt_value v = {0};
        char err[256];
        cr_expect_eq(opt_check_text((opt_id)id, d->def, &v, err, sizeof err), 0, "%s: %s: %s",
                     d->wire, d->def, err);
    }
}

/* A text member smaller than its row's bound is cut, never overrun. */
typedef struct small_dst {
    char session[8];
    char after[8];
} small_dst;

Test(opt, text_member_smaller_than_its_row_is_cut)
{
    static const opt_field f = OPT_FIELD(OPT_REQ_SESSION, OPT_ST_TEXT, small_dst, session);
    small_dst d;
    memset(&d, 'x', sizeof d);
    char err[128];
    json_t *j = json_string("abcdefghijklmnop");
    cr_assert_eq(opt_field_take(&f, j, &d, err, sizeof err), OPT_JSON_OK, "%s", err);
    json_decref(j);
    cr_assert_str_eq(d.session, "abcdefg");
    cr_assert_eq(d.after[0], 'x', "the next member was written");
}
