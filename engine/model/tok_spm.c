/* tok_spm.c: SentencePiece-style BPE, as llama.cpp's llm_tokenizer_spm
 * and llama2.c's encoder do it: every character a symbol, then the
 * adjacent pair whose concatenation is the token of highest score merges
 * first (leftmost among equals), until no concatenation is a token.
 * Symbols that are not tokens fall back to one byte token per byte. */
#include <string.h>

#include "engine/sys/utf8.h"

#include "tokenizer_int.h"

/* Cuts buf[0..len) into characters, the first `lead` bytes (the space put
 * before the text) on their own. A character is a byte and the
 * continuation bytes after it, four at most: for valid UTF-8 the code
 * point, and invalid bytes cut as llama2.c cuts them, so that its files
 * keep their ids. Returns the number of symbols, -1 when out of memory. */
static int cut_chars(merger *m, const char *buf, size_t len, size_t lead)
{
    merge_sym *sym = merger_symbols(m, len);
    if (!sym)
        return -1;
    int n = 0;
    size_t at = 0;
    if (lead > 0) {
        sym[n++] = (merge_sym){.off = 0, .len = (uint32_t)lead};
        at = lead;
    }
    while (at < len) {
        size_t k = 1;
        while (at + k < len && k < 4 && utf8_is_cont((unsigned char)buf[at + k]))
            k++;
        sym[n++] = (merge_sym){.off = (uint32_t)at, .len = (uint32_t)k};
        at += k;
    }
    return n;
}

static int score_of(const void *ctx, const char *s, size_t len, size_t split, double *prio)
{
    (void)split;
    const vocab *v = ctx;
    int id = vocab_find(v, s, len);
    if (id < 0)
        return -1;
    *prio = vocab_score(v, id);
    return 0;
}

/* text with spaces written as the vocabulary writes them, into buf. */
static size_t escape(const vocab_info *in, const char *text, size_t len, int prefix, char *buf)
{
    size_t sl = strlen(in->space), n = 0;
    if (prefix) {
        memcpy(buf, in->space, sl);
        n = sl;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(buf + n, in->space, sl);
            n += sl;
        } else {
            buf[n++] = text[i];
        }
    }
    return n;
}

static int push_bytes(const vocab *v, const char *s, size_t len, tok_ids *out)
{
    int unk = vocab_get_info(v)->unk;
    for (size_t i = 0; i < len; i++) {
        int id = vocab_byte_token(v, (unsigned char)s[i]);
        if (id < 0)
            id = unk;
        if (id >= 0 && tok_ids_push(out, id) != 0)
            return -1;
    }
    return 0;
}

int spm_encode(const vocab *v, merger *m, const char *text, size_t len, int prefix, tok_ids *out)
{
    const vocab_info *in = vocab_get_info(v);
    char *buf = merger_text(m, (len + 1) * strlen(in->space));
    if (!buf)
        return -1;
    size_t n = escape(in, text, len, prefix, buf);
    int n_sym = cut_chars(m, buf, n, prefix ? strlen(in->space) : 0);
    if (n_sym < 0 || merge_run(m, buf, n_sym, score_of, v) != 0)
        return -1;
    for (int i = 0; i >= 0; i = m->sym[i].next) {
        const char *s = buf + m->sym[i].off;
        int id = vocab_find(v, s, m->sym[i].len);
        if (id >= 0 ? tok_ids_push(out, id) != 0 : push_bytes(v, s, m->sym[i].len, out) != 0)
            return -1;
    }
    return 0;
}

size_t spm_piece(const vocab *v, int id, char *buf)
{
    const char *space = vocab_get_info(v)->space;
    size_t len, sl = strlen(space), n = 0;
    const char *s = vocab_text(v, id, &len);
    for (size_t i = 0; i < len;) {
        if (len - i >= sl && memcmp(s + i, space, sl) == 0) {
            buf[n++] = ' ';
            i += sl;
        } else {
            buf[n++] = s[i++];
        }
    }
    return n;
}
