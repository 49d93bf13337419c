/* gguf.c: the GGUF reader behind gguf.h.
 *
 * Parsing walks the bytes once with a cursor that refuses every read past
 * the end. Before anything is allocated for a claimed count, the count is
 * checked against the bytes left: a key/value pair takes at least 13 bytes,
 * a tensor description 32, an array element its size (8 for a string's
 * length), so no allocation exceeds a small multiple of the file size.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wtype.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads little-endian numbers in place"
#endif

#define GGUF_DEFAULT_ALIGNMENT 32
#define KV_MIN_BYTES 13     /* key length 8, value type 4, a 1-byte value */
#define TENSOR_MIN_BYTES 32 /* name length 8, n_dims 4, one dim 8, type 4, offset 8 */
#define N_TYPES 13

/* Bytes of a value of each fixed-size type; 0 for string and array. */
static const uint8_t type_size[N_TYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static const char *const type_names[N_TYPES] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

typedef struct kv {
    const char *key; /* in the mapping, not NUL-terminated */
    size_t key_len;
    uint32_t type;
    const uint8_t *val; /* the value; for an array its first element */
    uint32_t elem_type; /* arrays only */
    uint64_t n;
    const uint8_t **strs; /* string arrays: where each element starts */
} kv;

typedef struct tensor {
    gguf_tensor t;
    size_t name_len;
} tensor;

struct gguf {
    char *name;
    const uint8_t *base;
    size_t size;
    int mapped;
    uint32_t version;
    uint64_t alignment;
    size_t data_start;
    kv *kvs; /* file order */
    int64_t n_kv;
    const kv **kv_by_key;
    tensor *tensors; /* file order */
    int64_t n_tensors;
    const tensor **by_name;
    char *names; /* the tensors' names, NUL-terminated */
};

/* The parse cursor; `ctx` says what is being read, for messages. */
typedef struct rd {
    gguf *g;
    size_t pos;
    char ctx[128];
    char *err;
    size_t errlen;
} rd;

const char *gguf_type_name(int type)
{
    return type >= 0 && type < N_TYPES ? type_names[type] : "?";
}

size_t gguf_type_size(int type)
{
    return type >= 0 && type < N_TYPES ? type_size[type] : 0;
}

static int rd_fail(rd *r, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s: %s: %s", r->g->name, r->ctx, msg);
    return -1;
}

static size_t rd_left(const rd *r)
{
    return r->g->size - r->pos;
}

/* Claims n bytes at the cursor for `what`; returns where they start. */
static const uint8_t *rd_take(rd *r, uint64_t n, const char *what)
{
    if (n > rd_left(r)) {
        rd_fail(r, "%s truncated: needs %llu bytes at offset %zu, the file has %zu left", what,
                (unsigned long long)n, r->pos, rd_left(r));
        return NULL;
    }
    const uint8_t *p = r->g->base + r->pos;
    r->pos += (size_t)n;
    return p;
}

static int rd_u32(rd *r, uint32_t *v, const char *what)
{
    const uint8_t *p = rd_take(r, 4, what);
    if (!p)
        return -1;
    memcpy(v, p, 4);
    return 0;
}

static int rd_u64(rd *r, uint64_t *v, const char *what)
{
    const uint8_t *p = rd_take(r, 8, what);
    if (!p)
        return -1;
    memcpy(v, p, 8);
    return 0;
}

/* A string: 8-byte length, then its bytes. */
static int rd_str(rd *r, const char **s, size_t *len, const char *what)
{
    uint64_t n;
    if (rd_u64(r, &n, what) < 0)
        return -1;
    const uint8_t *p = rd_take(r, n, what);
    if (!p)
        return -1;
    *s = (const char *)p;
    *len = (size_t)n;
    return 0;
}

static int rd_array(rd *r, kv *v)
{
    if (rd_u32(r, &v->elem_type, "array element type") < 0 || rd_u64(r, &v->n, "array count") < 0)
        return -1;
    if (v->elem_type >= N_TYPES)
        return rd_fail(r, "array element type %u is unknown (expected 0 to %d)", v->elem_type,
                       N_TYPES - 1);
    if (v->elem_type == GGUF_ARR)
        return rd_fail(r, "nested arrays are not supported");
    v->val = r->g->base + r->pos;
    if (v->elem_type != GGUF_STR) {
        size_t size = type_size[v->elem_type];
        if (v->n > rd_left(r) / size)
            return rd_fail(r, "array of %llu %s elements cannot fit in the %zu bytes left",
                           (unsigned long long)v->n, type_names[v->elem_type], rd_left(r));
        r->pos += (size_t)v->n * size;
        return 0;
    }
    if (v->n > rd_left(r) / 8)
        return rd_fail(r,
                       "array of %llu strings cannot fit in the %zu bytes left (each takes 8 "
                       "or more)",
                       (unsigned long long)v->n, rd_left(r));
    if (v->n == 0)
        return 0;
    v->strs = malloc((size_t)v->n * sizeof *v->strs);
    if (!v->strs)
        return rd_fail(r, "out of memory for %llu strings", (unsigned long long)v->n);
    for (uint64_t i = 0; i < v->n; i++) {
        const char *s;
        size_t len;
        v->strs[i] = r->g->base + r->pos;
        if (rd_str(r, &s, &len, "array string") < 0)
            return rd_fail(r, "string %llu of %llu truncated at offset %zu", (unsigned long long)i,
                           (unsigned long long)v->n, r->pos);
    }
    return 0;
}

static int rd_value(rd *r, kv *v)
{
    if (rd_u32(r, &v->type, "value type") < 0)
        return -1;
    if (v->type >= N_TYPES)
        return rd_fail(r, "value type %u is unknown (expected 0 to %d)", v->type, N_TYPES - 1);
    if (v->type == GGUF_ARR)
        return rd_array(r, v);
    v->val = r->g->base + r->pos;
    if (v->type == GGUF_STR) {
        const char *s;
        size_t len;
        return rd_str(r, &s, &len, "string value");
    }
    return rd_take(r, type_size[v->type], "value") ? 0 : -1;
}

static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static int cmp_kv(const void *a, const void *b)
{
    const kv *x = *(const kv *const *)a, *y = *(const kv *const *)b;
    return cmp_bytes(x->key, x->key_len, y->key, y->key_len);
}

static int cmp_tensor(const void *a, const void *b)
{
    const tensor *x = *(const tensor *const *)a, *y = *(const tensor *const *)b;
    return strcmp(x->t.name, y->t.name);
}

static int rd_header(rd *r, uint64_t *n_tensors, uint64_t *n_kv)
{
    snprintf(r->ctx, sizeof r->ctx, "header");
    const uint8_t *magic = rd_take(r, 4, "magic");
    if (!magic)
        return -1;
    if (memcmp(magic, "GGUF", 4) != 0)
        return rd_fail(r, "not a GGUF file: magic bytes %02x %02x %02x %02x, expected \"GGUF\"",
                       magic[0], magic[1], magic[2], magic[3]);
    uint32_t v;
    if (rd_u32(r, &v, "version") < 0)
        return -1;
    if (v == 1)
        return rd_fail(r, "GGUF version 1 is not supported (expected 2 or 3): convert the model "
                          "again with a current llama.cpp");
    if (v == 0x02000000 || v == 0x03000000)
        return rd_fail(r, "big-endian GGUF is not supported (expected little endian)");
    if (v != 2 && v != 3)
        return rd_fail(r, "GGUF version %u is not supported (expected 2 or 3)", v);
    r->g->version = v;
    if (rd_u64(r, n_tensors, "tensor count") < 0 || rd_u64(r, n_kv, "key/value count") < 0)
        return -1;
    if (*n_kv > rd_left(r) / KV_MIN_BYTES)
        return rd_fail(r,
                       "%llu key/value pairs cannot fit in the %zu bytes left (each takes %d "
                       "or more)",
                       (unsigned long long)*n_kv, rd_left(r), KV_MIN_BYTES);
    if (*n_tensors > (rd_left(r) - *n_kv * KV_MIN_BYTES) / TENSOR_MIN_BYTES)
        return rd_fail(r, "%llu tensors cannot fit in the %zu bytes left (each takes %d or more)",
                       (unsigned long long)*n_tensors, rd_left(r), TENSOR_MIN_BYTES);
    return 0;
}

static int rd_kvs(rd *r, uint64_t n)
{
    gguf *g = r->g;
    g->kvs = calloc(n ? n : 1, sizeof *g->kvs);
    g->kv_by_key = calloc(n ? n : 1, sizeof *g->kv_by_key);
    if (!g->kvs || !g->kv_by_key)
        return rd_fail(r, "out of memory for %llu key/value pairs", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        kv *v = &g->kvs[i];
        g->n_kv = (int64_t)i + 1; /* owns what v allocates, for gguf_close */
        snprintf(r->ctx, sizeof r->ctx, "key/value %llu", (unsigned long long)i);
        if (rd_str(r, &v->key, &v->key_len, "key") < 0)
            return -1;
        snprintf(r->ctx, sizeof r->ctx, "key '%.*s'", (int)(v->key_len > 80 ? 80 : v->key_len),
                 v->key);
        if (rd_value(r, v) < 0)
            return -1;
        g->kv_by_key[i] = v;
    }
    qsort(g->kv_by_key, (size_t)g->n_kv, sizeof *g->kv_by_key, cmp_kv);
    snprintf(r->ctx, sizeof r->ctx, "metadata");
    for (int64_t i = 1; i < g->n_kv; i++)
        if (cmp_kv(&g->kv_by_key[i - 1], &g->kv_by_key[i]) == 0)
            return rd_fail(r, "duplicate key '%.*s'", (int)g->kv_by_key[i]->key_len,
                           g->kv_by_key[i]->key);
    return 0;
}

static int rd_alignment(rd *r)
{
    uint64_t a = GGUF_DEFAULT_ALIGNMENT;
    if (gguf_get_u64(r->g, "general.alignment", &a, r->err, r->errlen) < 0)
        return -1;
    snprintf(r->ctx, sizeof r->ctx, "key 'general.alignment'");
    if (a == 0 || (a & (a - 1)) != 0)
        return rd_fail(r, "alignment %llu is not a power of two", (unsigned long long)a);
    r->g->alignment = a;
    return 0;
}

/* "F32, F16, ...": the types wtype.h supports, for messages. */
static void supported_types(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t id = 0; id < WT_ID_MAX && used < len; id++)
        if (wtype_get(id))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                                     wtype_get(id)->name);
}

