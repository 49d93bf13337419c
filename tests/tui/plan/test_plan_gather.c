/* test_plan_gather.c: where a plan's inputs come from: each node's budget
 * (status, else facts capped by mem_limit, else mem_limit), its runtime
 * memory and range, the model and kv_bits. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/plan/plan_gather.h"

#define MiB ((uint64_t)1 << 20)

static struct cluster *load(const char *text)
{
    char path[] = "/tmp/plan-gather-XXXXXX", err[512];
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    struct cluster *c;
    cr_assert_eq(cluster_load(path, &c, err, sizeof err), 0, "%s", err);
    unlink(path);
    return c;
}

#define THREE                                                                                      \
    "[cluster]\nbase_port = 7000\nmodel = synth:dim=64,hidden=64,layers=6,heads=4,kv_heads=4,"     \
    "vocab=64\n"                                                                                   \
    "[node a]\nhost = h1\nlayers = 0:2\nmem_limit = 1G\nthreads = 3\n"                             \
    "[node b]\nhost = h2\nssh = ops@\nlayers = 2:4\nmem_limit = 2G\n"                              \
    "[node c]\nhost = h3\nlayers = 4:6\nmem_limit = 3G\n"

Test(plan_gather, budgets_status_then_facts_then_mem_limit)
{
    struct cluster *c = load(THREE);
    plan_seen seen[3] = {0};
    seen[0].up = 1;
    seen[0].status.memory.budget = 512 * MiB;
    seen[0].status.memory.rss = 100 * MiB;
    seen[0].status.memory.weights_bytes = 30 * MiB;
    seen[0].status.memory.kv_bytes = 20 * MiB;
    seen[0].status.config.prefill_step = 256;
    seen[0].status.config.threads = 2;
    seen[0].status.model.layer_first = 0;
    seen[0].status.model.layer_last = 3;
    seen[1].has_facts = 1;
    seen[1].facts.mem_available_kb = 4 * 1024 * 1024; /* 4 GiB, above b's mem_limit */
    seen[1].facts.cores = 8;
    plan_input in;
    enum plan_from from[3];
    char err[256];
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), 0, "%s", err);
    cr_assert_eq(in.n_nodes, 3);
    cr_assert_eq(from[0], PLAN_FROM_STATUS);
    cr_assert_eq(in.nodes[0].budget, 512 * MiB, "the node's own budget, not mem_limit");
    cr_assert_eq(in.nodes[0].runtime, 50 * MiB, "RSS - weights - KV");
    cr_assert_eq(in.nodes[0].prefill_step, 256);
    cr_assert_eq(in.nodes[0].threads, 2);
    cr_assert_eq(in.nodes[0].cur_last, 3, "the running range, not the file's");
    cr_assert_eq(from[1], PLAN_FROM_FACTS);
    cr_assert_eq(in.nodes[1].budget, 2048 * MiB, "MemAvailable capped by mem_limit");
    cr_assert_eq(in.nodes[1].threads, 8, "no threads in the file: the cores");
    cr_assert_eq(in.nodes[1].runtime, PLAN_RUNTIME_DEFAULT);
    cr_assert_eq(in.nodes[1].prefill_step, PLAN_PREFILL_DEFAULT);
    cr_assert_eq(from[2], PLAN_FROM_FILE);
    cr_assert_eq(in.nodes[2].budget, 3072 * MiB);
    cr_assert_eq(in.nodes[2].cur_first, 4, "the file's range");
    cr_assert_str_eq(plan_from_name(from[1]), "facts");

    seen[1].facts.mem_available_kb = 1024 * 1024; /* 1 GiB, under it */
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), 0, "%s", err);
    cr_assert_eq(in.nodes[1].budget, 1024 * MiB);
    cluster_free(c);
}

Test(plan_gather, unknown_budget_is_an_error_naming_the_node)
{
    struct cluster *c = load("[node a]\nhost = h1\nport = 7000\nmem_limit = 1G\n"
                             "[node b]\nhost = h2\nport = 7000\n");
    plan_seen seen[2] = {0};
    plan_input in;
    enum plan_from from[2];
    char err[256];
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), -1);
    cr_assert(strstr(err, "node b") && strstr(err, "no `ssh`") && strstr(err, "`mem_limit`"), "%s",
              err);
    cluster_free(c);
}

Test(plan_gather, another_engine_in_the_file_is_refused_by_name)
{
    struct cluster *c = load("[node a]\nhost = h1\nport = 7000\nmem_limit = 1G\n"
                             "[node g]\nengine = vllm\nurl = http://h2:8000\n");
    plan_seen seen[2] = {0};
    plan_input in;
    enum plan_from from[2];
    char err[256];
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), -1);
    cr_assert(strstr(err, "node g runs vllm") && strstr(err, "inferd ring"), "%s", err);
    cluster_free(c);
}

Test(plan_gather, model_given_then_file_then_status)
{
    struct cluster *c = load(THREE);
    plan_seen seen[3] = {0};
    char spec[256], err[256];
    cr_assert_eq(plan_pick_model(c, seen, "embedded", spec, sizeof spec, err, sizeof err), 0);
    cr_assert_str_eq(spec, "embedded");
    cr_assert_eq(plan_pick_model(c, seen, NULL, spec, sizeof spec, err, sizeof err), 0);
    cr_assert_str_eq(spec, "synth:dim=64,hidden=64,layers=6,heads=4,kv_heads=4,vocab=64");
    cluster_free(c);

    c = load("[node a]\nhost = h1\nport = 7000\n[node b]\nhost = h2\nport = 7000\n");
    cr_assert_eq(plan_pick_model(c, seen, NULL, spec, sizeof spec, err, sizeof err), -1);
    cr_assert(strstr(err, "--model"), "%s", err);
    seen[1].up = 1;
    snprintf(seen[1].status.model.name, sizeof seen[1].status.model.name, "stories260K");
    cr_assert_eq(plan_pick_model(c, seen, NULL, spec, sizeof spec, err, sizeof err), 0);
    cr_assert_str_eq(spec, "embedded", "the embedded model's name");
    snprintf(seen[1].status.model.name, sizeof seen[1].status.model.name, "synth:110m");
    cr_assert_eq(plan_pick_model(c, seen, NULL, spec, sizeof spec, err, sizeof err), 0);
    cr_assert_str_eq(spec, "synth:110m");
    snprintf(seen[1].status.model.name, sizeof seen[1].status.model.name, "llama.bin");
    cr_assert_eq(plan_pick_model(c, seen, NULL, spec, sizeof spec, err, sizeof err), -1,
                 "a file's base name is no path here");
    cluster_free(c);
}

Test(plan_gather, kv_bits_shared_by_the_running_nodes)
{
    struct cluster *c = load(THREE);
    plan_seen seen[3] = {0};
    cr_assert_eq(plan_pick_kv_bits(c, seen), 16, "inferd's default");
    seen[0].up = seen[2].up = 1;
    seen[0].status.config.kv_bits = seen[2].status.config.kv_bits = 8;
    cr_assert_eq(plan_pick_kv_bits(c, seen), 8);
    seen[2].status.config.kv_bits = 4;
    cr_assert_eq(plan_pick_kv_bits(c, seen), 16, "they differ");
    cluster_free(c);
}
