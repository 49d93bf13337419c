/* nodectl.c: the node operations as POSIX sh scripts, and the readers of
 * their answers. The scripts are built whole on this side and sent as one
 * command, so an operation costs one round trip and the node needs
 * nothing but sh, coreutils and procps. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/proto/opt.h"
#include "engine/sys/clock.h"
#include "localexec.h"
#include "nodectl.h"
#include "tui/core/shellword.h"
#include "tui/engine/ewatch.h"

/* How long each operation may take on the node before it is abandoned.
 * Stop waits its grace period and then up to 5 s after SIGKILL. */
#define DEADLINE_MS 30000
#define KILL_WAIT_TENTHS 50

static const char *const op_names[] = {
    [NODECTL_START] = "start",   [NODECTL_STOP] = "stop", [NODECTL_RESTART] = "restart",
    [NODECTL_STATUS] = "status", [NODECTL_LOGS] = "logs", [NODECTL_FACTS] = "facts",
    [NODECTL_EXEC] = "exec",
};

const char *nodectl_op_name(nodectl_op op)
{
    return op_names[op];
}

int nodectl_op_parse(const char *name, nodectl_op *op)
{
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
        if (strcmp(name, op_names[i]) == 0) {
            *op = (nodectl_op)i;
            return 0;
        }
    return -1;
}

int nodectl_shquote(FILE *out, const char *s)
{
    if (fputc('\'', out) == EOF)
        return -1;
    for (; *s; s++)
        if ((*s == '\'' ? fputs("'\\''", out) : fputc(*s, out)) == EOF)
            return -1;
    return fputc('\'', out) == EOF ? -1 : 0;
}

int nodectl_connect(const struct cluster_node *n, const char *ssh_config, int accept_new,
                    int timeout_ms, sshconn **out, char *err, size_t errlen)
{
    *out = NULL;
    if (n->local)
        return 0;
    if (!n->ssh_host[0]) {
        nodectl_no_reach(n, err, errlen);
        return -1;
    }
    sshconn_target t = {
        .host = n->ssh_host,
        .user = n->ssh_user,
        .port = n->ssh_port,
        .identity = n->identity,
        .known_hosts = n->known_hosts,
        .ssh_config = ssh_config,
        .accept_new = accept_new || n->accept_new == 1,
        .timeout_ms = timeout_ms,
    };
    return sshconn_open(&t, out, err, errlen);
}

int nodectl_reach(const struct cluster_node *n)
{
    return n->local ? NODECTL_LOCAL : n->ssh_host[0] ? NODECTL_SSH : NODECTL_NONE;
}

void nodectl_no_reach(const struct cluster_node *n, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "node %s: no ssh configured: give its section of the cluster file an `ssh` key, or "
             "`local = yes` when it runs on this machine",
             n->name);
}

void nodectl_describe_reach(const struct cluster_node *n, char *buf, size_t len)
{
    char port[16] = "";
    if (n->ssh_port)
        snprintf(port, sizeof port, ":%d", n->ssh_port);
    if (nodectl_reach(n) == NODECTL_LOCAL)
        snprintf(buf, len, "on this machine");
    else
        snprintf(buf, len, "over SSH (%s%s%s%s)", n->ssh_user, n->ssh_user[0] ? "@" : "",
                 n->ssh_host, port);
}

/* ---- scripts ------------------------------------------------------------ */

/* A remote path as a shell word: "~/" becomes the node's $HOME, an empty
 * path the default under ~/.infertop (node names are [A-Za-z0-9._-], so
 * they need no quoting). */
static void put_path(FILE *out, const char *path, const char *node, const char *suffix)
{
    if (!*path) {
        fprintf(out, "\"$HOME\"/.infertop/%s.%s", node, suffix);
    } else if (strncmp(path, "~/", 2) == 0) {
        fputs("\"$HOME\"/", out);
        nodectl_shquote(out, path + 2);
    } else {
        nodectl_shquote(out, path);
    }
}