static int rd_tensor_info(rd *r, tensor *t)
{
    gguf_tensor *pub = &t->t;
    uint32_t n_dims;
    if (rd_str(r, &pub->name, &t->name_len, "tensor name") < 0)
        return -1;
    if (memchr(pub->name, '\0', t->name_len))
        return rd_fail(r, "tensor name holds a NUL byte");
    snprintf(r->ctx, sizeof r->ctx, "tensor '%.*s'", (int)(t->name_len > 80 ? 80 : t->name_len),
             pub->name);
    if (rd_u32(r, &n_dims, "dimension count") < 0)
        return -1;
    if (n_dims < 1 || n_dims > 4)
        return rd_fail(r, "%u dimensions, expected 1 to 4", n_dims);
    pub->n_dims = (int)n_dims;
    for (int d = 0; d < 4; d++) {
        pub->ne[d] = 1;
        if (d < pub->n_dims && rd_u64(r, &pub->ne[d], "dimension") < 0)
            return -1;
        if (pub->ne[d] == 0 || pub->ne[d] > INT64_MAX)
            return rd_fail(r, "dimension %d is %llu, expected 1 to 2^63-1", d,
                           (unsigned long long)pub->ne[d]);
    }
    if (rd_u32(r, &pub->type, "type") < 0 || rd_u64(r, &pub->offset, "offset") < 0)
        return -1;
    const wtype_info *w = wtype_get(pub->type);
    if (!w) {
        char list[128];
        supported_types(list, sizeof list);
        return rd_fail(r, "type %s (%u) is not supported (supported: %s)", wtype_name(pub->type),
                       pub->type, list);
    }
    if (pub->ne[0] % (uint64_t)w->block != 0)
        return rd_fail(r, "row length %llu is not a multiple of %s's block of %d",
                       (unsigned long long)pub->ne[0], w->name, w->block);
    if (pub->ne[0] / (uint64_t)w->block > SIZE_MAX / (uint64_t)w->block_bytes)
        return rd_fail(r, "a row of %llu %s values overflows the address space",
                       (unsigned long long)pub->ne[0], w->name);
    size_t bytes = wtype_row_bytes(pub->type, pub->ne[0]);
    for (int d = 1; d < 4; d++) {
        if (pub->ne[d] > SIZE_MAX / bytes)
            return rd_fail(r, "shape [%llu, %llu, %llu, %llu] of %s overflows the address space",
                           (unsigned long long)pub->ne[0], (unsigned long long)pub->ne[1],
                           (unsigned long long)pub->ne[2], (unsigned long long)pub->ne[3], w->name);
        bytes *= (size_t)pub->ne[d];
    }
    pub->bytes = bytes;
    return 0;
}

