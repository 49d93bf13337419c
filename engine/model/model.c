/* model.c: loading a model's shape and weights (see model.h).
 *
 * llama2.c sources end up as one fp32 buffer in llama2.c's order, which
 * map_weights() turns into tensor views: a checkpoint file is mmapped
 * read-only, the embedded checkpoint is used in place, and synthetic
 * weights are generated into an owned buffer of the same layout. A GGUF
 * file is mapped by gguf.c and described by gguf_llama.c; its views point
 * at the quantized blocks where they lie.
 */
#include "model.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_int.h"
#include "wtype.h"

extern const unsigned char embedded_model_start[];
extern const unsigned char embedded_model_end[];

#define HEADER_BYTES (7 * sizeof(int32_t))
#define SYNTH_SEQ_LEN_DEFAULT 2048

/* The seven shape fields, in the order of a checkpoint header. Checks and
 * messages go through this table so that a checkpoint's error names the
 * header field and a synthetic spec's error names the spec key. */
enum { F_DIM, F_HIDDEN, F_LAYERS, F_HEADS, F_KV_HEADS, F_VOCAB, F_SEQ_LEN, N_FIELDS };

static const char *const header_names[N_FIELDS] = {
    "dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
static const char *const synth_names[N_FIELDS] = {"dim",      "hidden", "layers", "heads",
                                                  "kv_heads", "vocab",  "seq_len"};
/* Far above any Llama model, low enough that sizes cannot overflow. */
static const int field_max[N_FIELDS] = {1 << 16, 1 << 18, 1 << 10, 1 << 10,
                                        1 << 10, 1 << 22, 1 << 24};

static int check_shape(const int v[N_FIELDS], const char *const names[N_FIELDS], const char *what,
                       char *err, size_t errlen)
{
    for (int f = 0; f < N_FIELDS; f++) {
        if (v[f] < 1 || v[f] > field_max[f]) {
            snprintf(err, errlen, "%s: %s=%d, expected 1..%d", what, names[f], v[f], field_max[f]);
            return -1;
        }
    }
    if (v[F_DIM] % v[F_HEADS] != 0) {
        snprintf(err, errlen, "%s: %s=%d is not a multiple of %s=%d", what, names[F_DIM], v[F_DIM],
                 names[F_HEADS], v[F_HEADS]);
        return -1;
    }
    if (v[F_HEADS] % v[F_KV_HEADS] != 0) {
        snprintf(err, errlen, "%s: %s=%d is not a multiple of %s=%d", what, names[F_HEADS],
                 v[F_HEADS], names[F_KV_HEADS], v[F_KV_HEADS]);
        return -1;
    }
    if ((v[F_DIM] / v[F_HEADS]) % 2 != 0) {
        snprintf(err, errlen, "%s: head_dim=%d (%s/%s) must be even for RoPE", what,
                 v[F_DIM] / v[F_HEADS], names[F_DIM], names[F_HEADS]);
        return -1;
    }
    return 0;
}

static model_config config_from(const int v[N_FIELDS], int shared)
{
    model_config c = {
        .dim = v[F_DIM],
        .hidden_dim = v[F_HIDDEN],
        .n_layers = v[F_LAYERS],
        .n_heads = v[F_HEADS],
        .n_kv_heads = v[F_KV_HEADS],
        .head_dim = v[F_DIM] / v[F_HEADS],
        .vocab_size = v[F_VOCAB],
        .seq_len = v[F_SEQ_LEN],
        .shared_classifier = shared,
        .norm_eps = 1e-5f,
        .rope_base = 10000.0f,
        .rope_dim = v[F_DIM] / v[F_HEADS],
    };
    return c;
}

static uint64_t layer_floats(const model_config *c)
{
    uint64_t dim = c->dim, hidden = c->hidden_dim;
    uint64_t kv_dim = (uint64_t)c->n_kv_heads * c->head_dim;
    return 2 * dim + 2 * dim * dim + 2 * kv_dim * dim + 3 * hidden * dim;
}

/* Floats of a buffer in llama2.c order; synthetic buffers have no RoPE
 * table (the forward pass computes rotations itself). */
static uint64_t total_floats(const model_config *c, int has_rope_table)
{
    uint64_t table = (uint64_t)c->vocab_size * c->dim;
    uint64_t n = table + (uint64_t)c->n_layers * layer_floats(c) + c->dim;
    if (has_rope_table)
        n += (uint64_t)c->seq_len * c->head_dim;
    if (!c->shared_classifier)
        n += table;
    return n;
}

/* Checks a version 0 header and that the buffer holds exactly the weights
 * it announces: a truncated or padded file is refused, never half-read. */
static int parse_header(const unsigned char *buf, size_t size, const char *what, model_config *out,
                        char *err, size_t errlen)
{
    if (size < HEADER_BYTES) {
        snprintf(err, errlen, "%s: file is %zu bytes, expected at least %zu for the header", what,
                 size, HEADER_BYTES);
        return -1;
    }
    int32_t h[N_FIELDS];
    memcpy(h, buf, sizeof h);
    /* A negative vocab_size is llama2.c's flag for a separate classifier. */
    int shared = h[F_VOCAB] > 0;
    int v[N_FIELDS];
    for (int f = 0; f < N_FIELDS; f++)
        v[f] = h[f];
    if (h[F_VOCAB] < 0 && h[F_VOCAB] != INT32_MIN)
        v[F_VOCAB] = -h[F_VOCAB];
    /* A file that is neither GGUF (checked first) nor llama2.c lands
     * here too: its first bytes make no shape a checkpoint could have. */
    char why[256];
    if (check_shape(v, header_names, "header", why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: not a GGUF or llama2.c file (read as a llama2.c %s)", what, why);
        return -1;
    }
    model_config c = config_from(v, shared);
    uint64_t expected = HEADER_BYTES + total_floats(&c, 1) * sizeof(float);
    if ((uint64_t)size != expected) {
        snprintf(err, errlen,
                 "%s: file is %zu bytes, expected %llu for dim=%d hidden_dim=%d n_layers=%d "
                 "n_heads=%d n_kv_heads=%d vocab_size=%d seq_len=%d (%s classifier)",
                 what, size, (unsigned long long)expected, c.dim, c.hidden_dim, c.n_layers,
                 c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len, shared ? "shared" : "separate");
        return -1;
    }
    *out = c;
    return 0;
}

static wmat f32_mat(const float *p, size_t rows, size_t cols)
{
    return (wmat){.type = WT_F32,
                  .data = p,
                  .rows = (int)rows,
                  .cols = (int)cols,
                  .row_bytes = cols * sizeof(float)};
}

static int map_weights(model *m, const float *p, int has_rope_table, char *err, size_t errlen)
{
    const model_config *c = &m->cfg;
    size_t dim = c->dim, hidden = c->hidden_dim, L = c->n_layers;
    size_t kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    m->layers = calloc(L, sizeof *m->layers);
    if (!m->layers) {
        snprintf(err, errlen, "out of memory for %zu layer views", L);
        return -1;
    }
    const float *table = p;
    m->embedding = f32_mat(p, c->vocab_size, dim);
    p += (size_t)c->vocab_size * dim;
    /* llama2.c stores each kind of tensor for all layers together. */
    const float *rms_att = p;
    p += L * dim;
    const float *wq = p;
    p += L * dim * dim;
    const float *wk = p;
    p += L * kv_dim * dim;
    const float *wv = p;
    p += L * kv_dim * dim;
    const float *wo = p;
    p += L * dim * dim;
    const float *rms_ffn = p;
    p += L * dim;
    const float *w1 = p;
    p += L * hidden * dim;
    const float *w2 = p;
    p += L * dim * hidden;
    const float *w3 = p;
    p += L * hidden * dim;
    m->rms_final = p;
    p += dim;
    if (has_rope_table)
        p += (size_t)c->seq_len * c->head_dim; /* freq_cis real and imag: recomputed */
    m->classifier = f32_mat(c->shared_classifier ? table : p, c->vocab_size, dim);
    for (size_t l = 0; l < L; l++) {
        layer_weights *w = &m->layers[l];
        w->rms_att = rms_att + l * dim;
        w->wq = f32_mat(wq + l * dim * dim, dim, dim);
        w->wk = f32_mat(wk + l * kv_dim * dim, kv_dim, dim);
        w->wv = f32_mat(wv + l * kv_dim * dim, kv_dim, dim);
        w->wo = f32_mat(wo + l * dim * dim, dim, dim);
        w->rms_ffn = rms_ffn + l * dim;
        w->w1 = f32_mat(w1 + l * hidden * dim, hidden, dim);
        w->w2 = f32_mat(w2 + l * dim * hidden, dim, hidden);
        w->w3 = f32_mat(w3 + l * hidden * dim, hidden, dim);
    }
    return 0;
}

static void model_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
}

static model *model_new(const char *name, char *err, size_t errlen)
{
    model *m = calloc(1, sizeof *m);
    if (m)
        m->name = strdup(name);
    if (!m || !m->name) {
        free(m);
        snprintf(err, errlen, "out of memory loading %s", name);
        return NULL;
    }
    return m;
}

/* A checkpoint already in memory (the embedded one, or a mapped file). */
static int load_checkpoint(model *m, const unsigned char *buf, size_t size, const char *what,
                           char *err, size_t errlen)
{
    m->format = "llama2.c";
    if (parse_header(buf, size, what, &m->cfg, err, errlen) != 0)
        return -1;
    if (map_weights(m, (const float *)(buf + HEADER_BYTES), 1, err, errlen) != 0)
        return -1;
    model_sha256_hex(buf, size, m->fingerprint);
    return 0;
}

static int open_checkpoint(const char *path, int *fd_out, size_t *size_out, char *err,
                           size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -1;
    }
    *fd_out = fd;
    *size_out = (size_t)st.st_size;
    return 0;
}

