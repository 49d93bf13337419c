/* cli_plan.c: `infertop plan`, the layer planner (tui/plan) from a
 * terminal or a script: it gathers what the cluster says (status, facts
 * over SSH, the file), prints the planned layout beside the current one,
 * and writes or applies it when asked. */
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tui/core/cluster.h"
#include "tui/plan/plan.h"
#include "tui/plan/plan_apply.h"
#include "tui/plan/plan_file.h"
#include "tui/plan/plan_gather.h"

#define PLAN_STATUS_TIMEOUT_S 3

typedef struct popts {
    const char *config, *model, *write;
    int ctx, kv_bits, json, apply, no_ssh, accept_new, timeout_s, wait_s;
} popts;

static void usage(FILE *out)
{
    fputs("usage: infertop plan --ctx N [--kv-bits B] [--model SPEC] [-c FILE] [--json]\n"
          "                     [--timeout SEC] [--no-ssh] [--accept-new]\n"
          "                     [--write FILE | --apply [--wait SEC]]\n"
          "\n"
          "Places the model's layers on the nodes of the cluster file, in ring order, so\n"
          "that on every node the weights, the KV cache at context N, the scratch of a\n"
          "prefill chunk, the memory guard's reserve (max(32 MiB, budget/16)) and the\n"
          "process's own memory fit its budget. Among the layouts that fit it takes the\n"
          "one whose slowest stage is fastest (with equal speeds: balanced layers), then\n"
          "the one leaving the most free on its tightest node. It prints that layout and\n"
          "the current one: per node its budget and where it came from, layers, bytes,\n"
          "headroom and the largest context the layout supports at kv_bits 16, 8 and 4.\n"
          "When no layout fits, it says which node falls short by how much, and the\n"
          "largest context any layout fits.\n"
          "\n"
          "  --ctx N          the target context (positions), required\n"
          "  --kv-bits B      32, 16, 8 or 4 (default: the running nodes', else 16)\n"
          "  --model SPEC     the model: a copy of its file on this machine, embedded\n"
          "                   or synth:... (default: the file's `model`, else what the\n"
          "                   running nodes report)\n"
          "  -c FILE          the cluster file (default ./infertop.conf, then\n"
          "                   $XDG_CONFIG_HOME/infertop/cluster.conf)\n"
          "  --timeout SEC    how long to wait for the nodes' status (default 3)\n"
          "  --no-ssh         do not ask nodes that are down for their memory over SSH\n"
          "  --accept-new     record the host key of a node seen for the first time\n"
          "  --write FILE     write the cluster file with the planned `layers` to FILE\n"
          "                   (FILE may be the cluster file itself)\n"
          "  --apply          restart the ring on the planned layout over SSH: stop every\n"
          "                   node, start them tail to head, wait until each reports its\n"
          "                   new layers and one model fingerprint, then update the\n"
          "                   cluster file; a failure says where each node is and leaves\n"
          "                   the file as it was\n"
          "  --wait SEC       --apply: how long the nodes may take to come up (default 120)\n"
          "  --json           the plan as JSON on stdout (progress of --apply on stderr)\n"
          "\n"
          "Budgets: a running node's own (status), else MemAvailable over SSH capped by\n"
          "the file's mem_limit, else mem_limit.\n"
          "\n"
          "exit codes: 0 the plan fits (and was written or applied when asked), 1 no\n"
          "layout fits, a budget or the model is unknown, or the apply failed, 2 bad\n"
          "command line\n",
          out);
}

enum {
    O_CTX = 256,
    O_KV_BITS,
    O_MODEL,
    O_JSON,
    O_TIMEOUT,
    O_NO_SSH,
    O_ACCEPT_NEW,
    O_WRITE,
    O_APPLY,
    O_WAIT
};

/* Returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, popts *o)
{
    static const struct option longopts[] = {
        {"ctx", required_argument, NULL, O_CTX},
        {"kv-bits", required_argument, NULL, O_KV_BITS},
        {"model", required_argument, NULL, O_MODEL},
        {"config", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, O_JSON},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"no-ssh", no_argument, NULL, O_NO_SSH},
        {"accept-new", no_argument, NULL, O_ACCEPT_NEW},
        {"write", required_argument, NULL, O_WRITE},
        {"apply", no_argument, NULL, O_APPLY},
        {"wait", required_argument, NULL, O_WAIT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (popts){.timeout_s = PLAN_STATUS_TIMEOUT_S, .wait_s = PLAN_APPLY_WAIT_S};
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        switch (ch) {
        case O_CTX:
            if (cli_parse_int(optarg, 1, PLAN_CTX_MAX, &o->ctx) != 0)
                return cli_usage_error("plan", "--ctx '%s': expected positions, 1 to 1073741824",
                                       optarg);
            break;
        case O_KV_BITS:
            if (cli_parse_int(optarg, 4, 32, &o->kv_bits) != 0 ||
                (o->kv_bits != 4 && o->kv_bits != 8 && o->kv_bits != 16 && o->kv_bits != 32))
                return cli_usage_error("plan", "--kv-bits '%s': expected 32, 16, 8 or 4", optarg);
            break;
        case O_MODEL:
            o->model = optarg;
            break;
        case 'c':
            o->config = optarg;
            break;
        case O_JSON:
            o->json = 1;
            break;
        case O_TIMEOUT:
            if (cli_parse_int(optarg, 1, 600, &o->timeout_s) != 0)
                return cli_usage_error("plan", "--timeout '%s': expected seconds, 1 to 600",
                                       optarg);
            break;
        case O_NO_SSH:
            o->no_ssh = 1;
            break;
        case O_ACCEPT_NEW:
            o->accept_new = 1;
            break;
        case O_WRITE:
            o->write = optarg;
            break;
        case O_APPLY:
            o->apply = 1;
            break;
        case O_WAIT:
            if (cli_parse_int(optarg, 1, 3600, &o->wait_s) != 0)
                return cli_usage_error("plan", "--wait '%s': expected seconds, 1 to 3600", optarg);
            break;
        case 'h':
            usage(stdout);
            return CLI_OK;
        case ':':
            return cli_usage_error("plan", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("plan", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("plan", "unexpected argument '%s'", argv[optind]);
    if (!o->ctx)
        return cli_usage_error("plan", "%s", "--ctx N is required");
    if (o->write && o->apply)
        return cli_usage_error("plan", "%s",
                               "--write and --apply exclude each other (--apply updates the "
                               "cluster file itself)");
    return -1;
}

/* ---- text ---- */

static void mib(char *buf, size_t len, double bytes)
{
    snprintf(buf, len, "%.1f", bytes / (1 << 20));
}

static void ctx_text(char *buf, size_t len, int ctx)
{
    if (ctx >= PLAN_CTX_MAX)
        snprintf(buf, len, ">=%d", PLAN_CTX_MAX);
    else
        snprintf(buf, len, "%d", ctx);
}

static void print_max_ctx(const char *what, const int *max_ctx)
{
    char c[PLAN_N_BITS][24];
    for (int b = 0; b < PLAN_N_BITS; b++)
        ctx_text(c[b], sizeof c[b], max_ctx[b]);
    printf("%s: %s at kv_bits 16, %s at 8, %s at 4\n", what, c[0], c[1], c[2]);
}

static int print_layout(const plan_input *in, const plan_layout *l, const enum plan_from *from)
{
    static const char *const headers[] = {
        "NODE",   "BUDGET_MIB",  "FROM",        "LAYERS",      "WEIGHTS_MIB",
        "KV_MIB", "SCRATCH_MIB", "RESERVE_MIB", "RUNTIME_MIB", "HEADROOM_MIB",
        "CTX@16", "CTX@8",       "CTX@4"};
    enum { NCOL = sizeof headers / sizeof headers[0] };
    cli_table *t = cli_table_new(NCOL, headers);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < in->n_nodes && rc == 0; i++) {
        const plan_stage *s = &l->st[i];
        char v[NCOL][32];
        mib(v[1], sizeof v[1], (double)in->nodes[i].budget);
        snprintf(v[3], sizeof v[3], "%d:%d", s->first, s->last);
        mib(v[4], sizeof v[4], (double)s->weights);
        mib(v[5], sizeof v[5], (double)s->kv);
        mib(v[6], sizeof v[6], (double)s->scratch);
        mib(v[7], sizeof v[7], (double)s->reserve);
        mib(v[8], sizeof v[8], (double)s->runtime);
        mib(v[9], sizeof v[9], (double)s->headroom);
        for (int b = 0; b < PLAN_N_BITS; b++)
            ctx_text(v[10 + b], sizeof v[10 + b], s->max_ctx[b]);
        const char *cells[NCOL] = {in->nodes[i].name, v[1], plan_from_name(from[i])};
        for (int k = 3; k < NCOL; k++)
            cells[k] = v[k];
        rc = cli_table_add(t, cells);
    }
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return rc;
}

