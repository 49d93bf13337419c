/* tokenizer.c: loading, special tokens, and the encode/decode entry points
 * (see tokenizer.h); the algorithms are in tok_spm.c and tok_bpe.c. */
#include "tokenizer.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_int.h"
#include "vocab.h"

extern const unsigned char embedded_tokenizer_start[];
extern const unsigned char embedded_tokenizer_end[];

/* Symbol offsets are 32-bit and the merge queue takes 3 entries a byte. */
#define MAX_TEXT ((size_t)1 << 28)

struct tokenizer {
    vocab *v;
    const vocab_info *in;
    bpe *bpe;      /* VOCAB_BPE only */
    int *specials; /* control, unknown and user-defined ids, longest text first */
    int n_specials;
    char *pieces;      /* every token's bytes, NUL after each (tok_decode returns them) */
    size_t *piece_off; /* token id's bytes start at piece_off[id], end 1 before piece_off[id + 1] */
    int end;           /* tok_end() */
};

/* A piece of the text: raw text (id -1) or a special token found in it. */
typedef struct frag {
    size_t off, len;
    int id;
    int next; /* -1 at the end; the list starts at 0 */
} frag;

typedef struct frags {
    frag *v;
    int n, cap;
} frags;

void tok_free(tokenizer *t)
{
    if (!t)
        return;
    bpe_free(t->bpe);
    vocab_free(t->v);
    free(t->specials);
    free(t->pieces);
    free(t->piece_off);
    free(t);
}

typedef struct by_len {
    size_t len;
    int id;
} by_len;

static int longest_first(const void *a, const void *b)
{
    const by_len *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int is_special(int type)
{
    return type == VOCAB_CONTROL || type == VOCAB_UNKNOWN || type == VOCAB_USER;
}

/* The tokens a text may spell as a whole, in the order llama.cpp looks for
 * them: longest text first. */
static int find_specials(tokenizer *t)
{
    int n = 0;
    for (int id = 0; id < t->in->n_tokens; id++)
        n += is_special(vocab_type(t->v, id));
    by_len *s = malloc((n ? n : 1) * sizeof *s);
    t->specials = malloc((n ? n : 1) * sizeof *t->specials);
    if (!s || !t->specials) {
        free(s);
        return -1;
    }
    n = 0;
    for (int id = 0; id < t->in->n_tokens; id++) {
        size_t len;
        vocab_text(t->v, id, &len);
        if (is_special(vocab_type(t->v, id)) && len > 0)
            s[n++] = (by_len){len, id};
    }
    qsort(s, n, sizeof *s, longest_first);
    for (int i = 0; i < n; i++)
        t->specials[i] = s[i].id;
    t->n_specials = n;
    free(s);
    return 0;
}

/* Token id's bytes into buf (room for its text's length), special tokens
 * as their text. */
static size_t token_bytes(const tokenizer *t, int id, char *buf)
{
    size_t len;
    const char *text = vocab_text(t->v, id, &len);
    int type = vocab_type(t->v, id), b;
    switch (type) {
    case VOCAB_NORMAL:
        return t->in->kind == VOCAB_SPM ? spm_piece(t->v, id, buf) : bpe_piece(t->v, id, buf);
    case VOCAB_BYTE:
        b = vocab_byte_value(t->v, id);
        if (b < 0)
            return 0;
        buf[0] = (char)b;
        return 1;
    case VOCAB_CONTROL:
    case VOCAB_UNKNOWN:
    case VOCAB_USER:
        memcpy(buf, text, len);
        return len;
    default: /* unused or undefined: llama.cpp shows nothing */
        return 0;
    }
}

static int decode_pieces(tokenizer *t)
{
    int n = t->in->n_tokens;
    size_t bytes = 0, len;
    for (int id = 0; id < n; id++) {
        vocab_text(t->v, id, &len);
        bytes += len + 1;
    }
    t->pieces = malloc(bytes);
    t->piece_off = malloc(((size_t)n + 1) * sizeof *t->piece_off);
    if (!t->pieces || !t->piece_off)
        return -1;
    size_t at = 0;
    for (int id = 0; id < n; id++) {
        t->piece_off[id] = at;
        at += token_bytes(t, id, t->pieces + at);
        t->pieces[at++] = '\0';
    }
    t->piece_off[n] = at;
    return 0;
}

/* Takes v and makes the tokenizer of it; `llama2c` for a llama2.c file. */
static int finish(tokenizer **out, vocab *v, int llama2c, const char *what, char *err,
                  size_t errlen)
{
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) {
        vocab_free(v);
        snprintf(err, errlen, "%s: out of memory for the tokenizer", what);
        return -1;
    }
    t->v = v;
    t->in = vocab_get_info(v);
    /* llama2.c's models end a text with BOS, where run.c stops. */
    t->end = llama2c ? t->in->bos : t->in->eos;
    if (t->in->kind == VOCAB_BPE && bpe_new(&t->bpe, v, err, errlen) != 0) {
        tok_free(t);
        return -1;
    }
    if (find_specials(t) != 0 || decode_pieces(t) != 0) {
        tok_free(t);
        snprintf(err, errlen, "%s: out of memory for the tokenizer", what);
        return -1;
    }
    *out = t;
    return 0;
}

