/* gguf_write.c: the GGUF writer behind gguf_write.h.
 *
 * Each key/value pair is kept encoded (its value type, then the value as
 * the file holds it), so writing the metadata is copying bytes, and a pair
 * copied from another file needs no decoding. The file goes through a
 * buffered stream to a temporary name in the destination's directory;
 * only commit renames it into place, after fsync, so a reader never sees
 * a partial file under the destination's name.
 */
#include "gguf_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wtype.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf_write.c writes numbers in host order, which GGUF wants little endian"
#endif

#define GGUF_VERSION 3
#define DEFAULT_ALIGNMENT 32
#define MAX_TENSOR_NAME 63 /* ggml's GGML_MAX_NAME, less its NUL */
#define MAX_KEY 65535
#define STREAM_BUFFER (1 << 20)

typedef struct wkv {
    char *key;
    uint8_t *enc; /* value type (u32), then the value */
    size_t enc_len;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type;
    int n_dims;
    uint64_t ne[4];
    uint64_t bytes;
    uint64_t offset; /* from the start of the data section */
} wtensor;

struct gguf_writer {
    char *path;
    char *tmp; /* the temporary file, once created */
    FILE *f;
    int committed;
    char failed[256]; /* the first describing error, or "" */
    uint64_t alignment;
    wkv *kvs;
    size_t n_kv, cap_kv;
    wtensor *tensors;
    size_t n_tensors, cap_tensors;
    size_t cur;        /* the tensor being written */
    uint64_t cur_done; /* its bytes written so far */
};

/* A growing byte string for encoding values. */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
    int oom;
} bytes;

static void put(bytes *b, const void *d, size_t n)
{
    if (b->oom || n == 0) /* an empty array may come as NULL */
        return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_u32(bytes *b, uint32_t v)
{
    put(b, &v, sizeof v);
}

static void put_u64(bytes *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

static void put_str(bytes *b, const char *s, size_t len)
{
    put_u64(b, len);
    put(b, s, len);
}

/* Records the first describing error; returns -1. */
static int fail(gguf_writer *w, const char *fmt, ...)
{
    if (w->failed[0])
        return -1;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(w->failed, sizeof w->failed, "%s: %s", w->path, msg);
    return -1;
}

int gguf_writer_open(gguf_writer **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    gguf_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    w->alignment = DEFAULT_ALIGNMENT;
    *out = w;
    return 0;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    if (w->tmp && !w->committed)
        unlink(w->tmp);
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].enc);
    }
    for (size_t i = 0; i < w->n_tensors; i++)
        free(w->tensors[i].name);
    free(w->kvs);
    free(w->tensors);
    free(w->tmp);
    free(w->path);
    free(w);
}

/* general.alignment sets the layout; gguf readers take it only as a u32. */
static int check_alignment(gguf_writer *w, const uint8_t *enc, size_t len)
{
    uint32_t type, a;
    memcpy(&type, enc, sizeof type);
    if (type != GGUF_U32 || len != 8)
        return fail(w, "key 'general.alignment' must be a u32, got %s", gguf_type_name((int)type));
    memcpy(&a, enc + 4, sizeof a);
    if (a == 0 || (a & (a - 1)) != 0)
        return fail(w, "key 'general.alignment' is %u, expected a power of two", a);
    w->alignment = a;
    return 0;
}

/* Appends the pair (key, encoded value), taking the encoding's buffer;
 * a pair of the same key goes first. */
static int add_kv(gguf_writer *w, const char *key, size_t key_len, bytes *enc)
{
    if (w->failed[0] || enc->oom) {
        free(enc->p);
        return w->failed[0] ? -1 : fail(w, "out of memory for key '%.*s'", (int)key_len, key);
    }
    if (key_len == 0 || key_len > MAX_KEY || memchr(key, '\0', key_len)) {
        free(enc->p);
        return fail(w, "a key must be 1 to %d bytes without NUL", MAX_KEY);
    }
    if (key_len == strlen("general.alignment") && memcmp(key, "general.alignment", key_len) == 0 &&
        check_alignment(w, enc->p, enc->n) != 0) {
        free(enc->p);
        return -1;
    }
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strlen(w->kvs[i].key) == key_len && memcmp(w->kvs[i].key, key, key_len) == 0) {
            free(w->kvs[i].key);
            free(w->kvs[i].enc);
            memmove(&w->kvs[i], &w->kvs[i + 1], (w->n_kv - i - 1) * sizeof *w->kvs);
            w->n_kv--;
            break;
        }
    }
    if (w->n_kv == w->cap_kv) {
        size_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
        wkv *kvs = realloc(w->kvs, cap * sizeof *kvs);
        if (!kvs) {
            free(enc->p);
            return fail(w, "out of memory for key '%.*s'", (int)key_len, key);
        }
        w->kvs = kvs;
        w->cap_kv = cap;
    }
    char *k = strndup(key, key_len);
    if (!k) {
        free(enc->p);
        return fail(w, "out of memory for key '%.*s'", (int)key_len, key);
    }
    w->kvs[w->n_kv++] = (wkv){.key = k, .enc = enc->p, .enc_len = enc->n};
    return 0;
}

