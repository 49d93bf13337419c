/* cli_status.c: `infertop status` and `infertop set`, the console's live
 * view and live config for scripts.
 *
 * Both send one request per inferd node over the same links as the
 * dashboard (links.h) and wait, bounded by --timeout, until every node
 * answered or its deadline passed; nothing is retried, and a silent node
 * is reported as such. `status` asks the nodes of other engines over HTTP
 * (ewatch_once: two polls a second apart, so that rates exist).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zmq.h>

#include "cli.h"
#include "cli_engine.h"
#include "engine/sys/clock.h"
#include "tui/core/cluster.h"
#include "tui/core/desired.h"
#include "tui/core/links.h"
#include "tui/core/state.h"
#include "tui/engine/ewatch.h"
#include "tui/ssh/knobs.h"
#include "tui/ssh/nodepool.h"

/* status polls an HTTP node twice, this far apart: a rate needs two. */
#define STATUS_POLLS 2
#define STATUS_POLL_GAP_S 1.0

/* The command line both verbs share. */
struct cmd {
    const char *verb;
    const char *config; /* -c FILE, NULL to search */
    double timeout_s;
    int json;
    int npos;
    char **pos; /* the arguments that are no option (in the opt_vals) */
};

/* What one node answered. */
struct answer {
    int ok; /* 1 ok, 0 refused, -1 no answer */
    char code[PROTO_CODE_MAX];
    char message[PROTO_MESSAGE_MAX];
    json_t *json; /* the final frame, NULL without one */
};

/* A connected cluster and the answers of its nodes. */
struct session {
    struct cluster *c;
    state *st;
    links *l;
    struct answer *ans;
    struct eng_view *eng;   /* status: what the HTTP nodes' polls found */
    struct desired desired; /* status: the state file's settings */
};

/* Returns -1 to go on, else the exit code (--help, a bad option). */
static int parse_cmd(opt_verb verb, int argc, char **argv, struct cmd *cmd, opt_vals *v)
{
    int rc = cli_parse(verb, argc, argv, v);
    *cmd = (struct cmd){.verb = argv[0],
                        .config = opt_str(v, OPT_CONFIG),
                        .timeout_s =
                            opt_num(v, verb == OPT_V_SET ? OPT_SET_TIMEOUT : OPT_STATUS_TIMEOUT),
                        .json = opt_given(v, OPT_JSON),
                        .npos = v->nargs,
                        .pos = v->args};
    return rc;
}

