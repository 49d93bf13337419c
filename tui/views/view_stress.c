/* view_stress.c: set up a stress run, start it, watch it, abort it.
 *
 * The form holds the headless verb's options with the runner's defaults
 * (stress_opts_init); j/k moves, Enter edits a field (mode, sweep legs, keep-last and
 * stop on failure cycle) and, on the last row, starts the run. The run itself lives in console_runs
 * on the runner's thread: this view only draws the progress the app's
 * loop copied from it, and the requests of the current leg charted
 * against the context they reached (view_curves.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "engine/proto/opt.h"
#include "meter.h"
#include "tui/stress/console_runs.h"
#include "ui.h"
#include "view.h"

enum field {
    F_MODE,
    F_LEG,
    F_FROM,
    F_TO,
    F_FACTOR,
    F_STEP,
    F_GEN,
    F_REQUESTS,
    F_PROMPT,
    F_CONCURRENCY,
    F_RATE,
    F_SEED,
    F_DURATION,
    F_KV_BITS,
    F_CTX,
    F_PREFILL,
    F_KEEP,
    F_TIMEOUT,
    F_STOP,
    F_NAME,
    F_NOTES,
    F_START,
    F_COUNT
};

/* NULL: the flag of the field's row in the options table (field_row). */
static const char *const field_label[F_COUNT] = {"mode",         "sweep legs", "from",
                                                 "to",           "factor",     "step",
                                                 "gen",          "requests",   "prompt tokens",
                                                 "concurrency",  "rate /s",    "seed",
                                                 "duration s",   "kv-bits",    NULL,
                                                 "prefill-step", NULL,         "timeout s",
                                                 "stop on fail", "name",       "notes",
                                                 "start"};

/* The options table's row of a field named by it; OPT_COUNT: none. */
static opt_id field_row(enum field f)
{
    switch (f) {
    case F_CTX:
        return OPT_QUALITY_CTX;
    case F_KEEP:
        return OPT_KEEP_LAST;
    default:
        return OPT_COUNT;
    }
}

static const char *label(enum field f)
{
    opt_id row = field_row(f);
    return row != OPT_COUNT ? opt_defs[row].flag : field_label[f];
}

/* Whether the stress mode of o takes the row's flag. */
static int mode_takes(const stress_opts *o, opt_id id)
{
    for (int v = OPT_V_STRESS_GROWTH; v <= OPT_V_STRESS_QUALITY; v++)
        if (strcmp(opt_mode_word(OPT_V_STRESS, (opt_verb)v), store_mode_name(o->mode)) == 0)
            return (opt_defs[id].verbs & OPT_VB(v)) != 0;
    return 0;
}

static const store_mode modes[] = {STORE_MODE_GROWTH, STORE_MODE_FIXED, STORE_MODE_SOAK,
                                   STORE_MODE_SWEEP, STORE_MODE_QUALITY};

static stress_opts *form_opts(struct view_ctx *v)
{
    if (!v->form.ready) {
        stress_opts_init(&v->form.opts);
        v->form.opts.to = 4096;
        v->form.opts.duration_s = 60;
        v->form.opts.n_kv_bits = 2;
        v->form.opts.kv_bits[0] = 16;
        v->form.opts.kv_bits[1] = 4;
        v->form.opts.n_prefill_step = 1;
        v->form.opts.prefill_step[0] = 256;
        v->form.ready = 1;
    }
    return &v->form.opts;
}

static void fmt_list(const int *x, int n, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? "," : "", x[i]);
}

