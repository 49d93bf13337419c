/* test_step_scan.c: the step scanner (proto_step_scan.c) against jansson.
 *
 * For every input, generated or broken on purpose: what the scanner
 * accepts, the jansson decoder accepts too, into bit-identical structs;
 * and proto_tel_decode (scanner, then jansson) returns exactly what the
 * jansson decoder returns, error messages included. The generators are
 * seeded, so a failure reproduces.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/proto_step_scan.h"
#include "engine/proto/protocol.h"

struct tally {
    int total, fast;
};

/* Compares the three decoders on one payload. The payload is copied into a
 * buffer of its exact size, so that ASan sees any read past its end. */
static void check(const char *text, size_t len, struct tally *t)
{
    char *buf = malloc(len ? len : 1);
    cr_assert_not_null(buf);
    memcpy(buf, text, len);
    proto_tel ref, got;
    proto_head h;
    proto_step s;
    char eref[PROTO_MESSAGE_MAX], egot[PROTO_MESSAGE_MAX];
    int rref = proto_tel_decode_json("step", 4, buf, len, &ref, eref, sizeof eref);
    int rgot = proto_tel_decode("step", 4, buf, len, &got, egot, sizeof egot);
    int fast = proto_step_scan(buf, len, &h, &s);

    cr_assert_eq(rgot, rref, "decoders disagree on: %.*s", (int)len, text);
    if (rref != 0) {
        cr_assert_str_eq(egot, eref, "on: %.*s", (int)len, text);
    } else {
        cr_assert_eq(got.topic, PROTO_TOPIC_STEP);
        cr_assert(!memcmp(&got.head, &ref.head, sizeof ref.head), "head differs: %.*s", (int)len,
                  text);
        cr_assert(!memcmp(&got.step, &ref.step, sizeof ref.step), "step differs: %.*s", (int)len,
                  text);
    }
    if (fast) {
        cr_assert_eq(rref, 0, "scanned what jansson refuses (%s): %.*s", eref, (int)len, text);
        cr_assert(!memcmp(&h, &ref.head, sizeof h), "scanned head differs: %.*s", (int)len, text);
        cr_assert(!memcmp(&s, &ref.step, sizeof s), "scanned step differs: %.*s", (int)len, text);
    }
    proto_tel_free(&ref);
    proto_tel_free(&got);
    free(buf);
    t->total++;
    t->fast += fast;
}

static int scans(const char *text)
{
    proto_head h;
    proto_step s;
    struct tally t = {0};
    check(text, strlen(text), &t);
    return proto_step_scan(text, strlen(text), &h, &s);
}

/* ---- deterministic randomness ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int pick(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

static int64_t rnd_i64(void)
{
    static const int64_t edges[] = {0,         1,         -1,
                                    INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1,
                                    INT64_MAX, INT64_MIN, 9007199254740993ll};
    switch (pick(4)) {
    case 0:
        return edges[pick(sizeof edges / sizeof *edges)];
    case 1:
        return (int64_t)(rnd() >> pick(64)) * (pick(2) ? 1 : -1);
    default:
        return pick(100000) - 1000;
    }
}

static double rnd_double(void)
{
    static const double edges[] = {0.0,     -0.0,
                                   1e300,   -1e300,
                                   1e-300,  5e-324,
                                   DBL_MAX, DBL_MIN,
                                   1e12,    999999999999.9999,
                                   0.1,     0.0005,
                                   -0.0004, 9007199254.740993};
    switch (pick(6)) {
    case 0:
        return edges[pick(sizeof edges / sizeof *edges)];
    case 1: {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof d); /* any double, NaN and Inf included */
        return d;
    }
    case 2:
        return pick(3) ? NAN : (pick(2) ? INFINITY : -INFINITY);
    default:
        return (double)(int64_t)(rnd() >> pick(64)) / pow(10, pick(12)) * (pick(4) ? 1 : -1);
    }
}

