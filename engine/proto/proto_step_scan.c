/* proto_step_scan.c: a fast decoder for the payload of the `step` topic.
 *
 * Why it exists: the console must ingest >= 200k step messages a second on
 * one core (SPEC section 7), that is 5 us per message, and jansson's
 * json_loadb alone costs about 10 us for a 335-byte step message on the
 * target CPU (its lexer, a malloc per value, a hash table per object). A
 * step message is one flat object of numbers and short ASCII strings, as
 * proto_step_encode writes it; this scanner reads exactly that in a single
 * pass, straight into proto_head and proto_step, allocating nothing.
 *
 * jansson stays the reference. The scanner takes a strict subset of JSON:
 * one object, JSON whitespace, keys and string values of printable ASCII
 * without escapes, numbers, true, false and null as values. It answers "not
 * mine" (0) for anything else, and also for any message the reference
 * would refuse or read differently: a known key given twice (jansson keeps
 * the last), a field of the wrong type or out of range, a missing required
 * field, a number it cannot convert exactly. proto_tel_decode then decodes
 * with jansson, so what is accepted, and every error message, stay the
 * reference's. Unknown keys are skipped as the reference skips them
 * (repeating one changes nothing there either).
 *
 * Numbers are converted without strtod, bit for bit as jansson's strtoll
 * and strtod would: an integer token (no '.', no exponent) of up to 19
 * digits exactly; a real token whose significant digits form an integer of
 * at most 2^53 scaled by at most 10^22 (both exact doubles, so one IEEE
 * multiplication or division rounds correctly, Clinger's fast path). That
 * covers every number proto_step_encode writes for realistic values
 * (3 or 6 decimals, "%.6g" beyond 1e12); any other number goes to jansson
 * with the rest of its message. tests/engine/proto/test_step_scan.c and
 * tests/fuzz/fuzz_telemetry.c check the two decoders agree.
 */
#include "proto_step_scan.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- values ------------------------------------------------------------ */

enum vtype { V_TEXT, V_INT, V_REAL, V_TRUE, V_FALSE, V_NULL };

struct value {
    enum vtype type;
    const char *text; /* V_TEXT: the bytes between the quotes */
    size_t len;
    int64_t i; /* V_INT */
    double d;  /* V_REAL */
};

struct scanner {
    const unsigned char *p, *end;
};

static void skip_ws(struct scanner *sc)
{
    while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\n' || *sc->p == '\r' || *sc->p == '\t'))
        sc->p++;
}

static int eat(struct scanner *sc, unsigned char c)
{
    if (sc->p < sc->end && *sc->p == c) {
        sc->p++;
        return 1;
    }
    return 0;
}

static int is_digit(const struct scanner *sc)
{
    return sc->p < sc->end && *sc->p >= '0' && *sc->p <= '9';
}

/* A string of printable ASCII (DEL included) without escapes: such bytes
 * mean the same to jansson and need no UTF-8 check. 0 when it is one. */
static int scan_text(struct scanner *sc, const char **text, size_t *len)
{
    if (!eat(sc, '"'))
        return -1;
    const unsigned char *start = sc->p;
    for (; sc->p < sc->end && *sc->p != '"'; sc->p++)
        if (*sc->p < 0x20 || *sc->p > 0x7F || *sc->p == '\\')
            return -1;
    if (sc->p == sc->end)
        return -1;
    *text = (const char *)start;
    *len = (size_t)(sc->p - start);
    sc->p++;
    return 0;
}

#define MAX_INT_DIGITS 19           /* any 19-digit number fits a uint64_t */
#define EXACT_MANTISSA (1ull << 53) /* every integer up to here is a double */
#define EXACT_POW10 22              /* 10^22 is the largest exact power of ten */

static const double pow10_exact[EXACT_POW10 + 1] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* A JSON number (RFC 8259 grammar), typed as jansson types it: integer
 * without '.' and exponent, real otherwise. 0 when read and converted
 * exactly; -1 when malformed or beyond the exact conversions. */
