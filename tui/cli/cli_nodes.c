/* cli_nodes.c: `infertop nodes`, the node operations of nodectl.h from a
 * terminal or a script, on one node or on all of them in parallel through
 * the same node pool the console uses. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tui/core/cluster.h"
#include "tui/core/shellword.h"
#include "tui/ssh/nodepool.h"

typedef struct nopts {
    const char *config;
    int json, accept_new, follow, lines, timeout_s, grace_s;
    nodectl_op op;
    int show_command; /* `nodes command`: no SSH, the command lines only */
    int systemd;      /* command --systemd: the unit's flag files instead */
    const char *target;
    char *command; /* exec: the words after the target, joined by spaces */
} nopts;

/* Per selected node: where its output goes and how its job ended. */
typedef struct nodeout {
    int node;
    long job;
    int done;
    nodectl_result result;
    char *text[3]; /* --json: what fd 1 and 2 printed */
    size_t len[3];
    FILE *mem[3];
    char *partial[3]; /* several nodes: the unfinished last line per fd */
    size_t plen[3];
} nodeout;

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* The words of COMMAND joined by spaces, as ssh(1) sends them. */
static char *join_words(int n, char **words)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(words[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, words[i]);
    }
    return s;
}

/* The words of the command line and the command after "--", for exec. */
static int split_command(int *argc, char **argv, nopts *o)
{
    for (int i = 1; i < *argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            if (i + 1 < *argc && !(o->command = join_words(*argc - i - 1, argv + i + 1)))
                return -1;
            *argc = i;
            break;
        }
    return 0;
}

/* Returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, nopts *o)
{
    opt_vals v;
    *o = (nopts){0};
    if (split_command(&argc, argv, o) != 0) {
        fputs("infertop nodes: out of memory\n", stderr);
        return CLI_ERROR;
    }
    int rc = cli_parse(OPT_V_NODES, argc, argv, &v);
    if (rc >= 0)
        return rc;
    o->config = opt_str(&v, OPT_CONFIG);
    o->json = opt_given(&v, OPT_JSON);
    o->accept_new = opt_given(&v, OPT_ACCEPT_NEW);
    o->follow = opt_given(&v, OPT_FOLLOW);
    o->systemd = opt_given(&v, OPT_SYSTEMD);
    o->lines = (int)opt_int(&v, OPT_LINES);
    o->grace_s = (int)opt_int(&v, OPT_GRACE);
    o->timeout_s = (int)opt_int(&v, OPT_SSH_TIMEOUT); /* 0: the cluster file's */
    o->show_command = v.verb == OPT_V_NODES_COMMAND;
    const char *op = opt_mode_word(OPT_V_NODES, v.verb);
    if (!o->show_command && nodectl_op_parse(op, &o->op) != 0)
        return cli_usage_error("nodes", "unknown operation '%s'", op);
    if (v.nargs < 1)
        return cli_usage_error("nodes", "%s", "missing NODE (a node name, or all)");
    o->target = v.args[0];
    if ((v.verb == OPT_V_NODES_EXEC) != (o->command != NULL))
        return cli_usage_error("nodes", "%s",
                               o->command ? "only exec takes a command (after --)"
                                          : "exec needs a command: exec NODE -- COMMAND...");
    if (o->json && o->follow)
        return cli_usage_error("nodes", "%s", "--json and -f do not go together");
    return -1;
}

/* ---- output ------------------------------------------------------------- */

/* Writes the complete lines of a chunk as "NODE: line"; the unfinished
 * tail waits in out->partial for the next chunk or the end of the job. */
static void print_prefixed(nodeout *out, const char *name, int fd, const char *data, size_t n)
{
    FILE *f = fd == 1 ? stdout : stderr;
    char *buf = realloc(out->partial[fd], out->plen[fd] + n);
    if (!buf)
        return;
    memcpy(buf + out->plen[fd], data, n);
    out->partial[fd] = buf;
    out->plen[fd] += n;
    size_t start = 0;
    for (size_t i = 0; i < out->plen[fd]; i++) {
        if (buf[i] != '\n')
            continue;
        fprintf(f, "%s: %.*s\n", name, (int)(i - start), buf + start);
        start = i + 1;
    }
    memmove(buf, buf + start, out->plen[fd] - start);
    out->plen[fd] -= start;
    fflush(f);
}

