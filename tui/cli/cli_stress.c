/* cli_stress.c: `infertop stress`, the stress runner from a terminal or a
 * script. It runs the stress module's thread and watches its progress: a
 * bar on stderr when stderr is a terminal, one plain line per ended
 * request otherwise. Ctrl-C (SIGINT) or SIGTERM asks the run to stop: it
 * is recorded as aborted with everything so far, and the exit code is 130.
 * At the end it prints the run id and a summary (or JSON with --json). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tui/core/cluster.h"
#include "tui/stress/console_runs.h"
#include "tui/stress/stress.h"

/* Options, by the modes that take them (bits of `seen`). */
enum {
    O_FROM = 1 << 0,
    O_TO = 1 << 1,
    O_FACTOR = 1 << 2,
    O_STEP = 1 << 3,
    O_GEN = 1 << 4,
    O_REQUESTS = 1 << 5,
    O_PROMPT = 1 << 6,
    O_CONC = 1 << 7,
    O_RATE = 1 << 8,
    O_SEED = 1 << 9,
    O_DURATION = 1 << 10,
    O_KV_BITS = 1 << 11,
    O_PREFILL = 1 << 12,
    O_LEG = 1 << 13,
    N_MODE_OPTS = 14
};

static const char *const opt_names[N_MODE_OPTS] = {
    "--from",          "--to",          "--factor", "--step", "--gen",      "--requests",
    "--prompt-tokens", "--concurrency", "--rate",   "--seed", "--duration", "--kv-bits",
    "--prefill-step",  "--leg"};

#define GROWTH_OPTS (O_FROM | O_TO | O_FACTOR | O_STEP | O_GEN)
#define FIXED_OPTS (O_REQUESTS | O_PROMPT | O_GEN | O_CONC | O_RATE | O_SEED)
#define SOAK_OPTS (O_DURATION | O_PROMPT | O_GEN | O_CONC | O_RATE | O_SEED)
#define SWEEP_OPTS (O_KV_BITS | O_PREFILL | O_LEG)

typedef struct sopts {
    stress_opts run;
    const char *config;
    const char *control, *telemetry;
    const char *db;
    int json;
    unsigned seen;
} sopts;

static void cli_stress_usage(FILE *out)
{
    fputs("usage: infertop stress growth|fixed|soak|sweep [OPTIONS]\n"
          "\n"
          "Drives the head of a ring with synthetic requests and records every request,\n"
          "every step of every node and every event to the history database.\n"
          "\n"
          "  growth  one session; the context grows from --from to --to (by --factor,\n"
          "          or by --step tokens), each request generating --gen tokens; stops\n"
          "          at --to or at the first failure (kv_oom, ctx_limit, timeout, ...)\n"
          "          --from N (64)  --to N (required)  --factor F (2) | --step N  --gen N (8)\n"
          "  fixed   --requests N (16) of --prompt-tokens N (128) + --gen N (8), keeping\n"
          "          --concurrency C (1, at most 64) in flight at once, optionally at\n"
          "          Poisson arrivals of --rate R per second (--seed S, 1); reports\n"
          "          requests/s and tokens/s\n"
          "  soak    fixed-shape requests for --duration D (required: 90, 90s, 15m, 2h);\n"
          "          reports drift: the first against the last decile of requests\n"
          "  sweep   --kv-bits LIST and --prefill-step LIST (comma-separated): one leg per\n"
          "          pair, applied live with `set` and checked in every node's telemetry\n"
          "          before the leg; --leg growth|fixed (growth) and that leg's options;\n"
          "          fixed legs take --concurrency LIST (1,4,16) as a third axis\n"
          "\n"
          "target (a cluster file, or the endpoints of every node of a local ring):\n"
          "  -c, --config FILE     cluster file (default ./infertop.conf, then\n"
          "                        $XDG_CONFIG_HOME/infertop/cluster.conf)\n"
          "  --control EP,...      every node's control endpoint\n"
          "  --telemetry EP,...    their telemetry endpoints, in the same order\n"
          "\n"
          "every mode:\n"
          "  --timeout SEC         a request that hears nothing (no token, no step) this\n"
          "                        long fails as `timeout` (default 60)\n"
          "  --stop-on-failure     stop the run at the first failed request\n"
          "  --name TEXT, --notes TEXT   recorded with the run\n"
          "  --db PATH             the history database (default\n"
          "                        $XDG_DATA_HOME/infertop/history.db)\n"
          "  --json                the result as JSON on stdout\n"
          "\n"
          "A node without a heartbeat for 3 s is down: the request in flight fails as\n"
          "`node_down`. Ctrl-C stops the run cleanly; it is recorded as aborted.\n"
          "\n"
          "Each leg records its concurrency and its aggregate tok/s (the tokens of all\n"
          "its requests over its wall time). The head runs its max_seqs requests at\n"
          "once and queues 16 more: a concurrency above that gets `busy` refusals,\n"
          "recorded as failed requests.\n"
          "\n"
          "A write to the database that fails (a full disk) stops the run at once: the\n"
          "error is printed and the run is marked failed if the disk allows.\n"
          "\n"
          "exit codes: 0 the run completed, 1 it failed before any request (node\n"
          "unreachable, incomplete ring) or an output error, 2 bad command line,\n"
          "4 database cannot be opened or written, 5 a request or leg failed\n"
          "(recorded), 130 interrupted (recorded as aborted)\n",
          out);
}

