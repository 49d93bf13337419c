/* cli_stress.c: `infertop stress`, the stress runner from a terminal or a
 * script. It runs the stress module's thread and watches its progress: a
 * bar on stderr when stderr is a terminal, one plain line per ended
 * request otherwise. Ctrl-C (SIGINT) or SIGTERM asks the run to stop: it
 * is recorded as aborted with everything so far, and the exit code is 130.
 * At the end it prints the run id and a summary (or JSON with --json). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tui/core/cluster.h"
#include "tui/engine/eng_knob.h"
#include "tui/ssh/knobs.h"
#include "tui/stress/console_runs.h"
#include "tui/stress/stress.h"

typedef struct sopts {
    stress_opts run;
    const char *config;
    const char *control, *telemetry;
    const char *node; /* --node: an HTTP node of the cluster file */
    const char *db;
    int json;
    char *text; /* quality: the text scored (run.text), owned */
} sopts;

/* The store's mode named `name` (a mode's word, --leg's value). */
static store_mode mode_named(const char *name)
{
    for (int m = 0; m < STORE_MODE_COUNT; m++)
        if (strcmp(name, store_mode_name((store_mode)m)) == 0)
            return (store_mode)m;
    return STORE_MODE_GROWTH; /* the table's words are the store's (opt_table.c) */
}

/* Whether the mode takes the flag (else stress_opts_init's value stays). */
static int of_mode(const opt_vals *v, opt_id id)
{
    return (opt_defs[id].verbs & OPT_VB(v->verb)) != 0;
}

/* The run's shape from the growth and the fixed modes' flags. */
static void take_shape(const opt_vals *v, stress_opts *r)
{
    if (of_mode(v, OPT_FROM)) {
        r->from = (int64_t)opt_int(v, OPT_FROM);
        r->to = (int64_t)opt_int(v, OPT_TO);
        r->step = (int64_t)opt_int(v, OPT_STEP);
        r->factor = opt_given(v, OPT_STEP) ? 0.0 : opt_num(v, OPT_FACTOR);
    }
    if (of_mode(v, OPT_PROMPT_TOKENS)) {
        r->prompt_tokens = (int)opt_int(v, OPT_PROMPT_TOKENS);
        r->rate = opt_num(v, OPT_RATE);
        r->seed = opt_int(v, OPT_STRESS_SEED);
    }
    if (of_mode(v, OPT_REQUESTS))
        r->requests = (int64_t)opt_int(v, OPT_REQUESTS);
    r->gen = (int)opt_int(v, OPT_GEN);
    r->duration_s = opt_num(v, OPT_DURATION);
}

/* A flag of the mode, one value or (sweep) a list of them, into one of
 * stress_opts' int arrays; a flag of other modes leaves stress_opts_init's. */
static int take_list(const opt_vals *v, opt_id id, int *out, int *n)
{
    const opt_value *l = &v->v[id];
    if (!of_mode(v, id))
        return -1;
    if (l->n > STRESS_LIST_MAX) {
        char why[96];
        snprintf(why, sizeof why, "--%s: at most %d values", opt_defs[id].flag, STRESS_LIST_MAX);
        return cli_usage_error("stress", "%s", why);
    }
    *n = l->n ? l->n : 1;
    for (int i = 0; i < *n; i++)
        out[i] = l->n ? (int)l->v[i] : (int)l->i;
    return -1;
}

/* A sweep takes its leg mode's flags: one only the other leg mode takes
 * is a mistake worth saying (a --requests on growth legs does nothing). */
static int check_leg(const opt_vals *v, opt_verb leg)
{
    opt_verb other = leg == OPT_V_STRESS_GROWTH ? OPT_V_STRESS_FIXED : OPT_V_STRESS_GROWTH;
    for (int id = 0; id < OPT_COUNT; id++) {
        unsigned long long verbs = opt_defs[id].verbs;
        if (opt_given(v, (opt_id)id) && (verbs & OPT_VB(other)) && !(verbs & OPT_VB(leg)))
            return cli_usage_error("stress", "--%s does not apply to this mode", opt_defs[id].flag);
    }
    if (leg == OPT_V_STRESS_GROWTH && !opt_given(v, OPT_TO))
        return cli_usage_error("stress", "growth needs --to (the target context)%s", "");
    return -1;
}

/* What a quality measurement scores: --text FILE or the built-in text,
 * read now so that an unreadable file is refused before anything runs. */
