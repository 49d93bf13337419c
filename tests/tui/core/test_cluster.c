/* test_cluster.c: the cluster file loader and its search order. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/sys/ports.h"
#include "tui/core/cluster.h"
#include "tui/core/shellword.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/infertop-cluster-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cluster, .init = make_dir, .fini = remove_dir);

/* Writes text to dir/name and returns the path (static storage). */
static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

#define NODE_A                                                                                     \
    "[node a]\n"                                                                                   \
    "ssh = a.example\n"                                                                            \
    "control = tcp://127.0.0.1:5555\n"                                                             \
    "telemetry = tcp://127.0.0.1:5556\n"                                                           \
    "start = inferd serve\n"

/* Loads text, expects failure, and checks the message has every needle. */
static void expect_error(const char *text, const char *n1, const char *n2, const char *n3)
{
    char err[512] = "";
    struct cluster *c = NULL;
    const char *path = write_file("bad.conf", text);
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), -1, "accepted:\n%s", text);
    cr_assert_null(c);
    cr_assert(strstr(err, path), "no file name in: %s", err);
    const char *needles[] = {n1, n2, n3};
    for (int i = 0; i < 3; i++)
        if (needles[i])
            cr_assert(strstr(err, needles[i]), "`%s` not in: %s", needles[i], err);
}

Test(cluster, example_file_loads)
{
    const char *root = getenv("INFERTOP_ROOT");
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/contrib/cluster.example.conf", root ? root : ".");
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->name, "ring");
    cr_assert_eq(c->n_nodes, 4);
    cr_assert_eq(cluster_ring_size(c), 3, "the llama.cpp node is not in the ring");
    cr_assert_str_eq(c->nodes[0].name, "head");
    cr_assert_str_eq(c->nodes[2].name, "tail");
    cr_assert_eq(c->nodes[3].engine, ENG_LLAMACPP);
    cr_assert_str_eq(c->nodes[3].url, "http://10.0.0.20:8080");
    cr_assert_str_eq(c->nodes[3].control, "", "an HTTP node has no ZeroMQ endpoint");
    cr_assert(strstr(c->nodes[3].start, "--metrics --slots"), "%s", c->nodes[3].start);
    cr_assert_str_eq(c->nodes[0].ssh_host, "10.0.0.11", "`ops@`: the node's host");
    cr_assert_eq(c->nodes[2].ssh_port, 2222);
    cr_assert_eq(c->nodes[1].layer_first, 6);
    cr_assert_eq(c->nodes[1].layer_last, 11);
    cr_assert_str_eq(c->nodes[1].control, "tcp://10.0.0.12:5555");
    cr_assert_eq(c->nodes[2].mem_limit, 28ull << 30);
    /* The derived command lines close the ring from the tail to the head. */
    cr_assert(strstr(c->nodes[0].start, "--layers 0:6 --control tcp://10.0.0.11:5555"), "%s",
              c->nodes[0].start);
    cr_assert(strstr(c->nodes[2].start, "--next tcp://10.0.0.11:5557"), "%s", c->nodes[2].start);
    cr_assert(strstr(c->nodes[2].start, "--kv-bits 8 --prefill-step 512 --max-ctx 200000"), "%s",
              c->nodes[2].start);
    cr_assert_str_eq(c->nodes[0].identity, "~/.ssh/id_ed25519");
    cr_assert_str_eq(c->nodes[2].identity, "~/.ssh/tail_ed25519");
    cluster_free(c);
}