/* The data section starts at the first multiple of the alignment after
 * the tensor descriptions; every tensor's offset is such a multiple and
 * its bytes lie inside the file. */
static int rd_tensor_data(rd *r)
{
    gguf *g = r->g;
    size_t pad = (size_t)((g->alignment - r->pos % g->alignment) % g->alignment);
    snprintf(r->ctx, sizeof r->ctx, "data section");
    if (pad > rd_left(r))
        return rd_fail(r,
                       "starts at offset %zu + %zu bytes of padding, past the end of the file "
                       "(%zu bytes)",
                       r->pos, pad, g->size);
    size_t start = r->pos + pad, avail = g->size - start;
    g->data_start = start;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i].t;
        snprintf(r->ctx, sizeof r->ctx, "tensor '%s'", t->name);
        if (t->offset % g->alignment != 0)
            return rd_fail(r, "offset %llu is not a multiple of the alignment %llu",
                           (unsigned long long)t->offset, (unsigned long long)g->alignment);
        if (t->offset > avail || t->bytes > avail - t->offset)
            return rd_fail(r,
                           "%zu bytes at data offset %llu run past the end of the file (data "
                           "section holds %zu bytes)",
                           t->bytes, (unsigned long long)t->offset, avail);
        t->data = g->base + start + t->offset;
    }
    return 0;
}