/* Names: mostly plain, sometimes with what JSON must escape or non-ASCII. */
static void rnd_name(char *out, size_t cap)
{
    static const char *const odd[] = {"\"",   "\\",   "\t", "\x01", "\xe2\x82\xac",
                                      "\xff", "\x7f", "/",  " "};
    size_t n = 0, want = (size_t)pick((int)cap);
    int plain = pick(3) != 0;
    while (n < want) {
        char piece[8];
        if (plain || pick(8))
            snprintf(piece, sizeof piece, "%c", "abcxyz-_.019"[pick(12)]);
        else
            snprintf(piece, sizeof piece, "%s", odd[pick(sizeof odd / sizeof *odd)]);
        size_t k = strlen(piece);
        if (n + k >= cap)
            break;
        memcpy(out + n, piece, k);
        n += k;
    }
    out[n] = '\0';
}

static void rnd_step(proto_head *h, proto_step *s)
{
    memset(h, 0, sizeof *h);
    memset(s, 0, sizeof *s);
    rnd_name(h->node, sizeof h->node);
    rnd_name(s->req, sizeof s->req);
    h->seq = (uint64_t)rnd_i64();
    h->t_ms = rnd_i64();
    s->step = rnd_i64();
    s->phase = pick(2) ? PROTO_PHASE_DECODE : PROTO_PHASE_PREFILL;
    s->tokens = (int)rnd_i64();
    s->pos = (int)rnd_i64();
    s->step_ms = rnd_double();
    s->model_ms = rnd_double();
    s->eval_ms = rnd_double();
    s->wait_ms = rnd_double();
    s->kv_bytes = (uint64_t)rnd_i64();
    s->kv_bits = (int)rnd_i64();
    s->prefill_step = (int)rnd_i64();
    s->rss = (uint64_t)rnd_i64();
    s->budget = (uint64_t)rnd_i64();
    s->headroom = rnd_i64();
    s->act_max = rnd_double();
    s->nonfinite = rnd_i64();
}

/* Realistic values, as a node sends them. */
static void typical_step(proto_head *h, proto_step *s)
{
    memset(h, 0, sizeof *h);
    memset(s, 0, sizeof *s);
    h->seq = (uint64_t)pick(1 << 30);
    h->t_ms = 1700000000000 + pick(1 << 30);
    snprintf(h->node, sizeof h->node, "node-%d", pick(100));
    snprintf(s->req, sizeof s->req, "req-%d", pick(1000));
    s->step = pick(100000);
    s->phase = pick(2) ? PROTO_PHASE_DECODE : PROTO_PHASE_PREFILL;
    s->tokens = 1 + pick(512);
    s->pos = pick(1 << 20);
    s->step_ms = pick(1000000) / 997.0;
    s->model_ms = -pick(1000) / 7.0;
    s->eval_ms = pick(2) ? 0.0 : -0.0;
    s->wait_ms = pick(100000000) / 3.0;
    s->kv_bytes = rnd() >> 20;
    s->kv_bits = 4 << pick(4);
    s->prefill_step = 512;
    s->rss = rnd() >> 30;
    s->budget = rnd() >> 30;
    s->headroom = (int64_t)(rnd() >> 30) - (1ll << 33);
    s->act_max = pick(10) ? pick(1000000) / 1e3 : NAN;
    s->nonfinite = pick(3);
}

static int typical(char *buf, size_t cap)
{
    proto_head h;
    proto_step s;
    typical_step(&h, &s);
    return proto_step_encode(&h, &s, buf, cap);
}

/* ---- hand-written text: orders, spacing, spellings the encoder never uses ---- */

struct text {
    char buf[4096];
    size_t len;
    int messy; /* 0: every variation keeps the message valid */
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof t->buf - t->len)
        t->len += (size_t)n;
}

