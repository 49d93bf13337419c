/* metrics.c: Prometheus metrics from telemetry (see metrics.h). */
#include "metrics.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

/* Histogram bounds. In seconds: for step times (sub-millisecond decode on
 * small models to tens of seconds of prefill) and time to first token;
 * for a request's whole time and its wait (vLLM's e2e buckets, to the
 * half hour a long-context prefill on small machines can take); for the
 * time between tokens (a 1 ms small-model decode to 10 s a token of a
 * large model over a slow ring). In tokens: prompt and generation
 * lengths, to the 200K contexts this product aims at. */
#define BUCKETS_MAX 24
typedef struct scale {
    size_t n;
    double b[BUCKETS_MAX];
} scale;
static const scale steps = {18,
                            {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                             2.5, 5, 10, 30, 60, 120, 300}};
static const scale requests = {20, {0.05, 0.1, 0.25, 0.5, 0.75, 1,   1.5, 2,   2.5, 5,
                                    10,   15,  20,   30,  60,   120, 240, 480, 960, 1920}};
static const scale per_token = {
    16,
    {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 10}};
static const scale lengths = {19,
                              {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                               32768, 65536, 131072, 200000, 262144, 1048576}};

typedef struct hist {
    const scale *s;
    uint64_t bucket[BUCKETS_MAX]; /* observations <= s->b[i] (not cumulative) */
    uint64_t count;
    double sum;
} hist;

/* A counter over a small set of label values seen in telemetry (request
 * outcomes, event kinds); values past LABELLED_MAX are folded into the
 * last slot's "other". */
#define LABELLED_MAX 24
typedef struct labelled {
    int n;
    struct {
        char a[PROTO_CODE_MAX], b[PROTO_CODE_MAX];
        uint64_t count;
    } v[LABELLED_MAX];
} labelled;

enum { N_PHASES = 2 }; /* PROTO_PHASE_PREFILL, PROTO_PHASE_DECODE */
static const char *const phase_names[N_PHASES] = {"prefill", "decode"};

typedef struct node_m {
    char name[PROTO_NAME_MAX + 1];
    int has_status;
    proto_status status; /* the last heartbeat */
    double heartbeat_t;
    int has_seq;
    uint64_t last_seq, messages, dropped;
    hist step[N_PHASES], model[N_PHASES], eval[N_PHASES], ttft;
    /* per request served (ended ok), on the head: */
    hist e2e, queue, tpot, prompt_len, gen_len;
    hist itl; /* per generated token: its decode step */
    uint64_t tokens[N_PHASES], prompt_tokens, generated_tokens, nonfinite, stage_timeouts;
    labelled requests, events;
    /* the latest step's view, fresher than the heartbeat's while requests run */
    int has_step;
    double step_t;
    uint64_t kv_bytes, rss, budget;
    int64_t headroom;
    int kv_bits, chunk, seqs;
    double busy;
} node_m;

struct metrics {
    int n;
    node_m *nodes[METRICS_NODES_MAX];
};

metrics *metrics_new(void)
{
    return calloc(1, sizeof(metrics));
}

void metrics_free(metrics *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        free(m->nodes[i]);
    free(m);
}

static node_m *node_of(metrics *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->nodes[i]->name, name) == 0)
            return m->nodes[i];
    if (m->n == METRICS_NODES_MAX)
        return NULL;
    node_m *nm = calloc(1, sizeof *nm);
    if (!nm)
        return NULL;
    snprintf(nm->name, sizeof nm->name, "%s", name);
    for (int p = 0; p < N_PHASES; p++)
        nm->step[p].s = nm->model[p].s = nm->eval[p].s = &steps;
    nm->ttft.s = &steps;
    nm->e2e.s = nm->queue.s = &requests;
    nm->tpot.s = nm->itl.s = &per_token;
    nm->prompt_len.s = nm->gen_len.s = &lengths;
    m->nodes[m->n++] = nm;
    return nm;
}

