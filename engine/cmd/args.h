/* args.h: the command lines of inferd's verbs.
 *
 * Every verb parses long options the same way and words its errors the same
 * way ("inferd VERB: --FLAG: 'TEXT' is not valid, expected ..."), so that
 * scripts and operators see one style. A verb describes itself with an
 * args_spec and hands each option to its own callback.
 */
#ifndef ARGS_H
#define ARGS_H

#include <getopt.h>
#include <stdio.h>

typedef struct args_spec {
    const char *verb;             /* "generate", "serve" */
    const struct option *options; /* getopt_long table, NULL-terminated */
    int help;                     /* the value of the --help option */
    void (*usage)(FILE *out);
    /* Takes one option; returns 0, or -1 after printing why (args_bad). */
    int (*take)(void *ctx, int opt, const char *arg);
} args_spec;

/* Runs getopt_long over argv. Returns 0 to go on, 1 when --help was
 * printed, -1 after printing a usage error (unknown option, missing value,
 * stray argument, or a value the callback refused). */
int args_parse(const args_spec *s, int argc, char **argv, void *ctx);

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
int args_expand_flags(const args_spec *s, int argc, char **argv, args_argv *out);
void args_argv_free(args_argv *a);

/* Prints "inferd VERB: --FLAG: 'TEXT' is not valid, expected EXPECTED";
 * returns -1. */
int args_bad(const args_spec *s, int opt, const char *text, const char *expected);

/* An integer in [min, max]; a K, M, G or T suffix multiplies by powers of
 * 1024 (so "--mem-limit 2G" and "--max-ctx 200K" read naturally). */
int args_size(const args_spec *s, int opt, const char *text, unsigned long long min,
              unsigned long long max, unsigned long long *out);
/* The same for an int; min >= 0. */
int args_int(const args_spec *s, int opt, const char *text, int min, int max, int *out);

/* A KV cache precision: 32, 16, 8 or 4. */
int args_kv_bits(const args_spec *s, int opt, const char *text, int *out);

/* The default thread count: the online CPUs. */
int args_default_threads(void);

/* A decimal number in [min, max]. */
int args_double(const args_spec *s, int opt, const char *text, double min, double max, double *out);

#endif
