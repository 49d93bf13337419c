/* bench_console.c: the console's CPU use while it watches a busy cluster
 * (the bar: 8 local nodes publishing 100 steps/s each, 10 redraws
 * a second, at most 2% of one core), and while it polls 8 nodes of another
 * engine over HTTP every second (issue 24: the same bar). The HTTP nodes
 * are real servers: `inferd serve --http` declared `engine = openai`.
 *
 * telgen (tests/lib/telgen.c) stands in for the nodes: it speaks the
 * telemetry protocol through the same encoders a node uses. The console
 * (`infertop -c FILE`, the real binary) runs on a pseudo-terminal of 160x50
 * whose output this process drains, as a terminal would. After a warm-up
 * (connections made, nodes identified), the console's utime + stime from
 * /proc/PID/stat over MEASURE_S seconds give its share of one core. The
 * screen must show all 8 nodes up, else the figure means nothing and the
 * bench fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "benchlib.h"

#define NODES "8"
#define RATE "100"
#define WARMUP_S 3.0
#define MEASURE_S 10.0
#define TARGET_PCT 2.0
#define HTTP_NODES 8
#define HTTP_MEASURE_S 20.0
/* The last bytes of the console's output, searched for "8/8 up" in the
 * screen it sends after Ctrl-L. */
#define TAIL 65536

struct tail {
    char buf[TAIL + 1];
    size_t len;
};

static void tail_add(struct tail *t, const char *p, size_t n)
{
    if (n >= TAIL) {
        p += n - TAIL;
        n = TAIL;
    }
    if (t->len + n > TAIL) {
        size_t drop = t->len + n - TAIL;
        memmove(t->buf, t->buf + drop, t->len - drop);
        t->len -= drop;
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

/* Reads what the console wrote for `seconds`, as a terminal would. */
static void drain(int fd, double seconds, struct tail *t)
{
    double until = bench_now() + seconds;
    char buf[8192];
    for (double now = bench_now(); now < until; now = bench_now()) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)((until - now) * 1000) + 1) <= 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            return;
        /* NULs (from cleared cells) would end the search string early. */
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        tail_add(t, buf, (size_t)n);
    }
}

/* utime + stime of a process, in seconds. */
static double cpu_seconds(pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    /* The command name may hold spaces: fields count from its ')'. */
    char *p = strrchr(line, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* telgen with its stdout on a pipe; returns its pid, the pipe in *out. */
static pid_t start_telgen(const char *exe, const char *conf, int *out)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(exe, exe, "--nodes", NODES, "--rate", RATE, "--config", conf, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    *out = fds[0];
    return pid;
}

/* Waits (at most 10 s) for a line on fd that starts with `prefix`. */
static int wait_line(int fd, const char *prefix, char *line, size_t len)
{
    size_t n = 0;
    double until = bench_now() + 10.0;
    while (bench_now() < until && n + 1 < len) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        if (read(fd, line + n, 1) != 1)
            return -1;
        if (line[n] == '\n') {
            line[n] = '\0';
            if (strncmp(line, prefix, strlen(prefix)) == 0)
                return 0;
            n = 0;
            continue;
        }
        n++;
    }
    return -1;
}

/* The console on a new pseudo-terminal; returns its pid, the master in *pty. */
static pid_t start_console(const char *exe, const char *conf, int *pty)
{
    struct winsize ws = {.ws_row = 50, .ws_col = 160};
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || ioctl(m, TIOCSWINSZ, &ws) != 0)
        return -1;
    const char *slave = ptsname(m);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0 || ioctl(s, TIOCSCTTY, 0) != 0)
            _exit(127);
        dup2(s, STDIN_FILENO);
        dup2(s, STDOUT_FILENO);
        dup2(s, STDERR_FILENO);
        close(m);
        setenv("TERM", "xterm-256color", 1);
        setenv("LC_ALL", "C.UTF-8", 1);
        execl(exe, exe, "-c", conf, (char *)NULL);
        _exit(127);
    }
    *pty = m;
    return pid;
}