static int load_file(model *m, const char *path, char *err, size_t errlen)
{
    int fd;
    size_t size;
    if (open_checkpoint(path, &fd, &size, err, errlen) != 0)
        return -1;
    if (size < HEADER_BYTES) { /* nothing to map: parse_header reports the size */
        close(fd);
        return parse_header(NULL, size, path, &m->cfg, err, errlen);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        return -1;
    }
    m->map = map;
    m->map_size = size;
    return load_checkpoint(m, map, size, path, err, errlen);
}

static int probe_file(const char *path, model_config *out, char *err, size_t errlen)
{
    int fd;
    size_t size;
    if (open_checkpoint(path, &fd, &size, err, errlen) != 0)
        return -1;
    unsigned char header[HEADER_BYTES];
    ssize_t got = size < HEADER_BYTES ? 0 : pread(fd, header, sizeof header, 0);
    close(fd);
    if (size >= HEADER_BYTES && got != (ssize_t)sizeof header) {
        snprintf(err, errlen, "%s: cannot read the header", path);
        return -1;
    }
    return parse_header(header, size, path, out, err, errlen);
}

/* ---- synthetic models ---- */

typedef struct synth_spec {
    int v[N_FIELDS];
    unsigned long long seed;
    char canonical[256]; /* the fingerprinted form */
    char name[256];
} synth_spec;

