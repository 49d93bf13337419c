/* vocab.c: vocabularies from llama2.c tokenizer.bin files and GGUF
 * metadata (see vocab.h). */
#include "vocab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pretok.h"

/* llama2.c files: raw byte b is token b + 3 (after <unk>, <s>, </s>). */
#define LLAMA2C_BYTE_BASE 3
#define LLAMA2C_MIN_VOCAB (LLAMA2C_BYTE_BASE + 256)
#define LLAMA2C_MAX_TOKEN_LENGTH 4096
#define MAX_VOCAB (1 << 24)

#define SPACE_U2581 "\xE2\x96\x81"

/* Open addressing with linear probing over ids; -1 marks a free slot. */
typedef struct table {
    int32_t *slot;
    size_t mask;
} table;

struct vocab {
    vocab_info info;
    char *text;  /* every token's text, back to back */
    size_t *off; /* token i is text[off[i] .. off[i] + len[i]) */
    uint32_t *len;
    float *score;
    unsigned char *type;
    table by_text;
    /* Merge i (rank i) is mtext[moff[i] .. + mlen[i]), split at msplit[i]. */
    char *mtext;
    size_t *moff;
    uint32_t *mlen, *msplit;
    int n_merges;
    table by_pair;
    int byte_id[256];
};

static uint64_t hash_bytes(const char *s, size_t len, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325u ^ seed;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
    return h ^ (h >> 29);
}

static int table_init(table *t, int n)
{
    size_t cap = 16;
    while (cap < (size_t)n * 2)
        cap *= 2;
    t->slot = malloc(cap * sizeof *t->slot);
    if (!t->slot)
        return -1;
    memset(t->slot, 0xff, cap * sizeof *t->slot);
    t->mask = cap - 1;
    return 0;
}

static int token_is(const vocab *v, int id, const char *s, size_t len)
{
    return v->len[id] == len && memcmp(v->text + v->off[id], s, len) == 0;
}

/* The slot holding s, or the free slot where it would go. */
static size_t text_slot(const vocab *v, const char *s, size_t len)
{
    size_t i = hash_bytes(s, len, 0) & v->by_text.mask;
    while (v->by_text.slot[i] >= 0 && !token_is(v, v->by_text.slot[i], s, len))
        i = (i + 1) & v->by_text.mask;
    return i;
}

int vocab_find(const vocab *v, const char *s, size_t len)
{
    return v->by_text.slot[text_slot(v, s, len)];
}

static int merge_is(const vocab *v, int m, const char *s, size_t len, size_t split)
{
    return v->mlen[m] == len && v->msplit[m] == split && memcmp(v->mtext + v->moff[m], s, len) == 0;
}

static size_t pair_slot(const vocab *v, const char *s, size_t len, size_t split)
{
    size_t i = hash_bytes(s, len, split) & v->by_pair.mask;
    while (v->by_pair.slot[i] >= 0 && !merge_is(v, v->by_pair.slot[i], s, len, split))
        i = (i + 1) & v->by_pair.mask;
    return i;
}

int vocab_merge_rank(const vocab *v, const char *s, size_t len, size_t split)
{
    if (v->n_merges == 0)
        return -1;
    return v->by_pair.slot[pair_slot(v, s, len, split)];
}

void vocab_free(vocab *v)
{
    if (!v)
        return;
    free(v->text);
    free(v->off);
    free(v->len);
    free(v->score);
    free(v->type);
    free(v->by_text.slot);
    free(v->mtext);
    free(v->moff);
    free(v->mlen);
    free(v->msplit);
    free(v->by_pair.slot);
    free(v);
}

const vocab_info *vocab_get_info(const vocab *v)
{
    return &v->info;
}

const char *vocab_text(const vocab *v, int id, size_t *len)
{
    *len = v->len[id];
    return v->text + v->off[id];
}

float vocab_score(const vocab *v, int id)
{
    return v->score[id];
}

