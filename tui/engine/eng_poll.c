/* eng_poll.c: one node's polls, the same for every engine (engine.h).
 *
 * A round fills a fresh view from the answers, led by the engine's table
 * (eng_map.h); /metrics also gives a snapshot of the table's counters and
 * histograms, kept in a ring so that rates and percentiles cover the
 * window (ENG_WINDOW_S) rather than one poll's jitter. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eng_map.h"
#include "engine.h"
#include "promtext.h"

static const struct eng_table inferd_table = {0}; /* watched over ZeroMQ, not here */

static const struct eng_table *const tables[ENG_COUNT] = {
    [ENG_INFERD] = &inferd_table,     [ENG_LLAMACPP] = &eng_llamacpp_table,
    [ENG_VLLM] = &eng_vllm_table,     [ENG_OLLAMA] = &eng_ollama_table,
    [ENG_OPENAI] = &eng_openai_table,
};

static const struct eng_table *table_of(eng_kind k)
{
    return k >= 0 && k < ENG_COUNT ? tables[k] : &inferd_table;
}

/* The tables' rows hold more than the poller needs: its view of them is
 * copied once. */
static struct eng_endpoint endpoints[ENG_COUNT][ENG_EPS_MAX];
static pthread_once_t endpoints_once = PTHREAD_ONCE_INIT;

static void copy_endpoints(void)
{
    for (int k = 0; k < ENG_COUNT; k++)
        for (int i = 0; i < tables[k]->n_eps && i < ENG_EPS_MAX; i++)
            endpoints[k][i] = (struct eng_endpoint){tables[k]->eps[i].path, tables[k]->eps[i].once};
}

const struct eng_endpoint *eng_endpoints(eng_kind k, int *n)
{
    pthread_once(&endpoints_once, copy_endpoints);
    const struct eng_table *t = table_of(k);
    *n = t->n_eps < ENG_EPS_MAX ? t->n_eps : ENG_EPS_MAX;
    return endpoints[k >= 0 && k < ENG_COUNT ? k : ENG_INFERD];
}

/* ---- the window's snapshots ---------------------------------------------- */

struct snap {
    double t;
    double ctr[ENG_COUNTERS_MAX]; /* NaN when not exported */
    int has_hist[ENG_H_COUNT];
    struct prom_hist hist[ENG_H_COUNT];
};

/* Enough for polls five times a second over the window; at faster polls
 * the oldest go first and the window shortens. */
#define ENG_SNAPS 26

/* How much a problem matters: a higher rank replaces a lower one. */
enum { P_NONE, P_OTHER, P_HINT, P_HEALTH, P_DOWN };

struct eng_poll {
    eng_kind kind;
    const struct eng_table *t;
    double began;
    struct eng_view cur;
    /* What endpoints asked once told (/props, /version): kept for every
     * later round, which no longer asks them. */
    struct eng_view sticky;
    int rank; /* of cur.problem */
    struct snap fresh;
    int has_fresh;
    struct snap ring[ENG_SNAPS];
    int first, n;
};

eng_poll *eng_poll_new(eng_kind k)
{
    eng_poll *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->kind = k;
    p->t = table_of(k);
    eng_view_init(&p->cur, k);
    eng_view_init(&p->sticky, k);
    return p;
}

void eng_poll_free(eng_poll *p)
{
    free(p);
}

void eng_poll_begin(eng_poll *p, double now)
{
    p->began = now;
    eng_view_init(&p->cur, p->kind);
    p->rank = P_NONE;
    p->has_fresh = 0;
}

/* "GET PATH: WHAT" as the round's problem, unless one that matters more
 * was said. */
static void problem(eng_poll *p, int rank, const char *path, const char *what)
{
    if (rank <= p->rank)
        return;
    p->rank = rank;
    snprintf(p->cur.problem, sizeof p->cur.problem, "GET %s: %s", path, what);
}

/* ---- reading answers ------------------------------------------------------ */

/* The first line of text, control bytes replaced: it goes to a terminal. */
static void first_line(const char *text, size_t len, char *out, size_t size)
{
    size_t n = 0;
    while (n < len && n + 1 < size && text[n] != '\n' && text[n] != '\r' && text[n] != '\0')
        n++;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? '?' : text[i];
    out[n] = '\0';
}

/* What an error answer says: OpenAI's and llama.cpp's {"error":
 * {"message"}}, Ollama's {"error": "..."}, else the body's first line. */
