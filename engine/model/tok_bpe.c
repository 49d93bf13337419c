/* tok_bpe.c: byte-level BPE, as llama.cpp's llm_tokenizer_bpe does it:
 * the pre-tokenizer cuts the text into pieces; in each piece every byte
 * becomes the printable character GPT-2 spells it with, and the adjacent
 * pair of lowest merge rank merges first (leftmost among equals). */
#include <stdio.h>
#include <stdlib.h>

#include "engine/sys/utf8.h"

#include "pretok.h"
#include "tokenizer_int.h"

struct bpe {
    const vocab *v;
    pretok *pre;
    int ignore_merges;
};

/* GPT-2's spelling of byte b: printable Latin-1 bytes stand for
 * themselves, the 68 others (controls, space, DEL, NBSP, soft hyphen) are
 * code points 256, 257, ... in byte order. */
static unsigned byte_cp(unsigned char b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        return b;
    if (b <= 0x20)
        return 256 + b;
    if (b <= 0xA0)
        return 256 + 33 + (b - 0x7F);
    return 256 + 67;
}

/* The byte code point cp spells, or -1. */
static int cp_byte(unsigned cp)
{
    if (cp < 256)
        return byte_cp((unsigned char)cp) == cp ? (int)cp : -1;
    if (cp < 256 + 68) {
        unsigned r = cp - 256;
        return r <= 0x20 ? (int)r : r < 67 ? (int)(r - 33 + 0x7F) : 0xAD;
    }
    return -1;
}

/* Every byte of text as its code point in UTF-8 (all below U+0800). */
static size_t spell(const char *text, size_t len, char *buf)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += utf8_encode(byte_cp((unsigned char)text[i]), buf + n);
    return n;
}

/* Spelled text is valid UTF-8 of one or two bytes a character: one
 * symbol each. Returns their number, -1 when out of memory. */
static int cut_chars(merger *m, const char *buf, size_t len)
{
    merge_sym *sym = merger_symbols(m, len);
    if (!sym)
        return -1;
    int n = 0;
    for (size_t at = 0; at < len; n++) {
        size_t k = utf8_step(buf + at, len - at);
        sym[n] = (merge_sym){.off = (uint32_t)at, .len = (uint32_t)k};
        at += k;
    }
    return n;
}

static int rank_of(const void *ctx, const char *s, size_t len, size_t split, double *prio)
{
    int rank = vocab_merge_rank(ctx, s, len, split);
    if (rank < 0)
        return -1;
    *prio = -(double)rank;
    return 0;
}

int bpe_new(bpe **out, const vocab *v, char *err, size_t errlen)
{
    *out = NULL;
    const char *name = vocab_get_info(v)->pre;
    bpe *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory for the BPE tokenizer");
        return -1;
    }
    b->v = v;
    b->ignore_merges = (pretok_flags(name) & PRETOK_IGNORE_MERGES) != 0;
    if (pretok_new(&b->pre, name, err, errlen) != 0) {
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

void bpe_free(bpe *b)
{
    if (!b)
        return;
    pretok_free(b->pre);
    free(b);
}

/* A symbol no token covers: its bytes one by one, those that are tokens
 * (llama.cpp drops the others). */
static int push_bytes(const vocab *v, const char *s, size_t len, tok_ids *out)
{
    for (size_t i = 0; i < len; i++) {
        int id = vocab_find(v, s + i, 1);
        if (id >= 0 && tok_ids_push(out, id) != 0)
            return -1;
    }
    return 0;
}

static int encode_piece(const bpe *b, merger *m, const char *text, size_t len, tok_ids *out)
{
    char *buf = merger_text(m, 2 * len);
    if (!buf)
        return -1;
    size_t n = spell(text, len, buf);
    int whole = b->ignore_merges ? vocab_find(b->v, buf, n) : -1;
    if (whole >= 0)
        return tok_ids_push(out, whole);
    int n_sym = cut_chars(m, buf, n);
    if (n_sym < 0 || merge_run(m, buf, n_sym, rank_of, b->v) != 0)
        return -1;
    for (int i = 0; i >= 0; i = m->sym[i].next) {
        const char *s = buf + m->sym[i].off;
        int id = vocab_find(b->v, s, m->sym[i].len);
        if (id >= 0 ? tok_ids_push(out, id) != 0 : push_bytes(b->v, s, m->sym[i].len, out) != 0)
            return -1;
    }
    return 0;
}

int bpe_encode(const bpe *b, merger *m, const char *text, size_t len, tok_ids *out, char *err,
               size_t errlen)
{
    pretok_span *pieces;
    size_t n;
    if (pretok_split(b->pre, text, len, &pieces, &n, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = encode_piece(b, m, text + pieces[i].off, pieces[i].len, out);
    free(pieces);
    if (rc != 0)
        snprintf(err, errlen, "out of memory for %zu bytes of text", len);
    return rc;
}

size_t bpe_piece(const vocab *v, int id, char *buf)
{
    size_t len, n = 0;
    const char *s = vocab_text(v, id, &len);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = utf8_decode(s + i, len - i, &cp);
        int b = k ? cp_byte(cp) : -1;
        if (b >= 0) {
            buf[n++] = (char)b;
            i += k;
        } else {
            buf[n++] = s[i++]; /* not a byte's spelling: kept as it is */
        }
    }
    return n;
}
