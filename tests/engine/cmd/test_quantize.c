/* test_quantize.c: `inferd quantize` against llama-quantize's own files
 * (tests/fixtures/gguf: r256-f32.gguf through llama-quantize, and the
 * embedded stories260K through convert-llama2c-to-ggml and
 * llama-quantize). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/cmd/commands.h"
#include "engine/model/gguf.h"
#include "engine/model/model.h"
#include "engine/model/weights.h"
#include "engine/model/wtype.h"

#define FIX "tests/fixtures/gguf/"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/quantize.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* Entries of the directory; removes them and it. */
static int clear_dir(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[320];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
        n++;
    }
    closedir(d);
    rmdir(dir);
    return n;
}

/* The verb's own lines ("wrote ...", errors) stay out of the test log;
 * errors are read back where they are the point. */
static void set_up(void)
{
    make_dir();
    cr_redirect_stdout();
    cr_redirect_stderr();
}

TestSuite(quantize, .init = set_up);

/* What the verb has printed on stderr so far. */
static const char *stderr_text(void)
{
    static char text[4096];
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    return text;
}

static const char *out_path(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* `inferd quantize --model MODEL --type TYPE --out OUT --threads 2`. */
static int quantize(const char *model, const char *type, const char *out)
{
    char *argv[] = {"quantize", "--model",   (char *)model, "--type", (char *)type,
                    "--out",    (char *)out, "--threads",   "2",      NULL};
    return cmd_quantize(9, argv);
}

static gguf *open_ok(const char *path)
{
    char err[512] = "";
    gguf *g = NULL;
    cr_assert_eq(gguf_open(&g, path, err, sizeof err), 0, "%s", err);
    return g;
}

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    uint8_t *p = malloc(*size ? *size : 1);
    cr_assert(p && fread(p, 1, *size, f) == *size);
    fclose(f);
    return p;
}

/* Every tensor of `want` is in `got` with the same type, shape and bytes. */
static void same_tensors(const gguf *got, const gguf *want)
{
    cr_assert_eq(gguf_n_tensors(got), gguf_n_tensors(want));
    for (int64_t i = 0; i < gguf_n_tensors(want); i++) {
        const gguf_tensor *w = gguf_tensor_at(want, i), *g = gguf_tensor_find(got, w->name);
        cr_assert_not_null(g, "no tensor %s", w->name);
        cr_assert(g->type == w->type && g->n_dims == w->n_dims &&
                      memcmp(g->ne, w->ne, sizeof g->ne) == 0,
                  "%s: %s, llama.cpp's is %s", w->name, wtype_name(g->type), wtype_name(w->type));
        cr_assert(g->bytes == w->bytes && memcmp(g->data, w->data, w->bytes) == 0,
                  "%s: data differs from llama.cpp's", w->name);
    }
}

/* The raw value of `key` in g equals the one in want. */
static void same_key(const gguf *g, const gguf *want, const char *key)
{
    gguf_kv_raw a = {0}, b = {0};
    for (int64_t i = 0; i < gguf_n_kv(g); i++)
        if (gguf_kv_at(g, i, &a) == 0 && a.key_len == strlen(key) && !memcmp(a.key, key, a.key_len))
            break;
    for (int64_t i = 0; i < gguf_n_kv(want); i++)
        if (gguf_kv_at(want, i, &b) == 0 && b.key_len == strlen(key) &&
            !memcmp(b.key, key, b.key_len))
            break;
    cr_assert(a.type == b.type && a.value_bytes == b.value_bytes &&
                  memcmp(a.value, b.value, a.value_bytes) == 0,
              "key %s differs", key);
}

/* Q8_0 rounding is fully specified: every tensor's bytes are llama.cpp's. */
Test(quantize, r256_q8_0_tensor_data_is_llama_cpps)
{
    const char *out = out_path("q8.gguf");
    cr_assert_eq(quantize(FIX "r256-f32.gguf", "Q8_0", out), 0);
    gguf *got = open_ok(out), *want = open_ok(FIX "r256-Q8_0.gguf");
    same_tensors(got, want);
    gguf_close(got);
    gguf_close(want);
    cr_assert_eq(clear_dir(), 1);
}

/* Every type: the whole file is llama-quantize's, byte for byte (same
 * metadata in the same order, same tensor order, types, padding, data). */
Test(quantize, r256_every_type_is_llama_quantizes_file, .timeout = 60)
{
    static const char *const types[] = {"F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        char fixture[128];
        snprintf(fixture, sizeof fixture, FIX "r256-%s.gguf", types[k]);
        const char *out = out_path("r.gguf");
        cr_assert_eq(quantize(FIX "r256-f32.gguf", types[k], out), 0, "%s", types[k]);
        size_t n1, n2;
        uint8_t *a = slurp(out, &n1), *b = slurp(fixture, &n2);
        cr_assert(n1 == n2 && memcmp(a, b, n1) == 0, "%s: file differs from %s", types[k], fixture);
        free(a);
        free(b);
    }
    cr_assert_eq(clear_dir(), 1);
}