Test(cluster, every_field_and_defaults)
{
    const char *path = write_file("ok.conf", "; a comment\n"
                                             "[node a]\n"
                                             "ssh = ops@[::1]:2200\n"
                                             "control = tcp://127.0.0.1:5555\n"
                                             "telemetry = tcp://[::1]:5556\n"
                                             "start = inferd serve --model synth:1b\n"
                                             "\t--layers 0:4\n"
                                             "layers = 0:4\n"
                                             "log = /tmp/a.log\n"
                                             "pidfile = /tmp/a.pid\n"
                                             "accept_new = yes\n"
                                             "[node b]\n"
                                             "ssh = b\n"
                                             "control = tcp://127.0.0.2:5555\n"
                                             "telemetry = tcp://127.0.0.2:5556\n"
                                             "start = inferd serve\n"
                                             "[cluster]\n"
                                             "name = lab\n"
                                             "known_hosts = /tmp/kh\n"
                                             "accept_new = off\n");
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->path, path);
    cr_assert_str_eq(c->name, "lab");
    cr_assert_eq(c->n_nodes, 2);
    const struct cluster_node *a = cluster_node_find(c, "a");
    const struct cluster_node *b = cluster_node_find(c, "b");
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_null(cluster_node_find(c, "z"));
    cr_assert_str_eq(a->ssh_user, "ops");
    cr_assert_str_eq(a->ssh_host, "::1");
    cr_assert_eq(a->ssh_port, 2200);
    cr_assert_str_eq(a->telemetry, "tcp://[::1]:5556");
    cr_assert_str_eq(a->start, "inferd serve --model synth:1b --layers 0:4");
    cr_assert_eq(a->layer_first, 0);
    cr_assert_eq(a->layer_last, 4);
    cr_assert_str_eq(a->log, "/tmp/a.log");
    cr_assert_str_eq(a->pidfile, "/tmp/a.pid");
    cr_assert_eq(a->accept_new, 1, "the node's own value wins");
    cr_assert_eq(a->line, 2);
    cr_assert_str_eq(b->ssh_user, "");
    cr_assert_str_eq(b->ssh_host, "b");
    cr_assert_eq(b->ssh_port, 0);
    cr_assert_eq(b->layer_first, CLUSTER_UNSET);
    cr_assert_eq(b->accept_new, 0, "[cluster] default, even when it comes last");
    cr_assert_str_eq(b->known_hosts, "/tmp/kh");
    cr_assert_str_eq(b->log, "");
    cluster_free(c);
}

Test(cluster, name_defaults_and_accept_new_unset)
{
    const char *path = write_file("min.conf", NODE_A);
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->name, "cluster");
    cr_assert_eq(c->nodes[0].accept_new, CLUSTER_UNSET);
    cr_assert_eq(c->connect_timeout_s, 0, "no connect_timeout: the driver's default");
    cluster_free(c);
}

Test(cluster, connect_timeout)
{
    const char *path = write_file("t.conf", "[cluster]\nconnect_timeout = 20\n" NODE_A);
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->connect_timeout_s, 20);
    cluster_free(c);
    expect_error("[cluster]\nconnect_timeout = 0\n" NODE_A, ":2:", "`connect_timeout`", "1..600");
    expect_error("[cluster]\nconnect_timeout = 5s\n" NODE_A, ":2:", "`connect_timeout`", "1..600");
    expect_error(NODE_A "connect_timeout = 5\n", ":6:", "`connect_timeout`", "unknown key");
}

/* The alerts' thresholds: [cluster] keys over their defaults. */
Test(cluster, alert_thresholds)
{
    const char *path = write_file(
        "t.conf", "[cluster]\nalert_hold = 3\nalert_ttft_ms = 500\nalert_eval_ratio = 2\n" NODE_A);
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c->alerts.hold, 3);
    cr_expect_eq(c->alerts.ttft_ms, 500);
    cr_expect_eq(c->alerts.eval_ratio, 2);
    cr_expect_eq(c->alerts.eval_floor_ms, 1, "not given: the default");
    cluster_free(c);
    expect_error("[cluster]\nalert_hold = 0\n" NODE_A, ":2:", "`alert_hold`", "1..1000");
    expect_error(NODE_A "alert_hold = 2\n", ":6:", "`alert_hold`", "unknown key");
}

