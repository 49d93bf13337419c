/* test_desired.c: the state file of desired settings and drift. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tui/core/desired.h"

static char dir[64];
static char path[128];

static void make_dir(void)
{
    strcpy(dir, "/tmp/infertop-desired-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/ring.conf.state", dir);
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(desired, .init = make_dir, .fini = remove_dir);

static void write_text(const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *read_text(void)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

Test(desired, path_is_beside_the_cluster_file)
{
    char out[64];
    cr_assert_eq(desired_path("/etc/infertop/ring.conf", out, sizeof out), 0);
    cr_assert_str_eq(out, "/etc/infertop/ring.conf.state");
    cr_assert_eq(desired_path("/a/very/long/cluster/file/name.conf", out, 16), -1);
}

Test(desired, a_missing_file_is_empty)
{
    struct desired d;
    char err[256] = "";
    cr_assert_eq(desired_load(path, &d, err, sizeof err), 0, "%s", err);
    cr_assert_eq(d.n, 0);
    cr_assert_null(desired_get(&d, "a"));
    desired_free(&d);
}

Test(desired, record_save_load_round_trip)
{
    struct desired d;
    char err[256] = "";
    cr_assert_eq(desired_load(path, &d, err, sizeof err), 0);
    proto_set_args kv = {.has_kv_bits = 1, .kv_bits = 8};
    proto_set_args auto_step = {.has_prefill_step = 1, .prefill_step = PROTO_PREFILL_AUTO};
    proto_set_args step = {.has_prefill_step = 1, .prefill_step = 256};
    cr_assert_eq(desired_record(&d, "a", &kv), 0);
    cr_assert_eq(desired_record(&d, "a", &auto_step), 0); /* adds, keeps kv_bits */
    cr_assert_eq(desired_record(&d, "b", &step), 0);
    cr_assert_eq(desired_save(&d, err, sizeof err), 0, "%s", err);
    desired_free(&d);
    cr_assert_not_null(strstr(read_text(), "[node a]\nkv_bits = 8\nprefill_step = auto\n"));

    cr_assert_eq(desired_load(path, &d, err, sizeof err), 0, "%s", err);
    cr_assert_eq(d.n, 2);
    const proto_set_args *a = desired_get(&d, "a"), *b = desired_get(&d, "b");
    cr_assert(a && a->has_kv_bits && a->kv_bits == 8);
    cr_assert(a->has_prefill_step && a->prefill_step == PROTO_PREFILL_AUTO);
    cr_assert(b && !b->has_kv_bits && b->has_prefill_step && b->prefill_step == 256);
    struct desired copy;
    cr_assert_eq(desired_copy(&copy, &d), 0);
    cr_assert_eq(copy.n, 2);
    cr_assert_neq(copy.nodes, d.nodes);
    cr_assert_str_eq(copy.path, d.path);
    cr_assert_eq(desired_get(&copy, "b")->prefill_step, 256);
    desired_free(&copy);
    /* No temporary file is left behind. */
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    cr_assert_neq(access(tmp, F_OK), 0);
    desired_free(&d);
}

/* Each bad file: the error names the file and the line, and nothing is kept. */
static void refused(const char *text, int line, const char *why)
{
    struct desired d;
    char err[512] = "", want[256];
    write_text(text);
    cr_assert_eq(desired_load(path, &d, err, sizeof err), -1, "%s", text);
    snprintf(want, sizeof want, "%s:%d: ", path, line);
    cr_assert_not_null(strstr(err, want), "%s", err);
    cr_assert_not_null(strstr(err, why), "%s", err);
    cr_assert_eq(d.n, 0);
    cr_assert_null(d.nodes);
}

Test(desired, bad_files_name_file_and_line)
{
    refused("[node a]\nkv_bits = 8\ngarbage\n", 3, "not a line of an INI file");
    refused("[node a]\nkv_bits = 7\n", 2, "kv_bits \"7\"");
    refused("[node a]\nkv_bits = 8\nkv_bits = 4\n", 3, "kv_bits is given twice");
    refused("[node a]\nthreads = 4\n", 2, "unknown key `threads`");
    refused("; comment\n[cluster]\nkv_bits = 8\n", 3, "expected a [node NAME] section");
    refused("[node a]\nprefill_step = 0\n", 2, "prefill_step \"0\"");
}

Test(desired, a_file_that_cannot_be_written_is_an_error)
{
    struct desired d = {0};
    char err[512] = "";
    snprintf(d.path, sizeof d.path, "%s/no/such/dir/x.state", dir);
    proto_set_args kv = {.has_kv_bits = 1, .kv_bits = 8};
    cr_assert_eq(desired_record(&d, "a", &kv), 0);
    cr_assert_eq(desired_save(&d, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "no/such/dir"), "%s", err);
    desired_free(&d);
}

Test(desired, drift_lists_what_the_node_lacks)
{
    proto_set_args want = {
        .has_kv_bits = 1, .kv_bits = 8, .has_prefill_step = 1, .prefill_step = PROTO_PREFILL_AUTO};
    proto_set_args drift;
    cr_assert_eq(desired_drift(&want, 8, PROTO_PREFILL_AUTO, &drift), 0);
    cr_assert_eq(desired_drift(&want, 16, PROTO_PREFILL_AUTO, &drift), 1);
    cr_assert(drift.has_kv_bits && drift.kv_bits == 8 && !drift.has_prefill_step);
    cr_assert_eq(desired_drift(&want, 8, 512, &drift), 1);
    cr_assert(!drift.has_kv_bits && drift.has_prefill_step &&
              drift.prefill_step == PROTO_PREFILL_AUTO);
    /* Not known yet: no drift claimed. */
    cr_assert_eq(desired_drift(&want, 0, -1, &drift), 0);
    /* Nothing desired: none. */
    cr_assert_eq(desired_drift(NULL, 4, 64, &drift), 0);
    /* A setting not desired is no drift. */
    proto_set_args only_kv = {.has_kv_bits = 1, .kv_bits = 4};
    cr_assert_eq(desired_drift(&only_kv, 4, 64, &drift), 0);
    char buf[64];
    desired_describe(&want, buf, sizeof buf);
    cr_assert_str_eq(buf, "prefill_step=auto kv_bits=8");
}