/* A field's value as shown and as edited. */
static void field_text(const stress_opts *o, enum field f, char *buf, size_t len)
{
    switch (f) {
    case F_MODE:
        snprintf(buf, len, "%s", store_mode_name(o->mode));
        break;
    case F_LEG:
        snprintf(buf, len, "%s", store_mode_name(o->leg_mode));
        break;
    case F_FROM:
        snprintf(buf, len, "%lld", (long long)o->from);
        break;
    case F_TO:
        snprintf(buf, len, "%lld", (long long)o->to);
        break;
    case F_FACTOR:
        snprintf(buf, len, o->factor > 0 ? "%g" : "-", o->factor);
        break;
    case F_STEP:
        snprintf(buf, len, o->step > 0 ? "%lld" : "-", (long long)o->step);
        break;
    case F_GEN:
        snprintf(buf, len, "%d", o->gen);
        break;
    case F_REQUESTS:
        snprintf(buf, len, "%lld", (long long)o->requests);
        break;
    case F_PROMPT:
        snprintf(buf, len, "%d", o->prompt_tokens);
        break;
    case F_CONCURRENCY:
        fmt_list(o->concurrency, o->n_concurrency, buf, len);
        break;
    case F_RATE:
        snprintf(buf, len, o->rate > 0 ? "%g" : "as fast as allowed", o->rate);
        break;
    case F_SEED:
        snprintf(buf, len, "%llu", (unsigned long long)o->seed);
        break;
    case F_DURATION:
        snprintf(buf, len, "%g", o->duration_s);
        break;
    case F_KV_BITS:
        fmt_list(o->kv_bits, o->n_kv_bits, buf, len);
        break;
    case F_CTX: /* 0: --ctx's default, the whole text as one window */
        snprintf(buf, len, o->ctx > 0 ? "%lld" : "whole text", (long long)o->ctx);
        break;
    case F_PREFILL:
        fmt_list(o->prefill_step, o->n_prefill_step, buf, len);
        break;
    case F_TIMEOUT:
        snprintf(buf, len, "%g", o->timeout_s);
        break;
    case F_STOP:
        snprintf(buf, len, "%s", o->stop_on_failure ? "yes" : "no");
        break;
    case F_KEEP:
        snprintf(buf, len, "%s", o->keep_last ? "yes" : "no");
        break;
    case F_NAME:
        snprintf(buf, len, "%s", o->name);
        break;
    case F_NOTES:
        snprintf(buf, len, "%s", o->notes);
        break;
    case F_START:
    case F_COUNT:
        buf[0] = '\0';
        break;
    }
}

/* Whether the field applies to the mode (others are dimmed). */
static int field_used(const stress_opts *o, enum field f)
{
    int growth = o->mode == STORE_MODE_GROWTH ||
                 (o->mode == STORE_MODE_SWEEP && o->leg_mode == STORE_MODE_GROWTH);
    int fixed = o->mode == STORE_MODE_FIXED || o->mode == STORE_MODE_SOAK ||
                (o->mode == STORE_MODE_SWEEP && o->leg_mode == STORE_MODE_FIXED);
    if (field_row(f) != OPT_COUNT)
        return mode_takes(o, field_row(f));
    switch (f) {
    case F_KV_BITS:
        return o->mode == STORE_MODE_SWEEP || o->mode == STORE_MODE_QUALITY;
    case F_LEG:
    case F_PREFILL:
        return o->mode == STORE_MODE_SWEEP;
    case F_GEN:
        return o->mode != STORE_MODE_QUALITY;
    case F_FROM:
    case F_TO:
    case F_FACTOR:
    case F_STEP:
        return growth;
    case F_REQUESTS:
        return fixed && o->mode != STORE_MODE_SOAK;
    case F_PROMPT:
    case F_CONCURRENCY:
    case F_RATE:
    case F_SEED:
        return fixed;
    case F_DURATION:
        return o->mode == STORE_MODE_SOAK;
    default:
        return 1;
    }
}

/* Takes the typed text into the field; -1 with err when it does not fit
 * there. The values themselves are checked when the run starts
 * (stress_opts_check), in the headless verb's words. */