static void space(struct text *t)
{
    static const char *const ws[] = {" ", "\t", "\n", "\r\n", "  ", "\f", "\v"};
    put(t, "%s", pick(4) ? "" : ws[pick(t->messy ? 7 : 5)]);
}

static void put_int(struct text *t, int64_t v)
{
    switch (t->messy ? pick(12) : 4) {
    case 0:
        put(t, "%lld.0", (long long)v);
        break;
    case 1:
        put(t, "%llde0", (long long)v);
        break;
    case 2:
        put(t, "0%lld", (long long)v);
        break;
    case 3:
        put(t, "%lld9", (long long)v); /* overflows now and then */
        break;
    default:
        put(t, "%lld", (long long)v);
    }
}

static void put_num(struct text *t, double v)
{
    /* Exact for realistic values first, then what needs strtod or is no JSON. */
    static const char *const fmts[] = {"%.3f", "%.6f", "%e",    "%E", "%.1f",
                                       "%g",   "%.0f", "%.17g", "%a", "%.22f"};
    if (!isfinite(v) || !pick(10)) {
        put(t, "%s", !isfinite(v) || !t->messy || pick(2) ? "null" : "\"1.5\"");
        return;
    }
    put(t, fmts[pick(t->messy ? 10 : 6)], v);
}

static void put_value(struct text *t, int kind, const proto_head *h, const proto_step *s, int f);

/* The fields of decode_head and decode_step; kind 0 text, 1 integer, 2 number. */
static const struct {
    const char *key;
    int kind;
} keys[] = {{"v", 1},        {"node", 0},     {"seq", 1},      {"t", 1},
            {"req", 0},      {"step", 1},     {"phase", 0},    {"tokens", 1},
            {"pos", 1},      {"step_ms", 2},  {"model_ms", 2}, {"eval_ms", 2},
            {"wait_ms", 2},  {"kv_bytes", 1}, {"kv_bits", 1},  {"prefill_step", 1},
            {"rss", 1},      {"budget", 1},   {"headroom", 1}, {"act_max", 2},
            {"nonfinite", 1}};
#define N_KEYS ((int)(sizeof keys / sizeof *keys))

static int64_t int_field(const struct text *t, const proto_head *h, const proto_step *s, int f)
{
    switch (f) {
    case 0:
        return !t->messy || pick(20) ? 1 : pick(3);
    case 2:
        return (int64_t)h->seq;
    case 3:
        return h->t_ms;
    case 5:
        return s->step;
    case 7:
        return s->tokens;
    case 8:
        return s->pos;
    case 13:
        return (int64_t)s->kv_bytes;
    case 14:
        return s->kv_bits;
    case 15:
        return s->prefill_step;
    case 16:
        return (int64_t)s->rss;
    case 17:
        return (int64_t)s->budget;
    case 18:
        return s->headroom;
    default:
        return s->nonfinite;
    }
}

static double num_field(const proto_step *s, int f)
{
    const double v[] = {s->step_ms, s->model_ms, s->eval_ms, s->wait_ms};
    return f == 19 ? s->act_max : v[f - 9];
}

static void put_text_of(struct text *t, const proto_head *h, const proto_step *s, int f)
{
    if (f == 6) {
        static const char *const phases[] = {"prefill", "decode", "Decode", "decode ", ""};
        put(t, "\"%s\"", phases[t->messy && !pick(8) ? pick(5) : (int)s->phase]);
        return;
    }
    const char *v = f == 1 ? h->node : s->req;
    if (strpbrk(v, "\"\\") || (t->messy && !pick(10))) {
        put(t, "\"%s\\u0041\"", pick(2) ? "x" : ""); /* an escape */
        return;
    }
    put(t, "\"");
    for (const char *p = v; *p; p++)
        put(t, (unsigned char)*p < 0x20 ? "\\u%04x" : "%c", (unsigned char)*p);
    put(t, "\"");
}

