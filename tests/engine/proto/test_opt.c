/* test_opt.c: the settings table's rows are consistent (defaults check,
 * no verb takes a flag twice, every flag has help and a verb), its parser
 * reads each type and words its errors as documented, values from JSON
 * are checked by the same rows, and a verb's --help lists exactly its
 * flags. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/opt.h"
#include "engine/proto/protocol.h"

/* ---- the rows ------------------------------------------------------------ */

Test(opt_table, every_default_checks)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        if (!d->def)
            continue;
        opt_value v = {0};
        char err[256] = "";
        cr_expect(opt_check_text((opt_id)id, d->def, &v, err, sizeof err) == 0,
                  "row %d (--%s): default '%s': %s", id, d->flag ? d->flag : "", d->def, err);
    }
}

Test(opt_table, no_verb_takes_a_flag_twice)
{
    for (int verb = 0; verb < OPT_V_COUNT; verb++)
        for (int a = 0; a < OPT_COUNT; a++)
            for (int b = a + 1; b < OPT_COUNT; b++) {
                const opt_def *x = &opt_defs[a], *y = &opt_defs[b];
                if (!(x->verbs & y->verbs & OPT_VB(verb)))
                    continue;
                cr_expect(!x->flag || !y->flag || strcmp(x->flag, y->flag) != 0,
                          "%s: rows %d and %d are both --%s", opt_verbs[verb].name, a, b, x->flag);
                cr_expect(!x->short_flag || x->short_flag != y->short_flag,
                          "%s: rows %d and %d are both -%c", opt_verbs[verb].name, a, b,
                          x->short_flag);
            }
}

Test(opt_table, every_flag_has_help_and_a_verb)
{
    for (int id = 0; id < OPT_COUNT; id++) {
        const opt_def *d = &opt_defs[id];
        cr_expect(d->flag || d->wire || d->key, "row %d has no flag, wire name or key", id);
        if (!d->flag)
            continue;
        cr_expect(d->help && d->help[0], "--%s has no help", d->flag);
        cr_expect(d->verbs != 0, "--%s belongs to no verb", d->flag);
        cr_expect((d->required & ~d->verbs) == 0, "--%s is required by a verb not taking it",
                  d->flag);
        cr_expect(d->verbs >> OPT_V_COUNT == 0, "--%s names a verb past the list", d->flag);
    }
}

Test(opt_table, every_verb_is_named)
{
    for (int verb = 0; verb < OPT_V_COUNT; verb++) {
        const opt_verb_def *v = &opt_verbs[verb];
        cr_expect(v->name && v->synopsis && v->summary && v->about, "verb %d lacks a text", verb);
    }
}

/* ---- parsing --------------------------------------------------------------- */

/* Parses the words of line (argv[0] the verb's name) for verb; err gets
 * the error, if any. */
static int parse(opt_verb verb, const char *line, opt_vals *v, char *err, size_t errlen)
{
    static char buf[1024];
    char *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    err[0] = '\0';
    return opt_parse(verb, argc, argv, v, err, errlen);
}

/* Asserts line fails with exactly the error want. */
static void refused(opt_verb verb, const char *line, const char *want)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(verb, line, &v, err, sizeof err), -1, "'%s' was taken", line);
    cr_assert_str_eq(err, want, "'%s'", line);
}

Test(opt_parse, defaults_when_not_given)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(OPT_V_SERVE, "serve", &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opt_int(&v, OPT_KV_BITS), 16);
    cr_assert_eq(opt_int(&v, OPT_PREFILL_STEP), 512);
    cr_assert_eq(opt_int(&v, OPT_MEM_LIMIT), 0, "the default 'auto' stands for 0");
    cr_assert_float_eq(opt_num(&v, OPT_STEP_TIMEOUT), 30.0, 1e-9);
    cr_assert_str_eq(opt_str(&v, OPT_CONTROL), "tcp://127.0.0.1:5555");
    cr_assert_null(opt_str(&v, OPT_NAME));
    cr_assert(!opt_given(&v, OPT_KV_BITS) && !opt_given(&v, OPT_CONTROL));
}

