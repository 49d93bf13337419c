/* opt.c: values checked against the settings table, and command lines
 * parsed by it (see opt.h). */
#include "opt.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonr.h"

/* ---- what a value must be ------------------------------------------- */

/* "a, b or c" from "a|b|c". */
static void choice_words(const char *choices, char *buf, size_t len)
{
    size_t at = 0, n = strlen(choices);
    buf[0] = '\0';
    for (size_t i = 0; i < n && at + 5 < len;) {
        size_t w = strcspn(choices + i, "|");
        int last = i + w >= n;
        const char *sep = i == 0 ? "" : last ? " or " : ", ";
        at += (size_t)snprintf(buf + at, len - at, "%s%.*s", sep, (int)w, choices + i);
        i += w + 1;
    }
}

/* A large v as typed most briefly: 1G rather than 1073741824 (small ones
 * stay as they are: 65536, not 64K). */
static void size_words(unsigned long long v, char *buf, size_t len)
{
    static const char *const units[] = {"", "K", "M", "G", "T"};
    int u = 0;
    while (u < 4 && (v >= (1u << 20) || u > 0) && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, "%llu%s", v, units[u]);
}

/* The bounds of a NUM row: "0..1", or "above 0 and at most 1". */
static void num_range(const opt_def *d, char *buf, size_t len)
{
    if (d->dlo_open)
        snprintf(buf, len, "above %.15g and at most %.15g", d->dlo, d->dhi);
    else
        snprintf(buf, len, "in %.15g..%.15g", d->dlo, d->dhi);
}

/* An INT row's listed values: "32, 16, 8 or 4". */
static void int_words(const opt_def *d, char *buf, size_t len)
{
    char words[256];
    size_t at = 0;
    words[0] = '\0';
    for (int k = 0; k < d->n_ints && at < sizeof words; k++)
        at += (size_t)snprintf(words + at, sizeof words - at, "%s%d", k ? "|" : "", d->ints[k]);
    choice_words(words, buf, len);
}

/* One value's kind, without the list wording; json: as a JSON value,
 * which takes no suffixes and quotes its words. */
static void expected_one(const opt_def *d, int json, char *buf, size_t len)
{
    char words[160];
    const char *q = json ? "\"" : "";
    switch (d->type) {
    case OPT_T_SWITCH:
        snprintf(buf, len, json ? "true or false" : "no value");
        return;
    case OPT_T_TEXT:
    case OPT_T_PATH:
    case OPT_T_DIR:
        if (d->hi == 0)
            snprintf(buf, len, d->lo > 0 ? "a value that is not empty" : "any text");
        else if (d->lo > 0)
            snprintf(buf, len, "%s%llu..%llu bytes%s", json ? "a string of " : "", d->lo, d->hi,
                     d->no_ctl ? " without control characters" : "");
        else
            snprintf(buf, len, "%sat most %llu bytes%s", json ? "a string of " : "", d->hi,
                     d->no_ctl ? " without control characters" : "");
        return;
    case OPT_T_INT:
        if (d->ints) {
            int_words(d, buf, len);
        } else if (json) {
            snprintf(buf, len, "an integer in %llu..%llu", d->lo, d->hi);
        } else {
            char lo[24], hi[24];
            size_words(d->lo, lo, sizeof lo);
            size_words(d->hi, hi, sizeof hi);
            snprintf(buf, len, "an integer in %s..%s (K/M/G/T suffixes allowed)", lo, hi);
        }
        if (d->word) {
            size_t at = strlen(buf);
            snprintf(buf + at, len - at, " or %s%s%s", q, d->word, q);
        }
        return;
    case OPT_T_NUM:
        num_range(d, words, sizeof words);
        snprintf(buf, len, "a number %s", words);
        return;
    case OPT_T_CHOICE:
        choice_words(d->choices, buf, len);
        return;
    case OPT_T_LAYERS:
        snprintf(buf, len, "A:B with 0 <= A < B");
        return;
    case OPT_T_DURATION:
        snprintf(buf, len, "a duration in %.15g..%.15g seconds (90, 90s, 15m, 2h)", d->dlo, d->dhi);
        return;
    }
}