static void put_value(struct text *t, int kind, const proto_head *h, const proto_step *s, int f)
{
    if (t->messy && !pick(30)) { /* the wrong type */
        static const char *const any[] = {"true", "false", "null", "\"7\"", "[]", "{}", "7", "7.5"};
        put(t, "%s", any[pick(sizeof any / sizeof *any)]);
    } else if (kind == 0) {
        put_text_of(t, h, s, f);
    } else if (kind == 1) {
        put_int(t, int_field(t, h, s, f));
    } else {
        put_num(t, num_field(s, f));
    }
}

/* An unknown field: the scanner skips the first kinds, jansson reads them all. */
static void put_unknown(struct text *t)
{
    static const char *const vals[] = {"1",
                                       "-2.5e-3",
                                       "\"x\"",
                                       "true",
                                       "false",
                                       "null",
                                       "\"\\n\"",
                                       "[1,2]",
                                       "{\"a\":{}}",
                                       "1e999",
                                       "123456789012345678901234567890",
                                       "\"\xc3\xa9\""};
    static const char *const names[] = {"extra", "gpu", "node2", "Node", "", "v\\u0031"};
    put(t, "\"%s\":", names[pick(t->messy ? 6 : 5)]);
    space(t);
    put(t, "%s", vals[pick(t->messy ? 12 : 6)]);
}

