/* gguf_llama.h: a llama-architecture model as a GGUF file describes it,
 * and the tensors one pipeline stage (layers [first, last)) computes with.
 *
 * Shapes: GGUF lists ne[0] first, the length of a row, which for a weight
 * matrix is its input dimension. So attn_q.weight [dim, dim] is dim rows
 * of dim values, ffn_down.weight [hidden, dim] is dim rows of hidden
 * values, token_embd.weight [dim, vocab] is one row per token; a view's
 * `cols` is ne[0] and `rows` ne[1].
 *
 * RoPE pairing: for general.architecture "llama", llama.cpp uses
 * LLAMA_ROPE_TYPE_NORM (llama_model_rope_type in src/llama-model.cpp):
 * within each head, ADJACENT values (2i, 2i+1) rotate together by angle
 * pos * rope_base^(-2i / rope_dim), for 2i < rope_dim; values past rope_dim
 * are left as they are. It is llama2.c's and Meta's original pairing.
 * convert_hf_to_gguf.py permutes the rows of Hugging Face's Q and K (whose
 * rotate_half pairs i with i + head_dim/2, NEOX style) back into this
 * order, and convert-llama2c-to-ggml copies llama2.c's already-adjacent
 * rows, so every llama GGUF wants the adjacent pairing; never NEOX.
 * With rope_freqs.weight (Llama 3.1 and later), the angle of pair i is
 * divided by rope_freqs[i].
 *
 * The views point into the gguf's mapping: close the gguf after freeing
 * the description.
 */
#ifndef GGUF_LLAMA_H
#define GGUF_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct gguf_llama_config {
    int dim;
    int hidden_dim;
    int n_layers;
    int n_heads;
    int n_kv_heads;  /* llama.attention.head_count_kv, default n_heads */
    int head_dim;    /* dim / n_heads */
    int kv_dim;      /* n_kv_heads * head_dim */
    int vocab_size;  /* rows of token_embd.weight */
    int ctx_len;     /* llama.context_length: the trained context */
    int rope_dim;    /* values of a head that rotate, default head_dim */
    float rope_base; /* default 10000 */
    float norm_eps;  /* RMSNorm epsilon, default 1e-5 */
    int tied;        /* no output.weight: logits use token_embd.weight */
    int rope_freqs;  /* rope_freqs.weight present */
} gguf_llama_config;

/* A tensor in its file type: rows of `cols` values, row r at
 * data + r * row_bytes. A norm vector is one row of F32. */
typedef struct gguf_llama_view {
    uint32_t type; /* wtype id */
    const void *data;
    int64_t rows, cols;
    size_t row_bytes;
} gguf_llama_view;

typedef struct gguf_llama_layer {
    gguf_llama_view attn_norm, wq, wk, wv, wo;
    gguf_llama_view ffn_norm, w_gate, w_up, w_down;
} gguf_llama_layer;

/* One stage's share. Views it does not need have data NULL: token_embd is
 * the first stage's (and the last's when tied), output_norm and output
 * the last's (output is token_embd's view when tied). */
typedef struct gguf_llama {
    gguf_llama_config c;
    int first, last;
    gguf_llama_layer *layers; /* layers[i] is layer first + i */
    gguf_llama_view token_embd, output_norm, output, rope_freqs;
    size_t weight_bytes; /* the bytes of the tensors above, each counted once */
} gguf_llama;

/* The configuration alone, with its checks (architecture, keys, their
 * relations, token_embd.weight's shape). */
int gguf_llama_config_read(const gguf *g, gguf_llama_config *c, char *err, size_t errlen);

/* The stage holding layers [first, last), 0 <= first < last <= n_layers:
 * every tensor it needs is checked for its exact shape (norms for F32) and
 * its pages requested ahead of use (gguf_willneed). */
int gguf_llama_open(gguf_llama **out, const gguf *g, int first, int last, char *err, size_t errlen);
void gguf_llama_free(gguf_llama *m);

#endif