/* n observations of v (a decode step: one per sequence in it). */
static void observe_n(hist *h, double v, uint64_t n)
{
    if (!isfinite(v) || n == 0)
        return;
    size_t i = 0;
    while (i < h->s->n && v > h->s->b[i])
        i++;
    if (i < h->s->n)
        h->bucket[i] += n;
    h->count += n;
    h->sum += v * (double)n;
}

static void observe(hist *h, double v)
{
    observe_n(h, v, 1);
}

static void count(labelled *l, const char *a, const char *b)
{
    int i = 0;
    while (i < l->n && (strcmp(l->v[i].a, a) != 0 || strcmp(l->v[i].b, b) != 0))
        i++;
    if (i == LABELLED_MAX) {
        i = LABELLED_MAX - 1; /* full: the last slot is "other" */
    } else if (i == l->n) {
        int last = ++l->n == LABELLED_MAX;
        snprintf(l->v[i].a, sizeof l->v[i].a, "%s", last ? "other" : a);
        snprintf(l->v[i].b, sizeof l->v[i].b, "%s", last ? "" : b);
    }
    l->v[i].count++;
}

/* seq counts every message of a publisher: a jump says how many were
 * lost; a step back is a restarted node, counting again from 0. */
static void track_seq(node_m *n, uint64_t seq)
{
    if (n->has_seq && seq > n->last_seq + 1)
        n->dropped += seq - n->last_seq - 1;
    n->has_seq = 1;
    n->last_seq = seq;
    n->messages++;
}

static void take_step(node_m *n, const proto_step *s, double now)
{
    n->has_step = 1;
    n->step_t = now;
    int p = s->phase == PROTO_PHASE_DECODE;
    observe(&n->step[p], s->step_ms / 1000.0);
    observe(&n->model[p], s->model_ms / 1000.0);
    observe(&n->eval[p], s->eval_ms / 1000.0);
    /* Each sequence of a decode step waited the step for its token. */
    if (p == PROTO_PHASE_DECODE && s->seqs > 0 && n->has_status && n->status.model.layer_first == 0)
        observe_n(&n->itl, s->step_ms / 1000.0, (uint64_t)s->seqs);
    n->tokens[p] += (uint64_t)(s->tokens > 0 ? s->tokens : 0);
    n->nonfinite += (uint64_t)(s->nonfinite > 0 ? s->nonfinite : 0);
    n->kv_bytes = s->kv_bytes;
    n->kv_bits = s->kv_bits;
    n->chunk = s->prefill_step;
    n->rss = s->rss;
    n->budget = s->budget;
    n->headroom = s->headroom;
    n->seqs = s->seqs;
    n->busy = s->busy;
}

/* A request counts once: at its end when it ran, or when it was refused
 * before it began (those send no request-end message). */
static void take_req(node_m *n, const proto_req_msg *r)
{
    if (!r->end)
        return;
    count(&n->requests, r->ok ? "ok" : "error", r->ok ? "" : r->code);
    observe(&n->ttft, r->stats.ttft_ms / 1000.0);
    if (r->ok) {
        const proto_stats *st = &r->stats;
        observe(&n->e2e, st->e2e_ms / 1000.0);
        /* Received to prefill begun: the queue, tokenizing, admission. */
        observe(&n->queue, fmax(st->ttft_ms - st->prefill_ms, 0) / 1000.0);
        if (st->gen_tokens > 1)
            observe(&n->tpot, (st->e2e_ms - st->ttft_ms) / 1000.0 / (st->gen_tokens - 1));
        observe(&n->prompt_len, st->prompt_tokens);
        observe(&n->gen_len, st->gen_tokens);
    }
    n->prompt_tokens += (uint64_t)(r->stats.prompt_tokens > 0 ? r->stats.prompt_tokens : 0);
    n->generated_tokens += (uint64_t)(r->stats.gen_tokens > 0 ? r->stats.gen_tokens : 0);
}

