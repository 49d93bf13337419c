/* gguf_llama.c: the llama description behind gguf_llama.h. */
#include "gguf_llama.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wtype.h"

#define TENSORS_PER_LAYER 9
#define DIM_MAX (1 << 30) /* any larger count is a corrupt file */

/* Fills err with the file's name and the message; returns -1. */
static int fail(const gguf *g, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s", gguf_name(g), msg);
    return -1;
}

/* The integer at `key` into *out, in [lo, DIM_MAX]; `def` when absent, or
 * an error when def < 0 (required). */
static int get_int(const gguf *g, const char *key, int def, int lo, int *out, char *err,
                   size_t errlen)
{
    uint64_t v = (uint64_t)def;
    int rc = gguf_get_u64(g, key, &v, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1 && def < 0)
        return fail(g, err, errlen, "key '%s' is missing", key);
    if (v < (uint64_t)lo || v > DIM_MAX)
        return fail(g, err, errlen, "key '%s' is %llu, expected %d to %d", key,
                    (unsigned long long)v, lo, DIM_MAX);
    *out = (int)v;
    return 0;
}

/* The float at `key`, positive and finite; `def` when absent. */
static int get_pos_float(const gguf *g, const char *key, double def, float *out, char *err,
                         size_t errlen)
{
    double v = def;
    if (gguf_get_f64(g, key, &v, err, errlen) < 0)
        return -1;
    if (!(v > 0 && isfinite((float)v)))
        return fail(g, err, errlen, "key '%s' is %g, expected a positive float", key, v);
    *out = (float)v;
    return 0;
}

static int check_arch(const gguf *g, char *err, size_t errlen)
{
    const char *s;
    size_t len;
    int rc = gguf_get_str(g, "general.architecture", &s, &len, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1)
        return fail(g, err, errlen, "key 'general.architecture' is missing, expected 'llama'");
    if (len != 5 || memcmp(s, "llama", 5) != 0)
        return fail(g, err, errlen, "architecture is '%.*s', expected 'llama'",
                    (int)(len > 64 ? 64 : len), s);
    return 0;
}

/* "[a, b]": a tensor's shape as GGUF lists it. */
static void fmt_shape(char *buf, size_t len, int n_dims, const uint64_t *ne)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < n_dims && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)ne[d]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* Tensor `name` and its view, if it has shape [cols, rows] (rows 0: the
 * vector [cols], which must be F32); NULL otherwise. */
static const gguf_tensor *take(const gguf *g, const char *name, uint64_t cols, uint64_t rows,
                               gguf_llama_view *v, char *err, size_t errlen)
{
    const uint64_t want[4] = {cols, rows ? rows : 1, 1, 1};
    char expected[64], found[96];
    fmt_shape(expected, sizeof expected, rows ? 2 : 1, want);
    const gguf_tensor *t = gguf_tensor_find(g, name);
    if (!t) {
        fail(g, err, errlen, "tensor '%s' %s is missing", name, expected);
        return NULL;
    }
    if (memcmp(t->ne, want, sizeof want) != 0) {
        fmt_shape(found, sizeof found, t->n_dims, t->ne);
        fail(g, err, errlen, "tensor '%s' has shape %s, expected %s", name, found, expected);
        return NULL;
    }
    if (!rows && t->type != WT_F32) {
        fail(g, err, errlen, "tensor '%s' is %s, expected F32 (norm weights are read as floats)",
             name, wtype_name(t->type));
        return NULL;
    }
    *v = (gguf_llama_view){t->type, t->data, (int64_t)want[1], (int64_t)cols,
                           wtype_row_bytes(t->type, cols)};
    return t;
}