int vocab_type(const vocab *v, int id)
{
    return v->type[id];
}

int vocab_byte_token(const vocab *v, unsigned char b)
{
    return v->byte_id[b];
}

/* Room for n tokens whose texts take text_bytes in all. */
static int alloc_tokens(vocab *v, int n, size_t text_bytes, const char *what, char *err,
                        size_t errlen)
{
    v->info.n_tokens = n;
    v->text = malloc(text_bytes ? text_bytes : 1);
    v->off = malloc(n * sizeof *v->off);
    v->len = malloc(n * sizeof *v->len);
    v->score = calloc(n, sizeof *v->score);
    v->type = malloc(n);
    if (!v->text || !v->off || !v->len || !v->score || !v->type) {
        snprintf(err, errlen, "%s: out of memory for %d tokens", what, n);
        return -1;
    }
    memset(v->type, VOCAB_NORMAL, n);
    return 0;
}

/* Indexes every non-empty text. A repeated text keeps its first id, or is
 * an error when `unique` (GGUF: llama.cpp refuses such files too). */
static int index_texts(vocab *v, int unique, const char *what, char *err, size_t errlen)
{
    if (table_init(&v->by_text, v->info.n_tokens) != 0) {
        snprintf(err, errlen, "%s: out of memory for the token index", what);
        return -1;
    }
    for (int id = 0; id < v->info.n_tokens; id++) {
        if (v->len[id] == 0)
            continue;
        size_t slot = text_slot(v, v->text + v->off[id], v->len[id]);
        int other = v->by_text.slot[slot];
        if (other < 0) {
            v->by_text.slot[slot] = id;
        } else if (unique) {
            snprintf(err, errlen, "%s: tokens %d and %d have the same text '%.*s'", what, other, id,
                     (int)v->len[id], v->text + v->off[id]);
            return -1;
        }
    }
    return 0;
}

