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
    /* Weights mapped, not paged in yet: the node's all the same. */
    seen[0].status.memory.used = 110 * MiB;
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), 0, "%s", err);
    cr_assert_eq(in.nodes[1].budget, 1024 * MiB);
    cr_assert_eq(in.nodes[0].runtime, 60 * MiB, "used - weights - KV");
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

#define M6 "synth:dim=64,hidden=64,layers=6,heads=4,kv_heads=4,vocab=64"

/* A running node's status as serve.c fills model.shape: the engine's own
 * probe of the spec it runs. */
static void shape_of(plan_seen *s, const char *spec, const char *fingerprint)
{
    plan_model pm;
    char err[256];
    cr_assert_eq(plan_model_probe(spec, &pm, err, sizeof err), 0, "%s", err);
    proto_status *st = &s->status;
    s->up = 1;
    snprintf(st->model.name, sizeof st->model.name, "%s", spec);
    snprintf(st->model.fingerprint, sizeof st->model.fingerprint, "%s", fingerprint);
    st->model.dim = pm.cfg.dim;
    st->model.hidden_dim = pm.cfg.hidden_dim;
    st->model.n_layers = pm.cfg.n_layers;
    st->model.n_heads = pm.cfg.n_heads;
    st->model.n_kv_heads = pm.cfg.n_kv_heads;
    st->model.vocab_size = pm.cfg.vocab_size;
    st->model.head_dim = pm.cfg.head_dim;
    st->model.shared_classifier = pm.cfg.shared_classifier;
    st->model.embed_bytes = pm.embed_bytes;
    st->model.out_bytes = pm.out_bytes;
    st->model.n_layer_bytes = pm.cfg.n_layers;
    for (int l = 0; l < pm.cfg.n_layers; l++)
        st->model.layer_bytes[l] = pm.layer_bytes[l];
}