static void take_event(node_m *n, const proto_event *e)
{
    count(&n->events, e->kind_name[0] ? e->kind_name : proto_event_name(e->kind), "");
    if (e->kind == PROTO_EV_REFUSED)
        count(&n->requests, "refused", e->code);
    if (e->kind == PROTO_EV_STAGE_TIMEOUT)
        n->stage_timeouts++;
}

void metrics_take(metrics *m, const proto_tel *t, double now)
{
    if (t->topic == PROTO_TOPIC_UNKNOWN)
        return;
    node_m *n = node_of(m, t->head.node);
    if (!n)
        return;
    track_seq(n, t->head.seq);
    switch (t->topic) {
    case PROTO_TOPIC_STEP:
        take_step(n, &t->step, now);
        break;
    case PROTO_TOPIC_NODE:
        n->has_status = 1;
        n->status = t->status;
        n->heartbeat_t = now;
        break;
    case PROTO_TOPIC_REQ:
        take_req(n, &t->req);
        break;
    case PROTO_TOPIC_EVENT:
        take_event(n, &t->event);
        break;
    default:
        break;
    }
}

/* ---- rendering ---------------------------------------------------------- */

typedef struct label {
    const char *k, *v; /* a label whose value is "" is left out */
} label;

static void put_quoted(sbuf *b, const char *v)
{
    sbuf_put(b, "\"", 1);
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"')
            sbuf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            sbuf_puts(b, "\\n");
        else
            sbuf_put(b, p, 1);
    }
    sbuf_put(b, "\"", 1);
}

/* name{node="..",k="v",...} value */
static void series(sbuf *b, const char *name, const node_m *n, const label *extra, int n_extra,
                   const char *value)
{
    sbuf_printf(b, "%s{node=", name);
    put_quoted(b, n->name);
    for (int i = 0; i < n_extra; i++) {
        if (!extra[i].v[0])
            continue;
        sbuf_printf(b, ",%s=", extra[i].k);
        put_quoted(b, extra[i].v);
    }
    sbuf_printf(b, "} %s\n", value);
}

static const char *fmt_u64(char *buf, uint64_t v)
{
    snprintf(buf, 32, "%llu", (unsigned long long)v);
    return buf;
}

static const char *fmt_f64(char *buf, double v)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    snprintf(buf, 32, "%.12g", v);
    return buf;
}

static void family(sbuf *b, const char *name, const char *type, const char *help)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_hist(sbuf *b, const char *name, const node_m *n, const label *extra, int n_extra,
                     const hist *h)
{
    char bucket[96], buf[32], le[32];
    label lab[3];
    for (int i = 0; i < n_extra; i++)
        lab[i] = extra[i];
    lab[n_extra] = (label){"le", le};
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    uint64_t cum = 0;
    for (size_t i = 0; i < h->s->n; i++) {
        cum += h->bucket[i];
        snprintf(le, sizeof le, "%g", h->s->b[i]);
        series(b, bucket, n, lab, n_extra + 1, fmt_u64(buf, cum));
    }
    snprintf(le, sizeof le, "+Inf");
    series(b, bucket, n, lab, n_extra + 1, fmt_u64(buf, h->count));
    snprintf(bucket, sizeof bucket, "%s_sum", name);
    series(b, bucket, n, extra, n_extra, fmt_f64(buf, h->sum));
    snprintf(bucket, sizeof bucket, "%s_count", name);
    series(b, bucket, n, extra, n_extra, fmt_u64(buf, h->count));
}

/* The step histograms, one series per node and phase. */
static void put_phase_hists(sbuf *b, const metrics *m, const char *name, const char *help,
                            size_t offset)
{
    family(b, name, "histogram", help);
    for (int i = 0; i < m->n; i++) {
        const node_m *n = m->nodes[i];
        const hist *h = (const hist *)((const char *)n + offset);
        for (int p = 0; p < N_PHASES; p++) {
            label phase = {"phase", phase_names[p]};
            put_hist(b, name, n, &phase, 1, &h[p]);
        }
    }
}

/* A value of one node; NAN leaves the node out (not known yet). */
typedef double (*getter)(const node_m *n, double now);

