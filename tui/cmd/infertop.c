/* infertop.c: main() of the console. `infertop VERB ...` runs a verb from
 * the table below; each verb parses its own arguments and returns an exit
 * code from cli.h. Options given before the verb (`infertop -c FILE
 * status`) are handed to it as if given after. Without a verb (or with
 * options only), the dashboard opens on the cluster file. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "demo.h"
#include "engine/proto/version.h"
#include "tui/cli/cli.h"

typedef struct verb {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the verb */
} verb;

static const verb verbs[] = {
    {"demo", "start a local ring of inferd stages with a load and watch it", demo_main},
    {"status", "one snapshot of every node of the cluster", cli_status},
    {"set", "change prefill_step / kv_bits live, wait until applied", cli_set},
    {"nodes", "start, stop, restart, status, logs, facts, exec over SSH; command lines", cli_nodes},
    {"stress", "stress runs (growth, fixed, soak, sweep) recorded to the history", cli_stress},
    {"history", "query the run history: list, show, compare, best, export, prune", cli_history},
    {"metrics", "serve the cluster's merged Prometheus metrics over HTTP", cli_metrics},
    {"plan", "place layers so a target context fits every node's memory; apply it", cli_plan},
};

/* Options before the verb that take a value. */
static int takes_value(const char *opt)
{
    return strcmp(opt, "-c") == 0 || strcmp(opt, "--config") == 0 || strcmp(opt, "--db") == 0;
}

/* Where the verb is when options come first ("-c FILE status ..."): its
 * index, or 0 when the words before it are not all options. */
static int verb_after_options(int argc, char **argv)
{
    int i = 1;
    while (i < argc && argv[i][0] == '-')
        i += takes_value(argv[i]) ? 2 : 1;
    return i < argc && i > 1 ? i : 0;
}

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

static void usage(FILE *out)
{
    fputs("usage: infertop [--help] [--version] [OPTIONS] VERB [ARGS...]\n"
          "       infertop [-c FILE] [--no-color] [--ascii] [--readonly]   (the dashboard)\n"
          "\nOPTIONS before the verb (-c FILE, --db PATH, ...) are the verb's own, as if\n"
          "given after its arguments.\n"
          "\nverbs:\n",
          out);
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fputs("\n`infertop VERB --help` describes a verb.\n"
          "\nexit codes: 0 ok, 1 failed (a node, the database or output), 2 bad command\n"
          "line (unknown verb or option, bad date or number), 3 no such run or node,\n"
          "4 database cannot be opened (unwritable path, not a database, newer schema),\n"
          "5 a stress run recorded a failed request or leg, 130 interrupted (Ctrl-C)\n",
          out);
}

int main(int argc, char **argv)
{
    int at = verb_after_options(argc, argv);
    if (at)
        verb_first(argc, argv, at);
    /* No verb: the dashboard, which takes its own options. */
    if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "--help") != 0 &&
                     strcmp(argv[1], "-h") != 0 && strcmp(argv[1], "--version") != 0))
        return app_main(argc, argv);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        puts("infertop " INFERD_VERSION);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (strcmp(argv[1], verbs[i].name) == 0)
            return verbs[i].run(argc - 1, argv + 1);
    fprintf(stderr, "infertop: unknown verb \"%s\" (see infertop --help)\n", argv[1]);
    return CLI_USAGE;
}