/* The fields in a random order, some dropped, some twice, unknown ones mixed in. */
static void handwritten(struct text *t)
{
    proto_head h;
    proto_step s;
    int order[N_KEYS];
    t->messy = pick(2);
    if (t->messy)
        rnd_step(&h, &s);
    else
        typical_step(&h, &s);
    for (int i = 0; i < N_KEYS; i++)
        order[i] = i;
    if (pick(2))
        for (int i = N_KEYS - 1; i > 0; i--) {
            int j = pick(i + 1), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
    t->len = 0;
    space(t);
    put(t, "{");
    int first = 1;
    for (int i = 0; i < N_KEYS; i++) {
        int f = order[i], times = !t->messy || pick(40) ? 1 : pick(2) ? 2 : 0;
        for (int k = 0; k < times; k++) {
            space(t);
            put(t, first ? "\"%s\"" : ",\"%s\"", keys[f].key);
            first = 0;
            space(t);
            put(t, ":");
            space(t);
            put_value(t, keys[f].kind, &h, &s, f);
            space(t);
        }
        if (!pick(15)) {
            put(t, "%s", first ? "" : ",");
            first = 0;
            put_unknown(t);
        }
    }
    put(t, "}");
    space(t);
}

/* ---- breaking messages ---- */

static size_t mutate(char *buf, size_t len, size_t cap)
{
    static const char interesting[] = "{}[]\",:.-+eE0123456789 \t\\u\x7f\x80\xff\0nulltrue";
    for (int n = 1 + pick(3); n > 0; n--) {
        size_t at = len ? (size_t)pick((int)len) : 0;
        char c = pick(2) ? interesting[pick(sizeof interesting - 1)] : (char)pick(256);
        switch (pick(5)) {
        case 0: /* replace */
            if (len)
                buf[at] = c;
            break;
        case 1: /* delete */
            if (len) {
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
            }
            break;
        case 2: /* insert */
            if (len < cap) {
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = c;
                len++;
            }
            break;
        case 3: /* truncate */
            len = at;
            break;
        default: { /* repeat a piece */
            size_t n2 = (size_t)pick(20);
            if (at + n2 <= len && len + n2 <= cap) {
                memmove(buf + at + n2, buf + at, len - at);
                len += n2;
            }
        }
        }
    }
    return len;
}

/* ---- tests ---- */

Test(step_scan, takes_what_nodes_send)
{
    struct tally t = {0};
    char buf[PROTO_STEP_BUF];
    for (int i = 0; i < 2000; i++) {
        int n = typical(buf, sizeof buf);
        cr_assert_gt(n, 0);
        check(buf, (size_t)n, &t);
    }
    /* Only act_max beyond 2^53 millionths leaves the fast path here. */
    cr_assert_eq(t.fast, t.total, "%d of %d typical messages fell back", t.total - t.fast, t.total);
}

Test(step_scan, agrees_on_encoded_messages)
{
    struct tally t = {0};
    char buf[PROTO_STEP_BUF];
    for (int i = 0; i < 6000; i++) {
        proto_head h;
        proto_step s;
        rnd_step(&h, &s);
        int n = proto_step_encode(&h, &s, buf, sizeof buf);
        cr_assert_gt(n, 0);
        check(buf, (size_t)n, &t);
    }
    /* Enough of them on each side for the comparison to mean something. */
    cr_assert_gt(t.fast, t.total / 20, "scanned %d of %d", t.fast, t.total);
    cr_assert_lt(t.fast, t.total, "nothing fell back");
}

Test(step_scan, agrees_on_handwritten_messages)
{
    struct tally t = {0};
    struct text txt;
    for (int i = 0; i < 6000; i++) {
        handwritten(&txt);
        check(txt.buf, txt.len, &t);
    }
    cr_assert_gt(t.fast, t.total / 4, "scanned %d of %d", t.fast, t.total);
    cr_assert_lt(t.fast, t.total * 3 / 4, "scanned %d of %d", t.fast, t.total);
}

Test(step_scan, agrees_on_broken_messages)
{
    struct tally t = {0};
    char buf[PROTO_STEP_BUF + 64];
    for (int i = 0; i < 8000; i++) {
        int n = typical(buf, PROTO_STEP_BUF);
        cr_assert_gt(n, 0);
        check(buf, mutate(buf, (size_t)n, sizeof buf), &t);
    }
    cr_assert_gt(t.fast, 0);
}

Test(step_scan, numbers_bit_for_bit)
{
    /* Spellings at the edges of the exact conversion, in a number field. */
    static const char *const nums[] = {
        "0.1",
        "0.3",
        "2.675",
        "4.35",
        "-0.0",
        "-0",
        "0e0",
        "-0e-5",
        "1E+2",
        "1e22",
        "1e23",
        "1e-22",
        "1e-23",
        "5e-324",
        "2.2250738585072014e-308",
        "1.7976931348623157e308",
        "1e309",
        "-1e309",
        "9007199254740992",
        "9007199254740993",
        "9007199254740993.0",
        "900719925474099.3",
        "123456789012345.678",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "0.000000000000000000001",
        "12.345678",
        "1.23457e+13",
        "100000000000000000000000",
        "0.1e1",
        "00",
        "01.5",
        "1.",
        ".5",
        "+1",
        "1e",
        "1e+",
        "-",
        "0x10",
        "1.5e0001",
    };
    struct tally t = {0};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        char buf[256];
        int n = snprintf(buf, sizeof buf,
                         "{\"v\":1,\"node\":\"a\",\"seq\":1,\"t\":2,\"phase\":\"decode\","
                         "\"act_max\":%s}",
                         nums[i]);
        check(buf, (size_t)n, &t);
    }
    cr_assert_gt(t.fast, 10);
}