static double g_up(const node_m *n, double now)
{
    return n->has_status && now - n->heartbeat_t < METRICS_DOWN_S;
}
static double g_uptime(const node_m *n, double now)
{
    (void)now;
    return n->has_status ? n->status.uptime_s : NAN;
}
/* Whether the last step says more than the last heartbeat. */
static int step_fresh(const node_m *n)
{
    return n->has_step && (!n->has_status || n->step_t >= n->heartbeat_t);
}

static double g_kv_bytes(const node_m *n, double now)
{
    (void)now;
    if (step_fresh(n))
        return (double)n->kv_bytes;
    return n->has_status ? (double)n->status.memory.kv_bytes : NAN;
}
static double g_kv_bits(const node_m *n, double now)
{
    (void)now;
    if (step_fresh(n))
        return n->kv_bits;
    return n->has_status ? n->status.config.kv_bits : NAN;
}
/* The configured chunk, or under `auto` the last one the head chose. */
static double g_prefill(const node_m *n, double now)
{
    (void)now;
    if (n->has_status && n->status.config.prefill_step != PROTO_PREFILL_AUTO)
        return n->status.config.prefill_step;
    return n->has_step ? n->chunk : n->has_status ? 0 : NAN;
}
static double g_budget(const node_m *n, double now)
{
    (void)now;
    if (step_fresh(n))
        return (double)n->budget;
    return n->has_status ? (double)n->status.memory.budget : NAN;
}
static double g_used(const node_m *n, double now)
{
    (void)now;
    if (step_fresh(n))
        return (double)n->rss;
    return n->has_status ? (double)n->status.memory.used : NAN;
}
static double g_headroom(const node_m *n, double now)
{
    (void)now;
    if (step_fresh(n))
        return (double)n->headroom;
    return n->has_status ? (double)n->status.memory.headroom : NAN;
}
static double g_weights(const node_m *n, double now)
{
    (void)now;
    return n->has_status ? (double)n->status.memory.weights_bytes : NAN;
}
static double g_sessions(const node_m *n, double now)
{
    (void)now;
    return n->has_status ? n->status.sessions : NAN;
}
static double g_active(const node_m *n, double now)
{
    (void)now;
    return n->has_status ? n->status.active : NAN;
}
static double g_queued(const node_m *n, double now)
{
    (void)now;
    return n->has_status ? n->status.queued : NAN;
}
static double g_busy(const node_m *n, double now)
{
    (void)now;
    if (step_fresh(n) && !isnan(n->busy))
        return n->busy;
    return n->has_status ? n->status.busy : NAN;
}
static double g_batch(const node_m *n, double now)
{
    (void)now;
    return step_fresh(n) ? n->seqs : 0.0;
}

/* The head of a ring only: whether its ring answers (loading counts as not). */
static double g_ring_up(const node_m *n, double now)
{
    (void)now;
    if (!n->has_status || !n->status.ring_health.known)
        return NAN;
    return n->status.ring_health.state == PROTO_RING_UP;
}

static const struct {
    const char *name, *help;
    getter get;
} gauges[] = {
    {"inferd_up", "1 when the node's heartbeat came within the last 3 s.", g_up},
    {"inferd_uptime_seconds", "Time since the node started.", g_uptime},
    {"inferd_kv_cache_bytes", "KV cache held by the node, all sessions.", g_kv_bytes},
    {"inferd_kv_cache_precision", "KV cache precision in bits per value (32, 16, 8 or 4).",
     g_kv_bits},
    {"inferd_prefill_step_tokens",
     "Prefill chunk size: the configured one, or under auto the last chosen (0 before any).",
     g_prefill},
    {"inferd_memory_budget_bytes",
     "Memory budget: min(--mem-limit, cgroup limit, what the OS can give).", g_budget},
    {"inferd_memory_used_bytes", "Memory in use: RSS and mapped weights not paged in yet.", g_used},
    {"inferd_memory_headroom_bytes", "Budget minus memory in use; negative when over.", g_headroom},
    {"inferd_weights_bytes", "Weights of the layers the node holds.", g_weights},
    {"inferd_sessions", "Sessions holding KV cache.", g_sessions},
    {"inferd_active_requests", "Requests running (admitted, not queued).", g_active},
    {"inferd_queued_requests", "Requests waiting for a place (--max-seqs) on the head.", g_queued},
    {"inferd_busy_ratio", "Compute time of the node's layers over wall time, last second.", g_busy},
    {"inferd_batch_size",
     "Requests in the node's latest step (0 when none ran since its last heartbeat).", g_batch},
    {"inferd_ring_up",
     "On the head of a ring: 1 when the ring answers, 0 while it is broken or not yet seen whole.",
     g_ring_up},
};

