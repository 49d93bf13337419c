/* test_model_probe.c: model_probe_bytes, the weight bytes of a model read
 * from its header or synthetic shape, agree with model_stage_bytes of the
 * loaded model for every stage range. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/model.h"

extern const unsigned char embedded_model_start[];
extern const unsigned char embedded_model_end[];

#define MAX_LAYERS 16

/* The bytes of stage [first, last) composed as model.h says. */
static size_t composed(const model_config *c, size_t embed, const size_t *layer, size_t out,
                       int first, int last)
{
    size_t sum = 0;
    for (int l = first; l < last; l++)
        sum += layer[l];
    int head = first == 0, tail = last == c->n_layers;
    if (head)
        sum += embed;
    if (tail)
        sum += out;
    if (head && tail && c->shared_classifier)
        sum -= embed;
    return sum;
}

static void expect_agreement(const char *spec)
{
    char err[256];
    model_config c;
    size_t embed, out, layer[MAX_LAYERS];
    cr_assert_eq(model_probe_bytes(spec, &c, &embed, layer, MAX_LAYERS, &out, err, sizeof err), 0,
                 "%s", err);
    model *m;
    cr_assert_eq(model_load(&m, spec, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(&c, model_config_of(m), sizeof c), 0, "%s: another shape", spec);
    for (int first = 0; first < c.n_layers; first++)
        for (int last = first + 1; last <= c.n_layers; last++)
            cr_assert_eq(composed(&c, embed, layer, out, first, last),
                         model_stage_bytes(m, first, last), "%s: layers %d:%d", spec, first, last);
    model_free(m);
}

Test(model_probe, embedded_agrees_with_stage_bytes)
{
    expect_agreement("embedded");
}

Test(model_probe, synthetic_agrees_with_stage_bytes)
{
    expect_agreement("synth:dim=64,hidden=40,layers=6,heads=4,kv_heads=2,vocab=300");
}

/* The embedded checkpoint with a separate classifier appended. */
Test(model_probe, checkpoint_with_separate_classifier_agrees)
{
    size_t size = (size_t)(embedded_model_end - embedded_model_start);
    size_t extra = 512 * 64 * sizeof(float);
    unsigned char *buf = calloc(1, size + extra);
    cr_assert_not_null(buf);
    memcpy(buf, embedded_model_start, size);
    int32_t vocab = -512;
    memcpy(buf + 5 * 4, &vocab, 4);
    char path[] = "/tmp/probe-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, size + extra), (ssize_t)(size + extra));
    close(fd);
    free(buf);
    expect_agreement(path);
    unlink(path);
}

Test(model_probe, layers_past_room_refused)
{
    char err[256];
    model_config c;
    size_t embed, out, layer[4];
    cr_assert_eq(model_probe_bytes("synth:110m", &c, &embed, layer, 4, &out, err, sizeof err), -1);
    cr_assert(strstr(err, "12 layers"), "%s", err);
    cr_assert_eq(model_probe_bytes("synth:bogus", &c, &embed, layer, 4, &out, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown shape"), "%s", err);
}

/* GGUF files: mixed tensor types (Q4_K_M holds q4_K and q6_K matrices),
 * and stories260K's separate output matrix. */
Test(model_probe, gguf_files_agree_with_stage_bytes)
{
    expect_agreement("tests/fixtures/gguf/r256-Q4_K_M.gguf");
    expect_agreement("tests/fixtures/gguf/s260-F16.gguf");
}
