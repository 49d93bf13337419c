/* weights.h: where a loaded model's tensors are, for the forward pass.
 *
 * Internal to the engine: model.c fills these views, forward.c reads them.
 * A matrix is `rows` rows of `cols` values in its file's type (wtype.h),
 * row r at data + r * row_bytes: [out][in], as llama2.c and GGUF store
 * them, so a projection is out = W x (cblas with W transposed for a batch
 * of rows). llama2.c checkpoints and synthetic models are all F32; a GGUF
 * file's matrices stay in their quantized blocks, read where mapped.
 * Norm vectors are always fp32.
 */
#ifndef WEIGHTS_H
#define WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

/* model.h's handle; not its include: model.c includes this file. */
typedef struct model model;

typedef struct wmat {
    uint32_t type; /* a wtype id */
    const void *data;
    int rows, cols;
    size_t row_bytes;
} wmat;

typedef struct layer_weights {
    const float *rms_att; /* [dim] */
    wmat wq;              /* [dim][dim] */
    wmat wk;              /* [kv_dim][dim] */
    wmat wv;              /* [kv_dim][dim] */
    wmat wo;              /* [dim][dim] */
    const float *rms_ffn; /* [dim] */
    wmat w1;              /* [hidden_dim][dim], the gate */
    wmat w2;              /* [dim][hidden_dim], down */
    wmat w3;              /* [hidden_dim][dim], up */
} layer_weights;

const wmat *model_token_embedding(const model *m); /* [vocab][dim] */
const layer_weights *model_layer(const model *m, int layer);
const float *model_rms_final(const model *m); /* [dim] */
const wmat *model_classifier(const model *m); /* [vocab][dim] */
/* Llama 3's per-pair RoPE divisors [rope_dim / 2], or NULL. */
const float *model_rope_freqs(const model *m);

#endif
