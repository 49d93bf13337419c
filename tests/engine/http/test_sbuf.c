/* test_sbuf.c: the growable text buffer and its JSON strings. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/http/sbuf.h"

Test(sbuf, grows_and_hands_over)
{
    sbuf b = {0};
    for (int i = 0; i < 1000; i++)
        sbuf_printf(&b, "%d,", i);
    cr_assert_eq(b.failed, 0);
    cr_expect_eq(strncmp(b.data, "0,1,2,", 6), 0);
    sbuf_drop(&b, 4);
    cr_expect_eq(strncmp(b.data, "2,3,", 4), 0);
    size_t len;
    char *text = sbuf_take(&b, &len);
    cr_assert_not_null(text);
    cr_expect_eq(len, strlen(text));
    cr_expect_eq(b.data, NULL, "the buffer is empty after take");
    free(text);
    text = sbuf_take(&b, &len);
    cr_assert_not_null(text, "an empty buffer gives an empty string");
    cr_expect_str_eq(text, "");
    free(text);
}

Test(sbuf, json_strings_parse_back)
{
    const char *cases[] = {"plain",        "quote \" and \\ back",     "new\nline\ttab\r",
                           "\x01\x1f ctl", "caf\xc3\xa9 \xe2\x82\xac", ""};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sbuf b = {0};
        sbuf_json_str(&b, cases[i], strlen(cases[i]));
        json_error_t err;
        json_t *v = json_loadb(b.data, b.len, JSON_DECODE_ANY, &err);
        cr_assert_not_null(v, "case %zu: %s is not JSON: %s", i, b.data, err.text);
        cr_expect_str_eq(json_string_value(v), cases[i], "case %zu", i);
        json_decref(v);
        sbuf_free(&b);
    }
}

/* The HTTP server's JSON goes through the protocol's escaper: invalid
 * UTF-8 in a completion cannot make a body that does not parse. */
Test(sbuf, json_strings_replace_invalid_utf8)
{
    sbuf b = {0};
    sbuf_json_str(&b, "ok\xff\xe2\x82!", 6);
    cr_assert_eq(b.failed, 0);
    cr_expect_str_eq(b.data, "\"ok\\ufffd\\ufffd!\"");
    sbuf_free(&b);
}
