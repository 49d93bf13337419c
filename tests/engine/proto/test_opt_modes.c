/* test_opt_modes.c: the settings table's verbs with modes ("stress
 * growth"): finding the mode among options, the first word after options,
 * a row that takes a list in some verbs only, and the help of a verb with
 * modes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/opt.h"

/* Splits line into argv (at most 31 words) in a static buffer. */
static int words(const char *line, char **argv)
{
    static char buf[1024];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    return argc;
}

Test(opt_modes, the_first_word_skips_options_and_their_values)
{
    char *argv[32];
    unsigned long long all = opt_prog_verbs(OPT_INFERTOP);
    int argc = words("infertop -c FILE --db PATH --json status", argv);
    cr_assert_eq(opt_first_word(all, argc, argv), 6);
    argc = words("infertop --readonly -c FILE", argv);
    cr_assert_eq(opt_first_word(all, argc, argv), argc, "no word: the dashboard");
    argc = words("nodes --json -- echo", argv);
    cr_assert_eq(opt_first_word(OPT_VB(OPT_V_NODES), argc, argv), argc, "a command is no mode");
    argc = words("nodes -n 5 logs", argv);
    cr_assert_eq(opt_first_word(OPT_VB(OPT_V_NODES), argc, argv), 3, "-n takes a value");
}

Test(opt_modes, the_mode_is_found_among_options_and_taken_out)
{
    char *argv[32], err[256] = "";
    int argc = words("history --db PATH show 7", argv);
    opt_verb mode = opt_mode(OPT_V_HISTORY, &argc, argv, err, sizeof err);
    cr_assert_eq(mode, OPT_V_HISTORY_SHOW, "%s", err);
    cr_assert_eq(argc, 4);
    cr_assert_str_eq(argv[3], "7");
    cr_assert_str_eq(opt_mode_word(OPT_V_HISTORY, mode), "show");

    argc = words("stress --json", argv);
    cr_assert_eq(opt_mode(OPT_V_STRESS, &argc, argv, err, sizeof err), OPT_V_STRESS, "no mode");

    argc = words("stress grow", argv);
    cr_assert_eq(opt_mode(OPT_V_STRESS, &argc, argv, err, sizeof err), OPT_V_COUNT);
    cr_assert_str_eq(err, "unknown mode 'grow': expected growth, fixed, soak, sweep or quality");
    cr_assert(opt_has_modes(OPT_V_STRESS) && !opt_has_modes(OPT_V_STRESS_GROWTH));
    cr_assert_null(opt_mode_word(OPT_V_STRESS, OPT_V_HISTORY_SHOW));
}

Test(opt_modes, a_row_is_a_list_only_in_its_list_verbs)
{
    char *argv[32], err[512] = "";
    opt_vals v;
    int argc = words("sweep --kv-bits 16,4 --prefill-step 64,auto --concurrency 1,4", argv);
    cr_assert_eq(opt_parse(OPT_V_STRESS_SWEEP, argc, argv, &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v.v[OPT_KV_BITS].n, 2);
    cr_assert(v.v[OPT_KV_BITS].v[0] == 16 && v.v[OPT_KV_BITS].v[1] == 4);
    cr_assert_eq(v.v[OPT_CONCURRENCY].n, 2);

    argc = words("fixed --concurrency 1,4", argv);
    cr_assert_eq(opt_parse(OPT_V_STRESS_FIXED, argc, argv, &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "--concurrency: '1,4' is not valid, expected an integer in 1..64 "
                          "(K/M/G/T suffixes allowed)");
    argc = words("fixed --concurrency 4", argv);
    cr_assert_eq(opt_parse(OPT_V_STRESS_FIXED, argc, argv, &v, err, sizeof err), 0, "%s", err);
    cr_assert(opt_int(&v, OPT_CONCURRENCY) == 4 && v.v[OPT_CONCURRENCY].n == 0);

    argc = words("sweep --kv-bits 16,7 --prefill-step 64", argv);
    cr_assert_eq(opt_parse(OPT_V_STRESS_SWEEP, argc, argv, &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "--kv-bits: '16,7' is not valid, expected a comma-separated list of "
                          "at most 16 of: 32, 16, 8 or 4");
    char expected[256];
    opt_expected_for(OPT_KV_BITS, OPT_V_SERVE, expected, sizeof expected);
    cr_assert_str_eq(expected, "32, 16, 8 or 4");
}

/* verb's --help, in a malloc'ed string. */
static char *usage_of(opt_verb verb)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    opt_usage(verb, f);
    fclose(f);
    return text;
}

Test(opt_modes, help_lists_the_modes_and_no_default_of_a_required_flag)
{
    char *text = usage_of(OPT_V_STRESS);
    cr_assert(strstr(text, "usage: infertop stress MODE [OPTIONS]\n"), "%s", text);
    cr_assert(strstr(text, "modes:\n  growth     "), "%s", text);
    cr_assert(strstr(text, "\n  sweep      "), "%s", text);
    free(text);
    text = usage_of(OPT_V_CONSOLE);
    cr_assert(strstr(text, "usage: infertop [-c FILE]"), "%s", text);
    cr_assert(strstr(text, "verbs:\n  demo       "), "%s", text);
    cr_assert_null(strstr(text, "\n  growth"), "a mode of a verb is no verb");
    free(text);
    char help[512];
    opt_help_text(OPT_KV_BITS, OPT_V_STRESS_SWEEP, help, sizeof help);
    cr_assert_null(strstr(help, "default"), "%s", help);
    opt_help_text(OPT_KV_BITS, OPT_V_SERVE, help, sizeof help);
    cr_assert(strstr(help, "default 16"), "%s", help);
}