/* The sizes of the layers and their heads, and how they relate. */
static int read_shape(const gguf *g, gguf_llama_config *c, char *err, size_t errlen)
{
    if (get_int(g, "llama.embedding_length", -1, 1, &c->dim, err, errlen) < 0 ||
        get_int(g, "llama.feed_forward_length", -1, 1, &c->hidden_dim, err, errlen) < 0 ||
        get_int(g, "llama.block_count", -1, 1, &c->n_layers, err, errlen) < 0 ||
        get_int(g, "llama.attention.head_count", -1, 1, &c->n_heads, err, errlen) < 0 ||
        get_int(g, "llama.attention.head_count_kv", c->n_heads, 1, &c->n_kv_heads, err, errlen) <
            0 ||
        get_int(g, "llama.context_length", -1, 1, &c->ctx_len, err, errlen) < 0)
        return -1;
    if (c->dim % c->n_heads != 0 || (c->dim / c->n_heads) % 2 != 0)
        return fail(g, err, errlen,
                    "llama.embedding_length %d over llama.attention.head_count %d heads, "
                    "expected an even head size",
                    c->dim, c->n_heads);
    if (c->n_heads % c->n_kv_heads != 0)
        return fail(g, err, errlen,
                    "llama.attention.head_count %d is not a multiple of "
                    "llama.attention.head_count_kv %d",
                    c->n_heads, c->n_kv_heads);
    /* Every layer has tensors of its own: a block count beyond them is
     * corrupt (and must not size an allocation). */
    if (c->n_layers > gguf_n_tensors(g) / TENSORS_PER_LAYER)
        return fail(g, err, errlen,
                    "llama.block_count %d needs %lld tensors or more, the file "
                    "holds %lld",
                    c->n_layers, (long long)c->n_layers * TENSORS_PER_LAYER,
                    (long long)gguf_n_tensors(g));
    c->head_dim = c->dim / c->n_heads;
    c->kv_dim = c->n_kv_heads * c->head_dim;
    return 0;
}

static int read_rope_norm(const gguf *g, gguf_llama_config *c, char *err, size_t errlen)
{
    if (get_int(g, "llama.rope.dimension_count", c->head_dim, 2, &c->rope_dim, err, errlen) < 0 ||
        get_pos_float(g, "llama.rope.freq_base", 10000.0, &c->rope_base, err, errlen) < 0 ||
        get_pos_float(g, "llama.attention.layer_norm_rms_epsilon", 1e-5, &c->norm_eps, err,
                      errlen) < 0)
        return -1;
    if (c->rope_dim > c->head_dim || c->rope_dim % 2 != 0)
        return fail(g, err, errlen,
                    "llama.rope.dimension_count is %d, expected an even number up to the head "
                    "size %d",
                    c->rope_dim, c->head_dim);
    c->rope_freqs = gguf_tensor_find(g, "rope_freqs.weight") != NULL;
    return 0;
}

/* The vocabulary is what the embedding table holds. */
static int read_vocab(const gguf *g, gguf_llama_config *c, char *err, size_t errlen)
{
    const gguf_tensor *emb = gguf_tensor_find(g, "token_embd.weight");
    if (!emb)
        return fail(g, err, errlen, "tensor 'token_embd.weight' [%d, vocab] is missing", c->dim);
    if (emb->ne[0] != (uint64_t)c->dim || emb->ne[1] > DIM_MAX || emb->ne[2] != 1 ||
        emb->ne[3] != 1) {
        char found[96];
        fmt_shape(found, sizeof found, emb->n_dims, emb->ne);
        return fail(g, err, errlen, "tensor 'token_embd.weight' has shape %s, expected [%d, vocab]",
                    found, c->dim);
    }
    c->vocab_size = (int)emb->ne[1];
    c->tied = gguf_tensor_find(g, "output.weight") == NULL;
    return 0;
}

int gguf_llama_config_read(const gguf *g, gguf_llama_config *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (check_arch(g, err, errlen) < 0 || read_shape(g, c, err, errlen) < 0 ||
        read_rope_norm(g, c, err, errlen) < 0)
        return -1;
    return read_vocab(g, c, err, errlen);
}

enum { NONE, DIM, KV, HIDDEN };

