/* test_utf8.c: UTF-8 boundaries and validity, the rules every part of the
 * tree shares. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/sys/utf8.h"

/* utf8_check of a literal, its NUL not counted. */
#define CHECK(lit) utf8_check(lit, sizeof lit - 1)

Test(utf8, ascii_is_one_byte)
{
    cr_expect_eq(CHECK("a"), 1);
    cr_expect_eq(CHECK("\x7f"), 1);
    cr_expect_eq(utf8_check("", 1), 1, "NUL is a character");
    cr_expect_eq(utf8_seq("ab", 2), 1);
}

Test(utf8, valid_sequences_of_two_three_and_four_bytes)
{
    cr_expect_eq(CHECK("\xc2\x80"), 2);         /* U+0080, the first two-byte */
    cr_expect_eq(CHECK("\xc3\xa9"), 2);         /* é */
    cr_expect_eq(CHECK("\xdf\xbf"), 2);         /* U+07FF */
    cr_expect_eq(CHECK("\xe0\xa0\x80"), 3);     /* U+0800 */
    cr_expect_eq(CHECK("\xe2\x82\xac"), 3);     /* € */
    cr_expect_eq(CHECK("\xed\x9f\xbf"), 3);     /* U+D7FF, below the surrogates */
    cr_expect_eq(CHECK("\xef\xbf\xbd"), 3);     /* U+FFFD */
    cr_expect_eq(CHECK("\xf0\x90\x80\x80"), 4); /* U+10000 */
    cr_expect_eq(CHECK("\xf0\x9f\x98\x80"), 4); /* an emoji */
    cr_expect_eq(CHECK("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF, the last */
    cr_expect_eq(utf8_seq("\xe2\x82\xac!", 4), 3, "only the character's bytes");
}

Test(utf8, overlong_forms_are_invalid)
{
    cr_expect_eq(CHECK("\xc0\x80"), -1, "C0 never starts a character");
    cr_expect_eq(CHECK("\xc1\xbf"), -1);
    cr_expect_eq(CHECK("\xe0\x80\x80"), -1, "E0 needs A0..BF after it");
    cr_expect_eq(CHECK("\xe0\x9f\xbf"), -1);
    cr_expect_eq(CHECK("\xf0\x80\x80\x80"), -1, "F0 needs 90..BF after it");
    cr_expect_eq(CHECK("\xf0\x8f\xbf\xbf"), -1);
    cr_expect_eq(utf8_seq("\xc0\x80", 2), 0);
}

Test(utf8, surrogates_and_code_points_past_the_last_are_invalid)
{
    cr_expect_eq(CHECK("\xed\xa0\x80"), -1, "U+D800");
    cr_expect_eq(CHECK("\xed\xbf\xbf"), -1, "U+DFFF");
    cr_expect_eq(CHECK("\xf4\x90\x80\x80"), -1, "U+110000");
    cr_expect_eq(CHECK("\xf5\x80\x80\x80"), -1);
    cr_expect_eq(CHECK("\xff"), -1);
    cr_expect_eq(CHECK("\x80"), -1, "a stray continuation byte");
}

/* A sequence broken after a valid start is one maximal subpart: one
 * U+FFFD for the bytes that could have been a character. */
Test(utf8, broken_sequences_are_maximal_subparts)
{
    cr_expect_eq(CHECK("\xe2\x82x"), -2);
    cr_expect_eq(CHECK("\xf0\x9f\x98x"), -3);
    cr_expect_eq(CHECK("\xc3x"), -1);
    cr_expect_eq(utf8_step("\xe2\x82x", 3), 2);
    cr_expect_eq(utf8_step("\x80\x80", 2), 1);
}

Test(utf8, truncated_sequences_want_more)
{
    cr_expect_eq(utf8_check("\xc3", 1), 0);
    cr_expect_eq(utf8_check("\xe2\x82", 2), 0);
    cr_expect_eq(utf8_check("\xf0\x9f\x98", 3), 0);
    cr_expect_eq(utf8_check("\xe0\x80", 2), -1, "an overlong start is not a truncation");
    cr_expect_eq(utf8_seq("\xe2\x82", 2), 0);
    cr_expect_eq(utf8_step("\xe2\x82", 2), 2, "a cut-off tail is one step");
}

Test(utf8, count_takes_a_character_or_an_invalid_subpart_as_one)
{
    const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    cr_expect_eq(utf8_count(s, sizeof s - 1), 4);
    cr_expect_eq(utf8_count("", 0), 0);
    cr_expect_eq(utf8_count("\xe2\x82x\xff", 4), 3);
    cr_expect_eq(utf8_count("ab\xe2\x82", 4), 3, "a cut-off tail counts once");
}

Test(utf8, cut_never_splits_a_character)
{
    const char s[] = "ab\xe2\x82\xac\xf0\x9f\x98\x80";
    cr_expect_eq(utf8_cut(s, 2), 2);
    cr_expect_eq(utf8_cut(s, 3), 2);
    cr_expect_eq(utf8_cut(s, 4), 2);
    cr_expect_eq(utf8_cut(s, 5), 5);
    cr_expect_eq(utf8_cut(s, 6), 5);
    cr_expect_eq(utf8_cut(s, 8), 5);
    cr_expect_eq(utf8_cut(s, 9), 9);
    cr_expect_eq(utf8_cut(s, 0), 0);
    cr_expect_eq(utf8_cut("a\x80\x80", 3), 3, "invalid bytes are not a character to keep whole");
    cr_expect_eq(utf8_cut("\xe0\x80", 2), 2, "nor is an overlong start");
}

Test(utf8, decode_and_encode_round_trip)
{
    static const uint32_t cps[] = {0,      'A',    0x7F,    0x80,    0xE9,
                                   0x7FF,  0x800,  0x2800,  0xD7FF,  0xE000,
                                   0xFFFD, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF};
    static const size_t lens[] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4};
    for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
        char out[4];
        uint32_t cp = 0xFFFFFFFF;
        size_t n = utf8_encode(cps[i], out);
        cr_expect_eq(n, lens[i], "U+%04X: %zu bytes", cps[i], n);
        cr_expect_eq(utf8_decode(out, n, &cp), n, "U+%04X", cps[i]);
        cr_expect_eq(cp, cps[i]);
    }
    char out[4];
    cr_expect_eq(utf8_encode(0x28FF, out), 3);
    cr_expect_eq(memcmp(out, "\xe2\xa3\xbf", 3), 0, "the full braille cell");
    uint32_t cp;
    cr_expect_eq(utf8_decode("\xc0\x80", 2, &cp), 0);
    cr_expect_eq(utf8_decode("\xe2\x82", 2, &cp), 0);
}

