/* pretok.c: byte-level BPE pre-tokenizers (see pretok.h). The expression
 * lists are those of llama.cpp's llama-vocab.cpp for each name. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "pretok.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXPRS 6

/* GPT-2's expression; several lists reuse it. */
#define GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

/* Llama 3's, its (?i:'s|...) spelled out as llama.cpp does; `digits` is
 * what follows the letters: Qwen2 takes one digit at a time. */
#define LLAMA3_LIKE(digits)                                                                        \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"      \
    "|" digits "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* CJK ideographs, the block below them and Hangul syllables. */
#define CJK "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

/* DeepSeek LLM's letters: the cased letters of Unicode, range by range. */
#define DEEPSEEK_LETTERS                                                                           \
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"            \
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"         \
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"                  \
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}"                       \
    "\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"                 \
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"                 \
    "\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}"        \
    "\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"         \
    "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}"                 \
    "\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"                  \
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}"                   \
    "\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}"        \
    "\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"         \
    "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"                  \
    "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"                 \
    "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"               \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"         \
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+"

/* ASCII and full-width punctuation, curly quotes, CJK spaces and stops. */
#define DEEPSEEK_PUNCT                                                                             \
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+"

typedef struct pretok_def {
    const char *names[4]; /* the names llama.cpp maps to this list */
    int flags;
    const char *exprs[MAX_EXPRS + 1];
} pretok_def;

static const pretok_def defs[] = {
    {{"default"}, 0, {"[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {{"gpt-2", "mpt", "phi-2"}, 0, {GPT2}},
    {{"llama-bpe", "llama3", "llama-v3"},
     PRETOK_IGNORE_MERGES | PRETOK_ADD_BOS,
     {LLAMA3_LIKE("\\p{N}{1,3}")}},
    {{"qwen2", "deepseek-r1-qwen"}, 0, {LLAMA3_LIKE("\\p{N}")}},
    {{"deepseek-llm"}, 0, {"[\\r\\n]", DEEPSEEK_LETTERS, DEEPSEEK_PUNCT, "\\s+$", CJK, "\\p{N}+"}},
    {{"deepseek-coder"}, 0, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", CJK, "\\p{N}"}},
    {{"falcon"}, 0, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"}},
    {{"starcoder", "refact", "smollm"}, 0, {"\\p{N}", GPT2}},
};

struct pretok {
    int n;
    pcre2_code *re[MAX_EXPRS];
};

static const pretok_def *find_def(const char *name)
{
    for (size_t d = 0; d < sizeof defs / sizeof defs[0]; d++)
        for (int i = 0; i < 4 && defs[d].names[i]; i++)
            if (strcmp(defs[d].names[i], name) == 0)
                return &defs[d];
    return NULL;
}

int pretok_flags(const char *name)
{
    const pretok_def *d = find_def(name);
    return d ? d->flags : -1;
}

void pretok_free(pretok *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        pcre2_code_free(p->re[i]);
    free(p);
}

int pretok_new(pretok **out, const char *name, char *err, size_t errlen)
{
    *out = NULL;
    const pretok_def *d = find_def(name);
    if (!d) {
        snprintf(err, errlen, "pre-tokenizer '%s' is not supported", name);
        return -1;
    }
    pretok *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory for pre-tokenizer '%s'", name);
        return -1;
    }
    /* $ only at the very end, as in std::regex; invalid UTF-8 is data. */
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_MATCH_INVALID_UTF;
    for (; p->n < MAX_EXPRS && d->exprs[p->n]; p->n++) {
        int code;
        PCRE2_SIZE at;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)d->exprs[p->n], PCRE2_ZERO_TERMINATED, opts,
                                       &code, &at, NULL);
        if (!re) {
            PCRE2_UCHAR msg[120];
            pcre2_get_error_message(code, msg, sizeof msg);
            snprintf(err, errlen, "pre-tokenizer '%s': expression %d at %zu: %s", name, p->n + 1,
                     (size_t)at, (const char *)msg);
            pretok_free(p);
            return -1;
        }
        /* Without JIT support the interpreter runs it, slower but alike. */
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
        p->re[p->n] = re;
    }
    *out = p;
    return 0;
}

typedef struct spans {
    pretok_span *v;
    size_t n, cap;
} spans;

static int spans_add(spans *s, size_t off, size_t len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        pretok_span *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (pretok_span){off, len};
    return 0;
}

/* Cuts one piece by one expression: matches and the gaps between them. */
static int cut(const pcre2_code *re, pcre2_match_data *md, const char *text, pretok_span piece,
               spans *to, char *err, size_t errlen)
{
    PCRE2_SPTR s = (PCRE2_SPTR)text + piece.off;
    size_t done = 0;
    while (done < piece.len) {
        int rc = pcre2_match(re, s, piece.len, done, PCRE2_NOTEMPTY, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0) {
            PCRE2_UCHAR msg[120];
            pcre2_get_error_message(rc, msg, sizeof msg);
            snprintf(err, errlen, "pre-tokenizer: %s", (const char *)msg);
            return -1;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if ((ov[0] > done && spans_add(to, piece.off + done, ov[0] - done) != 0) ||
            spans_add(to, piece.off + ov[0], ov[1] - ov[0]) != 0)
            goto oom;
        done = ov[1];
    }
    if (done < piece.len && spans_add(to, piece.off + done, piece.len - done) != 0)
        goto oom;
    return 0;
oom:
    snprintf(err, errlen, "pre-tokenizer: out of memory");
    return -1;
}

int pretok_split(const pretok *p, const char *text, size_t len, pretok_span **out, size_t *n,
                 char *err, size_t errlen)
{
    spans cur = {0}, next = {0};
    int rc = -1;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md || (len > 0 && spans_add(&cur, 0, len) != 0)) {
        snprintf(err, errlen, "pre-tokenizer: out of memory");
        goto done;
    }
    for (int e = 0; e < p->n; e++) {
        next.n = 0;
        for (size_t i = 0; i < cur.n; i++)
            if (cut(p->re[e], md, text, cur.v[i], &next, err, errlen) != 0)
                goto done;
        spans t = cur;
        cur = next;
        next = t;
    }
    *out = cur.v;
    *n = cur.n;
    cur.v = NULL;
    rc = 0;
done:
    free(cur.v);
    free(next.v);
    pcre2_match_data_free(md);
    return rc;
}
