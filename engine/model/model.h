/* model.h: a Llama-architecture model's shape and weights.
 *
 * Sources (the `spec` string):
 *   NULL or "embedded"   stories260K, linked into the binary
 *   "synth:110m"         dim 768, hidden 2048, 12 layers, 12 heads, 12 KV heads, vocab 32000
 *   "synth:1b"           dim 2048, hidden 5632, 16 layers, 32 heads, 8 KV heads, vocab 32000
 *   "synth:dim=D,hidden=H,layers=L,heads=N,kv_heads=K,vocab=V[,seq_len=S][,seed=X]"
 *                        explicit dims; a named shape may also take ",seed=X"
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
    int head_dim;          /* dim / n_heads */
    int vocab_size;
    int seq_len;           /* trained context: reported, never a limit */
    int shared_classifier; /* 1: logits use the token embedding table */
} model_config;

typedef struct model model;

int model_load(model **out, const char *spec, char *err, size_t errlen);
void model_free(model *m);

const model_config *model_config_of(const model *m);

/* "stories260K", "synth:110m", "synth:dim=...", or the file's base name. */
const char *model_name(const model *m);

/* sha256 of the checkpoint bytes, or of the synthetic spec and seed:
 * 64 lowercase hex characters. Equal fingerprints mean equal weights. */
const char *model_fingerprint(const model *m);

/* The shape `spec` names, without loading weights: a checkpoint's header
 * is read and checked against the file's size, a synthetic spec is parsed.
 * Lets a planner size a model that would not fit in this process. */
int model_probe(const char *spec, model_config *out, char *err, size_t errlen);

/* Bytes of weights a stage holding layers [first, last) uses: its layers,
 * plus the embedding table on the first stage and the final norm and
 * classifier on the last (the embedding table again when the classifier is
 * shared, unless the stage is also the first). 0 for an invalid range. */
size_t model_stage_bytes(const model *m, int first, int last);

#endif