Test(cluster, errors_name_line_and_key)
{
    expect_error(NODE_A "bogus = 1\n", ":6:", "`bogus`", "unknown key");
    expect_error("[cluster]\nname = x\nssh = h\n" NODE_A, ":3:", "[cluster]", "`ssh`");
    expect_error(NODE_A "ssh = again\n", ":6:", "`ssh`", "twice");
    expect_error("[node a]\nssh = h:99999\n", ":2:", "`ssh`", "65535");
    expect_error("[node a]\nssh = @h\n", ":2:", "`ssh`", "user");
    expect_error("[node a]\nssh = fd00::1\n", ":2:", "`ssh`", "brackets");
    expect_error("[node a]\nssh = h\ncontrol = 127.0.0.1:5555\n", ":3:", "`control`",
                 "tcp://host:port");
    expect_error("[node a]\ncontrol = tcp://127.0.0.1\n", ":2:", "`control`", "port");
    expect_error("[node a]\ntelemetry = tcp://*:5556\n", ":2:", "`telemetry`", "connect");
    expect_error(NODE_A "layers = 4:2\n", ":6:", "`layers`", "0 <= A < B");
    expect_error(NODE_A "layers = 0-4\n", ":6:", "`layers`", "A:B");
    expect_error(NODE_A "accept_new = maybe\n", ":6:", "`accept_new`", "yes, no");
    expect_error(NODE_A "log =\n", ":6:", "`log`", "empty");
    expect_error("[node a]\nssh = h\ntelemetry = tcp://h:2\n", ":1:", "no control endpoint",
                 "`host` and `port`");
    expect_error(NODE_A "[node b]\nssh = b\ncontrol = tcp://127.0.0.1:5555\n", ":8:", "`control`",
                 "another node");
    expect_error("name = x\n", ":1:", "`name`", "outside any section");
}

Test(cluster, errors_about_sections)
{
    expect_error(NODE_A NODE_A, ":6:", "[node a]", "line 1");
    expect_error("[nodes]\n", ":1:", "[nodes]", "unknown section");
    expect_error("[node a b]\n", ":1:", "node name", NULL);
    expect_error("[cluster]\n[cluster]\n", ":2:", "[cluster]", "twice");
    expect_error("[cluster]\nname = x\n", "no [node NAME]", NULL, NULL);
    expect_error(NODE_A "this line is not ini\n", ":6:", "key = value", NULL);
    expect_error("[node a]\nssh = h\n  control = tcp://h:1\n", ":3:", "`ssh`", "indent");
}

Test(cluster, long_line_is_refused_with_its_number)
{
    char text[1024];
    snprintf(text, sizeof text, NODE_A "log = /%0400d\n", 0);
    expect_error(text, ":6:", "longer than", NULL);
}