static int field_set(stress_opts *o, enum field f, const char *s, char *err, size_t errlen)
{
    char *end;
    double d = strtod(s, &end);
    int number = end != s && *end == '\0';
    switch (f) {
    case F_KV_BITS:
        return stress_parse_list("--kv-bits", s, o->kv_bits, &o->n_kv_bits, err, errlen);
    case F_PREFILL:
        return stress_parse_list("--prefill-step", s, o->prefill_step, &o->n_prefill_step, err,
                                 errlen);
    case F_CONCURRENCY:
        return stress_parse_list("--concurrency", s, o->concurrency, &o->n_concurrency, err,
                                 errlen);
    case F_NAME:
        snprintf(o->name, sizeof o->name, "%s", s);
        return 0;
    case F_NOTES:
        snprintf(o->notes, sizeof o->notes, "%s", s);
        return 0;
    default:
        break;
    }
    if (!number) {
        snprintf(err, errlen, "%s: \"%s\" is not a number", label(f), s);
        return -1;
    }
    switch (f) {
    case F_FROM:
        o->from = (int64_t)d;
        break;
    case F_TO:
        o->to = (int64_t)d;
        break;
    /* Growth goes by a factor or by a step: setting one clears the other. */
    case F_FACTOR:
        o->factor = d;
        o->step = 0;
        break;
    case F_STEP:
        o->step = (int64_t)d;
        o->factor = 0;
        break;
    case F_GEN:
        o->gen = (int)d;
        break;
    case F_REQUESTS:
        o->requests = (int64_t)d;
        break;
    case F_PROMPT:
        o->prompt_tokens = (int)d;
        break;
    case F_RATE:
        o->rate = d;
        break;
    case F_SEED:
        if (d < 0)
            return -1;
        o->seed = (uint64_t)d;
        break;
    case F_DURATION:
        o->duration_s = d;
        break;
    case F_TIMEOUT:
        o->timeout_s = d;
        break;
    /* 0: the whole text as one window, as without --ctx. */
    case F_CTX:
        o->ctx = (int64_t)d;
        break;
    default:
        snprintf(err, errlen, "%s takes no value", label(f));
        return -1;
    }
    return 0;
}

static void draw_form(struct view_ctx *v)
{
    WINDOW *w = v->win[LAYOUT_FORM];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_FORM];
    if (!w)
        return;
    const stress_opts *o = form_opts(v);
    draw_text(w, v->g, 0, 0, p->w, palette_attr(v->pal, PAL_TITLE), "stress run");
    /* Below the title and a blank row; scrolled when the pane is short. */
    int rows = p->h - 2;
    view_scroll_to(v->form.field, rows, &v->form.top);
    for (int f = v->form.top; f < F_COUNT && f - v->form.top < rows; f++) {
        int y = f - v->form.top + 2, sel = f == v->form.field;
        attr_t a = sel                ? palette_attr(v->pal, PAL_SELECT)
                   : field_used(o, f) ? A_NORMAL
                                      : palette_attr(v->pal, PAL_DIM);
        if (f == F_START) {
            draw_text(w, v->g, y, 0, p->w, a | A_BOLD, "[ start the run ]");
            continue;
        }
        char val[OPT_RUN_TEXT_MAX + 2];
        if (sel && v->form.editing)
            snprintf(val, sizeof val, "%s_", v->form.text);
        else
            field_text(o, f, val, sizeof val);
        draw_textf(w, v->g, y, 0, p->w, a, "%-14s %s", label(f), val);
    }
}

