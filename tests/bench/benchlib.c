/* benchlib.c: the result table and JSON file of one bench part, and the
 * inferd processes the node benches start.
 *
 * Rows live in a jansson array from the start, so the table printed and the
 * file written are the same figures by construction.
 */
#include "benchlib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "engine/compute/blas.h"
#include "engine/compute/cpu.h"
#include "engine/sys/ports.h"

extern char **environ;

struct bench {
    char *part;
    json_t *rows;
    json_t *notes; /* strings */
    int lost;      /* rows or notes dropped because jansson could not allocate */
};

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bench *bench_open(const char *part)
{
    bench *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->part = strdup(part);
    b->rows = json_array();
    b->notes = json_array();
    if (!b->part || !b->rows || !b->notes) {
        free(b->part);
        json_decref(b->rows);
        json_decref(b->notes);
        free(b);
        return NULL;
    }
    return b;
}

void bench_add(bench *b, const char *name, double value, const char *unit, const char *target,
               int pass)
{
    if (!b)
        return;
    /* JSON has no NaN or infinity: a figure that could not be computed
     * (a zero time, say) is stored as null and shown as n/a. */
    json_t *row =
        json_pack("{s:s, s:o, s:s, s:s?, s:o}", "name", name, "value",
                  isfinite(value) ? json_real(value) : json_null(), "unit", unit ? unit : "",
                  "target", target, "pass", pass < 0 ? json_null() : json_boolean(pass));
    if (!row || json_array_append_new(b->rows, row) != 0)
        b->lost++;
}

void bench_note(bench *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (!b)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (json_array_append_new(b->notes, json_string(line)) != 0)
        b->lost++;
}

/* Enough digits to read the figure, no more: 173.2, 0.3125, 251234, 0. */
static void format_value(const json_t *value, char *buf, size_t len)
{
    if (!json_is_real(value)) {
        snprintf(buf, len, "n/a");
        return;
    }
    double v = json_real_value(value), a = fabs(v);
    const char *fmt = a >= 1000 || v == 0 ? "%.0f" : a >= 100 ? "%.1f" : a >= 1 ? "%.2f" : "%.4f";
    snprintf(buf, len, fmt, v);
}

/* The "model name" line of /proc/cpuinfo, or "unknown". */
static void cpu_model(char *buf, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, len, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, len, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

static void print_table(const bench *b)
{
    int wname = 4, wvalue = 5, wunit = 4, wtarget = 6;
    size_t i;
    json_t *row;
    char value[32];

    json_array_foreach(b->rows, i, row)
    {
        int n = (int)strlen(json_string_value(json_object_get(row, "name")));
        int u = (int)strlen(json_string_value(json_object_get(row, "unit")));
        const char *t = json_string_value(json_object_get(row, "target"));
        format_value(json_object_get(row, "value"), value, sizeof value);
        wname = n > wname ? n : wname;
        wunit = u > wunit ? u : wunit;
        wvalue = (int)strlen(value) > wvalue ? (int)strlen(value) : wvalue;
        if (t && (int)strlen(t) > wtarget)
            wtarget = (int)strlen(t);
    }
    /* Which CPU and kernel path made the figures (rows naming a path in
     * brackets ran on that one). */
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    printf("cpu: %s, kernels %s\n", cpu, cpu_path_name(cpu_active()));
    printf("%-*s  %*s  %-*s  %-*s  %s\n", wname, "name", wvalue, "value", wunit, "unit", wtarget,
           "target", "result");
    json_array_foreach(b->rows, i, row)
    {
        json_t *pass = json_object_get(row, "pass");
        const char *t = json_string_value(json_object_get(row, "target"));
        format_value(json_object_get(row, "value"), value, sizeof value);
        printf("%-*s  %*s  %-*s  %-*s  %s\n", wname,
               json_string_value(json_object_get(row, "name")), wvalue, value, wunit,
               json_string_value(json_object_get(row, "unit")), wtarget, t ? t : "-",
               json_is_null(pass)   ? "-"
               : json_is_true(pass) ? "PASS"
                                    : "MISS");
    }
    json_array_foreach(b->notes, i, row)
    {
        printf("note: %s\n", json_string_value(row));
    }
}

static json_t *machine_info(void)
{
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    /* OPENBLAS_CORETYPE: set by the user, or by blas_select_core's re-exec. */
    return json_pack("{s:s, s:i, s:s, s:s, s:s?}", "cpu", cpu, "cores",
                     (int)sysconf(_SC_NPROCESSORS_ONLN), "cpu_path", cpu_path_name(cpu_active()),
                     "openblas_core", blas_core(), "openblas_coretype_env",
                     getenv("OPENBLAS_CORETYPE"));
}

/* mkdir -p: BENCH_DIR may name a directory several levels down. */
static int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

const char *bench_dir(void)
{
    const char *dir = getenv("BENCH_DIR");
    if (!dir || !*dir)
        dir = "build/bench";
    if (make_dirs(dir) != 0) {
        fprintf(stderr, "bench: cannot create directory %s: %s\n", dir, strerror(errno));
        return NULL;
    }
    return dir;
}

static int write_json(const bench *b)
{
    const char *dir = bench_dir();
    char path[4096], stamp[32];
    time_t now = time(NULL);
    struct tm tm;

    if (!dir)
        return -1;
    snprintf(path, sizeof path, "%s/%s.json", dir, b->part);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    json_t *doc = json_pack("{s:s, s:s, s:o, s:O, s:O}", "part", b->part, "timestamp", stamp,
                            "machine", machine_info(), "rows", b->rows, "notes", b->notes);
    if (!doc || json_dump_file(doc, path, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) != 0) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        json_decref(doc);
        return -1;
    }
    json_decref(doc);
    printf("results: %s\n", path);
    return 0;
}