/* How many tensors of each type, as the fixtures README lists them. */
Test(quantize, r256_type_counts)
{
    static const struct {
        const char *type;
        uint32_t t[2];
        int n[2];
    } want[] = {
        {"Q4_0", {WT_Q4_0, WT_Q6_K}, {29, 1}},
        {"Q4_K_M", {WT_Q4_K, WT_Q6_K}, {25, 5}},
        {"Q5_K_M", {WT_Q5_K, WT_Q6_K}, {25, 5}},
        {"Q6_K", {WT_Q6_K, WT_Q6_K}, {30, 30}},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        const char *out = out_path("c.gguf");
        cr_assert_eq(quantize(FIX "r256-f32.gguf", want[k].type, out), 0);
        gguf *g = open_ok(out);
        int count[WT_ID_MAX] = {0};
        for (int64_t i = 0; i < gguf_n_tensors(g); i++)
            count[gguf_tensor_at(g, i)->type]++;
        cr_assert_eq(count[WT_F32], 9, "%s: norms stay F32", want[k].type);
        for (int j = 0; j < 2; j++)
            cr_assert_eq(count[want[k].t[j]], want[k].n[j], "%s: %s", want[k].type,
                         wtype_name(want[k].t[j]));
        gguf_close(g);
    }
    cr_assert_eq(clear_dir(), 1);
}

/* The source's keys, in order, then general.quantization_version and
 * general.file_type (llama_ftype 15 for Q4_K_M). */
Test(quantize, metadata_round_trips)
{
    const char *out = out_path("m.gguf");
    cr_assert_eq(quantize(FIX "r256-f32.gguf", "Q4_K_M", out), 0);
    gguf *g = open_ok(out), *src = open_ok(FIX "r256-f32.gguf");
    cr_assert_eq(gguf_n_kv(g), gguf_n_kv(src) + 2);
    for (int64_t i = 0; i < gguf_n_kv(src); i++) {
        gguf_kv_raw a, b;
        gguf_kv_at(src, i, &a);
        gguf_kv_at(g, i, &b);
        cr_assert(a.key_len == b.key_len && memcmp(a.key, b.key, a.key_len) == 0 &&
                      a.type == b.type && a.value_bytes == b.value_bytes &&
                      memcmp(a.value, b.value, a.value_bytes) == 0,
                  "key %lld '%.*s' not copied as it was", (long long)i, (int)a.key_len, a.key);
    }
    uint64_t v;
    cr_assert(gguf_get_u64(g, "general.file_type", &v, NULL, 0) == 0 && v == 15);
    cr_assert(gguf_get_u64(g, "general.quantization_version", &v, NULL, 0) == 0 && v == 2);
    gguf_close(src);
    gguf_close(g);
    cr_assert_eq(clear_dir(), 1);
}

/* Requantizing a quantized file: the same mix, from its dequantized values. */
Test(quantize, from_a_quantized_file)
{
    const char *out = out_path("rq.gguf");
    cr_assert_eq(quantize(FIX "r256-Q8_0.gguf", "Q4_K_M", out), 0);
    gguf *g = open_ok(out), *want = open_ok(FIX "r256-Q4_K_M.gguf");
    for (int64_t i = 0; i < gguf_n_tensors(want); i++) {
        const gguf_tensor *w = gguf_tensor_at(want, i), *t = gguf_tensor_at(g, i);
        cr_assert(strcmp(t->name, w->name) == 0 && t->type == w->type, "%s", w->name);
    }
    uint64_t v;
    cr_assert(gguf_get_u64(g, "general.file_type", &v, NULL, 0) == 0 && v == 15);
    gguf_close(want);
    gguf_close(g);
    cr_assert_eq(clear_dir(), 1);
}

/* The embedded stories260K: what convert-llama2c-to-ggml wrote for it
 * (tensors, vocabulary), and llama-quantize's F16 and BF16 of that. */
Test(quantize, embedded_as_llama_cpp_converts_it)
{
    static const struct {
        const char *type, *fixture;
    } runs[] = {
        {"F32", FIX "stories260K-f32.gguf"},
        {"F16", FIX "s260-F16.gguf"},
        {"BF16", FIX "s260-BF16.gguf"},
    };
    static const char *const keys[] = {
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.scores",
        "tokenizer.ggml.token_type",
        "tokenizer.ggml.model",
        "general.architecture",
        "tokenizer.ggml.unknown_token_id",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.padding_token_id",
        "llama.context_length",
        "llama.embedding_length",
        "llama.feed_forward_length",
        "llama.attention.head_count",
        "llama.attention.head_count_kv",
        "llama.block_count",
        "llama.rope.dimension_count",
        "llama.attention.layer_norm_rms_epsilon",
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
        const char *out = out_path("e.gguf");
        cr_assert_eq(quantize("embedded", runs[k].type, out), 0);
        gguf *g = open_ok(out), *want = open_ok(runs[k].fixture);
        same_tensors(g, want);
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
            same_key(g, want, keys[i]);
        double base;
        cr_assert(gguf_get_f64(g, "llama.rope.freq_base", &base, NULL, 0) == 0 && base == 10000);
        gguf_close(want);
        gguf_close(g);
    }
    cr_assert_eq(clear_dir(), 1);
}