static int rd_tensors(rd *r, uint64_t n)
{
    gguf *g = r->g;
    size_t name_bytes = 0;
    g->tensors = calloc(n ? n : 1, sizeof *g->tensors);
    g->by_name = calloc(n ? n : 1, sizeof *g->by_name);
    if (!g->tensors || !g->by_name)
        return rd_fail(r, "out of memory for %llu tensors", (unsigned long long)n);
    g->n_tensors = (int64_t)n;
    for (uint64_t i = 0; i < n; i++) {
        snprintf(r->ctx, sizeof r->ctx, "tensor %llu", (unsigned long long)i);
        if (rd_tensor_info(r, &g->tensors[i]) < 0)
            return -1;
        name_bytes += g->tensors[i].name_len + 1; /* bounded by the file size */
    }
    /* Names become C strings of their own, the mapping has no NULs after them. */
    g->names = malloc(name_bytes ? name_bytes : 1);
    if (!g->names)
        return rd_fail(r, "out of memory for tensor names");
    char *p = g->names;
    for (uint64_t i = 0; i < n; i++) {
        tensor *t = &g->tensors[i];
        memcpy(p, t->t.name, t->name_len);
        p[t->name_len] = '\0';
        t->t.name = p;
        p += t->name_len + 1;
        g->by_name[i] = t;
    }
    qsort(g->by_name, (size_t)n, sizeof *g->by_name, cmp_tensor);
    snprintf(r->ctx, sizeof r->ctx, "tensors");
    for (uint64_t i = 1; i < n; i++)
        if (cmp_tensor(&g->by_name[i - 1], &g->by_name[i]) == 0)
            return rd_fail(r, "duplicate tensor name '%s'", g->by_name[i]->t.name);
    return n ? rd_tensor_data(r) : 0; /* a vocabulary-only file may end without padding */
}

