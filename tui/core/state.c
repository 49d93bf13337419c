/* state.c: the console's in-memory model of the cluster.
 *
 * Ingest runs for every telemetry message (hundreds of thousands a second
 * at the bar), so it only copies into fixed rings and bumps counters.
 * Everything derived (percentiles, rates, highlights, liveness) is
 * computed when a view asks, a few times a second.
 */
#include "state.h"
#include "desired.h"
#include "store/store.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_METRICS (STATE_WAIT_MS + 1)

/* One step, as much of it as the percentiles and the detail view need. */
struct step_rec {
    double t;
    float ms[N_METRICS]; /* indexed by enum state_metric */
    int32_t tokens;
    uint8_t phase;
};

/* The step timings summed per second (step, model, eval). */
#define N_SUMS 3

/* What is counted per second and phase. */
enum sec_count { COUNT_STEPS, COUNT_TOKENS, COUNT_SEQS, N_COUNTS };

/* One second of one node. A slot is reused every STATE_SECONDS seconds;
 * `sec` says which second it holds now. */
struct sec_agg {
    int64_t sec;
    struct {
        uint32_t count[N_COUNTS];
        double sum[N_SUMS];
    } ph[2];
    /* busy as the node reported it: summed over the second's steps that
     * carried it, and the heartbeat's (NaN when none said). */
    double busy_sum;
    uint32_t busy_n;
    double hb_busy;
    int has_mem;
    uint64_t kv_bytes, rss;
    int64_t headroom;
    double act_max; /* largest finite act_max of the second, NaN before one */
};

struct node {
    char name[PROTO_NAME_MAX + 1];

    struct step_rec ring[STATE_STEP_RING];
    uint64_t n_steps; /* ever ingested: the newest is ring[(n_steps - 1) % RING] */
    struct sec_agg secs[STATE_SECONDS];

    /* liveness */
    enum state_live live; /* as of the last tick or message, for logging changes */
    int has_hb, starting, dead;
    double last_hb, start_t;
    /* The node's clock: when it sent the last message heard (ms), when
     * that was heard (our clock), and, once marked dead, the latest send
     * time that may still be the dead process's (see revives). */
    int64_t last_sent_ms, dead_until_ms;
    double last_heard;

    /* loss: seq is one counter per publisher, over all topics */
    int has_seq;
    uint64_t next_seq, received, lost, restarts;

    int has_status;
    proto_status status;
    int phase;
    double last_step_t;
    double last_nonfinite_t; /* -INFINITY before the first */
    int mem_known;
    uint64_t weights, kv, budget;
    int64_t headroom;
    struct state_config cfg;
    /* An HTTP engine's node: its last poll (eng.kind ENG_INFERD otherwise). */
    struct eng_view eng;
};

struct state {
    char name[PROTO_NAME_MAX + 1];
    int n;
    struct node *nodes;
    char req[PROTO_ID_MAX + 1];
    char req_source[PROTO_ID_MAX + 1]; /* who sent req: "control", "http" */
    int ctx_pos;
    double last_ttft_ms;
    struct state_event events[STATE_EVENTS];
    uint64_t n_events;
    alerts *alerts;
};

/* ---- lifetime ---------------------------------------------------------- */

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

state *state_new(const char *cluster_name, int n_nodes, const char *const *names)
{
    state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->nodes = calloc((size_t)(n_nodes > 0 ? n_nodes : 1), sizeof *st->nodes);
    st->alerts = alerts_new(n_nodes);
    if (!st->nodes || !st->alerts) {
        free(st->nodes);
        alerts_free(st->alerts);
        free(st);
        return NULL;
    }
    copy_text(st->name, sizeof st->name, cluster_name);
    st->n = n_nodes;
    st->last_ttft_ms = NAN;
    for (int i = 0; i < n_nodes; i++) {
        struct node *n = &st->nodes[i];
        copy_text(n->name, sizeof n->name, names[i]);
        for (int s = 0; s < STATE_SECONDS; s++)
            n->secs[s].sec = -1;
        n->live = STATE_DOWN;
        n->phase = -1;
        n->last_step_t = -INFINITY;
        n->last_nonfinite_t = -INFINITY;
        n->cfg.prefill_step = -1;
        eng_view_init(&n->eng, ENG_INFERD);
    }
    return st;
}

state *state_copy(const state *st)
{
    state *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *st;
    c->nodes = malloc((size_t)(st->n > 0 ? st->n : 1) * sizeof *c->nodes);
    c->alerts = alerts_copy(st->alerts);
    if (!c->nodes || !c->alerts) {
        free(c->nodes);
        alerts_free(c->alerts);
        free(c);
        return NULL;
    }
    memcpy(c->nodes, st->nodes, (size_t)st->n * sizeof *c->nodes);
    return c;
}