/* Shared by every script about the node's process. `running PID` is
 * false for a zombie too: an orphan whose reaper is slow must not look
 * alive after it was killed. `alive` sets $pid from the pidfile. The
 * version is inferd's: another engine's binary may not take --version
 * (vLLM's is python), and its watcher asks the engine itself. */
static void put_prelude(FILE *out, const struct cluster_node *n)
{
    const char *version = n->engine != ENG_INFERD
                              ? ""
                              : "    case $(cat \"/proc/$pid/comm\" 2>/dev/null) in\n"
                                "    inferd*) echo \"version=$(\"/proc/$pid/exe\" --version "
                                "2>/dev/null)\";;\n"
                                "    *) echo \"version=$(inferd --version 2>/dev/null)\";;\n"
                                "    esac\n";
    fputs("pf=", out);
    put_path(out, n->pidfile, n->name, "pid");
    fputs("; log=", out);
    put_path(out, n->log, n->name, "log");
    fputs("\n"
          "running() { kill -0 \"$1\" 2>/dev/null && case $(sed 's/.*) //' \"/proc/$1/stat\" "
          "2>/dev/null) in Z*|X*) false;; esac; }\n"
          "alive() { pid=$(cat \"$pf\" 2>/dev/null) && case $pid in ''|*[!0-9]*) false;; esac "
          "&& running \"$pid\"; }\n"
          "report() {\n"
          "  if alive; then\n"
          "    echo running=1; echo \"pid=$pid\"\n"
          "    echo \"uptime=$(ps -o etimes= -p \"$pid\" 2>/dev/null | tr -d ' ')\"\n",
          out);
    fprintf(out, "%s  else echo running=0; fi\n}\n", version);
}

/* How many bytes of `line` are environment assignments before its
 * command (Ollama's OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve). */
static size_t env_prefix(const char *line)
{
    char word[CLUSTER_START_MAX];
    const char *p = line, *start;
    while (shellword_next(&p, word, sizeof word, &start) == 1)
        if (!shellword_assignment(word))
            return (size_t)(start - line);
    return 0;
}

/* The start line runs under `setsid sh -c`, which writes its own pid to
 * the pidfile and then execs the line: the pid is the engine's whether or
 * not the line passes --pidfile itself, and the process group setsid made
 * is the one stop signals. Assignments in front of the command go before
 * `exec`, where they still set the command's environment. */
static void put_start(FILE *out, const char *line)
{
    fputs("if alive; then echo \"already running (pid $pid)\" >&2; exit 3; fi\n"
          "mkdir -p \"$(dirname \"$pf\")\" \"$(dirname \"$log\")\" || exit 1\n"
          "rm -f \"$pf\"\n"
          "setsid sh -c ",
          out);
    char *inner = NULL;
    size_t len = 0, env = env_prefix(line);
    FILE *f = open_memstream(&inner, &len);
    if (f) {
        fprintf(f, "echo $$ >\"$1\" && %.*sexec %s", (int)env, line, line + env);
        fclose(f);
    }
    nodectl_shquote(out, inner ? inner : "false");
    free(inner);
    fputs(" infertop-start \"$pf\" >>\"$log\" 2>&1 </dev/null &\n"
          "sleep 1\n"
          "if alive; then report; exit 0; fi\n"
          "rm -f \"$pf\"\n"
          "echo \"it exited at once; the end of $log:\" >&2\n"
          "tail -n 5 \"$log\" >&2\n"
          "exit 4\n",
          out);
}

/* After a start, while an HTTP engine loads: still running, or why not. */
static void put_check(FILE *out)
{
    fputs("if alive; then exit 0; fi\n"
          "echo \"it exited before its URL answered; the end of $log:\" >&2\n"
          "tail -n 5 \"$log\" >&2\n"
          "exit 4\n",
          out);
}

