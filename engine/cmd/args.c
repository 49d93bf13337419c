/* args.c: option parsing shared by inferd's verbs (see args.h). */
#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kvcache.h"

static const char *flag_name(const args_spec *s, int opt)
{
    for (const struct option *o = s->options; o->name; o++)
        if (o->val == opt)
            return o->name;
    return "?";
}

int args_bad(const args_spec *s, int opt, const char *text, const char *expected)
{
    fprintf(stderr, "inferd %s: --%s: '%s' is not valid, expected %s\n", s->verb, flag_name(s, opt),
            text, expected);
    return -1;
}

int args_parse(const args_spec *s, int argc, char **argv, void *ctx)
{
    optind = 0; /* glibc: restart scanning from scratch */
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", s->options, NULL)) != -1) {
        if (opt == s->help || opt == 'h') {
            s->usage(stdout);
            return 1;
        }
        if (opt == ':') {
            fprintf(stderr, "inferd %s: --%s needs a value\n", s->verb, flag_name(s, optopt));
            return -1;
        }
        if (opt == '?') {
            fprintf(stderr, "inferd %s: unknown option '%s' (see --help)\n", s->verb,
                    argv[optind - 1]);
            return -1;
        }
        if (s->take(ctx, opt, optarg) != 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "inferd %s: unexpected argument '%s'\n", s->verb, argv[optind]);
        return -1;
    }
    return 0;
}

static int suffix_shift(char c)
{
    switch (c) {
    case 'k':
    case 'K':
        return 10;
    case 'm':
    case 'M':
        return 20;
    case 'g':
    case 'G':
        return 30;
    case 't':
    case 'T':
        return 40;
    }
    return 0;
}

int args_size(const args_spec *s, int opt, const char *text, unsigned long long min,
              unsigned long long max, unsigned long long *out)
{
    char expected[96];
    snprintf(expected, sizeof expected, "an integer in %llu..%llu (K/M/G/T suffixes allowed)", min,
             max);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || text[0] == '-')
        return args_bad(s, opt, text, expected);
    int shift = suffix_shift(*end);
    if (shift)
        end++;
    if (*end != '\0' || (v << shift) >> shift != v)
        return args_bad(s, opt, text, expected);
    v <<= shift;
    if (v < min || v > max)
        return args_bad(s, opt, text, expected);
    *out = v;
    return 0;
}

int args_int(const args_spec *s, int opt, const char *text, int min, int max, int *out)
{
    unsigned long long v;
    if (args_size(s, opt, text, (unsigned long long)min, (unsigned long long)max, &v) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

int args_kv_bits(const args_spec *s, int opt, const char *text, int *out)
{
    int bits;
    if (args_int(s, opt, text, 4, 32, &bits) != 0)
        return -1;
    if (!kv_bits_valid(bits))
        return args_bad(s, opt, text, "32, 16, 8 or 4");
    *out = bits;
    return 0;
}

int args_default_threads(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (int)cpus : 1;
}

int args_double(const args_spec *s, int opt, const char *text, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(v >= min && v <= max)) {
        char expected[64];
        snprintf(expected, sizeof expected, "a number in %g..%g", min, max);
        return args_bad(s, opt, text, expected);
    }
    *out = v;
    return 0;
}
