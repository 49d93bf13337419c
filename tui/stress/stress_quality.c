/* stress_quality.c: the quality measurement's parts that are not the
 * wire: the text it scores (a file, or the excerpt built into infertop),
 * the text's sha256 that the record keeps so that measurements of one
 * text compare, and the reply's `quality` object read into a store row
 * (engine/PROTOCOL.md 2.7). */
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress_int.h"

/* The default text, in the binary itself: an installed infertop needs no
 * data file to find, and a copy of the same bytes has the same sha256 on
 * every machine. The path is relative to the tree's root, where the
 * build compiles from. */
__asm__(".section .rodata\n"
        ".balign 16\n"
        "stress_text_en_start:\n"
        ".incbin \"contrib/quality/text-en.txt\"\n"
        "stress_text_en_end:\n"
        ".byte 0\n"
        ".previous\n");
extern const char stress_text_en_start[], stress_text_en_end[];

const char stress_text_builtin_name[] = "text-en.txt";

/* A text must be one C string for the request: a NUL inside would cut it. */
static int text_check(const char *what, const char *data, size_t len, char *err, size_t errlen)
{
    if (len == 0) {
        snprintf(err, errlen, "%s is empty: there is nothing to score", what);
        return -1;
    }
    const char *nul = memchr(data, '\0', len);
    if (nul) {
        snprintf(err, errlen, "%s holds a NUL byte at offset %zu: not a text", what,
                 (size_t)(nul - data));
        return -1;
    }
    return 0;
}

char *stress_text_load(const char *path, char *err, size_t errlen)
{
    if (!path) {
        size_t len = (size_t)(stress_text_en_end - stress_text_en_start);
        char *t = malloc(len + 1);
        if (!t) {
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        memcpy(t, stress_text_en_start, len);
        t[len] = '\0';
        return t;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--text %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = cap ? 2 * cap : 65536 * 2;
            char *grown = realloc(buf, cap);
            if (!grown) {
                snprintf(err, errlen, "--text %s: out of memory", path);
                goto fail;
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, 65536, f);
        len += got;
        if (got < 65536)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "--text %s: %s", path, strerror(errno));
        goto fail;
    }
    buf[len] = '\0';
    char what[64 + OPT_RUN_TEXT_MAX];
    snprintf(what, sizeof what, "--text %s", path);
    if (text_check(what, buf, len, err, errlen) != 0)
        goto fail;
    fclose(f);
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

void st_text_sha256(const char *text, char out[STORE_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < n && 2 * i + 2 < STORE_SHA256_HEX; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* ---- the reply ---- */

/* A figure of the reply; NaN when absent (a bucket of no positions). */
static double figure(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int count(const json_t *o, const char *key, int64_t *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        snprintf(err, errlen, "the quality reply has no count `%s`", key);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int read_bucket(const json_t *b, store_quality_bucket *out, char *err, size_t errlen)
{
    if (count(b, "from", &out->from, err, errlen) || count(b, "to", &out->to, err, errlen) ||
        count(b, "positions", &out->positions, err, errlen))
        return -1;
    double *v[] = {&out->kl_mean, &out->kl_p99,  &out->kl_max,
                   &out->top1,    &out->ppl_ref, &out->ppl_test};
    static const char *const keys[] = {"kl_mean", "kl_p99",  "kl_max",
                                       "top1",    "ppl_ref", "ppl_test"};
    for (int i = 0; i < 6; i++)
        *v[i] = figure(b, keys[i]);
    return 0;
}

int st_quality_read(const json_t *reply, store_quality *q, char *err, size_t errlen)
{
    const json_t *o = json_object_get(reply, "quality");
    const json_t *buckets = json_object_get(o, "buckets");
    if (!json_is_object(o) || (buckets && !json_is_array(buckets))) {
        snprintf(err, errlen, "the quality reply has no `quality` object");
        return -1;
    }
    int64_t kv, ref;
    if (count(o, "kv_bits", &kv, err, errlen) || count(o, "ref_kv_bits", &ref, err, errlen) ||
        count(o, "ctx", &q->ctx, err, errlen) ||
        count(o, "score_from", &q->score_from, err, errlen) ||
        count(o, "windows", &q->windows, err, errlen) ||
        count(o, "positions", &q->positions, err, errlen))
        return -1;
    q->kv_bits = (int)kv;
    q->ref_kv_bits = (int)ref;
    double *v[] = {&q->kl_mean, &q->kl_p99,   &q->kl_max,     &q->top1,
                   &q->ppl_ref, &q->ppl_test, &q->ppl_ref_err};
    static const char *const keys[] = {"kl_mean", "kl_p99",   "kl_max",     "top1",
                                       "ppl_ref", "ppl_test", "ppl_ref_err"};
    for (int i = 0; i < 7; i++)
        *v[i] = figure(o, keys[i]);
    q->n_buckets = json_array_size(buckets);
    q->buckets = q->n_buckets ? calloc(q->n_buckets, sizeof *q->buckets) : NULL;
    if (q->n_buckets && !q->buckets) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < q->n_buckets; i++)
        if (read_bucket(json_array_get(buckets, i), &q->buckets[i], err, errlen) != 0) {
            free(q->buckets);
            q->buckets = NULL;
            q->n_buckets = 0;
            return -1;
        }
    return 0;
}
