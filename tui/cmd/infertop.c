/* infertop.c: main() of the console. `infertop VERB ...` runs a verb from
 * the table below; each verb parses its own arguments and returns an exit
 * code from cli.h. Options given before the verb (`infertop -c FILE
 * status`) are handed to it as if given after. Without a verb (or with
 * options only), the dashboard opens on the cluster file. The verbs, their
 * flags and their --help are the settings table's (engine/proto/opt.h). */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "demo.h"
#include "engine/proto/opt.h"
#include "engine/proto/version.h"
#include "tui/cli/cli.h"
#include "tui/core/cluster.h"

/* Each verb of the settings table's (opt.h) and what runs it; argv[0] is
 * the verb. */
static const struct {
    opt_verb verb;
    int (*run)(int argc, char **argv);
} verbs[] = {
    {OPT_V_DEMO, demo_main},      {OPT_V_STATUS, cli_status}, {OPT_V_SET, cli_set},
    {OPT_V_NODES, cli_nodes},     {OPT_V_STRESS, cli_stress}, {OPT_V_HISTORY, cli_history},
    {OPT_V_METRICS, cli_metrics}, {OPT_V_PLAN, cli_plan},
};

/* Puts the verb at argv[at] first and the options before it after the
 * verb's own arguments (before a "--", whose words are a command's): a
 * verb's sub-command stays right after it. */
static void verb_first(int argc, char **argv, int at)
{
    char *opts[argc];
    int n_opts = at - 1;
    memcpy(opts, argv + 1, (size_t)n_opts * sizeof *argv);
    int end = at + 1;
    while (end < argc && strcmp(argv[end], "--") != 0)
        end++;
    argv[1] = argv[at];
    memmove(argv + 2, argv + at + 1, (size_t)(end - at - 1) * sizeof *argv);
    memcpy(argv + 2 + (end - at - 1), opts, (size_t)n_opts * sizeof *argv);
}

/* Without a verb: the dashboard, --help or --version. */
static int console(int argc, char **argv)
{
    opt_vals v;
    int rc = cli_parse(OPT_V_CONSOLE, argc, argv, &v);
    if (rc >= 0)
        return rc;
    if (opt_given(&v, OPT_VERSION)) {
        puts("infertop " INFERD_VERSION);
        return CLI_OK;
    }
    /* No cluster file at all: a first contact, told how to get one. */
    char path[CLUSTER_PATH_MAX], err[1024];
    if (cluster_locate(opt_str(&v, OPT_CONFIG), path, sizeof path, err, sizeof err) != 0)
        return demo_offer(err);
    return app_main(&v);
}

int main(int argc, char **argv)
{
    /* Options before the verb (`infertop -c FILE status`) are the verb's. */
    int at = opt_first_word(opt_prog_verbs(OPT_INFERTOP), argc, argv);
    if (at == argc)
        return console(argc, argv);
    if (at > 1)
        verb_first(argc, argv, at);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strcmp(argv[1], opt_verbs[verbs[i].verb].name) == 0)
            return verbs[i].run(argc - 1, argv + 1);
    fprintf(stderr, "infertop: unknown verb \"%s\" (see infertop --help)\n", argv[1]);
    return CLI_USAGE;
}
