/* test_stopseq.c: stop sequences over text that grows a token at a time. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/http/stopseq.h"

/* Feeds pieces one at a time as the server does and returns what went out
 * (and whether a stop sequence ended it). */
static int feed(const stopseq *st, const char *const *pieces, char *out, size_t cap)
{
    char text[512] = "";
    size_t sent = 0;
    out[0] = '\0';
    for (int i = 0; pieces[i]; i++) {
        strcat(text, pieces[i]);
        size_t emit;
        int stop = stopseq_scan(st, text, strlen(text), sent, &emit);
        cr_assert_geq(emit, sent, "piece %d: emit went back", i);
        strncat(out, text + sent, emit - sent);
        sent = emit;
        if (stop)
            return 1;
    }
    strncat(out, text + sent, cap - strlen(out) - 1); /* the end: nothing is held back */
    return 0;
}

Test(stopseq, no_sequences_lets_everything_out)
{
    stopseq st = {0};
    size_t emit;
    cr_expect_eq(stopseq_scan(&st, "abc", 3, 1, &emit), 0);
    cr_expect_eq(emit, 3);
}

Test(stopseq, holds_back_what_could_start_a_sequence)
{
    stopseq st = {1, {"END"}};
    size_t emit;
    cr_expect_eq(stopseq_scan(&st, "the E", 5, 0, &emit), 0);
    cr_expect_eq(emit, 4, "'E' may start END");
    cr_expect_eq(stopseq_scan(&st, "the EN", 6, 4, &emit), 0);
    cr_expect_eq(emit, 4);
    cr_expect_eq(stopseq_scan(&st, "the ENx", 7, 4, &emit), 0);
    cr_expect_eq(emit, 7, "ENx cannot become END: all out");
}

Test(stopseq, a_sequence_split_over_tokens_ends_the_text_before_it)
{
    stopseq st = {1, {"\n\nUser:"}};
    const char *pieces[] = {"Hello", " there", ".\n", "\nUs", "er:", " more", NULL};
    char out[128];
    cr_expect_eq(feed(&st, pieces, out, sizeof out), 1);
    cr_expect_str_eq(out, "Hello there.");
}

Test(stopseq, the_earliest_of_several_wins)
{
    stopseq st = {2, {"ran", "dog"}};
    const char *pieces[] = {"the big dog", " ran", NULL};
    char out[128];
    cr_expect_eq(feed(&st, pieces, out, sizeof out), 1);
    cr_expect_str_eq(out, "the big ");
    stopseq st2 = {2, {"dog", "g"}};
    const char *p2[] = {"the big dog", NULL};
    cr_expect_eq(feed(&st2, p2, out, sizeof out), 1);
    cr_expect_str_eq(out, "the bi");
}

Test(stopseq, a_sequence_at_the_very_start_leaves_nothing)
{
    stopseq st = {1, {"Once"}};
    const char *pieces[] = {"On", "ce upon", NULL};
    char out[128];
    cr_expect_eq(feed(&st, pieces, out, sizeof out), 1);
    cr_expect_str_eq(out, "");
}

Test(stopseq, held_back_text_goes_out_at_the_end)
{
    stopseq st = {1, {"STOP"}};
    const char *pieces[] = {"go ST", "O", NULL};
    char out[128];
    cr_expect_eq(feed(&st, pieces, out, sizeof out), 0);
    cr_expect_str_eq(out, "go STO");
}
