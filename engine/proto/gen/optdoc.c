/* optdoc: writes the parts of the man pages that the settings table
 * (engine/proto/opt.h) knows, at build time, so that no flag, range,
 * default or help is typed twice.
 *
 *   optdoc man PROG < PAGE.in > PAGE
 *
 * copies the page, replacing a line "@VERBS@" with a subsection per verb
 * of PROG (inferd or infertop): its usage, its paragraph, its options as
 * --help shows them, and its notes. */
#include <stdio.h>
#include <string.h>

#include "engine/proto/opt.h"

/* Text as roff reads it literally: backslashes and hyphens escaped, and a
 * line that would start with a control character protected. */
static void roff(FILE *out, const char *text)
{
    int bol = 1;
    for (const char *p = text; *p; p++) {
        if (bol && (*p == '.' || *p == '\''))
            fputs("\\&", out);
        bol = *p == '\n';
        if (*p == '\\')
            fputs("\\e", out);
        else if (*p == '-')
            fputs("\\-", out);
        else
            fputc(*p, out);
    }
}

static void verb_section(FILE *out, opt_verb verb)
{
    const opt_verb_def *v = &opt_verbs[verb];
    const char *prog = v->prog == OPT_INFERD ? "inferd" : "infertop";
    fprintf(out, ".SS %s %s\n.nf\n", prog, v->name);
    roff(out, prog);
    fputc(' ', out);
    roff(out, v->name);
    fputc(' ', out);
    roff(out, v->synopsis);
    fputs("\n.fi\n.PP\n", out);
    roff(out, v->about);
    fputc('\n', out);
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if (!d->flag || !(d->verbs & OPT_VB(verb)) || id == OPT_HELP)
            continue;
        /* .BI: the flag bold, its value's name italic, as man pages do. */
        fputs(d->arg ? ".TP\n.BI \"" : ".TP\n.B \"", out);
        if (d->short_flag)
            fprintf(out, "\\-%c, ", d->short_flag);
        fputs("\\-\\-", out);
        roff(out, d->flag);
        fputc('"', out);
        if (d->arg) {
            fputs(" \" ", out);
            roff(out, d->arg);
            fputc('"', out);
        }
        fputc('\n', out);
        char help[768];
        opt_help_text((opt_id)id, verb, help, sizeof help);
        roff(out, help);
        fputc('\n', out);
    }
    if (v->notes) {
        fputs(".PP\n", out);
        roff(out, v->notes);
        fputc('\n', out);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "man") != 0 ||
        (strcmp(argv[2], "inferd") != 0 && strcmp(argv[2], "infertop") != 0)) {
        fprintf(stderr, "usage: optdoc man inferd|infertop < PAGE.in > PAGE\n");
        return 2;
    }
    opt_prog prog = strcmp(argv[2], "inferd") == 0 ? OPT_INFERD : OPT_INFERTOP;
    char line[4096];
    int replaced = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (strcmp(line, "@VERBS@\n") != 0) {
            fputs(line, stdout);
            continue;
        }
        for (int v = 0; v < OPT_V_COUNT; v++)
            if (opt_verbs[v].prog == prog)
                verb_section(stdout, (opt_verb)v);
        replaced = 1;
    }
    if (!replaced) {
        fprintf(stderr, "optdoc: the page has no @VERBS@ line\n");
        return 1;
    }
    return ferror(stdout) ? 1 : 0;
}