void state_free(state *st)
{
    if (!st)
        return;
    alerts_free(st->alerts);
    free(st->nodes);
    free(st);
}

void state_node_set_engine(state *st, int node, eng_kind k)
{
    eng_view_init(&st->nodes[node].eng, k);
}

const struct eng_view *state_node_engine(const state *st, int node)
{
    return st->nodes[node].eng.kind == ENG_INFERD ? NULL : &st->nodes[node].eng;
}

int state_node_count(const state *st)
{
    return st->n;
}

const char *state_node_name(const state *st, int node)
{
    return st->nodes[node].name;
}

int state_node_index(const state *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->nodes[i].name, name) == 0)
            return i;
    return -1;
}

/* ---- events -------------------------------------------------------------- */

static struct state_event *event_slot(state *st, int node, const char *kind, double now)
{
    struct state_event *e = &st->events[st->n_events++ % STATE_EVENTS];
    memset(e, 0, sizeof *e);
    e->t = now;
    e->node = node;
    copy_text(e->kind, sizeof e->kind, kind);
    return e;
}

void state_event_add(state *st, int node, const char *kind, double now, const char *fmt, ...)
{
    struct state_event *e = event_slot(st, node, kind, now);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

/* ---- liveness ---------------------------------------------------------- */

static int is_http(const struct node *n)
{
    return n->eng.kind != ENG_INFERD;
}

/* An HTTP engine's node is what its last poll found: there is no
 * heartbeat to go stale, and a poll that got no answer is down at once. */
static enum state_live http_live(const struct node *n)
{
    switch (n->eng.health) {
    case ENG_UP:
        return STATE_UP;
    case ENG_LOADING:
        return STATE_STARTING;
    default:
        return n->starting ? STATE_STARTING : STATE_DOWN;
    }
}

static enum state_live live_at(const struct node *n, double now)
{
    if (n->dead)
        return STATE_DOWN;
    if (n->starting && now - n->start_t >= STATE_START_TIMEOUT_S)
        return STATE_DOWN;
    if (is_http(n))
        return http_live(n);
    if (n->starting)
        return STATE_STARTING;
    if (!n->has_hb)
        return STATE_DOWN;
    double age = now - n->last_hb;
    if (age < STATE_STALE_S)
        return STATE_UP;
    return age < STATE_DOWN_S ? STATE_STALE : STATE_DOWN;
}

static const char *live_kind(enum state_live l)
{
    static const char *kinds[] = {"node_down", "node_starting", "node_up", "node_stale"};
    return kinds[l];
}

/* Logs a change of liveness, saying why. */
static void set_live(state *st, int i, enum state_live l, double now, const char *why)
{
    struct node *n = &st->nodes[i];
    if (n->live == l)
        return;
    n->live = l;
    state_event_add(st, i, live_kind(l), now, "%s", why);
}

static void tick_alerts(state *st, double now);

void state_tick(state *st, double now)
{
    for (int i = 0; i < st->n; i++) {
        struct node *n = &st->nodes[i];
        enum state_live l = live_at(n, now);
        if (l == n->live)
            continue;
        char why[96];
        if (n->starting)
            snprintf(why, sizeof why, "%s %.0f s after start",
                     is_http(n) ? "not up" : "no heartbeat", now - n->start_t);
        else
            snprintf(why, sizeof why, "no heartbeat for %.1f s", now - n->last_hb);
        set_live(st, i, l, now, why);
    }
    tick_alerts(st, now);
}

void state_mark_starting(state *st, int node, double now)
{
    struct node *n = &st->nodes[node];
    n->starting = 1;
    n->dead = 0;
    n->start_t = now;
    set_live(st, node, STATE_STARTING, now, "launched by the console");
}

/* What the process sent just before it died can still be queued when the
 * console learns of the death (the demo reaps its child at once), and must
 * not bring it back. By the node's clock it died at most at the last heard
 * send time plus our time since, plus how late that message reached us: a
 * stale window's worth of slack covers a console that fell behind. */
void state_mark_down(state *st, int node, const char *why, double now)
{
    struct node *n = &st->nodes[node];
    n->dead = 1;
    n->dead_until_ms =
        n->has_seq ? n->last_sent_ms + (int64_t)((now - n->last_heard + STATE_STALE_S) * 1000)
                   : INT64_MIN;
    n->starting = 0;
    set_live(st, node, STATE_DOWN, now, why);
}

/* A poll that finds the engine up ends a start or a known death (the
 * process was started again by other means). */
void state_ingest_engine(state *st, int node, const struct eng_view *v, double now)
{
    struct node *n = &st->nodes[node];
    n->eng = *v;
    if (v->health == ENG_UP)
        n->starting = n->dead = 0;
    enum state_live l = live_at(n, now);
    if (l == n->live)
        return;
    const char *why = v->problem[0]         ? v->problem
                      : l == STATE_UP       ? "answering"
                      : l == STATE_STARTING ? "loading"
                                            : "not answering";
    set_live(st, node, l, now, why);
}

enum state_live state_node_live(const state *st, int node, double now)
{
    return live_at(&st->nodes[node], now);
}

/* ---- ingest ---------------------------------------------------------- */

/* A seq below the expected one means the publisher started over: a
 * restarted node, not loss. What the new process sent before we heard it
 * is not counted (a subscriber always misses a publisher's first messages).
 * Returns 1 for such a restart. */
static int count_seq(state *st, int i, const proto_head *h, double now)
{
    struct node *n = &st->nodes[i];
    int restarted = n->has_seq && h->seq < n->next_seq;
    n->received++;
    n->last_sent_ms = h->t_ms;
    n->last_heard = now;
    if (restarted) {
        n->restarts++;
        state_event_add(st, i, "node_restart", now,
                        "sequence went back from %llu to %llu: the node restarted",
                        (unsigned long long)(n->next_seq - 1), (unsigned long long)h->seq);
    } else if (n->has_seq) {
        n->lost += h->seq - n->next_seq;
    }
    n->has_seq = 1;
    n->next_seq = h->seq + 1;
    return restarted;
}

/* Whether a heartbeat brings the node back: always unless it is known
 * dead, and then only from a new process, which starts its sequence over
 * or, if we missed that, sends after the dead one could have. */
static int revives(const struct node *n, const proto_head *h, int restarted)
{
    return !n->dead || restarted || h->t_ms > n->dead_until_ms;
}

static struct sec_agg *sec_at(struct node *n, double now)
{
    int64_t sec = (int64_t)floor(now);
    struct sec_agg *a = &n->secs[sec % STATE_SECONDS];
    if (a->sec != sec) {
        memset(a, 0, sizeof *a);
        a->sec = sec;
        a->act_max = NAN;
        a->hb_busy = NAN;
    }
    return a;
}

static const struct sec_agg *sec_get(const struct node *n, int64_t sec)
{
    if (sec < 0)
        return NULL;
    const struct sec_agg *a = &n->secs[sec % STATE_SECONDS];
    return a->sec == sec ? a : NULL;
}

/* A node's busy figure, or -1 when it said none (an older node) or said
 * something that is no fraction; capped at 1. */
static double busy_said(double busy)
{
    return busy >= 0 ? fmin(busy, 1.0) : -1.0;
}

static void note_memory(struct node *n, struct sec_agg *a, uint64_t kv, uint64_t rss,
                        uint64_t budget, int64_t headroom)
{
    n->mem_known = 1;
    n->kv = kv;
    n->budget = budget;
    n->headroom = headroom;
    a->has_mem = 1;
    a->kv_bytes = kv;
    a->rss = rss;
    a->headroom = headroom;
}

/* Does telemetry show what was asked? A step reports the resolved chunk
 * size, so it cannot confirm a request for "auto"; the heartbeat can. */
static int config_shows(const proto_set_args *w, int kv_bits, int prefill, int prefill_exact)
{
    if (w->has_kv_bits && kv_bits != w->kv_bits)
        return 0;
    if (w->has_prefill_step) {
        if (!prefill_exact && w->prefill_step == PROTO_PREFILL_AUTO)
            return 0;
        if (prefill != w->prefill_step)
            return 0;
    }
    return 1;
}

static void confirm_config(struct node *n, int kv_bits, int prefill, int prefill_exact, double now)
{
    struct state_config *c = &n->cfg;
    if (c->stage != STATE_CFG_REQUESTED && c->stage != STATE_CFG_ACKED)
        return;
    if (!config_shows(&c->want, kv_bits, prefill, prefill_exact))
        return;
    c->stage = STATE_CFG_CONFIRMED;
    c->t_confirmed = now;
}

void state_ingest_step(state *st, int node, const proto_head *h, const proto_step *s, double now)
{
    if (node < 0 || node >= st->n)
        return;
    struct node *n = &st->nodes[node];
    int ph = s->phase == PROTO_PHASE_PREFILL ? STATE_PREFILL : STATE_DECODE;
    count_seq(st, node, h, now);

    struct step_rec *r = &n->ring[n->n_steps++ % STATE_STEP_RING];
    r->t = now;
    r->ms[STATE_STEP_MS] = (float)s->step_ms;
    r->ms[STATE_MODEL_MS] = (float)s->model_ms;
    r->ms[STATE_EVAL_MS] = (float)s->eval_ms;
    r->ms[STATE_WAIT_MS] = (float)s->wait_ms;
    r->tokens = s->tokens;
    r->phase = (uint8_t)ph;

    struct sec_agg *a = sec_at(n, now);
    a->ph[ph].count[COUNT_STEPS]++;
    a->ph[ph].count[COUNT_TOKENS] += (uint32_t)s->tokens;
    /* An older node does not say (the decoder gives 1); a hand-made 0 is 1 too. */
    a->ph[ph].count[COUNT_SEQS] += (uint32_t)(s->seqs > 0 ? s->seqs : 1);
    double busy = busy_said(s->busy);
    if (busy >= 0) {
        a->busy_sum += busy;
        a->busy_n++;
    }
    a->ph[ph].sum[STATE_STEP_MS] += s->step_ms;
    a->ph[ph].sum[STATE_MODEL_MS] += s->model_ms;
    a->ph[ph].sum[STATE_EVAL_MS] += s->eval_ms;
    if (!isfinite(s->act_max) || s->nonfinite > 0)
        n->last_nonfinite_t = now;
    else if (!(a->act_max >= s->act_max))
        a->act_max = s->act_max;
    note_memory(n, a, s->kv_bytes, s->rss, s->budget, s->headroom);

    n->phase = ph;
    n->last_step_t = now;
    n->cfg.kv_bits = s->kv_bits;
    n->cfg.prefill_effective = s->prefill_step;
    confirm_config(n, s->kv_bits, s->prefill_step, 0, now);
    st->ctx_pos = s->pos;
}

void state_ingest_heartbeat(state *st, int node, const proto_head *h, const proto_status *s,
                            double now)
{
    if (node < 0 || node >= st->n)
        return;
    struct node *n = &st->nodes[node];
    char why[64];
    if (revives(n, h, count_seq(st, node, h, now))) {
        if (n->has_hb)
            snprintf(why, sizeof why, "heartbeat after %.1f s", now - n->last_hb);
        else
            snprintf(why, sizeof why, "first heartbeat");
        n->has_hb = 1;
        n->last_hb = now;
        n->starting = 0;
        n->dead = 0;
        set_live(st, node, STATE_UP, now, why);
    }
    n->has_status = 1;
    n->status = *s;
    struct sec_agg *a = sec_at(n, now);
    double busy = busy_said(s->busy);
    if (busy >= 0)
        a->hb_busy = busy;
    note_memory(n, a, s->memory.kv_bytes, s->memory.rss, s->memory.budget, s->memory.headroom);
    n->weights = s->memory.weights_bytes;
    n->cfg.kv_bits = s->config.kv_bits;
    n->cfg.prefill_step = s->config.prefill_step;
    confirm_config(n, s->config.kv_bits, s->config.prefill_step, 1, now);
}

void state_ingest_req(state *st, int node, const proto_head *h, const proto_req_msg *m, double now)
{
    if (node < 0 || node >= st->n)
        return;
    count_seq(st, node, h, now);
    if (!m->end) {
        copy_text(st->req, sizeof st->req, m->req);
        copy_text(st->req_source, sizeof st->req_source, m->source);
        return;
    }
    if (strcmp(st->req, m->req) == 0)
        st->req[0] = st->req_source[0] = '\0';
    if (m->stats.ttft_ms > 0)
        st->last_ttft_ms = m->stats.ttft_ms;
    if (!m->ok) {
        struct state_event *e = event_slot(st, node, "req_failed", now);
        copy_text(e->req, sizeof e->req, m->req);
        copy_text(e->code, sizeof e->code, m->code);
        copy_text(e->message, sizeof e->message, m->message);
    }
}

void state_ingest_event(state *st, int node, const proto_head *h, const proto_event *ev, double now)
{
    if (node < 0 || node >= st->n)
        return;
    count_seq(st, node, h, now);
    const char *kind = ev->kind_name[0] ? ev->kind_name : proto_event_name(ev->kind);
    struct state_event *e = event_slot(st, node, kind, now);
    copy_text(e->req, sizeof e->req, ev->req);
    copy_text(e->code, sizeof e->code, ev->code);
    copy_text(e->message, sizeof e->message, ev->message);
    if (ev->kind == PROTO_EV_NUMERIC)
        st->nodes[node].last_nonfinite_t = now;
}

void state_ingest(state *st, int node, const proto_tel *t, double now)
{
    switch (t->topic) {
    case PROTO_TOPIC_STEP:
        state_ingest_step(st, node, &t->head, &t->step, now);
        break;
    case PROTO_TOPIC_NODE:
        state_ingest_heartbeat(st, node, &t->head, &t->status, now);
        break;
    case PROTO_TOPIC_REQ:
        state_ingest_req(st, node, &t->head, &t->req, now);
        break;
    case PROTO_TOPIC_EVENT:
        state_ingest_event(st, node, &t->head, &t->event, now);
        break;
    case PROTO_TOPIC_UNKNOWN:
        /* A newer node's topic: it still used a seq number. */
        if (node >= 0 && node < st->n)
            count_seq(st, node, &t->head, now);
        break;
    }
}

/* ---- config ---------------------------------------------------------- */

void state_config_request(state *st, int node, const proto_set_args *want, double now)
{
    struct state_config *c = &st->nodes[node].cfg;
    char what[64];
    c->want = *want;
    c->stage = STATE_CFG_REQUESTED;
    c->t_requested = now;
    c->t_acked = c->t_confirmed = 0;
    c->error[0] = '\0';
    desired_describe(want, what, sizeof what);
    state_event_add(st, node, "config_request", now, "%s requested", what);
}

/* A step can confirm the change before the reply arrives: the reply then
 * only records its time. */
void state_config_reply(state *st, int node, int ok, const char *error, double now)
{
    struct state_config *c = &st->nodes[node].cfg;
    if (c->stage == STATE_CFG_NONE)
        return;
    c->t_acked = now;
    if (!ok) {
        c->stage = STATE_CFG_FAILED;
        copy_text(c->error, sizeof c->error, error ? error : "refused");
        state_event_add(st, node, "config_failed", now, "%s", c->error);
    } else if (c->stage == STATE_CFG_REQUESTED) {
        c->stage = STATE_CFG_ACKED;
    }
}

const struct state_config *state_node_config(const state *st, int node)
{
    return &st->nodes[node].cfg;
}

int state_ring_broken(const state *st, int node)
{
    const proto_status *s = state_node_status(st, node);
    return s && s->ring_health.known && s->ring_health.state == PROTO_RING_DOWN;
}

uint64_t state_node_restarts(const state *st, int node)
{
    return st->nodes[node].restarts;
}

int state_ring_head(const state *st, int node)
{
    const proto_status *s = state_node_status(st, node);
    return s && s->model.layer_first == 0 && s->model.layer_last < s->model.n_layers;
}

int state_ring_stage(const state *st, int node)
{
    const proto_status *s = state_node_status(st, node);
    return s && s->model.layer_first > 0;
}

const proto_status *state_node_status(const state *st, int node)
{
    const struct node *n = &st->nodes[node];
    return n->has_status ? &n->status : NULL;
}

/* ---- percentiles and rates ------------------------------------------ */

int state_percentiles(const state *st, int node, enum state_metric m, int phase, double window,
                      double now, const double *q, int nq, double *out)
{
    const struct node *n = &st->nodes[node];
    double vals[STATE_STEP_RING];
    int cnt = 0;
    uint64_t have = n->n_steps < STATE_STEP_RING ? n->n_steps : STATE_STEP_RING;
    for (uint64_t k = 0; k < have; k++) {
        const struct step_rec *r = &n->ring[(n->n_steps - 1 - k) % STATE_STEP_RING];
        if (r->t < now - window)
            break; /* the ring is in arrival order */
        if (phase != STATE_ANY && r->phase != phase)
            continue;
        if (isfinite(r->ms[m]))
            vals[cnt++] = r->ms[m];
    }
    for (int i = 0; i < nq; i++)
        out[i] =
            cnt ? store_percentile(vals, (size_t)cnt, 100.0 * fmin(fmax(q[i], 0.0), 1.0)) : NAN;
    return cnt;
}

static double p50(const state *st, int node, enum state_metric m, double now)
{
    static const double half = 0.5;
    double v;
    state_percentiles(st, node, m, STATE_ANY, STATE_RECENT_S, now, &half, 1, &v);
    return v;
}

static int64_t second_of(double now)
{
    return (int64_t)floor(now);
}

/* A count of the phase(s) in the complete seconds [now-seconds, now). */
static uint64_t count_in(const struct node *n, int phase, int seconds, double now, enum sec_count c)
{
    uint64_t sum = 0;
    int64_t cur = second_of(now);
    for (int64_t s = cur - seconds; s < cur; s++) {
        const struct sec_agg *a = sec_get(n, s);
        if (!a)
            continue;
        for (int p = 0; p < 2; p++)
            if (phase == STATE_ANY || phase == p)
                sum += a->ph[p].count[c];
    }
    return sum;
}

double state_steps_per_s(const state *st, int node, int phase, int seconds, double now)
{
    return seconds > 0
               ? (double)count_in(&st->nodes[node], phase, seconds, now, COUNT_STEPS) / seconds
               : 0;
}

/* ---- series ------------------------------------------------------------ */

/* See STATE_SERIES_BUSY; NaN for a second nothing was heard in. */
static double busy_of(const struct sec_agg *a)
{
    if (!a)
        return NAN;
    if (a->busy_n)
        return a->busy_sum / a->busy_n;
    if (!isnan(a->hb_busy))
        return a->hb_busy;
    return fmin((a->ph[0].sum[STATE_MODEL_MS] + a->ph[1].sum[STATE_MODEL_MS]) / 1000.0, 1.0);
}

static double series_value(const struct sec_agg *a, enum state_series kind, int phase)
{
    uint32_t count[N_COUNTS] = {0};
    double sum[N_SUMS] = {0};
    for (int p = 0; a && p < 2; p++) {
        if (phase != STATE_ANY && phase != p)
            continue;
        for (int c = 0; c < N_COUNTS; c++)
            count[c] += a->ph[p].count[c];
        for (int k = 0; k < N_SUMS; k++)
            sum[k] += a->ph[p].sum[k];
    }
    uint32_t steps = count[COUNT_STEPS];
    switch (kind) {
    case STATE_SERIES_STEP_MS:
        return steps ? sum[STATE_STEP_MS] / steps : NAN;
    case STATE_SERIES_MODEL_MS:
        return steps ? sum[STATE_MODEL_MS] / steps : NAN;
    case STATE_SERIES_EVAL_MS:
        return steps ? sum[STATE_EVAL_MS] / steps : NAN;
    case STATE_SERIES_STEPS:
        return steps;
    case STATE_SERIES_TOKENS:
        return count[COUNT_TOKENS];
    case STATE_SERIES_SEQS:
        return steps ? (double)count[COUNT_SEQS] / steps : NAN;
    case STATE_SERIES_BUSY:
        return busy_of(a);
    case STATE_SERIES_KV_BYTES:
        return a && a->has_mem ? (double)a->kv_bytes : NAN;
    case STATE_SERIES_RSS:
        return a && a->has_mem ? (double)a->rss : NAN;
    case STATE_SERIES_HEADROOM:
        return a && a->has_mem ? (double)a->headroom : NAN;
    case STATE_SERIES_ACT_MAX:
        return a ? a->act_max : NAN;
    }
    return NAN;
}

void state_series(const state *st, int node, enum state_series kind, int phase, int n, double now,
                  double *out)
{
    const struct node *nd = &st->nodes[node];
    if (n > STATE_SECONDS)
        n = STATE_SECONDS;
    int64_t first = second_of(now) - n;
    for (int k = 0; k < n; k++)
        out[k] = series_value(sec_get(nd, first + k), kind, phase);
}

/* ---- highlights ------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int act_spike(const struct node *n, double now)
{
    int64_t cur = second_of(now);
    double recent = NAN, base[STATE_ACT_BASE_S];
    int nb = 0;
    for (int64_t s = cur - STATE_ACT_NOW_S + 1; s <= cur; s++) {
        const struct sec_agg *a = sec_get(n, s);
        if (a && !(recent >= a->act_max))
            recent = a->act_max;
    }
    for (int64_t s = cur - STATE_ACT_NOW_S - STATE_ACT_BASE_S + 1; s <= cur - STATE_ACT_NOW_S;
         s++) {
        const struct sec_agg *a = sec_get(n, s);
        if (a && a->act_max > 0)
            base[nb++] = a->act_max;
    }
    if (nb < STATE_ACT_MIN_BASE || !(recent > 0))
        return 0;
    qsort(base, (size_t)nb, sizeof base[0], cmp_double);
    double median = nb % 2 ? base[nb / 2] : (base[nb / 2 - 1] + base[nb / 2]) / 2;
    return recent > STATE_ACT_SPIKE * median;
}

static int fingerprint_count(const state *st, const char *fp)
{
    int c = 0;
    for (int i = 0; i < st->n; i++)
        if (st->nodes[i].has_status && strcmp(st->nodes[i].status.model.fingerprint, fp) == 0)
            c++;
    return c;
}

/* A stage is flagged when another stage holds a different model and this
 * one is not in the clear majority: with two stages that disagree, both. */
static int fingerprint_differs(const state *st, int node)
{
    const struct node *me = &st->nodes[node];
    if (!me->has_status || !me->status.model.fingerprint[0])
        return 0;
    int mine = fingerprint_count(st, me->status.model.fingerprint);
    for (int i = 0; i < st->n; i++) {
        const struct node *o = &st->nodes[i];
        if (!o->has_status || !o->status.model.fingerprint[0])
            continue;
        if (strcmp(o->status.model.fingerprint, me->status.model.fingerprint) == 0)
            continue;
        if (fingerprint_count(st, o->status.model.fingerprint) >= mine)
            return 1;
    }
    return 0;
}

static unsigned flags_of(const state *st, int node, double now)
{
    const struct node *n = &st->nodes[node];
    unsigned f = 0;
    double low = alerts_settings(st->alerts)->headroom_pct / 100;
    if (n->mem_known && n->budget > 0 && n->headroom < low * (double)n->budget)
        f |= STATE_FLAG_LOW_HEADROOM;
    if (now - n->last_nonfinite_t < STATE_ACT_BASE_S)
        f |= STATE_FLAG_NONFINITE;
    if (act_spike(n, now))
        f |= STATE_FLAG_ACT_SPIKE;
    if (fingerprint_differs(st, node))
        f |= STATE_FLAG_FINGERPRINT;
    return f;
}

unsigned state_node_flags(const state *st, int node, double now)
{
    return flags_of(st, node, now);
}

/* ---- views ------------------------------------------------------------ */

static uint64_t clamp0(int64_t v)
{
    return v > 0 ? (uint64_t)v : 0;
}

static struct state_memory memory_of(const struct node *n)
{
    struct state_memory m = {0};
    if (!n->mem_known)
        return m;
    int64_t used = (int64_t)n->budget - n->headroom;
    m.known = 1;
    m.budget = n->budget;
    m.weights = n->weights;
    m.kv = n->kv;
    m.other = clamp0(used - (int64_t)n->weights - (int64_t)n->kv);
    m.headroom = clamp0(n->headroom);
    m.headroom_signed = n->headroom;
    return m;
}

/* The mean of the busy series over the last STATE_BUSY_S complete
 * seconds; NaN when none of them was heard. */
static double recent_busy(const struct node *n, double now)
{
    double sum = 0;
    int heard = 0;
    int64_t cur = second_of(now);
    for (int64_t s = cur - STATE_BUSY_S; s < cur; s++) {
        double b = busy_of(sec_get(n, s));
        if (isnan(b))
            continue;
        sum += b;
        heard++;
    }
    return heard ? sum / heard : NAN;
}

void state_node_view(const state *st, int node, double now, struct state_node_view *out)
{
    const struct node *n = &st->nodes[node];
    memset(out, 0, sizeof *out);
    out->name = n->name;
    out->live = live_at(n, now);
    out->phase = now - n->last_step_t <= STATE_IDLE_S ? n->phase : -1;
    out->layer_first = n->has_status ? n->status.model.layer_first : -1;
    out->layer_last = n->has_status ? n->status.model.layer_last : -1;
    out->steps_per_s = state_steps_per_s(st, node, STATE_ANY, STATE_RECENT_S, now);
    /* Idle means no step for STATE_IDLE_S: the busy of the seconds
     * before that would still show for a while. */
    out->busy = recent_busy(n, now);
    if (out->phase < 0 && !isnan(out->busy))
        out->busy = 0;
    uint64_t steps = count_in(n, STATE_ANY, STATE_RECENT_S, now, COUNT_STEPS);
    out->batch =
        steps ? (double)count_in(n, STATE_ANY, STATE_RECENT_S, now, COUNT_SEQS) / steps : NAN;
    out->model_p50 = p50(st, node, STATE_MODEL_MS, now);
    out->eval_p50 = p50(st, node, STATE_EVAL_MS, now);
    out->mem = memory_of(n);
    out->flags = flags_of(st, node, now);
    out->received = n->received;
    out->lost = n->lost;
    out->restarts = n->restarts;
    out->fingerprint = n->has_status ? n->status.model.fingerprint : "";
}

static eng_health health_of(enum state_live l)
{
    return l == STATE_UP ? ENG_UP : l == STATE_STARTING ? ENG_LOADING : ENG_DOWN;
}

void state_node_summary(const state *st, int node, double now, struct eng_view *out)
{
    const struct node *n = &st->nodes[node];
    if (is_http(n)) {
        *out = n->eng;
        return;
    }
    eng_view_init(out, ENG_INFERD);
    out->health = health_of(live_at(n, now));
    out->prompt_tps =
        (double)count_in(n, STATE_PREFILL, STATE_RECENT_S, now, COUNT_TOKENS) / STATE_RECENT_S;
    out->decode_tps =
        (double)count_in(n, STATE_DECODE, STATE_RECENT_S, now, COUNT_TOKENS) / STATE_RECENT_S;
    uint64_t steps = count_in(n, STATE_ANY, STATE_RECENT_S, now, COUNT_STEPS);
    if (steps)
        out->batch = (double)count_in(n, STATE_ANY, STATE_RECENT_S, now, COUNT_SEQS) / steps;
    if (!n->has_status)
        return;
    copy_text(out->model, sizeof out->model, n->status.model.name);
    copy_text(out->version, sizeof out->version, n->status.version);
    out->requests_running = n->status.active;
    out->requests_waiting = n->status.queued;
    out->mem_bytes = (double)n->status.memory.used;
}

/* Without a heartbeat, the cluster file's order of the inferd nodes (the
 * ring) says who is head and tail. */
static int first_inferd(const state *st, int from, int step)
{
    int i = from;
    while (i >= 0 && i < st->n && is_http(&st->nodes[i]))
        i += step;
    return i;
}

static int is_head(const state *st, int i)
{
    const struct node *n = &st->nodes[i];
    return n->has_status ? n->status.stage == 0 : i == first_inferd(st, 0, 1);
}

static int is_tail(const state *st, int i)
{
    const struct node *n = &st->nodes[i];
    return n->has_status ? n->status.stage >= n->status.n_stages - 1
                         : i == first_inferd(st, st->n - 1, -1);
}

/* What an HTTP node adds to the cluster's rates: its own, when it told. */
static double told(double v)
{
    return isfinite(v) ? v : 0;
}

void state_cluster_view(const state *st, double now, struct state_cluster_view *out)
{
    uint64_t prefill = 0, decode = 0;
    double http_prefill = 0, http_decode = 0;
    const char *http_model = "";
    memset(out, 0, sizeof *out);
    out->name = st->name;
    out->nodes_total = st->n;
    out->model = out->weight_types = "";
    for (int i = 0; i < st->n; i++) {
        const struct node *n = &st->nodes[i];
        if (n->has_status && !out->model[0]) {
            out->model = n->status.model.name;
            out->weight_types = n->status.model.weight_types;
        }
        if (live_at(n, now) == STATE_UP)
            out->nodes_up++;
        if (is_http(n)) {
            /* A node that stopped answering keeps its last rates: not counted. */
            if (n->eng.health == ENG_UP) {
                http_prefill += told(n->eng.prompt_tps);
                http_decode += told(n->eng.decode_tps);
            }
            if (!http_model[0])
                http_model = n->eng.model;
            continue;
        }
        if (is_head(st, i))
            prefill += count_in(n, STATE_PREFILL, STATE_RECENT_S, now, COUNT_TOKENS);
        if (is_tail(st, i))
            decode += count_in(n, STATE_DECODE, STATE_RECENT_S, now, COUNT_TOKENS);
        out->lost += n->lost;
    }
    out->req = st->req;
    out->req_source = st->req_source;
    out->ctx_pos = st->ctx_pos;
    out->prefill_tps = (double)prefill / STATE_RECENT_S + http_prefill;
    out->decode_tps = (double)decode / STATE_RECENT_S + http_decode;
    if (!out->model[0])
        out->model = http_model;
    out->last_ttft_ms = st->last_ttft_ms;
}

/* ---- events queries -------------------------------------------------- */

static int event_matches(const state *st, const struct state_event *e,
                         const struct state_event_filter *f)
{
    if (!f)
        return 1;
    if (f->node >= 0 && e->node != f->node)
        return 0;
    if (f->kind && strncmp(e->kind, f->kind, strlen(f->kind)) != 0)
        return 0;
    if (!f->text || !*f->text)
        return 1;
    const char *node = e->node >= 0 && e->node < st->n ? st->nodes[e->node].name : "";
    return strcasestr(e->message, f->text) || strcasestr(e->kind, f->text) ||
           strcasestr(e->code, f->text) || strcasestr(e->req, f->text) || strcasestr(node, f->text);
}

int state_events(const state *st, const struct state_event_filter *f, int skip, int max,
                 const struct state_event **out)
{
    uint64_t have = st->n_events < STATE_EVENTS ? st->n_events : STATE_EVENTS;
    int written = 0;
    for (uint64_t k = 0; k < have && written < max; k++) {
        const struct state_event *e = &st->events[(st->n_events - 1 - k) % STATE_EVENTS];
        if (!event_matches(st, e, f))
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        out[written++] = e;
    }
    return written;
}

int state_event_count(const state *st, const struct state_event_filter *f)
{
    uint64_t have = st->n_events < STATE_EVENTS ? st->n_events : STATE_EVENTS;
    int cnt = 0;
    for (uint64_t k = 0; k < have; k++)
        cnt += event_matches(st, &st->events[(st->n_events - 1 - k) % STATE_EVENTS], f);
    return cnt;
}

/* ---- alerts (alerts.h) --------------------------------------------------- */

/* Moved on with liveness, at each tick; every raise and clear is an event. */
static void tick_alerts(state *st, double now)
{
    struct alert_change ch[ALERT_COUNT];
    for (int i = 0; i < st->n; i++) {
        const struct node *n = &st->nodes[i];
        struct alert_sample smp = {.down = live_at(n, now) == STATE_DOWN,
                                   .e = state_node_engine(st, i),
                                   .model_ms = p50(st, i, STATE_MODEL_MS, now),
                                   .eval_ms = p50(st, i, STATE_EVAL_MS, now)};
        if (state_ring_broken(st, i)) {
            smp.ring_stage = n->status.ring_health.stage;
            smp.ring_why = n->status.ring_health.message;
        }
        int c = alerts_note(st->alerts, i, &smp, now, ch);
        for (int k = 0; k < c; k++)
            state_event_add(st, i, ch[k].raised ? "alert" : "alert_clear", now, "%s",
                            ch[k].message);
    }
}

const alerts *state_alerts(const state *st)
{
    return st->alerts;
}

void state_alert_settings(state *st, const struct alert_settings *s)
{
    alerts_configure(st->alerts, s);
}