static void expected(opt_id id, int list, int json, char *buf, size_t len)
{
    const opt_def *d = &opt_defs[id];
    if (!list) {
        expected_one(d, json, buf, len);
        return;
    }
    char one[192];
    expected_one(d, json, one, sizeof one);
    snprintf(buf, len, "a comma-separated list of at most %d of: %s", OPT_LIST_MAX, one);
}

/* Whether the row takes a list in verb (OPT_V_COUNT: in no verb in
 * particular). */
static int is_list(const opt_def *d, opt_verb verb)
{
    return d->list || (verb < OPT_V_COUNT && (d->list_verbs & OPT_VB(verb)));
}

void opt_expected(opt_id id, char *buf, size_t len)
{
    expected(id, opt_defs[id].list, 0, buf, len);
}

void opt_expected_for(opt_id id, opt_verb verb, char *buf, size_t len)
{
    expected(id, is_list(&opt_defs[id], verb), 0, buf, len);
}

/* ---- checking one value ----------------------------------------------- */

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

/* A whole number with an optional K/M/G/T suffix; -1 on anything else. */
static int parse_size(const char *text, size_t len, unsigned long long *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf || text[0] == '-' || text[0] == '+')
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno != 0 || end == buf)
        return -1;
    int shift = suffix_shift(*end);
    if (shift)
        end++;
    if (*end != '\0' || (v << shift) >> shift != v)
        return -1;
    *out = v << shift;
    return 0;
}

