/* test_nodectl.c: the node driver's pieces that need no SSH server: the
 * shell quoting every cluster value goes through, the scripts it builds
 * (run here with the local sh, against a local process), and the readers
 * of the nodes' answers. The SSH path itself is tests/e2e/ssh_nodes.sh. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tui/ssh/nodectl.h"

static char *quoted(const char *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_eq(nodectl_shquote(f, s), 0);
    fclose(f);
    return text;
}

/* Runs `script` with /bin/sh -c and returns its stdout (caller frees);
 * its stderr (the scripts' messages) is dropped. */
static char *run_sh(const char *script, int *status)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(fds[1], 1);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, out);
    fclose(out);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return text;
}

Test(nodectl_quote, plain_words_are_single_quoted)
{
    char *q = quoted("abc");
    cr_assert_str_eq(q, "'abc'");
    free(q);
    q = quoted("");
    cr_assert_str_eq(q, "''");
    free(q);
    q = quoted("it's");
    cr_assert_str_eq(q, "'it'\\''s'");
    free(q);
}

/* Whatever a cluster value holds, the shell sees exactly that one word:
 * nothing expands, splits, globs or runs. */
Test(nodectl_quote, nasty_values_round_trip_through_sh)
{
    static const char *const values[] = {"a b  c",    "$(touch /tmp/nodectl-pwned)",
                                         "`id`",      "$HOME",
                                         "'",         "''",
                                         "\\",        "\\'",
                                         "*",         "a;b|c&d",
                                         "new\nline", "tab\there",
                                         "\"dq\"",    "!bang",
                                         "~/x",       "-n",
                                         "é ü"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char *q = quoted(values[i]);
        char script[512];
        snprintf(script, sizeof script, "printf '%%s' %s", q);
        int st;
        char *out = run_sh(script, &st);
        cr_assert_eq(st, 0, "value %zu", i);
        cr_assert_str_eq(out, values[i], "value %zu came back as [%s]", i, out);
        free(out);
        free(q);
    }
    cr_assert_neq(access("/tmp/nodectl-pwned", F_OK), 0);
}

Test(nodectl_op, names_round_trip)
{
    for (int op = NODECTL_START; op <= NODECTL_EXEC; op++) {
        nodectl_op back;
        cr_assert_eq(nodectl_op_parse(nodectl_op_name((nodectl_op)op), &back), 0);
        cr_assert_eq((int)back, op);
    }
    nodectl_op x;
    cr_assert_eq(nodectl_op_parse("reboot", &x), -1);
}

Test(nodectl_parse, status_of_a_running_node)
{
    nodectl_status st;
    cr_assert_eq(
        nodectl_parse_status("running=1\npid=4242\nuptime=3725\nversion=inferd 0.1.0\n", &st), 0);
    cr_assert_eq(st.running, 1);
    cr_assert_eq(st.pid, 4242);
    cr_assert_eq(st.uptime_s, 3725);
    cr_assert_str_eq(st.version, "inferd 0.1.0");
}

Test(nodectl_parse, status_of_a_stopped_node_and_garbage)
{
    nodectl_status st;
    cr_assert_eq(nodectl_parse_status("running=0\n", &st), 0);
    cr_assert_eq(st.running, 0);
    cr_assert_eq(st.pid, 0);
    cr_assert_eq(st.uptime_s, -1);
    /* ps without etimes prints nothing: uptime stays unknown. */
    cr_assert_eq(nodectl_parse_status("running=1\npid=7\nuptime=\nversion=\n", &st), 0);
    cr_assert_eq(st.uptime_s, -1);
    cr_assert_str_eq(st.version, "");
    cr_assert_eq(nodectl_parse_status("bash: sh: not found\n", &st), -1);
}

Test(nodectl_parse, facts)
{
    const char *text = "cores=16\n"
                       "mem_total_kb=65842344\n"
                       "mem_available_kb=60120000\n"
                       "load=0.52 0.40 0.31\n"
                       "os=Debian GNU/Linux 12 (bookworm)\n"
                       "kernel=Linux 6.1.0-18-amd64\n"
                       "inferd_path=/usr/local/bin/inferd\n"
                       "inferd_version=inferd 0.1.0\n";
    nodectl_facts f;
    cr_assert_eq(nodectl_parse_facts(text, &f), 0);
    cr_assert_eq(f.cores, 16);
    cr_assert_eq(f.mem_total_kb, 65842344LL);
    cr_assert_eq(f.mem_available_kb, 60120000LL);
    cr_assert_float_eq(f.load[0], 0.52, 1e-9);
    cr_assert_float_eq(f.load[2], 0.31, 1e-9);
    cr_assert_str_eq(f.os, "Debian GNU/Linux 12 (bookworm)");
    cr_assert_str_eq(f.kernel, "Linux 6.1.0-18-amd64");
    cr_assert_str_eq(f.inferd_path, "/usr/local/bin/inferd");
    cr_assert_str_eq(f.inferd_version, "inferd 0.1.0");
}