Test(cluster, missing_file)
{
    char err[512];
    struct cluster *c = NULL;
    cr_assert_eq(cluster_load("/nonexistent/x.conf", &c, err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/x.conf") && strstr(err, "cannot open"), "%s", err);
}

/* ---- the second form: what a node is, and what infertop derives ---- */

#define RING2                                                                                      \
    "[cluster]\n"                                                                                  \
    "name = two\n"                                                                                 \
    "base_port = 7000\n"                                                                           \
    "model = synth:1b\n"                                                                           \
    "threads = 2\n"                                                                                \
    "flags = --kv-bits 8\n"                                                                        \
    "[node a]\n"                                                                                   \
    "host = 10.0.0.1\n"                                                                            \
    "ssh = ops@\n"                                                                                 \
    "layers = 0:10\n"                                                                              \
    "mem_limit = 96M\n"                                                                            \
    "[node b]\n"                                                                                   \
    "host = 10.0.0.1\n"                                                                            \
    "layers = 10:16\n"                                                                             \
    "threads = 4\n"                                                                                \
    "flags = --prefill-step 256\n"                                                                 \
    "  --max-ctx 4096\n"                                                                           \
    "[node c]\n"                                                                                   \
    "host = gpu3\n"                                                                                \
    "port = 9000\n"                                                                                \
    "model = /models/my model.bin\n"                                                               \
    "inferd = /opt/inferd\n"                                                                       \
    "log = ~/logs/c.log\n"                                                                         \
    "layers = 16:20\n"                                                                             \
    "start = inferd serve --layers 16:20\n"

Test(cluster, second_form_derives_ports_and_endpoints)
{
    const char *path = write_file("v2.conf", RING2);
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->base_port, 7000);
    const struct cluster_node *a = &c->nodes[0], *b = &c->nodes[1], *n3 = &c->nodes[2];
    /* Two nodes on one host take consecutive triples of base_port. */
    cr_assert_eq(a->port, 7000);
    cr_assert_eq(b->port, 7003);
    cr_assert_eq(n3->port, 9000);
    cr_assert_str_eq(a->control, "tcp://10.0.0.1:7000");
    cr_assert_str_eq(a->telemetry, "tcp://10.0.0.1:7001");
    cr_assert_str_eq(a->listen, "tcp://10.0.0.1:7002");
    cr_assert_str_eq(b->control, "tcp://10.0.0.1:7003");
    cr_assert_str_eq(n3->listen, "tcp://gpu3:9002");
    /* `ops@`: that user on the node's host; no ssh key: no SSH target. */
    cr_assert_str_eq(a->ssh_user, "ops");
    cr_assert_str_eq(a->ssh_host, "10.0.0.1");
    cr_assert_str_eq(b->ssh_host, "");
    /* [cluster] defaults, the node's own values, flags joined. */
    cr_assert_str_eq(a->model, "synth:1b");
    cr_assert_str_eq(n3->model, "/models/my model.bin");
    cr_assert_str_eq(a->inferd, "inferd");
    cr_assert_eq(a->threads, 2);
    cr_assert_eq(b->threads, 4);
    cr_assert_eq(a->mem_limit, 96ull << 20);
    cr_assert_eq(b->mem_limit, 0);
    cr_assert_str_eq(b->flags, "--kv-bits 8 --prefill-step 256 --max-ctx 4096");
    cr_assert_eq(n3->start_given, 1);
    cr_assert_str_eq(n3->start, "inferd serve --layers 16:20");
    cluster_free(c);
}

Test(cluster, second_form_derives_the_ring_command_lines)
{
    const char *path = write_file("v2.conf", RING2);
    char err[512], cmd[CLUSTER_START_MAX];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->nodes[0].start_given, 0);
    cr_assert_str_eq(c->nodes[0].start,
                     "inferd serve --name a --model synth:1b --layers 0:10"
                     " --control tcp://10.0.0.1:7000 --telemetry tcp://10.0.0.1:7001"
                     " --listen tcp://10.0.0.1:7002 --next tcp://10.0.0.1:7005 --threads 2"
                     " --mem-limit 100663296 --log ~/.infertop/a.log --kv-bits 8");
    cr_assert_eq(cluster_node_command(c, 1, CLUSTER_COMMAND_LINE, cmd, sizeof cmd, err, sizeof err),
                 0, "%s", err);
    cr_assert_str_eq(cmd, c->nodes[1].start);
    cr_assert(strstr(cmd, " --next tcp://gpu3:9002 "), "%s", cmd);
    cr_assert(strstr(cmd, " --prefill-step 256 --max-ctx 4096"), "%s", cmd);
    cluster_free(c);

    /* A name binds every interface, quoted; the tail closes the ring. */
    char text[2048];
    snprintf(text, sizeof text, "%s", RING2);
    *strstr(text, "start = ") = '\0';
    path = write_file("v2b.conf", text);
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->nodes[2].start,
                     "/opt/inferd serve --name c --model '/models/my model.bin' --layers 16:20"
                     " --control 'tcp://*:9000' --telemetry 'tcp://*:9001'"
                     " --listen 'tcp://*:9002' --next tcp://10.0.0.1:7002 --threads 2"
                     " --log ~/logs/c.log --kv-bits 8",
                     "%s", c->nodes[2].start);
    cluster_free(c);
}

