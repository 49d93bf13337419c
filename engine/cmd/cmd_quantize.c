/* cmd_quantize.c: `inferd quantize`, a model written as a GGUF file of
 * one of llama.cpp's file types, the way llama-quantize writes it.
 *
 * The source is any model spec. A GGUF file keeps its metadata (every
 * key, in order; general.file_type then says the new type) and its tensor
 * names. A llama2.c checkpoint, a synthetic shape or the embedded model
 * becomes what llama.cpp's convert-llama2c-to-ggml would write (llama
 * metadata, the llama2.c tokenizer as a SentencePiece vocabulary, its
 * tensor names, the classifier written out as output.weight even when
 * shared) and then quantized. Tensors go in llama-quantize's order, each
 * in the type ftype.h chooses; a tensor changing type is dequantized row
 * by row and quantized again (qblock.h's quantizers are ggml's reference
 * ones, byte for byte), one that keeps its type is copied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "engine/compute/pool.h"
#include "engine/compute/qblock.h"
#include "engine/model/ftype.h"
#include "engine/model/gguf.h"
#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "engine/model/tokenizer.h"
#include "engine/model/vocab.h"
#include "engine/model/weights.h"
#include "engine/model/wtype.h"
#include "engine/sys/clock.h"

typedef struct quant_options {
    const char *model;
    const char *tokenizer;
    const ftype *type;
    const char *out;
    int threads;
} quant_options;

/* One tensor as it is read and as it will be written. */
typedef struct qtensor {
    char name[64];
    uint32_t type; /* in the source */
    int n_dims;
    uint64_t ne[4];
    const void *data;
    size_t row_bytes;
    uint32_t out_type;
} qtensor;

typedef struct source {
    model *m;
    const gguf *g; /* the model's GGUF file, or NULL */
    qtensor *t;
    int n;
} source;

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, quant_options *o)
{
    opt_vals v;
    int rc = args_parse(OPT_V_QUANTIZE, argc, argv, &v);
    if (rc != 0)
        return rc;
    /* The file types are ftype.h's, which the table leaves to it. */
    const char *type = opt_str(&v, OPT_TYPE);
    *o = (quant_options){
        .model = opt_str(&v, OPT_MODEL),
        .tokenizer = opt_str(&v, OPT_QUANT_TOKENIZER),
        .type = ftype_find(type),
        .out = opt_str(&v, OPT_QUANT_OUT),
        .threads = args_threads(&v),
    };
    if (!o->type) {
        fprintf(stderr, "inferd quantize: --type: '%s' is not valid, expected %s\n", type,
                ftype_names());
        return -1;
    }
    return 0;
}

/* ---- the source's tensors ---- */

static void add(source *s, const char *name, uint32_t type, int n_dims, const uint64_t ne[4],
                const void *data)
{
    qtensor *t = &s->t[s->n++];
    *t = (qtensor){.type = type,
                   .n_dims = n_dims,
                   .ne = {ne[0], ne[1], ne[2], ne[3]},
                   .data = data,
                   .row_bytes = wtype_row_bytes(type, ne[0])};
    snprintf(t->name, sizeof t->name, "%s", name);
}

static void add_mat(source *s, const char *name, const wmat *w)
{
    add(s, name, w->type, 2, (uint64_t[4]){(uint64_t)w->cols, (uint64_t)w->rows, 1, 1}, w->data);
}

static void add_norm(source *s, const char *name, const float *v, int dim)
{
    add(s, name, WT_F32, 1, (uint64_t[4]){(uint64_t)dim, 1, 1, 1}, v);
}