static int parse_real(const char *text, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno != 0 || end == buf || *end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* The index of word text[0..len) in "a|b|c", or -1. */
static int choice_index(const char *choices, const char *text, size_t len)
{
    int index = 0;
    for (const char *p = choices; *p; index++) {
        size_t w = strcspn(p, "|");
        if (w == len && strncmp(p, text, len) == 0)
            return index;
        p += w;
        if (*p == '|')
            p++;
    }
    return -1;
}

static int check_int(const opt_def *d, unsigned long long v)
{
    if (!d->ints)
        return v >= d->lo && v <= d->hi;
    for (int k = 0; k < d->n_ints; k++)
        if (v == (unsigned long long)d->ints[k])
            return 1;
    return 0;
}

static int num_ok(const opt_def *d, double v)
{
    return (d->dlo_open ? v > d->dlo : v >= d->dlo) && v <= d->dhi;
}

/* One value, text[0..len): its number in *num (INT, CHOICE), *real
 * (NUM, DURATION) or *i2 (LAYERS' end). 0, or -1 when not valid. */
static int check_one(const opt_def *d, const char *text, size_t len, unsigned long long *num,
                     unsigned long long *i2, double *real)
{
    switch (d->type) {
    case OPT_T_SWITCH:
        return -1;
    case OPT_T_TEXT:
    case OPT_T_PATH:
    case OPT_T_DIR:
        if (len < d->lo || (d->hi != 0 && len > d->hi) || memchr(text, '\0', len) != NULL)
            return -1;
        for (size_t i = 0; d->no_ctl && i < len; i++)
            if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
                return -1;
        return 0;
    case OPT_T_INT:
        if (d->word && strlen(d->word) == len && strncmp(text, d->word, len) == 0) {
            *num = d->word_value;
            return 0;
        }
        return parse_size(text, len, num) == 0 && check_int(d, *num) ? 0 : -1;
    case OPT_T_NUM:
        return parse_real(text, len, real) == 0 && num_ok(d, *real) ? 0 : -1;
    case OPT_T_CHOICE: {
        int k = choice_index(d->choices, text, len);
        *num = (unsigned long long)k;
        return k >= 0 ? 0 : -1;
    }
    case OPT_T_LAYERS: {
        char buf[48];
        int a, b, n;
        if (len >= sizeof buf)
            return -1;
        memcpy(buf, text, len);
        buf[len] = '\0';
        if (sscanf(buf, "%d:%d%n", &a, &b, &n) != 2 || buf[n] != '\0' || a < 0 || b <= a)
            return -1;
        *num = (unsigned long long)a;
        *i2 = (unsigned long long)b;
        return 0;
    }
    case OPT_T_DURATION: {
        double unit = 1.0;
        char last = len ? text[len - 1] : '\0';
        if (last == 's' || last == 'm' || last == 'h') {
            unit = last == 'm' ? 60.0 : last == 'h' ? 3600.0 : 1.0;
            len--;
        }
        if (parse_real(text, len, real) != 0)
            return -1;
        *real *= unit;
        return *real >= d->dlo && *real <= d->dhi ? 0 : -1;
    }
    }
    return -1;
}

static int bad_as(opt_id id, int list, char *err, size_t errlen)
{
    char words[256];
    expected(id, list, 0, words, sizeof words);
    snprintf(err, errlen, "expected %s", words);
    return -1;
}

/* opt_check_text, with the row's value a list or not. */
static int check_text(opt_id id, int list, const char *text, opt_value *out, char *err,
                      size_t errlen)
{
    const opt_def *d = &opt_defs[id];
    opt_value v = {.s = text};
    if (!list) {
        if (check_one(d, text, strlen(text), &v.i, &v.i2, &v.d) != 0)
            return bad_as(id, list, err, errlen);
    } else {
        for (const char *p = text;; p++) {
            size_t w = strcspn(p, ",");
            unsigned long long num = 0, i2 = 0;
            double real = 0.0;
            if (v.n == OPT_LIST_MAX || check_one(d, p, w, &num, &i2, &real) != 0)
                return bad_as(id, list, err, errlen);
            v.v[v.n++] = d->type == OPT_T_NUM || d->type == OPT_T_DURATION ? real : (double)num;
            if (v.n == 1)
                v.i = num, v.i2 = i2, v.d = real;
            p += w;
            if (*p == '\0')
                break;
        }
    }
    v.given = out->given;
    *out = v;
    return 0;
}

static opt_value default_of(opt_id id)
{
    opt_value v = {0};
    char err[8];
    if (opt_defs[id].def)
        check_text(id, 0, opt_defs[id].def, &v, err, sizeof err);
    return v;
}

unsigned long long opt_default_int(opt_id id)
{
    return default_of(id).i;
}

double opt_default_num(opt_id id)
{
    return default_of(id).d;
}

int opt_check_text(opt_id id, const char *text, opt_value *out, char *err, size_t errlen)
{
    return check_text(id, opt_defs[id].list, text, out, err, errlen);
}

/* A received string for a message: quoted, cut at a character boundary
 * (jansson has checked it is UTF-8), control characters as '?'. */
static void got_string(const char *s, size_t n, char *buf, size_t len)
{
    size_t cut = n < len - 6 ? n : len - 6;
    while (cut < n && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    buf[0] = '"';
    for (size_t i = 0; i < cut; i++)
        buf[i + 1] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    snprintf(buf + cut + 1, len - cut - 1, "%s\"", cut < n ? "..." : "");
}

/* The received value for a message: a number as it came, a string
 * quoted and cut, else its type. */
static void got_words(const json_t *v, char *buf, size_t len)
{
    if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, len, "%.15g", json_real_value(v));
    else if (json_is_string(v))
        got_string(json_string_value(v), json_string_length(v), buf, len);
    else
        snprintf(buf, len, "%s", jr_type(v));
}

static opt_json_rc bad_json(opt_id id, opt_json_rc rc, const json_t *v, char *err, size_t errlen)
{
    char want[256], got[40];
    expected(id, 0, 1, want, sizeof want); /* JSON values are never lists */
    got_words(v, got, sizeof got);
    snprintf(err, errlen, "expected %s, got %s", want, got);
    return rc;
}

/* Whether v is of a JSON type the row takes: a number for INT (or a
 * string for its word), NUM and DURATION, a boolean for SWITCH, else a
 * string (text, choices and layers are checked as typed). */
static int json_type_ok(const opt_def *d, const json_t *v)
{
    switch (d->type) {
    case OPT_T_INT:
        return json_is_integer(v) || (d->word && json_is_string(v));
    case OPT_T_NUM:
    case OPT_T_DURATION:
        return json_is_number(v);
    case OPT_T_SWITCH:
        return json_is_boolean(v);
    default:
        return json_is_string(v);
    }
}

opt_json_rc opt_read_json(opt_id id, const struct json_t *value, opt_value *out, char *err,
                          size_t errlen)
{
    const opt_def *d = &opt_defs[id];
    opt_value v = {.given = 1};
    if (!json_type_ok(d, value))
        return bad_json(id, OPT_JSON_BAD_TYPE, value, err, errlen);
    int ok = 1;
    switch (d->type) {
    case OPT_T_INT:
        if (json_is_string(value)) {
            ok = strcmp(json_string_value(value), d->word) == 0;
            v.i = d->word_value;
        } else {
            ok = json_integer_value(value) >= 0 &&
                 check_int(d, (unsigned long long)json_integer_value(value));
            v.i = (unsigned long long)json_integer_value(value);
        }
        break;
    case OPT_T_NUM:
    case OPT_T_DURATION:
        v.d = json_number_value(value);
        ok = num_ok(d, v.d);
        break;
    case OPT_T_SWITCH:
        v.i = json_is_true(value);
        break;
    default:
        v.s = json_string_value(value);
        ok = check_one(d, v.s, json_string_length(value), &v.i, &v.i2, &v.d) == 0;
        break;
    }
    if (!ok)
        return bad_json(id, OPT_JSON_BAD_VALUE, value, err, errlen);
    *out = v;
    return OPT_JSON_OK;
}

int opt_check_json(opt_id id, const struct json_t *value, opt_value *out, char *err, size_t errlen)
{
    return opt_read_json(id, value, out, err, errlen) == OPT_JSON_OK ? 0 : -1;
}

void opt_format(opt_id id, const opt_value *v, char *buf, size_t len)
{
    const opt_def *d = &opt_defs[id];
    switch (d->type) {
    case OPT_T_SWITCH: /* a switch has no value */
        if (len)
            buf[0] = '\0';
        return;
    case OPT_T_INT:
        if (d->word && v->i == d->word_value)
            snprintf(buf, len, "%s", d->word);
        else
            snprintf(buf, len, "%llu", v->i);
        return;
    case OPT_T_NUM:
    case OPT_T_DURATION:
        snprintf(buf, len, "%.17g", v->d);
        return;
    case OPT_T_CHOICE: {
        const char *p = d->choices;
        for (unsigned long long k = 0; k < v->i && *p; k++)
            p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|');
        snprintf(buf, len, "%.*s", (int)strcspn(p, "|"), p);
        return;
    }
    case OPT_T_LAYERS:
        snprintf(buf, len, "%llu:%llu", v->i, v->i2);
        return;
    case OPT_T_TEXT:
    case OPT_T_PATH:
    case OPT_T_DIR:
        snprintf(buf, len, "%s", v->s ? v->s : "");
        return;
    }
}

int opt_choices(opt_id id, unsigned long long *out, int max)
{
    const opt_def *d = &opt_defs[id];
    int n = 0;
    if (d->type != OPT_T_INT || !d->ints)
        return 0;
    for (; n < d->n_ints && n < max; n++)
        out[n] = (unsigned long long)d->ints[n];
    return n;
}

/* ---- command lines ---------------------------------------------------- */

/* getopt_long's value for a row: above every character. */
#define VAL(id) (256 + (int)(id))

static const char *flag_of(int val)
{
    return val >= 256 && val < VAL(OPT_COUNT) ? opt_defs[val - 256].flag : "?";
}

/* getopt_long's tables for the rows verb takes. */
static void getopt_tables(opt_verb verb, struct option *longs, char *shorts)
{
    int n = 0, ns = 0;
    shorts[ns++] = ':'; /* a missing value is told from an unknown flag */
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if (!d->flag || !(d->verbs & OPT_VB(verb)))
            continue;
        longs[n++] = (struct option){
            d->flag, d->type == OPT_T_SWITCH ? no_argument : required_argument, NULL, VAL(id)};
        if (d->short_flag) {
            shorts[ns++] = d->short_flag;
            if (d->type != OPT_T_SWITCH)
                shorts[ns++] = ':';
        }
    }
    longs[n] = (struct option){0};
    shorts[ns] = '\0';
}