static const char *fit_words(const plan_input *in, const plan_layout *l, char *buf, size_t len)
{
    const plan_stage *s = &l->st[l->short_node];
    if (l->fits)
        return "fits";
    char m[32];
    mib(m, sizeof m, -(double)s->headroom);
    snprintf(buf, len, "does not fit: %s is short by %s MiB", in->nodes[l->short_node].name, m);
    return buf;
}

static int print_text(const plan_input *in, const plan_result *r, const enum plan_from *from)
{
    char words[256];
    printf("plan of %s for context %d at kv_bits %d (%s)\n\n", in->model->spec, in->ctx,
           in->kv_bits, r->speeds ? "measured speeds" : "equal speeds: balanced layers");
    if (r->feasible) {
        printf("planned layout: fits\n");
    } else {
        char m[32];
        const plan_layout *l = &r->planned;
        mib(m, sizeof m, -(double)l->st[l->short_node].headroom);
        printf("no layout fits context %d at kv_bits %d: node %s falls short by %s MiB even in "
               "the closest layout:\n",
               in->ctx, in->kv_bits, in->nodes[l->short_node].name, m);
    }
    if (print_layout(in, &r->planned, from) != 0)
        return -1;
    print_max_ctx("this layout supports contexts up to", r->planned.max_ctx);
    if (!r->feasible)
        print_max_ctx("the largest context any layout fits", r->best_ctx);
    if (r->current.known) {
        printf("\ncurrent layout: %s\n", fit_words(in, &r->current, words, sizeof words));
        if (print_layout(in, &r->current, from) != 0)
            return -1;
        print_max_ctx("it supports contexts up to", r->current.max_ctx);
    } else {
        printf("\ncurrent layout: unknown (a node is down and its section has no `layers`)\n");
    }
    return fflush(stdout) == 0 ? 0 : -1;
}

/* ---- JSON ---- */

static json_t *ctx_json(const int *max_ctx)
{
    return json_pack("{s:i, s:i, s:i}", "16", max_ctx[0], "8", max_ctx[1], "4", max_ctx[2]);
}

static json_t *layout_json(const plan_input *in, const plan_layout *l, const enum plan_from *from)
{
    if (!l->known)
        return json_null();
    json_t *nodes = json_array();
    for (int i = 0; nodes && i < in->n_nodes; i++) {
        const plan_stage *s = &l->st[i];
        json_array_append_new(
            nodes, json_pack("{s:s, s:I, s:s, s:[i,i], s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                             "name", in->nodes[i].name, "budget", (json_int_t)in->nodes[i].budget,
                             "budget_from", plan_from_name(from[i]), "layers", s->first, s->last,
                             "weights", (json_int_t)s->weights, "kv", (json_int_t)s->kv, "scratch",
                             (json_int_t)s->scratch, "reserve", (json_int_t)s->reserve, "runtime",
                             (json_int_t)s->runtime, "need", (json_int_t)s->need, "headroom",
                             (json_int_t)s->headroom, "max_ctx", ctx_json(s->max_ctx)));
    }
    return json_pack("{s:b, s:s, s:o, s:o}", "fits", l->fits, "short_node",
                     in->nodes[l->short_node].name, "max_ctx", ctx_json(l->max_ctx), "nodes",
                     nodes);
}

static int print_json(const plan_input *in, const plan_result *r, const enum plan_from *from)
{
    json_t *o = json_pack("{s:s, s:i, s:i, s:b, s:b, s:o, s:o, s:o}", "model", in->model->spec,
                          "ctx", in->ctx, "kv_bits", in->kv_bits, "feasible", r->feasible, "speeds",
                          r->speeds, "planned", layout_json(in, &r->planned, from), "current",
                          layout_json(in, &r->current, from), "best_ctx", ctx_json(r->best_ctx));
    int rc = o ? json_dumpf(o, stdout, JSON_INDENT(2)) : -1;
    json_decref(o);
    return rc != 0 || putchar('\n') == EOF ? -1 : 0;
}

