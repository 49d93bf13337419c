/* model_gguf.c: a model from a GGUF file (see model.h).
 *
 * gguf.c maps and checks the file; gguf_llama.c checks the llama
 * architecture's keys and the tensors of the layers asked for. Here those
 * become the engine's views: every matrix stays in the file's blocks, so
 * RSS grows only by the pages of the tensors a stage computes with.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_int.h"
#include "wtype.h"

static const char gguf_magic[4] = {'G', 'G', 'U', 'F'};

int model_is_gguf(const char *spec)
{
    if (!spec)
        return 0;
    int fd = open(spec, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char magic[4];
    ssize_t got = pread(fd, magic, sizeof magic, 0);
    close(fd);
    return got == (ssize_t)sizeof magic && memcmp(magic, gguf_magic, sizeof magic) == 0;
}

/* The file's sha256, read with pread into a small buffer: hashing through
 * the mapping would make every page of the file resident in this process,
 * while a stage should hold only its own tensors. */
static int file_sha256(const char *path, char out[65], char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    int rc = -1;
    if (!ctx || !buf || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "%s: out of memory for its fingerprint", path);
        goto done;
    }
    for (off_t off = 0;;) {
        ssize_t n = pread(fd, buf, CHUNK, off);
        if (n < 0) {
            snprintf(err, errlen, "%s: reading for its fingerprint: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(ctx, buf, (size_t)n);
        off += n;
    }
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    for (unsigned i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    rc = 0;
done:
    free(buf);
    EVP_MD_CTX_free(ctx);
    close(fd);
    return rc;
}

static model_config config_of(const gguf_llama_config *g)
{
    return (model_config){
        .dim = g->dim,
        .hidden_dim = g->hidden_dim,
        .n_layers = g->n_layers,
        .n_heads = g->n_heads,
        .n_kv_heads = g->n_kv_heads,
        .head_dim = g->head_dim,
        .vocab_size = g->vocab_size,
        .seq_len = g->ctx_len,
        .shared_classifier = g->tied,
        .norm_eps = g->norm_eps,
        .rope_base = g->rope_base,
        .rope_dim = g->rope_dim,
    };
}

static wmat mat_of(const gguf_llama_view *v)
{
    return (wmat){.type = v->type,
                  .data = v->data,
                  .rows = (int)v->rows,
                  .cols = (int)v->cols,
                  .row_bytes = v->row_bytes};
}

/* llama.cpp's names of the file types (general.file_type, its
 * llama_ftype), for the ones the engine runs. */
static const char *ftype_name(uint64_t ftype)
{
    switch (ftype) {
    case 0:
        return "F32";
    case 1:
        return "F16";
    case 2:
        return "Q4_0";
    case 7:
        return "Q8_0";
    case 15:
        return "Q4_K_M";
    case 17:
        return "Q5_K_M";
    case 18:
        return "Q6_K";
    case 32:
        return "BF16";
    default:
        return NULL;
    }
}

/* ggml's spelling of a type: lower case but for the K ("q4_K", "f32"). */
static void ggml_spelling(uint32_t type, char *out, size_t len)
{
    snprintf(out, len, "%s", wtype_name(type));
    for (char *p = out; *p; p++)
        if (*p >= 'A' && *p <= 'Z' && *p != 'K')
            *p = (char)(*p - 'A' + 'a');
}

/* "Q4_K_M: q4_K 25, q6_K 5, f32 9": every tensor of the file, by type. */
static void describe_types(const gguf *g, char *out, size_t len)
{
    int64_t count[WT_ID_MAX] = {0};
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        uint32_t t = gguf_tensor_at(g, i)->type;
        if (t < WT_ID_MAX)
            count[t]++;
    }
    char list[96] = "";
    size_t used = 0;
    for (uint32_t t = 0; t < WT_ID_MAX && used < sizeof list; t++) {
        if (!count[t])
            continue;
        char name[16];
        ggml_spelling(t, name, sizeof name);
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s %lld", used ? ", " : "",
                                 name, (long long)count[t]);
    }
    uint64_t ftype;
    const char *fname =
        gguf_get_u64(g, "general.file_type", &ftype, NULL, 0) == 0 ? ftype_name(ftype) : NULL;
    snprintf(out, len, "%s%s%s", fname ? fname : "", fname ? ": " : "", list);
}