Test(cluster, second_form_derives_the_units_flag_files)
{
    const char *path = write_file("v2u.conf", RING2);
    char err[512], flags[CLUSTER_START_MAX];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(
        cluster_node_command(c, 0, CLUSTER_COMMAND_UNIT, flags, sizeof flags, err, sizeof err), 0,
        "%s", err);
    /* What the unit adds itself (serve, --name, --log) is not there. */
    cr_assert_str_eq(flags, "# /etc/inferd/a.conf: the flags of inferd@a.service\n"
                            "--model synth:1b\n"
                            "--layers 0:10\n"
                            "--control tcp://10.0.0.1:7000\n"
                            "--telemetry tcp://10.0.0.1:7001\n"
                            "--listen tcp://10.0.0.1:7002\n"
                            "--next tcp://10.0.0.1:7005\n"
                            "--threads 2\n"
                            "--mem-limit 100663296\n"
                            "--kv-bits 8\n");
    /* A `start` line is a shell command: no flags to take from it. */
    cr_assert_eq(
        cluster_node_command(c, 2, CLUSTER_COMMAND_UNIT, flags, sizeof flags, err, sizeof err), -1);
    cr_assert(strstr(err, "[node c]: its `start` line is a shell command"), "%s", err);
    cluster_free(c);

    /* A flag file has no quoting: a path with a space is refused by name. */
    char text[2048];
    snprintf(text, sizeof text, "%s", RING2);
    *strstr(text, "start = ") = '\0';
    path = write_file("v2ub.conf", text);
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(
        cluster_node_command(c, 2, CLUSTER_COMMAND_UNIT, flags, sizeof flags, err, sizeof err), -1);
    cr_assert(strstr(err, "[node c]: '/models/my model.bin' cannot go in a unit's flag file"), "%s",
              err);
    cluster_free(c);
}

Test(cluster, second_form_command_says_what_is_missing)
{
    char err[512], cmd[CLUSTER_START_MAX];
    struct cluster *c;
    const char *path =
        write_file("m.conf", "[cluster]\nbase_port = 7000\n"
                             "[node a]\nhost = h1\n"
                             "[node b]\ncontrol = tcp://h2:1\ntelemetry = tcp://h2:2\n"
                             "layers = 1:2\n");
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->nodes[0].start, "", "nothing to derive from");
    cr_assert_eq(cluster_node_command(c, 0, CLUSTER_COMMAND_LINE, cmd, sizeof cmd, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "[node a]: no `layers`"), "%s", err);
    cr_assert_eq(cluster_node_command(c, 1, CLUSTER_COMMAND_LINE, cmd, sizeof cmd, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "[node b]: no command line") && strstr(err, "`host` and `port`"), "%s",
              err);
    cluster_free(c);
    path = write_file("m2.conf", "[node a]\nhost = h1\nport = 100\nlayers = 0:1\n"
                                 "[node b]\ncontrol = tcp://h2:1\ntelemetry = tcp://h2:2\n");
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(cluster_node_command(c, 0, CLUSTER_COMMAND_LINE, cmd, sizeof cmd, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "node b's ring input"), "%s", err);
    cluster_free(c);
    /* One node alone needs no layers and no ring. */
    path = write_file("m3.conf", "[node a]\nhost = 127.0.0.1\nport = 100\n");
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->nodes[0].start, "inferd serve --name a --control tcp://127.0.0.1:100"
                                        " --telemetry tcp://127.0.0.1:101 --log ~/.infertop/a.log");
    cluster_free(c);
}

Test(cluster, second_form_errors)
{
    expect_error("[node a]\nhost = h\n", ":1:", "no control endpoint", "base_port");
    expect_error("[node a]\nhost = h\nport = 65534\n", ":3:", "`port`", "65533");
    expect_error("[cluster]\nport = 1\n", ":2:", "[cluster]", "`port`");
    expect_error("[node a]\nhost = h:22\n", ":2:", "`host`", "without a port");
    expect_error("[node a]\nhost = h\nport = 1\nmem_limit = 12X\n", ":4:", "`mem_limit`",
                 "K/M/G/T");
    expect_error("[node a]\nhost = h\nport = 1\nthreads = 0\n", ":4:", "`threads`",
                 "integer in 1..");
    expect_error("[node a]\nssh = ops@\ncontrol = tcp://h:1\ntelemetry = tcp://h:2\n",
                 ":1:", "`ssh`", "takes the host from `host`");
    expect_error("[node a]\nhost = h\nport = 100\n[node b]\nhost = h\nport = 101\n",
                 ":4:", "endpoint tcp://h:101", "node a's");
    expect_error("[node a]\nhost = h\nport = 1\nlog = x\n  y\n", ":5:", "`log`", "`flags`");
}