static void flush_partial(nodeout *out, const char *name)
{
    for (int fd = 1; fd <= 2; fd++)
        if (out->plen[fd]) {
            print_prefixed(out, name, fd, "\n", 1);
            out->plen[fd] = 0;
        }
}

static void on_output(nodeout *out, const char *name, int several, const nodepool_event *ev)
{
    if (out->mem[ev->fd]) {
        fwrite(ev->data, 1, ev->len, out->mem[ev->fd]);
    } else if (several) {
        print_prefixed(out, name, ev->fd, ev->data, ev->len);
    } else {
        FILE *f = ev->fd == 1 ? stdout : stderr;
        fwrite(ev->data, 1, ev->len, f);
        fflush(f);
    }
}

static void fmt_uptime(long s, char *buf, size_t len)
{
    if (s < 0)
        snprintf(buf, len, "-");
    else if (s < 3600)
        snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%ldh%02ldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, len, "%ldd%02ldh", s / 86400, s % 86400 / 3600);
}

static void fmt_kb(long long kb, char *buf, size_t len)
{
    if (kb < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f GiB", (double)kb / (1024.0 * 1024.0));
}

static const char *message_of(const nodectl_result *r)
{
    return r->ok ? r->detail : r->error;
}

/* One row per node; MESSAGE, the last column, says what happened or what
 * failed, and is left out when no row has anything to say (status and
 * facts that worked). */
static int print_table(const struct cluster *c, const nopts *o, const nodeout *outs, int n)
{
    static const char *const h_proc[] = {"NODE",   "RESULT",  "STATE",  "PID",
                                         "UPTIME", "VERSION", "MESSAGE"};
    static const char *const h_stop[] = {"NODE", "RESULT", "MESSAGE"};
    static const char *const h_facts[] = {"NODE", "RESULT", "CORES",  "MEM_TOTAL", "MEM_AVAIL",
                                          "LOAD", "OS",     "KERNEL", "INFERD",    "MESSAGE"};
    int facts = o->op == NODECTL_FACTS, stop = o->op == NODECTL_STOP, said = 0;
    for (int i = 0; i < n; i++)
        said |= *message_of(&outs[i].result) != '\0';
    cli_table *t = facts  ? cli_table_new(9 + said, h_facts)
                   : stop ? cli_table_new(2 + said, h_stop)
                          : cli_table_new(6 + said, h_proc);
    if (!t)
        return -1;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const nodectl_result *r = &outs[i].result;
        const char *name = c->nodes[outs[i].node].name, *res = r->ok ? "ok" : "FAILED";
        const char *msg = *message_of(r) ? message_of(r) : NULL;
        char a[64] = "-", b[64] = "-", d[64] = "-", e[64] = "-", load[64] = "-";
        if (facts) {
            const nodectl_facts *f = &r->facts;
            if (r->ok) {
                snprintf(a, sizeof a, "%d", f->cores);
                snprintf(load, sizeof load, "%.2f %.2f %.2f", f->load[0], f->load[1], f->load[2]);
            }
            fmt_kb(r->ok ? f->mem_total_kb : -1, b, sizeof b);
            fmt_kb(r->ok ? f->mem_available_kb : -1, d, sizeof d);
            const char *inferd = *f->inferd_version ? f->inferd_version
                                 : r->ok            ? "not on PATH"
                                                    : NULL;
            const char *cells[] = {
                name,   res, a, b, d, load, *f->os ? f->os : NULL, *f->kernel ? f->kernel : NULL,
                inferd, msg};
            rc = cli_table_add(t, cells);
        } else if (stop) {
            const char *cells[] = {name, res, msg};
            rc = cli_table_add(t, cells);
        } else {
            const nodectl_status *st = &r->status;
            if (st->running) {
                snprintf(a, sizeof a, "%ld", st->pid);
                fmt_uptime(st->uptime_s, e, sizeof e);
            }
            const char *state = !r->ok ? NULL : st->running ? "running" : "stopped";
            const char *cells[] = {name, res, state, a, e, *st->version ? st->version : NULL, msg};
            rc = cli_table_add(t, cells);
        }
    }
    if (rc == 0)
        cli_table_print(t, stdout);
    cli_table_free(t);
    return rc;
}