/* ---- values ---- */

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* 90, 90s, 15m, 2h. */
static int parse_duration(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = 1.0;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        unit = 60.0, end++;
    else if (*end == 'h')
        unit = 3600.0, end++;
    if (errno || end == s || *end || !isfinite(v) || v <= 0)
        return -1;
    *out = v * unit;
    return 0;
}

static int parse_mode(const char *s, store_mode *m)
{
    static const store_mode modes[] = {STORE_MODE_GROWTH, STORE_MODE_FIXED, STORE_MODE_SOAK,
                                       STORE_MODE_SWEEP};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(s, store_mode_name(modes[i])) == 0) {
            *m = modes[i];
            return 0;
        }
    return -1;
}

/* ---- command line ---- */

/* Returns -1 to go on, else an exit code (--help, a bad option). */
static int parse_options(int argc, char **argv, sopts *o)
{
    enum {
        L_CONFIG = 1 << 16,
        L_CONTROL,
        L_TELEMETRY,
        L_TIMEOUT,
        L_STOP,
        L_NAME,
        L_NOTES,
        L_DB,
        L_JSON,
        L_HELP
    };
    static const struct option longs[] = {
        {"config", required_argument, NULL, L_CONFIG},
        {"control", required_argument, NULL, L_CONTROL},
        {"telemetry", required_argument, NULL, L_TELEMETRY},
        {"timeout", required_argument, NULL, L_TIMEOUT},
        {"stop-on-failure", no_argument, NULL, L_STOP},
        {"name", required_argument, NULL, L_NAME},
        {"notes", required_argument, NULL, L_NOTES},
        {"db", required_argument, NULL, L_DB},
        {"json", no_argument, NULL, L_JSON},
        {"help", no_argument, NULL, L_HELP},
        {"from", required_argument, NULL, O_FROM},
        {"to", required_argument, NULL, O_TO},
        {"factor", required_argument, NULL, O_FACTOR},
        {"step", required_argument, NULL, O_STEP},
        {"gen", required_argument, NULL, O_GEN},
        {"requests", required_argument, NULL, O_REQUESTS},
        {"prompt-tokens", required_argument, NULL, O_PROMPT},
        {"concurrency", required_argument, NULL, O_CONC},
        {"rate", required_argument, NULL, O_RATE},
        {"seed", required_argument, NULL, O_SEED},
        {"duration", required_argument, NULL, O_DURATION},
        {"kv-bits", required_argument, NULL, O_KV_BITS},
        {"prefill-step", required_argument, NULL, O_PREFILL},
        {"leg", required_argument, NULL, O_LEG},
        {NULL, 0, NULL, 0},
    };
    stress_opts *r = &o->run;
    int64_t n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "hc:", longs, NULL)) != -1) {
        if (c > 0 && c < (1 << N_MODE_OPTS) && (c & (c - 1)) == 0)
            o->seen |= (unsigned)c; /* a mode option (short options are no power of two) */
        switch (c) {
        case 'c':
        case L_CONFIG:
            o->config = optarg;
            break;
        case L_CONTROL:
            o->control = optarg;
            break;
        case L_TELEMETRY:
            o->telemetry = optarg;
            break;
        case L_TIMEOUT:
            if (parse_double(optarg, &r->timeout_s) != 0)
                return cli_usage_error("stress", "--timeout: \"%s\" is not a number of seconds",
                                       optarg);
            break;
        case L_STOP:
            r->stop_on_failure = 1;
            break;
        case L_NAME:
        case L_NOTES: {
            char *dst = c == L_NAME ? r->name : r->notes;
            if (snprintf(dst, STRESS_TEXT_MAX, "%s", optarg) >= STRESS_TEXT_MAX)
                return cli_usage_error("stress", "%s: at most 255 bytes",
                                       c == L_NAME ? "--name" : "--notes");
            break;
        }
        case L_DB:
            o->db = optarg;
            break;
        case L_JSON:
            o->json = 1;
            break;
        case 'h':
        case L_HELP:
            cli_stress_usage(stdout);
            return CLI_OK;
        case O_FROM:
        case O_TO:
        case O_STEP:
        case O_REQUESTS:
            if (cli_parse_i64(optarg, 1, INT64_MAX / 2, &n) != 0)
                return cli_usage_error("stress", "\"%s\" is not a positive number", optarg);
            *(c == O_FROM   ? &r->from
              : c == O_TO   ? &r->to
              : c == O_STEP ? &r->step
                            : &r->requests) = n;
            if (c == O_STEP)
                r->factor = 0;
            break;
        case O_FACTOR:
            if (parse_double(optarg, &r->factor) != 0)
                return cli_usage_error("stress", "--factor: \"%s\" is not a number", optarg);
            break;
        case O_GEN:
        case O_PROMPT:
            if (cli_parse_i64(optarg, 0, 1 << 24, &n) != 0)
                return cli_usage_error("stress", "\"%s\" is not a number in 0..16777216", optarg);
            *(c == O_GEN ? &r->gen : &r->prompt_tokens) = (int)n;
            break;
        case O_RATE:
            if (parse_double(optarg, &r->rate) != 0)
                return cli_usage_error("stress", "--rate: \"%s\" is not a number", optarg);
            break;
        case O_SEED:
            if (cli_parse_i64(optarg, 0, INT64_MAX, &n) != 0)
                return cli_usage_error("stress", "--seed: \"%s\" is not a number >= 0", optarg);
            r->seed = (uint64_t)n;
            break;
        case O_DURATION:
            if (parse_duration(optarg, &r->duration_s) != 0)
                return cli_usage_error(
                    "stress", "--duration: \"%s\" is not a duration (90, 90s, 15m, 2h)", optarg);
            break;
        case O_KV_BITS:
        case O_PREFILL:
        case O_CONC: {
            /* Lists all three; outside a sweep --concurrency takes one value
             * (stress_opts_check). */
            char err[256];
            int rc = c == O_KV_BITS   ? stress_parse_list("--kv-bits", optarg, r->kv_bits,
                                                          &r->n_kv_bits, err, sizeof err)
                     : c == O_PREFILL ? stress_parse_list("--prefill-step", optarg, r->prefill_step,
                                                          &r->n_prefill_step, err, sizeof err)
                                      : stress_parse_list("--concurrency", optarg, r->concurrency,
                                                          &r->n_concurrency, err, sizeof err);
            if (rc != 0)
                return cli_usage_error("stress", "%s", err);
            break;
        }
        case O_LEG:
            if (parse_mode(optarg, &r->leg_mode) != 0 ||
                (r->leg_mode != STORE_MODE_GROWTH && r->leg_mode != STORE_MODE_FIXED))
                return cli_usage_error("stress", "--leg: \"%s\" is not growth or fixed", optarg);
            break;
        default:
            return cli_usage_error("stress", "unknown or incomplete option %s", argv[optind - 1]);
        }
    }
    return -1;
}