static void error_text(const char *body, size_t len, char *out, size_t size)
{
    json_t *j = json_loadb(body, len, 0, NULL);
    if (!j) {
        first_line(body, len, out, size);
        return;
    }
    json_t *e = json_object_get(j, "error");
    eng_json_text(out, size, json_is_object(e) ? e : j, json_is_object(e) ? "message" : "error");
    json_decref(j);
}

/* The table's gauges now, counters and histograms into the fresh
 * snapshot. */
static void read_metrics(eng_poll *p, const char *path, const char *body, size_t len)
{
    prom_doc *d = prom_parse(body, len);
    if (!d) {
        problem(p, P_OTHER, path, "out of memory");
        return;
    }
    if (prom_bad_lines(d))
        problem(p, P_OTHER, path, prom_problem(d));
    const struct eng_table *t = p->t;
    for (int i = 0; i < t->n_gauges; i++) {
        const struct eng_gauge_row *g = &t->gauges[i];
        for (int a = 0; a < ENG_NAMES && g->names[a]; a++) {
            int n;
            double v = prom_sum(d, g->names[a], NULL, NULL, &n);
            if (n) {
                *(double *)((char *)&p->cur + g->field) = g->agg == ENG_MEAN ? v / n : v;
                break;
            }
        }
    }
    struct snap *s = &p->fresh;
    s->t = p->began;
    for (int i = 0; i < t->n_counters && i < ENG_COUNTERS_MAX; i++) {
        s->ctr[i] = NAN;
        const struct eng_counter_row *c = &t->counters[i];
        for (int a = 0; a < ENG_NAMES && c->names[a] && isnan(s->ctr[i]); a++) {
            int n;
            s->ctr[i] = prom_sum(d, c->names[a], NULL, NULL, &n);
            if (!n)
                s->ctr[i] = NAN;
        }
        if (c->times) {
            int n;
            double mean = prom_sum(d, c->times, NULL, NULL, &n);
            s->ctr[i] = n ? s->ctr[i] * mean / n : NAN;
        }
    }
    for (int i = 0; i < t->n_hists; i++) {
        eng_hist h = t->hists[i].h;
        s->has_hist[h] = 0;
        for (int a = 0; a < ENG_NAMES && t->hists[i].names[a] && !s->has_hist[h]; a++)
            s->has_hist[h] = prom_hist(d, t->hists[i].names[a], &s->hist[h]) == 0;
    }
    p->has_fresh = 1;
    prom_free(d);
}

void eng_poll_answer(eng_poll *p, int ep, long status, const char *body, size_t len,
                     double latency_ms)
{
    if (ep < 0 || ep >= p->t->n_eps)
        return;
    const struct eng_ep_row *row = &p->t->eps[ep];
    if (!body) {
        body = "";
        len = 0;
    }
    char what[160];
    if (status == 0) {
        /* Only the first endpoint says whether the engine is there: a
         * busy llama-server may answer /health and /metrics at once and
         * /slots (which waits for its task loop) late. */
        first_line(body, len, what, sizeof what);
        problem(p, ep == 0 ? P_DOWN : P_OTHER, row->path, what[0] ? what : "no answer");
        if (ep == 0)
            p->cur.health = ENG_DOWN;
        return;
    }
    if (isnan(p->cur.latency_ms) || latency_ms > p->cur.latency_ms)
        p->cur.latency_ms = latency_ms;
    if (status == 200) {
        if (ep == 0 && p->cur.health != ENG_DOWN)
            p->cur.health = ENG_UP;
        if (row->metrics)
            read_metrics(p, row->path, body, len);
        else if (row->read &&
                 row->read(row->once ? &p->sticky : &p->cur, body, len, what, sizeof what) != 0)
            problem(p, P_OTHER, row->path, what);
        return;
    }
    if (row->flag && (status == 404 || status == 501)) {
        /* The hints of one round add up: "start llama-server with
         * --metrics --slots". */
        size_t n = strlen(p->cur.problem);
        if (p->rank == P_HINT)
            snprintf(p->cur.problem + n, sizeof p->cur.problem - n, " %s", row->flag);
        else if (p->rank < P_HINT) {
            p->rank = P_HINT;
            snprintf(p->cur.problem, sizeof p->cur.problem, "%s %s", p->t->start_with, row->flag);
        }
        return;
    }
    char said[128], msg[200];
    error_text(body, len, said, sizeof said);
    snprintf(msg, sizeof msg, "HTTP %ld%s%s%s", status, said[0] ? ": " : "", said,
             status == 401 || status == 403 ? " (check the node's api_key_file)" : "");
    if (ep == 0 && p->cur.health != ENG_DOWN) {
        /* 503 is how a server says it is not ready yet (llama.cpp while
         * it loads the model). */
        p->cur.health = status == 503 ? ENG_LOADING : ENG_ERROR;
        problem(p, P_HEALTH, row->path, msg);
    } else
        problem(p, P_OTHER, row->path, msg);
}

