/* test_ftype.c: llama.cpp's file types and the type of every tensor in
 * each, against the files llama-quantize made (tests/fixtures/gguf) and
 * against its rules where the fixtures do not reach (deep models,
 * fallbacks, tied embeddings, 70B). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/ftype.h"
#include "engine/model/gguf.h"
#include "engine/model/wtype.h"

#define FIX "tests/fixtures/gguf/"

static gguf *open_ok(const char *path)
{
    char err[512] = "";
    gguf *g = NULL;
    cr_assert_eq(gguf_open(&g, path, err, sizeof err), 0, "%s", err);
    return g;
}

Test(ftype, names_and_ids)
{
    cr_assert_eq(ftype_find("Q4_K_M")->id, 15);
    cr_assert_eq(ftype_find("q4_k_m")->base, WT_Q4_K);
    cr_assert_eq(ftype_find("F32")->id, 0);
    cr_assert_eq(ftype_find("BF16")->id, 32);
    cr_assert_eq(ftype_find("Q8_0")->id, 7);
    cr_assert_null(ftype_find("Q4_K_S"));
    cr_assert_null(ftype_find("Q4_K"));
    cr_assert_str_eq(ftype_by_id(17)->name, "Q5_K_M");
    cr_assert_null(ftype_by_id(3));
}

/* The list is the table's: each name it gives is found, and every
 * entry (llama_ftype ids are below 64) is in it, once, as a whole name. */
Test(ftype, names_list_the_table)
{
    char list[256];
    snprintf(list, sizeof list, ", %s, ", ftype_names());
    int listed = 0, entries = 0;
    for (const char *p = list + 2; *p; p = strstr(p, ", ") + 2, listed++) {
        char name[16];
        size_t n = (size_t)(strstr(p, ", ") - p);
        cr_assert_lt(n, sizeof name);
        memcpy(name, p, n);
        name[n] = '\0';
        cr_assert_not_null(ftype_find(name), "%s", name);
    }
    for (uint64_t id = 0; id < 64; id++) {
        const ftype *ft = ftype_by_id(id);
        if (!ft)
            continue;
        entries++;
        char whole[32];
        snprintf(whole, sizeof whole, ", %s, ", ft->name);
        cr_assert_not_null(strstr(list, whole), "%s is not in \"%s\"", ft->name, ftype_names());
    }
    cr_assert_eq(listed, entries);
}

/* llama-quantize's order: outside the blocks, then block by block
 * (numerically), by name within each. */
Test(ftype, tensor_order)
{
    const char *names[] = {"output.weight",       "output_norm.weight",  "token_embd.weight",
                           "blk.2.attn_k.weight", "blk.2.ffn_up.weight", "blk.10.attn_k.weight"};
    for (int i = 0; i + 1 < 6; i++)
        cr_assert_lt(ftype_name_order(names[i], names[i + 1]), 0, "%s before %s", names[i],
                     names[i + 1]);
    cr_assert_gt(ftype_name_order("blk.10.a", "blk.9.z"), 0);
}

/* The plan for every tensor of `src`, in llama-quantize's order. */
typedef struct planned {
    const char *name[64];
    uint32_t type[64];
    int n;
} planned;

static int by_order(const void *a, const void *b)
{
    return ftype_name_order(*(const char *const *)a, *(const char *const *)b);
}

static void plan_file(const gguf *src, const ftype *ft, planned *out)
{
    int n = (int)gguf_n_tensors(src);
    cr_assert_leq(n, 64);
    for (int i = 0; i < n; i++)
        out->name[i] = gguf_tensor_at(src, i)->name;
    qsort(out->name, (size_t)n, sizeof *out->name, by_order);
    ftype_plan p;
    ftype_plan_init(&p, ft, 4, 8, 4, out->name, n);
    for (int i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_find(src, out->name[i]);
        char err[256] = "";
        cr_assert_eq(ftype_plan_next(&p, t->name, t->type, t->n_dims, t->ne[0], &out->type[i], err,
                                     sizeof err),
                     0, "%s", err);
    }
    out->n = n;
}