int model_gguf_load(model *m, const char *path, int first, int last, char *err, size_t errlen)
{
    m->format = "gguf";
    gguf_llama_config c;
    if (gguf_open(&m->file, path, err, errlen) != 0 ||
        gguf_llama_config_read(m->file, &c, err, errlen) != 0)
        return -1;
    if (last < 0)
        last = c.n_layers;
    if (first < 0 || first >= last || last > c.n_layers) {
        snprintf(err, errlen, "%s: layers %d:%d: expected 0 <= first < last <= %d", path, first,
                 last, c.n_layers);
        return -1;
    }
    if (gguf_llama_open(&m->stage, m->file, first, last, err, errlen) != 0)
        return -1;
    m->cfg = config_of(&c);
    m->layers = calloc((size_t)c.n_layers, sizeof *m->layers);
    if (!m->layers) {
        snprintf(err, errlen, "%s: out of memory for %d layer views", path, c.n_layers);
        return -1;
    }
    for (int l = first; l < last; l++) {
        const gguf_llama_layer *g = &m->stage->layers[l - first];
        m->layers[l] = (layer_weights){
            .rms_att = g->attn_norm.data,
            .wq = mat_of(&g->wq),
            .wk = mat_of(&g->wk),
            .wv = mat_of(&g->wv),
            .wo = mat_of(&g->wo),
            .rms_ffn = g->ffn_norm.data,
            .w1 = mat_of(&g->w_gate),
            .w2 = mat_of(&g->w_down),
            .w3 = mat_of(&g->w_up),
        };
    }
    m->embedding = mat_of(&m->stage->token_embd);
    m->classifier = mat_of(&m->stage->output);
    m->rms_final = m->stage->output_norm.data;
    m->rope_freqs = m->stage->rope_freqs.data;
    describe_types(m->file, m->types, sizeof m->types);
    return file_sha256(path, m->fingerprint, err, errlen);
}

int model_gguf_probe(const char *path, model_config *out, char *err, size_t errlen)
{
    gguf *g;
    if (gguf_open(&g, path, err, errlen) != 0)
        return -1;
    gguf_llama_config c;
    int rc = gguf_llama_config_read(g, &c, err, errlen);
    if (rc == 0)
        *out = config_of(&c);
    gguf_close(g);
    return rc;
}

static size_t tensor_bytes(const gguf *g, const char *name)
{
    const gguf_tensor *t = gguf_tensor_find(g, name);
    return t ? t->bytes : 0;
}

/* Bytes of layer l's tensors. */
static size_t layer_bytes(const gguf *g, int l)
{
    static const char *const per_layer[] = {
        "attn_norm", "attn_q",   "attn_k",   "attn_v", "attn_output",
        "ffn_norm",  "ffn_gate", "ffn_down", "ffn_up",
    };
    size_t bytes = 0;
    for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, per_layer[i]);
        bytes += tensor_bytes(g, name);
    }
    return bytes;
}

/* What only the last stage holds: the final norm and the classifier (the
 * embedding table again when tied). Llama 3's few hundred bytes of RoPE
 * factors, which every stage maps, are left out so that a stage's bytes
 * are the sum model.h describes. */
static size_t tail_bytes(const gguf *g, const model_config *c)
{
    return tensor_bytes(g, "output_norm.weight") +
           tensor_bytes(g, c->shared_classifier ? "token_embd.weight" : "output.weight");
}

size_t model_gguf_stage_bytes(const gguf *g, const model_config *c, int first, int last)
{
    size_t bytes = 0;
    for (int l = first; l < last; l++)
        bytes += layer_bytes(g, l);
    int head = first == 0, tail = last == c->n_layers;
    if (head)
        bytes += tensor_bytes(g, "token_embd.weight");
    if (tail && !(head && c->shared_classifier))
        bytes += tail_bytes(g, c);
    else if (tail)
        bytes += tensor_bytes(g, "output_norm.weight");
    return bytes;
}

int model_gguf_probe_bytes(const char *path, model_config *cfg, size_t *embed_bytes, size_t *layers,
                           int max_layers, size_t *out_bytes, char *err, size_t errlen)
{
    gguf *g;
    if (gguf_open(&g, path, err, errlen) != 0)
        return -1;
    gguf_llama_config c;
    int rc = gguf_llama_config_read(g, &c, err, errlen);
    if (rc == 0 && c.n_layers > max_layers) {
        snprintf(err, errlen, "%s: %d layers, more than the %d the caller has room for", path,
                 c.n_layers, max_layers);
        rc = -1;
    }
    if (rc == 0) {
        *cfg = config_of(&c);
        *embed_bytes = tensor_bytes(g, "token_embd.weight");
        for (int l = 0; l < c.n_layers; l++)
            layers[l] = layer_bytes(g, l);
        *out_bytes = tail_bytes(g, cfg);
    }
    gguf_close(g);
    return rc;
}
