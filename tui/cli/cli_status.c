/* cli_status.c: `infertop status` and `infertop set`, the console's live
 * view and live config for scripts.
 *
 * Both send one request per node over the same links as the dashboard
 * (links.h) and wait, bounded by --timeout, until every node answered or
 * its deadline passed; nothing is retried, and a silent node is reported
 * as such.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zmq.h>

#include "cli.h"
#include "engine/sys/clock.h"
#include "engine/sys/kvbits.h"
#include "tui/core/cluster.h"
#include "tui/core/links.h"
#include "tui/core/state.h"

#define STATUS_TIMEOUT_S 5.0
/* A set sent to a ring's head waits for every stage to convert its KV. */
#define SET_TIMEOUT_S 15.0
#define TIMEOUT_MAX_S 3600.0

/* The command line both verbs share. */
struct cmd {
    const char *verb;
    const char *config; /* -c FILE, NULL to search */
    double timeout_s;
    int json;
    int npos;
    char **pos; /* the arguments that are no option */
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
};

static void status_usage(FILE *out)
{
    fputs("usage: infertop status [-c FILE] [--json] [--timeout SEC]\n"
          "\n"
          "Asks every node of the cluster file for its status (one `status` request\n"
          "each) and prints one row per node; a node that does not answer within SEC\n"
          "seconds (default 5) is down. --json prints one JSON object:\n"
          "  {\"cluster\":NAME,\"nodes\":[{\"name\":..,\"state\":\"up\"|\"down\"|\"error\",\n"
          "    ...the status reply's fields (config, memory, model, ...)...}]}\n"
          "with \"error\":{\"code\",\"message\"} for a node that is not up.\n"
          "\n"
          "The cluster file is -c FILE, ./infertop.conf or\n"
          "$XDG_CONFIG_HOME/infertop/cluster.conf; a running `infertop demo` writes one\n"
          "(see infertop demo --help).\n"
          "\n"
          "exit codes: 0 every node up, 1 a node is down or the cluster file is bad,\n"
          "2 bad command line\n",
          out);
}

static void set_usage(FILE *out)
{
    fputs("usage: infertop set [-c FILE] [--json] [--timeout SEC] NODE|all SETTING...\n"
          "\n"
          "Changes live configuration and waits until the node says it is applied.\n"
          "SETTING is prefill_step=N (1..65536) or prefill_step=auto, and kv_bits=B\n"
          "(32, 16, 8 or 4). `all` sends the set to every node; a set sent to the head\n"
          "of a ring also applies to the ring's other stages. Prints what each node\n"
          "applied; a node that refuses (kv_oom, busy, ...) or does not answer within\n"
          "SEC seconds (default 15) did not apply it.\n"
          "\n"
          "exit codes: 0 applied everywhere, 1 a node did not apply it or the cluster\n"
          "file is bad, 2 bad command line (unknown node, bad setting)\n",
          out);
}

static int usage_error(const struct cmd *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "infertop %s: ", cmd->verb);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see infertop %s --help)\n", cmd->verb);
    return CLI_USAGE;
}

/* Returns -1 to go on, else the exit code (--help, a bad option). */
static int parse_cmd(int argc, char **argv, struct cmd *cmd, void (*usage)(FILE *))
{
    cmd->verb = argv[0];
    cmd->pos = argv + 1;
    cmd->npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return CLI_OK;
        }
        if (strcmp(a, "--json") == 0) {
            cmd->json = 1;
        } else if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
            if (++i == argc)
                return usage_error(cmd, "%s needs a file", a);
            cmd->config = argv[i];
        } else if (strcmp(a, "--timeout") == 0) {
            char *end;
            if (++i == argc)
                return usage_error(cmd, "%s needs a number of seconds", a);
            errno = 0;
            cmd->timeout_s = strtod(argv[i], &end);
            if (errno || end == argv[i] || *end || !(cmd->timeout_s > 0) ||
                cmd->timeout_s > TIMEOUT_MAX_S)
                return usage_error(cmd, "--timeout \"%s\": expected seconds in (0, 3600]", argv[i]);
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error(cmd, "unknown option \"%s\"", a);
        } else {
            cmd->pos[cmd->npos++] = argv[i]; /* compacts argv in place, past i */
        }
    }
    return -1;
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

static const char *answer_state(const struct answer *a)
{
    return a->ok == 1 ? "up" : a->ok == 0 ? "error" : "down";
}