/* The options the mode takes; one given for another mode is a mistake
 * worth saying (a --requests on a growth run does nothing). */
static int check_applicable(const sopts *o)
{
    const stress_opts *r = &o->run;
    unsigned ok = r->mode == STORE_MODE_GROWTH  ? GROWTH_OPTS
                  : r->mode == STORE_MODE_FIXED ? FIXED_OPTS
                  : r->mode == STORE_MODE_SOAK
                      ? SOAK_OPTS
                      : SWEEP_OPTS | (r->leg_mode == STORE_MODE_GROWTH ? GROWTH_OPTS : FIXED_OPTS);
    unsigned extra = o->seen & ~ok;
    if (extra) {
        for (int i = 0; i < N_MODE_OPTS; i++)
            if (extra & (1u << i))
                return cli_usage_error("stress", "%s does not apply to this mode", opt_names[i]);
    }
    int growth = r->mode == STORE_MODE_GROWTH ||
                 (r->mode == STORE_MODE_SWEEP && r->leg_mode == STORE_MODE_GROWTH);
    if (growth && !(o->seen & O_TO))
        return cli_usage_error("stress", "growth needs --to (the target context)%s", "");
    if ((o->seen & O_FACTOR) && (o->seen & O_STEP))
        return cli_usage_error("stress", "--factor and --step exclude each other%s", "");
    return -1;
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

static int load_target(const sopts *o, stress_target *t)
{
    memset(t, 0, sizeof *t);
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
    int rc = -1;
    if (console_runs_target(c, t, err, sizeof err) != 0) {
        fprintf(stderr, "infertop stress: %s\n", err);
        rc = CLI_ERROR;
    }
    cluster_free(c);
    return rc;
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
    fprintf(stderr, "%s  %.0f tok/s  %.0f agg tok/s  %s elapsed", where, p->tok_s, p->agg_tps, el);
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
            "%s, %.1f tok/s, %.1f aggregate tok/s, %s elapsed",
            p->leg + 1, p->n_legs, p->kv_bits, p->prefill_step, p->concurrency,
            (long long)p->requests_done, where, p->tok_s, p->agg_tps, el);
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

static void print_text(const stress_result *res, const store_summary *sum)
{
    printf("run %lld %s: %s, %lld request%s (%lld failed) in %.2f s\n", (long long)res->run_id,
           store_status_name(res->status), sum ? sum->run.mode : "-", (long long)res->requests,
           res->requests == 1 ? "" : "s", (long long)res->failed, res->wall_s);
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
    printf("\n(infertop history show %lld for the step percentiles)\n", (long long)res->run_id);
}

static int print_json(const stress_result *res, const store_summary *sum)
{
    json_t *o = json_pack("{sI ss sI sI sf sf sf}", "run", (json_int_t)res->run_id, "status",
                          store_status_name(res->status), "requests", (json_int_t)res->requests,
                          "failed", (json_int_t)res->failed, "wall_s", res->wall_s, "req_per_s",
                          res->req_per_s, "tok_per_s", res->tok_per_s);
    if (!o)
        return -1;
    json_object_set_new(o, "failure", res->failure[0] ? json_string(res->failure) : json_null());
    if (res->drift.valid)
        json_object_set_new(o, "drift",
                            json_pack("{sf sf sf sf sf sf}", "ttft_ms_first", res->drift.ttft_first,
                                      "ttft_ms_last", res->drift.ttft_last, "e2e_ms_first",
                                      res->drift.e2e_first, "e2e_ms_last", res->drift.e2e_last,
                                      "decode_tps_first", res->drift.decode_first,
                                      "decode_tps_last", res->drift.decode_last));
    if (sum)
        json_object_set_new(o, "summary", store_summary_json(sum));
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
        return res->requests == 0 ? CLI_ERROR : CLI_RUN_FAILED;
    }
}