Test(nodectl_parse, facts_without_inferd_or_meminfo)
{
    nodectl_facts f;
    cr_assert_eq(nodectl_parse_facts("cores=2\nload=1 2 3\nos=\nkernel=Linux 5\n", &f), 0);
    cr_assert_eq(f.mem_total_kb, -1);
    cr_assert_str_eq(f.inferd_path, "");
    cr_assert_eq(nodectl_parse_facts("", &f), -1);
}

/* The facts script on this machine: MemTotal is /proc/meminfo's. */
Test(nodectl_script, facts_read_this_machine)
{
    struct cluster_node n = {.name = "local"};
    nodectl_req req = {.op = NODECTL_FACTS};
    char *script = nodectl_script(&n, &req);
    cr_assert_not_null(script);
    int st;
    char *out = run_sh(script, &st);
    cr_assert_eq(st, 0);
    nodectl_facts f;
    cr_assert_eq(nodectl_parse_facts(out, &f), 0, "%s", out);
    FILE *mi = fopen("/proc/meminfo", "r");
    long long want = -1;
    char line[256];
    while (fgets(line, sizeof line, mi))
        if (sscanf(line, "MemTotal: %lld kB", &want) == 1)
            break;
    fclose(mi);
    cr_assert_eq(f.mem_total_kb, want);
    cr_assert_eq(f.cores, (int)sysconf(_SC_NPROCESSORS_ONLN));
    free(out);
    free(script);
}

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/infertop-nodectl-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* start, status, a refused second start, stop, status again: the
 * scripts on the local sh, with a `sleep` standing in for inferd and a
 * directory name that needs quoting. */
Test(nodectl_script, start_status_stop_locally, .init = make_dir, .fini = remove_dir)
{
    struct cluster_node n = {.name = "loc"};
    snprintf(n.pidfile, sizeof n.pidfile, "%s/it's here/loc.pid", dir);
    snprintf(n.log, sizeof n.log, "%s/it's here/loc.log", dir);
    snprintf(n.start, sizeof n.start, "sleep 60");
    nodectl_req start = {.op = NODECTL_START}, status = {.op = NODECTL_STATUS},
                stop = {.op = NODECTL_STOP, .grace_s = 2};
    char *s_start = nodectl_script(&n, &start), *s_status = nodectl_script(&n, &status),
         *s_stop = nodectl_script(&n, &stop);
    int rc;
    nodectl_status st;

    char *out = run_sh(s_start, &rc);
    cr_assert_eq(rc, 0, "start: %s", out);
    cr_assert_eq(nodectl_parse_status(out, &st), 0);
    cr_assert_eq(st.running, 1);
    long pid = st.pid;
    cr_assert_eq(kill((pid_t)pid, 0), 0);
    free(out);

    out = run_sh(s_start, &rc);
    cr_assert_eq(rc, 3, "a second start is refused");
    free(out);

    out = run_sh(s_status, &rc);
    cr_assert_eq(rc, 0);
    cr_assert_eq(nodectl_parse_status(out, &st), 0);
    cr_assert_eq(st.pid, pid);
    cr_assert_geq(st.uptime_s, 0);
    free(out);

    out = run_sh(s_stop, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "signal=TERM"), "%s", out);
    free(out);
    /* sleep was started by a sh that exited: this test process is not its
     * parent, so it is gone (or a zombie of init), never still sleeping. */
    char stat_path[64], state[256] = "";
    snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", pid);
    FILE *f = fopen(stat_path, "r");
    if (f) {
        cr_assert_not_null(fgets(state, sizeof state, f));
        fclose(f);
        cr_assert(strstr(state, ") Z") || strstr(state, ") X"), "%s", state);
    }

    out = run_sh(s_status, &rc);
    cr_assert_eq(nodectl_parse_status(out, &st), 0);
    cr_assert_eq(st.running, 0);
    free(out);
    out = run_sh(s_stop, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(out, "was_running=0"), "stopping a stopped node is not an error");
    free(out);
    free(s_start);
    free(s_status);
    free(s_stop);
}

/* A start line that exits at once is reported, with the end of its log. */
Test(nodectl_script, start_that_dies_is_reported, .init = make_dir, .fini = remove_dir)
{
    struct cluster_node n = {.name = "bad"};
    snprintf(n.pidfile, sizeof n.pidfile, "%s/bad.pid", dir);
    snprintf(n.log, sizeof n.log, "%s/bad.log", dir);
    snprintf(n.start, sizeof n.start, "echo 'cannot bind tcp://x' >&2; exit 1");
    nodectl_req start = {.op = NODECTL_START};
    char *s = nodectl_script(&n, &start);
    int rc;
    char *out = run_sh(s, &rc);
    cr_assert_eq(rc, 4);
    free(out);
    cr_assert_neq(access(n.pidfile, F_OK), 0, "no pidfile is left behind");
    free(s);
}