static int fixed_type(int type)
{
    return gguf_type_size(type) > 0;
}

int gguf_writer_set_val(gguf_writer *w, const char *key, int type, const void *value)
{
    if (!fixed_type(type))
        return fail(w, "key '%s': type %d is not a fixed-size value type", key, type);
    bytes b = {0};
    put_u32(&b, (uint32_t)type);
    put(&b, value, gguf_type_size(type));
    return add_kv(w, key, strlen(key), &b);
}

int gguf_writer_set_str(gguf_writer *w, const char *key, const char *s, size_t len)
{
    bytes b = {0};
    put_u32(&b, GGUF_STR);
    put_str(&b, s, len);
    return add_kv(w, key, strlen(key), &b);
}

int gguf_writer_set_arr(gguf_writer *w, const char *key, int elem_type, const void *elems,
                        uint64_t n)
{
    if (!fixed_type(elem_type))
        return fail(w, "key '%s': element type %d is not a fixed-size value type", key, elem_type);
    size_t size = gguf_type_size(elem_type);
    if (n > SIZE_MAX / size)
        return fail(w, "key '%s': %llu elements overflow the address space", key,
                    (unsigned long long)n);
    bytes b = {0};
    put_u32(&b, GGUF_ARR);
    put_u32(&b, (uint32_t)elem_type);
    put_u64(&b, n);
    put(&b, elems, (size_t)n * size);
    return add_kv(w, key, strlen(key), &b);
}

int gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                            const size_t *lens, uint64_t n)
{
    bytes b = {0};
    put_u32(&b, GGUF_ARR);
    put_u32(&b, GGUF_STR);
    put_u64(&b, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(&b, strs[i], lens ? lens[i] : strlen(strs[i]));
    return add_kv(w, key, strlen(key), &b);
}

int gguf_writer_copy_kv(gguf_writer *w, const gguf_kv_raw *kv)
{
    bytes b = {0};
    put_u32(&b, (uint32_t)kv->type);
    put(&b, kv->value, kv->value_bytes);
    return add_kv(w, kv->key, kv->key_len, &b);
}

/* Bytes of a tensor of `type` and shape ne[n_dims], or 0 after fail(). */
static uint64_t tensor_bytes(gguf_writer *w, const char *name, uint32_t type, int n_dims,
                             const uint64_t *ne)
{
    const wtype_info *t = wtype_get(type);
    if (!t) {
        fail(w, "tensor '%s': type %s (%u) cannot be written", name, wtype_name(type), type);
        return 0;
    }
    if (n_dims < 1 || n_dims > 4) {
        fail(w, "tensor '%s': %d dimensions, expected 1 to 4", name, n_dims);
        return 0;
    }
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > INT64_MAX) {
            fail(w, "tensor '%s': dimension %d is %llu, expected 1 to 2^63-1", name, d,
                 (unsigned long long)ne[d]);
            return 0;
        }
    }
    uint64_t bytes = wtype_row_bytes(type, ne[0]);
    if (bytes == 0) {
        fail(w, "tensor '%s': rows of %llu values are not a multiple of %s's block of %d", name,
             (unsigned long long)ne[0], t->name, t->block);
        return 0;
    }
    for (int d = 1; d < n_dims; d++) {
        if (ne[d] > (uint64_t)INT64_MAX / bytes) {
            fail(w, "tensor '%s': its size overflows", name);
            return 0;
        }
        bytes *= ne[d];
    }
    return bytes;
}

int gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, int n_dims,
                           const uint64_t *ne)
{
    if (w->failed[0])
        return -1;
    size_t len = strlen(name);
    if (len == 0 || len > MAX_TENSOR_NAME)
        return fail(w, "tensor name '%s' must be 1 to %d bytes", name, MAX_TENSOR_NAME);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return fail(w, "tensor '%s' added twice", name);
    uint64_t bytes = tensor_bytes(w, name, type, n_dims, ne);
    if (bytes == 0)
        return -1;
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t)
            return fail(w, "out of memory for tensor '%s'", name);
        w->tensors = t;
        w->cap_tensors = cap;
    }
    wtensor t = {.name = strdup(name), .type = type, .n_dims = n_dims, .bytes = bytes};
    if (!t.name)
        return fail(w, "out of memory for tensor '%s'", name);
    for (int d = 0; d < 4; d++)
        t.ne[d] = d < n_dims ? ne[d] : 1;
    w->tensors[w->n_tensors++] = t;
    return 0;
}

static uint64_t pad_to(uint64_t n, uint64_t align)
{
    return (n + align - 1) / align * align;
}

/* Offsets from the alignment, which is final once writing begins. */
static void lay_out(gguf_writer *w)
{
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        w->tensors[i].offset = off;
        off += pad_to(w->tensors[i].bytes, w->alignment);
    }
}

static int io_fail(gguf_writer *w, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s: %s", w->path, what, strerror(errno ? errno : EIO));
    return -1;
}

static int out(gguf_writer *w, const void *p, size_t n, char *err, size_t errlen)
{
    errno = 0;
    if (n && fwrite(p, 1, n, w->f) != n)
        return io_fail(w, "write failed", err, errlen);
    return 0;
}

