/* inferd: the inference node. main() only dispatches to a verb. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "engine/compute/blas.h"
#include "engine/proto/opt.h"
#include "engine/proto/version.h"

/* Each verb's run function; its name and summary are opt_verbs[]'. */
static int (*const runs[OPT_V_COUNT])(int argc, char **argv) = {
    [OPT_V_GENERATE] = cmd_generate, [OPT_V_SERVE] = cmd_serve,       [OPT_V_EVAL] = cmd_eval,
    [OPT_V_TOKENIZE] = cmd_tokenize, [OPT_V_QUANTIZE] = cmd_quantize, [OPT_V_KEYGEN] = cmd_keygen,
    [OPT_V_QUALITY] = cmd_quality,
};

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd VERB [OPTIONS]   (inferd VERB --help for its options)\n\n"
                 "verbs:\n");
    for (int i = 0; i < OPT_V_COUNT; i++)
        if (opt_verbs[i].prog == OPT_INFERD)
            fprintf(out, "  %-10s %s\n", opt_verbs[i].name, opt_verbs[i].summary);
    fprintf(out, "\n  --help     this text\n  --version  print the version\n");
}

int main(int argc, char **argv)
{
    blas_select_core(argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("inferd %s\n", INFERD_VERSION);
        return 0;
    }
    for (int i = 0; i < OPT_V_COUNT; i++)
        if (opt_verbs[i].prog == OPT_INFERD && strcmp(argv[1], opt_verbs[i].name) == 0)
            return runs[i](argc - 1, argv + 1);
    fprintf(stderr, "inferd: unknown verb '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