typedef struct named_shape {
    const char *name;
    int v[N_FIELDS - 1]; /* seq_len is the synthetic default */
} named_shape;

static const named_shape named_shapes[] = {
    {"110m", {768, 2048, 12, 12, 12, 32000}},
    {"1b", {2048, 5632, 16, 32, 8, 32000}},
};

static int parse_number(const char *text, size_t len, unsigned long long max,
                        unsigned long long *out)
{
    if (len == 0 || len > 20)
        return -1;
    char buf[24];
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno != 0 || *end != '\0' || x > max)
        return -1;
    *out = x;
    return 0;
}

static int synth_key(const char *key, size_t len)
{
    for (int f = 0; f < N_FIELDS; f++)
        if (strlen(synth_names[f]) == len && memcmp(synth_names[f], key, len) == 0)
            return f;
    if (len == 4 && memcmp(key, "seed", 4) == 0)
        return N_FIELDS;
    return -1;
}

static const named_shape *find_shape(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof named_shapes / sizeof *named_shapes; i++)
        if (strlen(named_shapes[i].name) == len && memcmp(named_shapes[i].name, name, len) == 0)
            return &named_shapes[i];
    return NULL;
}

/* One "key=value" item of `len` bytes; seen[] catches repeated keys. A
 * named shape fixes the dims, leaving only the seed to set. */
