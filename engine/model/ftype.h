/* ftype.h: llama.cpp's model file types (llama_ftype, GGUF's
 * general.file_type) and the weight type each tensor gets in one, as
 * llama-quantize chooses it without an importance matrix.
 *
 * A file type names a mix, not one type: in Q4_K_M most matrices are
 * Q4_K, but attn_v and ffn_down of the "use more bits" layers (the first
 * and last eighth, and every third between) and the output matrix are
 * Q6_K. Norm vectors and other one-dimensional tensors keep their type.
 *
 * Rows whose length is not a multiple of the chosen type's block fall
 * back as llama.cpp does: Q6_K to Q8_0, and to F16 when Q8_0 does not fit
 * either. llama.cpp falls back from Q4_K to Q5_0 and from Q5_K to Q5_1,
 * types inferd does not run: Q8_0 takes their place (more bits, never
 * fewer), then F16 as above. Q8_0 and Q4_0 have no fallback in llama.cpp,
 * so a row they cannot hold is refused.
 */
#ifndef FTYPE_H
#define FTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ftype {
    const char *name; /* "Q4_K_M" */
    uint32_t id;      /* llama_ftype: general.file_type */
    uint32_t base;    /* the wtype of most matrices */
} ftype;

/* By name (case as listed in ftype_names), or NULL. */
const ftype *ftype_find(const char *name);
/* By general.file_type, or NULL for the ones not listed. */
const ftype *ftype_by_id(uint64_t id);
/* Every file type's name, in the table's order, joined by ", " (for
 * messages listing the choices). */
const char *ftype_names(void);

/* The order llama-quantize writes tensors in: the ones outside blocks
 * first, then block by block ("blk.N."), by name within each. A qsort-style
 * comparison of two tensor names. */
int ftype_name_order(const char *a, const char *b);

/* The choice for one file: tensors are asked for in the order they are
 * written (llama.cpp counts attn_v and ffn_down tensors as it meets them). */
typedef struct ftype_plan {
    const ftype *ft;
    int n_layers;
    int n_attn_v;   /* attn_v tensors in the file */
    int has_output; /* output.weight in the file (else token_embd is the output) */
    int is_70b;     /* llama.cpp's LLM_TYPE_70B: 80 layers with grouped-query attention */
    int i_attn_v, i_ffn_down;
} ftype_plan;

/* names: every tensor of the file. */
void ftype_plan_init(ftype_plan *p, const ftype *ft, int n_layers, int n_heads, int n_kv_heads,
                     const char *const *names, int n_tensors);

/* The type the next tensor is written in: src_type when it is kept (a
 * vector, a norm), else the mix's choice for its name and row length ne0.
 * 0, or -1 with err naming the tensor when no type can hold its rows. */
int ftype_plan_next(ftype_plan *p, const char *name, uint32_t src_type, int n_dims, uint64_t ne0,
                    uint32_t *type, char *err, size_t errlen);

#endif
