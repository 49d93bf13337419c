/* demo.c: `infertop demo` (demo.h).
 *
 * The demo is an ordinary cluster: it writes a cluster file describing the
 * ring it starts, loads it like any other, and runs the same app loop on
 * it. What it adds are hooks: its child processes (reaped as they die, so
 * a killed stage shows down at once, and started or stopped from the
 * dashboard) and a light load sent to the head so that the numbers move.
 *
 * The stages run in a process group of their own, killed as a whole when
 * the demo exits; each also gets PR_SET_PDEATHSIG, so that a console that
 * crashes takes them down too.
 */
#include "demo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "engine/model/model.h"
#include "engine/sys/clock.h"
#include "engine/sys/ports.h"
#include "tui/cli/cli.h"
#include "tui/core/cluster.h"
#include "tui/stress/console_runs.h"

/* How long the stages get to stop after SIGTERM before SIGKILL. */
#define DEMO_GRACE_S 3.0
/* A stage waits this long for the next one before failing the request
 * (stage_timeout): short, so that a killed stage does not hold the load. */
#define DEMO_STEP_TIMEOUT "3"
/* The load: one request at a time, a pause between them. The embedded
 * model is tiny: this keeps a few hundred steps a second per stage, far
 * from filling two cores. */
#define DEMO_PROMPT_MIN 64
#define DEMO_PROMPT_MAX 256
#define DEMO_GEN_MIN 64
#define DEMO_GEN_MAX 128
#define DEMO_PAUSE_MIN_S 0.2
#define DEMO_PAUSE_MAX_S 0.5
#define DEMO_RETRY_S 1.0
/* Words in a stage's command line. */
#define DEMO_ARGV_MAX 32

struct child {
    char name[CLUSTER_NAME_MAX];
    char *argv[DEMO_ARGV_MAX];
    char args[DEMO_ARGV_MAX][CLUSTER_ENDPOINT_MAX]; /* argv's storage */
    char control[CLUSTER_ENDPOINT_MAX], telemetry[CLUSTER_ENDPOINT_MAX];
    char layers[32];
    char errlog[PATH_MAX]; /* the stage's stderr */
    char pidfile[PATH_MAX];
    pid_t pid;    /* 0 when not running */
    int stopping; /* the operator stopped it */
    int restart;  /* start it again once it has exited */
};

struct demo {
    int n;
    struct child child[OPT_DEMO_STAGES_MAX];
    pid_t pgid;            /* the stages' process group, 0 when none runs */
    char config[PATH_MAX]; /* the cluster file */
    const char *db;        /* --db: the run history; NULL: the demo's own (demo_db_path) */
    state *st;
    links *l;
    /* The load. */
    int busy; /* a generate is in flight */
    double next_load;
    unsigned rng;
};

/* ---- setting up ------------------------------------------------------------- */

/* The stages the embedded model allows: a layer each at least. */
static int max_stages(void)
{
    model_config mc;
    char err[256];
    if (model_probe("embedded", &mc, err, sizeof err) != 0)
        return 1;
    return mc.n_layers < OPT_DEMO_STAGES_MAX ? mc.n_layers : OPT_DEMO_STAGES_MAX;
}

/* Ports free on 127.0.0.1 now, outside the ephemeral range: the console
 * reconnecting to a stopped stage there could connect to itself and keep
 * the stage out of its port (engine/sys/ports.h). */
static int free_ports(int n, int *ports, char *err, size_t errlen)
{
    int first;
    if (ports_free_run(n, &first, err, errlen) != 0)
        return -1;
    for (int k = 0; k < n; k++)
        ports[k] = first + k;
    return 0;
}

/* The file `rel` beside this binary (rel starts with a /); 0 when it
 * exists with `mode` (access(2)). */
static int beside_self(const char *rel, int mode, char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    int k = snprintf(out, len, "%s%s", self, rel);
    return k > 0 && (size_t)k < len && access(out, mode) == 0 ? 0 : -1;
}

/* inferd next to this binary (the build tree, an install prefix), else
 * whatever $PATH finds. */
static void find_inferd(char *out, size_t len)
{
    if (beside_self("/inferd", X_OK, out, len) != 0)
        snprintf(out, len, "inferd");
}