/* A layer's tensors: blk.N.<name>.weight of shape [cols, rows]. */
static const struct {
    const char *name;
    size_t at;
    int cols, rows;
} layer_tensors[TENSORS_PER_LAYER] = {
    {"attn_norm", offsetof(gguf_llama_layer, attn_norm), DIM, NONE},
    {"attn_q", offsetof(gguf_llama_layer, wq), DIM, DIM},
    {"attn_k", offsetof(gguf_llama_layer, wk), DIM, KV},
    {"attn_v", offsetof(gguf_llama_layer, wv), DIM, KV},
    {"attn_output", offsetof(gguf_llama_layer, wo), DIM, DIM},
    {"ffn_norm", offsetof(gguf_llama_layer, ffn_norm), DIM, NONE},
    {"ffn_gate", offsetof(gguf_llama_layer, w_gate), DIM, HIDDEN},
    {"ffn_up", offsetof(gguf_llama_layer, w_up), DIM, HIDDEN},
    {"ffn_down", offsetof(gguf_llama_layer, w_down), HIDDEN, DIM},
};

/* Takes the view for the stage: counts its bytes and asks for its pages. */
static int use(const gguf *g, gguf_llama *m, const char *name, uint64_t cols, uint64_t rows,
               gguf_llama_view *v, char *err, size_t errlen)
{
    const gguf_tensor *t = take(g, name, cols, rows, v, err, errlen);
    if (!t)
        return -1;
    m->weight_bytes += t->bytes;
    gguf_willneed(g, t);
    return 0;
}

static int take_layer(const gguf *g, gguf_llama *m, int l, char *err, size_t errlen)
{
    const uint64_t size[] = {[NONE] = 0,
                             [DIM] = (uint64_t)m->c.dim,
                             [KV] = (uint64_t)m->c.kv_dim,
                             [HIDDEN] = (uint64_t)m->c.hidden_dim};
    for (int i = 0; i < TENSORS_PER_LAYER; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, layer_tensors[i].name);
        gguf_llama_view *v =
            (gguf_llama_view *)((char *)&m->layers[l - m->first] + layer_tensors[i].at);
        if (use(g, m, name, size[layer_tensors[i].cols], size[layer_tensors[i].rows], v, err,
                errlen) < 0)
            return -1;
    }
    return 0;
}

/* Embeddings for the first stage, norm and classifier for the last, the
 * RoPE factors for any. */
static int take_ends(const gguf *g, gguf_llama *m, char *err, size_t errlen)
{
    const gguf_llama_config *c = &m->c;
    int first = m->first == 0, last = m->last == c->n_layers;
    uint64_t dim = (uint64_t)c->dim, vocab = (uint64_t)c->vocab_size;
    if ((first || (last && c->tied)) &&
        use(g, m, "token_embd.weight", dim, vocab, &m->token_embd, err, errlen) < 0)
        return -1;
    if (last && use(g, m, "output_norm.weight", dim, 0, &m->output_norm, err, errlen) < 0)
        return -1;
    if (last && c->tied)
        m->output = m->token_embd;
    else if (last && use(g, m, "output.weight", dim, vocab, &m->output, err, errlen) < 0)
        return -1;
    if (c->rope_freqs && use(g, m, "rope_freqs.weight", (uint64_t)c->rope_dim / 2, 0,
                             &m->rope_freqs, err, errlen) < 0)
        return -1;
    return 0;
}

int gguf_llama_open(gguf_llama **out, const gguf *g, int first, int last, char *err, size_t errlen)
{
    *out = NULL;
    gguf_llama *m = calloc(1, sizeof *m);
    if (!m)
        return fail(g, err, errlen, "out of memory");
    if (gguf_llama_config_read(g, &m->c, err, errlen) < 0)
        goto refuse;
    if (first < 0 || first >= last || last > m->c.n_layers) {
        fail(g, err, errlen, "layers [%d, %d) are not a range of the model's %d", first, last,
             m->c.n_layers);
        goto refuse;
    }
    m->first = first;
    m->last = last;
    m->layers = calloc((size_t)(last - first), sizeof *m->layers);
    if (!m->layers) {
        fail(g, err, errlen, "out of memory for %d layers", last - first);
        goto refuse;
    }
    for (int l = first; l < last; l++)
        if (take_layer(g, m, l, err, errlen) < 0)
            goto refuse;
    if (take_ends(g, m, err, errlen) < 0)
        goto refuse;
    *out = m;
    return 0;
refuse:
    gguf_llama_free(m);
    return -1;
}

void gguf_llama_free(gguf_llama *m)
{
    if (!m)
        return;
    free(m->layers);
    free(m);
}