/* Every tensor gets the type llama-quantize gave it in the fixture. */
Test(ftype, every_fixture_tensor_type)
{
    static const char *const types[] = {"F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"};
    gguf *src = open_ok(FIX "r256-f32.gguf");
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        char path[128];
        snprintf(path, sizeof path, FIX "r256-%s.gguf", types[k]);
        gguf *want = open_ok(path);
        planned got;
        plan_file(src, ftype_find(types[k]), &got);
        cr_assert_eq(got.n, gguf_n_tensors(want));
        for (int i = 0; i < got.n; i++) {
            const gguf_tensor *w = gguf_tensor_at(want, i);
            cr_assert_str_eq(got.name[i], w->name, "%s: tensor %d", types[k], i);
            cr_assert_eq(got.type[i], w->type, "%s: %s is %s, llama.cpp made it %s", types[k],
                         w->name, wtype_name(got.type[i]), wtype_name(w->type));
        }
        gguf_close(want);
    }
    gguf_close(src);
}

/* The types of one matrix of each block of an n-layer model. */
static void plan_layers(const char *ft, int n_layers, int n_heads, int n_kv_heads,
                        const char *suffix, uint32_t *types)
{
    char(*names)[64] = calloc((size_t)n_layers * 2 + 1, sizeof *names);
    const char **list = calloc((size_t)n_layers * 2 + 1, sizeof *list);
    cr_assert(names && list);
    int n = 0;
    snprintf(names[n++], 64, "output.weight");
    for (int l = 0; l < n_layers; l++) {
        snprintf(names[n++], 64, "blk.%d.attn_v.weight", l);
        snprintf(names[n++], 64, "blk.%d.ffn_down.weight", l);
    }
    for (int i = 0; i < n; i++)
        list[i] = names[i];
    ftype_plan p;
    ftype_plan_init(&p, ftype_find(ft), n_layers, n_heads, n_kv_heads, list, n);
    char err[256];
    for (int i = 0, l = 0; i < n; i++) {
        uint32_t t;
        cr_assert_eq(ftype_plan_next(&p, list[i], WT_F32, 2, 4096, &t, err, sizeof err), 0);
        if (strstr(list[i], suffix))
            types[l++] = t;
    }
    free(names);
    free(list);
}

/* 32 layers: more bits for the first and last four and every third from 6. */
Test(ftype, q4_k_m_more_bits_layers_of_32)
{
    static const int more[] = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
    for (int part = 0; part < 2; part++) {
        uint32_t types[32];
        plan_layers("Q4_K_M", 32, 32, 8, part ? "ffn_down" : "attn_v", types);
        for (int l = 0, k = 0; l < 32; l++) {
            int is_more = k < 16 && more[k] == l;
            k += is_more;
            cr_assert_eq(types[l], is_more ? WT_Q6_K : WT_Q4_K, "layer %d %s", l,
                         part ? "ffn_down" : "attn_v");
        }
    }
}

/* llama.cpp's 70B (80 layers, grouped-query attention) gets Q5_K for the
 * attn_v that would be Q4_K; a 65B (80 layers, no GQA) does not. */
Test(ftype, q4_k_m_attn_v_of_70b)
{
    uint32_t types[80];
    plan_layers("Q4_K_M", 80, 64, 8, "attn_v", types);
    cr_assert_eq(types[0], WT_Q6_K);
    cr_assert_eq(types[10], WT_Q5_K);
    plan_layers("Q4_K_M", 80, 64, 64, "attn_v", types);
    cr_assert_eq(types[10], WT_Q4_K);
    plan_layers("Q4_K_M", 80, 64, 8, "ffn_down", types);
    cr_assert_eq(types[10], WT_Q4_K);
}

static uint32_t one(const char *ft, const char *name, int n_dims, uint64_t ne0, int has_output)
{
    const char *names[] = {name, has_output ? "output.weight" : "x"};
    ftype_plan p;
    ftype_plan_init(&p, ftype_find(ft), 4, 8, 4, names, 2);
    uint32_t t;
    char err[256] = "";
    cr_assert_eq(ftype_plan_next(&p, name, WT_F32, n_dims, ne0, &t, err, sizeof err), 0, "%s", err);
    return t;
}