static void put_stop(FILE *out, int grace_s)
{
    fprintf(out,
            "if ! alive; then rm -f \"$pf\"; echo was_running=0; exit 0; fi\n"
            "kill -TERM \"-$pid\" 2>/dev/null || kill -TERM \"$pid\" || exit 1\n"
            "i=0; while running \"$pid\" && [ $i -lt %d ]; do sleep 0.1; i=$((i + 1)); done\n"
            "sig=TERM\n"
            "if running \"$pid\"; then\n"
            "  sig=KILL; kill -KILL \"-$pid\" 2>/dev/null || kill -KILL \"$pid\"\n"
            "  i=0; while running \"$pid\" && [ $i -lt %d ]; do sleep 0.1; i=$((i + 1)); done\n"
            "fi\n"
            "if running \"$pid\"; then echo \"pid $pid is still alive after SIGKILL\" >&2; exit 5; "
            "fi\n"
            "rm -f \"$pf\"\n"
            "echo was_running=1; echo \"pid=$pid\"; echo \"signal=$sig\"\n",
            grace_s * 10, KILL_WAIT_TENTHS);
}

static void put_logs(FILE *out, int lines, int follow)
{
    fprintf(out,
            "[ -r \"$log\" ] || { echo \"no readable log file $log\" >&2; exit 6; }\n"
            "exec tail -n %d%s -- \"$log\"\n",
            lines, follow ? " -F" : "");
}

static void put_facts(FILE *out)
{
    fputs("echo \"cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)\"\n"
          "sed -n 's/^MemTotal: *\\([0-9]*\\) kB$/mem_total_kb=\\1/p; "
          "s/^MemAvailable: *\\([0-9]*\\) kB$/mem_available_kb=\\1/p' /proc/meminfo\n"
          "echo \"load=$(cut -d' ' -f1-3 /proc/loadavg)\"\n"
          "echo \"os=$(. /etc/os-release 2>/dev/null && echo \"$PRETTY_NAME\")\"\n"
          "echo \"kernel=$(uname -sr)\"\n"
          "if p=$(command -v inferd); then\n"
          "  echo \"inferd_path=$p\"; echo \"inferd_version=$(inferd --version 2>/dev/null)\"\n"
          "fi\n",
          out);
}

/* The script of req, or with `check` the readiness check that follows a
 * start. */
static char *build_script(const struct cluster_node *n, const nodectl_req *req, int check)
{
    if (req->op == NODECTL_EXEC)
        return strdup(req->command ? req->command : "");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    if (req->op != NODECTL_FACTS)
        put_prelude(out, n);
    switch (check ? NODECTL_EXEC : req->op) {
    case NODECTL_START:
        put_start(out, req->start ? req->start : n->start);
        break;
    case NODECTL_STOP:
    case NODECTL_RESTART:
        put_stop(out, req->grace_s > 0 ? req->grace_s : (int)opt_default_int(OPT_GRACE));
        break;
    case NODECTL_STATUS:
        fputs("report\n", out);
        break;
    case NODECTL_LOGS:
        put_logs(out, req->lines > 0 ? req->lines : (int)opt_default_int(OPT_LINES), req->follow);
        break;
    case NODECTL_FACTS:
        put_facts(out);
        break;
    case NODECTL_EXEC:
        put_check(out);
        break;
    }
    int bad = ferror(out);
    if (fclose(out) != 0 || bad) {
        free(text);
        return NULL;
    }
    return text;
}

char *nodectl_script(const struct cluster_node *n, const nodectl_req *req)
{
    return build_script(n, req, 0);
}

/* ---- answers ------------------------------------------------------------ */

/* The value of `key=` at the start of a line of text, copied to out. */
static int kv_get(const char *text, const char *key, char *out, size_t outlen)
{
    size_t klen = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) != 0 || p[klen] != '=')
            continue;
        const char *v = p + klen + 1;
        size_t vlen = strcspn(v, "\n");
        if (vlen >= outlen)
            vlen = outlen - 1;
        memcpy(out, v, vlen);
        out[vlen] = '\0';
        return 0;
    }
    return -1;
}

static long long kv_num(const char *text, const char *key, long long unknown)
{
    char buf[64], *end;
    if (kv_get(text, key, buf, sizeof buf) != 0 || !*buf)
        return unknown;
    long long v = strtoll(buf, &end, 10);
    return *end ? unknown : v;
}