/* convert-llama2c-to-ggml's names. */
static void list_llama2c(source *s)
{
    const model_config *c = model_config_of(s->m);
    char name[64];
    add_mat(s, "token_embd.weight", model_token_embedding(s->m));
    add_norm(s, "output_norm.weight", model_rms_final(s->m), c->dim);
    add_mat(s, "output.weight", model_classifier(s->m));
    for (int l = 0; l < c->n_layers; l++) {
        const layer_weights *w = model_layer(s->m, l);
        const struct {
            const char *suffix;
            const wmat *mat;
            const float *norm;
        } parts[] = {
            {"attn_q", &w->wq, NULL},        {"attn_k", &w->wk, NULL},
            {"attn_v", &w->wv, NULL},        {"attn_output", &w->wo, NULL},
            {"attn_norm", NULL, w->rms_att}, {"ffn_gate", &w->w1, NULL},
            {"ffn_down", &w->w2, NULL},      {"ffn_up", &w->w3, NULL},
            {"ffn_norm", NULL, w->rms_ffn},
        };
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, parts[i].suffix);
            if (parts[i].mat)
                add_mat(s, name, parts[i].mat);
            else
                add_norm(s, name, parts[i].norm, c->dim);
        }
    }
}

static int list_gguf(source *s, char *err, size_t errlen)
{
    for (int64_t i = 0; i < gguf_n_tensors(s->g); i++) {
        const gguf_tensor *g = gguf_tensor_at(s->g, i);
        if (strlen(g->name) >= sizeof s->t->name) {
            snprintf(err, errlen, "%s: tensor '%.40s...': names are at most %zu bytes in GGUF",
                     gguf_name(s->g), g->name, sizeof s->t->name - 1);
            return -1;
        }
        add(s, g->name, g->type, g->n_dims, g->ne, g->data);
    }
    return 0;
}

static int cmp_tensor(const void *a, const void *b)
{
    return ftype_name_order(((const qtensor *)a)->name, ((const qtensor *)b)->name);
}

static int source_open(source *s, const char *model_spec, char *err, size_t errlen)
{
    if (model_load(&s->m, model_spec, err, errlen) != 0)
        return -1;
    s->g = model_gguf(s->m);
    int layers = model_config_of(s->m)->n_layers;
    size_t n = s->g ? (size_t)gguf_n_tensors(s->g) : 3 + 9 * (size_t)layers;
    s->t = calloc(n ? n : 1, sizeof *s->t);
    if (!s->t) {
        snprintf(err, errlen, "out of memory for %zu tensor descriptions", n);
        return -1;
    }
    if (s->g && list_gguf(s, err, errlen) != 0)
        return -1;
    if (!s->g)
        list_llama2c(s);
    qsort(s->t, (size_t)s->n, sizeof *s->t, cmp_tensor);
    return 0;
}

static void source_close(source *s)
{
    free(s->t);
    model_free(s->m);
}

/* Every tensor's type in the file type's mix. */
static int plan(source *s, const ftype *ft, char *err, size_t errlen)
{
    const model_config *c = model_config_of(s->m);
    const char **names = malloc((size_t)s->n * sizeof *names);
    if (!names) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < s->n; i++)
        names[i] = s->t[i].name;
    ftype_plan p;
    ftype_plan_init(&p, ft, c->n_layers, c->n_heads, c->n_kv_heads, names, s->n);
    free(names);
    for (int i = 0; i < s->n; i++) {
        qtensor *t = &s->t[i];
        if (ftype_plan_next(&p, t->name, t->type, t->n_dims, t->ne[0], &t->out_type, err, errlen) !=
            0)
            return -1;
    }
    return 0;
}

/* ---- metadata ---- */

/* What convert-llama2c-to-ggml makes of llama2.c token `id`: <unk>, <s>
 * and </s> by name, spaces spelled U+2581 (SentencePiece's space), empty
 * pieces as control tokens. Returns the token type (vocab.h's numbering
 * is GGUF's); *text is malloc'd, NULL when out of memory. */