static int parse(gguf *g, char *err, size_t errlen)
{
    rd r = {.g = g, .err = err, .errlen = errlen};
    uint64_t n_tensors = 0, n_kv = 0;
    if (rd_header(&r, &n_tensors, &n_kv) < 0 || rd_kvs(&r, n_kv) < 0 || rd_alignment(&r) < 0)
        return -1;
    return rd_tensors(&r, n_tensors);
}

/* A gguf over `size` bytes at `base`, parsed; `mapped` hands the mapping over. */
static int open_bytes(gguf **out, const void *base, size_t size, int mapped, const char *name,
                      char *err, size_t errlen)
{
    *out = NULL;
    gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name))) {
        free(g);
        if (mapped)
            munmap((void *)base, size);
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    g->base = base;
    g->size = size;
    g->mapped = mapped;
    if (parse(g, err, errlen) < 0) {
        gguf_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

/* madvise over the whole pages holding [p, p + n) of a mapping. */
static void advise(const gguf *g, const void *p, size_t n, int advice)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + n;
    if (g->mapped && n > 0)
        madvise((void *)start, end - start, advice);
}

int gguf_open_mem(gguf **out, const void *data, size_t len, const char *name, char *err,
                  size_t errlen)
{
    return open_bytes(out, data, len, 0, name, err, errlen);
}

int gguf_open(gguf **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = fstat(fd, &st) < 0     ? strerror(errno)
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                      : st.st_size == 0      ? "empty file, expected a GGUF header"
                                             : NULL;
    if (why) {
        snprintf(err, errlen, "%s: %s", path, why);
        close(fd);
        return -1;
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(saved));
        return -1;
    }
    if (open_bytes(out, base, (size_t)st.st_size, 1, path, err, errlen) < 0)
        return -1;
    /* The metadata was read with the kernel's readahead; tensor data is
     * read only where a stage asks for it (gguf_willneed). */
    const gguf *g = *out;
    if (g->n_tensors > 0)
        advise(g, g->base + g->data_start, g->size - g->data_start, MADV_RANDOM);
    return 0;
}

void gguf_close(gguf *g)
{
    if (!g)
        return;
    for (int64_t i = 0; i < g->n_kv; i++)
        free(g->kvs[i].strs);
    free(g->kvs);
    free(g->kv_by_key);
    free(g->tensors);
    free(g->by_name);
    free(g->names);
    if (g->mapped)
        munmap((void *)g->base, g->size);
    free(g->name);
    free(g);
}

uint32_t gguf_version(const gguf *g)
{
    return g->version;
}

const char *gguf_name(const gguf *g)
{
    return g->name;
}

static const kv *find_kv(const gguf *g, const char *key)
{
    kv probe = {.key = key, .key_len = strlen(key)};
    const kv *pp = &probe;
    const kv **hit = bsearch(&pp, g->kv_by_key, (size_t)g->n_kv, sizeof *g->kv_by_key, cmp_kv);
    return hit ? *hit : NULL;
}

/* A numeric value of any integer or float type, widened. */
typedef struct num {
    enum { NUM_UNSIGNED, NUM_SIGNED, NUM_FLOAT } kind;
    uint64_t u;
    int64_t i;
    double f;
} num;

