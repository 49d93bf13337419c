/* promtext.c: the Prometheus text format reader (promtext.h).
 *
 * Every string of the document (names, label names, unescaped label
 * values) is copied into one pool and referred to by offset, so growing
 * the pool never leaves a dangling pointer. A line that fails is rolled
 * back whole. */
#include "promtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prom_label {
    size_t key, val; /* offsets into the pool */
};

struct prom_sample {
    size_t name;   /* offset into the pool */
    int label0, n; /* its labels: l[label0 .. label0 + n) */
    double value;
};

struct prom_doc {
    char *pool;
    size_t pool_len, pool_cap;
    struct prom_label *l;
    int nl, l_cap;
    struct prom_sample *s;
    int ns, s_cap;
    int bad;
    char problem[160];
};

/* Doubles *cap (from `first`) until it holds `need` items of `size`. */
static int grow(void **buf, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : first;
    while (c < need)
        c *= 2;
    void *b = realloc(*buf, c * size);
    if (!b)
        return -1;
    *buf = b;
    *cap = c;
    return 0;
}

static int grow_int(void **buf, int *cap, int need, size_t size)
{
    size_t c = (size_t)*cap;
    if (grow(buf, &c, (size_t)need, size, 16) != 0)
        return -1;
    *cap = (int)c;
    return 0;
}

/* Appends one byte to the pool: the strings are built a byte at a time
 * because label values are unescaped as they are read. */
static int pool_put(prom_doc *d, char c)
{
    if (grow((void **)&d->pool, &d->pool_cap, d->pool_len + 1, 1, 256) != 0)
        return -1;
    d->pool[d->pool_len++] = c;
    return 0;
}

/* ---- one line ---------------------------------------------------------- */

enum { LINE_OK = 0, LINE_BAD = -1, LINE_NOMEM = -2 };

struct cur {
    const char *p, *e;
    const char *why; /* what was wrong, for the problem message */
};

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}
static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void skip_blanks(struct cur *c)
{
    while (c->p < c->e && is_blank(*c->p))
        c->p++;
}

/* A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, colons refused, a label
 * name. Copied into the pool with its NUL when d is not NULL. */
static int read_name(struct cur *c, prom_doc *d, int colons, size_t *off)
{
    const char *s = c->p;
    while (c->p < c->e &&
           (is_alpha(*c->p) || (colons && *c->p == ':') || (c->p > s && is_digit(*c->p))))
        c->p++;
    if (c->p == s) {
        c->why = colons ? "no metric name" : "no label name";
        return LINE_BAD;
    }
    if (!d)
        return LINE_OK;
    *off = d->pool_len;
    for (const char *q = s; q < c->p; q++)
        if (pool_put(d, *q) != 0)
            return LINE_NOMEM;
    return pool_put(d, '\0') == 0 ? LINE_OK : LINE_NOMEM;
}

/* A quoted label value with the format's three escapes (\\, \", \n). */
static int read_quoted(struct cur *c, prom_doc *d, size_t *off)
{
    if (c->p >= c->e || *c->p != '"') {
        c->why = "label value not quoted";
        return LINE_BAD;
    }
    c->p++;
    *off = d->pool_len;
    for (;;) {
        if (c->p >= c->e) {
            c->why = "label value not closed";
            return LINE_BAD;
        }
        char ch = *c->p++;
        if (ch == '"')
            break;
        if (ch == '\0') {
            c->why = "NUL byte";
            return LINE_BAD;
        }
        if (ch == '\\') {
            char x = c->p < c->e ? *c->p++ : '\0';
            ch = x == '\\' ? '\\' : x == '"' ? '"' : x == 'n' ? '\n' : '\0';
            if (!ch) {
                c->why = "bad escape in label value";
                return LINE_BAD;
            }
        }
        if (pool_put(d, ch) != 0)
            return LINE_NOMEM;
    }
    return pool_put(d, '\0') == 0 ? LINE_OK : LINE_NOMEM;
}