/* ---- the window ------------------------------------------------------------- */

static struct snap *ring_at(eng_poll *p, int i)
{
    return &p->ring[(p->first + i) % ENG_SNAPS];
}

/* A counter or histogram lower than before: the engine restarted. */
static int went_down(const struct snap *a, const struct snap *b)
{
    for (int i = 0; i < ENG_COUNTERS_MAX; i++)
        if (b->ctr[i] < a->ctr[i])
            return 1;
    for (int h = 0; h < ENG_H_COUNT; h++)
        if (a->has_hist[h] && b->has_hist[h] && b->hist[h].total < a->hist[h].total)
            return 1;
    return 0;
}

static void push(eng_poll *p, const struct snap *s)
{
    /* Across a restart no delta means anything: the window starts
     * again. */
    if (p->n && went_down(ring_at(p, p->n - 1), s))
        p->n = 0;
    if (p->n == ENG_SNAPS) {
        p->first = (p->first + 1) % ENG_SNAPS;
        p->n--;
    }
    *ring_at(p, p->n++) = *s;
    /* The oldest kept is the newest at or before the window's start, so
     * that polls further apart than the window still give rates. */
    while (p->n > 2 && ring_at(p, 1)->t <= s->t - ENG_WINDOW_S) {
        p->first = (p->first + 1) % ENG_SNAPS;
        p->n--;
    }
}

/* b's buckets less a's, when both have the same bounds. */
static int hist_delta(const struct prom_hist *a, const struct prom_hist *b, struct prom_hist *out)
{
    if (a->n != b->n)
        return -1;
    out->n = b->n;
    for (int i = 0; i < b->n; i++) {
        if (a->le[i] != b->le[i])
            return -1;
        out->le[i] = b->le[i];
        out->count[i] = b->count[i] - a->count[i];
    }
    return 0;
}

static void derive(eng_poll *p, struct eng_view *v)
{
    if (p->n < 2)
        return;
    const struct snap *a = ring_at(p, 0), *b = ring_at(p, p->n - 1);
    const struct eng_table *t = p->t;
    for (int i = 0; i < t->n_deltas; i++) {
        const struct eng_delta_row *r = &t->deltas[i];
        double num = b->ctr[r->num] - a->ctr[r->num];
        double den = r->den == ENG_PER_SECOND  ? b->t - a->t
                     : r->den == ENG_IN_WINDOW ? 1
                                               : b->ctr[r->den] - a->ctr[r->den];
        /* NaN compares false: a counter missing at either end gives NaN. */
        if (num >= 0 && den > 0)
            *(double *)((char *)v + r->field) = r->scale * num / den;
    }
    for (int h = 0; h < ENG_H_COUNT; h++) {
        struct prom_hist d;
        if (a->has_hist[h] && b->has_hist[h] && hist_delta(&a->hist[h], &b->hist[h], &d) == 0) {
            v->hist_p50[h] = 1000 * prom_quantile(0.50, &d);
            v->hist_p95[h] = 1000 * prom_quantile(0.95, &d);
        }
    }
}

void eng_poll_end(eng_poll *p, double now, struct eng_view *out)
{
    if (p->has_fresh) {
        push(p, &p->fresh);
        derive(p, &p->cur);
    }
    /* The once-told facts fill what this round's answers left unknown. */
    struct eng_view *v = &p->cur, *s = &p->sticky;
    if (!v->model[0])
        memcpy(v->model, s->model, sizeof v->model);
    if (!v->version[0])
        memcpy(v->version, s->version, sizeof v->version);
    if (isnan(v->n_ctx))
        v->n_ctx = s->n_ctx;
    if (isnan(v->slots_total))
        v->slots_total = s->slots_total;
    v->polled_at = now;
    *out = *v;
}