/* The row of getopt_long's answer val: a long flag's, or the short flag's
 * among the rows verb takes. */
static opt_id row_of(opt_verb verb, int val)
{
    if (val >= 256)
        return (opt_id)(val - 256);
    for (int k = 0; k < OPT_COUNT; k++)
        if (opt_defs[k].short_flag == val && (opt_defs[k].verbs & OPT_VB(verb)))
            return (opt_id)k;
    return OPT_COUNT;
}

/* One flag and its value (optarg) into out. */
static int take_flag(opt_verb verb, opt_id id, opt_vals *out, char *err, size_t errlen)
{
    opt_value *v = &out->v[id];
    v->given = 1;
    if (opt_defs[id].type == OPT_T_SWITCH) {
        v->i = 1;
        return 0;
    }
    if (check_text(id, is_list(&opt_defs[id], verb), optarg, v, err, errlen) == 0) {
        if (!opt_defs[id].repeat)
            return 0;
        if (out->n_repeated < OPT_LIST_MAX) {
            out->repeated[out->n_repeated].id = id;
            out->repeated[out->n_repeated++].s = v->s;
            return 0;
        }
        snprintf(err, errlen, "--%s: given more than %d times", opt_defs[id].flag, OPT_LIST_MAX);
        return -1;
    }
    char why[320];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "--%s: '%s' is not valid, %s", opt_defs[id].flag, optarg, why);
    return -1;
}