static int read_labels(struct cur *c, prom_doc *d, struct prom_sample *s)
{
    c->p++; /* '{' */
    for (;;) {
        skip_blanks(c);
        if (c->p < c->e && *c->p == '}') {
            c->p++;
            return LINE_OK;
        }
        if (grow_int((void **)&d->l, &d->l_cap, d->nl + 1, sizeof *d->l) != 0)
            return LINE_NOMEM;
        struct prom_label *l = &d->l[d->nl];
        int rc = read_name(c, d, 0, &l->key);
        if (rc != LINE_OK)
            return rc;
        skip_blanks(c);
        if (c->p >= c->e || *c->p != '=') {
            c->why = "no `=` after a label name";
            return LINE_BAD;
        }
        c->p++;
        skip_blanks(c);
        if ((rc = read_quoted(c, d, &l->val)) != LINE_OK)
            return rc;
        d->nl++;
        s->n++;
        skip_blanks(c);
        if (c->p < c->e && *c->p == ',')
            c->p++;
        else if (c->p >= c->e || *c->p != '}') {
            c->why = "no `,` or `}` after a label";
            return LINE_BAD;
        }
    }
}

/* The blank-delimited token at c->p, at most 63 bytes. */
static int read_token(struct cur *c, char *out, size_t size)
{
    const char *s = c->p;
    while (c->p < c->e && !is_blank(*c->p))
        c->p++;
    size_t n = (size_t)(c->p - s);
    if (n == 0 || n >= size || memchr(s, '\0', n))
        return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* A float as Go's ParseFloat reads it (Prometheus' own reader): strtod
 * takes the same decimal forms, NaN and +Inf/-Inf. */
static int parse_value(const char *t, double *v)
{
    char *end;
    *v = strtod(t, &end);
    return end != t && *end == '\0' ? 0 : -1;
}

static int read_sample(struct cur *c, prom_doc *d)
{
    if (grow_int((void **)&d->s, &d->s_cap, d->ns + 1, sizeof *d->s) != 0)
        return LINE_NOMEM;
    struct prom_sample *s = &d->s[d->ns];
    *s = (struct prom_sample){.label0 = d->nl};
    int rc = read_name(c, d, 1, &s->name);
    if (rc != LINE_OK)
        return rc;
    if (c->p < c->e && *c->p == '{' && (rc = read_labels(c, d, s)) != LINE_OK)
        return rc;
    const char *before = c->p;
    skip_blanks(c);
    char tok[64];
    if (c->p == before || read_token(c, tok, sizeof tok) != 0 || parse_value(tok, &s->value) != 0) {
        c->why = "no value after the name";
        return LINE_BAD;
    }
    skip_blanks(c);
    if (c->p < c->e) { /* a timestamp: an integer, in ms */
        const char *t = c->p;
        if (c->p < c->e && *c->p == '-')
            c->p++;
        while (c->p < c->e && is_digit(*c->p))
            c->p++;
        if (c->p == t || !is_digit(c->p[-1])) {
            c->why = "timestamp not an integer";
            return LINE_BAD;
        }
        skip_blanks(c);
        if (c->p < c->e) {
            c->why = "text after the timestamp";
            return LINE_BAD;
        }
    }
    d->ns++;
    return LINE_OK;
}

/* `# HELP name text` and `# TYPE name type`; other comments are free. */
static int read_comment(struct cur *c)
{
    static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    c->p++; /* '#' */
    skip_blanks(c);
    char word[64];
    if (c->p >= c->e || read_token(c, word, sizeof word) != 0)
        return LINE_OK;
    int help = strcmp(word, "HELP") == 0, type = strcmp(word, "TYPE") == 0;
    if (!help && !type)
        return LINE_OK;
    skip_blanks(c);
    int rc = read_name(c, NULL, 1, NULL);
    if (rc != LINE_OK || help) /* HELP's text may hold anything */
        return rc;
    skip_blanks(c);
    if (read_token(c, word, sizeof word) == 0) {
        skip_blanks(c);
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcmp(word, types[i]) == 0 && c->p == c->e)
                return LINE_OK;
    }
    c->why = "`# TYPE` names no known type";
    return LINE_BAD;
}

static int read_line(prom_doc *d, struct cur *c)
{
    skip_blanks(c);
    if (c->p == c->e)
        return LINE_OK;
    if (*c->p == '#')
        return read_comment(c);
    return read_sample(c, d);
}

prom_doc *prom_parse(const char *text, size_t len)
{
    prom_doc *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    const char *p = text, *end = text + len;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        size_t pool_len = d->pool_len;
        int nl0 = d->nl;
        struct cur c = {.p = p, .e = e};
        int rc = read_line(d, &c);
        if (rc == LINE_NOMEM) {
            prom_free(d);
            return NULL;
        }
        if (rc == LINE_BAD) {
            d->pool_len = pool_len;
            d->nl = nl0;
            if (d->bad++ == 0)
                snprintf(d->problem, sizeof d->problem, "line %d: %s", line, c.why);
        }
        p = nl ? nl + 1 : end;
    }
    return d;
}