/* llama2.c's file: every record is checked before anything is kept. */
static int llama2c_scan(const unsigned char *buf, size_t size, const char *what, int *count,
                        size_t *text_bytes, char *err, size_t errlen)
{
    int32_t m;
    if (size < sizeof m) {
        snprintf(err, errlen, "%s: file is %zu bytes, expected at least 4 for max_token_length",
                 what, size);
        return -1;
    }
    memcpy(&m, buf, sizeof m);
    if (m < 1 || m > LLAMA2C_MAX_TOKEN_LENGTH) {
        snprintf(err, errlen, "%s: max_token_length=%d, expected 1..%d", what, (int)m,
                 LLAMA2C_MAX_TOKEN_LENGTH);
        return -1;
    }
    size_t off = sizeof m, text = 0;
    int n = 0;
    while (off < size) {
        int32_t len;
        if (size - off < 8) {
            snprintf(err, errlen,
                     "%s: truncated in token %d (score and length need 8 bytes, %zu left)", what, n,
                     size - off);
            return -1;
        }
        memcpy(&len, buf + off + 4, sizeof len);
        if (len < 0 || len > m) {
            snprintf(err, errlen, "%s: token %d has length %d, expected 0..%d (max_token_length)",
                     what, n, (int)len, (int)m);
            return -1;
        }
        if (size - off - 8 < (size_t)len) {
            snprintf(err, errlen, "%s: truncated in token %d (%d bytes announced, %zu left)", what,
                     n, (int)len, size - off - 8);
            return -1;
        }
        off += 8 + (size_t)len;
        text += (size_t)len;
        if (++n > MAX_VOCAB) {
            snprintf(err, errlen, "%s: more than %d tokens", what, MAX_VOCAB);
            return -1;
        }
    }
    if (n < LLAMA2C_MIN_VOCAB) {
        snprintf(err, errlen, "%s: %d tokens, expected at least %d (3 specials and 256 bytes)",
                 what, n, LLAMA2C_MIN_VOCAB);
        return -1;
    }
    *count = n;
    *text_bytes = text;
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* "<0xNN>": SentencePiece's spelling of a raw byte; -1 for anything else. */
static int parse_byte_token(const char *s, size_t len)
{
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

int vocab_byte_value(const vocab *v, int id)
{
    return parse_byte_token(v->text + v->off[id], v->len[id]);
}

static void llama2c_info(vocab *v)
{
    v->info.kind = VOCAB_SPM;
    v->info.bos = 1;
    v->info.eos = 2;
    v->info.unk = 0;
    v->info.pad = -1;
    v->info.add_bos = 1;
    v->info.add_eos = 0;
    v->info.add_space_prefix = 1;
    v->info.space = " ";
    v->type[0] = VOCAB_UNKNOWN;
    v->type[1] = VOCAB_CONTROL;
    v->type[2] = VOCAB_CONTROL;
    for (int id = 3; id < v->info.n_tokens; id++)
        if (parse_byte_token(v->text + v->off[id], v->len[id]) >= 0)
            v->type[id] = VOCAB_BYTE;
    for (int b = 0; b < 256; b++)
        v->byte_id[b] = LLAMA2C_BYTE_BASE + b;
}

int vocab_load_llama2c(vocab **out, const unsigned char *buf, size_t size, const char *what,
                       char *err, size_t errlen)
{
    *out = NULL;
    int n;
    size_t text_bytes;
    if (llama2c_scan(buf, size, what, &n, &text_bytes, err, errlen) != 0)
        return -1;
    vocab *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "%s: out of memory for the vocabulary", what);
        return -1;
    }
    if (alloc_tokens(v, n, text_bytes, what, err, errlen) != 0) {
        vocab_free(v);
        return -1;
    }
    size_t off = sizeof(int32_t), text = 0;
    for (int i = 0; i < n; i++) {
        int32_t len;
        memcpy(&v->score[i], buf + off, sizeof(float));
        memcpy(&len, buf + off + 4, sizeof len);
        memcpy(v->text + text, buf + off + 8, (size_t)len);
        v->off[i] = text;
        v->len[i] = (uint32_t)len;
        text += (size_t)len;
        off += 8 + (size_t)len;
    }
    llama2c_info(v);
    if (index_texts(v, 0, what, err, errlen) != 0) {
        vocab_free(v);
        return -1;
    }
    *out = v;
    return 0;
}

/* An array key that must hold at least `need` elements (need 0: any). */
static int gguf_array(const gguf *g, const char *key, uint64_t need, uint64_t *n, char *err,
                      size_t errlen)
{
    int type;
    int rc = gguf_get_arr(g, key, &type, n, err, errlen);
    if (rc == 0 && *n < need) {
        snprintf(err, errlen, "%s: %s has %llu elements, expected %llu (one per token)",
                 gguf_name(g), key, (unsigned long long)*n, (unsigned long long)need);
        return -1;
    }
    return rc;
}

static int gguf_tokens(vocab *v, const gguf *g, char *err, size_t errlen)
{
    const char *key = "tokenizer.ggml.tokens", *what = gguf_name(g);
    uint64_t n;
    int rc = gguf_array(g, key, 0, &n, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "%s: no %s: the file holds no tokenizer", what, key);
    if (rc != 0)
        return -1;
    if (n < 1 || n > MAX_VOCAB) {
        snprintf(err, errlen, "%s: %s has %llu tokens, expected 1..%d", what, key,
                 (unsigned long long)n, MAX_VOCAB);
        return -1;
    }
    size_t text_bytes = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if (gguf_arr_str(g, key, i, &s, &len) != 0) {
            snprintf(err, errlen, "%s: %s is not an array of strings", what, key);
            return -1;
        }
        if (len > UINT32_MAX) {
            snprintf(err, errlen, "%s: token %llu is %zu bytes long", what, (unsigned long long)i,
                     len);
            return -1;
        }
        text_bytes += len;
    }
    if (alloc_tokens(v, (int)n, text_bytes, what, err, errlen) != 0)
        return -1;
    size_t text = 0;
    for (int i = 0; i < (int)n; i++) {
        const char *s;
        size_t len;
        gguf_arr_str(g, key, (uint64_t)i, &s, &len);
        memcpy(v->text + text, s, len);
        v->off[i] = text;
        v->len[i] = (uint32_t)len;
        text += len;
    }
    return 0;
}

