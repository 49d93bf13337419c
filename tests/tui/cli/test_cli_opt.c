/* test_cli_opt.c: the console's stress form starts from the stress verb's
 * defaults, and the verbs' command lines parse by the settings table. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>

#include "run.h"
#include "tui/cli/cli.h"
#include "tui/stress/stress.h"

/* The value row id's default (as typed in the table) stands for. */
static unsigned long long def_of(opt_id id)
{
    opt_value v = {0};
    char err[256];
    cr_assert_not_null(opt_defs[id].def, "row %d has no default", id);
    cr_assert_eq(opt_check_text(id, opt_defs[id].def, &v, err, sizeof err), 0, "%s", err);
    return v.i;
}

Test(cli_opt, stress_defaults_are_the_runners)
{
    stress_opts o;
    stress_opts_init(&o);
    cr_assert_eq(def_of(OPT_FROM), (unsigned long long)o.from);
    cr_assert_eq(def_of(OPT_GEN), (unsigned long long)o.gen);
    cr_assert_eq(def_of(OPT_REQUESTS), (unsigned long long)o.requests);
    cr_assert_eq(def_of(OPT_PROMPT_TOKENS), (unsigned long long)o.prompt_tokens);
    cr_assert_eq(def_of(OPT_STRESS_SEED), o.seed);
    cr_assert_eq(def_of(OPT_CONCURRENCY), (unsigned long long)o.concurrency[0]);
}

Test(cli_opt, a_flag_of_another_mode_is_refused, .init = cr_redirect_stderr)
{
    cr_assert_eq(
        cli_test_run(cli_stress, (const char *[]){"stress", "growth", "--requests", "4", NULL}),
        CLI_USAGE);
    cr_assert_eq(cli_test_run(cli_stress, (const char *[]){"stress", "sweep", "--kv-bits", "16",
                                                           "--prefill-step", "64", "--to", "128",
                                                           "--requests", "4", NULL}),
                 CLI_USAGE);
    cr_assert_eq(
        cli_test_run(cli_nodes, (const char *[]){"nodes", "start", "all", "-n", "5", NULL}),
        CLI_USAGE);
    cr_assert_eq(
        cli_test_run(cli_history, (const char *[]){"history", "show", "--vacuum", "1", NULL}),
        CLI_USAGE);
    fflush(stderr);
}

Test(cli_opt, a_missing_mode_names_the_modes, .init = cr_redirect_stderr)
{
    cr_assert_eq(cli_test_run(cli_history, (const char *[]){"history", "--json", NULL}), CLI_USAGE);
    fflush(stderr);
    cr_assert_stderr_eq_str("infertop history: expected a mode: list, show, compare, best, export "
                            "or prune (see infertop history --help)\n");
}