static int session_open(struct session *s, const struct cmd *cmd)
{
    char path[CLUSTER_PATH_MAX], err[1024];
    memset(s, 0, sizeof *s);
    if (cluster_locate(cmd->config, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &s->c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop %s: %s\n", cmd->verb, err);
        return -1;
    }
    const char *names[s->c->n_nodes > 0 ? s->c->n_nodes : 1];
    for (int i = 0; i < s->c->n_nodes; i++)
        names[i] = s->c->nodes[i].name;
    s->ans = calloc((size_t)(s->c->n_nodes > 0 ? s->c->n_nodes : 1), sizeof *s->ans);
    if (!s->ans || !(s->st = state_new(s->c->name, s->c->n_nodes, names))) {
        fprintf(stderr, "infertop %s: out of memory\n", cmd->verb);
        return -1;
    }
    state_alert_settings(s->st, &s->c->alerts);
    if (links_open(&s->l, s->c, s->st, clock_ms() / 1000.0, err, sizeof err) != 0) {
        fprintf(stderr, "infertop %s: %s\n", cmd->verb, err);
        return -1;
    }
    return 0;
}

static void session_close(struct session *s)
{
    for (int i = 0; s->ans && s->c && i < s->c->n_nodes; i++)
        json_decref(s->ans[i].json);
    free(s->ans);
    free(s->eng);
    desired_free(&s->desired);
    links_close(s->l);
    state_free(s->st);
    cluster_free(s->c);
}

static void on_answer(void *ctx, const struct links_reply *r)
{
    struct session *s = ctx;
    struct answer *a = &s->ans[r->node];
    a->ok = r->ok;
    snprintf(a->code, sizeof a->code, "%s", r->code);
    snprintf(a->message, sizeof a->message, "%s", r->message);
    a->json = r->json ? json_deep_copy(r->json) : NULL;
}

/* Sends op to the nodes marked in `to` and waits until each request ended.
 * A node the request could not be sent to is answered at once. */
static int ask(struct session *s, const struct cmd *cmd, const char *op, const json_t *args,
               const int *to)
{
    int max = links_poll_max(s->l);
    zmq_pollitem_t items[max];
    char err[256];
    double now = clock_ms() / 1000.0;
    for (int i = 0; i < s->c->n_nodes; i++) {
        s->ans[i].ok = -1;
        if (!to[i] || links_request(s->l, i, op, args, cmd->timeout_s, now, on_answer, s, err,
                                    sizeof err) == 0)
            continue;
        snprintf(s->ans[i].code, sizeof s->ans[i].code, "unreachable");
        snprintf(s->ans[i].message, sizeof s->ans[i].message, "%s", err);
    }
    while (links_pending(s->l) > 0) {
        int n = links_poll_items(s->l, 0, items, max);
        double wait = ceil((links_next_deadline(s->l) - now) * 1000.0);
        if (zmq_poll(items, n, wait > 0 ? (long)wait : 0) < 0 && errno != EINTR) {
            fprintf(stderr, "infertop %s: poll: %s\n", cmd->verb, zmq_strerror(errno));
            return -1;
        }
        now = clock_ms() / 1000.0;
        links_process(s->l, items, n, now);
        links_tick(s->l, now);
    }
    return 0;
}

/* ---- status ----------------------------------------------------------------- */

/* Polls the HTTP nodes into s->eng (the inferd ones are left unpolled). */
static int poll_engines(struct session *s, const struct cmd *cmd)
{
    int n = s->c->n_nodes;
    char err[1024];
    if (cluster_ring_size(s->c) == n)
        return 0;
    struct ewatch_target t[n];
    for (int i = 0; i < n; i++)
        t[i] = (struct ewatch_target){s->c->nodes[i].engine, s->c->nodes[i].url,
                                      s->c->nodes[i].api_key_file};
    if (!(s->eng = calloc((size_t)n, sizeof *s->eng))) {
        fprintf(stderr, "infertop %s: out of memory\n", cmd->verb);
        return -1;
    }
    if (ewatch_once(t, n, STATUS_POLLS, STATUS_POLL_GAP_S, s->eng, err, sizeof err) != 0) {
        fprintf(stderr, "infertop %s: %s\n", cmd->verb, err);
        return -1;
    }
    return 0;
}

static int is_http(const struct session *s, int i)
{
    return !cluster_node_is_inferd(s->c, i);
}

static const char *answer_state(const struct answer *a)
{
    return a->ok == 1 ? "up" : a->ok == 0 ? "error" : "down";
}

/* 1 when an inferd head answered that its ring is broken; buf says where
 * and why. */
static int ring_broken(const struct session *s, int i, char *buf, size_t len)
{
    const struct answer *a = &s->ans[i];
    json_t *h = is_http(s, i) || a->ok != 1 ? NULL : json_object_get(a->json, "ring_health");
    const char *state = json_string_value(json_object_get(h, "state"));
    if (!state || strcmp(state, "down") != 0)
        return 0;
    const char *stage = json_string_value(json_object_get(h, "stage"));
    const char *why = json_string_value(json_object_get(h, "message"));
    snprintf(buf, len, "ring broken at %s: %s", stage ? stage : "?", why ? why : "");
    return 1;
}

static const char *node_state(const struct session *s, int i)
{
    return is_http(s, i) ? cli_eng_state(s->eng[i].health) : answer_state(&s->ans[i]);
}

/* A count comes out as an integer (3, not 3.0). */
static json_t *real_or_null(double v)
{
    if (!isfinite(v))
        return json_null();
    return v == floor(v) && fabs(v) < 1e15 ? json_integer((json_int_t)v) : json_real(v);
}

static json_t *text_or_null(const char *t)
{
    return t[0] ? json_string(t) : json_null();
}

/* The fields every engine's node has (cli_engine.h), where the entry does
 * not have them already (an inferd reply's own `model` stays). */
static int common_fields(json_t *o, const struct eng_view *v)
{
    int rc = 0;
    for (int f = 0; f < cli_eng_nfields; f++)
        if (!json_object_get(o, cli_eng_fields[f].json))
            rc |= json_object_set_new(o, cli_eng_fields[f].json,
                                      real_or_null(cli_eng_value(v, &cli_eng_fields[f])));
    if (!json_object_get(o, "model"))
        rc |= json_object_set_new(
            o, "model",
            v->model[0] ? json_pack("{s:s, s:o}", "name", v->model, "n_ctx", real_or_null(v->n_ctx))
                        : json_null());
    if (!json_object_get(o, "version"))
        rc |= json_object_set_new(o, "version", text_or_null(v->version));
    return rc;
}

/* An HTTP node: its poll, with the models it has loaded (Ollama). */
static json_t *http_entry(const char *name, const struct eng_view *v)
{
    json_t *models = json_array();
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:o, s:o}", "name", name, "engine", eng_name(v->kind), "state",
                  cli_eng_state(v->health), "problem", text_or_null(v->problem), "models", models);
    if (!o)
        return NULL;
    for (int m = 0; m < v->n_models; m++) {
        const struct eng_model *em = &v->models[m];
        if (json_array_append_new(models, json_pack("{s:s, s:o, s:o, s:o}", "name", em->name,
                                                    "size", real_or_null(em->size), "size_vram",
                                                    real_or_null(em->size_vram), "expires",
                                                    text_or_null(em->expires))) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* An inferd node: the reply's fields without the envelope (v, id, done,
 * ok). */
static json_t *inferd_entry(const char *name, const struct answer *a)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "name", name, "engine", eng_name(ENG_INFERD), "state",
                          answer_state(a));
    if (!o)
        return NULL;
    if (a->ok == 1) {
        const char *k;
        json_t *v;
        json_object_foreach(a->json, k, v)
        {
            if (strcmp(k, "v") && strcmp(k, "id") && strcmp(k, "done") && strcmp(k, "ok"))
                json_object_set(o, k, v);
        }
    } else {
        json_object_set_new(o, "error",
                            json_pack("{s:s, s:s}", "code", a->code, "message", a->message));
    }
    return o;
}

