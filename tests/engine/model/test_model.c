/* test_model.c: model specs, checkpoint validation, fingerprints. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/model.h"
#include "engine/model/weights.h"

extern const unsigned char embedded_model_start[];
extern const unsigned char embedded_model_end[];

#define EMBEDDED_SHA256 "b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696"
#define SMALL "synth:dim=64,hidden=172,layers=2,heads=4,kv_heads=2,vocab=512"

static size_t embedded_size(void)
{
    return (size_t)(embedded_model_end - embedded_model_start);
}

/* A copy of the embedded checkpoint, `delta` bytes longer or shorter, with
 * header field `field` set to `value` (field -1: header untouched). */
static void write_variant(char *path, long delta, int field, int32_t value)
{
    size_t size = embedded_size() + delta;
    unsigned char *buf = calloc(1, size);
    cr_assert_not_null(buf);
    memcpy(buf, embedded_model_start, delta < 0 ? size : embedded_size());
    if (field >= 0)
        memcpy(buf + 4 * field, &value, 4);
    strcpy(path, "/tmp/ckpt-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, size), (ssize_t)size);
    close(fd);
    free(buf);
}

/* Loading must fail with a message containing every one of `parts`. */
static void expect_refused(const char *spec, const char *const *parts, int n)
{
    char err[512] = "";
    model *m = (model *)1;
    cr_assert_eq(model_load(&m, spec, err, sizeof err), -1, "%s loaded", spec);
    cr_assert_null(m);
    for (int i = 0; i < n; i++)
        cr_assert(strstr(err, parts[i]), "message '%s' lacks '%s'", err, parts[i]);
}

static void expect_variant_refused(long delta, int field, int32_t value, const char *const *parts,
                                   int n)
{
    char path[64];
    write_variant(path, delta, field, value);
    const char *all[8] = {path};
    for (int i = 0; i < n; i++)
        all[i + 1] = parts[i];
    expect_refused(path, all, n + 1);
    unlink(path);
}

Test(model, embedded_shape_and_fingerprint)
{
    char err[256];
    model *m;
    cr_assert_eq(model_load(&m, NULL, err, sizeof err), 0, "%s", err);
    const model_config *c = model_config_of(m);
    cr_assert_eq(c->dim, 64);
    cr_assert_eq(c->hidden_dim, 172);
    cr_assert_eq(c->n_layers, 5);
    cr_assert_eq(c->n_heads, 8);
    cr_assert_eq(c->n_kv_heads, 4);
    cr_assert_eq(c->head_dim, 8);
    cr_assert_eq(c->vocab_size, 512);
    cr_assert_eq(c->seq_len, 512);
    cr_assert_eq(c->shared_classifier, 1);
    cr_assert_str_eq(model_name(m), "stories260K");
    cr_assert_str_eq(model_fingerprint(m), EMBEDDED_SHA256);
    model_free(m);
}

Test(model, stage_bytes)
{
    char err[256];
    model *m;
    cr_assert_eq(model_load(&m, "embedded", err, sizeof err), 0, "%s", err);
    size_t table = 512 * 64 * 4;
    /* The whole model: the file minus its header and RoPE table. */
    size_t all = embedded_size() - 28 - 512 * 8 * 4;
    cr_assert_eq(model_stage_bytes(m, 0, 5), all);
    /* Split, the tail needs the shared table again as its classifier. */
    cr_assert_eq(model_stage_bytes(m, 0, 2) + model_stage_bytes(m, 2, 5), all + table);
    cr_assert_eq(model_stage_bytes(m, 1, 3), model_stage_bytes(m, 3, 5) - table - 64 * 4);
    cr_assert_eq(model_stage_bytes(m, 3, 3), 0);
    cr_assert_eq(model_stage_bytes(m, 0, 6), 0);
    model_free(m);
}

Test(model, checkpoint_file_loads_like_embedded)
{
    char path[64], err[256];
    write_variant(path, 0, -1, 0);
    model *m;
    cr_assert_eq(model_load(&m, path, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(model_fingerprint(m), EMBEDDED_SHA256);
    cr_assert_str_eq(model_name(m), strrchr(path, '/') + 1);
    model_config c;
    cr_assert_eq(model_probe(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.hidden_dim, 172);
    model_free(m);
    unlink(path);
}

Test(model, truncated_checkpoint)
{
    const char *parts[] = {"file is 1056000 bytes", "expected 1056540", "dim=64",
                           "hidden_dim=172",        "n_layers=5",       "(shared classifier)"};
    expect_variant_refused(-540, -1, 0, parts, 6);
}

Test(model, oversized_checkpoint)
{
    const char *parts[] = {"file is 1056544 bytes", "expected 1056540"};
    expect_variant_refused(4, -1, 0, parts, 2);
}

Test(model, separate_classifier_size_expected)
{
    /* vocab_size < 0 announces a classifier after the weights. */
    const char *parts[] = {"expected 1187612", "(separate classifier)"};
    expect_variant_refused(0, 5, -512, parts, 2);
}

Test(model, inconsistent_header)
{
    const char *kv[] = {"n_heads=8 is not a multiple of n_kv_heads=3"};
    expect_variant_refused(0, 4, 3, kv, 1);
    const char *dim[] = {"dim=63 is not a multiple of n_heads=8"};
    expect_variant_refused(0, 0, 63, dim, 1);
    const char *zero[] = {"n_layers=0, expected 1..1024"};
    expect_variant_refused(0, 2, 0, zero, 1);
    const char *huge[] = {"vocab_size=2000000000, expected 1..4194304"};
    expect_variant_refused(0, 5, 2000000000, huge, 1);
    const char *odd[] = {"head_dim=9", "must be even"};
    expect_variant_refused(0, 0, 72, odd, 2);
}

/* Text (or any file that is not a model) used to be read as a llama2.c
 * header: "dim=1852383267". */
Test(model, not_a_model_file)
{
    char path[] = "/tmp/test_model_textXXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    static const char text[] = "nine words of plain text, not a model at all\n";
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    const char *parts[] = {path, "not a GGUF or llama2.c file", "dim="};
    expect_refused(path, parts, 3);
    unlink(path);
}

Test(model, short_and_missing_files)
{
    const char *parts[] = {"file is 10 bytes", "expected at least 28"};
    expect_variant_refused(10 - (long)embedded_size(), -1, 0, parts, 2);
    const char *missing[] = {"/nonexistent/x.bin", "No such file"};
    expect_refused("/nonexistent/x.bin", missing, 2);
    const char *dir[] = {"/tmp", "not a regular file"};
    expect_refused("/tmp", dir, 2);
}

Test(model, named_shapes)
{
    char err[256];
    model_config c;
    cr_assert_eq(model_probe("synth:110m", &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.dim, 768);
    cr_assert_eq(c.hidden_dim, 2048);
    cr_assert_eq(c.n_layers, 12);
    cr_assert_eq(c.n_heads, 12);
    cr_assert_eq(c.n_kv_heads, 12);
    cr_assert_eq(c.vocab_size, 32000);
    cr_assert_eq(c.seq_len, 2048);
    cr_assert_eq(model_probe("synth:1b,seed=7", &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.dim, 2048);
    cr_assert_eq(c.hidden_dim, 5632);
    cr_assert_eq(c.n_layers, 16);
    cr_assert_eq(c.n_heads, 32);
    cr_assert_eq(c.n_kv_heads, 8);
    cr_assert_eq(c.head_dim, 64);
    cr_assert_eq(c.vocab_size, 32000);
}

Test(model, explicit_dims)
{
    char err[256];
    model_config c;
    cr_assert_eq(model_probe("synth:vocab=100,kv_heads=1,heads=2,layers=3,hidden=40,dim=16,"
                             "seq_len=77",
                             &c, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(c.dim, 16);
    cr_assert_eq(c.hidden_dim, 40);
    cr_assert_eq(c.n_layers, 3);
    cr_assert_eq(c.n_heads, 2);
    cr_assert_eq(c.n_kv_heads, 1);
    cr_assert_eq(c.head_dim, 8);
    cr_assert_eq(c.vocab_size, 100);
    cr_assert_eq(c.seq_len, 77);
    cr_assert_eq(c.shared_classifier, 1);
}

Test(model, bad_specs)
{
    const char *unknown_shape[] = {"unknown shape '7b'"};
    expect_refused("synth:7b", unknown_shape, 1);
    const char *missing[] = {"missing hidden"};
    expect_refused("synth:dim=64", missing, 1);
    const char *unknown_key[] = {"unknown key 'depth'"};
    expect_refused(SMALL ",depth=3", unknown_key, 1);
    const char *named_key[] = {"unknown key 'dim'", "expected seed"};
    expect_refused("synth:110m,dim=64", named_key, 2);
    const char *twice[] = {"key 'dim' given twice"};
    expect_refused(SMALL ",dim=64", twice, 1);
    const char *nonnum[] = {"layers='x' is not an integer in 0..2147483647"};
    expect_refused("synth:dim=64,hidden=172,layers=x,heads=4,kv_heads=2,vocab=512", nonnum, 1);
    const char *gqa[] = {"heads=4 is not a multiple of kv_heads=3"};
    expect_refused("synth:dim=64,hidden=172,layers=2,heads=4,kv_heads=3,vocab=512", gqa, 1);
    const char *zero[] = {"vocab=0, expected 1..4194304"};
    expect_refused("synth:dim=64,hidden=172,layers=2,heads=4,kv_heads=2,vocab=0", zero, 1);
    const char *empty[] = {"unknown shape ''"};
    expect_refused("synth:", empty, 1);
}

Test(model, synthetic_fingerprints)
{
    char err[256];
    model *a, *b, *c, *d;
    cr_assert_eq(model_load(&a, SMALL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_load(&b,
                            "synth:vocab=512,kv_heads=2,heads=4,layers=2,hidden=172,dim=64,"
                            "seq_len=2048,seed=0",
                            err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(model_load(&c, SMALL ",seed=1", err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_load(&d, SMALL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(strlen(model_fingerprint(a)), 64);
    cr_assert_str_eq(model_fingerprint(a), model_fingerprint(b));
    cr_assert_str_neq(model_fingerprint(a), model_fingerprint(c));
    cr_assert_str_eq(model_name(a),
                     "synth:dim=64,hidden=172,layers=2,heads=4,kv_heads=2,vocab=512,seq_len=2048,"
                     "seed=0");
    /* Equal fingerprints promise equal weights; other seeds give others. */
    size_t bytes = model_stage_bytes(a, 0, 2);
    cr_assert_eq(memcmp(model_token_embedding(a)->data, model_token_embedding(d)->data, bytes), 0);
    cr_assert_neq(
        memcmp(model_token_embedding(a)->data, model_token_embedding(c)->data, 512 * 64 * 4), 0);
    const float *norm = model_layer(a, 1)->rms_ffn;
    for (int i = 0; i < 64; i++)
        cr_assert_eq(norm[i], 1.0f);
    model_free(a);
    model_free(b);
    model_free(c);
    model_free(d);
}

static void same_mat(const wmat *a, const wmat *b, const char *what, int l)
{
    size_t n = (size_t)a->rows * a->row_bytes;
    cr_assert_eq(n, (size_t)b->rows * b->row_bytes);
    cr_assert_eq(memcmp(a->data, b->data, n), 0, "layer %d %s differs", l, what);
}

/* A stage of a synthetic model writes its own layers only, with the
 * values the whole model has there; the rest of its buffer is never
 * touched, so it is not in memory (model_unpaged_bytes). */
Test(model, synthetic_stage_holds_its_layers)
{
    const char *spec = "synth:dim=256,hidden=512,layers=6,heads=4,kv_heads=2,vocab=300";
    char err[256];
    model *whole, *part;
    cr_assert_eq(model_load(&whole, spec, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_load_stage(&part, spec, 2, 4, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(model_fingerprint(part), model_fingerprint(whole));
    for (int l = 2; l < 4; l++) {
        const layer_weights *a = model_layer(whole, l), *b = model_layer(part, l);
        same_mat(&a->wq, &b->wq, "wq", l);
        same_mat(&a->wk, &b->wk, "wk", l);
        same_mat(&a->wv, &b->wv, "wv", l);
        same_mat(&a->wo, &b->wo, "wo", l);
        same_mat(&a->w1, &b->w1, "w1", l);
        same_mat(&a->w2, &b->w2, "w2", l);
        same_mat(&a->w3, &b->w3, "w3", l);
        cr_assert_eq(memcmp(a->rms_att, b->rms_att, 256 * sizeof(float)), 0);
    }
    cr_assert_eq(model_unpaged_bytes(part, 2, 4), 0, "its own layers are written");
    size_t other = model_stage_bytes(part, 4, 5);
    cr_assert_geq(model_unpaged_bytes(part, 4, 5), other * 9 / 10,
                  "another layer is not in memory: %zu of %zu bytes",
                  model_unpaged_bytes(part, 4, 5), other);
    cr_assert_eq(model_unpaged_bytes(whole, 0, 6), 0);
    model_free(whole);
    model_free(part);
}