/* Values are read by the settings table's rows: sizes with suffixes and
 * auto, kv_bits' choices, prefill_step's word; they go on the command line
 * with the rows' flags. */
Test(cluster, values_are_read_by_the_table)
{
    const char *path = write_file("t.conf", "[cluster]\nkv_bits = 8\nmem_limit = 3M\n"
                                            "[node a]\nhost = 127.0.0.1\nport = 100\nlayers = 0:1\n"
                                            "prefill_step = auto\nmem_limit = 2T\n"
                                            "accept_new = YES\n"
                                            "[node b]\nhost = 127.0.0.1\nport = 200\nlayers = 1:2\n"
                                            "kv_bits = 4\n");
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->nodes[0].mem_limit, 2ull << 40);
    cr_assert_eq(c->nodes[1].mem_limit, 3ull << 20, "[cluster]'s");
    cr_assert_eq(c->nodes[0].accept_new, 1, "choices in any case");
    cr_assert(strstr(c->nodes[0].start, " --mem-limit 2199023255552 --kv-bits 8 --prefill-step "
                                        "auto --log "),
              "%s", c->nodes[0].start);
    cr_assert(strstr(c->nodes[1].start, " --kv-bits 4 --log "), "%s", c->nodes[1].start);
    cr_assert_null(strstr(c->nodes[1].start, "--prefill-step"), "%s", c->nodes[1].start);
    cluster_free(c);
    expect_error(NODE_A "kv_bits = 7\n", ":6:", "`kv_bits`", "32, 16, 8 or 4");
    expect_error(NODE_A "prefill_step = 99999\n", ":6:", "`prefill_step`", "or auto");
    expect_error(NODE_A "mem_limit = 1GB\n", ":6:", "`mem_limit`", "or auto");
    expect_error(NODE_A "mem_limit = 99999999999T\n", ":6:", "`mem_limit`", NULL);
}

/* A node that has what a command line needs but whose line cannot be
 * written is an error of the file, at the node's header. */
Test(cluster, underivable_command_line_fails_the_load)
{
    char text[8192], model[150];
    memset(model, 'm', sizeof model - 1);
    model[sizeof model - 1] = '\0';
    int n = snprintf(text, sizeof text,
                     "[node a]\nhost = 127.0.0.1\nport = 100\nmodel = /%s\n"
                     "[cluster]\nflags = --max-ctx 1",
                     model);
    for (int i = 0; i < 36; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "\n  --max-ctx %0100d", i);
    snprintf(text + n, sizeof text - (size_t)n, "\n");
    expect_error(text, ":1:", "[node a]", "longer than");
}

/* The shell words cluster.c writes, read back as plan_file.c reads them. */
Test(cluster, shell_words_round_trip)
{
    static const char *const words[] = {"plain", "my model.bin", "it's", "~/logs/a b",
                                        "",      "tcp://*:9000"};
    char line[512] = "", word[128];
    size_t at = 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        at += shellword_quote(words[i], line + at, sizeof line - at);
        line[at++] = ' ';
        line[at] = '\0';
    }
    cr_assert_str_eq(line, "plain 'my model.bin' 'it'\\''s' ~/'logs/a b' '' 'tcp://*:9000' ");
    const char *p = line, *start;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        cr_assert_eq(shellword_next(&p, word, sizeof word, &start), 1);
        /* The shell expands ~/ outside the quotes; the word keeps it. */
        cr_assert_str_eq(word, words[i]);
    }
    cr_assert_eq(shellword_next(&p, word, sizeof word, &start), 0);
    p = "a \"b \\\"c\" 'open";
    cr_assert_eq(shellword_next(&p, word, sizeof word, &start), 1);
    cr_assert_eq(shellword_next(&p, word, sizeof word, &start), 1);
    cr_assert_str_eq(word, "b \"c");
    cr_assert_eq(shellword_next(&p, word, sizeof word, &start), -1, "unclosed quote");
    p = "toolong";
    cr_assert_eq(shellword_next(&p, word, 4, &start), -1);
}