int tok_load_gguf(tokenizer **out, const gguf *g, char *err, size_t errlen)
{
    *out = NULL;
    vocab *v;
    if (vocab_load_gguf(&v, g, err, errlen) != 0)
        return -1;
    return finish(out, v, 0, gguf_name(g), err, errlen);
}

static int load_gguf_file(tokenizer **out, const char *path, char *err, size_t errlen)
{
    gguf *g;
    if (gguf_open(&g, path, err, errlen) != 0)
        return -1;
    int rc = tok_load_gguf(out, g, err, errlen);
    gguf_close(g);
    return rc;
}

static int load_llama2c(tokenizer **out, const unsigned char *buf, size_t size, const char *what,
                        char *err, size_t errlen)
{
    vocab *v;
    if (vocab_load_llama2c(&v, buf, size, what, err, errlen) != 0)
        return -1;
    return finish(out, v, 1, what, err, errlen);
}

/* Whether the file starts as a GGUF file does (failures to read are left
 * for the reader to report). */
static int is_gguf_file(const char *path)
{
    char magic[4];
    FILE *f = fopen(path, "rb");
    int yes = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (f)
        fclose(f);
    return yes;
}

static int read_file(const char *path, unsigned char **out, size_t *size, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    unsigned char *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        len = ftell(f);
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc(len > 0 ? (size_t)len : 1);
    int ok = buf && fread(buf, 1, (size_t)len, f) == (size_t)len;
    fclose(f);
    if (!ok) {
        free(buf);
        snprintf(err, errlen, "%s: cannot read the file", path);
        return -1;
    }
    *out = buf;
    *size = (size_t)len;
    return 0;
}

int tok_load(tokenizer **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    if (!path)
        return load_llama2c(out, embedded_tokenizer_start,
                            (size_t)(embedded_tokenizer_end - embedded_tokenizer_start),
                            "embedded tok512", err, errlen);
    if (is_gguf_file(path))
        return load_gguf_file(out, path, err, errlen);
    unsigned char *buf;
    size_t size;
    if (read_file(path, &buf, &size, err, errlen) != 0)
        return -1;
    int rc = load_llama2c(out, buf, size, path, err, errlen);
    free(buf);
    return rc;
}

int tok_vocab_size(const tokenizer *t)
{
    return t->in->n_tokens;
}

const vocab *tok_vocab(const tokenizer *t)
{
    return t->v;
}

int tok_bos(const tokenizer *t)
{
    return t->in->bos;
}

int tok_eos(const tokenizer *t)
{
    return t->in->eos;
}

int tok_end(const tokenizer *t)
{
    return t->end;
}

int tok_add_bos(const tokenizer *t)
{
    return t->in->add_bos;
}

int tok_add_eos(const tokenizer *t)
{
    return t->in->add_eos;
}

static int frag_add(frags *f, size_t off, size_t len, int id, int after)
{
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 16;
        frag *v = realloc(f->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        f->v = v;
        f->cap = cap;
    }
    int i = f->n++;
    f->v[i] = (frag){off, len, id, -1};
    if (after >= 0) {
        f->v[i].next = f->v[after].next;
        f->v[after].next = i;
    }
    return i;
}

/* Cuts raw fragment i at every occurrence of special token id's text,
 * left to right. Returns the last fragment it made, or -1 when out of
 * memory. */
static int cut_fragment(frags *f, int i, const char *text, const char *s, size_t n, int id)
{
    size_t at = f->v[i].off, end = at + f->v[i].len;
    const char *hit;
    while ((hit = memmem(text + at, end - at, s, n))) {
        size_t pos = (size_t)(hit - text);
        if (pos > at) {
            f->v[i].len = pos - at;
            if ((i = frag_add(f, pos, n, id, i)) < 0)
                return -1;
        } else {
            f->v[i] = (frag){pos, n, id, f->v[i].next};
        }
        at = pos + n;
        if (at == end)
            break;
        if ((i = frag_add(f, at, end - at, -1, i)) < 0)
            return -1;
    }
    return i;
}

/* Whether every byte pair of s (or its one byte) occurs in the text: a
 * cheap test that skips most special tokens without searching. */
static int may_occur(const unsigned char *pairs, const unsigned char *bytes, const char *s,
                     size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 1)
        return bytes[u[0] >> 3] >> (u[0] & 7) & 1;
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned p = (unsigned)u[i] << 8 | u[i + 1];
        if (!(pairs[p >> 3] >> (p & 7) & 1))
            return 0;
    }
    return 1;
}

/* llama.cpp's partition: for each special token, longest first, every
 * occurrence inside still-raw text becomes that token. Control and
 * unknown tokens only when parse_special; user-defined ones always. */
