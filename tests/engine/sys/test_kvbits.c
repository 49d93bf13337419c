/* test_kvbits.c: the one list of KV cache precisions, its check and the
 * ways messages show it. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/sys/kvbits.h"

Test(kvbits, the_set_most_bits_first)
{
    const int want[] = {32, 16, 8, 4};
    cr_assert_eq(KV_BITS_N, 4);
    for (int i = 0; i < KV_BITS_N; i++) {
        cr_assert_eq(kv_bits_all[i], want[i]);
        cr_assert(kv_bits_valid(want[i]));
    }
    /* 2^32 + 16 would be 16 if the check took an int: JSON gives 64 bits. */
    const long long refused[] = {0, -16, 2, 12, 64, (1LL << 32) + 16};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        cr_assert_not(kv_bits_valid(refused[i]), "%lld", refused[i]);
}

Test(kvbits, choices_as_messages_show_them)
{
    char buf[KV_BITS_CHOICES_MAX];
    cr_assert_str_eq(kv_bits_choices(buf, sizeof buf, ", ", " or "), "32, 16, 8 or 4");
    cr_assert_str_eq(kv_bits_choices(buf, sizeof buf, ", ", ", "), "32, 16, 8, 4");
    cr_assert_str_eq(kv_bits_choices(buf, sizeof buf, " ", " "), "32 16 8 4");
    cr_assert_str_eq(kv_bits_choices(buf, 6, ", ", " or "), "32, 1", "cut, never overrun");
}
