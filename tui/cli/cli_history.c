/* cli_history.c: `infertop history`, the run history from a terminal or a
 * script: list, show, compare, best, export, prune. Tables for people,
 * --json (and CSV exports) for scripts; every failure has an exit code
 * from cli.h and a message naming the problem. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "store/store.h"

typedef struct hopts {
    const char *db;
    int json;
    const char *mode, *status, *model, *cluster, *engine, *grep, *since, *until;
    int limit, page;
    store_export_what what;
    const char *format, *out;
    int format_given;
    double older_than;
    int vacuum;
    store_best_by by;
    store_quality_floor floor; /* best: NaN where not given */
    int full;                  /* show, compare: every figure instead of a line per leg */
} hopts;

typedef int (*run_fn)(store *s, const hopts *o, const int64_t *runs);

static int run_list(store *s, const hopts *o, const int64_t *runs);
static int run_show(store *s, const hopts *o, const int64_t *runs);
static int run_compare(store *s, const hopts *o, const int64_t *runs);
static int run_best(store *s, const hopts *o, const int64_t *runs);
static int run_export(store *s, const hopts *o, const int64_t *runs);
static int run_prune(store *s, const hopts *o, const int64_t *runs);

/* Each mode of the verb (opt.h: its flags and run ids) and what runs it. */
static const struct {
    opt_verb mode;
    run_fn run;
} modes[] = {
    {OPT_V_HISTORY_LIST, run_list},       {OPT_V_HISTORY_SHOW, run_show},
    {OPT_V_HISTORY_COMPARE, run_compare}, {OPT_V_HISTORY_BEST, run_best},
    {OPT_V_HISTORY_EXPORT, run_export},   {OPT_V_HISTORY_PRUNE, run_prune},
};

/* ---- argument values ---- */

/* Local time, "YYYY-MM-DD" or "YYYY-MM-DD HH:MM[:SS]" (or with a T).
 * The fields must survive mktime unchanged: 2024-02-30 is refused, not
 * read as March 1st. */
static int parse_date(const char *s, double *out)
{
    static const char *const forms[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M",
                                        "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        struct tm tm = {0};
        const char *end = strptime(s, forms[i], &tm);
        if (!end || *end)
            continue;
        tm.tm_isdst = -1;
        struct tm want = tm;
        time_t t = mktime(&tm);
        if (t == (time_t)-1 || tm.tm_year != want.tm_year || tm.tm_mon != want.tm_mon ||
            tm.tm_mday != want.tm_mday || tm.tm_hour != want.tm_hour || tm.tm_min != want.tm_min)
            return -1;
        *out = (double)t;
        return 0;
    }
    return -1;
}