/* What was not given: an error for a required flag, else its default. */
static int take_defaults(opt_verb verb, opt_vals *out, char *err, size_t errlen)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if (!(d->verbs & OPT_VB(verb)) || out->v[id].given)
            continue;
        if (d->required & OPT_VB(verb)) {
            snprintf(err, errlen, "missing --%s %s", d->flag, d->arg ? d->arg : "");
            return -1;
        }
        /* A default that does not check is a bug of the table: its
         * test (tests/engine/proto/test_opt.c) checks them all. */
        if (d->def &&
            check_text((opt_id)id, is_list(d, verb), d->def, &out->v[id], err, errlen) != 0)
            return -1;
    }
    return 0;
}

int opt_texts(const opt_vals *v, opt_id id, const char **out, int max)
{
    int n = 0;
    for (int k = 0; k < v->n_repeated && n < max; k++)
        if (v->repeated[k].id == id)
            out[n++] = v->repeated[k].s;
    return n;
}

int opt_parse(opt_verb verb, int argc, char **argv, opt_vals *out, char *err, size_t errlen)
{
    struct option longs[OPT_COUNT + 1];
    char shorts[2 * OPT_COUNT + 2];
    getopt_tables(verb, longs, shorts);
    memset(out, 0, sizeof *out);
    out->verb = verb;
    optind = 0; /* glibc: restart scanning from scratch */
    opterr = 0;
    for (int val; (val = getopt_long(argc, argv, shorts, longs, NULL)) != -1;) {
        opt_id id = row_of(verb, val);
        if (val == ':')
            snprintf(err, errlen, "%s%s needs a value", optopt >= 256 ? "--" : "-",
                     optopt >= 256 ? flag_of(optopt) : (char[]){(char)optopt, 0});
        else if (val == '?')
            snprintf(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
        if (val == ':' || val == '?')
            return -1;
        if (id == OPT_HELP)
            return 1;
        if (take_flag(verb, id, out, err, errlen) != 0)
            return -1;
    }
    for (; optind < argc; optind++) {
        if (out->nargs == OPT_ARGS_MAX || out->nargs == opt_verbs[verb].nargs_max) {
            snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
            return -1;
        }
        out->args[out->nargs++] = argv[optind];
    }
    return take_defaults(verb, out, err, errlen);
}

/* ---- verbs with modes -------------------------------------------------- */

/* Whether a flag of the verbs in mask named arg ("--db", "-c", not
 * "--db=x") takes its value from the next word. */
static int takes_next(unsigned long long mask, const char *arg)
{
    if (arg[1] != '-')
        for (int id = 0; arg[1] && !arg[2] && id < OPT_COUNT; id++) {
            const opt_def *d = &opt_defs[id];
            if ((d->verbs & mask) && d->short_flag == arg[1])
                return d->type != OPT_T_SWITCH;
        }
    for (int id = 0; arg[1] == '-' && id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if ((d->verbs & mask) && d->flag && strcmp(d->flag, arg + 2) == 0)
            return d->type != OPT_T_SWITCH;
    }
    return 0;
}

int opt_first_word(unsigned long long mask, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return argc;
        if (argv[i][0] != '-' || argv[i][1] == '\0')
            return i;
        i += takes_next(mask, argv[i]);
    }
    return argc;
}