static int take_quality(const opt_vals *v, sopts *o)
{
    stress_opts *r = &o->run;
    if (opt_given(v, OPT_SWEEP_QUALITY) && r->mode != STORE_MODE_SWEEP)
        return cli_usage_error("stress", "--quality: a sweep's option (or run stress quality)%s",
                               "");
    int wanted = r->mode == STORE_MODE_QUALITY || (r->mode == STORE_MODE_SWEEP && r->quality);
    static const opt_id with[] = {OPT_STRESS_TEXT, OPT_QUALITY_CTX, OPT_QUALITY_SCORE_FROM,
                                  OPT_QUALITY_BUCKET};
    for (size_t i = 0; !wanted && i < sizeof with / sizeof with[0]; i++)
        if (opt_given(v, with[i]))
            return cli_usage_error("stress", "--%s measures quality: give --quality too",
                                   opt_defs[with[i]].flag);
    if (!wanted)
        return -1;
    r->ctx = (int64_t)opt_int(v, OPT_QUALITY_CTX);
    r->score_from =
        opt_given(v, OPT_QUALITY_SCORE_FROM) ? (int64_t)opt_int(v, OPT_QUALITY_SCORE_FROM) : -1;
    r->bucket = (int64_t)opt_int(v, OPT_QUALITY_BUCKET);
    const char *path = opt_given(v, OPT_STRESS_TEXT) ? v->v[OPT_STRESS_TEXT].s : NULL;
    char err[1024];
    if (!(o->text = stress_text_load(path, err, sizeof err))) {
        fprintf(stderr, "infertop stress: %s\n", err);
        return CLI_USAGE;
    }
    r->text = o->text;
    snprintf(r->text_name, sizeof r->text_name, "%s", path ? path : stress_text_builtin_name);
    return -1;
}

/* Returns -1 to go on, else an exit code (--help, a bad option). */
static int parse_options(int argc, char **argv, sopts *o)
{
    opt_vals v;
    stress_opts *r = &o->run;
    int rc = cli_parse(OPT_V_STRESS, argc, argv, &v);
    if (rc >= 0)
        return rc;
    *o = (sopts){.config = opt_str(&v, OPT_CONFIG),
                 .control = opt_str(&v, OPT_STRESS_CONTROL),
                 .telemetry = opt_str(&v, OPT_STRESS_TELEMETRY),
                 .node = opt_str(&v, OPT_STRESS_NODE),
                 .db = opt_str(&v, OPT_DB),
                 .json = opt_given(&v, OPT_JSON)};
    stress_opts_init(r);
    r->mode = mode_named(opt_mode_word(OPT_V_STRESS, v.verb));
    if (of_mode(&v, OPT_LEG))
        r->leg_mode = mode_named(opt_str(&v, OPT_LEG));
    take_shape(&v, r);
    r->timeout_s = opt_num(&v, OPT_STRESS_TIMEOUT);
    r->stop_on_failure = opt_given(&v, OPT_STOP_ON_FAILURE);
    r->keep_last = of_mode(&v, OPT_KEEP_LAST) && opt_given(&v, OPT_KEEP_LAST);
    /* The rows' lengths are the buffers' (opt_table.c). */
    snprintf(r->name, sizeof r->name, "%s", opt_given(&v, OPT_RUN_NAME) ? v.v[OPT_RUN_NAME].s : "");
    snprintf(r->notes, sizeof r->notes, "%s",
             opt_given(&v, OPT_RUN_NOTES) ? v.v[OPT_RUN_NOTES].s : "");
    if (opt_given(&v, OPT_FACTOR) && opt_given(&v, OPT_STEP))
        return cli_usage_error("stress", "--factor and --step exclude each other%s", "");
    if (r->mode == STORE_MODE_SWEEP &&
        (rc = check_leg(&v, r->leg_mode == STORE_MODE_GROWTH ? OPT_V_STRESS_GROWTH
                                                             : OPT_V_STRESS_FIXED)) >= 0)
        return rc;
    r->quality = of_mode(&v, OPT_SWEEP_QUALITY) && opt_given(&v, OPT_SWEEP_QUALITY);
    if ((rc = take_list(&v, OPT_KV_BITS, r->kv_bits, &r->n_kv_bits)) >= 0 ||
        (rc = take_list(&v, OPT_PREFILL_STEP, r->prefill_step, &r->n_prefill_step)) >= 0 ||
        (rc = take_list(&v, OPT_CONCURRENCY, r->concurrency, &r->n_concurrency)) >= 0)
        return rc;
    return take_quality(&v, o);
}