Test(step_scan, subset)
{
#define ENV "\"v\":1,\"node\":\"a\",\"seq\":1,\"t\":2,\"phase\":\"decode\""
    cr_assert(scans("{" ENV "}"));
    cr_assert(scans(" \r\n{ " ENV " ,\t\"extra\" : [1] }\n") == 0, "nested: jansson's");
    cr_assert(scans("{" ENV ",\"x\":true,\"x\":null,\"y\":\"~\x7f\"}"), "unknown keys are skipped");
    cr_assert(scans("{\t" ENV " , \"step_ms\" : 1.5 }\r\n"));
    cr_assert(!scans("{" ENV ",\"node\":\"b\"}"), "a known key twice: jansson's");
    cr_assert(!scans("{" ENV ",\"req\":\"a\\\"b\"}"), "an escape");
    cr_assert(!scans("{" ENV ",\"req\":\"\xc3\xa9\"}"), "non-ASCII");
    cr_assert(!scans("{" ENV ",\"tokens\":1.0}"), "a real for an integer");
    cr_assert(!scans("{" ENV ",\"tokens\":2147483648}"), "out of range");
    cr_assert(!scans("{" ENV ",\"kv_bytes\":-1}"), "negative bytes");
    cr_assert(!scans("{" ENV "} x"), "trailing text");
    cr_assert(!scans("{" ENV ",}"), "a trailing comma");
    cr_assert(!scans("{\"v\":1,\"node\":\"a\",\"seq\":1,\"t\":2}"), "no phase");
    cr_assert(!scans("{\"v\":2,\"node\":\"a\",\"seq\":1,\"t\":2,\"phase\":\"decode\"}"));
    cr_assert(!scans("\f{" ENV "}"), "a form feed is no JSON whitespace");
    cr_assert(!scans(""));
    cr_assert(!scans("[]"));
#undef ENV
}

/* Nodes before the field's removal sent comm_ms, a copy of eval_ms: both
 * decoders skip it like any unknown key, so their steps still decode, on
 * the fast path, with every other field read. */
Test(step_scan, takes_an_older_nodes_comm_ms)
{
    static const char old[] =
        "{\"v\":1,\"node\":\"n1\",\"seq\":1041,\"t\":1700000000123,\"req\":\"g1\",\"step\":17,"
        "\"phase\":\"decode\",\"tokens\":1,\"pos\":4113,\"step_ms\":36.125,\"model_ms\":7.043,"
        "\"eval_ms\":29.082,\"wait_ms\":25.5,\"comm_ms\":29.082,\"kv_bytes\":1234567890,"
        "\"kv_bits\":16}";
    cr_assert(scans(old), "fell back to jansson");
    proto_tel t;
    char err[PROTO_MESSAGE_MAX];
    cr_assert_eq(proto_tel_decode("step", 4, old, sizeof old - 1, &t, err, sizeof err), 0, "%s",
                 err);
    cr_assert_float_eq(t.step.eval_ms, 29.082, 1e-9);
    cr_assert_float_eq(t.step.wait_ms, 25.5, 1e-9);
    cr_assert_eq(t.step.kv_bytes, 1234567890);
    cr_assert_eq(t.step.kv_bits, 16);
    proto_tel_free(&t);

    /* And this node no longer sends it. */
    proto_head h;
    proto_step s;
    char buf[PROTO_STEP_BUF];
    typical_step(&h, &s);
    cr_assert_gt(proto_step_encode(&h, &s, buf, sizeof buf), 0);
    cr_assert_null(strstr(buf, "comm_ms"), "%s", buf);
}

/* The telemetry fuzzer's seeds: ok-* decode, err-* are refused, and the
 * decoders agree on all of them (inputs the fuzzer found included). */
Test(step_scan, fuzz_seeds)
{
    const char *root = getenv("INFERTOP_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/telemetry", root ? root : ".");
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s (set INFERTOP_ROOT)", dir);
    struct tally t = {0};
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096 + 256], buf[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "%s", path);
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        check(buf, n, &t);
        proto_tel tel;
        char err[PROTO_MESSAGE_MAX];
        int rc = proto_tel_decode("step", 4, buf, n, &tel, err, sizeof err);
        proto_tel_free(&tel);
        if (!strncmp(e->d_name, "ok-", 3))
            cr_expect_eq(rc, 0, "%s refused: %s", e->d_name, err);
        else if (!strncmp(e->d_name, "err-", 4))
            cr_expect_eq(rc, -1, "%s accepted", e->d_name);
    }
    closedir(d);
    cr_assert_geq(t.total, 13, "only %d seeds in %s", t.total, dir);
    cr_assert_geq(t.fast, 3);
}