/* Scores and token types are optional; when present, one per token. */
static int gguf_scores_types(vocab *v, const gguf *g, char *err, size_t errlen)
{
    const char *skey = "tokenizer.ggml.scores", *tkey = "tokenizer.ggml.token_type";
    uint64_t n, need = (uint64_t)v->info.n_tokens;
    int rc = gguf_array(g, skey, need, &n, err, errlen);
    if (rc < 0)
        return -1;
    for (uint64_t i = 0; rc == 0 && i < need; i++) {
        double s;
        if (gguf_arr_f64(g, skey, i, &s) != 0) {
            snprintf(err, errlen, "%s: %s is not an array of numbers", gguf_name(g), skey);
            return -1;
        }
        v->score[i] = (float)s;
    }
    rc = gguf_array(g, tkey, need, &n, err, errlen);
    if (rc < 0)
        return -1;
    for (uint64_t i = 0; rc == 0 && i < need; i++) {
        int64_t t;
        if (gguf_arr_i64(g, tkey, i, &t) != 0) {
            snprintf(err, errlen, "%s: %s is not an array of integers", gguf_name(g), tkey);
            return -1;
        }
        /* llama.cpp reads other values as "undefined": never produced. */
        v->type[i] = t >= VOCAB_NORMAL && t <= VOCAB_BYTE ? (unsigned char)t : 0;
    }
    return 0;
}

/* "a b" is the merge of "a" and "b"; the split is the first space after
 * the first byte, as in llama.cpp (a token may itself be a space). */
static int gguf_merges(vocab *v, const gguf *g, char *err, size_t errlen)
{
    const char *key = "tokenizer.ggml.merges", *what = gguf_name(g);
    uint64_t n;
    int rc = gguf_array(g, key, 0, &n, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "%s: no %s, which a gpt2 tokenizer needs", what, key);
    if (rc != 0)
        return -1;
    if (n > MAX_VOCAB) {
        snprintf(err, errlen, "%s: %s has %llu merges, expected at most %d", what, key,
                 (unsigned long long)n, MAX_VOCAB);
        return -1;
    }
    size_t bytes = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        if (gguf_arr_str(g, key, i, &s, &len) != 0) {
            snprintf(err, errlen, "%s: %s is not an array of strings", what, key);
            return -1;
        }
        bytes += len;
    }
    v->mtext = malloc(bytes ? bytes : 1);
    v->moff = malloc((n ? n : 1) * sizeof *v->moff);
    v->mlen = malloc((n ? n : 1) * sizeof *v->mlen);
    v->msplit = malloc((n ? n : 1) * sizeof *v->msplit);
    if (!v->mtext || !v->moff || !v->mlen || !v->msplit || table_init(&v->by_pair, (int)n) != 0) {
        snprintf(err, errlen, "%s: out of memory for %llu merges", what, (unsigned long long)n);
        return -1;
    }
    size_t at = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s, *sp;
        size_t len;
        gguf_arr_str(g, key, i, &s, &len);
        if (len < 2 || !(sp = memchr(s + 1, ' ', len - 1)))
            continue; /* not a pair: never matches, its rank stays unused */
        size_t split = (size_t)(sp - s);
        int m = v->n_merges;
        memcpy(v->mtext + at, s, split);
        memcpy(v->mtext + at + split, sp + 1, len - split - 1);
        v->moff[m] = at;
        v->mlen[m] = (uint32_t)(len - 1);
        v->msplit[m] = (uint32_t)split;
        size_t slot = pair_slot(v, v->mtext + at, len - 1, split);
        if (v->by_pair.slot[slot] >= 0)
            continue; /* a repeated pair keeps its first rank */
        v->by_pair.slot[slot] = m;
        at += len - 1;
        v->n_merges++;
    }
    return 0;
}