int bench_close(bench *b)
{
    if (!b) {
        fprintf(stderr, "bench: out of memory, no results kept\n");
        return -1;
    }
    int rc = 0;
    print_table(b);
    if (b->lost) {
        fprintf(stderr, "bench %s: %d rows or notes lost (out of memory)\n", b->part, b->lost);
        rc = -1;
    }
    if (write_json(b) != 0)
        rc = -1;
    json_decref(b->rows);
    json_decref(b->notes);
    free(b->part);
    free(b);
    return rc;
}

/* Modification time of path in seconds, or -1 when it does not exist. */
static double mtime_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_mtim.tv_sec + 1e-9 * st.st_mtim.tv_nsec : -1;
}

int bench_gguf(const char *type, char *path, size_t len, char *err, size_t errlen)
{
    const char *dir = bench_dir(), *build = getenv("B");
    char inferd[512];
    snprintf(inferd, sizeof inferd, "%s/bin/inferd", build && *build ? build : "build");
    if (!dir) {
        snprintf(err, errlen, "no bench directory for the GGUF files");
        return -1;
    }
    snprintf(path, len, "%s/synth-110m-%s.gguf", dir, type);
    double built = mtime_of(inferd);
    if (built < 0) {
        snprintf(err, errlen, "%.200s: %s", inferd, strerror(errno));
        return -1;
    }
    if (mtime_of(path) > built)
        return 0;
    fprintf(stderr, "bench: inferd quantize --model synth:110m --type %s\n", type);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO); /* the table alone on stdout */
        execl(inferd, "inferd", "quantize", "--model", "synth:110m", "--type", type, "--out", path,
              (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "inferd quantize to %.300s failed (status %d)", path, status);
        return -1;
    }
    return 0;
}

/* ---- inferd nodes on loopback -------------------------------------------- */

/* Three per stage: control, telemetry and the ring's --listen. */
#define PORTS_MAX (3 * BENCH_STAGES_MAX)

int bench_free_ports(int n, int *ports)
{
    /* Outside the ephemeral range, which inferd serve refuses (ports.h). */
    char err[256];
    int first;
    if (n > PORTS_MAX || ports_free_run(n, &first, err, sizeof err) != 0) {
        errno = n > PORTS_MAX ? EINVAL : EADDRINUSE;
        return -1;
    }
    for (int i = 0; i < n; i++)
        ports[i] = first + i;
    return 0;
}

void bench_ring_stop(bench_ring *r)
{
    for (int i = 0; i < r->n; i++)
        if (r->pid[i] > 0)
            kill(r->pid[i], SIGTERM);
    for (int i = 0; i < r->n; i++)
        if (r->pid[i] > 0)
            waitpid(r->pid[i], NULL, 0);
    r->n = 0;
}

/* The fixed part of a stage's command line, with room for the ring's. */
#define ARGS_FIXED 12
#define ARGS_RING 4

