/* test_jsonw.c: the JSON string escaper every hand-written JSON goes
 * through (jw_quote), into the fixed-buffer writer and a growing one. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/proto/jsonw.h"

/* A sink that appends to a fixed test buffer, counting its calls. */
struct text {
    char buf[256];
    size_t len;
    int calls;
};

static void append(void *ctx, const char *s, size_t n)
{
    struct text *t = ctx;
    cr_assert_lt(t->len + n, sizeof t->buf);
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
    t->calls++;
}

static const char *quoted(const char *s, size_t n)
{
    static struct text t;
    memset(&t, 0, sizeof t);
    jw_quote(s, n, append, &t);
    return t.buf;
}

#define QUOTED(lit) quoted(lit, sizeof lit - 1)

Test(jsonw, quote_escapes_quotes_backslashes_and_controls)
{
    cr_expect_str_eq(QUOTED(""), "\"\"");
    cr_expect_str_eq(QUOTED("plain"), "\"plain\"");
    cr_expect_str_eq(QUOTED("a\"b\\c"), "\"a\\\"b\\\\c\"");
    cr_expect_str_eq(QUOTED("l1\nl2\r\tx"), "\"l1\\nl2\\r\\tx\"");
    cr_expect_str_eq(QUOTED("\x01\x1f\x08\x0c"), "\"\\u0001\\u001f\\u0008\\u000c\"");
    cr_expect_str_eq(QUOTED("nul\0x"), "\"nul\\u0000x\"");
    cr_expect_str_eq(QUOTED("\x7f"), "\"\x7f\"", "DEL needs no escape in JSON");
}

Test(jsonw, quote_keeps_utf8_and_replaces_each_invalid_subpart)
{
    cr_expect_str_eq(QUOTED("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                     "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    cr_expect_str_eq(QUOTED("a\xff"
                            "b"),
                     "\"a\\ufffdb\"");
    cr_expect_str_eq(QUOTED("a\xe2\x82"
                            "b"),
                     "\"a\\ufffdb\"", "a broken sequence is one U+FFFD");
    cr_expect_str_eq(QUOTED("\xc0\x80"), "\"\\ufffd\\ufffd\"", "an overlong NUL");
    cr_expect_str_eq(QUOTED("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"", "a surrogate");
    cr_expect_str_eq(QUOTED("end\xf0\x9f\x98"), "\"end\\ufffd\"", "a cut-off tail");
}

Test(jsonw, quote_writes_plain_runs_in_one_piece)
{
    static struct text t;
    const char s[] = "a long run of plain text \xc3\xa9 with no escape";
    jw_quote(s, sizeof s - 1, append, &t);
    cr_expect_eq(t.calls, 3, "quote, run, quote: %d calls", t.calls);
}

/* Whatever bytes go in, the output is JSON whose value is the input
 * cleaned: exhaustive over every pair of bytes after a lead. */
Test(jsonw, quote_output_always_parses)
{
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b += 15) {
            char s[4] = {(char)a, (char)b, '\xbf', 'z'};
            const char *q = quoted(s, sizeof s);
            json_error_t err;
            json_t *v = json_loads(q, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
            cr_assert_not_null(v, "%02x %02x: %s: %s", a, b, q, err.text);
            cr_expect(json_is_string(v));
            json_decref(v);
        }
}

Test(jsonw, str_writes_the_same_into_the_fixed_buffer)
{
    char buf[64];
    jw w;
    const char s[] = "q\"\n\x01\xff\xc3\xa9";
    jw_init(&w, buf, sizeof buf);
    jw_open(&w);
    jw_key(&w, "text");
    jw_str(&w, s, sizeof s - 1);
    jw_close(&w);
    cr_assert_gt(jw_end(&w), 0);
    char want[300];
    snprintf(want, sizeof want, "{\"text\":%s}", QUOTED("q\"\n\x01\xff\xc3\xa9"));
    cr_expect_str_eq(buf, want);
}

Test(jsonw, str_that_does_not_fit_overflows)
{
    char buf[8];
    jw w;
    jw_init(&w, buf, sizeof buf);
    jw_str(&w, "\x01\x02\x03", 3);
    cr_expect_eq(jw_end(&w), -1, "18 bytes of escapes in an 8-byte buffer");
    cr_expect_str_eq(buf, "");
}