Test(plan_gather, model_given_then_status_then_file_then_names)
{
    struct cluster *c = load(THREE);
    plan_seen seen[3] = {0};
    plan_model m = {0};
    char err[256];
    cr_assert_eq(plan_pick_model(c, seen, "embedded", &m, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(m.spec, "embedded");
    cr_assert_eq(plan_pick_model(c, seen, NULL, &m, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(m.spec, M6, "the file's model");

    /* A running node's shape wins over the file, and is the engine's. */
    plan_model probed;
    cr_assert_eq(plan_model_probe("synth:dim=64,hidden=128,layers=3,heads=4,kv_heads=2,vocab=80",
                                  &probed, err, sizeof err),
                 0, "%s", err);
    shape_of(&seen[2], "synth:dim=64,hidden=128,layers=3,heads=4,kv_heads=2,vocab=80", "f1");
    cr_assert_eq(plan_pick_model(c, seen, NULL, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(m.cfg.n_layers, 3);
    cr_assert_eq(m.cfg.n_kv_heads, 2);
    cr_assert_eq(m.cfg.head_dim, probed.cfg.head_dim);
    cr_assert_eq(m.embed_bytes, probed.embed_bytes);
    cr_assert_eq(m.out_bytes, probed.out_bytes);
    for (int l = 0; l < 3; l++)
        cr_assert_eq(m.layer_bytes[l], probed.layer_bytes[l]);
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b <= 3; b++)
            cr_assert_eq(plan_stage_weights(&m, a, b), plan_stage_weights(&probed, a, b));

    /* Two running nodes with other weights: no guess. */
    shape_of(&seen[0], M6, "f2");
    cr_assert_eq(plan_pick_model(c, seen, NULL, &m, err, sizeof err), -1);
    cr_assert(strstr(err, "different model fingerprints"), "%s", err);
    cluster_free(c);

    memset(seen, 0, sizeof seen);
    memset(&m, 0, sizeof m);
    c = load("[node a]\nhost = h1\nport = 7000\n[node b]\nhost = h2\nport = 7000\n");
    cr_assert_eq(plan_pick_model(c, seen, NULL, &m, err, sizeof err), -1);
    cr_assert(strstr(err, "--model"), "%s", err);
    seen[1].up = 1;
    snprintf(seen[1].status.model.name, sizeof seen[1].status.model.name, "stories260K");
    cr_assert_eq(plan_pick_model(c, seen, NULL, &m, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(m.spec, "embedded", "an older node's embedded model, by name");
    snprintf(seen[1].status.model.name, sizeof seen[1].status.model.name, "llama.bin");
    cr_assert_eq(plan_pick_model(c, seen, NULL, &m, err, sizeof err), -1,
                 "a file's base name is no path here");
    cluster_free(c);
}

/* The demo's case: stages on one host count its memory once. a and b run
 * on one kernel (one boot id); c runs alone on another; d is down, with
 * facts over SSH from the same SSH host as e. */
#define HOSTS                                                                                      \
    "[cluster]\nbase_port = 7000\nmodel = " M6 "\n"                                                \
    "[node a]\nhost = 127.0.0.1\n[node b]\nhost = 127.0.0.2\n[node c]\nhost = h3\n"                \
    "[node d]\nhost = h4\nssh = ops@h4\nmem_limit = 100M\n[node e]\nhost = h4\nport = 7100\n"      \
    "ssh = ops@h4\n"

static void running(plan_seen *s, const char *boot, uint64_t available, uint64_t used,
                    uint64_t limit)
{
    s->up = 1;
    snprintf(s->status.host_id, sizeof s->status.host_id, "%s", boot);
    s->status.memory.host_available = available;
    s->status.memory.used = s->status.memory.rss = used;
    s->status.memory.limit = limit;
    /* What a node alone would say of itself. */
    s->status.memory.budget = available + used;
}

Test(plan_gather, nodes_on_one_host_split_its_memory)
{
    struct cluster *c = load(HOSTS);
    plan_seen seen[5] = {0};
    running(&seen[0], "boot-1", 1000 * MiB, 100 * MiB, 0);
    running(&seen[1], "boot-1", 1010 * MiB, 50 * MiB, 0);
    running(&seen[2], "boot-2", 2000 * MiB, 10 * MiB, 0);
    seen[3].has_facts = seen[4].has_facts = 1;
    seen[3].facts.mem_available_kb = seen[4].facts.mem_available_kb = 1024 * 1024;
    plan_input in;
    enum plan_from from[5];
    char err[256];
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), 0, "%s", err);
    /* MemAvailable once (the least seen) and what both hold. */
    cr_assert_eq(in.nodes[0].budget, (1000 + 100 + 50) * MiB / 2);
    cr_assert_eq(in.nodes[1].budget, (1000 + 100 + 50) * MiB / 2);
    cr_assert_eq(in.nodes[0].host_nodes, 2);
    cr_assert_leq(in.nodes[0].budget + in.nodes[1].budget, (1000 + 150) * MiB,
                  "the two never count more than the host has");
    cr_assert_eq(from[0], PLAN_FROM_STATUS);
    cr_assert_eq(in.nodes[2].budget, 2010 * MiB, "alone on its host");
    cr_assert_eq(in.nodes[2].host_nodes, 1);
    cr_assert_eq(in.nodes[3].budget, 100 * MiB, "its half, capped by its mem_limit");
    cr_assert_eq(in.nodes[4].budget, 512 * MiB, "half of the host's 1 GiB");
    cr_assert_eq(in.nodes[4].host_nodes, 2);

    /* A limit caps a node's share; the other keeps its half. */
    seen[1].status.memory.limit = 300 * MiB;
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), 0, "%s", err);
    cr_assert_eq(in.nodes[1].budget, 300 * MiB);
    cr_assert_eq(in.nodes[0].budget, (1000 + 150) * MiB / 2);

    /* An older node without host figures keeps its own budget. */
    seen[1].status.host_id[0] = '\0';
    cr_assert_eq(plan_fill_nodes(c, seen, &in, from, err, sizeof err), 0, "%s", err);
    cr_assert_eq(in.nodes[1].budget, (1010 + 50) * MiB);
    cr_assert_eq(in.nodes[0].budget, 1100 * MiB, "a is then alone on boot-1");
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
