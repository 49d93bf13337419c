/* knobline.c: the start line's rewrite (knobline.h). The line is read
 * into words that remember where they were written; the rewrite is a
 * list of edits of those places, applied to the original text, so that
 * what no edit touches is copied as it was. */
#include "knobline.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shellword.h"
#include "tui/engine/eng_knob.h"

/* A flag and its value, or an assignment: the longest text an edit puts. */
#define EDIT_TEXT_MAX 96
/* Edits of one rewrite: a flag written many times gets one each. */
#define EDITS_MAX 64

struct word {
    size_t from, to;  /* where it is written in the line */
    const char *text; /* unquoted */
};

struct edit {
    size_t from, to; /* the text replaced; from == to: an insertion */
    char text[EDIT_TEXT_MAX];
};

struct line {
    const char *s;
    struct word *w;
    int n;
    struct edit e[EDITS_MAX];
    int n_edits;
};

static int edit(struct line *l, size_t from, size_t to, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int edit(struct line *l, size_t from, size_t to, const char *fmt, ...)
{
    if (l->n_edits == EDITS_MAX)
        return -1;
    struct edit *e = &l->e[l->n_edits++];
    e->from = from;
    e->to = to;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    return 0;
}

/* Where the last word ends: a flag added goes there. */
static size_t line_end(const struct line *l)
{
    return l->n ? l->w[l->n - 1].to : strlen(l->s);
}

/* The spelling of the slot's flag `word` is, with *value NULL for
 * `--flag` and the text after `=` for `--flag=V`; NULL when it is none. */
static const char *spelling(const struct eng_knob_slot *slot, const char *word, const char **value)
{
    for (int k = 0; k < ENG_KNOB_SPELLINGS && slot->names[k]; k++) {
        size_t len = strlen(slot->names[k]);
        if (strncmp(word, slot->names[k], len) != 0 || (word[len] && word[len] != '='))
            continue;
        *value = word[len] ? word + len + 1 : NULL;
        return slot->names[k];
    }
    return NULL;
}

/* A flag's value is the next word, unless that is another flag. */
static int has_value(const struct line *l, int i)
{
    return i + 1 < l->n && l->w[i + 1].text[0] != '-';
}

/* Every occurrence of the flag gets `value`, or is removed with its value
 * (value NULL); a missing flag is added at the end. */
static int set_flag(struct line *l, const struct eng_knob_slot *slot, const char *value)
{
    int found = 0, rc = 0;
    for (int i = 1; i < l->n; i++) {
        const char *eq, *name = spelling(slot, l->w[i].text, &eq);
        if (!name)
            continue;
        found = 1;
        int valued = !eq && has_value(l, i);
        const struct word *last = &l->w[valued ? i + 1 : i];
        if (!value)
            rc |= edit(l, l->w[i - 1].to, last->to, "%s", "");
        else if (eq)
            rc |= edit(l, l->w[i].from, l->w[i].to, "%s=%s", name, value);
        else if (valued)
            rc |= edit(l, last->from, last->to, "%s", value);
        else
            rc |= edit(l, last->to, last->to, " %s", value);
        i += valued;
    }
    if (!found && value)
        rc |= edit(l, line_end(l), line_end(l), " %s %s", slot->names[0], value);
    return rc;
}

/* Go's strconv.ParseBool, which Ollama reads its switches with. */
static int truthy(const char *v)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (strcmp(v, yes[i]) == 0)
            return 1;
    return 0;
}

/* The variable set to `value` where the line assigns it before its
 * command (after a leading `env` too), else in front of the line. With
 * keep_true an assignment that already turns the switch on stays. */
static int set_env(struct line *l, const char *var, const char *value, int keep_true)
{
    size_t len = strlen(var);
    int found = 0, rc = 0;
    for (int i = 0; i < l->n; i++) {
        const char *w = l->w[i].text;
        if (i == 0 && strcmp(w, "env") == 0)
            continue;
        if (!shellword_assignment(w))
            break;
        if (strncmp(w, var, len) != 0 || w[len] != '=')
            continue;
        found = 1;
        if (!keep_true || !truthy(w + len + 1))
            rc |= edit(l, l->w[i].from, l->w[i].to, "%s=%s", var, value);
    }
    if (!found)
        rc |= edit(l, l->n ? l->w[0].from : 0, l->n ? l->w[0].from : 0, "%s=%s ", var, value);
    return rc;
}

/* The switch a quantized cache needs, turned on unless it is: a flag is
 * added when missing, and its value (newer llama-server builds write
 * `-fa on|off|auto`) set to on when it has one. Once on, it stays on when
 * the cache goes back to f16: turning it off is the operator's choice. */