static int vocab_entry(const vocab *v, int id, char **text)
{
    static const char *const special[] = {"<unk>", "<s>", "</s>"};
    size_t len;
    const char *piece = vocab_text(v, id, &len);
    if (id < 3) {
        piece = special[id];
        len = strlen(piece);
    }
    *text = malloc(3 * len + 1);
    if (!*text)
        return -1;
    char *o = *text;
    for (size_t i = 0; i < len; i++) {
        if (piece[i] == ' ') {
            memcpy(o, "\xe2\x96\x81", 3);
            o += 3;
        } else {
            *o++ = piece[i];
        }
    }
    *o = '\0';
    if (id == 0)
        return VOCAB_UNKNOWN;
    if (id < 3 || len == 0)
        return VOCAB_CONTROL;
    return vocab_type(v, id) == VOCAB_BYTE ? VOCAB_BYTE : VOCAB_NORMAL;
}

/* tokenizer.ggml.tokens, scores and token_type for a vocabulary of n:
 * the llama2.c tokenizer's tokens, and past its end (a synthetic model's
 * vocab is larger than the embedded tokenizer's 512) placeholder tokens
 * "<unusedN>" of type unused, which no text encodes to and which decode
 * to nothing. */
static int write_vocab(gguf_writer *w, const vocab *v, int n, char *err, size_t errlen)
{
    int have = vocab_get_info(v)->n_tokens;
    /* Refused before anything is written: the loader would refuse the
     * file (the special ids written below must be tokens). */
    if (have <= TOK_EOS) {
        snprintf(err, errlen,
                 "the tokenizer has %d tokens: unknown_token_id 0, bos_token_id %d and "
                 "eos_token_id %d must be within it",
                 have, TOK_BOS, TOK_EOS);
        return -1;
    }
    if (have > n) {
        snprintf(err, errlen,
                 "the tokenizer has %d tokens, more than the model's %d embedding rows", have, n);
        return -1;
    }
    char **texts = calloc((size_t)n, sizeof *texts);
    float *scores = malloc((size_t)n * sizeof *scores);
    int32_t *types = malloc((size_t)n * sizeof *types);
    int rc = -1;
    if (!texts || !scores || !types)
        goto done;
    for (int id = 0; id < n; id++) {
        if (id < have) {
            types[id] = vocab_entry(v, id, &texts[id]);
            scores[id] = vocab_score(v, id);
        } else {
            types[id] = VOCAB_UNUSED;
            scores[id] = 0.0f;
            if (asprintf(&texts[id], "<unused%d>", id) < 0)
                texts[id] = NULL;
        }
        if (!texts[id])
            goto done;
    }
    gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)texts, NULL,
                            (uint64_t)n);
    gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_F32, scores, (uint64_t)n);
    gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_I32, types, (uint64_t)n);
    rc = 0;
done:
    if (rc != 0)
        snprintf(err, errlen, "out of memory for a vocabulary of %d tokens", n);
    for (int id = 0; texts && id < n; id++)
        free(texts[id]);
    free(texts);
    free(scores);
    free(types);
    return rc;
}

static void set_u32(gguf_writer *w, const char *key, uint32_t v)
{
    gguf_writer_set_val(w, key, GGUF_U32, &v);
}

static void set_f32(gguf_writer *w, const char *key, float v)
{
    gguf_writer_set_val(w, key, GGUF_F32, &v);
}

static void set_str(gguf_writer *w, const char *key, const char *s)
{
    gguf_writer_set_str(w, key, s, strlen(s));
}

/* The keys convert-llama2c-to-ggml writes, in its order, and the RoPE
 * base it leaves to llama.cpp's default. */