/* ---- doing it ---- */

static void say(void *ctx, int node, const char *line)
{
    (void)node;
    FILE *out = ctx;
    fprintf(out, "%s\n", line);
    fflush(out);
}

static int same_as_current(const plan_result *r, int n)
{
    if (!r->current.known)
        return 0;
    for (int i = 0; i < n; i++)
        if (r->current.st[i].first != r->planned.st[i].first ||
            r->current.st[i].last != r->planned.st[i].last)
            return 0;
    return 1;
}

static int act(const struct cluster *c, const popts *o, const plan_result *r,
               const nodepool_opts *po)
{
    int first[PLAN_NODES_MAX], last[PLAN_NODES_MAX];
    char err[1024];
    for (int i = 0; i < c->n_nodes; i++) {
        first[i] = r->planned.st[i].first;
        last[i] = r->planned.st[i].last;
    }
    FILE *out = o->json ? stderr : stdout;
    if (o->write) {
        if (plan_file_write(c, first, last, o->write, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "infertop plan: %s\n", err);
            return CLI_ERROR;
        }
        fprintf(out, "wrote %s\n", o->write);
        return CLI_OK;
    }
    if (same_as_current(r, c->n_nodes)) {
        fprintf(out, "nothing to apply: every node already holds its planned layers\n");
        return CLI_OK;
    }
    fprintf(out, "\napplying the planned layout\n");
    if (plan_apply(c, first, last, po, o->wait_s, say, out, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "infertop plan: %s\n", err);
        return CLI_ERROR;
    }
    return CLI_OK;
}

static int run(const struct cluster *c, const popts *o)
{
    char err[1024];
    plan_seen *seen = calloc((size_t)c->n_nodes, sizeof *seen);
    plan_input *in = calloc(1, sizeof *in);
    plan_model *m = calloc(1, sizeof *m);
    plan_result *r = calloc(1, sizeof *r);
    enum plan_from from[PLAN_NODES_MAX];
    int timeout = c->connect_timeout_s ? c->connect_timeout_s : 5;
    nodepool_opts po = {.timeout_ms = timeout * 1000, .accept_new = o->accept_new};
    int rc = CLI_ERROR;
    if (!seen || !in || !m || !r) {
        fputs("infertop plan: out of memory\n", stderr);
        goto done;
    }
    plan_ask_status(c, o->timeout_s * 1000, seen);
    if (!o->no_ssh)
        plan_ask_facts(c, &po, seen);
    char spec[sizeof m->spec];
    in->model = m;
    in->ctx = o->ctx;
    in->kv_bits = o->kv_bits ? o->kv_bits : plan_pick_kv_bits(c, seen);
    if (plan_pick_model(c, seen, o->model, spec, sizeof spec, err, sizeof err) != 0 ||
        plan_model_probe(spec, m, err, sizeof err) != 0 ||
        plan_fill_nodes(c, seen, in, from, err, sizeof err) != 0 ||
        plan_compute(in, r, err, sizeof err) != 0) {
        fprintf(stderr, "infertop plan: %s\n", err);
        goto done;
    }
    if ((o->json ? print_json(in, r, from) : print_text(in, r, from)) != 0) {
        fputs("infertop plan: cannot write the plan\n", stderr);
        goto done;
    }
    if (!r->feasible) {
        if (o->write || o->apply)
            fputs("infertop plan: nothing written or applied: no layout fits\n", stderr);
        goto done;
    }
    rc = o->write || o->apply ? act(c, o, r, &po) : CLI_OK;
done:
    free(seen);
    free(in);
    free(m);
    free(r);
    return rc;
}

int cli_plan(int argc, char **argv)
{
    popts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    char path[CLUSTER_PATH_MAX], err[1024];
    struct cluster *c = NULL;
    if (cluster_locate(o.config, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop plan: %s\n", err);
        return CLI_ERROR;
    }
    rc = run(c, &o);
    cluster_free(c);
    return rc;
}
