/* opt_field.c: a request's JSON fields checked by their rows of the
 * settings table and stored into a struct, by offset (see opt.h). */
#include "opt.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const opt_field *opt_field_find(const opt_field *fields, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(opt_defs[fields[i].id].wire, name) == 0)
            return &fields[i];
    return NULL;
}

static void store(const opt_field *f, const opt_value *v, void *dst)
{
    char *at = (char *)dst + f->at;
    switch (f->store) {
    case OPT_ST_INT:
        *(int *)at = (int)v->i;
        break;
    case OPT_ST_U64:
        *(uint64_t *)at = v->i;
        break;
    case OPT_ST_FLOAT:
        *(float *)at = (float)v->d;
        break;
    case OPT_ST_TEXT:
        /* The row bounds the length to what the member holds; a member
         * smaller than its row cuts rather than overflows. */
        snprintf(at, f->size, "%s", v->s);
        break;
    }
}

opt_json_rc opt_field_take(const opt_field *f, const struct json_t *value, void *dst, char *err,
                           size_t errlen)
{
    opt_value v;
    opt_json_rc rc = opt_read_json(f->id, value, &v, err, errlen);
    if (rc != OPT_JSON_OK)
        return rc;
    store(f, &v, dst);
    if (f->given != OPT_NO_GIVEN)
        *(int *)((char *)dst + f->given) = 1;
    return OPT_JSON_OK;
}

void opt_field_defaults(const opt_field *fields, size_t n, void *dst)
{
    char err[256];
    for (size_t i = 0; i < n; i++) {
        opt_value v = {0};
        /* A default that does not check is a bug of the table, which its
         * test (tests/engine/proto/test_opt.c) rules out. */
        if (opt_defs[fields[i].id].def &&
            opt_check_text(fields[i].id, opt_defs[fields[i].id].def, &v, err, sizeof err) == 0)
            store(&fields[i], &v, dst);
    }
}