static int scan_number(struct scanner *sc, struct value *v)
{
    int neg = eat(sc, '-');
    uint64_t m = 0; /* the significant digits as an integer */
    int digits = 0; /* in m, from the first non-zero one */
    int frac = 0;   /* digits after the point */
    int real = 0;

    if (!is_digit(sc))
        return -1;
    if (eat(sc, '0')) {
        if (is_digit(sc))
            return -1; /* a leading zero */
    } else {
        for (; is_digit(sc); sc->p++) {
            if (++digits > MAX_INT_DIGITS)
                return -1;
            m = m * 10 + (uint64_t)(*sc->p - '0');
        }
    }
    if (eat(sc, '.')) {
        real = 1;
        if (!is_digit(sc))
            return -1;
        for (; is_digit(sc); sc->p++, frac++) {
            if ((m || *sc->p != '0') && ++digits > MAX_INT_DIGITS)
                return -1;
            m = m * 10 + (uint64_t)(*sc->p - '0');
        }
    }
    int exp = 0;
    if (sc->p < sc->end && (*sc->p == 'e' || *sc->p == 'E')) {
        sc->p++;
        real = 1;
        int eneg = eat(sc, '-');
        if (!eneg)
            eat(sc, '+');
        if (!is_digit(sc))
            return -1;
        for (; is_digit(sc); sc->p++)
            if ((exp = exp * 10 + (*sc->p - '0')) > 1000)
                return -1; /* far outside the exact range anyway */
        if (eneg)
            exp = -exp;
    }
    if (!real) {
        if (m > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
            return -1; /* jansson: "too big integer" */
        v->type = V_INT;
        v->i = neg ? (int64_t)(0 - m) : (int64_t)m;
        return 0;
    }
    int e10 = exp - frac;
    if (m > EXACT_MANTISSA || e10 < -EXACT_POW10 || e10 > EXACT_POW10)
        return -1;
    double d = (double)m;
    d = e10 < 0 ? d / pow10_exact[-e10] : d * pow10_exact[e10];
    v->type = V_REAL;
    v->d = neg ? -d : d;
    return 0;
}

static int scan_word(struct scanner *sc, const char *word, size_t n, enum vtype type,
                     struct value *v)
{
    if ((size_t)(sc->end - sc->p) < n || memcmp(sc->p, word, n) != 0)
        return -1;
    sc->p += n;
    v->type = type;
    return 0;
}

/* A flat value: nested arrays and objects are not the scanner's. */
static int scan_value(struct scanner *sc, struct value *v)
{
    if (sc->p == sc->end)
        return -1;
    switch (*sc->p) {
    case '"':
        v->type = V_TEXT;
        return scan_text(sc, &v->text, &v->len);
    case 't':
        return scan_word(sc, "true", 4, V_TRUE, v);
    case 'f':
        return scan_word(sc, "false", 5, V_FALSE, v);
    case 'n':
        return scan_word(sc, "null", 4, V_NULL, v);
    default:
        return scan_number(sc, v);
    }
}

/* ---- fields ------------------------------------------------------------ */

/* How decode_head and decode_step in proto_tel.c read each field (jr_*). */
enum kind {
    K_VERSION, /* jr_int, then it must be PROTO_VERSION */
    K_TEXT,    /* jr_str */
    K_INT,     /* jr_int */
    K_I64,     /* jr_i64 */
    K_U64,     /* jr_u64: 0..INT64_MAX */
    K_NUM,     /* jr_num: integer, real, or null for NaN */
    K_PHASE    /* jr_str, then "prefill" or "decode" */
};

struct field {
    const char *key;
    unsigned char len;
    unsigned char kind;
    unsigned char in_head; /* a member of proto_head, else of proto_step */
    unsigned char cap;     /* K_TEXT: the member's size */
    unsigned short off;
};

#define HEAD(k, kind, m)                                                                           \
    {                                                                                              \
        k, sizeof k - 1, kind, 1, sizeof((proto_head *)0)->m, offsetof(proto_head, m)              \
    }
#define STEP(k, kind, m)                                                                           \
    {                                                                                              \
        k, sizeof k - 1, kind, 0, sizeof((proto_step *)0)->m, offsetof(proto_step, m)              \
    }

/* In proto_step_encode's order, which the lookup tries first. */
static const struct field fields[] = {
    {"v", 1, K_VERSION, 1, 0, 0},
    HEAD("node", K_TEXT, node),
    HEAD("seq", K_U64, seq),
    HEAD("t", K_I64, t_ms),
    STEP("req", K_TEXT, req),
    STEP("step", K_I64, step),
    STEP("phase", K_PHASE, phase),
    STEP("tokens", K_INT, tokens),
    STEP("pos", K_INT, pos),
    STEP("step_ms", K_NUM, step_ms),
    STEP("model_ms", K_NUM, model_ms),
    STEP("eval_ms", K_NUM, eval_ms),
    STEP("wait_ms", K_NUM, wait_ms),
    STEP("kv_bytes", K_U64, kv_bytes),
    STEP("kv_bits", K_INT, kv_bits),
    STEP("prefill_step", K_INT, prefill_step),
    STEP("rss", K_U64, rss),
    STEP("budget", K_U64, budget),
    STEP("headroom", K_I64, headroom),
    STEP("act_max", K_NUM, act_max),
    STEP("nonfinite", K_I64, nonfinite),
    STEP("seqs", K_INT, seqs),
    STEP("busy", K_NUM, busy),
};

#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))
#define F_SEQS (N_FIELDS - 2)
#define F_BUSY (N_FIELDS - 1)
/* v, node, seq, t and phase: the reference refuses a message without them. */
#define REQUIRED ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 6))

/* The field called key, or -1 for a key the decoder ignores. */
static int field_of(const char *key, size_t len, int hint)
{
    for (int k = 0; k < N_FIELDS; k++) {
        int f = (hint + k) % N_FIELDS;
        if (fields[f].len == len && memcmp(fields[f].key, key, len) == 0)
            return f;
    }
    return -1;
}

/* Stores v as the reference would, or -1 where the reference would fail. */
static int store(const struct field *f, const struct value *v, proto_head *h, proto_step *s)
{
    char *at = (f->in_head ? (char *)h : (char *)s) + f->off;
    switch (f->kind) {
    case K_VERSION:
        return v->type == V_INT && v->i == PROTO_VERSION ? 0 : -1;
    case K_TEXT: {
        if (v->type != V_TEXT)
            return -1;
        size_t n = v->len < f->cap ? v->len : f->cap - 1u;
        memcpy(at, v->text, n);
        at[n] = '\0';
        return 0;
    }
    case K_INT:
        if (v->type != V_INT || v->i < INT32_MIN || v->i > INT32_MAX)
            return -1;
        *(int *)at = (int)v->i;
        return 0;
    case K_I64:
        if (v->type != V_INT)
            return -1;
        *(int64_t *)at = v->i;
        return 0;
    case K_U64:
        if (v->type != V_INT || v->i < 0)
            return -1;
        *(uint64_t *)at = (uint64_t)v->i;
        return 0;
    case K_NUM:
        if (v->type == V_INT)
            *(double *)at = (double)v->i;
        else if (v->type == V_REAL)
            *(double *)at = v->d;
        else if (v->type == V_NULL)
            *(double *)at = NAN;
        else
            return -1;
        return 0;
    case K_PHASE:
        if (v->type == V_TEXT && v->len == 7 && memcmp(v->text, "prefill", 7) == 0)
            *(proto_phase *)at = PROTO_PHASE_PREFILL;
        else if (v->type == V_TEXT && v->len == 6 && memcmp(v->text, "decode", 6) == 0)
            *(proto_phase *)at = PROTO_PHASE_DECODE;
        else
            return -1;
        return 0;
    }
    return -1;
}

int proto_step_scan(const void *payload, size_t len, proto_head *h, proto_step *s)
{
    struct scanner sc = {payload, (const unsigned char *)payload + len};
    uint32_t seen = 0;
    int hint = 0;

    memset(h, 0, sizeof *h);
    memset(s, 0, sizeof *s);
    skip_ws(&sc);
    if (!eat(&sc, '{'))
        return 0;
    do {
        const char *key;
        size_t klen;
        struct value v;
        skip_ws(&sc);
        if (scan_text(&sc, &key, &klen) != 0)
            return 0;
        skip_ws(&sc);
        if (!eat(&sc, ':'))
            return 0;
        skip_ws(&sc);
        if (scan_value(&sc, &v) != 0)
            return 0;
        int f = field_of(key, klen, hint);
        if (f >= 0) {
            if (seen & (1u << f) || store(&fields[f], &v, h, s) != 0)
                return 0;
            seen |= 1u << f;
            hint = f + 1;
        }
        skip_ws(&sc);
    } while (eat(&sc, ','));
    if (!eat(&sc, '}'))
        return 0;
    skip_ws(&sc);
    /* What an older node does not send: its steps carried one sequence,
     * and it did not measure how busy it was. */
    if (!(seen & (1u << F_SEQS)))
        s->seqs = 1;
    if (!(seen & (1u << F_BUSY)))
        s->busy = NAN;
    return sc.p == sc.end && (seen & REQUIRED) == REQUIRED;
}