/* The reply's fields without the envelope (v, id, done, ok). */
static json_t *status_entry(const char *name, const struct answer *a)
{
    json_t *o = json_pack("{s:s, s:s}", "name", name, "state", answer_state(a));
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

static int print_status_json(const struct session *s)
{
    json_t *nodes = json_array();
    json_t *o = json_pack("{s:s, s:o}", "cluster", s->c->name, "nodes", nodes);
    if (!o)
        return -1;
    for (int i = 0; i < s->c->n_nodes; i++)
        if (json_array_append_new(nodes, status_entry(s->c->nodes[i].name, &s->ans[i])) != 0) {
            json_decref(o);
            return -1;
        }
    int rc = json_dumpf(o, stdout, JSON_COMPACT);
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
    static const char *const headers[] = {
        "NODE",         "STATE",    "LAYERS", "PREFILL_STEP", "KV_BITS",      "SESSIONS", "RSS_MIB",
        "HEADROOM_MIB", "UPTIME_S", "MODEL",  "WEIGHTS_MIB",  "WEIGHT_TYPES", "PROBLEM"};
    enum { NCOL = sizeof headers / sizeof headers[0] };
    cli_table *t = cli_table_new(NCOL, headers);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < s->c->n_nodes && rc == 0; i++) {
        const struct answer *a = &s->ans[i];
        char layers[32] = "-", prefill[32] = "-", kv[16] = "-", sessions[16] = "-", rss[32] = "-",
             head[32] = "-", up[32] = "-", weights[32] = "-",
             problem[PROTO_MESSAGE_MAX + PROTO_CODE_MAX + 2] = "";
        const char *name = "-", *types = "-";
        if (a->ok == 1) {
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
        } else {
            snprintf(problem, sizeof problem, "%s: %s", a->code, a->message);
        }
        const char *cells[NCOL] = {s->c->nodes[i].name,
                                   answer_state(a),
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
    struct cmd cmd = {.timeout_s = STATUS_TIMEOUT_S};
    int rc = parse_cmd(argc, argv, &cmd, status_usage);
    if (rc >= 0)
        return rc;
    if (cmd.npos > 0)
        return usage_error(&cmd, "unexpected argument \"%s\"", cmd.pos[0]);
    struct session s;
    rc = CLI_ERROR;
    if (session_open(&s, &cmd) == 0) {
        int to[s.c->n_nodes > 0 ? s.c->n_nodes : 1];
        for (int i = 0; i < s.c->n_nodes; i++)
            to[i] = 1;
        if (ask(&s, &cmd, "status", NULL, to) == 0 &&
            (cmd.json ? print_status_json(&s) : print_status_table(&s)) == 0) {
            rc = CLI_OK;
            for (int i = 0; i < s.c->n_nodes; i++)
                if (s.ans[i].ok != 1)
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
    size_t klen = eq ? (size_t)(eq - kv) : 0;
    const char *v = eq ? eq + 1 : "";
    char *end;
    long n;
    if (!eq) {
        snprintf(err, errlen, "\"%s\": expected prefill_step=N|auto or kv_bits=B", kv);
        return -1;
    }
    errno = 0;
    n = strtol(v, &end, 10);
    int number = errno == 0 && end != v && *end == '\0';
    if (klen == 12 && strncmp(kv, "prefill_step", klen) == 0) {
        if (a->has_prefill_step) {
            snprintf(err, errlen, "prefill_step is given twice");
            return -1;
        }
        if (strcmp(v, "auto") == 0) {
            a->prefill_step = PROTO_PREFILL_AUTO;
        } else if (number && n >= 1 && n <= PROTO_PREFILL_STEP_MAX) {
            a->prefill_step = (int)n;
        } else {
            snprintf(err, errlen, "prefill_step \"%s\": expected 1..%d or auto", v,
                     PROTO_PREFILL_STEP_MAX);
            return -1;
        }
        a->has_prefill_step = 1;
        return 0;
    }
    if (klen == 7 && strncmp(kv, "kv_bits", klen) == 0) {
        if (a->has_kv_bits) {
            snprintf(err, errlen, "kv_bits is given twice");
            return -1;
        }
        if (!number || !kv_bits_valid(n)) {
            char choices[KV_BITS_CHOICES_MAX];
            snprintf(err, errlen, "kv_bits \"%s\": expected %s", v,
                     kv_bits_choices(choices, sizeof choices, ", ", " or "));
            return -1;
        }
        a->kv_bits = (int)n;
        a->has_kv_bits = 1;
        return 0;
    }
    snprintf(err, errlen, "unknown setting \"%.*s\": expected prefill_step or kv_bits", (int)klen,
             kv);
    return -1;
}

/* One row per stage a node's reply lists: for `all` its own (the first),
 * for one node every stage it reports (a ring's head speaks for the ring). */
static int set_rows(cli_table *t, const char *name, const struct answer *a, int all)
{
    enum { NCOL = 5 };
    if (a->ok != 1) {
        char detail[PROTO_MESSAGE_MAX + PROTO_CODE_MAX + 2];
        snprintf(detail, sizeof detail, "%s: %s", a->code, a->message);
        const char *cells[NCOL] = {name, a->ok == 0 ? "refused" : "no answer", "-", "-", detail};
        return cli_table_add(t, cells);
    }
    json_t *stages = json_object_get(a->json, "stages");
    size_t n = all && json_array_size(stages) > 0 ? 1 : json_array_size(stages);
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(stages, k);
        json_t *conv = json_object_get(e, "kv");
        char prefill[32], bits[16], detail[128] = "";
        prefill_text(prefill, sizeof prefill, json_object_get(e, "prefill_step"));
        snprintf(bits, sizeof bits, "%lld",
                 (long long)json_integer_value(json_object_get(e, "kv_bits")));
        if (conv)
            snprintf(detail, sizeof detail, "KV converted %lld -> %lld bits in %.1f ms",
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

static int print_set_table(const struct session *s, const int *to, int all)
{
    static const char *const headers[] = {"NODE", "RESULT", "PREFILL_STEP", "KV_BITS", "DETAIL"};
    cli_table *t = cli_table_new(5, headers);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < s->c->n_nodes && rc == 0; i++)
        if (to[i])
            rc = set_rows(t, s->c->nodes[i].name, &s->ans[i], all);
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return rc;
}

static int print_set_json(const struct session *s, const int *to, int all_ok)
{
    json_t *nodes = json_array();
    json_t *o = json_pack("{s:b, s:o}", "ok", all_ok, "nodes", nodes);
    if (!o)
        return -1;
    for (int i = 0; i < s->c->n_nodes; i++) {
        const struct answer *a = &s->ans[i];
        if (!to[i])
            continue;
        json_t *e = a->ok == 1
                        ? json_pack("{s:s, s:b, s:O}", "name", s->c->nodes[i].name, "ok", 1,
                                    "stages", json_object_get(a->json, "stages"))
                        : json_pack("{s:s, s:b, s:{s:s, s:s}}", "name", s->c->nodes[i].name, "ok",
                                    0, "error", "code", a->code, "message", a->message);
        if (json_array_append_new(nodes, e) != 0) {
            json_decref(o);
            return -1;
        }
    }
    int rc = json_dumpf(o, stdout, JSON_COMPACT);
    json_decref(o);
    return rc != 0 || putchar('\n') == EOF ? -1 : 0;
}

int cli_set(int argc, char **argv)
{
    struct cmd cmd = {.timeout_s = SET_TIMEOUT_S};
    proto_set_args want = {0};
    char err[256];
    int rc = parse_cmd(argc, argv, &cmd, set_usage);
    if (rc >= 0)
        return rc;
    if (cmd.npos < 2)
        return usage_error(&cmd, "%s", "expected NODE|all and at least one SETTING");
    for (int k = 1; k < cmd.npos; k++)
        if (cli_set_parse(cmd.pos[k], &want, err, sizeof err) != 0)
            return usage_error(&cmd, "%s", err);

    struct session s;
    if (session_open(&s, &cmd) != 0) {
        session_close(&s);
        return CLI_ERROR;
    }
    int all = strcmp(cmd.pos[0], "all") == 0;
    const struct cluster_node *target = cluster_node_find(s.c, cmd.pos[0]);
    if (!all && !target) {
        fprintf(stderr, "infertop set: no node \"%s\" in %s; its nodes:", cmd.pos[0], s.c->path);
        for (int i = 0; i < s.c->n_nodes; i++)
            fprintf(stderr, " %s", s.c->nodes[i].name);
        fputs(" (or all)\n", stderr);
        session_close(&s);
        return CLI_USAGE;
    }
    int to[s.c->n_nodes > 0 ? s.c->n_nodes : 1];
    for (int i = 0; i < s.c->n_nodes; i++)
        to[i] = all || &s.c->nodes[i] == target;
    json_t *args = links_set_args_json(&want);
    rc = CLI_ERROR;
    if (args && ask(&s, &cmd, "set", args, to) == 0) {
        int all_ok = 1;
        for (int i = 0; i < s.c->n_nodes; i++)
            if (to[i] && s.ans[i].ok != 1)
                all_ok = 0;
        if ((cmd.json ? print_set_json(&s, to, all_ok) : print_set_table(&s, to, all)) == 0)
            rc = all_ok ? CLI_OK : CLI_ERROR;
    }
    json_decref(args);
    session_close(&s);
    return rc;
}