Test(ftype, vectors_and_norms_keep_their_type)
{
    cr_assert_eq(one("Q4_0", "blk.0.attn_norm.weight", 1, 256, 1), WT_F32);
    cr_assert_eq(one("Q4_0", "rope_freqs.weight", 1, 64, 1), WT_F32);
    cr_assert_eq(one("F16", "output_norm.weight", 1, 256, 1), WT_F32);
    cr_assert_eq(one("F16", "blk.0.ffn_down.weight", 2, 172, 1), WT_F16);
}

/* Q8_0 keeps output.weight; Q4_0 and the K types make it Q6_K. */
Test(ftype, output_matrix)
{
    cr_assert_eq(one("Q8_0", "output.weight", 2, 256, 1), WT_Q8_0);
    cr_assert_eq(one("Q4_0", "output.weight", 2, 256, 1), WT_Q6_K);
    cr_assert_eq(one("Q5_K_M", "output.weight", 2, 256, 1), WT_Q6_K);
    cr_assert_eq(one("F16", "output.weight", 2, 256, 1), WT_F16);
}

/* Without output.weight the embeddings are the output matrix. */
Test(ftype, tied_embeddings_are_the_output)
{
    cr_assert_eq(one("Q4_K_M", "token_embd.weight", 2, 256, 0), WT_Q6_K);
    cr_assert_eq(one("Q4_K_M", "token_embd.weight", 2, 256, 1), WT_Q4_K);
    cr_assert_eq(one("Q4_0", "token_embd.weight", 2, 256, 0), WT_Q6_K);
}

/* stories260K: dim 64 and 172-wide FFN rows. */
Test(ftype, fallbacks)
{
    cr_assert_eq(one("Q4_K_M", "blk.0.attn_q.weight", 2, 64, 1), WT_Q8_0);
    cr_assert_eq(one("Q5_K_M", "blk.0.attn_q.weight", 2, 64, 1), WT_Q8_0);
    cr_assert_eq(one("Q6_K", "blk.0.attn_q.weight", 2, 64, 1), WT_Q8_0);
    cr_assert_eq(one("Q4_K_M", "blk.0.ffn_down.weight", 2, 172, 1), WT_F16);
    cr_assert_eq(one("Q6_K", "blk.0.ffn_down.weight", 2, 172, 1), WT_F16);
    /* Output rows that Q4_0's blocks hold but Q6_K's do not: Q8_0. */
    cr_assert_eq(one("Q4_0", "output.weight", 2, 64, 1), WT_Q8_0);
    cr_assert_eq(one("Q4_K_M", "output.weight", 2, 64, 1), WT_Q8_0);
}

Test(ftype, no_fallback_from_q8_0_and_q4_0)
{
    const char *names[] = {"blk.0.ffn_down.weight"};
    for (int k = 0; k < 2; k++) {
        ftype_plan p;
        ftype_plan_init(&p, ftype_find(k ? "Q4_0" : "Q8_0"), 5, 8, 4, names, 1);
        uint32_t t = 1234;
        char err[256] = "";
        cr_assert_eq(ftype_plan_next(&p, names[0], WT_F32, 2, 172, &t, err, sizeof err), -1);
        cr_assert_eq(t, 1234);
        cr_assert(strstr(err, "tensor 'blk.0.ffn_down.weight': rows of 172 values") &&
                      strstr(err, "no fallback"),
                  "%s", err);
    }
    /* A K mix's output matrix falls to Q8_0, which 172 does not fit either. */
    const char *out[] = {"output.weight"};
    ftype_plan p;
    ftype_plan_init(&p, ftype_find("Q4_K_M"), 5, 8, 4, out, 1);
    uint32_t t;
    char err[256] = "";
    cr_assert_eq(ftype_plan_next(&p, out[0], WT_F32, 2, 172, &t, err, sizeof err), -1);
}