static void draw_progress(struct view_ctx *v, const stress_progress *pr)
{
    WINDOW *w = v->win[LAYOUT_PROGRESS];
    int width = v->lay->pane[LAYOUT_PROGRESS].w;
    if (!w)
        return;
    char eta[32] = "-", el[32];
    if (pr->eta_s >= 0)
        meter_fmt_duration(pr->eta_s, eta, sizeof eta);
    meter_fmt_duration(pr->elapsed_s, el, sizeof el);
    const char *state = pr->state == STRESS_STARTING  ? "starting"
                        : pr->state == STRESS_RUNNING ? "running"
                                                      : store_status_name(pr->status);
    enum palette_role role = pr->state != STRESS_FINISHED    ? PAL_PENDING
                             : pr->status == STORE_COMPLETED ? PAL_OK
                                                             : PAL_ERROR;
    int x = draw_textf(w, v->g, 0, 0, width, palette_attr(v->pal, PAL_TITLE), "run %lld %s ",
                       (long long)pr->run_id, store_mode_name(pr->mode));
    draw_text(w, v->g, 0, x, width - x, palette_attr(v->pal, role) | A_BOLD, state);
    draw_textf(w, v->g, 1, 0, width, A_NORMAL,
               "leg %d/%d  kv_bits %d  prefill_step %d  concurrency %d", pr->leg + 1, pr->n_legs,
               pr->kv_bits, pr->prefill_step, pr->concurrency);
    /* A fixed run has no target context (-1): the context alone. */
    if (pr->ctx_target > 0)
        draw_textf(w, v->g, 2, 0, width, A_BOLD, "context %lld / %lld", (long long)pr->ctx,
                   (long long)pr->ctx_target);
    else
        draw_textf(w, v->g, 2, 0, width, A_BOLD, "context %lld", (long long)pr->ctx);
    if (pr->mode == STORE_MODE_QUALITY)
        draw_textf(w, v->g, 3, 0, width, A_NORMAL, "settings measured %d%s", pr->n_quality,
                   pr->measuring ? "  (measuring)" : "");
    else
        draw_textf(w, v->g, 3, 0, width, A_NORMAL, "requests %lld ok  %lld failed  %d in flight",
                   (long long)pr->requests_done, (long long)pr->requests_failed, pr->in_flight);
    draw_textf(w, v->g, 4, 0, width, A_NORMAL,
               "decode p50 %.1f tok/s  aggregate %.1f tok/s  elapsed %s  eta %s", pr->decode_p50,
               pr->agg_tps, el, eta);
    if (pr->last_error[0])
        draw_textf(w, v->g, 5, 0, width, palette_attr(v->pal, PAL_ERROR), "failure: %s",
                   pr->last_error);
}

/* The current leg's requests against context, as they end, and the
 * legs' quality as each is measured: a quality run's alone, a sweep
 * --quality's below its curves. */
static void draw_curves(struct view_ctx *v, const stress_progress *pr)
{
    WINDOW *w = v->win[LAYOUT_CHART];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_CHART];
    const store_point *points;
    size_t n = console_runs_points(v->opt->runs, &points);
    char scope[64] = "";
    if (!w)
        return;
    if (pr && pr->n_legs > 1)
        snprintf(scope, sizeof scope, "leg %d/%d", pr->leg + 1, pr->n_legs);
    struct layout_rect r = {0, 0, p->w - 1, p->h};
    int quality = pr && (pr->n_quality > 0 || pr->mode == STORE_MODE_QUALITY);
    if (quality && pr->mode != STORE_MODE_QUALITY)
        r.h = p->h / 2;
    if (!quality || pr->mode != STORE_MODE_QUALITY)
        view_curves_run(v, w, r, points, n, pr ? pr->leg : 0, scope);
    if (!quality)
        return;
    struct layout_rect qr = {0, r.h == p->h ? 0 : r.h, p->w - 1, p->h - (r.h == p->h ? 0 : r.h)};
    if (pr->n_quality == 0)
        draw_text(w, v->g, qr.y, 0, qr.w, palette_attr(v->pal, PAL_DIM),
                  pr->measuring ? "measuring quality: both passes on the head's ring"
                                : "no quality measured yet");
    else
        view_quality(v, w, qr, pr->quality, pr->n_quality);
}

static void stress_draw(struct view_ctx *v)
{
    WINDOW *pw = v->win[LAYOUT_PROGRESS];
    if (!v->opt->runs) {
        if (pw)
            draw_text(pw, v->g, 0, 0, v->lay->pane[LAYOUT_PROGRESS].w,
                      palette_attr(v->pal, PAL_ERROR),
                      "no run history store: stress runs are off (see --db)");
        return;
    }
    draw_form(v);
    stress_progress pr;
    int have = console_runs_progress(v->opt->runs, &pr);
    if (have)
        draw_progress(v, &pr);
    else if (pw)
        draw_text(pw, v->g, 0, 0, v->lay->pane[LAYOUT_PROGRESS].w, palette_attr(v->pal, PAL_DIM),
                  "no run yet: fill the form, Enter on [ start the run ]");
    draw_curves(v, have ? &pr : NULL);
}