/* ---- search order ---- */

Test(cluster, locate_prefers_given_then_cwd_then_xdg)
{
    char path[512], err[512], xdg[256], home[256];
    snprintf(xdg, sizeof xdg, "%s/xdg", dir);
    snprintf(home, sizeof home, "%s/home", dir);
    cr_assert_eq(chdir(dir), 0);
    setenv("XDG_CONFIG_HOME", xdg, 1);
    setenv("HOME", home, 1);

    cr_assert_eq(cluster_locate(NULL, path, sizeof path, err, sizeof err), -1);
    cr_assert(strstr(err, "-c FILE") && strstr(err, "xdg/infertop/cluster.conf"), "%s", err);

    write_file("xdg/infertop/cluster.conf", NODE_A);
    cr_assert_eq(cluster_locate(NULL, path, sizeof path, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(path, "/xdg/infertop/cluster.conf"), "%s", path);

    write_file("infertop.conf", NODE_A);
    cr_assert_eq(cluster_locate(NULL, path, sizeof path, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(path, "./infertop.conf");

    cr_assert_eq(cluster_locate("/etc/given.conf", path, sizeof path, err, sizeof err), 0);
    cr_assert_str_eq(path, "/etc/given.conf");
}

Test(cluster, locate_falls_back_to_dot_config)
{
    char path[512], err[512], home[256];
    snprintf(home, sizeof home, "%s/home", dir);
    cr_assert_eq(chdir(dir), 0);
    setenv("XDG_CONFIG_HOME", "relative/ignored", 1);
    setenv("HOME", home, 1);
    write_file("home/.config/infertop/cluster.conf", NODE_A);
    cr_assert_eq(cluster_locate(NULL, path, sizeof path, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(path, "/home/.config/infertop/cluster.conf"), "%s", path);
}

/* ---- nodes of other engines ---- */

#define MIXED                                                                                      \
    "[cluster]\n"                                                                                  \
    "base_port = 7000\n"                                                                           \
    "model = synth:1b\n"                                                                           \
    "threads = 2\n"                                                                                \
    "[node a]\n"                                                                                   \
    "host = 10.0.0.1\n"                                                                            \
    "layers = 0:8\n"                                                                               \
    "[node llama]\n"                                                                               \
    "engine = llama.cpp\n"                                                                         \
    "url = http://10.0.0.9:8080\n"                                                                 \
    "ssh = ops@\n"                                                                                 \
    "start = llama-server -m /m.gguf --metrics --slots\n"                                          \
    "[node vllm]\n"                                                                                \
    "engine = vllm\n"                                                                              \
    "url = https://gpu.example/vllm\n"                                                             \
    "api_key_file = ~/.vllm-key\n"                                                                 \
    "[node b]\n"                                                                                   \
    "host = 10.0.0.2\n"                                                                            \
    "layers = 8:16\n"

Test(cluster, a_mixed_file_loads_and_the_ring_skips_http_nodes)
{
    const char *path = write_file("mixed.conf", MIXED);
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->n_nodes, 4);
    cr_assert_eq(cluster_ring_size(c), 2);
    const struct cluster_node *a = &c->nodes[0], *l = &c->nodes[1], *v = &c->nodes[2],
                              *b = &c->nodes[3];
    cr_assert_eq(a->engine, ENG_INFERD);
    cr_assert_eq(l->engine, ENG_LLAMACPP);
    cr_assert_eq(v->engine, ENG_VLLM);
    cr_assert(cluster_node_is_inferd(c, 3));
    cr_assert_not(cluster_node_is_inferd(c, 1));
    cr_assert_str_eq(l->url, "http://10.0.0.9:8080");
    cr_assert_str_eq(l->control, "", "an HTTP node has no control endpoint");
    cr_assert_str_eq(l->telemetry, "");
    cr_assert_str_eq(l->ssh_host, "10.0.0.9", "`ops@` takes the host from the url");
    cr_assert_str_eq(v->api_key_file, "~/.vllm-key");
    cr_assert_str_eq(b->control, "tcp://10.0.0.2:7000");
    /* a's next is b, and b closes the ring on a: the HTTP nodes are skipped. */
    cr_assert(strstr(a->start, " --next tcp://10.0.0.2:7002"), "%s", a->start);
    cr_assert(strstr(b->start, " --next tcp://10.0.0.1:7002"), "%s", b->start);
    char cmd[CLUSTER_START_MAX];
    cr_assert_eq(cluster_node_command(c, 2, CLUSTER_COMMAND_LINE, cmd, sizeof cmd, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "engine = vllm"), "%s", err);
    cluster_free(c);
}

Test(cluster, http_nodes_refuse_what_they_cannot_mean)
{
    expect_error("[node v]\nengine = vllm\n", "[node v]", "engine = vllm needs `url`", NULL);
    expect_error("[node l]\nengine = llama.cpp\nurl = http://h:8080\nlayers = 0:4\n", "[node l]",
                 "`layers`", "only an inferd node takes it");
    expect_error("[node o]\nengine = openai\nurl = ftp://h:21\n", "`url`", "http://host:port",
                 NULL);
    expect_error("[node o]\nengine = openai\nurl = http://h:8080/\n", "`url`", "trailing '/'",
                 NULL);
    expect_error("[node o]\nengine = openai\nurl = http://h:8080/v1?x=1\n", "`url`", "query", NULL);
    expect_error("[node o]\nengine = tgi\nurl = http://h:8080\n", "`engine`", "llama.cpp", NULL);
}

/* A node port in the kernel's ephemeral range could be taken by any
 * outgoing connection, or by the console connecting to itself. */
Test(cluster, ephemeral_ports_are_refused_with_the_range)
{
    int lo, hi;
    ports_ephemeral(&lo, &hi);
    char range[64], text[512];
    snprintf(range, sizeof range, "%d..%d", lo, hi);
    snprintf(text, sizeof text, "[node a]\nhost = 127.0.0.1\nport = %d\n", lo);
    expect_error(text, ":1:", "ephemeral range", range);
    /* The ring input, two above the port, counts too. */
    snprintf(text, sizeof text, "[node a]\nhost = 127.0.0.1\nport = %d\n", lo - 2);
    expect_error(text, "[node a]", "ephemeral range", range);
    snprintf(text, sizeof text, "[cluster]\nbase_port = %d\n[node a]\nhost = h\n", hi);
    expect_error(text, "[node a]", "ephemeral range", range);
    snprintf(text, sizeof text,
             "[node a]\ncontrol = tcp://127.0.0.1:%d\ntelemetry = tcp://127.0.0.1:5556\n", hi);
    expect_error(text, ":2:", "`control`", range);
}

Test(cluster, unterminated_section_is_reported_at_its_line)
{
    expect_error("[cluster\nname = x\n", ":1:", "[cluster", "no closing ']'");
    expect_error(NODE_A "[node b\n", ":6:", "no closing ']'", NULL);
}

Test(cluster, local_nodes)
{
    const char *path = write_file("local.conf", "[node a]\nhost = 127.0.0.1\nport = 5555\n"
                                                "[node b]\nhost = ::1\nport = 5555\n"
                                                "[node c]\nhost = gpu1\nport = 5555\nlocal = YES\n"
                                                "[node d]\nhost = 127.0.0.2\nport = 5560\n"
                                                "local = no\n"
                                                "[node e]\nhost = gpu2\nport = 5555\n"
                                                "[node f]\nhost = 127.0.0.1\nport = 5570\n"
                                                "ssh = ops@\n");
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    /* f: an `ssh` key says how to reach it, loopback or not. */
    const int want[] = {1, 1, 1, 0, 0, 0};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(c->nodes[i].local, want[i], "node %s", c->nodes[i].name);
    cluster_free(c);
    expect_error("[node a]\nhost = h\nport = 5555\nlocal = maybe\n", ":4:", "`local`", NULL);
}