/* A special id from the file, when present and inside the vocabulary
 * (llama.cpp ignores one that is not, and so does this). */
static int gguf_special(const vocab *v, const gguf *g, const char *key, int *id, char *err,
                        size_t errlen)
{
    uint64_t x;
    int rc = gguf_get_u64(g, key, &x, err, errlen);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* 0xFFFFFFFF (-1 as written by llama.cpp's tools): no such token. */
    if (x == UINT32_MAX || x == UINT64_MAX) {
        *id = -1;
        return 0;
    }
    if (x >= (uint64_t)v->info.n_tokens) {
        snprintf(err, errlen, "%s: %s is %llu, outside the vocabulary of %d tokens", gguf_name(g),
                 key, (unsigned long long)x, v->info.n_tokens);
        return -1;
    }
    *id = (int)x;
    return 0;
}

static int gguf_flag(const gguf *g, const char *key, int *flag, char *err, size_t errlen)
{
    return gguf_get_bool(g, key, flag, err, errlen) < 0 ? -1 : 0;
}

/* Kind, pre-tokenizer and the defaults llama.cpp gives each kind. */
static int gguf_kind(vocab *v, const gguf *g, char *err, size_t errlen)
{
    const char *what = gguf_name(g), *s;
    size_t len;
    int rc = gguf_get_str(g, "tokenizer.ggml.model", &s, &len, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "%s: no tokenizer.ggml.model: the file holds no tokenizer", what);
    if (rc != 0)
        return -1;
    vocab_info *in = &v->info;
    in->pad = -1;
    in->add_eos = 0;
    if (len == 5 && memcmp(s, "llama", 5) == 0) {
        in->kind = VOCAB_SPM;
        in->bos = 1;
        in->eos = 2;
        in->unk = 0;
        in->add_bos = 1;
        in->add_space_prefix = 1;
        in->space = SPACE_U2581;
        return 0;
    }
    if (!(len == 4 && memcmp(s, "gpt2", 4) == 0)) {
        snprintf(err, errlen, "%s: tokenizer.ggml.model is '%.*s', expected llama or gpt2", what,
                 (int)(len > 64 ? 64 : len), s);
        return -1;
    }
    in->kind = VOCAB_BPE;
    in->bos = in->eos = 11;
    in->unk = -1;
    in->add_space_prefix = 0;
    in->space = " ";
    rc = gguf_get_str(g, "tokenizer.ggml.pre", &s, &len, err, errlen);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        s = "default";
        len = 7;
    }
    if (len >= sizeof in->pre) {
        snprintf(err, errlen, "%s: tokenizer.ggml.pre is %zu bytes long, not a known name", what,
                 len);
        return -1;
    }
    memcpy(in->pre, s, len);
    in->pre[len] = '\0';
    int flags = pretok_flags(in->pre);
    if (flags < 0) {
        snprintf(err, errlen, "%s: tokenizer.ggml.pre is '%s', a pre-tokenizer not supported here",
                 what, in->pre);
        return -1;
    }
    in->add_bos = (flags & PRETOK_ADD_BOS) != 0;
    return 0;
}

