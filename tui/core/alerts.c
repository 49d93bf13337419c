/* alerts.c: raising and clearing the console's alerts (alerts.h). */
#include "alerts.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One node's alerts, and the little history the queue alert needs. */
struct node_alerts {
    unsigned active;
    double first_t; /* when it was first looked at; NAN before */
    int heard;      /* it has been up once */
    /* The waiting requests of the last poll, and the run they belong to:
     * since when the queue has not fallen, and its level then. */
    double waiting, since, base;
    struct alert_hold ttft, eval;
};

struct alerts {
    struct alert_settings set;
    int n;
    struct node_alerts *nodes;
};

/* Each setting and its row of the settings table. */
static const struct {
    opt_id id;
    size_t off;
} rows[] = {
    {OPT_ALERT_QUEUE_S, offsetof(struct alert_settings, queue_s)},
    {OPT_ALERT_TTFT_MS, offsetof(struct alert_settings, ttft_ms)},
    {OPT_ALERT_EVAL_RATIO, offsetof(struct alert_settings, eval_ratio)},
    {OPT_ALERT_EVAL_FLOOR_MS, offsetof(struct alert_settings, eval_floor_ms)},
    {OPT_ALERT_HOLD, offsetof(struct alert_settings, hold)},
    {OPT_ALERT_BUSY_PCT, offsetof(struct alert_settings, busy_pct)},
    {OPT_ALERT_HEADROOM_PCT, offsetof(struct alert_settings, headroom_pct)},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static double *field(struct alert_settings *s, size_t row)
{
    return (double *)((char *)s + rows[row].off);
}

static double value_of(opt_id id, const opt_value *v)
{
    return opt_defs[id].type == OPT_T_INT ? (double)v->i : v->d;
}

void alerts_defaults(struct alert_settings *s)
{
    for (size_t r = 0; r < N_ROWS; r++) {
        opt_id id = rows[r].id;
        *field(s, r) =
            opt_defs[id].type == OPT_T_INT ? (double)opt_default_int(id) : opt_default_num(id);
    }
}

void alerts_read(const opt_vals *v, struct alert_settings *s)
{
    for (size_t r = 0; r < N_ROWS; r++)
        if (opt_given(v, rows[r].id))
            *field(s, r) = value_of(rows[r].id, &v->v[rows[r].id]);
}

int alerts_set(struct alert_settings *s, opt_id id, const opt_value *val)
{
    for (size_t r = 0; r < N_ROWS; r++)
        if (rows[r].id == id) {
            *field(s, r) = value_of(id, val);
            return 0;
        }
    return -1;
}

int alerts_hold_step(struct alert_hold *h, int holds, int hold)
{
    if (!holds == !h->on)
        h->run = 0;
    else if (++h->run >= hold) {
        h->on = holds != 0;
        h->run = 0;
    }
    return h->on;
}

alerts *alerts_new(int n_nodes)
{
    alerts *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->nodes = calloc((size_t)(n_nodes > 0 ? n_nodes : 1), sizeof *a->nodes);
    if (!a->nodes) {
        free(a);
        return NULL;
    }
    a->n = n_nodes;
    for (int i = 0; i < n_nodes; i++)
        a->nodes[i].first_t = a->nodes[i].waiting = NAN;
    alerts_defaults(&a->set);
    return a;
}

alerts *alerts_copy(const alerts *a)
{
    alerts *c = alerts_new(a->n);
    if (!c)
        return NULL;
    c->set = a->set;
    memcpy(c->nodes, a->nodes, (size_t)a->n * sizeof *c->nodes);
    return c;
}

void alerts_free(alerts *a)
{
    if (!a)
        return;
    free(a->nodes);
    free(a);
}

void alerts_configure(alerts *a, const struct alert_settings *s)
{
    a->set = *s;
}

const struct alert_settings *alerts_settings(const alerts *a)
{
    return &a->set;
}

/* Whether the queue has grown for queue_s: a poll below the last one
 * starts a new run, and so does one at the run's level while it has not
 * risen yet, so that the run's time counts from the last poll before the
 * rise. */
static int queue_growing(struct node_alerts *na, double waiting, double queue_s, double now)
{
    if (isnan(waiting)) {
        na->waiting = NAN;
        return 0;
    }
    if (isnan(na->waiting) || waiting < na->waiting || waiting <= na->base) {
        na->since = now;
        na->base = waiting;
    }
    na->waiting = waiting;
    return waiting > na->base && now - na->since >= queue_s;
}

/* Whether an inferd node's orchestration takes its time: the ratio alone
 * would flag eval 0.05 ms against model 0.04 ms. */
static int eval_bound(const struct alert_settings *set, const struct alert_sample *smp)
{
    return !smp->e && smp->eval_ms > set->eval_ratio * smp->model_ms &&
           smp->eval_ms >= set->eval_floor_ms;
}

/* Which alerts hold for the node now. */
static unsigned holding(const alerts *a, struct node_alerts *na, const struct alert_sample *smp,
                        double now)
{
    const struct eng_view *e = smp->e;
    int down = e ? e->health == ENG_DOWN : smp->down;
    int hold = (int)a->set.hold;
    if (isnan(na->first_t))
        na->first_t = now;
    if (down) {
        /* The queue's run ends with the node, and the measured alerts
         * start again from off. An engine's poll that had no answer is
         * news at once; an inferd node's first heartbeat may still be on
         * its way. */
        na->waiting = NAN;
        na->ttft = na->eval = (struct alert_hold){0, 0};
        return e || na->heard || now - na->first_t >= ALERTS_GRACE_S ? ALERT_BIT(ALERT_DOWN) : 0;
    }
    if (!e || e->health != ENG_UNKNOWN)
        na->heard = 1;
    unsigned on = 0;
    if (alerts_hold_step(&na->eval, eval_bound(&a->set, smp), hold))
        on |= ALERT_BIT(ALERT_EVAL);
    if (!e && smp->ring_stage)
        on |= ALERT_BIT(ALERT_RING);
    if (!e)
        return on;
    if (e->health == ENG_LOADING)
        on |= ALERT_BIT(ALERT_LOADING);
    if (queue_growing(na, e->requests_waiting, a->set.queue_s, now))
        on |= ALERT_BIT(ALERT_QUEUE);
    /* Raised over HIGH, cleared under CLEAR: a cache that hovers around
     * 90% (llama.cpp's does while its slots fill and free) is one alert,
     * not an event a second. */
    if (e->kv_usage > ALERTS_KV_HIGH ||
        ((na->active & ALERT_BIT(ALERT_KV)) && e->kv_usage > ALERTS_KV_CLEAR))
        on |= ALERT_BIT(ALERT_KV);
    if (alerts_hold_step(&na->ttft, e->hist_p95[ENG_H_TTFT] > a->set.ttft_ms, hold))
        on |= ALERT_BIT(ALERT_TTFT);
    return on;
}

/* The event's text: what crossed which threshold, with the numbers. */
static void describe(const alerts *a, const struct node_alerts *na, enum alert_kind k, int raised,
                     const struct alert_sample *smp, double now, char *buf, size_t len)
{
    const struct eng_view *e = smp->e;
    switch (k) {
    case ALERT_DOWN:
        if (!raised)
            snprintf(buf, len, "down: cleared, the node answers again");
        else if (e && e->problem[0])
            snprintf(buf, len, "down: %s", e->problem);
        else
            snprintf(buf, len, "down: the node is not answering");
        return;
    case ALERT_LOADING:
        snprintf(buf, len,
                 raised ? "loading: the engine answers but is not ready"
                        : "loading: cleared, the engine is ready");
        return;
    case ALERT_QUEUE:
        if (raised)
            snprintf(buf, len,
                     "queue: %.0f requests waiting, up from %.0f over %.0f s "
                     "(--alert-queue-s %g)",
                     na->waiting, na->base, now - na->since, a->set.queue_s);
        else
            snprintf(buf, len, "queue: cleared, no longer growing");
        return;
    case ALERT_KV:
        if (raised)
            snprintf(buf, len, "kv: cache %.0f%% used, over %.0f%%", 100 * e->kv_usage,
                     100 * ALERTS_KV_HIGH);
        else
            snprintf(buf, len, "kv: cleared, cache back under %.0f%%", 100 * ALERTS_KV_CLEAR);
        return;
    case ALERT_TTFT:
        if (raised)
            snprintf(buf, len, "ttft: p95 %.0f ms over %g ms (alert_ttft_ms)",
                     e->hist_p95[ENG_H_TTFT], a->set.ttft_ms);
        else
            snprintf(buf, len, "ttft: cleared, p95 back under %g ms", a->set.ttft_ms);
        return;
    case ALERT_EVAL:
        if (raised)
            snprintf(buf, len,
                     "eval: eval ms p50 %.2f over %g x model ms p50 %.2f and over %g ms "
                     "(alert_eval_ratio, alert_eval_floor_ms)",
                     smp->eval_ms, a->set.eval_ratio, smp->model_ms, a->set.eval_floor_ms);
        else
            snprintf(buf, len, "eval: cleared, eval ms p50 back under the thresholds");
        return;
    case ALERT_RING:
        if (raised)
            snprintf(buf, len,
                     "ring: broken at stage '%s': %s; requests are refused with "
                     "ring_down until it answers",
                     smp->ring_stage, smp->ring_why ? smp->ring_why : "");
        else
            snprintf(buf, len, "ring: cleared, the ring answers again");
        return;
    case ALERT_COUNT:
        break;
    }
    buf[0] = '\0';
}

int alerts_note(alerts *a, int node, const struct alert_sample *smp, double now,
                struct alert_change *out)
{
    if (node < 0 || node >= a->n)
        return 0;
    struct node_alerts *na = &a->nodes[node];
    unsigned on = holding(a, na, smp, now), changed = on ^ na->active;
    int n = 0;
    for (int k = 0; k < ALERT_COUNT; k++) {
        if (!(changed & ALERT_BIT(k)))
            continue;
        out[n].kind = (enum alert_kind)k;
        out[n].raised = (on & ALERT_BIT(k)) != 0;
        describe(a, na, (enum alert_kind)k, out[n].raised, smp, now, out[n].message,
                 sizeof out[n].message);
        n++;
    }
    na->active = on;
    return n;
}

unsigned alerts_active(const alerts *a, int node)
{
    return node >= 0 && node < a->n ? a->nodes[node].active : 0;
}

int alerts_total(const alerts *a)
{
    int n = 0;
    for (int i = 0; i < a->n; i++)
        for (unsigned b = a->nodes[i].active; b; b &= b - 1)
            n++;
    return n;
}

void alerts_text(unsigned bits, char *buf, size_t len)
{
    char kv[16];
    snprintf(kv, sizeof kv, "KV>%.0f%%", 100 * ALERTS_KV_HIGH);
    const char *word[ALERT_COUNT] = {"DOWN", "LOADING", "QUEUE", kv, "TTFT", "EVAL>MODEL", "RING"};
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < ALERT_COUNT; k++) {
        if (!(bits & ALERT_BIT(k)))
            continue;
        int w = snprintf(buf + n, len - n, "%s%s", n ? " " : "", word[k]);
        if (w < 0 || (size_t)w >= len - n)
            return;
        n += (size_t)w;
    }
}