static void fmt_time(double t, char *buf, size_t len)
{
    if (t <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    time_t secs = (time_t)t;
    struct tm tm;
    localtime_r(&secs, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static void fmt_num(double v, char *buf, size_t len)
{
    store_fmt_num(v, 2, buf, len);
}

static void fmt_ctx(int64_t v, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%lld", (long long)v);
}

static int print_json(json_t *j)
{
    if (!j) {
        fputs("infertop history: out of memory building JSON\n", stderr);
        return CLI_ERROR;
    }
    int rc = json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    json_decref(j);
    fputc('\n', stdout);
    return rc == 0 ? CLI_OK : CLI_ERROR;
}

/* A store call's result as an exit code, printing its message. */
static int store_failed(int rc, const char *err)
{
    fprintf(stderr, "infertop history: %s\n", err);
    return rc == 1 ? CLI_NOT_FOUND : CLI_ERROR;
}

/* ---- list ---- */

static int run_list(store *s, const hopts *o, const int64_t *runs)
{
    (void)runs;
    store_run_filter f = {.mode = o->mode,
                          .status = o->status,
                          .model = o->model,
                          .engine = o->engine,
                          .text = o->grep,
                          .limit = o->limit};
    if (o->since && parse_date(o->since, &f.since) != 0)
        return cli_usage_error("history", "--since: \"%s\" is not a date (YYYY-MM-DD [HH:MM[:SS]])",
                               o->since);
    if (o->until && parse_date(o->until, &f.until) != 0)
        return cli_usage_error("history", "--until: \"%s\" is not a date (YYYY-MM-DD [HH:MM[:SS]])",
                               o->until);
    f.offset = (o->page - 1) * o->limit;
    store_run_list l;
    char err[512];
    if (store_runs_list(s, &f, &l, err, sizeof err) != 0) {
        /* Only the filter values can be wrong here: a usage error. */
        fprintf(stderr, "infertop history: %s\n", err);
        return strstr(err, "is not one of") ? CLI_USAGE : CLI_ERROR;
    }
    if (o->json) {
        int rc = print_json(store_run_list_json(&l));
        store_run_list_free(&l);
        return rc;
    }
    static const char *const head[] = {"ID",   "STARTED", "MODE",   "STATUS",  "ENGINE",  "MODEL",
                                       "LEGS", "REQS",    "FAILED", "MAX_CTX", "SECONDS", "NAME"};
    cli_table *t = cli_table_new(12, head);
    int rc = t ? CLI_OK : CLI_ERROR;
    for (size_t i = 0; t && i < l.n; i++) {
        const store_run *r = &l.runs[i];
        char id[24], started[32], legs[24], reqs[24], failed[24], ctx[24], secs[32];
        snprintf(id, sizeof id, "%lld", (long long)r->id);
        fmt_time(r->started, started, sizeof started);
        snprintf(legs, sizeof legs, "%lld", (long long)r->n_legs);
        snprintf(reqs, sizeof reqs, "%lld", (long long)r->n_requests);
        snprintf(failed, sizeof failed, "%lld", (long long)r->n_failed);
        fmt_ctx(r->max_context, ctx, sizeof ctx);
        snprintf(secs, sizeof secs, "%.1f", r->ended > 0 ? r->ended - r->started : 0.0);
        const char *row[] = {id,
                             started,
                             r->mode,
                             r->status,
                             r->engine,
                             r->model[0] ? r->model : "-",
                             legs,
                             reqs,
                             failed,
                             ctx,
                             r->ended > 0 ? secs : "-",
                             r->name[0] ? r->name : "-"};
        if (cli_table_add(t, row) != 0)
            rc = CLI_ERROR;
    }
    if (rc == CLI_OK) {
        if (l.n)
            cli_table_print(t, stdout);
        else
            puts("no runs match");
    }
    cli_table_free(t);
    store_run_list_free(&l);
    return rc;
}

/* ---- show ---- */

/* Feeds a row stream (export, summary rows) into a table: buffered, or
 * streamed in two passes (measure, then print). */
typedef struct table_sink {
    cli_table *t;
    int failed;
    int pass; /* 0 buffered; 1 measure; 2 print */
} table_sink;

enum { MAX_EXPORT_COLS = 24, CELL_LEN = 48 };

static void cells_to_text(int ncol, const store_cell *cells, char (*buf)[CELL_LEN],
                          const char **row)
{
    for (int i = 0; i < ncol; i++) {
        row[i] = buf[i];
        switch (cells[i].type) {
        case STORE_INT:
            snprintf(buf[i], CELL_LEN, "%lld", (long long)cells[i].i);
            break;
        case STORE_REAL:
            fmt_num(cells[i].d, buf[i], CELL_LEN);
            break;
        case STORE_TEXT:
            row[i] = cells[i].s;
            break;
        case STORE_NULL:
            row[i] = NULL;
            break;
        }
    }
}

static int table_row(void *ctx, int ncol, const char *const *names, const store_cell *cells)
{
    table_sink *k = ctx;
    if (ncol > MAX_EXPORT_COLS)
        return k->failed = 1;
    if (!cells) {
        if (!k->t && !(k->t = cli_table_new(ncol, names)))
            return k->failed = 1;
        if (k->pass == 2)
            cli_table_print_header(k->t, stdout);
        return 0;
    }
    char buf[MAX_EXPORT_COLS][CELL_LEN];
    const char *row[MAX_EXPORT_COLS];
    cells_to_text(ncol, cells, buf, row);
    if (k->pass == 1)
        cli_table_measure(k->t, row);
    else if (k->pass == 2)
        cli_table_print_row(k->t, row, stdout);
    else if (cli_table_add(k->t, row) != 0)
        return k->failed = 1;
    return 0;
}

static void show_header(const store_summary *sum)
{
    const store_run *r = &sum->run;
    char started[32], ended[32], ctx[24], last[24];
    fmt_time(r->started, started, sizeof started);
    fmt_time(r->ended, ended, sizeof ended);
    fmt_ctx(r->max_context, ctx, sizeof ctx);
    fmt_ctx(r->last_context, last, sizeof last);
    printf("run %lld  %s  %s  %s\n", (long long)r->id, r->name[0] ? r->name : "-", r->mode,
           r->status);
    printf("model      %s\n", r->model[0] ? r->model : "-");
    printf("engine     %s %s\n", r->engine, r->engine_version ? r->engine_version : "");
    printf("started    %s   ended %s\n", started, ended);
    printf("context    max %s (ok requests), last %s (steps)\n", ctx, last);
    printf("requests   %lld, %lld failed; dropped rows %lld\n", (long long)r->n_requests,
           (long long)r->n_failed, (long long)r->dropped_rows);
    if (r->notes[0])
        printf("notes      %s\n", r->notes);
    if (r->failure)
        printf("failure    %s\n", r->failure);
    if (sum->failure.found)
        printf("failed at  leg %d, request %lld, context %lld: %s: %s\n", sum->failure.leg,
               (long long)sum->failure.request, (long long)sum->failure.ctx_before,
               sum->failure.code, sum->failure.message);
}

static int show_legs(const store_summary *sum)
{
    static const char *const head[] = {"LEG",  "KV_BITS", "PREFILL_STEP", "CONCURRENCY", "STATUS",
                                       "REQS", "FAILED",  "MAX_CTX",      "AGG_TPS"};
    cli_table *t = cli_table_new(9, head);
    if (!t)
        return -1;
    for (size_t i = 0; i < sum->n_legs; i++) {
        const store_leg_summary *l = &sum->legs[i];
        char c[8][24];
        snprintf(c[0], 24, "%d", l->idx);
        snprintf(c[1], 24, "%d", l->kv_bits);
        snprintf(c[2], 24, "%d", l->prefill_step);
        snprintf(c[3], 24, "%d", l->concurrency);
        snprintf(c[4], 24, "%lld", (long long)l->requests);
        snprintf(c[5], 24, "%lld", (long long)l->failed);
        fmt_ctx(l->max_context, c[6], 24);
        fmt_num(l->agg_tps, c[7], 24);
        const char *row[] = {c[0], c[1], c[2], c[3], l->status, c[4], c[5], c[6], c[7]};
        if (cli_table_add(t, row) != 0) {
            cli_table_free(t);
            return -1;
        }
    }
    cli_table_print(t, stdout);
    cli_table_free(t);
    return 0;
}

/* ---- a line per leg (show, compare) ---- */

/* A table of leg lines, after a first column when `lead` names it. */
static cli_table *lines_new(const char *lead)
{
    const char *head[1 + STORE_LEG_COLS];
    int k = 0;
    if (lead)
        head[k++] = lead;
    for (int i = 0; i < STORE_LEG_COLS; i++)
        head[k++] = store_leg_heads[i];
    return cli_table_new(k, head);
}

static int lines_add(cli_table *t, const char *lead, const store_leg_line *ln)
{
    const char *row[1 + STORE_LEG_COLS];
    int k = 0;
    if (lead)
        row[k++] = lead;
    for (int i = 0; i < STORE_LEG_COLS; i++)
        row[k++] = ln->cell[i];
    return cli_table_add(t, row);
}

static int lines_leg(cli_table *t, const char *lead, const store_leg_summary *l)
{
    store_leg_line ln;
    store_leg_line_of(l, &ln);
    return lines_add(t, lead, &ln);
}

static void lines_print(cli_table *t)
{
    cli_table_print(t, stdout);
    printf("\n%s\n", store_leg_legend);
}

/* Every figure of the run: the legs, then each distribution per leg,
 * node and phase. */
static int show_full(const store_summary *sum)
{
    table_sink k = {0};
    int fail = show_legs(sum) != 0 || store_summary_each(sum, table_row, &k) != 0;
    if (!fail && k.t) {
        putchar('\n');
        cli_table_print(k.t, stdout);
    }
    cli_table_free(k.t);
    return fail ? -1 : 0;
}

static int show_lines(const store_summary *sum)
{
    cli_table *t = lines_new(NULL);
    int fail = !t;
    for (size_t i = 0; !fail && i < sum->n_legs; i++)
        fail = lines_leg(t, NULL, &sum->legs[i]) != 0;
    if (!fail)
        lines_print(t);
    cli_table_free(t);
    return fail ? -1 : 0;
}

/* A summary's JSON with the run's quality measurements beside it. */
static json_t *with_quality(json_t *j, const store_quality_list *q)
{
    if (j && json_object_set_new(j, "quality", cli_quality_json(q)) != 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int run_show(store *s, const hopts *o, const int64_t *runs)
{
    store_summary sum;
    store_quality_list q;
    char err[512];
    int rc = store_run_summary(s, runs[0], &sum, err, sizeof err);
    if (rc != 0)
        return store_failed(rc, err);
    if ((rc = store_run_quality(s, runs[0], &q, err, sizeof err)) != 0) {
        store_summary_free(&sum);
        return store_failed(rc, err);
    }
    if (o->json) {
        rc = print_json(with_quality(store_summary_json(&sum), &q));
        store_summary_free(&sum);
        store_quality_list_free(&q);
        return rc;
    }
    show_header(&sum);
    putchar('\n');
    int fail = o->full ? show_full(&sum) : show_lines(&sum);
    fail = fail || cli_quality_print(&q, &sum, o->full) != 0;
    store_summary_free(&sum);
    store_quality_list_free(&q);
    if (fail) {
        fputs("infertop history: out of memory formatting the run\n", stderr);
        return CLI_ERROR;
    }
    return CLI_OK;
}

/* ---- compare ---- */

/* One side of a comparison: the run and its engine, so that runs of two
 * engines read side by side. */
static void compare_side(char side, const store_summary *sum)
{
    const store_run *r = &sum->run;
    printf("%c: run %lld  %s  %s  %s  %s  %s%s%s", side, (long long)r->id, r->name, r->mode,
           r->status, r->model, r->engine, r->engine_version ? " " : "",
           r->engine_version ? r->engine_version : "");
    putchar('\n');
}

/* A line per leg, the legs of the same settings together with B's
 * figures over A's below them; a leg without a partner on its own. */
static int compare_lines(const store_compare *c)
{
    cli_table *t = lines_new("RUN");
    int fail = !t;
    for (size_t i = 0; !fail && i < c->n_pairs; i++) {
        const store_leg_pair *p = &c->pairs[i];
        const store_leg_summary *a = p->a >= 0 ? &c->a.legs[p->a] : NULL;
        const store_leg_summary *b = p->b >= 0 ? &c->b.legs[p->b] : NULL;
        if (a)
            fail |= lines_leg(t, b ? "A" : "A only", a) != 0;
        if (b)
            fail |= lines_leg(t, a ? "B" : "B only", b) != 0;
        if (a && b) {
            store_leg_line ratio;
            store_leg_ratio_of(a, b, &ratio);
            fail |= lines_add(t, "B/A", &ratio) != 0;
        }
    }
    if (!fail)
        lines_print(t);
    cli_table_free(t);
    return fail ? -1 : 0;
}

static int compare_full(const store_compare *c)
{
    static const char *const head[] = {"KEY", "METRIC", "A", "B", "B-A", "B/A"};
    cli_table *t = cli_table_new(6, head);
    int fail = !t;
    for (size_t i = 0; !fail && i < c->n; i++) {
        const store_delta *d = &c->rows[i];
        char a[32], b[32], delta[32], ratio[32];
        fmt_num(d->a, a, sizeof a);
        fmt_num(d->b, b, sizeof b);
        if (isfinite(d->delta))
            snprintf(delta, sizeof delta, "%+.2f", d->delta);
        else
            snprintf(delta, sizeof delta, "-");
        if (isfinite(d->ratio))
            snprintf(ratio, sizeof ratio, "%.3f", d->ratio);
        else
            snprintf(ratio, sizeof ratio, "-");
        const char *row[] = {d->key, d->metric, a, b, delta, ratio};
        fail = cli_table_add(t, row) != 0;
    }
    if (!fail)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return fail ? -1 : 0;
}

/* The quality of each compared run, A's then B's. */
static int compare_quality(const store_compare *c, const store_quality_list *q, int full)
{
    const store_summary *side[2] = {&c->a, &c->b};
    for (int i = 0; i < 2; i++) {
        if (q[i].n)
            printf("\n%c:", "AB"[i]);
        if (cli_quality_print(&q[i], side[i], full) != 0)
            return -1;
    }
    return 0;
}

static int run_compare(store *s, const hopts *o, const int64_t *runs)
{
    store_compare c;
    store_quality_list q[2] = {{0}};
    char err[512];
    int rc = store_run_compare(s, runs[0], runs[1], &c, err, sizeof err);
    if (rc != 0)
        return store_failed(rc, err);
    for (int i = 0; rc == 0 && i < 2; i++)
        rc = store_run_quality(s, runs[i], &q[i], err, sizeof err);
    if (rc != 0) {
        store_compare_free(&c);
        store_quality_list_free(&q[0]);
        return store_failed(rc, err);
    }
    if (o->json) {
        json_t *j = store_compare_json(&c);
        json_t *qj =
            json_pack("{so so}", "a", cli_quality_json(&q[0]), "b", cli_quality_json(&q[1]));
        if (j && (!qj || json_object_set_new(j, "quality", qj) != 0)) {
            json_decref(j);
            j = NULL;
        }
        rc = print_json(j);
        store_compare_free(&c);
        store_quality_list_free(&q[0]);
        store_quality_list_free(&q[1]);
        return rc;
    }
    compare_side('A', &c.a);
    compare_side('B', &c.b);
    if (strcmp(c.a.run.engine, c.b.run.engine) != 0)
        puts("engines differ: legs paired by concurrency (kv_bits and prefill_step are each "
             "engine's own)");
    putchar('\n');
    rc = (o->full ? compare_full(&c) : compare_lines(&c)) == 0 &&
                 compare_quality(&c, q, o->full) == 0
             ? CLI_OK
             : CLI_ERROR;
    if (rc != CLI_OK)
        fputs("infertop history: out of memory formatting the comparison\n", stderr);
    store_compare_free(&c);
    store_quality_list_free(&q[0]);
    store_quality_list_free(&q[1]);
    return rc;
}

/* ---- best ---- */

/* A row of the table: each ranking shows its own two figures, then the
 * setting's quality (cells a table without those columns leaves out). */
static int best_table_add(cli_table *t, const store_best *b, const store_best_row *r)
{
    char c[6][32];
    snprintf(c[0], 32, "%d", r->kv_bits);
    snprintf(c[1], 32, "%d", r->prefill_step);
    if (b->by == STORE_BEST_AGG_TPS) {
        snprintf(c[2], 32, "%d", r->concurrency);
        fmt_num(r->agg_tps >= 0 ? r->agg_tps : NAN, c[3], 32);
    } else {
        fmt_ctx(r->max_context, c[2], 32);
        fmt_num(r->decode_tps >= 0 ? r->decode_tps : NAN, c[3], 32);
    }
    fmt_ctx(r->run > 0 ? r->run : -1, c[4], 32);
    snprintf(c[5], 32, "%lld", (long long)r->runs);
    char kl[32], top1[32];
    if (isfinite(r->kl_mean))
        snprintf(kl, sizeof kl, "%.4g", r->kl_mean);
    else
        snprintf(kl, sizeof kl, "-");
    store_fmt_num(r->top1, 4, top1, sizeof top1);
    char est[48];
    store_fmt_estimate(r->quality_run > 0 ? r->quality_topk : -1, est, sizeof est);
    const char *row[] = {r->model[0] ? r->model : "-",
                         r->cluster[0] ? r->cluster : "-",
                         r->engine,
                         c[0],
                         c[1],
                         c[2],
                         c[3],
                         c[4],
                         c[5],
                         kl,
                         top1,
                         est};
    return cli_table_add(t, row);
}

static int run_best(store *s, const hopts *o, const int64_t *runs)
{
    (void)runs;
    store_best_by by = o->by;
    store_best b;
    char err[512];
    if (store_best_settings(s, o->model, o->cluster, o->engine, by, &o->floor, &b, err,
                            sizeof err) != 0)
        return store_failed(-1, err);
    if (o->json) {
        int rc = print_json(store_best_json(&b));
        store_best_free(&b);
        return rc;
    }
    static const char *const by_context[] = {"MODEL",        "CLUSTER", "ENGINE",     "KV_BITS",
                                             "PREFILL_STEP", "MAX_CTX", "DECODE_TPS", "RUN",
                                             "RUNS",         "KL_MEAN", "TOP1",       "ESTIMATE"};
    static const char *const by_agg[] = {"MODEL",        "CLUSTER",     "ENGINE",  "KV_BITS",
                                         "PREFILL_STEP", "CONCURRENCY", "AGG_TPS", "RUN",
                                         "RUNS",         "KL_MEAN",     "TOP1",    "ESTIMATE"};
    /* The quality columns when there is a quality to show or a floor. */
    int quality = isfinite(o->floor.max_kl) || isfinite(o->floor.min_top1);
    for (size_t i = 0; i < b.n; i++)
        quality |= b.rows[i].quality_run > 0;
    cli_table *t = cli_table_new(quality ? 12 : 9, by == STORE_BEST_AGG_TPS ? by_agg : by_context);
    int rc = t ? CLI_OK : CLI_ERROR;
    for (size_t i = 0; t && i < b.n; i++)
        if (best_table_add(t, &b, &b.rows[i]) != 0)
            rc = CLI_ERROR;
    if (rc == CLI_OK) {
        if (b.n) {
            cli_table_print(t, stdout);
            if (quality)
                puts("\nKL_MEAN, TOP1: the latest quality measurement of the kv_bits on the "
                     "model (stress quality); 32 is the reference;\nESTIMATE: full (inferd's "
                     "quality op, every token) or top-k estimate (k=N) (another engine's "
                     "logprobs: a lower bound)");
        } else {
            puts("no runs match");
        }
    }
    cli_table_free(t);
    store_best_free(&b);
    return rc;
}

/* ---- export ---- */

/* A table too large to keep: measured in one pass, printed in another. */
static int export_table(store *s, int64_t run, store_export_what what)
{
    char err[512];
    table_sink k = {.pass = 1};
    int rc = store_export_each(s, run, what, table_row, &k, err, sizeof err);
    if (rc == 0 && !k.failed) {
        k.pass = 2;
        rc = store_export_each(s, run, what, table_row, &k, err, sizeof err);
    }
    cli_table_free(k.t);
    if (k.failed) {
        fputs("infertop history: out of memory formatting the export\n", stderr);
        return CLI_ERROR;
    }
    return rc ? store_failed(rc, err) : CLI_OK;
}

/* To a file: written beside it and renamed, so a failed export leaves no
 * half-written file behind. */
static int export_file(store *s, int64_t run, store_export_what what, store_format fmt,
                       const char *path)
{
    char err[512], tmp[4096];
    if (!path) {
        int rc = store_export(s, run, what, fmt, stdout, err, sizeof err);
        return rc ? store_failed(rc, err) : CLI_OK;
    }
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return cli_usage_error("history", "--out: path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "infertop history: cannot write %s: %s\n", path, strerror(errno));
        return CLI_ERROR;
    }
    int rc = store_export(s, run, what, fmt, f, err, sizeof err);
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        snprintf(err, sizeof err, "writing %s: %s", path, strerror(errno));
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(errno));
    }
    if (rc != 0) {
        unlink(tmp);
        return store_failed(rc, err);
    }
    return CLI_OK;
}

static int run_export(store *s, const hopts *o, const int64_t *runs)
{
    store_export_what what = o->what;
    const char *format = o->json ? "json" : o->format;
    if (o->json && o->format_given && strcmp(o->format, "json") != 0)
        return cli_usage_error("history", "--json contradicts --format %s", o->format);
    if (strcmp(format, "table") == 0) {
        if (o->out)
            return cli_usage_error("history", "--out takes csv or json, not %s", "a table");
        return export_table(s, runs[0], what);
    }
    return export_file(s, runs[0], what,
                       strcmp(format, "csv") == 0 ? STORE_FORMAT_CSV : STORE_FORMAT_JSON, o->out);
}

/* ---- prune ---- */

static int run_prune(store *s, const hopts *o, const int64_t *runs)
{
    (void)runs;
    double before = (double)time(NULL) - o->older_than * 86400;
    int64_t deleted;
    char err[512];
    if (store_prune(s, before, o->vacuum, &deleted, err, sizeof err) != 0)
        return store_failed(-1, err);
    if (o->json)
        return print_json(json_pack("{sI sf sb}", "deleted", (json_int_t)deleted, "before", before,
                                    "vacuumed", o->vacuum));
    char when[32];
    fmt_time(before, when, sizeof when);
    printf("pruned %lld run%s started before %s%s\n", (long long)deleted, deleted == 1 ? "" : "s",
           when, o->vacuum ? "; database vacuumed" : "");
    return CLI_OK;
}

/* ---- command line ---- */

/* The mode's options out of the table's values; the enums follow the
 * order of the rows' choices. */
static void take_options(const opt_vals *v, hopts *o)
{
    *o = (hopts){.db = opt_str(v, OPT_DB),
                 .json = opt_given(v, OPT_JSON),
                 .mode = opt_str(v, OPT_RUN_MODE),
                 .status = opt_str(v, OPT_RUN_STATUS),
                 .model = opt_str(v, OPT_RUN_MODEL),
                 .cluster = opt_str(v, OPT_RUN_CLUSTER),
                 .engine = opt_str(v, OPT_RUN_ENGINE),
                 .grep = opt_str(v, OPT_GREP),
                 .since = opt_str(v, OPT_SINCE),
                 .until = opt_str(v, OPT_UNTIL),
                 .limit = (int)opt_int(v, OPT_LIMIT),
                 .page = (int)opt_int(v, OPT_PAGE),
                 .what = (store_export_what)opt_int(v, OPT_WHAT),
                 .format = opt_str(v, OPT_FORMAT),
                 .format_given = opt_given(v, OPT_FORMAT),
                 .out = opt_str(v, OPT_EXPORT_OUT),
                 .older_than = opt_num(v, OPT_OLDER_THAN),
                 .vacuum = opt_given(v, OPT_VACUUM),
                 .by = (store_best_by)opt_int(v, OPT_BY),
                 .floor = {opt_given(v, OPT_MAX_KL) ? opt_num(v, OPT_MAX_KL) : NAN,
                           opt_given(v, OPT_MIN_TOP1) ? opt_num(v, OPT_MIN_TOP1) : NAN},
                 .full = opt_given(v, OPT_FULL)};
}

/* The run ids the mode takes, as many as its nargs_max. */
static int take_runs(const opt_vals *v, int64_t *runs)
{
    int want = opt_verbs[v->verb].nargs_max;
    if (v->nargs != want) {
        fprintf(stderr, "infertop history: %s takes %d run id%s, got %d (see --help)\n",
                opt_mode_word(OPT_V_HISTORY, v->verb), want, want == 1 ? "" : "s", v->nargs);
        return CLI_USAGE;
    }
    for (int i = 0; i < v->nargs; i++) {
        opt_value id = {0};
        char err[256];
        if (opt_check_text(OPT_RUN_ID, v->args[i], &id, err, sizeof err) != 0)
            return cli_usage_error("history", "\"%s\" is not a run id (a positive number)",
                                   v->args[i]);
        runs[i] = (int64_t)id.i;
    }
    return -1;
}

int cli_history(int argc, char **argv)
{
    opt_vals v;
    hopts o;
    int64_t runs[2];
    int rc = cli_parse(OPT_V_HISTORY, argc, argv, &v);
    if (rc < 0)
        rc = take_runs(&v, runs);
    if (rc >= 0)
        return rc;
    take_options(&v, &o);
    run_fn run = NULL;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (modes[i].mode == v.verb)
            run = modes[i].run;

    char err[1024];
    store *s = store_open(o.db, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "infertop history: %s\n", err);
        return CLI_NO_DB;
    }
    rc = run(s, &o, runs);
    if (fflush(stdout) != 0 && rc == CLI_OK) {
        fprintf(stderr, "infertop history: writing the output: %s\n", strerror(errno));
        rc = CLI_ERROR;
    }
    store_close(s);
    return rc;
}