Test(opt_parse, repeatable_text_keeps_every_value)
{
    opt_vals v;
    char err[512];
    const char *names[4];
    cr_assert_eq(
        parse(OPT_V_SERVE, "serve --alias tiny --cors * --alias stories", &v, err, sizeof err), 0,
        "%s", err);
    cr_assert_eq(opt_texts(&v, OPT_ALIAS, names, 4), 2);
    cr_assert_str_eq(names[0], "tiny");
    cr_assert_str_eq(names[1], "stories");
    cr_assert_eq(opt_texts(&v, OPT_CORS, names, 4), 0, "only repeatable rows are kept");
    cr_assert_eq(parse(OPT_V_SERVE, "serve", &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opt_texts(&v, OPT_ALIAS, names, 4), 0);
    cr_assert_eq(opt_int(&v, OPT_MAX_BODY), 0, "--max-body auto stands for 0");
    cr_assert_eq(proto_max_body(1000), 1000 * PROTO_BODY_PER_TOKEN + PROTO_MAX_FRAME);
}

Test(opt_parse, int_with_suffix_and_word)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(OPT_V_SERVE, "serve --mem-limit 2G --max-ctx 200K --prefill-step auto", &v,
                       err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(opt_int(&v, OPT_MEM_LIMIT), 2ull << 30);
    cr_assert_eq(opt_int(&v, OPT_MAX_CTX), 200ull << 10);
    cr_assert_eq(opt_int(&v, OPT_PREFILL_STEP), PROTO_PREFILL_AUTO);
    cr_assert(opt_given(&v, OPT_MEM_LIMIT) && opt_given(&v, OPT_PREFILL_STEP));
    cr_assert_eq(parse(OPT_V_SERVE, "serve --mem-limit 1048576", &v, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(opt_int(&v, OPT_MEM_LIMIT), 1ull << 20, "the lower bound is in range");
    refused(OPT_V_SERVE, "serve --mem-limit 1048575",
            "--mem-limit: '1048575' is not valid, expected an integer in 1M..1024T (K/M/G/T "
            "suffixes allowed) or auto");
    refused(OPT_V_SERVE, "serve --max-seqs 65",
            "--max-seqs: '65' is not valid, expected an integer in 1..64 (K/M/G/T suffixes "
            "allowed)");
    refused(OPT_V_SERVE, "serve --max-seqs -1",
            "--max-seqs: '-1' is not valid, expected an integer in 1..64 (K/M/G/T suffixes "
            "allowed)");
    refused(OPT_V_SERVE, "serve --max-seqs 4x",
            "--max-seqs: '4x' is not valid, expected an integer in 1..64 (K/M/G/T suffixes "
            "allowed)");
    refused(OPT_V_GENERATE, "generate --prompt x --prefill-step auto",
            "--prefill-step: 'auto' is not valid, expected an integer in 1..65536 (K/M/G/T "
            "suffixes allowed)");
}

Test(opt_parse, int_choices)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(OPT_V_EVAL, "eval --kv-bits 8 --prompt x", &v, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(opt_int(&v, OPT_KV_BITS), 8);
    refused(OPT_V_EVAL, "eval --kv-bits 7", "--kv-bits: '7' is not valid, expected 32, 16, 8 or 4");
    refused(OPT_V_EVAL, "eval --kv-bits 64",
            "--kv-bits: '64' is not valid, expected 32, 16, 8 or 4");
}

Test(opt_parse, num_range)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(OPT_V_GENERATE, "generate --prompt x --top-p 1 --temperature 0.5", &v, err,
                       sizeof err),
                 0, "%s", err);
    cr_assert_float_eq(opt_num(&v, OPT_TOP_P), 1.0, 1e-12);
    cr_assert_float_eq(opt_num(&v, OPT_TEMPERATURE), 0.5, 1e-12);
    refused(OPT_V_GENERATE, "generate --prompt x --top-p 1.01",
            "--top-p: '1.01' is not valid, expected a number in 0..1");
    refused(OPT_V_GENERATE, "generate --prompt x --top-p nan",
            "--top-p: 'nan' is not valid, expected a number in 0..1");
    refused(OPT_V_SERVE, "serve --step-timeout 0.05",
            "--step-timeout: '0.05' is not valid, expected a number in 0.1..86400");
}

Test(opt_parse, layers)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(OPT_V_SERVE, "serve --layers 2:5", &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(opt_int(&v, OPT_LAYERS), 2);
    cr_assert_eq(v.v[OPT_LAYERS].i2, 5);
    const char *want = "--layers: '%s' is not valid, expected A:B with 0 <= A < B";
    static const char *const bad[] = {"5:2", "3:3", "-1:2", "1:2x", "1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char line[64], msg[128];
        snprintf(line, sizeof line, "serve --layers %s", bad[i]);
        snprintf(msg, sizeof msg, want, bad[i]);
        refused(OPT_V_SERVE, line, msg);
    }
}

Test(opt_parse, switches_and_text)
{
    opt_vals v;
    char err[512];
    cr_assert_eq(parse(OPT_V_TOKENIZE, "tokenize --prompt a --no-bos --json", &v, err, sizeof err),
                 0, "%s", err);
    cr_assert(opt_int(&v, OPT_NO_BOS) && opt_int(&v, OPT_TOKENS_JSON));
    cr_assert(!opt_int(&v, OPT_SPECIAL) && !opt_given(&v, OPT_SPECIAL));
    cr_assert_str_eq(opt_str(&v, OPT_PROMPT), "a");
    char line[256], name[PROTO_NAME_MAX + 2];
    memset(name, 'n', sizeof name - 1);
    name[PROTO_NAME_MAX] = '\0';
    snprintf(line, sizeof line, "serve --name %s", name);
    cr_assert_eq(parse(OPT_V_SERVE, line, &v, err, sizeof err), 0, "%s", err);
    name[PROTO_NAME_MAX] = 'n';
    name[PROTO_NAME_MAX + 1] = '\0';
    snprintf(line, sizeof line, "serve --name %s", name);
    opt_vals w;
    cr_assert_eq(parse(OPT_V_SERVE, line, &w, err, sizeof err), -1);
    cr_assert(strstr(err, "is not valid, expected 1..64 bytes"), "%s", err);
}

Test(opt_parse, errors_help_required_and_arguments)
{
    opt_vals v;
    char err[512];
    refused(OPT_V_GENERATE, "generate --prompt x --nope", "unknown option '--nope' (see --help)");
    refused(OPT_V_GENERATE, "generate --prompt x --layers 1:2",
            "unknown option '--layers' (see --help)");
    refused(OPT_V_GENERATE, "generate --prompt x --steps", "--steps needs a value");
    refused(OPT_V_GENERATE, "generate --steps 3", "missing --prompt TEXT");
    refused(OPT_V_QUANTIZE, "quantize --out x.gguf", "missing --type TYPE");
    refused(OPT_V_QUANTIZE, "quantize --type Q8_0", "missing --out FILE");
    refused(OPT_V_KEYGEN, "keygen extra", "unexpected argument 'extra'");
    cr_assert_eq(parse(OPT_V_GENERATE, "generate --help", &v, err, sizeof err), 1,
                 "--help before a missing required flag");
    cr_assert_eq(parse(OPT_V_SERVE, "serve -h", &v, err, sizeof err), 1);
}

Test(opt_parse, positional_words_up_to_the_limit)
{
    int verb = 0;
    while (verb < OPT_V_COUNT && opt_verbs[verb].nargs_max == 0)
        verb++;
    if (verb == OPT_V_COUNT)
        cr_skip_test("no verb takes words that are not options");
    /* The words it takes, required flags aside: they come from the table. */
    char line[512];
    int at = snprintf(line, sizeof line, "%s", opt_verbs[verb].name);
    for (int id = 0; id < OPT_COUNT; id++)
        if (opt_defs[id].required & OPT_VB(verb))
            at += snprintf(line + at, sizeof line - (size_t)at, " --%s %s", opt_defs[id].flag,
                           opt_defs[id].def ? opt_defs[id].def : "1");
    int max = opt_verbs[verb].nargs_max < 8 ? opt_verbs[verb].nargs_max : 8;
    for (int i = 0; i < max; i++)
        at += snprintf(line + at, sizeof line - (size_t)at, " w%d", i);
    opt_vals v;
    char err[512];
    cr_assert_eq(parse((opt_verb)verb, line, &v, err, sizeof err), 0, "%s: %s", line, err);
    cr_assert_eq(v.nargs, max);
    if (max == opt_verbs[verb].nargs_max) {
        snprintf(line + at, sizeof line - (size_t)at, " past");
        refused((opt_verb)verb, line, "unexpected argument 'past'");
    }
}

/* ---- types whose rows other parts of the table hold ------------------------- */

/* The first row of type t (and a list or not), or OPT_COUNT. */
static opt_id row_of(opt_type t, int list)
{
    for (int id = 0; id < OPT_COUNT; id++)
        if (opt_defs[id].type == t && !opt_defs[id].list == !list)
            return (opt_id)id;
    return OPT_COUNT;
}

Test(opt_check, choice)
{
    opt_id id = row_of(OPT_T_CHOICE, 0);
    if (id == OPT_COUNT)
        cr_skip_test("no CHOICE row");
    const char *choices = opt_defs[id].choices;
    size_t first = strcspn(choices, "|");
    const char *last = strrchr(choices, '|');
    char word[64], err[256];
    opt_value v = {0};
    snprintf(word, sizeof word, "%.*s", (int)first, choices);
    cr_assert_eq(opt_check_text(id, word, &v, err, sizeof err), 0, "%s: %s", word, err);
    cr_assert_eq(v.i, 0);
    cr_assert_not_null(last, "a choice of one");
    cr_assert_eq(opt_check_text(id, last + 1, &v, err, sizeof err), 0, "%s", err);
    int words = 1;
    for (const char *p = choices; *p; p++)
        words += *p == '|';
    cr_assert_eq(v.i, (unsigned long long)words - 1);
    /* A word's prefix is not the word. */
    snprintf(word, sizeof word, "%.*s", (int)first - 1, choices);
    cr_assert_eq(opt_check_text(id, word, &v, err, sizeof err), -1);
    cr_assert(strstr(err, " or ") && strncmp(err, "expected ", 9) == 0, "%s", err);
}

Test(opt_check, duration)
{
    opt_id id = row_of(OPT_T_DURATION, 0);
    if (id == OPT_COUNT)
        cr_skip_test("no DURATION row");
    const opt_def *d = &opt_defs[id];
    char text[64], err[256];
    opt_value v = {0};
    snprintf(text, sizeof text, "%gs", d->dhi);
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), 0, "%s: %s", text, err);
    cr_assert_float_eq(v.d, d->dhi, 1e-9);
    snprintf(text, sizeof text, "%gm", d->dhi / 60.0);
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), 0, "%s: %s", text, err);
    cr_assert_float_eq(v.d, d->dhi, 1e-6, "minutes are 60 s");
    snprintf(text, sizeof text, "%gh", d->dhi / 3600.0 * 2.0);
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), -1, "%s: past the range", text);
    cr_assert(strstr(err, "expected a duration in "), "%s", err);
    cr_assert_eq(opt_check_text(id, "5x", &v, err, sizeof err), -1);
}