unsigned long long opt_prog_verbs(opt_prog prog)
{
    unsigned long long mask = 0;
    for (int v = 0; v < OPT_V_COUNT; v++)
        if (opt_verbs[v].prog == prog)
            mask |= OPT_VB(v);
    return mask;
}

const char *opt_mode_word(opt_verb verb, opt_verb mode)
{
    const opt_verb_def *p = &opt_verbs[verb], *m = &opt_verbs[mode];
    size_t n = strlen(p->name);
    if (mode == verb || m->prog != p->prog)
        return NULL;
    if (n == 0)
        return strchr(m->name, ' ') ? NULL : m->name;
    return strncmp(m->name, p->name, n) == 0 && m->name[n] == ' ' ? m->name + n + 1 : NULL;
}

int opt_has_modes(opt_verb verb)
{
    for (int m = 0; m < OPT_V_COUNT; m++)
        if (opt_mode_word(verb, (opt_verb)m))
            return 1;
    return 0;
}

void opt_mode_words(opt_verb verb, char *buf, size_t len)
{
    char choices[512] = "";
    size_t at = 0;
    for (int m = 0; m < OPT_V_COUNT; m++) {
        const char *w = opt_mode_word(verb, (opt_verb)m);
        if (w && at < sizeof choices)
            at += (size_t)snprintf(choices + at, sizeof choices - at, "%s%s", at ? "|" : "", w);
    }
    choice_words(choices, buf, len);
}

opt_verb opt_mode(opt_verb verb, int *argc, char **argv, char *err, size_t errlen)
{
    int at = opt_first_word(OPT_VB(verb), *argc, argv);
    if (at == *argc)
        return verb;
    for (int m = 0; m < OPT_V_COUNT; m++) {
        const char *w = opt_mode_word(verb, (opt_verb)m);
        if (w && strcmp(w, argv[at]) == 0) {
            memmove(argv + at, argv + at + 1, (size_t)(*argc - at - 1) * sizeof *argv);
            (*argc)--;
            return (opt_verb)m;
        }
    }
    char words[256];
    opt_mode_words(verb, words, sizeof words);
    snprintf(err, errlen, "unknown mode '%s': expected %s", argv[at], words);
    return OPT_V_COUNT;
}
