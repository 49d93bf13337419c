/* args.c: option parsing shared by inferd's verbs (see args.h). */
#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int args_parse(opt_verb verb, int argc, char **argv, opt_vals *v)
{
    char err[512];
    int rc = opt_parse(verb, argc, argv, v, err, sizeof err);
    if (rc > 0)
        opt_usage(verb, stdout);
    else if (rc < 0)
        fprintf(stderr, "inferd %s: %s\n", opt_verbs[verb].name, err);
    return rc;
}

int args_threads(const opt_vals *v)
{
    if (opt_given(v, OPT_THREADS))
        return (int)opt_int(v, OPT_THREADS);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (int)cpus : 1;
}

/* Appends the file's bytes to text, ended by a newline and a NUL so that
 * its words never run into the next file's. */
static int read_flag_file(const char *verb, const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "inferd %s: --flags %s: %s\n", verb, path, strerror(errno));
        return -1;
    }
    char *grown = realloc(*text, ARGS_FLAGS_MAX + 2);
    if (!grown) {
        fclose(f);
        fprintf(stderr, "inferd %s: out of memory\n", verb);
        return -1;
    }
    *text = grown;
    /* One byte more than fits tells a file too large. */
    size_t room = *len < ARGS_FLAGS_MAX ? ARGS_FLAGS_MAX - *len : 0;
    size_t n = fread(grown + *len, 1, room + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > room) {
        fprintf(stderr, "inferd %s: --flags %s: %s\n", verb, path,
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

int args_expand_flags(opt_verb v, int argc, char **argv, args_argv *out)
{
    memset(out, 0, sizeof *out);
    size_t len = 0;
    /* First the files (text may move while it grows), then the words. */
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--flags") == 0 &&
            read_flag_file(opt_verbs[v].name, argv[++i], &out->text, &len))
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
    fprintf(stderr, "inferd %s: out of memory\n", opt_verbs[v].name);
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