Test(opt_check, list)
{
    opt_id id = OPT_COUNT;
    for (int k = 0; k < OPT_COUNT && id == OPT_COUNT; k++)
        if (opt_defs[k].list && opt_defs[k].def)
            id = (opt_id)k;
    if (id == OPT_COUNT)
        cr_skip_test("no list row with a default");
    /* The default, three times over, is a list of three. */
    const char *def = opt_defs[id].def;
    char text[512], err[256];
    opt_value one = {0}, v = {0};
    cr_assert_eq(opt_check_text(id, def, &one, err, sizeof err), 0, "%s", err);
    snprintf(text, sizeof text, "%s,%s,%s", def, def, def);
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), 0, "%s: %s", text, err);
    cr_assert_eq(v.n, one.n * 3);
    cr_assert_float_eq(v.v[v.n - 1], one.v[one.n - 1], 1e-9);
    snprintf(text, sizeof text, "%s,", def);
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), -1, "an empty item");
    cr_assert(strstr(err, "expected a comma-separated list of at most"), "%s", err);
    size_t at = 0;
    for (int i = 0; i <= OPT_LIST_MAX && at < sizeof text - 64; i++)
        at += (size_t)snprintf(text + at, sizeof text - at, "%s%s", i ? "," : "", def);
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), -1, "more than OPT_LIST_MAX");
}