static json_t *status_entry(const struct session *s, int i)
{
    const char *name = s->c->nodes[i].name;
    struct eng_view inferd;
    const struct eng_view *v = &inferd;
    json_t *o;
    if (is_http(s, i)) {
        v = &s->eng[i];
        o = http_entry(name, v);
    } else {
        cli_eng_from_status(s->ans[i].ok == 1 ? s->ans[i].json : NULL, &inferd);
        o = inferd_entry(name, &s->ans[i]);
    }
    if (o && common_fields(o, v) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* What node i's answer lacks of its desired settings (desired.h): 1
 * when it drifted, with the desired values in *drift. */
static int answer_drift(const struct session *s, int i, proto_set_args *drift)
{
    const struct answer *a = &s->ans[i];
    json_t *cfg = is_http(s, i) || a->ok != 1 ? NULL : json_object_get(a->json, "config");
    json_t *step = json_object_get(cfg, "prefill_step");
    int prefill = json_is_integer(step)  ? (int)json_integer_value(step)
                  : json_is_string(step) ? PROTO_PREFILL_AUTO
                                         : -1;
    return desired_drift(desired_get(&s->desired, s->c->nodes[i].name),
                         (int)json_integer_value(json_object_get(cfg, "kv_bits")), prefill, drift);
}

/* {"kv_bits": 8, ...} of the keys given; JSON null for none. */
static json_t *settings_json(const proto_set_args *set)
{
    return set && (set->has_kv_bits || set->has_prefill_step) ? links_set_args_json(set)
                                                              : json_null();
}

static int print_status_json(const struct session *s)
{
    json_t *nodes = json_array();
    json_t *o = json_pack("{s:s, s:o}", "cluster", s->c->name, "nodes", nodes);
    if (!o)
        return -1;
    for (int i = 0; i < s->c->n_nodes; i++) {
        proto_set_args drift;
        json_t *e = status_entry(s, i);
        int drifted = answer_drift(s, i, &drift);
        if (!e ||
            json_object_set_new(
                e, "desired", settings_json(desired_get(&s->desired, s->c->nodes[i].name))) != 0 ||
            json_object_set_new(e, "drift", settings_json(drifted ? &drift : NULL)) != 0 ||
            json_array_append_new(nodes, e) != 0) {
            json_decref(o);
            return -1;
        }
    }
    int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    return rc != 0 || putchar('\n') == EOF ? -1 : 0;
}

static void mib(char *buf, size_t len, json_t *v)
{
    if (json_is_integer(v))
        snprintf(buf, len, "%.1f", (double)json_integer_value(v) / (1 << 20));
    else
        snprintf(buf, len, "-");
}

static void prefill_text(char *buf, size_t len, json_t *v)
{
    if (json_is_integer(v))
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "-");
}

static int print_status_table(const struct session *s)
{
    static const char *const headers[] = {"NODE",         "ENGINE",   "STATE",    "LAYERS",
                                          "PREFILL_STEP", "KV_BITS",  "SESSIONS", "RSS_MIB",
                                          "HEADROOM_MIB", "UPTIME_S", "MODEL",    "WEIGHTS_MIB",
                                          "WEIGHT_TYPES", "DRIFT",    "PROBLEM"};
    enum { NCOL = sizeof headers / sizeof headers[0] };
    cli_table *t = cli_table_new(NCOL, headers);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < s->c->n_nodes && rc == 0; i++) {
        const struct answer *a = &s->ans[i];
        char layers[32] = "-", prefill[32] = "-", kv[16] = "-", sessions[16] = "-", rss[32] = "-",
             head[32] = "-", up[32] = "-", weights[32] = "-", drift_text[64] = "-",
             problem[PROTO_MESSAGE_MAX + PROTO_CODE_MAX + 2] = "";
        const char *name = "-", *types = "-";
        if (is_http(s, i)) {
            if (s->eng[i].model[0])
                name = s->eng[i].model;
            snprintf(problem, sizeof problem, "%s", s->eng[i].problem);
        } else if (a->ok == 1) {
            json_t *cfg = json_object_get(a->json, "config");
            json_t *mem = json_object_get(a->json, "memory");
            json_t *model = json_object_get(a->json, "model");
            json_t *lay = json_object_get(model, "layers");
            if (json_is_string(json_object_get(model, "name")))
                name = json_string_value(json_object_get(model, "name"));
            if (json_is_string(json_object_get(model, "weight_types")))
                types = json_string_value(json_object_get(model, "weight_types"));
            mib(weights, sizeof weights, json_object_get(mem, "weights_bytes"));
            if (json_array_size(lay) == 2)
                snprintf(layers, sizeof layers, "%lld:%lld",
                         (long long)json_integer_value(json_array_get(lay, 0)),
                         (long long)json_integer_value(json_array_get(lay, 1)));
            prefill_text(prefill, sizeof prefill, json_object_get(cfg, "prefill_step"));
            snprintf(kv, sizeof kv, "%lld",
                     (long long)json_integer_value(json_object_get(cfg, "kv_bits")));
            snprintf(sessions, sizeof sessions, "%lld",
                     (long long)json_integer_value(json_object_get(a->json, "sessions")));
            mib(rss, sizeof rss, json_object_get(mem, "rss"));
            mib(head, sizeof head, json_object_get(mem, "headroom"));
            snprintf(up, sizeof up, "%.0f",
                     json_number_value(json_object_get(a->json, "uptime_s")));
            ring_broken(s, i, problem, sizeof problem);
            proto_set_args drift;
            if (answer_drift(s, i, &drift)) {
                char want[48];
                desired_describe(&drift, want, sizeof want);
                snprintf(drift_text, sizeof drift_text, "want %s", want);
            }
        } else {
            snprintf(problem, sizeof problem, "%s: %s", a->code, a->message);
        }
        const char *cells[NCOL] = {s->c->nodes[i].name,
                                   eng_name(s->c->nodes[i].engine),
                                   node_state(s, i),
                                   layers,
                                   prefill,
                                   kv,
                                   sessions,
                                   rss,
                                   head,
                                   up,
                                   name,
                                   weights,
                                   types,
                                   drift_text,
                                   problem};
        rc = cli_table_add(t, cells);
    }
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return rc;
}