void prom_free(prom_doc *d)
{
    if (!d)
        return;
    free(d->pool);
    free(d->l);
    free(d->s);
    free(d);
}

int prom_bad_lines(const prom_doc *d)
{
    return d->bad;
}
const char *prom_problem(const prom_doc *d)
{
    return d->problem;
}

/* ---- queries ------------------------------------------------------------ */

/* The value of label `key` of sample s, NULL when it has none. */
static const char *label_of(const prom_doc *d, const struct prom_sample *s, const char *key)
{
    for (int i = s->label0; i < s->label0 + s->n; i++)
        if (strcmp(d->pool + d->l[i].key, key) == 0)
            return d->pool + d->l[i].val;
    return NULL;
}

double prom_sum(const prom_doc *d, const char *name, const char *label, const char *value, int *n)
{
    double sum = 0;
    int k = 0;
    for (int i = 0; i < d->ns; i++) {
        const struct prom_sample *s = &d->s[i];
        if (strcmp(d->pool + s->name, name) != 0)
            continue;
        if (label) {
            const char *v = label_of(d, s, label);
            if (!v || strcmp(v, value) != 0)
                continue;
        }
        sum += s->value;
        k++;
    }
    if (n)
        *n = k;
    return k ? sum : NAN;
}

int prom_hist(const prom_doc *d, const char *name, struct prom_hist *h)
{
    char key[256];
    if (snprintf(key, sizeof key, "%s_bucket", name) >= (int)sizeof key)
        return -1;
    h->n = 0;
    for (int i = 0; i < d->ns; i++) {
        const struct prom_sample *s = &d->s[i];
        const char *le = strcmp(d->pool + s->name, key) == 0 ? label_of(d, s, "le") : NULL;
        double bound;
        if (!le || parse_value(le, &bound) != 0 || isnan(bound))
            continue;
        /* "1" and "1.0" are one bound: compared as numbers. */
        int b = 0;
        while (b < h->n && h->le[b] < bound)
            b++;
        if (b < h->n && h->le[b] == bound) {
            h->count[b] += s->value;
            continue;
        }
        if (h->n == PROM_BUCKETS_MAX)
            return -1;
        memmove(&h->le[b + 1], &h->le[b], (size_t)(h->n - b) * sizeof h->le[0]);
        memmove(&h->count[b + 1], &h->count[b], (size_t)(h->n - b) * sizeof h->count[0]);
        h->le[b] = bound;
        h->count[b] = s->value;
        h->n++;
    }
    if (h->n == 0)
        return -1;
    snprintf(key, sizeof key, "%s_sum", name);
    h->sum = prom_sum(d, key, NULL, NULL, NULL);
    snprintf(key, sizeof key, "%s_count", name);
    h->total = prom_sum(d, key, NULL, NULL, NULL);
    return 0;
}

double prom_quantile(double q, const struct prom_hist *h)
{
    int n = h->n;
    if (!(q >= 0 && q <= 1) || n < 2 || n > PROM_BUCKETS_MAX || !isinf(h->le[n - 1]) ||
        h->le[n - 1] < 0)
        return NAN;
    /* Counts made monotonic as Prometheus does: scrapes of the buckets
     * are not atomic, a later bucket may read lower than an earlier one. */
    double c[PROM_BUCKETS_MAX];
    for (int i = 0; i < n; i++) {
        if (isnan(h->count[i]))
            return NAN;
        c[i] = i > 0 && h->count[i] < c[i - 1] ? c[i - 1] : h->count[i];
    }
    if (!(c[n - 1] > 0))
        return NAN;
    double rank = q * c[n - 1];
    int b = 0;
    while (b < n - 1 && c[b] < rank)
        b++;
    if (b == n - 1)
        return h->le[n - 2];
    if (b == 0 && h->le[0] <= 0)
        return h->le[0];
    double start = b > 0 ? h->le[b - 1] : 0, in = c[b] - (b > 0 ? c[b - 1] : 0);
    rank -= b > 0 ? c[b - 1] : 0;
    if (!(in > 0))
        return start;
    /* Clamped: with huge bounds the product may round out of the bucket. */
    double x = start + (h->le[b] - start) * (rank / in);
    return x < start ? start : x > h->le[b] ? h->le[b] : x;
}