/* ---- values from JSON ---------------------------------------------------------- */

/* opt_check_json of the value j (taken), the error in err. */
static int json_check(opt_id id, json_t *j, opt_value *v, char *err, size_t errlen)
{
    int rc = opt_check_json(id, j, v, err, errlen);
    json_decref(j);
    return rc;
}

Test(opt_check, json_int_and_word)
{
    opt_value v = {0};
    char err[256];
    cr_assert_eq(json_check(OPT_KV_BITS, json_integer(8), &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(v.i, 8);
    cr_assert(v.given);
    cr_assert_eq(json_check(OPT_KV_BITS, json_integer(7), &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected 32, 16, 8 or 4, got 7");
    cr_assert_eq(json_check(OPT_PREFILL_STEP, json_string("auto"), &v, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(v.i, PROTO_PREFILL_AUTO);
    cr_assert_eq(json_check(OPT_PREFILL_STEP, json_string("512"), &v, err, sizeof err), -1,
                 "a number as a string");
    cr_assert_eq(json_check(OPT_PREFILL_STEP, json_integer(-1), &v, err, sizeof err), -1);
    cr_assert_eq(
        json_check(OPT_PREFILL_STEP, json_integer(PROTO_PREFILL_STEP_MAX + 1), &v, err, sizeof err),
        -1);
    cr_assert_str_eq(err, "expected an integer in 1..65536 or \"auto\", got 65537");
    cr_assert_eq(json_check(OPT_PREFILL_STEP, json_real(2.0), &v, err, sizeof err), -1);
}

Test(opt_check, json_num_and_text)
{
    opt_value v = {0};
    char err[256];
    cr_assert_eq(json_check(OPT_TOP_P, json_real(0.25), &v, err, sizeof err), 0, "%s", err);
    cr_assert_float_eq(v.d, 0.25, 1e-12);
    cr_assert_eq(json_check(OPT_TOP_P, json_integer(1), &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(json_check(OPT_TOP_P, json_real(1.5), &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected a number in 0..1, got 1.5");
    cr_assert_eq(json_check(OPT_TOP_P, json_string("0.5"), &v, err, sizeof err), -1);
    json_t *name = json_string("n1"); /* v.s points into it */
    cr_assert_eq(opt_check_json(OPT_NAME, name, &v, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(v.s, "n1");
    json_decref(name);
    cr_assert_eq(json_check(OPT_NAME, json_string(""), &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected a string of 1..64 bytes, got \"\"");
    cr_assert_eq(json_check(OPT_NAME, json_integer(1), &v, err, sizeof err), -1);
}

/* ---- --help --------------------------------------------------------------------- */

/* The flags of verb's usage: the first word of each option line ("  -h,
 * --help" gives both). */
static int usage_flags(opt_verb verb, char flags[][48], int max)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opt_usage(verb, f);
    fclose(f);
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "  -", 3) != 0)
            continue;
        char *p = line + 2;
        if (p[1] != '-') { /* "-h, " first */
            cr_assert(n < max);
            snprintf(flags[n++], 48, "%.2s", p);
            p += 4;
        }
        cr_assert(n < max);
        snprintf(flags[n++], 48, "%.*s", (int)strcspn(p, " "), p);
    }
    free(text);
    return n;
}

static int listed(char flags[][48], int n, const char *flag)
{
    int times = 0;
    for (int i = 0; i < n; i++)
        times += strcmp(flags[i], flag) == 0;
    return times;
}

Test(opt_usage, lists_every_flag_of_the_verb_and_no_other)
{
    for (int verb = 0; verb < OPT_V_COUNT; verb++) {
        char flags[2 * OPT_COUNT][48];
        int n = usage_flags((opt_verb)verb, flags, 2 * OPT_COUNT);
        int want = 0;
        for (int id = 0; id < OPT_COUNT; id++) {
            const opt_def *d = &opt_defs[id];
            if (!d->flag || !(d->verbs & OPT_VB(verb)))
                continue;
            char flag[48];
            snprintf(flag, sizeof flag, "--%s", d->flag);
            cr_expect_eq(listed(flags, n, flag), 1, "%s --help lists %s once", opt_verbs[verb].name,
                         flag);
            want++;
            if (d->short_flag) {
                snprintf(flag, sizeof flag, "-%c", d->short_flag);
                cr_expect_eq(listed(flags, n, flag), 1, "%s --help lists %s once",
                             opt_verbs[verb].name, flag);
                want++;
            }
        }
        cr_expect_eq(n, want, "%s --help lists %d flags, the table %d", opt_verbs[verb].name, n,
                     want);
    }
}

Test(opt_usage, shows_range_default_and_required)
{
    char help[768];
    opt_help_text(OPT_MAX_SEQS, OPT_V_SERVE, help, sizeof help);
    cr_assert(strstr(help, "(1..64; default 16)"), "%s", help);
    opt_help_text(OPT_PROMPT, OPT_V_GENERATE, help, sizeof help);
    cr_assert(strstr(help, "(required)"), "%s", help);
    opt_help_text(OPT_PROMPT, OPT_V_EVAL, help, sizeof help);
    cr_assert(!strstr(help, "required"), "eval does not require --prompt: %s", help);
}

/* A value formatted by opt_format reads back the same by opt_check_text. */
static void round_trip(opt_id id, const char *text)
{
    opt_value v = {0}, back = {0};
    char err[256], buf[64];
    cr_assert_eq(opt_check_text(id, text, &v, err, sizeof err), 0, "%s: %s", text, err);
    opt_format(id, &v, buf, sizeof buf);
    cr_assert_eq(opt_check_text(id, buf, &back, err, sizeof err), 0, "%s: %s", buf, err);
    cr_assert_eq(back.i, v.i, "%s -> %s", text, buf);
    cr_assert_eq(back.i2, v.i2, "%s -> %s", text, buf);
}

Test(opt, format_reads_back)
{
    round_trip(OPT_PREFILL_STEP, "auto");
    round_trip(OPT_PREFILL_STEP, "300");
    round_trip(OPT_MEM_LIMIT, "24G");
    round_trip(OPT_KV_BITS, "8");
    round_trip(OPT_LAYERS, "3:7");
    round_trip(OPT_CF_ACCEPT_NEW, "off");
    opt_value v = {.i = 0};
    char buf[32];
    opt_format(OPT_PREFILL_STEP, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, "auto", "the word stands for its value");
    v.i = 1;
    opt_format(OPT_CF_ACCEPT_NEW, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, "no");
    v.s = "/a b";
    opt_format(OPT_MODEL, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, "/a b");
}

Test(opt, choices_and_range)
{
    unsigned long long bits[8];
    cr_assert_eq(opt_choices(OPT_KV_BITS, bits, 8), 4);
    cr_assert(bits[0] == 32 && bits[1] == 16 && bits[2] == 8 && bits[3] == 4);
    cr_assert_eq(opt_choices(OPT_KV_BITS, bits, 2), 2, "at most max");
    cr_assert_eq(opt_choices(OPT_THREADS, bits, 8), 0, "a range, not choices");
    char buf[128];
    opt_range(OPT_KV_BITS, buf, sizeof buf);
    cr_assert_str_eq(buf, "32, 16, 8 or 4");
    opt_range(OPT_PREFILL_STEP, buf, sizeof buf);
    cr_assert_str_eq(buf, "1..65536 or auto");
    opt_range(OPT_MODEL, buf, sizeof buf);
    cr_assert_str_eq(buf, "");
}

/* A text without an upper bound says what it needs, not "1..0 bytes". */
Test(opt, unbounded_text_expected)
{
    char buf[128], err[128];
    opt_value v = {0};
    opt_expected(OPT_CF_SSH, buf, sizeof buf);
    cr_assert_str_eq(buf, "a value that is not empty");
    cr_assert_eq(opt_check_text(OPT_CF_SSH, "", &v, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected a value that is not empty");
    opt_expected(OPT_MODEL, buf, sizeof buf);
    cr_assert_str_eq(buf, "any text");
}

/* Every cluster-file key is one row's, and none is given twice. */
Test(opt, cluster_keys_are_unique)
{
    for (int a = 0; a < OPT_COUNT; a++)
        for (int b = a + 1; b < OPT_COUNT && opt_defs[a].key; b++)
            cr_assert(!opt_defs[b].key || strcmp(opt_defs[a].key, opt_defs[b].key) != 0,
                      "key %s twice", opt_defs[a].key);
}
