/* weights.h: where a loaded model's tensors are, for the forward pass.
 *
 * Internal to the engine: model.c fills these views, forward.c reads them.
 * Every matrix is row-major [out][in] fp32, as llama2.c stores them, so a
 * projection is out = W x (cblas with W transposed for a batch of rows).
 */
#ifndef WEIGHTS_H
#define WEIGHTS_H

#include "model.h"

typedef struct layer_weights {
    const float *rms_att; /* [dim] */
    const float *wq;      /* [dim][dim] */
    const float *wk;      /* [kv_dim][dim] */
    const float *wv;      /* [kv_dim][dim] */
    const float *wo;      /* [dim][dim] */
    const float *rms_ffn; /* [dim] */
    const float *w1;      /* [hidden_dim][dim] */
    const float *w2;      /* [dim][hidden_dim] */
    const float *w3;      /* [hidden_dim][dim] */
} layer_weights;

const float *model_token_embedding(const model *m); /* [vocab][dim] */
const layer_weights *model_layer(const model *m, int layer);
const float *model_rms_final(const model *m);  /* [dim] */
const float *model_classifier(const model *m); /* [vocab][dim] */

#endif