static int parse_pair(const char *spec, const char *item, size_t len, int named, int *seen,
                      synth_spec *s, char *err, size_t errlen)
{
    const char *eq = memchr(item, '=', len);
    int keylen = (int)(eq ? (size_t)(eq - item) : len);
    int f = eq ? synth_key(item, (size_t)keylen) : -1;
    if (f < 0 || (named && f != N_FIELDS)) {
        snprintf(err, errlen, "%s: unknown key '%.*s', expected %s", spec, keylen, item,
                 named ? "seed" : "dim, hidden, layers, heads, kv_heads, vocab, seq_len, seed");
        return -1;
    }
    if (seen[f]) {
        snprintf(err, errlen, "%s: key '%.*s' given twice", spec, keylen, item);
        return -1;
    }
    seen[f] = 1;
    const char *value = eq + 1;
    int vlen = (int)(len - (size_t)keylen - 1);
    unsigned long long x;
    unsigned long long max = f == N_FIELDS ? ULLONG_MAX : (unsigned long long)INT_MAX;
    if (parse_number(value, (size_t)vlen, max, &x) != 0) {
        snprintf(err, errlen, "%s: %.*s='%.*s' is not an integer in 0..%llu", spec, keylen, item,
                 vlen, value, max);
        return -1;
    }
    if (f == N_FIELDS)
        s->seed = x;
    else
        s->v[f] = (int)x;
    return 0;
}

static void name_synth(synth_spec *s, const named_shape *named)
{
    snprintf(s->canonical, sizeof s->canonical,
             "synth:dim=%d,hidden=%d,layers=%d,heads=%d,kv_heads=%d,vocab=%d,seq_len=%d,seed=%llu",
             s->v[F_DIM], s->v[F_HIDDEN], s->v[F_LAYERS], s->v[F_HEADS], s->v[F_KV_HEADS],
             s->v[F_VOCAB], s->v[F_SEQ_LEN], s->seed);
    if (named && s->seed)
        snprintf(s->name, sizeof s->name, "synth:%s,seed=%llu", named->name, s->seed);
    else if (named)
        snprintf(s->name, sizeof s->name, "synth:%s", named->name);
    else
        snprintf(s->name, sizeof s->name, "%s", s->canonical);
}