static json_t *json_status(const nodectl_status *st)
{
    return json_pack("{s:b, s:I, s:I, s:s}", "running", st->running, "pid", (json_int_t)st->pid,
                     "uptime_s", (json_int_t)st->uptime_s, "version", st->version);
}

static json_t *json_facts(const nodectl_facts *f)
{
    return json_pack("{s:i, s:I, s:I, s:[f,f,f], s:s, s:s, s:s?, s:s?}", "cores", f->cores,
                     "mem_total_kb", (json_int_t)f->mem_total_kb, "mem_available_kb",
                     (json_int_t)f->mem_available_kb, "load", f->load[0], f->load[1], f->load[2],
                     "os", f->os, "kernel", f->kernel, "inferd_path",
                     *f->inferd_path ? f->inferd_path : NULL, "inferd_version",
                     *f->inferd_version ? f->inferd_version : NULL);
}

/* One object per node: node, ok, error or detail, and what the operation
 * reports. */
static json_t *json_node(const char *name, const nopts *o, const nodeout *out)
{
    const nodectl_result *r = &out->result;
    json_t *j = json_pack("{s:s, s:b}", "node", name, "ok", r->ok);
    if (!j)
        return NULL;
    int bad = 0;
    if (*message_of(r))
        bad |= json_object_set_new(j, r->ok ? "detail" : "error", json_string(message_of(r)));
    if (r->ok) {
        switch (o->op) {
        case NODECTL_START:
        case NODECTL_RESTART:
        case NODECTL_STATUS: {
            json_t *st = json_status(&r->status);
            bad |= !st || json_object_update(j, st) != 0;
            json_decref(st);
            break;
        }
        case NODECTL_FACTS:
            bad |= json_object_set_new(j, "facts", json_facts(&r->facts));
            break;
        case NODECTL_STOP:
        case NODECTL_LOGS:
        case NODECTL_EXEC:
            break;
        }
    }
    if (o->op == NODECTL_LOGS)
        bad |= json_object_set_new(j, "output",
                                   json_stringn(out->text[1] ? out->text[1] : "", out->len[1]));
    if (o->op == NODECTL_EXEC) {
        bad |= json_object_set_new(j, "exit_status", json_integer(r->exit_status));
        bad |= json_object_set_new(j, "stdout",
                                   json_stringn(out->text[1] ? out->text[1] : "", out->len[1]));
        bad |= json_object_set_new(j, "stderr",
                                   json_stringn(out->text[2] ? out->text[2] : "", out->len[2]));
    }
    if (bad) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static int print_json(const struct cluster *c, const nopts *o, nodeout *outs, int n)
{
    json_t *arr = json_array();
    for (int i = 0; arr && i < n; i++) {
        for (int fd = 1; fd <= 2; fd++)
            if (outs[i].mem[fd]) {
                fclose(outs[i].mem[fd]);
                outs[i].mem[fd] = NULL;
            }
        if (json_array_append_new(arr, json_node(c->nodes[outs[i].node].name, o, &outs[i])) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    if (!arr || json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) != 0 ||
        fputc('\n', stdout) == EOF) {
        json_decref(arr);
        return -1;
    }
    json_decref(arr);
    return 0;
}

/* ---- running ------------------------------------------------------------ */

/* Submits the request on every selected node and handles events until
 * every job is done. Ctrl-C (or SIGTERM) cancels the jobs: a follow ends
 * cleanly, a start or stop finishes what it began. */
static int run_jobs(const struct cluster *c, nodepool *pool, const nopts *o, nodeout *outs, int n)
{
    nodectl_req req = {.op = o->op,
                       .lines = o->lines,
                       .follow = o->follow,
                       .grace_s = o->grace_s,
                       .command = o->command};
    char err[512];
    for (int i = 0; i < n; i++) {
        outs[i].job = nodepool_submit(pool, outs[i].node, &req, err, sizeof err);
        if (outs[i].job < 0) {
            fprintf(stderr, "infertop nodes: %s\n", err);
            return -1;
        }
    }
    struct sigaction sa = {.sa_handler = on_interrupt}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int left = n, cancelled = 0;
    while (left > 0) {
        if (interrupted && !cancelled) {
            for (int i = 0; i < n; i++)
                nodepool_cancel(pool, outs[i].job);
            cancelled = 1;
        }
        struct pollfd pfd = {.fd = nodepool_fd(pool), .events = POLLIN};
        if (poll(&pfd, 1, 200) < 0 && errno != EINTR) {
            fprintf(stderr, "infertop nodes: poll: %s\n", strerror(errno));
            break;
        }
        nodepool_event ev;
        while (nodepool_next(pool, &ev)) {
            nodeout *out = NULL;
            for (int i = 0; i < n; i++)
                if (outs[i].job == ev.job)
                    out = &outs[i];
            const char *name = c->nodes[ev.node].name;
            if (out && ev.kind == NODEPOOL_OUTPUT) {
                on_output(out, name, n > 1, &ev);
            } else if (out && !out->done) {
                out->done = 1;
                out->result = ev.result;
                left--;
                if (n > 1)
                    flush_partial(out, name);
            }
            nodepool_event_free(&ev);
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return left == 0 ? 0 : -1;
}

/* The nodes `target` names: one, or every one for "all". */
static int select_nodes(const struct cluster *c, const char *target, nodeout **outs, int *n)
{
    int all = strcmp(target, "all") == 0;
    const struct cluster_node *one = all ? NULL : cluster_node_find(c, target);
    if (!all && !one) {
        fprintf(stderr, "infertop nodes: no node '%s' in %s; nodes:", target, c->path);
        for (int i = 0; i < c->n_nodes; i++)
            fprintf(stderr, " %s", c->nodes[i].name);
        fputs(" (or all)\n", stderr);
        return CLI_NOT_FOUND;
    }
    *n = all ? c->n_nodes : 1;
    *outs = calloc((size_t)*n, sizeof **outs);
    if (!*outs) {
        fputs("infertop nodes: out of memory\n", stderr);
        return CLI_ERROR;
    }
    for (int i = 0; i < *n; i++)
        (*outs)[i].node = all ? i : (int)(one - c->nodes);
    return CLI_OK;
}

static void free_outs(nodeout *outs, int n)
{
    for (int i = 0; outs && i < n; i++)
        for (int fd = 1; fd <= 2; fd++) {
            if (outs[i].mem[fd])
                fclose(outs[i].mem[fd]);
            free(outs[i].text[fd]);
            free(outs[i].partial[fd]);
        }
    free(outs);
}

/* Logs and exec print their output as it streams; with --json it is
 * collected into each node's object instead. */
static int open_collectors(const nopts *o, nodeout *outs, int n)
{
    if (!o->json || (o->op != NODECTL_LOGS && o->op != NODECTL_EXEC))
        return 0;
    for (int i = 0; i < n; i++)
        for (int fd = 1; fd <= 2; fd++)
            if (!(outs[i].mem[fd] = open_memstream(&outs[i].text[fd], &outs[i].len[fd])))
                return -1;
    return 0;
}

static int report(const struct cluster *c, const nopts *o, nodeout *outs, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed |= !outs[i].result.ok;
    int printed;
    if (o->json)
        printed = print_json(c, o, outs, n);
    else if (o->op == NODECTL_LOGS || o->op == NODECTL_EXEC)
        printed = 0;
    else
        printed = print_table(c, o, outs, n);
    if (printed != 0) {
        fprintf(stderr, "infertop nodes: writing the results: %s\n", strerror(errno));
        return CLI_ERROR;
    }
    /* Failures also go to stderr where the output itself was the result. */
    if (!o->json && (o->op == NODECTL_LOGS || o->op == NODECTL_EXEC))
        for (int i = 0; i < n; i++)
            if (!outs[i].result.ok)
                fprintf(stderr, "infertop nodes: %s: %s\n", c->nodes[outs[i].node].name,
                        outs[i].result.error);
    return failed ? CLI_ERROR : CLI_OK;
}

/* A derived line's log (and pidfile) folders may not exist yet, the
 * default ~/.infertop least of all: the printed line makes them first, so
 * that it runs as printed (the SSH start script makes them itself). */
static int with_folders(const struct cluster_node *n, const char *cmd, char *out, size_t len)
{
    char log[CLUSTER_PATH_MAX + CLUSTER_NAME_MAX + 16], dirs[2 * sizeof log + 8] = "";
    const char *paths[] = {log, n->pidfile};
    if (n->log[0])
        snprintf(log, sizeof log, "%s", n->log);
    else
        snprintf(log, sizeof log, CLUSTER_LOG_DEFAULT_DIR "/%s.log", n->name);
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        const char *slash = strrchr(paths[i], '/');
        char dir[sizeof log];
        if (!slash || slash == paths[i])
            continue;
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - paths[i]), paths[i]);
        size_t used = strlen(dirs);
        dirs[used++] = ' ';
        if (shellword_quote(dir, dirs + used, sizeof dirs - used) >= sizeof dirs - used)
            return -1;
    }
    int w =
        dirs[0] ? snprintf(out, len, "mkdir -p%s && %s", dirs, cmd) : snprintf(out, len, "%s", cmd);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* `nodes command`: each selected node's command line (or, --systemd, its
 * unit's flag file, which names its node in its first line), or why there
 * is none. */
static int print_commands(const struct cluster *c, const nopts *o, const nodeout *outs, int n)
{
    json_t *arr = o->json ? json_array() : NULL;
    cluster_command_form form = o->systemd ? CLUSTER_COMMAND_UNIT : CLUSTER_COMMAND_LINE;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        const struct cluster_node *node = &c->nodes[outs[i].node];
        char cmd[CLUSTER_START_MAX], err[512];
        char line[CLUSTER_START_MAX + 2 * CLUSTER_PATH_MAX];
        int ok = cluster_node_command(c, outs[i].node, form, cmd, sizeof cmd, err, sizeof err) == 0;
        const char *shown = cmd;
        if (ok && form == CLUSTER_COMMAND_LINE && !node->start_given &&
            with_folders(node, cmd, line, sizeof line) == 0)
            shown = line;
        failed |= !ok;
        if (!ok)
            fprintf(stderr, "infertop nodes: %s\n", err);
        if (arr)
            json_array_append_new(arr,
                                  ok ? json_pack("{s:s, s:s}", "node", node->name,
                                                 o->systemd ? "flag_file" : "command", shown)
                                     : json_pack("{s:s, s:s}", "node", node->name, "error", err));
        else if (ok && o->systemd)
            printf("%s%s", i ? "\n" : "", shown);
        else if (ok && n > 1)
            printf("%s: %s\n", node->name, shown);
        else if (ok)
            puts(shown);
    }
    if (arr) {
        json_dumpf(arr, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(arr);
    }
    return failed ? CLI_ERROR : CLI_OK;
}

int cli_nodes(int argc, char **argv)
{
    nopts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0) {
        free(o.command);
        return rc;
    }
    char path[CLUSTER_PATH_MAX], err[1024];
    struct cluster *c = NULL;
    if (cluster_locate(o.config, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop nodes: %s\n", err);
        free(o.command);
        return CLI_ERROR;
    }
    nodeout *outs = NULL;
    int n = 0;
    nodepool *pool = NULL;
    /* 0 ms: the pool's own default. */
    int timeout_s = o.timeout_s ? o.timeout_s : c->connect_timeout_s;
    nodepool_opts popts = {.timeout_ms = timeout_s * 1000, .accept_new = o.accept_new};
    rc = select_nodes(c, o.target, &outs, &n);
    if (rc == CLI_OK && o.show_command) {
        rc = print_commands(c, &o, outs, n);
        free_outs(outs, n);
        cluster_free(c);
        return rc;
    }
    if (rc == CLI_OK && open_collectors(&o, outs, n) != 0) {
        fputs("infertop nodes: out of memory\n", stderr);
        rc = CLI_ERROR;
    }
    if (rc == CLI_OK && nodepool_new(c, &popts, &pool, err, sizeof err) != 0) {
        fprintf(stderr, "infertop nodes: %s\n", err);
        rc = CLI_ERROR;
    }
    if (rc == CLI_OK)
        rc = run_jobs(c, pool, &o, outs, n) == 0 ? report(c, &o, outs, n) : CLI_ERROR;
    nodepool_free(pool);
    free_outs(outs, n);
    cluster_free(c);
    free(o.command);
    return rc;
}