int cli_status(int argc, char **argv)
{
    struct cmd cmd;
    opt_vals v;
    int rc = parse_cmd(OPT_V_STATUS, argc, argv, &cmd, &v);
    if (rc >= 0)
        return rc;
    struct session s;
    rc = CLI_ERROR;
    char dpath[sizeof s.desired.path], err[1024];
    int opened = session_open(&s, &cmd) == 0 && poll_engines(&s, &cmd) == 0, bad_state = 0;
    /* A state file that does not parse: the status without drift, and an
     * exit that says something is wrong. */
    if (opened && (desired_path(s.c->path, dpath, sizeof dpath) != 0 ||
                   desired_load(dpath, &s.desired, err, sizeof err) != 0)) {
        fprintf(stderr, "infertop status: state file %s (no drift shown)\n", err);
        bad_state = 1;
    }
    if (opened) {
        int to[s.c->n_nodes > 0 ? s.c->n_nodes : 1];
        for (int i = 0; i < s.c->n_nodes; i++)
            to[i] = !is_http(&s, i);
        if (ask(&s, &cmd, "status", NULL, to) == 0 &&
            (cmd.json ? print_status_json(&s) : print_status_table(&s)) == 0) {
            rc = CLI_OK;
            char why[PROTO_MESSAGE_MAX + 128];
            /* A head that answers but whose ring does not serves nobody. */
            for (int i = 0; i < s.c->n_nodes; i++)
                if (strcmp(node_state(&s, i), "up") != 0 || ring_broken(&s, i, why, sizeof why))
                    rc = CLI_ERROR;
            if (bad_state)
                rc = CLI_ERROR;
        }
    }
    session_close(&s);
    return rc;
}

