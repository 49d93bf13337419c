/* model_int.h: what model.c (llama2.c checkpoints, synthetic models) and
 * model_gguf.c (GGUF files) share: the model itself. */
#ifndef MODEL_INT_H
#define MODEL_INT_H

#include <stddef.h>

#include "gguf.h"
#include "gguf_llama.h"
#include "model.h"
#include "weights.h"

struct model {
    model_config cfg;
    char *name;
    const char *format;
    char fingerprint[65];
    char types[128]; /* model_weight_types */
    wmat embedding;
    const float *rms_final;
    wmat classifier;
    const float *rope_freqs;
    layer_weights *layers; /* [n_layers]; a GGUF stage fills its own only */
    void *map;             /* a checkpoint file's mapping, or NULL */
    size_t map_size;
    float *owned; /* synthetic weights (an anonymous mapping), or NULL */
    size_t owned_size;
    gguf *file;        /* a GGUF model's file, or NULL */
    gguf_llama *stage; /* its description for the layers loaded */
};

/* model_gguf.c */
int model_gguf_load(model *m, const char *path, int first, int last, char *err, size_t errlen);
int model_gguf_probe(const char *path, model_config *out, char *err, size_t errlen);
size_t model_gguf_stage_bytes(const gguf *g, const model_config *c, int first, int last);
int model_gguf_probe_bytes(const char *path, model_config *cfg, size_t *embed_bytes, size_t *layers,
                           int max_layers, size_t *out_bytes, char *err, size_t errlen);

#endif
