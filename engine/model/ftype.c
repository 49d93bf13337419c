/* ftype.c: llama.cpp's file types and its per-tensor choice of weight
 * type (see ftype.h; llama_tensor_get_type in llama.cpp's
 * src/llama-quant.cpp, restricted to the types and the llama
 * architecture inferd runs). */
#include "ftype.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "wtype.h"

static const ftype ftypes[] = {
    {"F32", 0, WT_F32},   {"F16", 1, WT_F16},      {"BF16", 32, WT_BF16},   {"Q8_0", 7, WT_Q8_0},
    {"Q4_0", 2, WT_Q4_0}, {"Q4_K_M", 15, WT_Q4_K}, {"Q5_K_M", 17, WT_Q5_K}, {"Q6_K", 18, WT_Q6_K},
};

#define N_FTYPES (sizeof ftypes / sizeof ftypes[0])

const ftype *ftype_find(const char *name)
{
    for (size_t i = 0; i < N_FTYPES; i++)
        if (strcasecmp(ftypes[i].name, name) == 0)
            return &ftypes[i];
    return NULL;
}

const ftype *ftype_by_id(uint64_t id)
{
    for (size_t i = 0; i < N_FTYPES; i++)
        if (ftypes[i].id == id)
            return &ftypes[i];
    return NULL;
}

/* The table's names, joined once (the longest is 6 characters; a name cut
 * short by the buffer would fail test_ftype's check of every entry). */
static char names[N_FTYPES * 16];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_build(void)
{
    size_t len = 0;
    for (size_t i = 0; i < N_FTYPES && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                ftypes[i].name);
}

const char *ftype_names(void)
{
    pthread_once(&names_once, names_build);
    return names;
}

/* N of "blk.N.", or -1. */
static int block_of(const char *name)
{
    int layer = -1;
    return sscanf(name, "blk.%d.", &layer) == 1 ? layer : -1;
}

int ftype_name_order(const char *a, const char *b)
{
    int la = block_of(a), lb = block_of(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

void ftype_plan_init(ftype_plan *p, const ftype *ft, int n_layers, int n_heads, int n_kv_heads,
                     const char *const *names, int n_tensors)
{
    *p = (ftype_plan){.ft = ft, .n_layers = n_layers};
    /* llama.cpp's model type 70B: 80 layers, fewer KV heads than heads. */
    p->is_70b = n_layers == 80 && n_heads != n_kv_heads;
    for (int i = 0; i < n_tensors; i++) {
        if (strstr(names[i], "attn_v.weight"))
            p->n_attn_v++;
        else if (strcmp(names[i], "output.weight") == 0)
            p->has_output = 1;
    }
}

/* llama.cpp quantizes weight matrices only: not vectors, not norms. */
static int is_quantized_tensor(const char *name, int n_dims)
{
    return ends_with(name, "weight") && n_dims >= 2 && !strstr(name, "_norm.weight");
}

static int block_of_type(uint32_t type)
{
    return wtype_get(type)->block;
}

/* The first, the last eighth of the layers, and every third between. */
static int use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static int is_k_mix(const ftype *ft)
{
    return ft->id == 15 || ft->id == 17; /* Q4_K_M, Q5_K_M */
}

/* The mix's choice before checking that the rows fit it. */
static uint32_t mix_type(ftype_plan *p, const char *name, uint64_t ne0)
{
    uint32_t t = p->ft->base;
    if (strcmp(name, "output.weight") == 0 ||
        (!p->has_output && strcmp(name, "token_embd.weight") == 0)) {
        if (ne0 % (uint64_t)block_of_type(t) != 0)
            return WT_Q8_0;
        return t == WT_Q8_0 ? t : WT_Q6_K;
    }
    if (strstr(name, "attn_v.weight")) {
        if (is_k_mix(p->ft) && use_more_bits(p->i_attn_v, p->n_attn_v))
            t = WT_Q6_K;
        /* One KV head per eight query heads makes attn_v small: more bits cost little. */
        if (p->is_70b && t == WT_Q4_K)
            t = WT_Q5_K;
        p->i_attn_v++;
    } else if (strstr(name, "ffn_down")) {
        if (is_k_mix(p->ft) && use_more_bits(p->i_ffn_down, p->n_layers))
            t = WT_Q6_K;
        p->i_ffn_down++;
    }
    return t;
}

int ftype_plan_next(ftype_plan *p, const char *name, uint32_t src_type, int n_dims, uint64_t ne0,
                    uint32_t *type, char *err, size_t errlen)
{
    if (!is_quantized_tensor(name, n_dims)) {
        *type = src_type;
        return 0;
    }
    uint32_t base = p->ft->base, t = base;
    if (block_of_type(base) > 1)
        t = mix_type(p, name, ne0);
    if (ne0 % (uint64_t)block_of_type(t) == 0) {
        *type = t;
        return 0;
    }
    if (t == WT_Q8_0 || t == WT_Q4_0) {
        snprintf(err, errlen,
                 "tensor '%s': rows of %llu values are not a multiple of %s's block of %d, and "
                 "llama.cpp has no fallback from %s (F16 or BF16 can hold any row)",
                 name, (unsigned long long)ne0, wtype_name(t), block_of_type(t), wtype_name(t));
        return -1;
    }
    *type = ne0 % (uint64_t)block_of_type(WT_Q8_0) == 0 ? WT_Q8_0 : WT_F16;
    return 0;
}
