/* test_cli_status.c: `infertop status` and `infertop set` without a
 * running node: argument checks, and a cluster whose node is not there. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "tui/cli/cli.h"

Test(cli_set, parses_each_setting)
{
    proto_set_args a = {0};
    char err[256];
    cr_assert_eq(cli_set_parse("kv_bits=4", &a, err, sizeof err), 0);
    cr_assert(a.has_kv_bits && a.kv_bits == 4);
    cr_assert_eq(cli_set_parse("prefill_step=auto", &a, err, sizeof err), 0);
    cr_assert(a.has_prefill_step && a.prefill_step == PROTO_PREFILL_AUTO);

    proto_set_args b = {0};
    cr_assert_eq(cli_set_parse("prefill_step=65536", &b, err, sizeof err), 0);
    cr_assert_eq(b.prefill_step, 65536);
    cr_assert_not(b.has_kv_bits);
}

Test(cli_set, refuses_bad_settings_naming_them)
{
    static const struct {
        const char *arg, *says;
    } bad[] = {
        {"kv_bits=5", "kv_bits \"5\""},
        {"kv_bits=", "kv_bits"},
        {"kv_bits=16x", "kv_bits"},
        {"prefill_step=0", "prefill_step \"0\""},
        {"prefill_step=65537", "65537"},
        {"prefill_step=Auto", "Auto"},
        {"threads=2", "unknown setting \"threads\""},
        {"kv_bits", "expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        proto_set_args a = {0};
        char err[256] = "";
        cr_assert_eq(cli_set_parse(bad[i].arg, &a, err, sizeof err), -1, "%s", bad[i].arg);
        cr_assert(strstr(err, bad[i].says), "%s: %s", bad[i].arg, err);
        cr_assert_not(a.has_kv_bits || a.has_prefill_step, "%s changed the args", bad[i].arg);
    }
}

Test(cli_set, refuses_a_setting_given_twice)
{
    proto_set_args a = {0};
    char err[256];
    cr_assert_eq(cli_set_parse("kv_bits=8", &a, err, sizeof err), 0);
    cr_assert_eq(cli_set_parse("kv_bits=4", &a, err, sizeof err), -1);
    cr_assert(strstr(err, "twice"));
    cr_assert_eq(a.kv_bits, 8);
}

Test(cli_set, bad_command_lines_exit_2, .init = cr_redirect_stderr)
{
    cr_assert_eq(cli_test_run(cli_set, (const char *[]){"set", NULL}), CLI_USAGE);
    cr_assert_eq(cli_test_run(cli_set, (const char *[]){"set", "all", NULL}), CLI_USAGE);
    cr_assert_eq(cli_test_run(cli_set, (const char *[]){"set", "all", "kv_bits=3", NULL}),
                 CLI_USAGE);
    cr_assert_eq(
        cli_test_run(cli_set, (const char *[]){"set", "--timeout", "0", "all", "kv_bits=4", NULL}),
        CLI_USAGE);
    cr_assert_eq(
        cli_test_run(cli_set, (const char *[]){"set", "--bogus", "all", "kv_bits=4", NULL}),
        CLI_USAGE);
    cr_assert_eq(cli_test_run(cli_status, (const char *[]){"status", "extra", NULL}), CLI_USAGE);
}

/* A cluster file whose one node listens nowhere (a port just freed). */
static char conf[64];

static void write_conf(const char *text)
{
    strcpy(conf, "/tmp/infertop-cli-status-XXXXXX");
    int fd = mkstemp(conf);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    cr_redirect_stdout();
    cr_redirect_stderr();
}

static void write_cluster(void)
{
    write_conf("[node lone]\nssh = localhost\ncontrol = tcp://127.0.0.1:9\n"
               "telemetry = tcp://127.0.0.1:10\nstart = inferd serve\n");
}

/* An openai node (any OpenAI-compatible server) that listens nowhere. */
static void write_http_cluster(void)
{
    write_conf("[node web]\nengine = openai\nurl = http://127.0.0.1:9\n");
}

static void write_conf_with_key(void)
{
    write_conf("[node web]\nengine = vllm\nurl = http://127.0.0.1:9\n"
               "api_key_file = /nonexistent/key\n");
}