static int zeros(gguf_writer *w, uint64_t n, char *err, size_t errlen)
{
    static const uint8_t zero[64];
    while (n > 0) {
        size_t k = n < sizeof zero ? (size_t)n : sizeof zero;
        if (out(w, zero, k, err, errlen) != 0)
            return -1;
        n -= k;
    }
    return 0;
}

/* A new file beside the destination: "<path>.tmp.<pid>.<n>". O_EXCL never
 * takes over someone else's file; the umask applies as to any new file. */
static int create_tmp(gguf_writer *w, char *err, size_t errlen)
{
    size_t len = strlen(w->path) + 48;
    w->tmp = malloc(len);
    if (!w->tmp) {
        snprintf(err, errlen, "%s: out of memory", w->path);
        return -1;
    }
    int fd = -1;
    for (unsigned n = 0; fd < 0 && n < 100; n++) {
        snprintf(w->tmp, len, "%s.tmp.%ld.%u", w->path, (long)getpid(), n);
        fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int saved = errno;
        free(w->tmp);
        w->tmp = NULL;
        errno = saved;
        return io_fail(w, "cannot create a file in its directory", err, errlen);
    }
    w->f = fdopen(fd, "wb");
    if (!w->f) {
        close(fd);
        return io_fail(w, "fdopen", err, errlen);
    }
    setvbuf(w->f, NULL, _IOFBF, STREAM_BUFFER);
    return 0;
}

/* Header, key/values, tensor descriptions, padding to the data section. */
static int write_meta(gguf_writer *w, char *err, size_t errlen)
{
    bytes b = {0};
    put(&b, "GGUF", 4);
    put_u32(&b, GGUF_VERSION);
    put_u64(&b, w->n_tensors);
    put_u64(&b, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(&b, w->kvs[i].key, strlen(w->kvs[i].key));
        put(&b, w->kvs[i].enc, w->kvs[i].enc_len);
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        put_str(&b, t->name, strlen(t->name));
        put_u32(&b, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(&b, t->ne[d]);
        put_u32(&b, t->type);
        put_u64(&b, t->offset);
    }
    int rc = -1;
    if (b.oom)
        snprintf(err, errlen, "%s: out of memory for the metadata", w->path);
    else if (out(w, b.p, b.n, err, errlen) == 0)
        rc = zeros(w, pad_to(b.n, w->alignment) - b.n, err, errlen);
    free(b.p);
    return rc;
}

int gguf_writer_begin(gguf_writer *w, char *err, size_t errlen)
{
    if (w->failed[0]) {
        snprintf(err, errlen, "%s", w->failed);
        return -1;
    }
    if (w->f || w->committed) {
        snprintf(err, errlen, "%s: writing has already begun", w->path);
        return -1;
    }
    lay_out(w);
    if (create_tmp(w, err, errlen) != 0)
        return -1;
    return write_meta(w, err, errlen);
}

int gguf_writer_write(gguf_writer *w, const void *p, size_t n, char *err, size_t errlen)
{
    const uint8_t *src = p;
    if (!w->f) {
        snprintf(err, errlen, "%s: tensor data before gguf_writer_begin", w->path);
        return -1;
    }
    while (n > 0) {
        if (w->cur == w->n_tensors) {
            snprintf(err, errlen, "%s: %zu bytes of tensor data past the last tensor", w->path, n);
            return -1;
        }
        wtensor *t = &w->tensors[w->cur];
        uint64_t left = t->bytes - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        if (out(w, src, k, err, errlen) != 0)
            return -1;
        src += k;
        n -= k;
        w->cur_done += k;
        if (w->cur_done == t->bytes) {
            if (zeros(w, pad_to(t->bytes, w->alignment) - t->bytes, err, errlen) != 0)
                return -1;
            w->cur++;
            w->cur_done = 0;
        }
    }
    return 0;
}

/* The directory entry of the rename is on disk too. */
static void sync_dir(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    const char *d = !slash ? "." : slash == dir ? "/" : (*slash = '\0', dir);
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

int gguf_writer_commit(gguf_writer *w, char *err, size_t errlen)
{
    if (!w->f) {
        snprintf(err, errlen, "%s: commit before gguf_writer_begin", w->path);
        return -1;
    }
    if (w->cur < w->n_tensors) {
        const wtensor *t = &w->tensors[w->cur];
        snprintf(err, errlen, "%s: tensor '%s' has %llu of its %llu bytes", w->path, t->name,
                 (unsigned long long)w->cur_done, (unsigned long long)t->bytes);
        return -1;
    }
    errno = 0;
    int rc = fflush(w->f) == 0 && fsync(fileno(w->f)) == 0 ? 0 : -1;
    int saved = errno;
    if (fclose(w->f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    w->f = NULL;
    errno = saved;
    if (rc != 0)
        return io_fail(w, "write failed", err, errlen);
    if (rename(w->tmp, w->path) != 0)
        return io_fail(w, "rename", err, errlen);
    w->committed = 1;
    sync_dir(w->path);
    return 0;
}