static const char *runtime_dir(void)
{
    const char *d = getenv("XDG_RUNTIME_DIR");
    return d && d[0] == '/' && access(d, W_OK) == 0 ? d : "/tmp";
}

/* The demo's run history: a database of its own in a directory of the
 * user's under the runtime directory, so that the demo's runs never mix
 * with the user's (`history best`). The directory is checked to be the
 * user's and private: /tmp is shared. */
static int demo_db_path(char *out, size_t len, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/infertop-%u", runtime_dir(), (unsigned)getuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077)) {
        snprintf(err, errlen, "%s is not a private directory of yours: give --db FILE", dir);
        return -1;
    }
    if (snprintf(out, len, "%s/demo-history.db", dir) >= (int)len) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    return 0;
}

static void add_arg(struct child *ch, int *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_arg(struct child *ch, int *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ch->args[*k], sizeof ch->args[*k], fmt, ap);
    va_end(ap);
    ch->argv[*k] = ch->args[*k];
    ch->argv[++*k] = NULL;
}

/* Stage i of n holds layers [i*L/n, (i+1)*L/n): as even as it gets. Its
 * ports: control, telemetry, listen; the next stage's listen closes the
 * ring. */
static void plan_stage(struct demo *d, int i, int n_layers, const char *inferd, const int *ports)
{
    struct child *ch = &d->child[i];
    const char *dir = runtime_dir();
    int k = 0;
    snprintf(ch->name, sizeof ch->name, "stage%d", i);
    snprintf(ch->errlog, sizeof ch->errlog, "%s/infertop-demo-%ld-stage%d.err", dir, (long)getpid(),
             i);
    snprintf(ch->pidfile, sizeof ch->pidfile, "%s/infertop-demo-%ld-stage%d.pid", dir,
             (long)getpid(), i);
    add_arg(ch, &k, "%s", inferd);
    add_arg(ch, &k, "serve");
    add_arg(ch, &k, "--name");
    add_arg(ch, &k, "%s", ch->name);
    snprintf(ch->layers, sizeof ch->layers, "%d:%d", i * n_layers / d->n,
             (i + 1) * n_layers / d->n);
    snprintf(ch->control, sizeof ch->control, "tcp://127.0.0.1:%d", ports[3 * i]);
    snprintf(ch->telemetry, sizeof ch->telemetry, "tcp://127.0.0.1:%d", ports[3 * i + 1]);
    add_arg(ch, &k, "--layers");
    add_arg(ch, &k, "%s", ch->layers);
    add_arg(ch, &k, "--control");
    add_arg(ch, &k, "%s", ch->control);
    add_arg(ch, &k, "--telemetry");
    add_arg(ch, &k, "%s", ch->telemetry);
    if (d->n > 1) {
        add_arg(ch, &k, "--listen");
        add_arg(ch, &k, "tcp://127.0.0.1:%d", ports[3 * i + 2]);
        add_arg(ch, &k, "--next");
        add_arg(ch, &k, "tcp://127.0.0.1:%d", ports[3 * ((i + 1) % d->n) + 2]);
    }
    /* One thread each: the stages share the machine with the console. */
    add_arg(ch, &k, "--threads");
    add_arg(ch, &k, "1");
    add_arg(ch, &k, "--step-timeout");
    add_arg(ch, &k, DEMO_STEP_TIMEOUT);
    add_arg(ch, &k, "--pidfile");
    add_arg(ch, &k, "%s", ch->pidfile);
}