static void remove_cluster(void)
{
    unlink(conf);
}

/* The one node of what status --json printed (the caller decrefs the
 * returned root). */
static json_t *status_node(json_t **root)
{
    fflush(stdout);
    json_error_t e;
    *root = json_loadf(cr_get_redirected_stdout(), 0, &e);
    cr_assert_not_null(*root, "not JSON: %s", e.text);
    cr_assert_str_eq(json_string_value(json_object_get(*root, "cluster")), "cluster");
    json_t *nodes = json_object_get(*root, "nodes");
    cr_assert_eq(json_array_size(nodes), 1);
    return json_array_get(nodes, 0);
}

/* Every node has the shared fields (issue 24), null when not known. */
static void assert_shared_fields_null(const json_t *node)
{
    static const char *const keys[] = {"prompt_tps",       "decode_tps", "requests_running",
                                       "requests_waiting", "kv_usage",   "slots_busy",
                                       "slots_total",      "model"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        cr_assert(json_is_null(json_object_get(node, keys[k])), "%s is not null", keys[k]);
}

Test(cli_status, a_node_that_does_not_answer_is_down, .init = write_cluster, .fini = remove_cluster)
{
    cr_assert_eq(cli_test_run(cli_status, (const char *[]){"status", "-c", conf, "--json",
                                                           "--timeout", "0.2", NULL}),
                 CLI_ERROR);
    json_t *root, *n = status_node(&root);
    cr_assert_str_eq(json_string_value(json_object_get(n, "name")), "lone");
    cr_assert_str_eq(json_string_value(json_object_get(n, "engine")), "inferd");
    cr_assert_str_eq(json_string_value(json_object_get(n, "state")), "down");
    json_t *err = json_object_get(n, "error");
    /* Nothing listens on its loopback port: told at once, not at the
     * timeout (links.c's connect probe). */
    cr_assert_str_eq(json_string_value(json_object_get(err, "code")), "unreachable");
    cr_assert(strstr(json_string_value(json_object_get(err, "message")),
                     "tcp://127.0.0.1:9: nothing listens there (connection refused)"));
    assert_shared_fields_null(n);
    json_decref(root);
}

Test(cli_status, an_http_node_that_does_not_answer_is_down, .init = write_http_cluster,
     .fini = remove_cluster)
{
    cr_assert_eq(cli_test_run(cli_status, (const char *[]){"status", "-c", conf, "--json", NULL}),
                 CLI_ERROR);
    json_t *root, *n = status_node(&root);
    cr_assert_str_eq(json_string_value(json_object_get(n, "name")), "web");
    cr_assert_str_eq(json_string_value(json_object_get(n, "engine")), "openai");
    cr_assert_str_eq(json_string_value(json_object_get(n, "state")), "down");
    const char *problem = json_string_value(json_object_get(n, "problem"));
    cr_assert(problem && *problem, "no problem said");
    assert_shared_fields_null(n);
    json_decref(root);
}

Test(cli_status, an_unreadable_api_key_file_is_named, .init = write_conf_with_key,
     .fini = remove_cluster)
{
    cr_assert_eq(cli_test_run(cli_status, (const char *[]){"status", "-c", conf, NULL}), CLI_ERROR);
    fflush(stderr);
    char buf[512] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, cr_get_redirected_stderr());
    buf[n] = '\0';
    cr_assert(strstr(buf, "api_key_file /nonexistent/key"), "%s", buf);
}

/* No such node is exit 3, as the man page's EXIT STATUS says. */
Test(cli_status, set_on_an_unknown_node_exits_3, .init = write_cluster, .fini = remove_cluster)
{
    cr_assert_eq(
        cli_test_run(cli_set, (const char *[]){"set", "-c", conf, "ghost", "kv_bits=4", NULL}),
        CLI_NOT_FOUND);
}

Test(cli_status, set_on_a_silent_node_did_not_apply, .init = write_cluster, .fini = remove_cluster)
{
    cr_assert_eq(cli_test_run(cli_set, (const char *[]){"set", "-c", conf, "--timeout", "0.2",
                                                        "lone", "kv_bits=4", NULL}),
                 CLI_ERROR);
}