/* Counters of one node, by offset of their uint64_t in node_m. */
static const struct {
    const char *name, *help;
    size_t offset;
} counters[] = {
    {"inferd_prompt_tokens_total", "Prompt tokens of the requests the node ended (head only).",
     offsetof(node_m, prompt_tokens)},
    {"inferd_generated_tokens_total",
     "Tokens generated by the requests the node ended (head only).",
     offsetof(node_m, generated_tokens)},
    {"inferd_stage_timeouts_total", "Pipeline stages found silent (stage_timeout events).",
     offsetof(node_m, stage_timeouts)},
    {"inferd_nonfinite_values_total", "NaN or Inf values in the node's layer outputs.",
     offsetof(node_m, nonfinite)},
    {"inferd_telemetry_messages_total", "Telemetry messages received from the node.",
     offsetof(node_m, messages)},
    {"inferd_telemetry_dropped_messages_total",
     "Telemetry messages lost on the way (gaps in seq) before they reached this exporter.",
     offsetof(node_m, dropped)},
};

static void put_gauges(sbuf *b, const metrics *m, double now)
{
    char buf[32];
    for (size_t g = 0; g < sizeof gauges / sizeof *gauges; g++) {
        family(b, gauges[g].name, "gauge", gauges[g].help);
        for (int i = 0; i < m->n; i++) {
            double v = gauges[g].get(m->nodes[i], now);
            if (!isnan(v))
                series(b, gauges[g].name, m->nodes[i], NULL, 0, fmt_f64(buf, v));
        }
    }
}

static void put_counters(sbuf *b, const metrics *m)
{
    char buf[32];
    for (size_t c = 0; c < sizeof counters / sizeof *counters; c++) {
        family(b, counters[c].name, "counter", counters[c].help);
        for (int i = 0; i < m->n; i++) {
            const uint64_t *v = (const uint64_t *)((const char *)m->nodes[i] + counters[c].offset);
            series(b, counters[c].name, m->nodes[i], NULL, 0, fmt_u64(buf, *v));
        }
    }
}

/* A labelled counter (by its offset in node_m); kb NULL: one label. */
static void put_labelled(sbuf *b, const metrics *m, const char *name, const char *help,
                         size_t offset, const char *ka, const char *kb)
{
    char buf[32];
    family(b, name, "counter", help);
    for (int i = 0; i < m->n; i++) {
        const labelled *l = (const labelled *)((const char *)m->nodes[i] + offset);
        for (int j = 0; j < l->n; j++) {
            label lab[2] = {{ka, l->v[j].a}, {kb, l->v[j].b}};
            series(b, name, m->nodes[i], lab, kb ? 2 : 1, fmt_u64(buf, l->v[j].count));
        }
    }
}

static void put_tokens(sbuf *b, const metrics *m)
{
    char buf[32];
    family(b, "inferd_tokens_processed_total", "counter",
           "Positions the node's layers processed, by phase.");
    for (int i = 0; i < m->n; i++) {
        for (int p = 0; p < N_PHASES; p++) {
            label phase = {"phase", phase_names[p]};
            series(b, "inferd_tokens_processed_total", m->nodes[i], &phase, 1,
                   fmt_u64(buf, m->nodes[i]->tokens[p]));
        }
    }
}

