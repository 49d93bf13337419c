/* model.h: a Llama-architecture model's shape and weights.
 *
 * Sources (the `spec` string):
 *   NULL or "embedded"   stories260K, linked into the binary
 *   "synth:110m"         dim 768, hidden 2048, 12 layers, 12 heads, 12 KV heads, vocab 32000
 *   "synth:1b"           dim 2048, hidden 5632, 16 layers, 32 heads, 8 KV heads, vocab 32000
 *   "synth:dim=D,hidden=H,layers=L,heads=N,kv_heads=K,vocab=V[,seq_len=S][,seed=X]"
 *                        explicit dims; a named shape may also take ",seed=X"
 *   a GGUF file          architecture llama, its weights in their file types
 *                        (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)
 *   anything else        a llama2.c checkpoint file (version 0 header)
 *
 * Synthetic weights are deterministic from (shape, seed) and scaled so
 * activations stay finite at any context length; their classifier is shared
 * with the token embedding, as in llama2.c's models. seq_len defaults to 2048
 * and seed to 0.
 */
#ifndef MODEL_H
#define MODEL_H

#include <stddef.h>

typedef struct model_config {
    int dim;
    int hidden_dim;
    int n_layers;
    int n_heads;
    int n_kv_heads;
    int head_dim; /* dim / n_heads */
    int vocab_size;
    int seq_len;           /* trained context: reported, never a limit */
    int shared_classifier; /* 1: logits use the token embedding table */
    float norm_eps;        /* RMSNorm epsilon (llama2.c: 1e-5) */
    float rope_base;       /* RoPE theta (llama2.c: 10000) */
    int rope_dim;          /* values of a head that rotate (llama2.c: head_dim) */
} model_config;

typedef struct model model;

int model_load(model **out, const char *spec, char *err, size_t errlen);
/* A pipeline stage's share: only the tensors of layers [first, last)
 * (last -1: to the end), plus the embeddings on the first stage and the
 * final norm and classifier on the last, are checked and paged in; a GGUF
 * file's other tensors are never touched. model_load is the whole model. */
int model_load_stage(model **out, const char *spec, int first, int last, char *err, size_t errlen);
void model_free(model *m);

const model_config *model_config_of(const model *m);

/* "stories260K", "synth:110m", "synth:dim=...", or the file's base name. */
const char *model_name(const model *m);

/* 1 when spec names a file that starts with GGUF's magic. */
int model_is_gguf(const char *spec);

/* "llama2.c", "gguf" or "synthetic". */
const char *model_format(const model *m);

/* A GGUF file's tensor types and how many of each, with the file type's
 * name when the file gives one ("Q4_K_M: q4_K 25, q6_K 5, f32 9"); "f32"
 * for the other formats. */
const char *model_weight_types(const model *m);

/* sha256 of the checkpoint or GGUF file, or of the synthetic spec and seed:
 * 64 lowercase hex characters. Equal fingerprints mean equal weights. */
const char *model_fingerprint(const model *m);

/* The shape `spec` names, without loading weights: a checkpoint's header
 * is read and checked against the file's size, a synthetic spec is parsed.
 * Lets a planner size a model that would not fit in this process. */
int model_probe(const char *spec, model_config *out, char *err, size_t errlen);

/* The GGUF file a model was loaded from (its tokenizer lives there), or
 * NULL. */
struct gguf;
const struct gguf *model_gguf(const model *m);

/* Bytes of weights a stage holding layers [first, last) uses: its layers,
 * plus the embedding table on the first stage and the final norm and
 * classifier on the last (the embedding table again when the classifier is
 * shared, unless the stage is also the first). 0 for an invalid range. */
size_t model_stage_bytes(const model *m, int first, int last);

/* Of those bytes, the ones on pages not resident yet: a mapped file's
 * tensors until a step first reads them (model_resident.c). */
size_t model_unpaged_bytes(const model *m, int first, int last);

/* The same bytes without loading weights, for a planner sizing a model
 * this process never loads: the shape `spec` names (as model_probe) into
 * *cfg, and
 *   *embed_bytes     what only the first stage holds (the token embedding)
 *   layer_bytes[l]   layer l, for l < cfg->n_layers (room for max_layers)
 *   *out_bytes       what only the last stage holds (the final norm and the
 *                    classifier, which is the embedding table again when
 *                    shared)
 * so that model_stage_bytes(first, last) is the sum of its layers, plus
 * embed_bytes when first == 0, plus out_bytes when last == n_layers, less
 * embed_bytes once when the stage is both and the classifier is shared. */
int model_probe_bytes(const char *spec, model_config *cfg, size_t *embed_bytes, size_t *layer_bytes,
                      int max_layers, size_t *out_bytes, char *err, size_t errlen);

#endif