/* Splits "a,b" into n endpoints of the target. */
static int split_endpoints(const char *list, stress_target *t, int telemetry)
{
    char buf[STRESS_NODES_MAX * STRESS_EP_MAX];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf)
        return -1;
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == STRESS_NODES_MAX)
            return -1;
        char *dst = telemetry ? t->nodes[n].telemetry : t->nodes[n].control;
        if (snprintf(dst, STRESS_EP_MAX, "%s", tok) >= STRESS_EP_MAX)
            return -1;
        n++;
    }
    return n;
}

/* The node a sweep over HTTP restarts between legs: the cluster stays
 * loaded for the run. */
struct knob_node {
    struct cluster *c;
    int node;
};

/* stress_apply_knobs_fn: the leg's values by restart over SSH (knobs.h);
 * 0 means "not swept". */
static int apply_knobs(void *ctx, int kv_bits, int prefill_step, double *took_s, char *err,
                       size_t errlen)
{
    const struct knob_node *k = ctx;
    proto_set_args want = {.has_kv_bits = kv_bits != 0,
                           .kv_bits = kv_bits,
                           .has_prefill_step = prefill_step != 0,
                           .prefill_step = prefill_step};
    return knobs_apply(k->c, k->node, &want, took_s, err, errlen);
}

/* Fills t; for --node, k keeps the cluster (the caller frees k->c). */
static int load_target(const sopts *o, stress_target *t, struct knob_node *k)
{
    memset(t, 0, sizeof *t);
    memset(k, 0, sizeof *k);
    if (o->node && (o->control || o->telemetry))
        return cli_usage_error("stress", "--node and --control/--telemetry exclude each other%s",
                               "");
    if (o->control || o->telemetry) {
        if (o->config)
            return cli_usage_error("stress", "-c and --control/--telemetry exclude each other%s",
                                   "");
        if (!o->control || !o->telemetry)
            return cli_usage_error("stress", "--control and --telemetry go together%s", "");
        int nc = split_endpoints(o->control, t, 0);
        int nt = split_endpoints(o->telemetry, t, 1);
        if (nc < 1 || nt < 1)
            return cli_usage_error("stress", "--control/--telemetry: expected 1..16 endpoints%s",
                                   "");
        if (nc != nt) {
            fprintf(stderr, "infertop stress: %d control but %d telemetry endpoints given\n", nc,
                    nt);
            return CLI_USAGE;
        }
        t->n_nodes = nc;
        snprintf(t->cluster, sizeof t->cluster, "local");
        return -1;
    }
    char path[CLUSTER_PATH_MAX], err[1024];
    struct cluster *c;
    if (cluster_locate(o->config, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop stress: %s\n", err);
        return CLI_ERROR;
    }
    if (o->node ? console_runs_http_target(c, o->node, t, err, sizeof err) != 0
                : console_runs_target(c, t, err, sizeof err) != 0) {
        fprintf(stderr, "infertop stress: %s\n", err);
        cluster_free(c);
        return CLI_ERROR;
    }
    if (!o->node) {
        cluster_free(c);
        return -1;
    }
    /* A sweep over the node's knobs restarts it between legs: every value
     * it will restart with is checked now (the engine takes it, the node
     * has `ssh` and `start`), before anything is recorded. */
    const struct cluster_node *n = cluster_node_find(c, o->node);
    const stress_http_node *h = &t->http_node;
    char line[CLUSTER_START_MAX];
    const stress_opts *r = &o->run;
    int nk = r->n_kv_bits ? r->n_kv_bits : 1, ns = r->n_prefill_step ? r->n_prefill_step : 1;
    /* A top-k quality estimate restarts with the engine's reference
     * (checked as kv_bits[-1]) and each kv_bits, at the node's step. */
    int quality = r->mode == STORE_MODE_QUALITY;
    for (int i = quality ? -1 : 0; (r->mode == STORE_MODE_SWEEP || quality) && i < nk; i++)
        for (int j = 0; j < ns; j++) {
            int kv = i < 0          ? eng_knob_ref_bits(h->engine)
                     : r->n_kv_bits ? r->kv_bits[i]
                                    : h->kv_bits;
            int step = r->n_prefill_step ? r->prefill_step[j] : h->prefill_step;
            proto_set_args want = {.has_kv_bits = quality || kv != h->kv_bits,
                                   .kv_bits = kv,
                                   .has_prefill_step = step != h->prefill_step,
                                   .prefill_step = step};
            if ((want.has_kv_bits || want.has_prefill_step) &&
                knobs_start_line(n, NULL, &want, line, sizeof line, err, sizeof err) != 0) {
                fprintf(stderr, "infertop stress: %s restarts node '%s' between legs: %s\n",
                        quality ? "the top-k quality estimate" : "the sweep", n->name, err);
                cluster_free(c);
                return CLI_USAGE;
            }
        }
    k->c = c;
    k->node = (int)(n - c->nodes);
    t->apply_knobs = apply_knobs;
    t->knobs_ctx = k;
    return -1;
}

/* ---- progress ---- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void fmt_clock(double s, char *buf, size_t len)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%02ld:%02ld", t / 60, t % 60);
}

/* "ctx 512/4096" for growth legs, "req 12/100" (or "req 12") otherwise. */
static void fmt_where(const stress_progress *p, char *buf, size_t len)
{
    if (p->ctx_target > 0)
        snprintf(buf, len, "ctx %lld/%lld", (long long)p->ctx, (long long)p->ctx_target);
    else if (p->requests_total > 0)
        snprintf(buf, len, "req %lld/%lld", (long long)p->requests_done,
                 (long long)p->requests_total);
    else
        snprintf(buf, len, "req %lld", (long long)p->requests_done);
}

static void draw_bar(const stress_progress *p)
{
    double f = p->ctx_target > 0       ? (double)p->ctx / (double)p->ctx_target
               : p->requests_total > 0 ? (double)p->requests_done / (double)p->requests_total
               : p->eta_s >= 0 && p->elapsed_s > 0 ? p->elapsed_s / (p->elapsed_s + p->eta_s)
                                                   : 0.0;
    int fill = (int)(fmax(0.0, fmin(1.0, f)) * 20.0);
    char bar[21], where[64], el[48], eta[48];
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, ' ', (size_t)(20 - fill));
    bar[20] = '\0';
    fmt_where(p, where, sizeof where);
    fmt_clock(p->elapsed_s, el, sizeof el);
    fmt_clock(p->eta_s, eta, sizeof eta);
    fprintf(stderr, "\r[%s] ", bar);
    if (p->n_legs > 1)
        fprintf(stderr, "leg %d/%d  ", p->leg + 1, p->n_legs);
    fprintf(stderr, "%s  %.0f tok/s p50  %.0f agg tok/s  %s elapsed", where, p->decode_p50,
            p->agg_tps, el);
    if (p->eta_s >= 0)
        fprintf(stderr, "  ETA %s", eta);
    if (p->requests_failed)
        fprintf(stderr, "  %lld failed", (long long)p->requests_failed);
    fputs("\033[K", stderr);
}