/* A quality run scores the built-in text (a copy of bytes in the binary:
 * no disk), in windows of the form's ctx (by default the whole text, as
 * the engine's default). */
static void start(struct view_ctx *v)
{
    char err[512];
    if (view_refuse_readonly(v, "stress runs"))
        return;
    stress_opts o = *form_opts(v);
    char *text = NULL;
    if (o.mode == STORE_MODE_QUALITY) {
        if (!(text = stress_text_load(NULL, err, sizeof err))) {
            view_message(v, 1, "%s", err);
            return;
        }
        o.text = text;
        snprintf(o.text_name, sizeof o.text_name, "%s", stress_text_builtin_name);
    }
    if (console_runs_start(v->opt->runs, &o, err, sizeof err) != 0)
        view_message(v, 1, "%s", err);
    else
        view_message(v, 0, "%s run started: a aborts it", store_mode_name(o.mode));
    free(text);
}

static void edit_key(struct view_ctx *v, int key)
{
    int end = view_type_key(v->form.text, sizeof v->form.text, key, 0);
    char err[256];
    if (end)
        v->form.editing = 0;
    if (end > 0 && field_set(form_opts(v), v->form.field, v->form.text, err, sizeof err) != 0)
        view_message(v, 1, "%s", err);
}

/* Mode, sweep legs, keep-last and stop on failure cycle through their
 * values. */
static void cycle(stress_opts *o, enum field f)
{
    if (f == F_MODE) {
        size_t i = 0;
        while (modes[i] != o->mode)
            i++;
        o->mode = modes[(i + 1) % (sizeof modes / sizeof modes[0])];
    } else if (f == F_LEG) {
        o->leg_mode = o->leg_mode == STORE_MODE_GROWTH ? STORE_MODE_FIXED : STORE_MODE_GROWTH;
    } else if (f == F_KEEP) {
        o->keep_last = !o->keep_last;
    } else {
        o->stop_on_failure = !o->stop_on_failure;
    }
}

enum { S_ABORT, S_ENTER };

static const struct view_key stress_keys[] = {
    {{0}, "j/k", "field", "choose a field", -1},
    {{'\n', '\r', KEY_ENTER, ' '},
     "Enter",
     "edit/start",
     "edit the field (choices cycle); on start, run; Esc leaves a field",
     S_ENTER},
    {{'a'}, "a", "abort", "abort the run going (kept in the history as aborted)", S_ABORT},
};
static const struct view_keys stress_table = KEYS_TABLE("Stress", stress_keys);

static int stress_key(struct view_ctx *v, int key)
{
    if (!v->opt->runs)
        return 0;
    if (v->form.editing) {
        edit_key(v, key);
        return 1;
    }
    switch (keys_cmd(&stress_table, key)) {
    case S_ABORT:
        console_runs_abort(v->opt->runs);
        view_message(v, 0, "abort asked: the run stops and is recorded as aborted");
        return 1;
    case S_ENTER: {
        enum field f = v->form.field;
        if (f == F_START) {
            start(v);
        } else if (f == F_MODE || f == F_LEG || f == F_STOP || f == F_KEEP) {
            cycle(form_opts(v), f);
        } else {
            v->form.editing = 1;
            v->form.text[0] = '\0';
        }
        return 1;
    }
    }
    int to = view_move(key, v->form.field, F_COUNT, F_COUNT);
    if (to < 0)
        return 0;
    v->form.field = to;
    return 1;
}

const struct ui_view view_stress = {
    .name = "Stress",
    .layout = LAYOUT_STRESS,
    .draw = stress_draw,
    .key = stress_key,
    .click = NULL,
    .keys = &stress_table,
};