/* "synth:" then a named shape or key=value pairs, comma-separated. */
static int parse_synth(const char *spec, synth_spec *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    int seen[N_FIELDS + 1] = {0};
    const char *p = spec + strlen("synth:");
    size_t len = strcspn(p, ",");
    const named_shape *named = NULL;
    if (!memchr(p, '=', len)) {
        named = find_shape(p, len);
        if (!named) {
            snprintf(err, errlen, "%s: unknown shape '%.*s', expected 110m, 1b or key=value dims",
                     spec, (int)len, p);
            return -1;
        }
        memcpy(s->v, named->v, sizeof named->v);
        for (int f = 0; f < F_SEQ_LEN; f++)
            seen[f] = 1;
        p += len;
        if (*p == ',')
            p++;
        len = strcspn(p, ",");
    }
    while (*p != '\0') {
        if (parse_pair(spec, p, len, named != NULL, seen, s, err, errlen) != 0)
            return -1;
        p += len;
        if (*p == ',')
            p++;
        len = strcspn(p, ",");
    }
    if (!seen[F_SEQ_LEN])
        s->v[F_SEQ_LEN] = SYNTH_SEQ_LEN_DEFAULT;
    for (int f = 0; f < F_SEQ_LEN; f++) {
        if (!seen[f]) {
            snprintf(err, errlen,
                     "%s: missing %s (explicit dims need dim, hidden, layers, heads, "
                     "kv_heads and vocab)",
                     spec, synth_names[f]);
            return -1;
        }
    }
    if (check_shape(s->v, synth_names, spec, err, errlen) != 0)
        return -1;
    name_synth(s, named);
    return 0;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* One tensor to fill: uniform in [-bound, bound), or all ones (norms). */
typedef struct fill_job {
    float *p;
    size_t n;
    float bound;
} fill_job;

typedef struct fill_plan {
    fill_job jobs[16];
    int n_jobs;
    float *base;
    uint64_t key;
    int threads;
} fill_plan;

typedef struct fill_worker {
    const fill_plan *plan;
    int index;
    pthread_t thread;
} fill_worker;

/* Each value is a hash of (seed, its index in the buffer), so the weights
 * do not depend on how the work is split between threads. */
static void fill_slice(const fill_plan *plan, const fill_job *j, size_t from, size_t to)
{
    if (j->bound == 0.0f) {
        for (size_t i = from; i < to; i++)
            j->p[i] = 1.0f;
        return;
    }
    uint64_t offset = (uint64_t)(j->p - plan->base);
    for (size_t i = from; i < to; i++) {
        uint64_t r = splitmix64(plan->key + offset + i);
        float u = (float)(r >> 40) * (1.0f / 16777216.0f); /* [0, 1) */
        j->p[i] = (2.0f * u - 1.0f) * j->bound;
    }
}

static void *fill_thread(void *arg)
{
    fill_worker *w = arg;
    const fill_plan *plan = w->plan;
    for (int k = 0; k < plan->n_jobs; k++) {
        const fill_job *j = &plan->jobs[k];
        size_t per = (j->n + plan->threads - 1) / plan->threads;
        size_t from = per * w->index;
        size_t to = from + per < j->n ? from + per : j->n;
        if (from < to)
            fill_slice(plan, j, from, to);
    }
    return NULL;
}

static void run_fill(fill_plan *plan)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    plan->threads = cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
    fill_worker workers[64];
    int started = 1;
    for (int t = 0; t < plan->threads; t++)
        workers[t] = (fill_worker){.plan = plan, .index = t};
    for (int t = 1; t < plan->threads; t++, started++)
        if (pthread_create(&workers[t].thread, NULL, fill_thread, &workers[t]) != 0)
            break;
    /* Slices whose thread could not start are filled here. */
    for (int t = started; t < plan->threads; t++)
        fill_thread(&workers[t]);
    fill_thread(&workers[0]);
    for (int t = 1; t < started; t++)
        pthread_join(workers[t].thread, NULL);
}

/* Fills layers [first, last) of a tensor kind stored for all n_layers
 * together (per floats each), and moves the cursor past all of them. */
static void fill_layers(fill_plan *plan, float **cursor, size_t per, int n_layers, int first,
                        int last, float std)
{
    /* A uniform in [-b, b) has standard deviation b / sqrt(3). */
    if (first < last)
        plan->jobs[plan->n_jobs++] = (fill_job){.p = *cursor + per * (size_t)first,
                                                .n = per * (size_t)(last - first),
                                                .bound = std * sqrtf(3.0f)};
    *cursor += per * (size_t)n_layers;
}

