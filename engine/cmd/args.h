/* args.h: the command lines of inferd's verbs.
 *
 * The flags, their checks and their help come from the settings table
 * (engine/proto/opt.h); this adds what every verb does around it: the
 * "inferd VERB: " prefix of errors, --help on stdout, and flag files. */
#ifndef ARGS_H
#define ARGS_H

#include "engine/proto/opt.h"

/* Parses argv (argv[0] is the verb) into *v. Returns 0 to go on, 1 when
 * --help was printed, -1 after printing a usage error. */
int args_parse(opt_verb verb, int argc, char **argv, opt_vals *v);

/* --threads, or the online CPUs when not given. */
int args_threads(const opt_vals *v);

/* A command line with every `--flags FILE` replaced by the flags the file
 * holds: whitespace-separated words, '#' to the end of a line a comment, no
 * quoting (a systemd unit keeps a node's flags in such a file). */
typedef struct args_argv {
    int argc;
    char **argv;
    char *text; /* the files' words, which argv points into */
} args_argv;

#define ARGS_FLAGS_MAX (64 * 1024) /* bytes of flag files, all together */

/* Returns 0 with *out filled (args_argv_free it, after the last use of an
 * option's value), or -1 after printing why (unreadable or too large). */
int args_expand_flags(opt_verb verb, int argc, char **argv, args_argv *out);
void args_argv_free(args_argv *a);

#endif