int nodectl_parse_status(const char *text, nodectl_status *st)
{
    memset(st, 0, sizeof *st);
    st->uptime_s = -1;
    long long running = kv_num(text, "running", -1);
    if (running < 0)
        return -1;
    st->running = running == 1;
    if (!st->running)
        return 0;
    st->pid = (long)kv_num(text, "pid", 0);
    st->uptime_s = (long)kv_num(text, "uptime", -1);
    kv_get(text, "version", st->version, sizeof st->version);
    return 0;
}

int nodectl_parse_facts(const char *text, nodectl_facts *f)
{
    char load[128];
    memset(f, 0, sizeof *f);
    f->mem_total_kb = kv_num(text, "mem_total_kb", -1);
    f->mem_available_kb = kv_num(text, "mem_available_kb", -1);
    for (int i = 0; i < 3; i++)
        f->load[i] = -1;
    if (kv_get(text, "load", load, sizeof load) == 0)
        sscanf(load, "%lf %lf %lf", &f->load[0], &f->load[1], &f->load[2]);
    kv_get(text, "os", f->os, sizeof f->os);
    kv_get(text, "kernel", f->kernel, sizeof f->kernel);
    kv_get(text, "inferd_path", f->inferd_path, sizeof f->inferd_path);
    kv_get(text, "inferd_version", f->inferd_version, sizeof f->inferd_version);
    long long cores = kv_num(text, "cores", -1);
    if (cores < 0)
        return -1;
    f->cores = (int)cores;
    return 0;
}

/* ---- running ------------------------------------------------------------ */

/* Collects what a script prints. The output of logs and exec streams to
 * the caller's io instead; the stderr of logs is also kept, to explain a
 * failure ("no readable log file"), while exec's is the command's own. */
typedef struct capture {
    FILE *out, *err;
    char *out_text, *err_text;
    size_t out_len, err_len;
    const sshconn_io *pass;
    int stream;   /* 1: output goes to pass as it comes */
    int keep_err; /* 1: stderr is kept in err too */
} capture;

static int capture_output(void *ctx, int fd, const char *data, size_t n)
{
    capture *cap = ctx;
    if (cap->stream && cap->pass && cap->pass->output &&
        cap->pass->output(cap->pass->ctx, fd, data, n) != 0)
        return 1;
    if (cap->stream && (fd == 1 || !cap->keep_err))
        return 0;
    return fwrite(data, 1, n, fd == 1 ? cap->out : cap->err) == n ? 0 : 1;
}

static int capture_cancelled(void *ctx)
{
    capture *cap = ctx;
    return cap->pass && cap->pass->cancelled && cap->pass->cancelled(cap->pass->ctx);
}

/* The script's stderr as one line, for r->error: newlines become "; ". */
static void error_from(nodectl_result *r, const char *err_text, int status)
{
    size_t j = 0;
    for (const char *p = err_text ? err_text : ""; *p && j + 3 < sizeof r->error; p++) {
        if (*p != '\n') {
            r->error[j++] = *p;
        } else if (p[1]) {
            r->error[j++] = ';';
            r->error[j++] = ' ';
        }
    }
    r->error[j] = '\0';
    if (!j)
        snprintf(r->error, sizeof r->error, "exit status %d", status);
}

/* Runs one script (with `check`, the readiness check of build_script).
 * Returns 0 with r->ok set from the exit status, -1 when the connection
 * failed mid-way, NODECTL_NOT_RUN when no command ran. */