static int num_read(uint32_t type, const uint8_t *p, num *n)
{
    union {
        uint8_t u8;
        int8_t i8;
        uint16_t u16;
        int16_t i16;
        uint32_t u32;
        int32_t i32;
        float f32;
        uint64_t u64;
        int64_t i64;
        double f64;
    } v;
    if (type >= N_TYPES || type == GGUF_BOOL || type_size[type] == 0)
        return -1;
    memcpy(&v, p, type_size[type]);
    switch (type) {
    case GGUF_U8:
        *n = (num){NUM_UNSIGNED, v.u8, 0, 0};
        break;
    case GGUF_U16:
        *n = (num){NUM_UNSIGNED, v.u16, 0, 0};
        break;
    case GGUF_U32:
        *n = (num){NUM_UNSIGNED, v.u32, 0, 0};
        break;
    case GGUF_U64:
        *n = (num){NUM_UNSIGNED, v.u64, 0, 0};
        break;
    case GGUF_I8:
        *n = (num){NUM_SIGNED, 0, v.i8, 0};
        break;
    case GGUF_I16:
        *n = (num){NUM_SIGNED, 0, v.i16, 0};
        break;
    case GGUF_I32:
        *n = (num){NUM_SIGNED, 0, v.i32, 0};
        break;
    case GGUF_I64:
        *n = (num){NUM_SIGNED, 0, v.i64, 0};
        break;
    case GGUF_F32:
        *n = (num){NUM_FLOAT, 0, 0, v.f32};
        break;
    default:
        *n = (num){NUM_FLOAT, 0, 0, v.f64};
        break;
    }
    return 0;
}

static int wrong_type(const gguf *g, const char *key, const kv *v, const char *expected, char *err,
                      size_t errlen)
{
    snprintf(err, errlen, "%s: key '%s' holds type %s, expected %s", g->name, key,
             type_names[v->type], expected);
    return -1;
}

int gguf_get_u64(const gguf *g, const char *key, uint64_t *out, char *err, size_t errlen)
{
    const kv *v = find_kv(g, key);
    num n;
    if (!v)
        return 1;
    if (num_read(v->type, v->val, &n) < 0 || n.kind == NUM_FLOAT)
        return wrong_type(g, key, v, "an integer", err, errlen);
    if (n.kind == NUM_SIGNED && n.i < 0) {
        snprintf(err, errlen, "%s: key '%s' is %lld, expected a value >= 0", g->name, key,
                 (long long)n.i);
        return -1;
    }
    *out = n.kind == NUM_SIGNED ? (uint64_t)n.i : n.u;
    return 0;
}

int gguf_get_f64(const gguf *g, const char *key, double *out, char *err, size_t errlen)
{
    const kv *v = find_kv(g, key);
    num n;
    if (!v)
        return 1;
    if (num_read(v->type, v->val, &n) < 0 || n.kind != NUM_FLOAT)
        return wrong_type(g, key, v, "f32 or f64", err, errlen);
    *out = n.f;
    return 0;
}

int gguf_get_bool(const gguf *g, const char *key, int *out, char *err, size_t errlen)
{
    const kv *v = find_kv(g, key);
    if (!v)
        return 1;
    if (v->type != GGUF_BOOL)
        return wrong_type(g, key, v, "a bool", err, errlen);
    *out = v->val[0] != 0;
    return 0;
}

int gguf_get_str(const gguf *g, const char *key, const char **s, size_t *len, char *err,
                 size_t errlen)
{
    const kv *v = find_kv(g, key);
    if (!v)
        return 1;
    if (v->type != GGUF_STR)
        return wrong_type(g, key, v, "a string", err, errlen);
    uint64_t n;
    memcpy(&n, v->val, 8);
    *s = (const char *)v->val + 8;
    *len = (size_t)n;
    return 0;
}