static int write_config(const struct demo *d, char *err, size_t errlen)
{
    FILE *f = fopen(d->config, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", d->config, strerror(errno));
        return -1;
    }
    fprintf(f,
            "# The ring of `infertop demo` (pid %ld), removed when it exits.\n"
            "[cluster]\nname = demo\n",
            (long)getpid());
    for (int i = 0; i < d->n; i++) {
        const struct child *ch = &d->child[i];
        fprintf(f, "\n[node %s]\nssh = localhost\ncontrol = %s\ntelemetry = %s\nlayers = %s\n",
                ch->name, ch->control, ch->telemetry, ch->layers);
        /* An option and its value per line (every option here takes one):
         * the file's lines are short. */
        fprintf(f, "start = %s %s", ch->argv[0], ch->argv[1]);
        for (int k = 2; ch->argv[k]; k += 2)
            fprintf(f, "\n    %s %s", ch->argv[k], ch->argv[k + 1]);
        fprintf(f, "\npidfile = %s\n", ch->pidfile);
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: %s", d->config, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the stages' processes ------------------------------------------------- */

static int running(const struct demo *d)
{
    int n = 0;
    for (int i = 0; i < d->n; i++)
        n += d->child[i].pid > 0;
    return n;
}

/* Between fork and exec only async-signal-safe calls: the console has
 * ZeroMQ's threads running. */
static void exec_stage(const struct child *ch, pid_t pgid, pid_t parent, int errfd)
{
    setpgid(0, pgid);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* the console died before prctl */
        _exit(1);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
        dup2(null, STDIN_FILENO);
    if (errfd >= 0) {
        dup2(errfd, STDOUT_FILENO);
        dup2(errfd, STDERR_FILENO);
    }
    execvp(ch->argv[0], ch->argv);
    _exit(127);
}

static int spawn(struct demo *d, int i, double now, char *err, size_t errlen)
{
    struct child *ch = &d->child[i];
    /* A group lives while one of its processes does; with none left, the
     * next stage leads a new one. */
    pid_t pgid = running(d) > 0 ? d->pgid : 0;
    int errfd = open(ch->errlog, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        if (errfd >= 0)
            close(errfd);
        return -1;
    }
    if (pid == 0)
        exec_stage(ch, pgid, parent, errfd);
    /* Both sides set the group, so that it is set before either goes on. */
    setpgid(pid, pgid ? pgid : pid);
    if (errfd >= 0)
        close(errfd);
    if (!pgid)
        d->pgid = pid;
    ch->pid = pid;
    ch->stopping = 0;
    ch->restart = 0;
    state_mark_starting(d->st, i, now);
    return 0;
}

static void describe_exit(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "process killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "process exited with status %d", WEXITSTATUS(status));
}

/* The last line a stage wrote to stderr: why it failed to start, say. */
static void last_error_line(const struct child *ch, char *buf, size_t len)
{
    char line[512];
    buf[0] = '\0';
    FILE *f = fopen(ch->errlog, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (line[0] != '\n')
            snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
    fclose(f);
}

/* Reaps the stages that exited. Returns how many. */
static int reap(struct demo *d, double now)
{
    int n = 0, status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < d->n; i++) {
            struct child *ch = &d->child[i];
            if (ch->pid != pid)
                continue;
            char why[128], err[256];
            describe_exit(status, why, sizeof why);
            ch->pid = 0;
            unlink(ch->pidfile);
            state_mark_down(d->st, i, ch->stopping ? "stopped by the operator" : why, now);
            last_error_line(ch, err, sizeof err);
            if (!ch->stopping && err[0])
                state_event_add(d->st, i, "demo", now, "%s said: %s", ch->name, err);
            if (ch->restart && spawn(d, i, now, err, sizeof err) != 0)
                state_event_add(d->st, i, "demo", now, "restart failed: %s", err);
            n++;
        }
    }
    return n;
}

/* SIGTERM to the group, SIGKILL to what is left after the grace period. */
static void stop_all(struct demo *d)
{
    if (running(d) == 0)
        return;
    kill(-d->pgid, SIGTERM);
    double until = clock_ms() / 1000.0 + DEMO_GRACE_S;
    while (running(d) > 0 && clock_ms() / 1000.0 < until) {
        if (reap(d, app_now()) == 0)
            usleep(20 * 1000);
    }
    if (running(d) > 0)
        kill(-d->pgid, SIGKILL);
    for (int i = 0; i < d->n; i++) {
        if (d->child[i].pid > 0)
            waitpid(d->child[i].pid, NULL, 0);
        d->child[i].pid = 0;
        unlink(d->child[i].pidfile);
    }
}

static int node_action(void *ctx, enum action_kind kind, int node, double now, char *err,
                       size_t errlen)
{
    struct demo *d = ctx;
    if (node < 0 || node >= d->n) {
        snprintf(err, errlen, "pick one stage for this action");
        return -1;
    }
    struct child *ch = &d->child[node];
    if (kind == ACT_NODE_START) {
        if (ch->pid > 0) {
            snprintf(err, errlen, "%s is already running (pid %ld)", ch->name, (long)ch->pid);
            return -1;
        }
        return spawn(d, node, now, err, errlen);
    }
    if (ch->pid <= 0) {
        if (kind == ACT_NODE_RESTART)
            return spawn(d, node, now, err, errlen);
        snprintf(err, errlen, "%s is not running", ch->name);
        return -1;
    }
    /* Restart: the new process starts once the old one has gone, and
     * with it its ports. */
    ch->stopping = 1;
    ch->restart = kind == ACT_NODE_RESTART;
    kill(ch->pid, SIGTERM);
    return 0;
}

/* ---- the load -------------------------------------------------------------- */

static int between(struct demo *d, int lo, int hi)
{
    return lo + (int)(rand_r(&d->rng) % (unsigned)(hi - lo + 1));
}

static void load_done(void *ctx, const struct links_reply *r)
{
    struct demo *d = ctx;
    double pause = DEMO_PAUSE_MIN_S +
                   (DEMO_PAUSE_MAX_S - DEMO_PAUSE_MIN_S) * (rand_r(&d->rng) / (double)RAND_MAX);
    d->busy = 0;
    d->next_load = r->now + (r->ok == 1 ? pause : DEMO_RETRY_S);
}

/* One generate at a time to the head, once it is up. */
static void load(struct demo *d, double now)
{
    char err[256];
    if (d->busy || now < d->next_load)
        return;
    if (state_node_live(d->st, 0, now) != STATE_UP) {
        d->next_load = now + DEMO_RETRY_S;
        return;
    }
    json_t *args = json_pack("{s:i, s:i, s:f}", "synthetic_tokens",
                             between(d, DEMO_PROMPT_MIN, DEMO_PROMPT_MAX), "max_tokens",
                             between(d, DEMO_GEN_MIN, DEMO_GEN_MAX), "temperature", 0.8);
    if (args && links_request(d->l, 0, "generate", args, LINKS_TIMEOUT_S, now, load_done, d, err,
                              sizeof err) == 0)
        d->busy = 1;
    else
        d->next_load = now + DEMO_RETRY_S;
    json_decref(args);
}

static double demo_tick(void *ctx, double now, int *changed)
{
    struct demo *d = ctx;
    if (reap(d, now) > 0)
        *changed = 1;
    load(d, now);
    return d->busy ? INFINITY : d->next_load;
}

/* ---- the verb ---------------------------------------------------------------- */

/* Returns -1 to go on, else the exit code (--help, a bad option). */
static int parse_args(int argc, char **argv, struct demo *d, struct ui_options *uo)
{
    opt_vals v;
    int rc = cli_parse(OPT_V_DEMO, argc, argv, &v);
    if (rc >= 0)
        return rc;
    app_ui_options(&v, uo);
    d->db = opt_str(&v, OPT_DB);
    if (opt_given(&v, OPT_WRITE_CONFIG))
        snprintf(d->config, sizeof d->config, "%s", opt_str(&v, OPT_WRITE_CONFIG));
    d->n = (int)opt_int(&v, OPT_STAGES);
    if (d->n > max_stages()) {
        char why[96];
        snprintf(why, sizeof why, "--stages %d: the embedded model has room for %d", d->n,
                 max_stages());
        return cli_usage_error("demo", "%s", why);
    }
    return -1;
}

/* Everything after the stages are planned: the file, the links, the
 * processes, the dashboard. The caller stops the processes. */
static int demo_run(struct demo *d, struct ui_options *uo, char *err, size_t errlen)
{
    struct cluster *c = NULL;
    if (write_config(d, err, errlen) != 0 || cluster_load(d->config, &c, err, errlen) != 0)
        return -1;
    double now = app_now();
    char db[PATH_MAX];
    int rc = d->db ? snprintf(db, sizeof db, "%s", d->db) >= (int)sizeof db
                   : demo_db_path(db, sizeof db, err, errlen);
    if (rc != 0 && d->db)
        snprintf(err, errlen, "--db: path too long");
    if (rc == 0)
        rc = app_open_runs(db, c, uo, err, errlen);
    if (rc == 0)
        rc = app_connect(c, now, &d->st, &d->l, err, errlen);
    for (int i = 0; rc == 0 && i < d->n; i++)
        rc = spawn(d, i, now, err, errlen);
    if (rc == 0) {
        struct app_hooks hooks = {.ctx = d, .tick = demo_tick, .node_action = node_action};
        state_event_add(d->st, -1, "demo", now, "cluster file %s", d->config);
        state_event_add(d->st, -1, "demo", now, "run history %s", db);
        uo->cluster = c;
        rc = app_run(uo, d->st, d->l, &hooks, err, errlen);
    }
    console_runs_free(uo->runs); /* before the nodes stop: a run going is aborted cleanly */
    stop_all(d);
    links_close(d->l);
    state_free(d->st);
    cluster_free(c);
    return rc;
}

/* The verb on a zeroed demo. */
static int demo_verb(struct demo *d, int argc, char **argv)
{
    struct ui_options uo = {.mouse = 1};
    /* Room for a message naming a path. */
    char err[2 * PATH_MAX], inferd[PATH_MAX];
    model_config mc;
    int ports[3 * OPT_DEMO_STAGES_MAX];

    int p = parse_args(argc, argv, d, &uo);
    if (p >= 0)
        return p;
    if (model_probe("embedded", &mc, err, sizeof err) != 0) {
        fprintf(stderr, "infertop demo: %s\n", err);
        return CLI_ERROR;
    }
    if (!d->config[0])
        snprintf(d->config, sizeof d->config, "%s/infertop-demo-%ld.conf", runtime_dir(),
                 (long)getpid());
    if (free_ports(3 * d->n, ports, err, sizeof err) != 0) {
        fprintf(stderr, "infertop demo: %s\n", err);
        return CLI_ERROR;
    }
    find_inferd(inferd, sizeof inferd);
    for (int i = 0; i < d->n; i++)
        plan_stage(d, i, mc.n_layers, inferd, ports);
    d->rng = (unsigned)time(NULL) ^ (unsigned)getpid();

    int rc = demo_run(d, &uo, err, sizeof err);
    unlink(d->config);
    for (int i = 0; i < d->n; i++)
        unlink(d->child[i].errlog);
    if (rc != 0) {
        fprintf(stderr, "infertop demo: %s\n", err);
        return CLI_ERROR;
    }
    return CLI_OK;
}

int demo_main(int argc, char **argv)
{
    /* On the heap: the stages' command lines make it large. */
    struct demo *d = calloc(1, sizeof *d);
    if (!d) {
        fprintf(stderr, "infertop demo: out of memory\n");
        return CLI_ERROR;
    }
    int rc = demo_verb(d, argc, argv);
    free(d);
    return rc;
}

/* ---- first contact ------------------------------------------------------------ */

int demo_offer(const char *why)
{
    char example[PATH_MAX], conf[PATH_MAX];
    fprintf(stderr, "infertop: %s\n\n", why);
    fputs("A cluster file names the nodes to watch. To start:\n"
          "  infertop demo      a local ring of inferd stages under a light load, to try the\n"
          "                     console (its runs go to a history of its own)\n",
          stderr);
    /* Installed (PREFIX/bin/infertop, the example in PREFIX/share), else
     * the build tree's copy (build/bin, build/asan/bin). */
    static const char *const where[] = {"/../share/infertop/cluster.example.conf",
                                        "/../../contrib/cluster.example.conf",
                                        "/../../../contrib/cluster.example.conf"};
    char found[PATH_MAX];
    size_t i = 0;
    while (i < sizeof where / sizeof where[0] &&
           (beside_self(where[i], R_OK, found, sizeof found) != 0 || !realpath(found, example)))
        i++;
    if (i == sizeof where / sizeof where[0])
        snprintf(example, sizeof example, "contrib/cluster.example.conf");
    if (cluster_home_path(conf, sizeof conf) == 0)
        fprintf(stderr,
                "  mkdir -p %.*s && cp %s %s\n"
                "                     then name your nodes in it (the example explains each key)\n",
                (int)(strrchr(conf, '/') - conf), conf, example, conf);
    fputs("  infertop -c FILE   any other cluster file\n", stderr);
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
        return CLI_ERROR;
    fputs("\nStart the demo now? [y/N] ", stderr);
    char answer[16];
    if (!fgets(answer, sizeof answer, stdin) || (answer[0] != 'y' && answer[0] != 'Y'))
        return CLI_ERROR;
    char word[] = "demo";
    char *argv[] = {word, NULL};
    return demo_main(1, argv);
}