/* Standard deviations chosen so every projection maps rms-1 inputs to
 * rms-1 outputs, and each residual branch adds about 1/sqrt(2 L): the
 * residual stream stays O(1) through any depth, and logits (the rms-1
 * normed state against embedding rows of std 1/sqrt(dim)) are O(1).
 * Only a stage's own tensors are written: the rest of the buffer is
 * never touched, so its pages never become resident, and each value
 * depends on its place in the whole buffer only (fill_slice). */
static void generate_weights(model *m, uint64_t seed, int first, int last)
{
    const model_config *c = &m->cfg;
    size_t dim = c->dim, hidden = c->hidden_dim;
    int L = c->n_layers, head = first == 0, tail = last == L;
    size_t kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    float in_dim = 1.0f / sqrtf((float)dim);
    float residual = 1.0f / sqrtf(2.0f * (float)L);
    fill_plan plan = {.base = m->owned, .key = splitmix64(seed)};
    float *p = m->owned;
    /* The table is the classifier too (synthetic models share it). */
    fill_layers(&plan, &p, c->vocab_size * dim, 1, 0, head || tail, in_dim);
    fill_layers(&plan, &p, dim, L, first, last, 0.0f);
    fill_layers(&plan, &p, dim * dim, L, first, last, in_dim);
    fill_layers(&plan, &p, kv_dim * dim, L, first, last, in_dim); /* wk */
    fill_layers(&plan, &p, kv_dim * dim, L, first, last, in_dim); /* wv */
    fill_layers(&plan, &p, dim * dim, L, first, last, in_dim * residual);
    fill_layers(&plan, &p, dim, L, first, last, 0.0f);
    fill_layers(&plan, &p, hidden * dim, L, first, last, in_dim);
    fill_layers(&plan, &p, dim * hidden, L, first, last, residual / sqrtf((float)hidden));
    fill_layers(&plan, &p, hidden * dim, L, first, last, in_dim);
    fill_layers(&plan, &p, dim, 1, 0, tail, 0.0f);
    run_fill(&plan);
}

static int load_synth(model *m, const synth_spec *s, int first, int last, char *err, size_t errlen)
{
    m->cfg = config_from(s->v, 1);
    /* A range outside the model is the caller's to refuse (it names the
     * flag): the whole model is made meanwhile. */
    if (last < 0 || first < 0 || first >= last || last > m->cfg.n_layers) {
        first = 0;
        last = m->cfg.n_layers;
    }
    size_t bytes = total_floats(&m->cfg, 0) * sizeof(float);
    /* Anonymous pages are resident only once written: a stage pays for
     * its own layers, though every layer keeps its place in the buffer. */
    void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map %zu bytes of weights: %s", s->name, bytes,
                 strerror(errno));
        return -1;
    }
    m->owned = buf;
    m->owned_size = bytes;
    m->format = "synthetic";
    generate_weights(m, s->seed, first, last);
    if (map_weights(m, m->owned, 0, err, errlen) != 0)
        return -1;
    model_sha256_hex(s->canonical, strlen(s->canonical), m->fingerprint);
    return 0;
}

static int is_embedded(const char *spec)
{
    return spec == NULL || strcmp(spec, "embedded") == 0;
}

