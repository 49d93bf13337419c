/* gguf_write.h: writing GGUF version 3 files, the format gguf.h reads.
 *
 * A file is made in two steps. First what goes before the data is
 * described, in memory: key/values and tensor descriptions (name, type,
 * shape), each list in the order given. Setting a key that is already set
 * removes the old pair and appends the new one, as llama.cpp's gguf_set_*
 * do, so a copied file's keys keep their order and overrides go last.
 * Then gguf_writer_begin writes all of it to a temporary file beside the
 * destination, the tensors' bytes follow in the order they were described
 * (gguf_writer_write, any number of calls per tensor), and
 * gguf_writer_commit checks that every tensor is complete, syncs the file
 * to disk and renames it over the destination. Nothing exists at the
 * destination before that; gguf_writer_free removes the temporary file of
 * a writer that was not committed.
 *
 * Layout, as llama.cpp writes it: the data section starts at the first
 * multiple of the alignment after the tensor descriptions, each tensor at
 * a multiple of it from there, padding is zero bytes and the last tensor
 * is padded too. The alignment is 32 unless general.alignment (u32, a
 * power of two) is set.
 *
 * Errors: the describing calls return 0 or -1; the first failure (an
 * invalid key, type or shape, a duplicate tensor, no memory) is kept, the
 * later describing calls do nothing, and gguf_writer_begin reports it.
 * begin, write and commit fill `err` themselves. Every message names the
 * destination file.
 */
#ifndef GGUF_WRITE_H
#define GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct gguf_writer gguf_writer;

/* A writer for `path`; nothing is created on disk until begin. */
int gguf_writer_open(gguf_writer **out, const char *path, char *err, size_t errlen);

/* Removes the temporary file unless committed, and frees the writer. */
void gguf_writer_free(gguf_writer *w);

/* A value of a fixed-size type (GGUF_U8 .. GGUF_F64, GGUF_BOOL but not
 * GGUF_STR or GGUF_ARR); `value` points to it in its C type (a bool is
 * one byte). */
int gguf_writer_set_val(gguf_writer *w, const char *key, int type, const void *value);
int gguf_writer_set_str(gguf_writer *w, const char *key, const char *s, size_t len);
/* An array of n elements of a fixed-size type. */
int gguf_writer_set_arr(gguf_writer *w, const char *key, int elem_type, const void *elems,
                        uint64_t n);
/* An array of n strings; lens NULL means each is NUL-terminated. */
int gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                            const size_t *lens, uint64_t n);
/* A pair as gguf_kv_at lists it, copied as it is encoded. */
int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv_raw *kv);

/* A tensor of a wtype.h type: n_dims 1..4, ne[0] the row length (a
 * multiple of the type's block), names under 64 bytes and unique. */
int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, int n_dims,
                           const uint64_t *ne);

int gguf_writer_begin(gguf_writer *w, char *err, size_t errlen);
/* The next n bytes of tensor data, continuing across tensors. */
int gguf_writer_write(gguf_writer *w, const void *p, size_t n, char *err, size_t errlen);
int gguf_writer_commit(gguf_writer *w, char *err, size_t errlen);

#endif
