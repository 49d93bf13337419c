/* cli_plan.c: `infertop plan`, the layer planner (tui/plan) from a
 * terminal or a script: it gathers what the cluster says (status, facts
 * over SSH, the file), prints the planned layout beside the current one,
 * and writes or applies it when asked. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tui/core/cluster.h"
#include "tui/plan/plan.h"
#include "tui/plan/plan_apply.h"
#include "tui/plan/plan_file.h"
#include "tui/plan/plan_gather.h"

typedef struct popts {
    const char *config, *model, *write;
    int ctx, kv_bits, margin, json, apply, no_ssh, accept_new, timeout_s, wait_s;
} popts;

/* Returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, popts *o)
{
    opt_vals v;
    int rc = cli_parse(OPT_V_PLAN, argc, argv, &v);
    if (rc >= 0)
        return rc;
    *o = (popts){.config = opt_str(&v, OPT_CONFIG),
                 .model = opt_str(&v, OPT_PLAN_MODEL),
                 .write = opt_str(&v, OPT_WRITE),
                 .ctx = (int)opt_int(&v, OPT_CTX),
                 .kv_bits = (int)opt_int(&v, OPT_PLAN_KV_BITS), /* 0: not given */
                 .margin = (int)opt_int(&v, OPT_PLAN_MARGIN),
                 .json = opt_given(&v, OPT_JSON),
                 .apply = opt_given(&v, OPT_APPLY),
                 .no_ssh = opt_given(&v, OPT_NO_SSH),
                 .accept_new = opt_given(&v, OPT_ACCEPT_NEW),
                 .timeout_s = (int)opt_int(&v, OPT_PLAN_TIMEOUT),
                 .wait_s = (int)opt_int(&v, OPT_WAIT)};
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
    if (ctx >= OPT_PLAN_CTX_MAX)
        snprintf(buf, len, ">=%d", OPT_PLAN_CTX_MAX);
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
    printf("plan of %s for context %d at kv_bits %d (balanced layers, margin %d%%)\n\n",
           in->model->spec, in->ctx, in->kv_bits, in->margin_pct);
    if (r->feasible) {
        printf("planned layout: fits; %s: %s\n", r->change ? "a change" : "no change", r->why);
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
            nodes,
            json_pack("{s:s, s:I, s:s, s:i, s:[i,i], s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                      "name", in->nodes[i].name, "budget", (json_int_t)in->nodes[i].budget,
                      "budget_from", plan_from_name(from[i]), "host_nodes", in->nodes[i].host_nodes,
                      "layers", s->first, s->last, "weights", (json_int_t)s->weights, "kv",
                      (json_int_t)s->kv, "scratch", (json_int_t)s->scratch, "reserve",
                      (json_int_t)s->reserve, "runtime", (json_int_t)s->runtime, "need",
                      (json_int_t)s->need, "headroom", (json_int_t)s->headroom, "max_ctx",
                      ctx_json(s->max_ctx)));
    }
    json_t *o = json_pack("{s:b, s:o, s:i, s:o}", "fits", l->fits, "max_ctx", ctx_json(l->max_ctx),
                          "ctx_at_kv_bits", l->ctx_at_bits, "nodes", nodes);
    /* Only a layout that does not fit has a node short of memory. */
    if (o && !l->fits &&
        json_object_set_new(o, "short_node", json_string(in->nodes[l->short_node].name))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int print_json(const plan_input *in, const plan_result *r, const enum plan_from *from)
{
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:b, s:b, s:s, s:o, s:o, s:o}", "model",
                          in->model->spec, "ctx", in->ctx, "kv_bits", in->kv_bits, "margin",
                          in->margin_pct, "feasible", r->feasible, "change", r->change, "why",
                          r->why, "planned", layout_json(in, &r->planned, from), "current",
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
    if (!r->change) {
        fprintf(out, "nothing to apply: %s\n", r->why);
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
    in->model = m;
    in->ctx = o->ctx;
    in->margin_pct = o->margin;
    in->kv_bits = o->kv_bits ? o->kv_bits : plan_pick_kv_bits(c, seen);
    if (plan_pick_model(c, seen, o->model, m, err, sizeof err) != 0 ||
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