static int switch_on(struct line *l, const struct eng_knob_slot *slot, const char *on)
{
    static const char *const modes[] = {"on", "off", "auto"};
    if (slot->env)
        return set_env(l, slot->names[0], on, 1);
    int found = 0, rc = 0;
    for (int i = 1; i < l->n; i++) {
        const char *eq, *name = spelling(slot, l->w[i].text, &eq);
        if (!name)
            continue;
        found = 1;
        const struct word *v = eq || i + 1 == l->n ? NULL : &l->w[i + 1];
        const char *mode = eq ? eq : v ? v->text : "";
        for (size_t m = 1; m < sizeof modes / sizeof modes[0]; m++) {
            if (strcmp(mode, modes[m]) != 0)
                continue;
            if (eq)
                rc |= edit(l, l->w[i].from, l->w[i].to, "%s=on", name);
            else
                rc |= edit(l, v->from, v->to, "on");
        }
    }
    if (!found)
        rc |= edit(l, line_end(l), line_end(l), " %s", slot->names[0]);
    return rc;
}

/* Sets the knob's text in one slot. */
static int put(struct line *l, const struct eng_knob_slot *slot, const char *value)
{
    return slot->env ? set_env(l, slot->names[0], value, 0) : set_flag(l, slot, value);
}

/* Reads the words of s; -1 when a quote is not closed. */
static int split(struct line *l, char *texts, size_t textlen)
{
    const char *p = l->s, *start;
    size_t used = 0;
    int rc;
    while ((rc = shellword_next(&p, texts + used, textlen - used, &start)) == 1) {
        l->w[l->n] = (struct word){(size_t)(start - l->s), (size_t)(p - l->s), texts + used};
        used += strlen(texts + used) + 1;
        l->n++;
    }
    return rc;
}

static int by_place(const void *a, const void *b)
{
    const struct edit *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    if (x->to != y->to)
        return x->to < y->to ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The line with the edits applied, to out. */
static int apply(struct line *l, char *out, size_t outlen)
{
    size_t at = 0, pos = 0;
    qsort(l->e, (size_t)l->n_edits, sizeof l->e[0], by_place);
    for (int i = 0; i <= l->n_edits; i++) {
        const struct edit *e = i < l->n_edits ? &l->e[i] : NULL;
        size_t upto = e ? e->from : strlen(l->s);
        if (upto < pos)
            return -1; /* overlapping edits: not made by the code above */
        int n = snprintf(out + at, outlen - at, "%.*s%s", (int)(upto - pos), l->s + pos,
                         e ? e->text : "");
        if (n < 0 || (size_t)n >= outlen - at)
            return -1;
        at += (size_t)n;
        pos = e ? e->to : upto;
    }
    return 0;
}

int knobline_rewrite(eng_kind k, const char *start, const proto_set_args *want, char *out,
                     size_t outlen, char *err, size_t errlen)
{
    const struct eng_knobs *t = eng_knobs_of(k);
    if (eng_knob_check(k, want, err, errlen) != 0)
        return -1;
    if (t->mode == ENG_KNOB_NONE || !t->kv[0].names[0]) {
        snprintf(err, errlen, "%s takes kv_bits and prefill_step live: its start line stays",
                 eng_name(k));
        return -1;
    }
    size_t len = strlen(start);
    /* A word is at least a character and a space: at most len / 2 + 1. */
    struct line l = {.s = start, .w = calloc(len / 2 + 1, sizeof *l.w)};
    char *texts = malloc(len + 1);
    int rc = -1;
    if (!l.w || !texts) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (split(&l, texts, len + 1) != 0) {
        snprintf(err, errlen, "its start line has a quote that is not closed");
        goto done;
    }
    if (l.n == 0) {
        snprintf(err, errlen, "its start line is empty");
        goto done;
    }
    int bad = 0;
    if (want->has_kv_bits) {
        const struct eng_kv_choice *c = eng_knob_kv_choice(k, want->kv_bits);
        for (int s = 0; s < 2 && t->kv[s].names[0]; s++)
            bad |= put(&l, &t->kv[s], c->text);
        if (c->quantized && t->fa.names[0])
            bad |= switch_on(&l, &t->fa, t->fa_on);
    }
    if (want->has_prefill_step) {
        char n[16];
        snprintf(n, sizeof n, "%d", want->prefill_step);
        bad |= set_flag(&l, &t->step, want->prefill_step == PROTO_PREFILL_AUTO ? NULL : n);
    }
    if (bad || apply(&l, out, outlen) != 0) {
        snprintf(err, errlen, "the rewritten start line is longer than %zu bytes", outlen - 1);
        goto done;
    }
    rc = 0;
done:
    free(l.w);
    free(texts);
    return rc;
}