static int run_script(sshconn *c, const struct cluster_node *n, const nodectl_req *req, int check,
                      const sshconn_io *io, nodectl_result *r, char **out_text)
{
    char *script = build_script(n, req, check);
    capture cap = {.pass = io,
                   .stream = req->op == NODECTL_LOGS || req->op == NODECTL_EXEC,
                   .keep_err = req->op != NODECTL_EXEC};
    cap.out = open_memstream(&cap.out_text, &cap.out_len);
    cap.err = open_memstream(&cap.err_text, &cap.err_len);
    int rc = -1;
    if (!script || !cap.out || !cap.err) {
        snprintf(r->error, sizeof r->error, "out of memory building the %s script",
                 nodectl_op_name(req->op));
        goto done;
    }
    /* A follow and an operator's command run until they end or are
     * cancelled; the scripts of infertop have a deadline. */
    int unbounded = (req->op == NODECTL_LOGS && req->follow) || req->op == NODECTL_EXEC;
    int deadline = unbounded ? 0 : DEADLINE_MS;
    if (req->op == NODECTL_STOP || req->op == NODECTL_RESTART)
        deadline += (req->grace_s > 0 ? req->grace_s : (int)opt_default_int(OPT_GRACE)) * 1000;
    /* Only streams may be cut short: a start or stop script always runs
     * to its end, so a node is never left half-changed. */
    sshconn_io cio = {
        .output = capture_output, .cancelled = cap.stream ? capture_cancelled : NULL, .ctx = &cap};
    int status = -1;
    rc = c ? sshconn_exec(c, script, deadline, &cio, &status, r->error, sizeof r->error)
           : localexec_run(script, deadline, &cio, &status, r->error, sizeof r->error);
    if (rc == SSHCONN_STOPPED) {
        r->ok = r->cancelled = 1;
        snprintf(r->detail, sizeof r->detail, "stopped");
        rc = 0;
        goto done;
    }
    if (rc == SSHCONN_NOT_STARTED)
        rc = NODECTL_NOT_RUN;
    if (rc != 0)
        goto done;
    fflush(cap.out);
    fflush(cap.err);
    r->ok = status == 0;
    if (req->op == NODECTL_EXEC) {
        r->exit_status = status;
        if (!r->ok)
            snprintf(r->error, sizeof r->error, "the command exited with status %d", status);
    } else if (!r->ok) {
        error_from(r, cap.err_text, status);
    }
done:
    if (cap.out)
        fclose(cap.out);
    if (cap.err)
        fclose(cap.err);
    free(cap.err_text);
    free(script);
    if (out_text && rc == 0)
        *out_text = cap.out_text;
    else
        free(cap.out_text);
    return rc;
}

/* Runs `req` (not restart) and reads its answer into r. */
static int run_one(sshconn *c, const struct cluster_node *n, const nodectl_req *req,
                   const sshconn_io *io, nodectl_result *r)
{
    char *text = NULL;
    int rc = run_script(c, n, req, 0, io, r, &text);
    if (rc != 0 || !r->ok || r->cancelled) {
        free(text);
        return rc != 0 ? rc : r->ok ? 0 : -1;
    }
    int bad = 0;
    switch (req->op) {
    case NODECTL_START:
    case NODECTL_STATUS:
        bad = nodectl_parse_status(text, &r->status);
        if (!bad && req->op == NODECTL_START)
            snprintf(r->detail, sizeof r->detail, "started, pid %ld", r->status.pid);
        break;
    case NODECTL_STOP:
    case NODECTL_RESTART: {
        char sig[16];
        if (kv_num(text, "was_running", -1) == 0)
            snprintf(r->detail, sizeof r->detail, "was not running");
        else if (kv_get(text, "signal", sig, sizeof sig) == 0)
            snprintf(r->detail, sizeof r->detail, "stopped pid %lld with SIG%s",
                     kv_num(text, "pid", 0), sig);
        else
            bad = 1;
        break;
    }
    case NODECTL_FACTS:
        bad = nodectl_parse_facts(text, &r->facts);
        break;
    case NODECTL_LOGS:
    case NODECTL_EXEC:
        break;
    }
    free(text);
    if (bad) {
        r->ok = 0;
        snprintf(r->error, sizeof r->error, "the node's answer to %s was not understood",
                 nodectl_op_name(req->op));
        return -1;
    }
    return 0;
}

static const char *health_words(const struct eng_view *v)
{
    static const char *const words[] = {[ENG_UNKNOWN] = "not polled",
                                        [ENG_UP] = "up",
                                        [ENG_LOADING] = "loading",
                                        [ENG_ERROR] = "answering with an error",
                                        [ENG_DOWN] = "not answering"};
    return v->problem[0] ? v->problem : words[v->health];
}