/* ---- set -------------------------------------------------------------------- */

int cli_set_parse(const char *kv, proto_set_args *a, char *err, size_t errlen)
{
    const char *eq = strchr(kv, '=');
    size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
    char forms[128] = "", names[128] = "";
    for (int id = 0; id < OPT_COUNT; id++) {
        const char *wire = opt_defs[id].wire;
        if (!opt_defs[id].live)
            continue;
        if (eq && strlen(wire) == klen && strncmp(kv, wire, klen) == 0)
            return desired_setting((opt_id)id, eq + 1, a, err, errlen);
        const char *sep = forms[0] ? " or " : "";
        snprintf(forms + strlen(forms), sizeof forms - strlen(forms), "%s%s=%s", sep, wire,
                 opt_defs[id].arg);
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", sep, wire);
    }
    if (!eq)
        snprintf(err, errlen, "\"%s\": expected %s", kv, forms);
    else
        snprintf(err, errlen, "unknown setting \"%.*s\": expected %s", (int)klen, kv, names);
    return -1;
}

/* A node of another engine, which takes the set by restart over SSH. */
struct restart {
    char line[CLUSTER_START_MAX]; /* its new start line */
    long job;
    int done;
    nodectl_result r;
};

/* The knobs as set_rows shows them. */
static void want_cells(const proto_set_args *want, char *prefill, size_t plen, char *bits,
                       size_t blen)
{
    json_t *step = want->prefill_step == PROTO_PREFILL_AUTO ? json_string("auto")
                                                            : json_integer(want->prefill_step);
    prefill_text(prefill, plen, want->has_prefill_step ? step : NULL);
    json_decref(step);
    if (want->has_kv_bits)
        snprintf(bits, blen, "%d", want->kv_bits);
    else
        snprintf(bits, blen, "-");
}

static int restart_row(cli_table *t, const char *name, const struct restart *rs,
                       const proto_set_args *want)
{
    char prefill[32], bits[16], detail[sizeof rs->r.error];
    want_cells(want, prefill, sizeof prefill, bits, sizeof bits);
    if (rs->r.ok)
        knobs_applied(want, rs->r.took_s, detail, sizeof detail);
    else
        snprintf(detail, sizeof detail, "%s", rs->r.error);
    const char *cells[] = {name, rs->r.ok ? "applied" : "FAILED", prefill, bits, detail};
    return cli_table_add(t, cells);
}

/* One row per stage a node's reply lists (a ring's head speaks for the
 * ring). */
static int set_rows(cli_table *t, const char *name, const struct answer *a)
{
    enum { NCOL = 5 };
    if (a->ok != 1) {
        char detail[PROTO_MESSAGE_MAX + PROTO_CODE_MAX + 2];
        snprintf(detail, sizeof detail, "%s: %s", a->code, a->message);
        const char *cells[NCOL] = {name, a->ok == 0 ? "refused" : "no answer", "-", "-", detail};
        return cli_table_add(t, cells);
    }
    json_t *stages = json_object_get(a->json, "stages");
    for (size_t k = 0; k < json_array_size(stages); k++) {
        json_t *e = json_array_get(stages, k);
        json_t *conv = json_object_get(e, "kv");
        char prefill[32], bits[16], detail[128] = "live";
        prefill_text(prefill, sizeof prefill, json_object_get(e, "prefill_step"));
        snprintf(bits, sizeof bits, "%lld",
                 (long long)json_integer_value(json_object_get(e, "kv_bits")));
        if (conv)
            snprintf(detail, sizeof detail, "live; KV converted %lld -> %lld bits in %.1f ms",
                     (long long)json_integer_value(json_object_get(conv, "from_bits")),
                     (long long)json_integer_value(json_object_get(conv, "to_bits")),
                     json_number_value(json_object_get(conv, "ms")));
        const char *stage = json_string_value(json_object_get(e, "name"));
        const char *cells[NCOL] = {stage ? stage : name, "applied", prefill, bits, detail};
        if (cli_table_add(t, cells) != 0)
            return -1;
    }
    return 0;
}

