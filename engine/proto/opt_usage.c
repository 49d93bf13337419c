/* opt_usage.c: --help text from the settings table (see opt.h). */
#include <string.h>

#include "opt.h"

/* Help lines are wrapped to this width, the text in a column after the
 * flags, as the usage texts of GNU tools are. */
#define WIDTH 79
#define TEXT_COL 23

/* What a value of id must be, briefly, as verb takes it (a list or one
 * value; OPT_V_COUNT: one); "" for text without bounds. */
static void range_for(opt_id id, opt_verb verb, char *buf, size_t len)
{
    const opt_def *d = &opt_defs[id];
    buf[0] = '\0';
    if (d->type == OPT_T_INT || d->type == OPT_T_NUM || d->type == OPT_T_CHOICE ||
        d->type == OPT_T_DURATION || (d->type == OPT_T_TEXT && d->hi > 0))
        opt_expected_for(id, verb, buf, len);
    /* The integer wording names suffixes; help keeps it short. */
    char *suffixes = strstr(buf, " (K/M/G/T suffixes allowed)");
    if (suffixes)
        memmove(suffixes, suffixes + 27, strlen(suffixes + 27) + 1);
    if (strncmp(buf, "an integer in ", 14) == 0)
        memmove(buf, buf + 14, strlen(buf + 14) + 1);
    if (strncmp(buf, "a number in ", 12) == 0)
        memmove(buf, buf + 12, strlen(buf + 12) + 1);
}

void opt_range(opt_id id, char *buf, size_t len)
{
    range_for(id, OPT_V_COUNT, buf, len); /* no verb: one value */
}

void opt_help_text(opt_id id, opt_verb verb, char *buf, size_t len)
{
    const opt_def *d = &opt_defs[id];
    char range[256];
    range_for(id, verb, range, sizeof range);
    char def[160] = "";
    int required = (d->required & OPT_VB(verb)) != 0;
    if (required)
        ; /* a default it never takes */
    else if (d->def)
        snprintf(def, sizeof def, "default %s", d->def);
    else if (d->def_doc)
        snprintf(def, sizeof def, "default: %s", d->def_doc);
    const char *sep = range[0] && def[0] ? "; " : "";
    if (!range[0] && !def[0] && !required)
        snprintf(buf, len, "%s", d->help);
    else
        snprintf(buf, len, "%s (%s%s%s%s%s)", d->help, required ? "required" : "",
                 required && range[0] ? ", " : "", range, sep, def);
}

/* Writes text from column col, wrapped at WIDTH, later lines indented
 * to TEXT_COL. */
static void wrap(FILE *out, const char *text, int col)
{
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (p != text && col + 1 + (int)word > WIDTH) {
            fprintf(out, "\n%*s", TEXT_COL, "");
            col = TEXT_COL;
        } else if (p != text) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

/* The verb's modes with their summaries: "verbs:" of the program, "modes:"
 * of a verb. */
static void modes(opt_verb verb, FILE *out)
{
    if (!opt_has_modes(verb))
        return;
    fprintf(out, "%s:\n", opt_verbs[verb].name[0] ? "modes" : "verbs");
    for (int m = 0; m < OPT_V_COUNT; m++) {
        const char *word = opt_mode_word(verb, (opt_verb)m);
        if (word)
            fprintf(out, "  %-10s %s\n", word, opt_verbs[m].summary);
    }
    fputc('\n', out);
}

void opt_usage(opt_verb verb, FILE *out)
{
    const opt_verb_def *v = &opt_verbs[verb];
    fprintf(out, "usage: %s%s%s %s\n\n", v->prog == OPT_INFERD ? "inferd" : "infertop",
            v->name[0] ? " " : "", v->name, v->synopsis);
    fprintf(out, "%s\n\n", v->about);
    modes(verb, out);
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if (!d->flag || !(d->verbs & OPT_VB(verb)))
            continue;
        char head[96], help[768];
        int col = snprintf(head, sizeof head, "  %s%.*s%s--%s%s%s", d->short_flag ? "-" : "",
                           d->short_flag ? 1 : 0, &d->short_flag, d->short_flag ? ", " : "",
                           d->flag, d->arg ? " " : "", d->arg ? d->arg : "");
        /* The help starts in its column, or two spaces after a long flag. */
        int pad = col < TEXT_COL - 1 ? TEXT_COL - col : 2;
        fprintf(out, "%s%*s", head, pad, "");
        opt_help_text((opt_id)id, verb, help, sizeof help);
        wrap(out, help, col + pad);
    }
    if (v->notes)
        fprintf(out, "\n%s\n", v->notes);
}