static int cancelled(const sshconn_io *io)
{
    return io && io->cancelled && io->cancelled(io->ctx);
}

/* A started HTTP engine is up when its URL answers as ready: polled until
 * then, with the process checked between polls so that an engine that
 * exits (a flag it refuses, a model it cannot load) fails at once. */
static int wait_ready(sshconn *c, const struct cluster_node *n, const nodectl_req *req,
                      const sshconn_io *io, nodectl_result *r)
{
    struct ewatch_target t = {
        .kind = (eng_kind)n->engine, .url = n->url, .api_key_file = n->api_key_file};
    double until = clock_ms() / 1000.0 + NODECTL_READY_S;
    struct eng_view v;
    char err[512];
    for (;;) {
        if (ewatch_once(&t, 1, 1, 0, &v, err, sizeof err) != 0) {
            r->ok = 0;
            snprintf(r->error, sizeof r->error, "node %s: %s", n->name, err);
            return -1;
        }
        if (v.health == ENG_UP)
            return 0;
        if (cancelled(io)) {
            r->cancelled = 1;
            snprintf(r->detail + strlen(r->detail), sizeof r->detail - strlen(r->detail),
                     "; no longer waiting for %s", n->url);
            return 0;
        }
        nodectl_result check = {0};
        int rc = run_script(c, n, req, 1, NULL, &check, NULL);
        if (rc != 0 || !check.ok) {
            r->ok = 0;
            snprintf(r->error, sizeof r->error, "%s", check.error);
            return rc != 0 ? rc : -1;
        }
        if (clock_ms() / 1000.0 > until) {
            r->ok = 0;
            snprintf(r->error, sizeof r->error,
                     "node %s: started, but %s did not answer as ready within %d s (%s)", n->name,
                     n->url, NODECTL_READY_S, health_words(&v));
            return -1;
        }
        nanosleep(&(struct timespec){.tv_nsec = 250 * 1000 * 1000}, NULL);
    }
}

/* Runs `req` (not restart); a start of an HTTP engine waits for it. */
static int run_step(sshconn *c, const struct cluster_node *n, const nodectl_req *req,
                    const sshconn_io *io, nodectl_result *r)
{
    int rc = run_one(c, n, req, io, r);
    if (rc != 0 || req->op != NODECTL_START || n->engine == ENG_INFERD)
        return rc;
    return wait_ready(c, n, req, io, r);
}

static int run_op(sshconn *c, const struct cluster_node *n, const nodectl_req *req,
                  const sshconn_io *io, nodectl_result *r)
{
    const char *line = req->start ? req->start : n->start;
    if ((req->op == NODECTL_START || req->op == NODECTL_RESTART) && !line[0]) {
        snprintf(r->error, sizeof r->error,
                 "node %s has no command line to start: `infertop nodes command %s` says what "
                 "the cluster file lacks",
                 n->name, n->name);
        return -1;
    }
    if (req->op != NODECTL_RESTART)
        return run_step(c, n, req, io, r);
    nodectl_req step = *req;
    step.op = NODECTL_STOP;
    int rc = run_one(c, n, &step, io, r);
    if (rc != 0)
        return rc;
    /* The stop's detail is short ("stopped pid N with SIGTERM"). */
    char stopped[128];
    snprintf(stopped, sizeof stopped, "%.100s", r->detail);
    step.op = NODECTL_START;
    rc = run_step(c, n, &step, io, r);
    if (rc == 0)
        snprintf(r->detail, sizeof r->detail, "%s; started, pid %ld%s", stopped, r->status.pid,
                 r->cancelled ? " (not waiting for its URL)" : "");
    return rc;
}

int nodectl_run(sshconn *c, const struct cluster_node *n, const nodectl_req *req,
                const sshconn_io *io, nodectl_result *r)
{
    double t0 = clock_ms();
    memset(r, 0, sizeof *r);
    r->exit_status = -1;
    r->status.uptime_s = -1;
    int rc = run_op(c, n, req, io, r);
    r->took_s = (clock_ms() - t0) / 1000.0;
    return rc;
}
