/* optdoc: writes what the settings table (engine/proto/opt.h) knows into
 * the man pages and the shell completions, at build time, so that no flag,
 * range, choice, default or help is typed twice.
 *
 *   optdoc man PROG < PAGE.in > PAGE
 *       copies the page, replacing a line "@VERBS@" with a subsection per
 *       verb of PROG (inferd or infertop): its usage, its paragraph, its
 *       options as --help shows them, and its notes.
 *   optdoc complete < SCRIPT.in > SCRIPT
 *       copies a completion script, replacing a line "@TABLE@" with shell
 *       assignments of the rows it completes from (see table_rows).
 *   optdoc list
 *       "PROG|VERB|--FLAG" for each flag of each verb: what tests/e2e/kit.sh
 *       expects to find in --help, the man page and the completion. */
#include <stdio.h>
#include <string.h>

#include "engine/proto/opt.h"

static const char *prog_name(opt_prog prog)
{
    return prog == OPT_INFERD ? "inferd" : "infertop";
}

/* n bytes of text as roff reads them literally: backslashes and hyphens
 * escaped, and a line that would start with a control character
 * protected. */
static void roff_n(FILE *out, const char *text, size_t n)
{
    int bol = 1;
    for (const char *p = text; p < text + n; p++) {
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

static void roff(FILE *out, const char *text)
{
    roff_n(out, text, strlen(text));
}

/* A paragraph of --help (about, notes), written for a terminal: roff fills
 * its lines, but keeps an indented line (an example) a line of its own,
 * and an empty line starts a paragraph. */
static void paragraph(FILE *out, const char *text)
{
    fputs(".PP\n", out);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n == 0)
            fputs(".PP", out);
        roff_n(out, p, n);
        fputs(*p == ' ' ? "\n.br\n" : "\n", out);
        p += n + (p[n] == '\n');
    }
}

/* The synopsis: --help's continuation lines are indented past its
 * "usage: ", which the man page does not write. */
static void synopsis(FILE *out, const char *text)
{
    static const size_t usage = sizeof "usage: " - 1;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n"), skip = 0;
        if (p != text)
            while (skip < usage && p[skip] == ' ')
                skip++;
        roff_n(out, p + skip, n - skip);
        p += n;
        if (*p == '\n') {
            fputc('\n', out);
            p++;
        }
    }
}

static void verb_section(FILE *out, opt_verb verb)
{
    const opt_verb_def *v = &opt_verbs[verb];
    const char *prog = prog_name(v->prog);
    /* The verb named "" is the program without a verb (the dashboard). */
    const char *sp = v->name[0] ? " " : "";
    fprintf(out, ".SS %s%s%s\n.nf\n", prog, sp, v->name);
    roff(out, prog);
    fputs(sp, out);
    roff(out, v->name);
    fputc(' ', out);
    synopsis(out, v->synopsis);
    fputs("\n.fi\n", out);
    paragraph(out, v->about);
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
    if (v->notes)
        paragraph(out, v->notes);
}

/* What a flag's value is to a completion: nothing (a switch), a file, a
 * directory, or text it cannot guess. */
static const char *value_kind(const opt_def *d)
{
    switch (d->type) {
    case OPT_T_SWITCH:
        return "";
    case OPT_T_PATH:
        return "file";
    case OPT_T_DIR:
        return "dir";
    default:
        return "text";
    }
}

/* The values a completion offers for a flag, separated by spaces: its
 * choices, an INT's listed values, or an INT's word and its default. */
static void value_words(FILE *out, const opt_def *d)
{
    if (d->choices) {
        for (const char *p = d->choices; *p; p++)
            fputc(*p == '|' ? ' ' : *p, out);
    } else if (d->ints) {
        for (int k = 0; k < d->n_ints; k++)
            fprintf(out, "%s%d", k ? " " : "", d->ints[k]);
    } else if (d->word) {
        fputs(d->word, out);
        if (d->def && strcmp(d->def, d->word) != 0)
            fprintf(out, " %s", d->def);
    }
}

