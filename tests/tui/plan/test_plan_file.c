/* test_plan_file.c: the cluster file rewritten with new layer ranges. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tui/plan/plan_file.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/infertop-planfile-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(plan_file, .init = make_dir, .fini = remove_dir);

static char *path_of(const char *name)
{
    static char p[2][256];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static struct cluster *load_text(const char *text, mode_t mode)
{
    const char *path = path_of("c.conf");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
    char err[512];
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    return c;
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#define FILE3                                                                                      \
    "# a ring\n"                                                                                   \
    "[cluster]\n"                                                                                  \
    "base_port = 7000\n"                                                                           \
    "[node a]\n"                                                                                   \
    "host = 10.0.0.1\n"                                                                            \
    "layers = 0:4   ; even\n"                                                                      \
    "[node b]\n"                                                                                   \
    "; no layers yet\n"                                                                            \
    "host = 10.0.0.2\n"                                                                            \
    "[node c]\n"                                                                                   \
    "control = tcp://10.0.0.3:5555\n"                                                              \
    "telemetry = tcp://10.0.0.3:5556\n"                                                            \
    "layers: 8:12\n"                                                                               \
    "start = inferd serve --name c\n"                                                              \
    "    --layers 8:12 --listen tcp://10.0.0.3:5557\n"                                             \
    "    --next tcp://10.0.0.1:7002\n"

Test(plan_file, rewrites_ranges_and_keeps_the_rest)
{
    struct cluster *c = load_text(FILE3, 0640), *n = NULL;
    char err[512];
    const char *dst = path_of("new.conf");
    cr_assert_eq(plan_file_write(c, (int[]){0, 2, 7}, (int[]){2, 7, 12}, dst, &n, err, sizeof err),
                 0, "%s", err);
    cr_assert_str_eq(slurp(dst), "# a ring\n"
                                 "[cluster]\n"
                                 "base_port = 7000\n"
                                 "[node a]\n"
                                 "host = 10.0.0.1\n"
                                 "layers = 0:2\n"
                                 "[node b]\n"
                                 "layers = 2:7\n"
                                 "; no layers yet\n"
                                 "host = 10.0.0.2\n"
                                 "[node c]\n"
                                 "control = tcp://10.0.0.3:5555\n"
                                 "telemetry = tcp://10.0.0.3:5556\n"
                                 "layers = 7:12\n"
                                 "start = inferd serve --name c\n"
                                 "    --layers 7:12 --listen tcp://10.0.0.3:5557\n"
                                 "    --next tcp://10.0.0.1:7002\n");
    cr_assert_not_null(n);
    cr_assert_str_eq(n->path, dst);
    cr_assert_eq(n->nodes[1].layer_first, 2);
    cr_assert(strstr(n->nodes[0].start, "--layers 0:2 "), "%s", n->nodes[0].start);
    struct stat st;
    cr_assert_eq(stat(dst, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0640, "the old file's permissions");
    cluster_free(n);
    cluster_free(c);
}

Test(plan_file, start_line_without_layers_leaves_the_file_untouched)
{
    struct cluster *c = load_text("[node a]\ncontrol = tcp://h:1\ntelemetry = tcp://h:2\n"
                                  "start = inferd serve\n"
                                  "[node b]\ncontrol = tcp://h:3\ntelemetry = tcp://h:4\n"
                                  "start = inferd serve --layers=1:2\n",
                                  0600);
    char err[512];
    const char *before = strdup(slurp(c->path));
    cr_assert_eq(plan_file_write(c, (int[]){0, 1}, (int[]){1, 2}, c->path, NULL, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "node a") && strstr(err, "--layers 0:1"), "%s", err);
    cr_assert_str_eq(slurp(c->path), before);
    free((void *)before);
    /* Nothing left beside it either. */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 1", dir);
    cr_assert_eq(system(cmd), 0);
    cluster_free(c);
}

Test(plan_file, layers_equals_form_in_start)
{
    struct cluster *c = load_text("[node a]\ncontrol = tcp://h:1\ntelemetry = tcp://h:2\n"
                                  "start = inferd serve --layers=0:1\n"
                                  "[node b]\ncontrol = tcp://h:3\ntelemetry = tcp://h:4\n"
                                  "start = inferd serve --layers=1:3\n",
                                  0600);
    char err[512];
    cr_assert_eq(plan_file_write(c, (int[]){0, 2}, (int[]){2, 3}, c->path, NULL, err, sizeof err),
                 0, "%s", err);
    cr_assert(strstr(slurp(c->path), "start = inferd serve --layers=2:3\n"), "%s", slurp(c->path));
    cluster_free(c);
}

/* The start line is read as a shell reads it: a --layers inside a quoted
 * word is not the flag, a quoted value is, and --layersX is another flag. */
Test(plan_file, start_line_is_read_with_shell_quoting)
{
    struct cluster *c = load_text("[node a]\ncontrol = tcp://h:1\ntelemetry = tcp://h:2\n"
                                  "start = '/opt/my inferd' serve --model 'x --layers 5:6'\n"
                                  "  --layersX 1 --layers '0:1' --log \"a b\"\n"
                                  "[node b]\ncontrol = tcp://h:3\ntelemetry = tcp://h:4\n"
                                  "start = inferd serve --layers 1:3\n",
                                  0600);
    char err[512];
    cr_assert_eq(plan_file_write(c, (int[]){0, 2}, (int[]){2, 3}, c->path, NULL, err, sizeof err),
                 0, "%s", err);
    const char *text = slurp(c->path);
    cr_assert(strstr(text, "start = '/opt/my inferd' serve --model 'x --layers 5:6'\n"
                           "  --layersX 1 --layers 0:2 --log \"a b\"\n"),
              "%s", text);
    cr_assert(strstr(text, "start = inferd serve --layers 2:3\n"), "%s", text);
    cluster_free(c);
}
