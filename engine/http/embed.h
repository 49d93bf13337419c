/* embed.h: POST /v1/embeddings, OpenAI's shape (llama.cpp's and vLLM's too).
 *
 *   {"model", "input": "text" | ["text", ..] | [ids] | [[ids], ..],
 *    "encoding_format": "float" | "base64", "dimensions": the model's dim}
 *   -> {"object":"list","data":[{"object":"embedding","index":i,"embedding":[..]}],
 *       "model", "usage":{"prompt_tokens","total_tokens"}}
 *
 * Each input is one `embed` request to the node (engine/PROTOCOL.md), one
 * after another: the mean over the input's positions of the model's final
 * hidden state (after the final norm), which this server L2-normalizes as
 * llama.cpp's does by default. Text gets BOS as a prompt does. An empty
 * input, more than EMBED_INPUTS_MAX inputs, or one longer than the model's
 * context is refused (400). engine/http/README.md lists every field.
 */
#ifndef EMBED_H
#define EMBED_H

#include "gen.h"

#define EMBED_INPUTS_MAX 2048 /* OpenAI's bound */

typedef struct embed_req {
    json_t *inputs; /* an array: each a string or an array of token ids */
    const char *model;
    int base64; /* encoding_format base64: little-endian float32s */
} embed_req;

/* Validates a body (dim: the model's, which `dimensions` must equal).
 * Returns 0 with *out filled (embed_req_free it), or -1 with e filled. */
int embed_parse(const char *body, size_t len, const oai_model *m, int dim, embed_req *out,
                oai_error *e);
void embed_req_free(embed_req *r);

/* The response for vecs[n][dim] (normalized here) and the inputs' tokens
 * (free()); NULL when out of memory. */
char *embed_response(const embed_req *r, float *vecs, int n, int dim, int prompt_tokens);

/* Runs every input on the node and answers: the body (free()), or NULL
 * with e filled. */
char *embed_run(const gen_env *env, const embed_req *r, int dim, oai_error *e);

#endif