/* One line per flag of each verb: "PROG|VERB|--FLAG" and, with full,
 * "|-S|VALUE|WORDS" (its short flag, value_kind, value_words). VERB is ""
 * for the program without a verb, "stress growth" for a mode. */
static void table_rows(FILE *out, int full)
{
    for (int v = 0; v < OPT_V_COUNT; v++)
        for (int id = 0; id < OPT_COUNT; id++) {
            const opt_def *d = &opt_defs[id];
            if (!d->flag || !(d->verbs & OPT_VB(v)))
                continue;
            fprintf(out, "%s|%s|--%s", prog_name(opt_verbs[v].prog), opt_verbs[v].name, d->flag);
            if (full) {
                fprintf(out, "|%s%.*s|%s|", d->short_flag ? "-" : "", d->short_flag ? 1 : 0,
                        &d->short_flag, value_kind(d));
                value_words(out, d);
            }
            fputc('\n', out);
        }
}

static void man_verbs(FILE *out, opt_prog prog)
{
    for (int v = 0; v < OPT_V_COUNT; v++)
        if (opt_verbs[v].prog == prog)
            verb_section(out, (opt_verb)v);
}

/* The completions' data, for both programs: the rows, and the settings
 * `infertop set` takes (the rows that are both a flag and a field of
 * requests: the live settings). Single-quoted, which no name or word of
 * the table holds. */
static void complete_table(FILE *out, opt_prog prog)
{
    (void)prog;
    fputs("# Written by optdoc from the settings table (engine/proto/opt_table.c).\n"
          "_infertop_table='\n",
          out);
    table_rows(out, 1);
    fputs("'\n_infertop_settings='", out);
    const char *sep = "";
    for (int id = 0; id < OPT_COUNT; id++)
        if (opt_defs[id].live) {
            fprintf(out, "%s%s", sep, opt_defs[id].wire);
            sep = " ";
        }
    fputs("'\n", out);
}

/* Copies in to out, replacing the line marker with what emit writes;
 * -1 with err when the input has no such line. */
static int fill(FILE *in, FILE *out, const char *marker, void (*emit)(FILE *, opt_prog),
                opt_prog prog, char *err, size_t errlen)
{
    char line[4096];
    int replaced = 0;
    size_t n = strlen(marker);
    while (fgets(line, sizeof line, in)) {
        if (strncmp(line, marker, n) != 0 || strcmp(line + n, "\n") != 0) {
            fputs(line, out);
            continue;
        }
        emit(out, prog);
        replaced = 1;
    }
    if (!replaced) {
        snprintf(err, errlen, "the input has no %s line", marker);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[128];
    int rc = 0;
    if (argc == 3 && strcmp(argv[1], "man") == 0 &&
        (strcmp(argv[2], "inferd") == 0 || strcmp(argv[2], "infertop") == 0)) {
        opt_prog prog = strcmp(argv[2], "inferd") == 0 ? OPT_INFERD : OPT_INFERTOP;
        rc = fill(stdin, stdout, "@VERBS@", man_verbs, prog, err, sizeof err);
    } else if (argc == 2 && strcmp(argv[1], "complete") == 0) {
        rc = fill(stdin, stdout, "@TABLE@", complete_table, OPT_INFERD, err, sizeof err);
    } else if (argc == 2 && strcmp(argv[1], "list") == 0) {
        table_rows(stdout, 0);
    } else {
        fprintf(stderr, "usage: optdoc man inferd|infertop < PAGE.in > PAGE\n"
                        "       optdoc complete < SCRIPT.in > SCRIPT\n"
                        "       optdoc list\n");
        return 2;
    }
    if (rc != 0)
        fprintf(stderr, "optdoc: %s\n", err);
    return rc != 0 || ferror(stdout) ? 1 : 0;
}