/* Waits up to `seconds` for pid to exit, then kills it. */
static void reap(pid_t pid, double seconds)
{
    double until = bench_now() + seconds;
    while (bench_now() < until) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* The console on conf: its share of one core over `measure` seconds after
 * `warmup`; the screen must then say "N/N up" (want). 0, or -1 with a
 * message on stderr. */
static int measure(const char *infertop, const char *conf, const char *want, double warmup,
                   double measure_s, double *pct)
{
    int pty;
    pid_t con = start_console(infertop, conf, &pty);
    if (con < 0) {
        fprintf(stderr, "bench_console: cannot start %s on a pty\n", infertop);
        return -1;
    }
    static struct tail screen;
    screen.len = 0;
    drain(pty, warmup, &screen);
    double c0 = cpu_seconds(con), t0 = bench_now();
    drain(pty, measure_s, &screen);
    double c1 = cpu_seconds(con), t1 = bench_now();
    /* Curses sends only what changed: Ctrl-L makes it send the screen. */
    screen.len = 0;
    if (write(pty, "\f", 1) == 1)
        drain(pty, 0.5, &screen);
    int saw_all = strstr(screen.buf, want) != NULL;
    if (write(pty, "q", 1) != 1)
        kill(con, SIGTERM);
    drain(pty, 0.5, &screen);
    reap(con, 5);
    close(pty);
    if (c0 < 0 || c1 < 0 || !saw_all) {
        fprintf(stderr, "bench_console: the console %s %s\n",
                c0 < 0 || c1 < 0 ? "exited early" : "never showed", c0 < 0 || c1 < 0 ? "" : want);
        return -1;
    }
    *pct = 100.0 * (c1 - c0) / (t1 - t0);
    return 0;
}

/* HTTP_NODES `inferd serve --http` on loopback, and a cluster file in dir
 * that declares them openai nodes. 0, or -1 (the started ones in pids). */
static int start_http_nodes(const char *dir, const char *conf, pid_t *pids)
{
    /* The nodes' own sockets are ipc ones: only their HTTP needs a port. */
    int ports[HTTP_NODES];
    if (bench_free_ports(HTTP_NODES, ports) != 0) {
        fprintf(stderr, "bench_console: no free loopback ports: %s\n", strerror(errno));
        return -1;
    }
    FILE *f = fopen(conf, "w");
    if (!f)
        return -1;
    fprintf(f, "[cluster]\nname = http8\n");
    for (int i = 0; i < HTTP_NODES; i++) {
        char name[16], ctl[128], tel[128], http[64], log[256];
        snprintf(name, sizeof name, "web%d", i);
        snprintf(ctl, sizeof ctl, "ipc://%s/%s.ctl", dir, name);
        snprintf(tel, sizeof tel, "ipc://%s/%s.tel", dir, name);
        snprintf(http, sizeof http, "127.0.0.1:%d", ports[i]);
        snprintf(log, sizeof log, "%s/%s.log", dir, name);
        fprintf(f, "[node %s]\nengine = openai\nurl = http://%s\n", name, http);
        pid_t pid = fork();
        if (pid == 0) {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, STDERR_FILENO);
            execlp("inferd", "inferd", "serve", "--name", name, "--control", ctl, "--telemetry",
                   tel, "--http", http, "--threads", "1", "--log", log, (char *)NULL);
            _exit(127);
        }
        pids[i] = pid;
    }
    return fclose(f) == 0 ? 0 : -1;
}

static void stop_http_nodes(const pid_t *pids)
{
    for (int i = 0; i < HTTP_NODES; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGTERM);
    for (int i = 0; i < HTTP_NODES; i++)
        if (pids[i] > 0)
            reap(pids[i], 5);
}

/* The console polling HTTP_NODES nodes every second. */
static int measure_http(const char *infertop, const char *dir, double *pct)
{
    char conf[160];
    pid_t pids[HTTP_NODES] = {0};
    snprintf(conf, sizeof conf, "%s/http.conf", dir);
    int rc = start_http_nodes(dir, conf, pids);
    /* The nodes come up during the warm-up; the screen says so at the end. */
    if (rc == 0)
        rc = measure(infertop, conf, "8/8 up", WARMUP_S, HTTP_MEASURE_S, pct);
    stop_http_nodes(pids);
    char path[256];
    for (int i = 0; i < HTTP_NODES; i++)
        for (const char *ext = "log\0ctl\0tel\0"; *ext; ext += 4) {
            snprintf(path, sizeof path, "%s/web%d.%s", dir, i, ext);
            unlink(path);
        }
    unlink(conf);
    return rc;
}

int main(void)
{
    const char *b = getenv("B") ? getenv("B") : "build";
    char telgen[512], infertop[512], dir[] = "/tmp/bench-console-XXXXXX", conf[128], line[256];
    snprintf(telgen, sizeof telgen, "%s/tests/telgen", b);
    snprintf(infertop, sizeof infertop, "%s/bin/infertop", b);
    if (!mkdtemp(dir)) {
        perror("bench_console: mkdtemp");
        return 1;
    }
    snprintf(conf, sizeof conf, "%s/cluster.conf", dir);

    int tg_out;
    pid_t tg = start_telgen(telgen, conf, &tg_out);
    if (tg < 0 || wait_line(tg_out, "ready", line, sizeof line) != 0) {
        fprintf(stderr, "bench_console: %s did not start\n", telgen);
        if (tg > 0)
            reap(tg, 0);
        return 1;
    }
    double pct = -1, http_pct = -1;
    int rc = measure(infertop, conf, NODES "/" NODES " up", WARMUP_S, MEASURE_S, &pct);
    kill(tg, SIGTERM);
    double offered = -1;
    unsigned long long steps;
    double secs;
    if (wait_line(tg_out, "steps", line, sizeof line) == 0 &&
        sscanf(line, "steps %llu heartbeats %*u seconds %lf", &steps, &secs) == 2 && secs > 0)
        offered = (double)steps / secs;
    reap(tg, 5);
    close(tg_out);
    unlink(conf);
    if (rc == 0)
        rc = measure_http(infertop, dir, &http_pct);
    rmdir(dir);
    if (rc != 0)
        return 1;

    bench *bn = bench_open("console");
    bench_add(bn, "console CPU, " NODES " nodes x " RATE " steps/s, 10 fps", pct, "% of a core",
              "<= 2 %", pct <= TARGET_PCT);
    bench_add(bn, "telemetry offered to the console", offered, "steps/s", NULL, -1);
    bench_add(bn, "console CPU, 8 HTTP nodes, 1 s polls", http_pct, "% of a core", "<= 2 %",
              http_pct <= TARGET_PCT);
    return bench_close(bn) == 0 ? 0 : 1;
}
