/* test_opt.c: the settings table's checking and formatting of values. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/proto/opt.h"

/* A value formatted by opt_format reads back the same by opt_check_text. */
static void round_trip(opt_id id, const char *text)
{
    opt_value v = {0}, back = {0};
    char err[256], buf[64];
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), 0, "%s: %s", text, err);
    opt_format(id, &v, buf, sizeof buf);
    cr_assert_eq(opt_check_text(id, buf, &back, err, sizeof err), 0, "%s: %s", buf, err);
    cr_assert_eq(back.i, v.i, "%s -> %s", text, buf);
    cr_assert_eq(back.i2, v.i2, "%s -> %s", text, buf);
}

Test(opt, format_reads_back)
{
    round_trip(OPT_PREFILL_STEP, "auto");
    round_trip(OPT_PREFILL_STEP, "300");
    round_trip(OPT_MEM_LIMIT, "24G");
    round_trip(OPT_KV_BITS, "8");
    round_trip(OPT_LAYERS, "3:7");
    round_trip(OPT_CF_ACCEPT_NEW, "off");
    opt_value v = {.i = 0};
    char buf[32];
    opt_format(OPT_PREFILL_STEP, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, "auto", "the word stands for its value");
    v.i = 1;
    opt_format(OPT_CF_ACCEPT_NEW, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, "no");
    v.s = "/a b";
    opt_format(OPT_MODEL, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, "/a b");
}

Test(opt, choices_and_range)
{
    unsigned long long bits[8];
    cr_assert_eq(opt_choices(OPT_KV_BITS, bits, 8), 4);
    cr_assert(bits[0] == 32 && bits[1] == 16 && bits[2] == 8 && bits[3] == 4);
    cr_assert_eq(opt_choices(OPT_KV_BITS, bits, 2), 2, "at most max");
    cr_assert_eq(opt_choices(OPT_THREADS, bits, 8), 0, "a range, not choices");
    char buf[128];
    opt_range(OPT_KV_BITS, buf, sizeof buf);
    cr_assert_str_eq(buf, "32, 16, 8 or 4");
    opt_range(OPT_PREFILL_STEP, buf, sizeof buf);
    cr_assert_str_eq(buf, "1..64K or auto");
    opt_range(OPT_MODEL, buf, sizeof buf);
    cr_assert_str_eq(buf, "");
}

/* A text without an upper bound says what it needs, not "1..0 bytes". */
Test(opt, unbounded_text_expected)
{
    char buf[128], err[128];
    opt_value v = {0};
    opt_expected(OPT_CF_SSH, buf, sizeof buf);
    cr_assert_str_eq(buf, "a value that is not empty");
    cr_assert_eq(opt_check_text(OPT_CF_SSH, "", &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected a value that is not empty");
    opt_expected(OPT_MODEL, buf, sizeof buf);
    cr_assert_str_eq(buf, "any text");
}

/* Every cluster-file key is one row's, and none is given twice. */
Test(opt, cluster_keys_are_unique)
{
    for (int a = 0; a < OPT_COUNT; a++)
        for (int b = a + 1; b < OPT_COUNT && opt_defs[a].key; b++)
            cr_assert(!opt_defs[b].key || strcmp(opt_defs[a].key, opt_defs[b].key) != 0,
                      "key %s twice", opt_defs[a].key);
}