int gguf_get_arr(const gguf *g, const char *key, int *elem_type, uint64_t *n, char *err,
                 size_t errlen)
{
    const kv *v = find_kv(g, key);
    if (!v)
        return 1;
    if (v->type != GGUF_ARR)
        return wrong_type(g, key, v, "an array", err, errlen);
    *elem_type = (int)v->elem_type;
    *n = v->n;
    return 0;
}

/* Element i of the array at `key` as a number, if it is one. */
static int arr_num(const gguf *g, const char *key, uint64_t i, num *n)
{
    const kv *v = find_kv(g, key);
    if (!v || v->type != GGUF_ARR || i >= v->n || v->elem_type == GGUF_STR)
        return -1;
    return num_read(v->elem_type, v->val + i * type_size[v->elem_type], n);
}

int gguf_arr_i64(const gguf *g, const char *key, uint64_t i, int64_t *out)
{
    num n;
    if (arr_num(g, key, i, &n) < 0 || n.kind == NUM_FLOAT ||
        (n.kind == NUM_UNSIGNED && n.u > INT64_MAX))
        return -1;
    *out = n.kind == NUM_SIGNED ? n.i : (int64_t)n.u;
    return 0;
}

int gguf_arr_f64(const gguf *g, const char *key, uint64_t i, double *out)
{
    num n;
    if (arr_num(g, key, i, &n) < 0)
        return -1;
    *out = n.kind == NUM_FLOAT ? n.f : n.kind == NUM_SIGNED ? (double)n.i : (double)n.u;
    return 0;
}

int gguf_arr_str(const gguf *g, const char *key, uint64_t i, const char **s, size_t *len)
{
    const kv *v = find_kv(g, key);
    if (!v || v->type != GGUF_ARR || v->elem_type != GGUF_STR || i >= v->n)
        return -1;
    uint64_t n;
    memcpy(&n, v->strs[i], 8);
    *s = (const char *)v->strs[i] + 8;
    *len = (size_t)n;
    return 0;
}

int64_t gguf_n_kv(const gguf *g)
{
    return g->n_kv;
}

/* Bytes of an encoded value after its type field; rd_value checked them. */
static size_t value_bytes(const kv *v)
{
    uint64_t len;
    if (v->type == GGUF_STR) {
        memcpy(&len, v->val, 8);
        return 8 + (size_t)len;
    }
    if (v->type != GGUF_ARR)
        return type_size[v->type];
    size_t head = 4 + 8; /* element type, count */
    if (v->elem_type != GGUF_STR)
        return head + (size_t)v->n * type_size[v->elem_type];
    if (v->n == 0)
        return head;
    const uint8_t *last = v->strs[v->n - 1];
    memcpy(&len, last, 8);
    return head + (size_t)(last + 8 + len - v->val);
}

int gguf_kv_at(const gguf *g, int64_t i, gguf_kv_raw *out)
{
    if (i < 0 || i >= g->n_kv)
        return -1;
    const kv *v = &g->kvs[i];
    size_t head = v->type == GGUF_ARR ? 4 + 8 : 0;
    *out = (gguf_kv_raw){.key = v->key,
                         .key_len = v->key_len,
                         .type = (int)v->type,
                         .value = v->val - head,
                         .value_bytes = value_bytes(v)};
    return 0;
}

int64_t gguf_n_tensors(const gguf *g)
{
    return g->n_tensors;
}

const gguf_tensor *gguf_tensor_at(const gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i].t : NULL;
}

const gguf_tensor *gguf_tensor_find(const gguf *g, const char *name)
{
    tensor probe = {.t.name = name};
    const tensor *key = &probe;
    const tensor **hit =
        bsearch(&key, g->by_name, (size_t)g->n_tensors, sizeof *g->by_name, cmp_tensor);
    return hit ? &(*hit)->t : NULL;
}

void gguf_willneed(const gguf *g, const gguf_tensor *t)
{
    advise(g, t->data, t->bytes, MADV_WILLNEED);
}