static void print_line(const stress_progress *p)
{
    char where[64], el[48], eta[48];
    fmt_where(p, where, sizeof where);
    fmt_clock(p->elapsed_s, el, sizeof el);
    fmt_clock(p->eta_s, eta, sizeof eta);
    fprintf(stderr,
            "stress: leg %d/%d (kv_bits %d, prefill_step %d, concurrency %d): request %lld ended, "
            "%s, %.1f decode tok/s p50, %.1f aggregate tok/s, %s elapsed",
            p->leg + 1, p->n_legs, p->kv_bits, p->prefill_step, p->concurrency,
            (long long)p->requests_done, where, p->decode_p50, p->agg_tps, el);
    if (p->eta_s >= 0)
        fprintf(stderr, ", ETA %s", eta);
    if (p->requests_failed)
        fprintf(stderr, ", %lld failed (%s)", (long long)p->requests_failed, p->last_error);
    fputc('\n', stderr);
}

/* Watches the run until it ends, passing a signal on as an abort. */
static void watch(stress_run *run)
{
    int tty = isatty(STDERR_FILENO);
    int64_t shown = -1;
    int aborted = 0;
    stress_progress p;
    for (;;) {
        stress_progress_get(run, &p);
        if (interrupted && !aborted) {
            aborted = 1;
            stress_abort(run);
        }
        if (p.state == STRESS_RUNNING && tty)
            draw_bar(&p);
        else if (!tty && p.requests_done != shown && p.requests_done > 0)
            print_line(&p);
        shown = p.requests_done;
        if (p.state == STRESS_FINISHED)
            break;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (tty)
        fputs("\r\033[K", stderr);
}

/* ---- the result ---- */

static void print_leg_table(const store_summary *sum)
{
    static const char *const head[] = {
        "LEG",     "KV_BITS",  "PREFILL",  "CONC",     "STATUS",         "REQS",    "FAILED",
        "MAX_CTX", "TTFT_P50", "TTFT_P99", "TPOT_P50", "DECODE_TPS_P50", "E2E_P99", "AGG_TPS"};
    cli_table *t = cli_table_new(14, head);
    for (size_t i = 0; t && i < sum->n_legs; i++) {
        const store_leg_summary *l = &sum->legs[i];
        char c[13][32];
        snprintf(c[0], 32, "%d", l->idx);
        snprintf(c[1], 32, "%d", l->kv_bits);
        snprintf(c[2], 32, "%d", l->prefill_step);
        snprintf(c[3], 32, "%d", l->concurrency);
        snprintf(c[4], 32, "%lld", (long long)l->requests);
        snprintf(c[5], 32, "%lld", (long long)l->failed);
        if (l->max_context >= 0)
            snprintf(c[6], 32, "%lld", (long long)l->max_context);
        else
            snprintf(c[6], 32, "-");
        snprintf(c[7], 32, "%.2f", l->ttft_ms.p50);
        snprintf(c[8], 32, "%.2f", l->ttft_ms.p99);
        snprintf(c[9], 32, "%.2f", l->tpot_ms.p50);
        snprintf(c[10], 32, "%.1f", l->decode_tps.p50);
        snprintf(c[11], 32, "%.2f", l->e2e_ms.p99);
        if (isnan(l->agg_tps))
            snprintf(c[12], 32, "-");
        else
            snprintf(c[12], 32, "%.1f", l->agg_tps);
        const char *row[] = {c[0], c[1], c[2], c[3], l->status, c[4],  c[5],
                             c[6], c[7], c[8], c[9], c[10],     c[11], c[12]};
        cli_table_add(t, row);
    }
    if (t)
        cli_table_print(t, stdout);
    cli_table_free(t);
}

static void print_text(const stress_result *res, const store_summary *sum,
                       const store_quality_list *q)
{
    if (sum && strcmp(sum->run.mode, "quality") == 0) {
        printf("run %lld %s: quality, %zu of %zu setting%s measured\n", (long long)res->run_id,
               store_status_name(res->status), q->n, sum->n_legs, sum->n_legs == 1 ? "" : "s");
        if (res->failure[0])
            printf("failure: %s\n", res->failure);
        if (cli_quality_print(q, sum, 0) != 0)
            fputs("infertop stress: out of memory printing the quality\n", stderr);
        printf("\n(infertop history show %lld --full for the depth buckets)\n",
               (long long)res->run_id);
        return;
    }
    printf("run %lld %s: %s, %lld request%s (%lld failed) in %.2f s\n", (long long)res->run_id,
           store_status_name(res->status), sum ? sum->run.mode : "-", (long long)res->requests,
           res->requests == 1 ? "" : "s", (long long)res->failed, res->wall_s);
    if (res->unrecorded)
        printf("%lld more request%s ended but could not be recorded\n", (long long)res->unrecorded,
               res->unrecorded == 1 ? "" : "s");
    if (sum)
        printf("max context %lld; last context %lld\n", (long long)sum->run.max_context,
               (long long)sum->run.last_context);
    printf("throughput %.3f requests/s, %.1f tokens/s\n", res->req_per_s, res->tok_per_s);
    if (res->drift.valid)
        printf("drift (first -> last decile): TTFT %.2f -> %.2f ms, E2E %.2f -> %.2f ms, "
               "decode %.1f -> %.1f tok/s\n",
               res->drift.ttft_first, res->drift.ttft_last, res->drift.e2e_first,
               res->drift.e2e_last, res->drift.decode_first, res->drift.decode_last);
    if (res->failure[0])
        printf("failure: %s\n", res->failure);
    if (sum && sum->n_legs) {
        putchar('\n');
        print_leg_table(sum);
    }
    if (cli_quality_print(q, sum, 0) != 0)
        fputs("infertop stress: out of memory printing the quality\n", stderr);
    printf("\n(infertop history show %lld for the step percentiles)\n", (long long)res->run_id);
}

static int print_json(const stress_result *res, const store_summary *sum,
                      const store_quality_list *q)
{
    json_t *o = json_pack("{sI ss sI sI sf sf sf}", "run", (json_int_t)res->run_id, "status",
                          store_status_name(res->status), "requests", (json_int_t)res->requests,
                          "failed", (json_int_t)res->failed, "wall_s", res->wall_s, "req_per_s",
                          res->req_per_s, "tok_per_s", res->tok_per_s);
    if (!o)
        return -1;
    json_object_set_new(o, "failure", res->failure[0] ? json_string(res->failure) : json_null());
    if (res->unrecorded)
        json_object_set_new(o, "unrecorded", json_integer(res->unrecorded));
    if (res->drift.valid)
        json_object_set_new(o, "drift",
                            json_pack("{sf sf sf sf sf sf}", "ttft_ms_first", res->drift.ttft_first,
                                      "ttft_ms_last", res->drift.ttft_last, "e2e_ms_first",
                                      res->drift.e2e_first, "e2e_ms_last", res->drift.e2e_last,
                                      "decode_tps_first", res->drift.decode_first,
                                      "decode_tps_last", res->drift.decode_last));
    if (sum)
        json_object_set_new(o, "summary", store_summary_json(sum));
    json_object_set_new(o, "quality", cli_quality_json(q));
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    fputc('\n', stdout);
    json_decref(o);
    return rc;
}

static int exit_code(const stress_result *res)
{
    if (res->store_failed)
        return CLI_NO_DB;
    switch (res->status) {
    case STORE_COMPLETED:
        return CLI_OK;
    case STORE_ABORTED:
        return CLI_INTERRUPTED;
    default:
        return res->requests == 0 && res->measurements == 0 ? CLI_ERROR : CLI_RUN_FAILED;
    }
}

static int report(store *db, const stress_result *res, int json)
{
    store_summary sum;
    char err[512];
    store_quality_list q = {0};
    int have = res->run_id > 0 && store_run_summary(db, res->run_id, &sum, err, sizeof err) == 0;
    if (have && store_run_quality(db, res->run_id, &q, err, sizeof err) != 0) {
        store_summary_free(&sum);
        have = 0;
    }
    if (res->run_id > 0 && !have)
        fprintf(stderr, "infertop stress: summary of run %lld: %s\n", (long long)res->run_id, err);
    int failed = json ? print_json(res, have ? &sum : NULL, &q) != 0 : 0;
    if (!json)
        print_text(res, have ? &sum : NULL, &q);
    if (have)
        store_summary_free(&sum);
    store_quality_list_free(&q);
    if (fflush(stdout) != 0 || failed) {
        fprintf(stderr, "infertop stress: writing the result: %s\n", strerror(errno));
        return CLI_ERROR;
    }
    return exit_code(res);
}

/* Runs the stress on target and reports it. */
static int drive(const sopts *o, const stress_target *target)
{
    char err[1024];
    store *db = store_open(o->db, NULL, err, sizeof err);
    if (!db) {
        fprintf(stderr, "infertop stress: %s\n", err);
        return CLI_NO_DB;
    }
    /* Installed whatever the shell did: a background job starts with
     * SIGINT ignored, and an operator's kill -INT must still stop it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    stress_run *run;
    if (stress_start(&run, &o->run, target, db, err, sizeof err) != 0) {
        fprintf(stderr, "infertop stress: %s\n", err);
        store_close(db);
        return CLI_ERROR;
    }
    watch(run);
    stress_result res;
    stress_wait(run, &res);
    stress_free(run);
    if (res.failure[0] && !o->json)
        fprintf(stderr, "infertop stress: %s\n", res.failure);
    int rc = report(db, &res, o->json);
    store_close(db);
    return rc;
}

/* After the options: the checks, the target and the run. */
static int stress_with(sopts *o)
{
    char err[1024];
    if (stress_opts_check(&o->run, err, sizeof err) != 0)
        return cli_usage_error("stress", "%s", err);
    stress_target target;
    struct knob_node knobs;
    int rc = load_target(o, &target, &knobs);
    if (rc >= 0)
        return rc;
    rc = drive(o, &target);
    cluster_free(knobs.c);
    return rc;
}

int cli_stress(int argc, char **argv)
{
    sopts o = {0};
    int rc = parse_options(argc, argv, &o);
    if (rc < 0)
        rc = stress_with(&o);
    free(o.text);
    return rc;
}