/* What `set` did: the live answers (ans, NULL when no inferd node was
 * asked) and the restarts (rs[i].job > 0 for the nodes restarted). */
struct set_done {
    const struct cluster *c;
    const int *live;
    const struct answer *ans;
    const struct restart *rs;
    const proto_set_args *want;
};

static int print_set_table(const struct set_done *d)
{
    static const char *const headers[] = {"NODE", "RESULT", "PREFILL_STEP", "KV_BITS", "DETAIL"};
    cli_table *t = cli_table_new(5, headers);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < d->c->n_nodes && rc == 0; i++)
        if (d->live[i])
            rc = set_rows(t, d->c->nodes[i].name, &d->ans[i]);
        else if (d->rs[i].job > 0)
            rc = restart_row(t, d->c->nodes[i].name, &d->rs[i], d->want);
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return rc;
}

static json_t *set_entry(const struct set_done *d, int i)
{
    const char *name = d->c->nodes[i].name;
    const struct restart *rs = &d->rs[i];
    if (!d->live[i])
        return rs->r.ok ? json_pack("{s:s, s:b, s:s, s:f, s:s}", "name", name, "ok", 1, "applied",
                                    "restart", "took_s", rs->r.took_s, "start", rs->line)
                        : json_pack("{s:s, s:b, s:{s:s, s:s}}", "name", name, "ok", 0, "error",
                                    "code", "restart_failed", "message", rs->r.error);
    const struct answer *a = &d->ans[i];
    return a->ok == 1 ? json_pack("{s:s, s:b, s:s, s:O}", "name", name, "ok", 1, "applied", "live",
                                  "stages", json_object_get(a->json, "stages"))
                      : json_pack("{s:s, s:b, s:{s:s, s:s}}", "name", name, "ok", 0, "error",
                                  "code", a->code, "message", a->message);
}

static int print_set_json(const struct set_done *d, int all_ok)
{
    json_t *nodes = json_array();
    json_t *o = json_pack("{s:b, s:o}", "ok", all_ok, "nodes", nodes);
    if (!o)
        return -1;
    for (int i = 0; i < d->c->n_nodes; i++) {
        if ((!d->live[i] && d->rs[i].job <= 0) ||
            json_array_append_new(nodes, set_entry(d, i)) == 0)
            continue;
        json_decref(o);
        return -1;
    }
    int rc = json_dumpf(o, stdout, JSON_COMPACT);
    json_decref(o);
    return rc != 0 || putchar('\n') == EOF ? -1 : 0;
}

/* --dry-run: per node, the start line it would restart with, or the live
 * request it would be sent. */
static int print_dry_run(const struct cluster *c, const int *to, const struct restart *rs,
                         const proto_set_args *want)
{
    json_t *args = links_set_args_json(want);
    char *live = args ? json_dumps(args, JSON_COMPACT) : NULL;
    json_decref(args);
    if (!live)
        return -1;
    for (int i = 0; i < c->n_nodes; i++)
        if (to[i] && cluster_node_is_inferd(c, i))
            printf("%s: live: set %s\n", c->nodes[i].name, live);
        else if (to[i])
            printf("%s: restart: %s\n", c->nodes[i].name, rs[i].line);
    free(live);
    return fflush(stdout) == 0 ? 0 : -1;
}

/* Restarts the nodes with a new line (rs[i].line[0]) in parallel over SSH,
 * each ending when its engine answers again. */
static int restart_nodes(const struct cluster *c, struct restart *rs, char *err, size_t errlen)
{
    nodepool *pool;
    nodepool_opts o = {.timeout_ms = c->connect_timeout_s * 1000};
    if (nodepool_new(c, &o, &pool, err, errlen) != 0)
        return -1;
    int left = 0, rc = 0;
    for (int i = 0; i < c->n_nodes && rc == 0; i++) {
        nodectl_req req = {.op = NODECTL_RESTART, .start = rs[i].line};
        if (!rs[i].line[0])
            continue;
        rs[i].job = nodepool_submit(pool, i, &req, err, errlen);
        rc = rs[i].job > 0 ? 0 : -1;
        left += rc == 0;
    }
    while (left > 0) {
        struct pollfd pfd = {.fd = nodepool_fd(pool), .events = POLLIN};
        if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            rc = -1;
            break;
        }
        nodepool_event ev;
        while (nodepool_next(pool, &ev)) {
            if (ev.kind == NODEPOOL_DONE && !rs[ev.node].done) {
                rs[ev.node].r = ev.result;
                rs[ev.node].done = 1;
                left--;
            }
            nodepool_event_free(&ev);
        }
    }
    nodepool_free(pool);
    return rc;
}