static int report(store *db, const stress_result *res, int json)
{
    store_summary sum;
    char err[512];
    int have = res->run_id > 0 && store_run_summary(db, res->run_id, &sum, err, sizeof err) == 0;
    if (res->run_id > 0 && !have)
        fprintf(stderr, "infertop stress: summary of run %lld: %s\n", (long long)res->run_id, err);
    int failed = json ? print_json(res, have ? &sum : NULL) != 0 : 0;
    if (!json)
        print_text(res, have ? &sum : NULL);
    if (have)
        store_summary_free(&sum);
    if (fflush(stdout) != 0 || failed) {
        fprintf(stderr, "infertop stress: writing the result: %s\n", strerror(errno));
        return CLI_ERROR;
    }
    return exit_code(res);
}

int cli_stress(int argc, char **argv)
{
    sopts o;
    memset(&o, 0, sizeof o);
    stress_opts_init(&o.run);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        cli_stress_usage(stdout);
        return CLI_OK;
    }
    if (argc < 2 || parse_mode(argv[1], &o.run.mode) != 0)
        return cli_usage_error("stress", "expected a mode: growth, fixed, soak or sweep%s", "");
    int rc = parse_options(argc - 1, argv + 1, &o);
    if (rc >= 0)
        return rc;
    if (optind < argc - 1)
        return cli_usage_error("stress", "unexpected argument \"%s\"", argv[optind + 1]);
    if ((rc = check_applicable(&o)) >= 0)
        return rc;
    char err[1024];
    if (stress_opts_check(&o.run, err, sizeof err) != 0)
        return cli_usage_error("stress", "%s", err);
    stress_target target;
    if ((rc = load_target(&o, &target)) >= 0)
        return rc;

    store *db = store_open(o.db, NULL, err, sizeof err);
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
    if (stress_start(&run, &o.run, &target, db, err, sizeof err) != 0) {
        fprintf(stderr, "infertop stress: %s\n", err);
        store_close(db);
        return CLI_ERROR;
    }
    watch(run);
    stress_result res;
    stress_wait(run, &res);
    stress_free(run);
    if (res.failure[0] && !o.json)
        fprintf(stderr, "infertop stress: %s\n", res.failure);
    rc = report(db, &res, o.json);
    store_close(db);
    return rc;
}
