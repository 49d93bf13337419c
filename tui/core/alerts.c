/* alerts.c: raising and clearing the console's alerts (alerts.h). */
#include "alerts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* One node's alerts, and the little history the queue alert needs. */
struct node_alerts {
    unsigned active;
    double first_t; /* when it was first looked at; NAN before */
    int heard;      /* it has been up once */
    /* The waiting requests of the last poll, and the run they belong to:
     * since when the queue has not fallen, and its level then. */
    double waiting, since, base;
};

struct alerts {
    struct alert_settings set;
    int n;
    struct node_alerts *nodes;
};

void alerts_defaults(struct alert_settings *s)
{
    s->queue_s = opt_default_num(OPT_ALERT_QUEUE_S);
    s->ttft_ms = opt_default_num(OPT_ALERT_TTFT_MS);
}

void alerts_read(const opt_vals *v, struct alert_settings *s)
{
    s->queue_s = opt_num(v, OPT_ALERT_QUEUE_S);
    s->ttft_ms = opt_num(v, OPT_ALERT_TTFT_MS);
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

/* Which alerts hold for the node now. */
static unsigned holding(const alerts *a, struct node_alerts *na, int down, const struct eng_view *e,
                        double now)
{
    if (isnan(na->first_t))
        na->first_t = now;
    if (e)
        down = e->health == ENG_DOWN;
    if (down) {
        /* The queue's run ends with the node. An engine's poll that had
         * no answer is news at once; an inferd node's first heartbeat may
         * still be on its way. */
        na->waiting = NAN;
        return e || na->heard || now - na->first_t >= ALERTS_GRACE_S ? ALERT_BIT(ALERT_DOWN) : 0;
    }
    if (!e || e->health != ENG_UNKNOWN)
        na->heard = 1;
    if (!e)
        return 0;
    unsigned on = 0;
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
    if (e->hist_p95[ENG_H_TTFT] > a->set.ttft_ms)
        on |= ALERT_BIT(ALERT_TTFT);
    return on;
}

/* The event's text: what crossed which threshold, with the numbers. */
static void describe(const alerts *a, const struct node_alerts *na, enum alert_kind k, int raised,
                     const struct eng_view *e, double now, char *buf, size_t len)
{
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
            snprintf(buf, len, "ttft: p95 %.0f ms over %g ms (--alert-ttft-ms)",
                     e->hist_p95[ENG_H_TTFT], a->set.ttft_ms);
        else
            snprintf(buf, len, "ttft: cleared, p95 back under %g ms", a->set.ttft_ms);
        return;
    case ALERT_COUNT:
        break;
    }
    buf[0] = '\0';
}

int alerts_note(alerts *a, int node, int down, const struct eng_view *e, double now,
                struct alert_change *out)
{
    if (node < 0 || node >= a->n)
        return 0;
    struct node_alerts *na = &a->nodes[node];
    unsigned on = holding(a, na, down, e, now), changed = on ^ na->active;
    int n = 0;
    for (int k = 0; k < ALERT_COUNT; k++) {
        if (!(changed & ALERT_BIT(k)))
            continue;
        out[n].kind = (enum alert_kind)k;
        out[n].raised = (on & ALERT_BIT(k)) != 0;
        describe(a, na, (enum alert_kind)k, out[n].raised, e, now, out[n].message,
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
    const char *word[ALERT_COUNT] = {"DOWN", "LOADING", "QUEUE", kv, "TTFT"};
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