static int partition(const tokenizer *t, const char *text, size_t len, int parse_special, frags *f)
{
    if (len == 0)
        return 0;
    if (frag_add(f, 0, len, -1, -1) < 0)
        return -1;
    static const size_t pair_bits = 1 << 16;
    unsigned char *pairs = calloc(pair_bits / 8 + 32, 1), *bytes = pairs + pair_bits / 8;
    if (!pairs)
        return -1;
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++) {
        bytes[u[i] >> 3] |= (unsigned char)(1 << (u[i] & 7));
        if (i + 1 < len) {
            unsigned p = (unsigned)u[i] << 8 | u[i + 1];
            pairs[p >> 3] |= (unsigned char)(1 << (p & 7));
        }
    }
    int rc = 0;
    for (int k = 0; k < t->n_specials && rc == 0; k++) {
        int id = t->specials[k];
        size_t n;
        const char *s = vocab_text(t->v, id, &n);
        if ((!parse_special && vocab_type(t->v, id) != VOCAB_USER) ||
            !may_occur(pairs, bytes, s, n))
            continue;
        for (int i = 0; i >= 0; i = f->v[i].next) {
            if (f->v[i].id < 0 && (i = cut_fragment(f, i, text, s, n, id)) < 0) {
                rc = -1;
                break;
            }
        }
    }
    free(pairs);
    return rc;
}

static int encode_fragments(const tokenizer *t, const char *text, const frags *f, merger *m,
                            tok_ids *out, char *err, size_t errlen)
{
    int after_special = 1; /* SPM puts a space before text that starts a fragment */
    for (int i = 0; f->n > 0 && i >= 0; i = f->v[i].next) {
        const frag *g = &f->v[i];
        int rc;
        if (g->id >= 0) {
            rc = tok_ids_push(out, g->id);
            after_special = 1;
        } else if (t->in->kind == VOCAB_SPM) {
            rc = spm_encode(t->v, m, text + g->off, g->len,
                            t->in->add_space_prefix && after_special, out);
            after_special = 0;
        } else {
            rc = bpe_encode(t->bpe, m, text + g->off, g->len, out, err, errlen);
            after_special = 0;
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

int tok_tokenize(const tokenizer *t, const char *text, size_t len, int flags, int **ids, char *err,
                 size_t errlen)
{
    *ids = NULL;
    if (len > MAX_TEXT) {
        snprintf(err, errlen, "text of %zu bytes, at most %zu can be tokenized", len, MAX_TEXT);
        return -1;
    }
    tok_ids out = {0};
    merger m = {0};
    frags f = {0};
    int rc = -1;
    err[0] = '\0';
    if ((flags & TOK_ADD_BOS) && t->in->bos >= 0 && tok_ids_push(&out, t->in->bos) != 0)
        goto done;
    if (partition(t, text, len, (flags & TOK_PARSE_SPECIAL) != 0, &f) != 0 ||
        encode_fragments(t, text, &f, &m, &out, err, errlen) != 0)
        goto done;
    if ((flags & TOK_ADD_EOS) && t->in->eos >= 0 && tok_ids_push(&out, t->in->eos) != 0)
        goto done;
    if (!out.v && !(out.v = malloc(sizeof *out.v)))
        goto done;
    *ids = out.v;
    out.v = NULL;
    rc = (int)out.n;
done:
    if (rc < 0 && err[0] == '\0')
        snprintf(err, errlen, "out of memory tokenizing %zu bytes", len);
    free(out.v);
    free(f.v);
    merger_free(&m);
    return rc;
}

size_t tok_max_tokens(size_t len)
{
    /* BOS, EOS, and two ids a byte: room for every vocabulary with a token
     * for each byte and its space mark (tok_encode refuses to write more). */
    return 2 * len + 3;
}

int tok_encode(const tokenizer *t, const char *text, int bos, int *ids)
{
    char err[160];
    size_t len = strlen(text);
    int *v;
    int n = tok_tokenize(t, text, len, bos ? TOK_ADD_BOS : 0, &v, err, sizeof err);
    if (n < 0)
        return -1;
    if ((size_t)n > tok_max_tokens(len))
        n = -1;
    else
        memcpy(ids, v, (size_t)n * sizeof *ids);
    free(v);
    return n;
}

const char *tok_piece(const tokenizer *t, int id, int special, size_t *len)
{
    if (id < 0 || id >= t->in->n_tokens)
        return NULL;
    int type = vocab_type(t->v, id);
    const char *p = t->pieces + t->piece_off[id];
    int hidden = !special && (type == VOCAB_CONTROL || type == VOCAB_UNKNOWN);
    *len = hidden ? 0 : t->piece_off[id + 1] - t->piece_off[id] - 1;
    return p;
}

int tok_drops_space(const tokenizer *t, int token, int prev_token)
{
    return prev_token >= 0 && prev_token == t->in->bos && t->in->add_space_prefix &&
           vocab_type(t->v, token) == VOCAB_NORMAL;
}

const char *tok_decode(const tokenizer *t, int prev_token, int token, char *buf)
{
    size_t len;
    const char *piece = tok_piece(t, token, 1, &len);
    if (!piece) {
        snprintf(buf, TOK_DECODE_BUF, "<%d>", token);
        return buf;
    }
    if (piece[0] == ' ' && tok_drops_space(t, token, prev_token))
        piece++;
    return piece;
}