static int gguf_specials(vocab *v, const gguf *g, char *err, size_t errlen)
{
    vocab_info *in = &v->info;
    int *ids[] = {&in->bos, &in->eos, &in->unk, &in->pad};
    for (int i = 0; i < 4; i++)
        if (*ids[i] >= in->n_tokens)
            *ids[i] = -1;
    if (gguf_special(v, g, "tokenizer.ggml.bos_token_id", &in->bos, err, errlen) != 0 ||
        gguf_special(v, g, "tokenizer.ggml.eos_token_id", &in->eos, err, errlen) != 0 ||
        gguf_special(v, g, "tokenizer.ggml.unknown_token_id", &in->unk, err, errlen) != 0 ||
        gguf_special(v, g, "tokenizer.ggml.padding_token_id", &in->pad, err, errlen) != 0 ||
        gguf_flag(g, "tokenizer.ggml.add_bos_token", &in->add_bos, err, errlen) != 0 ||
        gguf_flag(g, "tokenizer.ggml.add_eos_token", &in->add_eos, err, errlen) != 0 ||
        gguf_flag(g, "tokenizer.ggml.add_space_prefix", &in->add_space_prefix, err, errlen) != 0)
        return -1;
    if ((in->add_bos && in->bos < 0) || (in->add_eos && in->eos < 0)) {
        snprintf(err, errlen, "%s: tokenizer.ggml.add_%s_token is set but there is no such token",
                 gguf_name(g), in->add_bos && in->bos < 0 ? "bos" : "eos");
        return -1;
    }
    return 0;
}

/* Every embedding row is a token (a smaller vocabulary leaves rows no
 * id names), and every token has an output row (a larger one has ids
 * the model cannot produce). */
static int check_rows(const vocab *v, const gguf *g, char *err, size_t errlen)
{
    const gguf_tensor *emb = gguf_tensor_find(g, "token_embd.weight");
    const gguf_tensor *outw = gguf_tensor_find(g, "output.weight");
    uint64_t n = (uint64_t)v->info.n_tokens;
    if (emb && emb->n_dims >= 2 && n < emb->ne[1]) {
        snprintf(err, errlen,
                 "%s: the vocabulary has %llu tokens, fewer than the %llu rows of "
                 "token_embd.weight (ids %llu..%llu have no token)",
                 gguf_name(g), (unsigned long long)n, (unsigned long long)emb->ne[1],
                 (unsigned long long)n, (unsigned long long)emb->ne[1] - 1);
        return -1;
    }
    if (outw && outw->n_dims >= 2 && n > outw->ne[1]) {
        snprintf(err, errlen,
                 "%s: the vocabulary has %llu tokens, more than the %llu rows of output.weight "
                 "(ids %llu..%llu have no logit)",
                 gguf_name(g), (unsigned long long)n, (unsigned long long)outw->ne[1],
                 (unsigned long long)outw->ne[1], (unsigned long long)n - 1);
        return -1;
    }
    return 0;
}

/* SPM byte fallback: "<0xNN>", else the byte itself as a token. */
static void find_byte_tokens(vocab *v)
{
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char s[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        char c = (char)b;
        int id = vocab_find(v, s, sizeof s);
        v->byte_id[b] = id >= 0 ? id : vocab_find(v, &c, 1);
    }
}

int vocab_load_gguf(vocab **out, const gguf *g, char *err, size_t errlen)
{
    *out = NULL;
    vocab *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(err, errlen, "%s: out of memory for the vocabulary", gguf_name(g));
        return -1;
    }
    if (gguf_kind(v, g, err, errlen) != 0 || gguf_tokens(v, g, err, errlen) != 0 ||
        gguf_scores_types(v, g, err, errlen) != 0 || gguf_specials(v, g, err, errlen) != 0 ||
        index_texts(v, 1, gguf_name(g), err, errlen) != 0 ||
        (v->info.kind == VOCAB_BPE && gguf_merges(v, g, err, errlen) != 0)) {
        vocab_free(v);
        return -1;
    }
    if (check_rows(v, g, err, errlen) != 0) {
        vocab_free(v);
        return -1;
    }
    find_byte_tokens(v);
    *out = v;
    return 0;
}
