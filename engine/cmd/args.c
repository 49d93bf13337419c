/* args.c: option parsing shared by inferd's verbs (see args.h). */
#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/sys/kvbits.h"

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
    char choices[KV_BITS_CHOICES_MAX];
    if (args_int(s, opt, text, kv_bits_all[KV_BITS_N - 1], kv_bits_all[0], &bits) != 0)
        return -1;
    if (!kv_bits_valid(bits))
        return args_bad(s, opt, text, kv_bits_choices(choices, sizeof choices, ", ", " or "));
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

/* Appends the file's bytes to text, ended by a newline and a NUL so that
 * its words never run into the next file's. */
static int read_flag_file(const args_spec *s, const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "inferd %s: --flags %s: %s\n", s->verb, path, strerror(errno));
        return -1;
    }
    char *grown = realloc(*text, ARGS_FLAGS_MAX + 2);
    if (!grown) {
        fclose(f);
        fprintf(stderr, "inferd %s: out of memory\n", s->verb);
        return -1;
    }
    *text = grown;
    /* One byte more than fits tells a file too large. */
    size_t room = *len < ARGS_FLAGS_MAX ? ARGS_FLAGS_MAX - *len : 0;
    size_t n = fread(grown + *len, 1, room + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > room) {
        fprintf(stderr, "inferd %s: --flags %s: %s\n", s->verb, path,
                bad ? "cannot read it" : "flag files are limited to 64 KiB");
        return -1;
    }
    *len += n;
    grown[(*len)++] = '\n';
    grown[(*len)++] = '\0';
    return 0;
}

/* Cuts text[from..) into words in place, appending them to argv. */
static int split_words(char *text, size_t from, char ***argv, int *argc)
{
    char *p = text + from;
    while (*p) {
        if (*p == '#') {
            p += strcspn(p, "\n");
            continue;
        }
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            *p++ = '\0';
            continue;
        }
        char **grown = realloc(*argv, (size_t)(*argc + 2) * sizeof *grown);
        if (!grown)
            return -1;
        *argv = grown;
        (*argv)[(*argc)++] = p;
        p += strcspn(p, " \t\n\r#");
    }
    return 0;
}

int args_expand_flags(const args_spec *s, int argc, char **argv, args_argv *out)
{
    memset(out, 0, sizeof *out);
    size_t len = 0;
    /* First the files (text may move while it grows), then the words. */
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--flags") == 0 && read_flag_file(s, argv[++i], &out->text, &len))
            goto fail;
    size_t at = 0;
    for (int i = 0; i < argc; i++) {
        int file = i > 0 && i + 1 < argc && strcmp(argv[i], "--flags") == 0;
        if (file) {
            size_t start = at;
            at += strlen(out->text + at) + 1;
            if (split_words(out->text, start, &out->argv, &out->argc) != 0)
                goto oom;
            i++;
            continue;
        }
        char **grown = realloc(out->argv, (size_t)(out->argc + 2) * sizeof *grown);
        if (!grown)
            goto oom;
        out->argv = grown;
        out->argv[out->argc++] = argv[i];
    }
    out->argv[out->argc] = NULL;
    return 0;
oom:
    fprintf(stderr, "inferd %s: out of memory\n", s->verb);
fail:
    args_argv_free(out);
    return -1;
}

void args_argv_free(args_argv *a)
{
    free(a->argv);
    free(a->text);
    memset(a, 0, sizeof *a);
}
