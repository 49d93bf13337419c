/* eng_json.c: reading the engines' JSON answers (eng_map.h), below the
 * tables that use it and the poll that calls them. */
#include <math.h>
#include <stdio.h>

#include "eng_map.h"

json_t *eng_json_load(const char *body, size_t len, char *why, size_t whylen)
{
    json_error_t e;
    json_t *j = json_loadb(body, len, 0, &e);
    if (!j)
        snprintf(why, whylen, "not JSON (%s)", e.text);
    return j;
}

void eng_json_text(char *dst, size_t size, json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    snprintf(dst, size, "%s", s ? s : "");
}

double eng_json_num(json_t *obj, const char *key)
{
    json_t *n = json_object_get(obj, key);
    return json_is_number(n) ? json_number_value(n) : NAN;
}

int eng_read_version(struct eng_view *v, const char *body, size_t len, char *why, size_t whylen)
{
    json_t *j = eng_json_load(body, len, why, whylen);
    if (!j)
        return -1;
    eng_json_text(v->version, sizeof v->version, j, "version");
    json_decref(j);
    if (v->version[0])
        return 0;
    snprintf(why, whylen, "no `version`");
    return -1;
}