/* The layers [first, last) and the model's layer count a status answer
 * gives; 0 when it gives none. */
static int answer_layers(const struct answer *a, int *first, int *last, int *n_layers)
{
    json_t *model = a->ok == 1 ? json_object_get(a->json, "model") : NULL;
    json_t *lay = json_object_get(model, "layers");
    if (json_array_size(lay) != 2)
        return 0;
    *first = (int)json_integer_value(json_array_get(lay, 0));
    *last = (int)json_integer_value(json_array_get(lay, 1));
    *n_layers = (int)json_integer_value(json_object_get(model, "n_layers"));
    return 1;
}

/* `set all` on a ring goes through one door: its head, whose two rounds
 * check every stage before any applies (PROTOCOL.md "Live config"). A
 * stage sent the set directly as well would apply it even when another
 * refuses, and log it twice. So the nodes are asked who they are, and
 * a stage that does not hold layer 0 is taken out of send[]: the head's
 * reply speaks for it. covered[i] is 1 for those when a ring's head
 * answered, 0 when none did (they are then not sent the set either).
 * *head is the head's index, -1 when none answered. */
static int one_door(struct session *s, const struct cmd *cmd, int *send, int *stage, int *head)
{
    int n = s->c->n_nodes;
    *head = -1;
    if (ask(s, cmd, "status", NULL, send) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int first, last, layers;
        stage[i] = 0;
        if (send[i] && answer_layers(&s->ans[i], &first, &last, &layers)) {
            stage[i] = first > 0;
            if (first == 0 && last < layers)
                *head = i;
        }
        json_decref(s->ans[i].json);
        s->ans[i].json = NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!stage[i])
            continue;
        send[i] = 0;
        stage[i] = *head >= 0 ? 1 : -1;
    }
    return 0;
}

/* The stages one_door took out: covered by their head's reply, or, with
 * no head answering, refused here without being sent anything. */
static void door_answers(struct session *s, const int *stage, int *live)
{
    for (int i = 0; i < s->c->n_nodes; i++) {
        if (stage[i] > 0)
            live[i] = 0;
        if (stage[i] >= 0)
            continue;
        struct answer *a = &s->ans[i];
        a->ok = 0;
        snprintf(a->code, sizeof a->code, "not_sent");
        snprintf(a->message, sizeof a->message,
                 "a stage of a ring takes a set through the ring's head (the node holding "
                 "layer 0), and no head answered: nothing was sent to it");
    }
}

/* Records in the state file what each node accepted: a live set it
 * answered ok (a ring's stage by its head's answer), or a restart that
 * came back. A refused change records nothing. */
static int record_accepted(struct desired *d, const struct set_done *sd, const int *stage, int head)
{
    char err[1024];
    int any = 0;
    for (int i = 0; i < sd->c->n_nodes; i++) {
        int ok = sd->live[i]    ? sd->ans[i].ok == 1
                 : stage[i] > 0 ? head >= 0 && sd->ans[head].ok == 1
                                : sd->rs[i].job > 0 && sd->rs[i].r.ok;
        if (!ok)
            continue;
        if (desired_record(d, sd->c->nodes[i].name, sd->want) != 0) {
            fprintf(stderr, "infertop set: out of memory\n");
            return -1;
        }
        any = 1;
    }
    if (any && desired_save(d, err, sizeof err) != 0) {
        fprintf(stderr, "infertop set: the settings were applied but not recorded: %s\n", err);
        return -1;
    }
    return 0;
}

/* The nodes NODE|all names; -1 after saying there is no such node. */
static int set_targets(const struct cluster *c, const char *target, int *to)
{
    int all = strcmp(target, "all") == 0;
    const struct cluster_node *one = cluster_node_find(c, target);
    if (!all && !one) {
        fprintf(stderr, "infertop set: no node \"%s\" in %s; its nodes:", target, c->path);
        for (int i = 0; i < c->n_nodes; i++)
            fprintf(stderr, " %s", c->nodes[i].name);
        fputs(" (or all)\n", stderr);
        return -1;
    }
    for (int i = 0; i < c->n_nodes; i++)
        to[i] = all || &c->nodes[i] == one;
    return 0;
}