/* 172-wide FFN rows: the K mixes fall back (to Q8_0 for 64-wide rows, F16
 * for 172), Q8_0 and Q4_0 refuse, as llama.cpp does, writing nothing. */
Test(quantize, embedded_fallbacks_and_refusals)
{
    const char *out = out_path("k.gguf");
    cr_assert_eq(quantize("embedded", "Q4_K_M", out), 0);
    gguf *g = open_ok(out);
    cr_assert_eq(gguf_tensor_find(g, "blk.0.ffn_down.weight")->type, WT_F16);
    cr_assert_eq(gguf_tensor_find(g, "blk.0.ffn_up.weight")->type, WT_Q8_0);
    cr_assert_eq(gguf_tensor_find(g, "output.weight")->type, WT_Q8_0);
    gguf_close(g);
    cr_assert_eq(unlink(out), 0);
    cr_assert_eq(quantize("embedded", "Q8_0", out), 1);
    cr_assert_eq(quantize("embedded", "Q4_0", out), 1);
    const char *e = stderr_text();
    cr_assert(strstr(e, "inferd quantize: tensor 'blk.0.ffn_down.weight': rows of 172 values "
                        "are not a multiple of Q8_0's block of 32") &&
                  strstr(e, "block of 32, and llama.cpp has no fallback from Q4_0"),
              "%s", e);
    cr_assert_eq(clear_dir(), 0, "a refused run left a file");
}

/* A synthetic model written at F32 loads with the same shape and weights. */
Test(quantize, synthetic_round_trips)
{
    const char *spec = "synth:dim=256,hidden=768,layers=2,heads=8,kv_heads=4,vocab=600,seed=5";
    const char *out = out_path("s.gguf");
    cr_assert_eq(quantize(spec, "F32", out), 0);
    char err[512] = "";
    model *a, *b;
    cr_assert_eq(model_load(&a, spec, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_load(&b, out, err, sizeof err), 0, "%s", err);
    const model_config *ca = model_config_of(a), *cb = model_config_of(b);
    cr_assert(ca->dim == cb->dim && ca->hidden_dim == cb->hidden_dim &&
              ca->n_layers == cb->n_layers && ca->n_heads == cb->n_heads &&
              ca->n_kv_heads == cb->n_kv_heads && ca->vocab_size == cb->vocab_size &&
              ca->seq_len == cb->seq_len && ca->rope_dim == cb->rope_dim &&
              ca->norm_eps == cb->norm_eps && ca->rope_base == cb->rope_base);
    const wmat *wa = &model_layer(a, 1)->w2, *wb = &model_layer(b, 1)->w2;
    cr_assert(wb->type == WT_F32 && wa->rows == wb->rows && wa->cols == wb->cols);
    cr_assert_eq(memcmp(wa->data, wb->data, (size_t)wa->rows * wa->row_bytes), 0);
    cr_assert_eq(memcmp(model_classifier(a)->data, model_classifier(b)->data,
                        (size_t)ca->vocab_size * ca->dim * sizeof(float)),
                 0);
    model_free(a);
    model_free(b);
    /* 600 tokens: the embedded 512, then placeholders. */
    gguf *g = open_ok(out);
    const char *s;
    size_t len;
    cr_assert_eq(gguf_arr_str(g, "tokenizer.ggml.tokens", 599, &s, &len), 0);
    cr_assert(len == strlen("<unused599>") && memcmp(s, "<unused599>", len) == 0);
    int64_t type;
    cr_assert(gguf_arr_i64(g, "tokenizer.ggml.token_type", 599, &type) == 0 && type == 5);
    gguf_close(g);
    cr_assert_eq(clear_dir(), 1);
}

Test(quantize, bad_arguments)
{
    const char *out = out_path("x.gguf");
    cr_assert_eq(quantize("embedded", "Q3_K", out), 2);
    char *no_out[] = {"quantize", "--type", "Q8_0", NULL};
    cr_assert_eq(cmd_quantize(3, no_out), 2);
    char *no_type[] = {"quantize", "--out", (char *)out, NULL};
    cr_assert_eq(cmd_quantize(3, no_type), 2);
    cr_assert_eq(quantize("/nonexistent.gguf", "Q8_0", out), 1);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.gguf", dir);
    cr_assert_eq(quantize(FIX "r256-f32.gguf", "Q8_0", missing), 1);
    const char *e = stderr_text();
    cr_assert(strstr(e, "--type: 'Q3_K' is not valid, expected F32, F16, BF16, Q8_0"), "%s", e);
    cr_assert(strstr(e, "missing --out FILE") && strstr(e, "missing --type TYPE"), "%s", e);
    cr_assert(strstr(e, "/nonexistent.gguf: No such file or directory"), "%s", e);
    cr_assert(strstr(e, missing) && strstr(e, "cannot create a file in its directory"), "%s", e);
    cr_assert_eq(clear_dir(), 0);
}
