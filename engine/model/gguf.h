/* gguf.h: reading GGUF files (llama.cpp's model format), versions 2 and 3.
 *
 * A GGUF file is a header (magic "GGUF", version, tensor count, key/value
 * count), typed key/value metadata, tensor descriptions (name, shape, type,
 * offset) and, from the first multiple of `general.alignment` (default 32)
 * after them, the tensor data. All numbers are little endian.
 *
 * gguf_open maps the file read-only and checks all of it against the real
 * file size before anything is allocated for it: every count, length and
 * offset, every tensor's type (engine/model/wtype.h) and byte range. What
 * is returned afterwards points into the mapping and lives until
 * gguf_close. Lookups by key or tensor name are binary searches; the i-th
 * string of a string array is found in O(1).
 *
 * Every function taking `err` fills it, on failure, with a message naming
 * the file, the key or tensor, and what was expected against what was
 * found.
 */
#ifndef GGUF_H
#define GGUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct gguf gguf;

/* Metadata value types, GGUF's numbering. */
enum gguf_type {
    GGUF_U8 = 0,
    GGUF_I8 = 1,
    GGUF_U16 = 2,
    GGUF_I16 = 3,
    GGUF_U32 = 4,
    GGUF_I32 = 5,
    GGUF_F32 = 6,
    GGUF_BOOL = 7,
    GGUF_STR = 8,
    GGUF_ARR = 9,
    GGUF_U64 = 10,
    GGUF_I64 = 11,
    GGUF_F64 = 12,
};

typedef struct gguf_tensor {
    const char *name;
    uint32_t type;   /* wtype id: only supported types pass gguf_open */
    int n_dims;      /* 1..4 */
    uint64_t ne[4];  /* ne[0] is the row length; unused dims are 1 */
    uint64_t offset; /* from the start of the data section */
    size_t bytes;
    const void *data; /* inside the mapping */
} gguf_tensor;

int gguf_open(gguf **out, const char *path, char *err, size_t errlen);

/* The same from bytes in memory, which the caller keeps alive and owns;
 * `name` stands for the file in messages. */
int gguf_open_mem(gguf **out, const void *data, size_t len, const char *name, char *err,
                  size_t errlen);

void gguf_close(gguf *g);

uint32_t gguf_version(const gguf *g);
const char *gguf_name(const gguf *g); /* the path or name given at open */
const char *gguf_type_name(int type); /* "u32", "string", ...; "?" if none */
/* Bytes of a value of a fixed-size type; 0 for string, array or unknown. */
size_t gguf_type_size(int type);

/* Typed getters: 0 found, 1 absent (out untouched), -1 present with
 * another type or out of range (err says which). The integer getter takes
 * any integer type whose value fits; the float getter f32 or f64; a bool
 * is true when its byte is not 0. A string is not NUL-terminated. */
int gguf_get_u64(const gguf *g, const char *key, uint64_t *out, char *err, size_t errlen);
int gguf_get_f64(const gguf *g, const char *key, double *out, char *err, size_t errlen);
int gguf_get_bool(const gguf *g, const char *key, int *out, char *err, size_t errlen);
int gguf_get_str(const gguf *g, const char *key, const char **s, size_t *len, char *err,
                 size_t errlen);

/* Arrays: gguf_get_arr gives the element type and count (same returns).
 * Elements by index return 0, or -1 when the key is not an array of a
 * fitting type or i is out of range: gguf_arr_i64 takes integer elements,
 * gguf_arr_f64 integer or float ones, gguf_arr_str string ones. Nested
 * arrays are refused at open. */
int gguf_get_arr(const gguf *g, const char *key, int *elem_type, uint64_t *n, char *err,
                 size_t errlen);
int gguf_arr_i64(const gguf *g, const char *key, uint64_t i, int64_t *out);
int gguf_arr_f64(const gguf *g, const char *key, uint64_t i, double *out);
int gguf_arr_str(const gguf *g, const char *key, uint64_t i, const char **s, size_t *len);

/* Every key/value pair, in file order, as the file encodes it: for copying
 * a file's metadata into another (gguf_write.h). `value` is the encoded
 * value after the type field (for an array: element type, count and
 * elements), `value_bytes` its length; the key is not NUL-terminated. */
typedef struct gguf_kv_raw {
    const char *key;
    size_t key_len;
    int type;
    const void *value;
    size_t value_bytes;
} gguf_kv_raw;

int64_t gguf_n_kv(const gguf *g);
/* 0, or -1 when i is not in 0 .. gguf_n_kv - 1. */
int gguf_kv_at(const gguf *g, int64_t i, gguf_kv_raw *out);

/* Tensors in file order, or by name (NULL when absent). */
int64_t gguf_n_tensors(const gguf *g);
const gguf_tensor *gguf_tensor_at(const gguf *g, int64_t i);
const gguf_tensor *gguf_tensor_find(const gguf *g, const char *name);

/* A pipeline stage maps the whole file but reads only its own tensors:
 * gguf_open marks the data section random-access, so touching one tensor
 * does not read its neighbours in, and the stage asks for its tensors
 * ahead of use with this (madvise WILLNEED; nothing for gguf_open_mem
 * buffers). */
void gguf_willneed(const gguf *g, const gguf_tensor *t);

#endif
