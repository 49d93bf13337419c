/* cli_args.c: argument helpers the headless verbs share (see cli.h). */
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *verb, const char *fmt, const char *arg)
{
    const char *sep = verb[0] ? " " : "";
    fprintf(stderr, "infertop%s%s: ", sep, verb);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see infertop%s%s --help)\n", sep, verb);
    return CLI_USAGE;
}

int cli_parse(opt_verb verb, int argc, char **argv, opt_vals *v)
{
    char err[512] = "";
    char *words[argc + 1];
    memcpy(words, argv, (size_t)argc * sizeof *argv);
    words[argc] = NULL;
    /* infertop's verbs are its modes, but infertop without one is the
     * dashboard (main looks for a verb first). */
    int modes = opt_verbs[verb].name[0] && opt_has_modes(verb);
    opt_verb mode = modes ? opt_mode(verb, &argc, words, err, sizeof err) : verb;
    int rc = mode == OPT_V_COUNT ? -1 : opt_parse(mode, argc, words, v, err, sizeof err);
    if (rc == 1) {
        opt_usage(mode, stdout);
        return CLI_OK;
    }
    if (rc == 0 && mode == verb && modes) {
        char modes[256];
        opt_mode_words(verb, modes, sizeof modes);
        snprintf(err, sizeof err, "expected a mode: %s", modes);
        rc = -1;
    }
    /* opt_parse's own pointer to --help gives way to the verb's. */
    char *see = strstr(err, " (see --help)");
    if (see)
        *see = '\0';
    return rc == 0 ? -1 : cli_usage_error(opt_verbs[verb].name, "%s", err);
}