static void put_info(sbuf *b, const metrics *m)
{
    family(b, "inferd_model_info", "gauge",
           "The model a node serves: name, fingerprint, layers held, chat template; always 1.");
    for (int i = 0; i < m->n; i++) {
        const node_m *n = m->nodes[i];
        if (!n->has_status)
            continue;
        char layers[32];
        snprintf(layers, sizeof layers, "%d:%d", n->status.model.layer_first,
                 n->status.model.layer_last);
        label lab[5] = {{"model", n->status.model.name},
                        {"fingerprint", n->status.model.fingerprint},
                        {"layers", layers},
                        {"chat_template", n->status.model.chat_template},
                        {"version", n->status.version}};
        series(b, "inferd_model_info", n, lab, 5, "1");
    }
}

/* The stage a head's broken ring is broken at: one series while it is. */
static void put_broken_stage(sbuf *b, const metrics *m)
{
    family(b, "inferd_ring_broken_stage", "gauge",
           "On the head of a broken ring: the stage it could not reach; always 1, absent while "
           "the ring answers.");
    for (int i = 0; i < m->n; i++) {
        const node_m *n = m->nodes[i];
        if (!n->has_status || !n->status.ring_health.known ||
            n->status.ring_health.state != PROTO_RING_DOWN)
            continue;
        label stage = {"stage", n->status.ring_health.stage};
        series(b, "inferd_ring_broken_stage", n, &stage, 1, "1");
    }
}

/* The histograms of requests, one series per node (the head's). */
static const struct {
    const char *name, *help;
    size_t offset;
} request_hists[] = {
    {"inferd_time_to_first_token_seconds",
     "Request received to first token sent, per request the node ended (head only).",
     offsetof(node_m, ttft)},
    {"inferd_e2e_request_latency_seconds",
     "Request received to its last token, per request served (ended ok).", offsetof(node_m, e2e)},
    {"inferd_request_queue_time_seconds",
     "Request received to its prefill begun (queue, tokenizing, admission), per request served.",
     offsetof(node_m, queue)},
    {"inferd_time_per_output_token_seconds",
     "Mean time between a request's tokens after the first, per request served with two or more.",
     offsetof(node_m, tpot)},
    {"inferd_inter_token_latency_seconds",
     "Time to each generated token after the first: its decode step, per token.",
     offsetof(node_m, itl)},
    {"inferd_request_prompt_tokens", "Prompt length in tokens, per request served.",
     offsetof(node_m, prompt_len)},
    {"inferd_request_generation_tokens", "Tokens generated, per request served.",
     offsetof(node_m, gen_len)},
};

char *metrics_render(const metrics *m, double now, size_t *len)
{
    sbuf b = {0};
    put_info(&b, m);
    put_gauges(&b, m, now);
    put_broken_stage(&b, m);
    put_phase_hists(&b, m, "inferd_step_seconds", "Wall time of one step on the node, by phase.",
                    offsetof(node_m, step));
    put_phase_hists(&b, m, "inferd_step_model_seconds",
                    "Compute of the node's layers in one step (model_ms), by phase.",
                    offsetof(node_m, model));
    put_phase_hists(&b, m, "inferd_step_eval_seconds",
                    "The rest of a step: orchestration, frames, sampling (eval_ms), by phase.",
                    offsetof(node_m, eval));
    for (size_t k = 0; k < sizeof request_hists / sizeof *request_hists; k++) {
        family(&b, request_hists[k].name, "histogram", request_hists[k].help);
        for (int i = 0; i < m->n; i++)
            put_hist(&b, request_hists[k].name, m->nodes[i], NULL, 0,
                     (const hist *)((const char *)m->nodes[i] + request_hists[k].offset));
    }
    put_tokens(&b, m);
    put_counters(&b, m);
    put_labelled(&b, m, "inferd_requests_total",
                 "Requests by outcome (ok, error, refused) and error code.",
                 offsetof(node_m, requests), "outcome", "code");
    put_labelled(&b, m, "inferd_events_total", "Events the node published, by kind.",
                 offsetof(node_m, events), "kind", NULL);
    return sbuf_take(&b, len);
}