Test(utf8, clean_replaces_invalid_subparts_and_nul)
{
    char out[64];
    const char in[] = "a\xff"
                      "b\xe2\x82"
                      "c\0d\xed\xa0\x80";
    size_t n = utf8_clean(out, sizeof out, in, sizeof in - 1);
    const char want[] = "a\xef\xbf\xbd"
                        "b\xef\xbf\xbd"
                        "c\xef\xbf\xbd"
                        "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
    cr_expect_eq(n, sizeof want - 1, "%zu bytes", n);
    cr_expect_str_eq(out, want, "a surrogate is three invalid bytes");
    cr_expect_eq(utf8_clean(out, sizeof out, "\xe2\x82", 2), 3, "a cut-off tail is one U+FFFD");
}

Test(utf8, clean_cuts_at_a_character_when_short_of_room)
{
    char out[5];
    cr_expect_eq(utf8_clean(out, sizeof out, "ab\xe2\x82\xac", 5), 2);
    cr_expect_str_eq(out, "ab", "the euro does not fit in the 2 bytes left");
    cr_expect_eq(utf8_clean(out, sizeof out, "abcdef", 6), 4);
    cr_expect_str_eq(out, "abcd");
    cr_expect_eq(utf8_clean(out, 0, "abc", 3), 0, "no room at all writes nothing");
}