int cli_set(int argc, char **argv)
{
    struct cmd cmd;
    opt_vals v;
    proto_set_args want = {0};
    char err[1024], path[CLUSTER_PATH_MAX];
    int rc = parse_cmd(OPT_V_SET, argc, argv, &cmd, &v);
    if (rc >= 0)
        return rc;
    if (cmd.npos < 2)
        return cli_usage_error(cmd.verb, "%s", "expected NODE|all and at least one SETTING");
    for (int k = 1; k < cmd.npos; k++)
        if (cli_set_parse(cmd.pos[k], &want, err, sizeof err) != 0)
            return cli_usage_error(cmd.verb, "%s", err);

    /* The nodes of other engines need no link: the file alone says how
     * they take the set, and a set one of them refuses changes nothing. */
    struct cluster *c;
    if (cluster_locate(cmd.config, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop set: %s\n", err);
        return CLI_ERROR;
    }
    int n = c->n_nodes > 0 ? c->n_nodes : 1, all = strcmp(cmd.pos[0], "all") == 0;
    int to[n], live[n], send[n], stage[n], any_live = 0, head = -1;
    struct restart *rs = calloc((size_t)n, sizeof *rs);
    struct session s = {0};
    struct desired d = {0};
    char dpath[sizeof d.path];
    rc = !rs ? CLI_ERROR : set_targets(c, cmd.pos[0], to) != 0 ? CLI_NOT_FOUND : CLI_OK;
    /* A state file that does not parse stops the set before anything
     * changes: writing it afterwards would drop what it holds. */
    if (rc == CLI_OK && (desired_path(c->path, dpath, sizeof dpath) != 0 ||
                         desired_load(dpath, &d, err, sizeof err) != 0)) {
        fprintf(stderr, "infertop set: state file %s\n", err);
        rc = CLI_ERROR;
    }
    for (int i = 0; rc == CLI_OK && i < c->n_nodes; i++) {
        live[i] = to[i] && cluster_node_is_inferd(c, i);
        any_live |= live[i];
        if (to[i] && !live[i] &&
            knobs_start_line(&c->nodes[i], NULL, &want, rs[i].line, sizeof rs[i].line, err,
                             sizeof err) != 0) {
            fprintf(stderr, "infertop set: %s\n", err);
            rc = CLI_ERROR;
        }
    }
    if (rc == CLI_OK && opt_given(&v, OPT_DRY_RUN)) {
        rc = print_dry_run(c, to, rs, &want) == 0 ? CLI_OK : CLI_ERROR;
        goto done;
    }
    if (rc == CLI_OK && restart_nodes(c, rs, err, sizeof err) != 0) {
        fprintf(stderr, "infertop set: %s\n", err);
        rc = CLI_ERROR;
    }
    json_t *args = rc == CLI_OK && any_live ? links_set_args_json(&want) : NULL;
    memcpy(send, live, sizeof send);
    memset(stage, 0, sizeof stage);
    if (any_live && rc == CLI_OK &&
        (!args || session_open(&s, &cmd) != 0 ||
         (all && one_door(&s, &cmd, send, stage, &head) != 0) ||
         ask(&s, &cmd, "set", args, send) != 0))
        rc = CLI_ERROR;
    json_decref(args);
    if (rc == CLI_OK && any_live)
        door_answers(&s, stage, live);
    if (rc == CLI_OK) {
        int all_ok = 1;
        for (int i = 0; i < c->n_nodes; i++)
            all_ok &= live[i] ? s.ans[i].ok == 1 : rs[i].job <= 0 || rs[i].r.ok;
        struct set_done sd = {c, live, s.ans, rs, &want};
        rc = (cmd.json ? print_set_json(&sd, all_ok) : print_set_table(&sd)) != 0 ? CLI_ERROR
             : all_ok                                                             ? CLI_OK
                                                                                  : CLI_ERROR;
        if (record_accepted(&d, &sd, stage, head) != 0)
            rc = CLI_ERROR;
    }
done:
    desired_free(&d);
    session_close(&s);
    free(rs);
    cluster_free(c);
    return rc;
}