static int is_synth(const char *spec)
{
    return strncmp(spec, "synth:", strlen("synth:")) == 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int model_load_stage(model **out, const char *spec, int first, int last, char *err, size_t errlen)
{
    *out = NULL;
    synth_spec s;
    const char *name;
    if (is_embedded(spec)) {
        name = "stories260K";
    } else if (is_synth(spec)) {
        if (parse_synth(spec, &s, err, errlen) != 0)
            return -1;
        name = s.name;
    } else {
        name = base_name(spec);
    }
    model *m = model_new(name, err, errlen);
    if (!m)
        return -1;
    int rc;
    if (is_embedded(spec))
        rc = load_checkpoint(m, embedded_model_start,
                             (size_t)(embedded_model_end - embedded_model_start),
                             "embedded stories260K", err, errlen);
    else if (is_synth(spec))
        rc = load_synth(m, &s, first, last, err, errlen);
    else if (model_is_gguf(spec))
        rc = model_gguf_load(m, spec, first, last, err, errlen);
    else
        rc = load_file(m, spec, err, errlen);
    if (rc != 0) {
        model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int model_load(model **out, const char *spec, char *err, size_t errlen)
{
    return model_load_stage(out, spec, 0, -1, err, errlen);
}

int model_probe(const char *spec, model_config *out, char *err, size_t errlen)
{
    if (is_embedded(spec))
        return parse_header(embedded_model_start,
                            (size_t)(embedded_model_end - embedded_model_start),
                            "embedded stories260K", out, err, errlen);
    if (is_synth(spec)) {
        synth_spec s;
        if (parse_synth(spec, &s, err, errlen) != 0)
            return -1;
        *out = config_from(s.v, 1);
        return 0;
    }
    if (model_is_gguf(spec))
        return model_gguf_probe(spec, out, err, errlen);
    return probe_file(spec, out, err, errlen);
}

void model_free(model *m)
{
    if (!m)
        return;
    if (m->map)
        munmap(m->map, m->map_size);
    gguf_llama_free(m->stage);
    gguf_close(m->file);
    if (m->owned)
        munmap(m->owned, m->owned_size);
    free(m->layers);
    free(m->name);
    free(m);
}

const model_config *model_config_of(const model *m)
{
    return &m->cfg;
}

const char *model_name(const model *m)
{
    return m->name;
}

const char *model_fingerprint(const model *m)
{
    return m->fingerprint;
}

const char *model_format(const model *m)
{
    return m->format;
}

const char *model_weight_types(const model *m)
{
    return m->file ? m->types : "f32";
}

const struct gguf *model_gguf(const model *m)
{
    return m->file;
}

size_t model_stage_bytes(const model *m, int first, int last)
{
    const model_config *c = &m->cfg;
    if (first < 0 || last > c->n_layers || first >= last)
        return 0;
    if (m->file)
        return model_gguf_stage_bytes(m->file, c, first, last);
    uint64_t table = (uint64_t)c->vocab_size * c->dim;
    uint64_t floats = (uint64_t)(last - first) * layer_floats(c);
    int head = first == 0, tail = last == c->n_layers;
    if (head)
        floats += table;
    if (tail)
        floats += c->dim + (head && c->shared_classifier ? 0 : table);
    return (size_t)(floats * sizeof(float));
}

const wmat *model_token_embedding(const model *m)
{
    return &m->embedding;
}

const layer_weights *model_layer(const model *m, int layer)
{
    return &m->layers[layer];
}

const float *model_rms_final(const model *m)
{
    return m->rms_final;
}

const wmat *model_classifier(const model *m)
{
    return &m->classifier;
}

const float *model_rope_freqs(const model *m)
{
    return m->rope_freqs;
}

int model_probe_bytes(const char *spec, model_config *cfg, size_t *embed_bytes, size_t *layer_bytes,
                      int max_layers, size_t *out_bytes, char *err, size_t errlen)
{
    if (model_is_gguf(spec))
        return model_gguf_probe_bytes(spec, cfg, embed_bytes, layer_bytes, max_layers, out_bytes,
                                      err, errlen);
    if (model_probe(spec, cfg, err, errlen) != 0)
        return -1;
    if (cfg->n_layers > max_layers) {
        snprintf(err, errlen, "%s: %d layers, more than the %d the caller has room for",
                 spec ? spec : "embedded", cfg->n_layers, max_layers);
        return -1;
    }
    uint64_t table = (uint64_t)cfg->vocab_size * cfg->dim;
    *embed_bytes = (size_t)(table * sizeof(float));
    for (int l = 0; l < cfg->n_layers; l++)
        layer_bytes[l] = (size_t)(layer_floats(cfg) * sizeof(float));
    *out_bytes = (size_t)((cfg->dim + table) * sizeof(float));
    return 0;
}