static int llama2c_metadata(gguf_writer *w, const model *m, const char *tok_path, char *err,
                            size_t errlen)
{
    const model_config *c = model_config_of(m);
    tokenizer *tok;
    if (tok_load(&tok, tok_path, err, errlen) != 0)
        return -1;
    /* A llama2.c file spells spaces as spaces; a GGUF vocabulary does not. */
    int rc = strcmp(vocab_get_info(tok_vocab(tok))->space, " ") == 0 ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "--tokenizer %s: expected a llama2.c tokenizer file", tok_path);
    else
        rc = write_vocab(w, tok_vocab(tok), c->vocab_size, err, errlen);
    tok_free(tok);
    if (rc != 0)
        return -1;
    set_str(w, "tokenizer.ggml.model", "llama");
    set_str(w, "general.architecture", "llama");
    set_str(w, "general.name", model_name(m));
    set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    set_u32(w, "tokenizer.ggml.bos_token_id", TOK_BOS);
    set_u32(w, "tokenizer.ggml.eos_token_id", TOK_EOS);
    set_u32(w, "tokenizer.ggml.seperator_token_id", UINT32_MAX); /* llama.cpp's spelling */
    set_u32(w, "tokenizer.ggml.padding_token_id", UINT32_MAX);
    set_u32(w, "llama.context_length", (uint32_t)c->seq_len);
    set_u32(w, "llama.embedding_length", (uint32_t)c->dim);
    set_u32(w, "llama.feed_forward_length", (uint32_t)c->hidden_dim);
    set_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads);
    set_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    set_u32(w, "llama.block_count", (uint32_t)c->n_layers);
    set_u32(w, "llama.rope.dimension_count", (uint32_t)c->rope_dim);
    set_f32(w, "llama.attention.layer_norm_rms_epsilon", c->norm_eps);
    set_f32(w, "llama.rope.freq_base", c->rope_base);
    return 0;
}

/* ggml's GGML_QNT_VERSION, which llama-quantize records. */
#define QUANTIZATION_VERSION 2

/* A GGUF source's vocabulary, checked as the loader checks it (special
 * ids, its size against the embedding and output rows) before anything
 * is written: a file the loader would refuse is not made. A file of
 * weights only has none to check. */
static int check_vocab(const gguf *g, char *err, size_t errlen)
{
    const char *kind;
    size_t len;
    int rc = gguf_get_str(g, "tokenizer.ggml.model", &kind, &len, err, errlen);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    vocab *v;
    if (vocab_load_gguf(&v, g, err, errlen) != 0)
        return -1;
    vocab_free(v);
    return 0;
}

static int describe(gguf_writer *w, const source *s, const quant_options *o, char *err,
                    size_t errlen)
{
    if (s->g && check_vocab(s->g, err, errlen) != 0)
        return -1;
    if (s->g) {
        for (int64_t i = 0; i < gguf_n_kv(s->g); i++) {
            gguf_kv_raw kv;
            gguf_kv_at(s->g, i, &kv);
            gguf_writer_copy_kv(w, &kv);
        }
    } else if (llama2c_metadata(w, s->m, o->tokenizer, err, errlen) != 0) {
        return -1;
    }
    set_u32(w, "general.quantization_version", QUANTIZATION_VERSION);
    set_u32(w, "general.file_type", o->type->id);
    for (int i = 0; i < s->n; i++)
        gguf_writer_add_tensor(w, s->t[i].name, s->t[i].out_type, s->t[i].n_dims, s->t[i].ne);
    return 0;
}

/* ---- tensor data ---- */

/* Output bytes per batch of rows converted between writes. */
#define BATCH_BYTES (4u << 20)

typedef struct batch {
    const qtensor *t;
    int64_t row0, rows;
    size_t out_row;
    uint8_t *out;
    float *scratch; /* a row of floats per part */
    int parts;
} batch;

static void convert_part(void *arg, int part)
{
    batch *b = arg;
    const qtensor *t = b->t;
    int64_t per = (b->rows + b->parts - 1) / b->parts;
    int64_t from = per * part, to = from + per < b->rows ? from + per : b->rows;
    float *x = b->scratch + (size_t)part * t->ne[0];
    for (int64_t r = from; r < to; r++) {
        const uint8_t *src = (const uint8_t *)t->data + (size_t)(b->row0 + r) * t->row_bytes;
        qb_dequant_row(t->type, src, x, (int64_t)t->ne[0]);
        qb_quantize_row(t->out_type, x, b->out + (size_t)r * b->out_row, (int64_t)t->ne[0]);
    }
}