int bench_ring_start(bench_ring *r, int n, const char *model, const int *bounds,
                     const char *const *opts)
{
    int ports[PORTS_MAX], n_opts = 0;
    memset(r, 0, sizeof *r);
    if (n < 1 || n > BENCH_STAGES_MAX) {
        fprintf(stderr, "bench: a ring of %d stages (at most %d)\n", n, BENCH_STAGES_MAX);
        return -1;
    }
    if (bench_free_ports(3 * n, ports) != 0) {
        fprintf(stderr, "bench: no free loopback ports: %s\n", strerror(errno));
        return -1;
    }
    while (opts && opts[n_opts])
        n_opts++;
    char **argv = calloc((size_t)(ARGS_FIXED + n_opts + ARGS_RING + 1), sizeof *argv);
    if (!argv) {
        fprintf(stderr, "bench: out of memory for a command line\n");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char name[16], layers[32], listen[64], next[64];
        snprintf(name, sizeof name, "bench%d", i);
        snprintf(layers, sizeof layers, "%d:%d", bounds[i], bounds[i + 1]);
        snprintf(r->control[i], sizeof r->control[i], "tcp://127.0.0.1:%d", ports[3 * i]);
        snprintf(r->telemetry[i], sizeof r->telemetry[i], "tcp://127.0.0.1:%d", ports[3 * i + 1]);
        snprintf(listen, sizeof listen, "tcp://127.0.0.1:%d", ports[3 * i + 2]);
        snprintf(next, sizeof next, "tcp://127.0.0.1:%d", ports[3 * ((i + 1) % n) + 2]);
        /* posix_spawn takes char *const[]: the strings are not written. */
        const char *fixed[ARGS_FIXED] = {
            "inferd",   "serve", "--name",    name,          "--model",     model,
            "--layers", layers,  "--control", r->control[i], "--telemetry", r->telemetry[i]};
        int k = 0;
        for (int a = 0; a < ARGS_FIXED; a++)
            argv[k++] = (char *)fixed[a];
        for (int a = 0; a < n_opts; a++)
            argv[k++] = (char *)opts[a];
        /* A single node has no --listen/--next. */
        if (n > 1) {
            argv[k++] = "--listen";
            argv[k++] = listen;
            argv[k++] = "--next";
            argv[k++] = next;
        }
        argv[k] = NULL;
        int rc = posix_spawnp(&r->pid[i], "inferd", NULL, NULL, argv, environ);
        if (rc != 0) {
            fprintf(stderr, "bench: cannot start inferd serve (stage %d of %d): %s\n", i, n,
                    strerror(rc));
            free(argv);
            bench_ring_stop(r);
            return -1;
        }
        r->n++;
    }
    free(argv);
    return 0;
}

/* 1 when stage i has exited (reaped, with a message), else 0. */
static int stage_exited(bench_ring *r, int i)
{
    int status;
    if (r->pid[i] <= 0 || waitpid(r->pid[i], &status, WNOHANG) != r->pid[i])
        return 0;
    r->pid[i] = 0;
    if (WIFEXITED(status))
        fprintf(stderr, "bench: stage %d (inferd serve) exited with status %d\n", i,
                WEXITSTATUS(status));
    else
        fprintf(stderr, "bench: stage %d (inferd serve) died of signal %d\n", i,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 1;
}

/* 1 when c's node answered status with ok within timeout_ms. */
static int status_ok(client *c, int timeout_ms)
{
    char err[256];
    proto_reply r;
    if (client_call(c, "status", NULL, &r, timeout_ms, err, sizeof err) != 1)
        return 0;
    int ok = r.ok;
    proto_reply_free(&r);
    return ok;
}

int bench_ring_wait(bench_ring *r, void *zctx, int timeout_s)
{
    double deadline = bench_now() + timeout_s;
    for (int i = 0; i < r->n; i++) {
        client *c;
        char err[256];
        if (client_open(&c, zctx, r->control[i], NULL, err, sizeof err) != 0) {
            fprintf(stderr, "bench: stage %d at %s: %s\n", i, r->control[i], err);
            return -1;
        }
        /* A status call may be lost to a node not listening yet: each try
         * is short, and a stage that exited ends the wait at once. */
        int up = 0;
        while (!up && bench_now() < deadline && !stage_exited(r, i))
            up = status_ok(c, 500);
        client_close(c);
        if (!up) {
            if (r->pid[i] > 0)
                fprintf(stderr, "bench: stage %d (%s) did not answer status within %d s\n", i,
                        r->control[i], timeout_s);
            return -1;
        }
    }
    return 0;
}

void *bench_tel_open(void *zctx, const char *endpoint, const char *topic)
{
    int linger = 0;
    void *sub = zmq_socket(zctx, ZMQ_SUB);
    if (!sub || zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, topic, strlen(topic)) != 0 ||
        zmq_connect(sub, endpoint) != 0) {
        fprintf(stderr, "bench: cannot subscribe to %s at %s: %s\n", topic, endpoint,
                zmq_strerror(zmq_errno()));
        if (sub)
            zmq_close(sub);
        return NULL;
    }
    return sub;
}

int bench_tel_next(void *sub, int timeout_ms, proto_tel *t)
{
    double deadline = bench_now() + timeout_ms / 1000.0;
    for (;;) {
        int left = (int)ceil((deadline - bench_now()) * 1000.0);
        zmq_pollitem_t item = {.socket = sub, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, left > 0 ? left : 0) <= 0)
            return 0;
        zmq_msg_t topic, payload;
        zmq_msg_init(&topic);
        zmq_msg_init(&payload);
        char err[256];
        int got =
            zmq_msg_recv(&topic, sub, 0) >= 0 && zmq_msg_more(&topic) &&
            zmq_msg_recv(&payload, sub, 0) >= 0 &&
            proto_tel_decode(zmq_msg_data(&topic), zmq_msg_size(&topic), zmq_msg_data(&payload),
                             zmq_msg_size(&payload), t, err, sizeof err) == 0;
        zmq_msg_close(&topic);
        zmq_msg_close(&payload);
        if (got)
            return 1;
    }
}
