/* wtype.h: the element types a model's weight tensors come in.
 *
 * The numbering is GGUF's (ggml's `ggml_type`), so a type read from a file
 * is used as it is. Block-quantized types store `block` consecutive values
 * of a row in `block_bytes` bytes; a row's length must be a multiple of
 * `block`. The layouts themselves (and the arithmetic on them) live in
 * engine/compute: this header is only what a file reader needs to size and
 * check a tensor.
 */
#ifndef WTYPE_H
#define WTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum wtype {
    WT_F32 = 0,
    WT_F16 = 1,
    WT_Q4_0 = 2,
    WT_Q8_0 = 8,
    WT_Q4_K = 12,
    WT_Q5_K = 13,
    WT_Q6_K = 14,
    WT_BF16 = 30,
} wtype;

/* Any value a file may hold, supported or not. */
#define WT_ID_MAX 64

typedef struct wtype_info {
    const char *name; /* "F32", "Q4_K", ... */
    int block;        /* values per block */
    int block_bytes;  /* bytes per block */
} wtype_info;

/* The facts of a supported type, or NULL (for any other id). */
const wtype_info *wtype_get(uint32_t id);

/* ggml's name for any id it defines ("Q2_K", "IQ4_XS", ...), supported or
 * not, so an error can say what a file holds; "unknown" otherwise. */
const char *wtype_name(uint32_t id);

/* Bytes of a row of n values; 0 when the type is unsupported or n is not
 * a multiple of its block. */
size_t wtype_row_bytes(uint32_t id, uint64_t n);

#endif