static int convert_tensor(gguf_writer *w, pool *p, const qtensor *t, uint8_t *out, float *scratch,
                          char *err, size_t errlen)
{
    int64_t rows = (int64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    size_t out_row = wtype_row_bytes(t->out_type, t->ne[0]);
    int64_t per_batch = (int64_t)(BATCH_BYTES / out_row) > 0 ? (int64_t)(BATCH_BYTES / out_row) : 1;
    batch b = {
        .t = t, .out_row = out_row, .out = out, .scratch = scratch, .parts = pool_threads(p)};
    for (b.row0 = 0; b.row0 < rows; b.row0 += b.rows) {
        b.rows = rows - b.row0 < per_batch ? rows - b.row0 : per_batch;
        pool_run(p, b.parts, convert_part, &b);
        if (gguf_writer_write(w, out, (size_t)b.rows * out_row, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static size_t tensor_bytes(const qtensor *t, uint32_t type)
{
    return wtype_row_bytes(type, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
}

static int write_data(gguf_writer *w, const source *s, int threads, char *err, size_t errlen)
{
    size_t out_max = 0, row_max = 0;
    for (int i = 0; i < s->n; i++) {
        size_t row = wtype_row_bytes(s->t[i].out_type, s->t[i].ne[0]);
        out_max = row > out_max ? row : out_max;
        row_max = s->t[i].ne[0] > row_max ? (size_t)s->t[i].ne[0] : row_max;
    }
    out_max = out_max > BATCH_BYTES ? out_max : BATCH_BYTES;
    pool *p = NULL;
    uint8_t *out = malloc(out_max);
    float *scratch = malloc((size_t)threads * row_max * sizeof *scratch);
    int rc = -1;
    if (!out || !scratch) {
        snprintf(err, errlen, "out of memory for conversion buffers");
        goto done;
    }
    if (pool_create(&p, threads, err, errlen) != 0)
        goto done;
    for (int i = 0; i < s->n; i++) {
        const qtensor *t = &s->t[i];
        int copied = t->out_type == t->type;
        if (copied ? gguf_writer_write(w, t->data, tensor_bytes(t, t->type), err, errlen)
                   : convert_tensor(w, p, t, out, scratch, err, errlen))
            goto done;
    }
    rc = 0;
done:
    pool_free(p);
    free(scratch);
    free(out);
    return rc;
}

/* ---- the verb ---- */

/* "Q4_K 25, Q6_K 5, F32 9": how many tensors the file holds of each type. */
static void type_counts(const source *s, char *out, size_t len)
{
    int count[WT_ID_MAX] = {0};
    for (int i = 0; i < s->n; i++)
        count[s->t[i].out_type]++;
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t t = 0; t < WT_ID_MAX && used < len; t++)
        if (count[t])
            used += (size_t)snprintf(out + used, len - used, "%s%s %d", used ? ", " : "",
                                     wtype_name(t), count[t]);
}

static int quantize(const quant_options *o, char *err, size_t errlen)
{
    source s = {0};
    gguf_writer *w = NULL;
    double t0 = clock_ms();
    int rc = -1;
    if (source_open(&s, o->model, err, errlen) != 0 || plan(&s, o->type, err, errlen) != 0 ||
        gguf_writer_open(&w, o->out, err, errlen) != 0 || describe(w, &s, o, err, errlen) != 0 ||
        gguf_writer_begin(w, err, errlen) != 0 || write_data(w, &s, o->threads, err, errlen) != 0 ||
        gguf_writer_commit(w, err, errlen) != 0)
        goto done;
    char types[160];
    type_counts(&s, types, sizeof types);
    printf("wrote %s: %s, %s (%.1f s)\n", o->out, o->type->name, types, (clock_ms() - t0) / 1000.0);
    rc = 0;
done:
    gguf_writer_free(w);
    source_close(&s);
    return rc;
}

int cmd_quantize(int argc, char **argv)
{
    quant_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char err[512];
    if (quantize(&o, err, sizeof err) != 0) {
        fprintf(stderr, "inferd quantize: %s\n", err);
        return 1;
    }
    return 0;
}
