/* head_health.c: the ring's health as the head sees it (head_health.h).
 *
 * Without it a dead stage made every new request wait its own
 * --step-timeout in the admission round, one after the other. Now the
 * first timeout marks the ring down at the silent stage: requests are
 * refused at once with ring_down naming it, and a probe frame (PROTOCOL.md
 * "Ring health") goes around every PROBE_MS until one comes back, which
 * puts the ring up again with no restart. A probe costs one small JSON
 * frame per stage: no stage allocates or computes anything for it. */
#include "head_health.h"

#include <stdio.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "head_job.h"
#include "head_ring.h"

/* The bound on the time from a stage answering again to the head serving. */
#define PROBE_MS 1000.0

static double probe_interval(const head *hd)
{
    double t = hd->nd->o.step_timeout_ms;
    return t > 0 && t < PROBE_MS ? t : PROBE_MS;
}

static void set_state(head *hd, int state, const char *stage, const char *why)
{
    ring_health *h = &hd->health;
    if (h->state == state && strcmp(h->stage, stage) == 0)
        return;
    h->state = state;
    snprintf(h->stage, sizeof h->stage, "%s", stage);
    snprintf(h->why, sizeof h->why, "%s", why);
    h->changes++;
    if (state == PROTO_RING_DOWN) {
        node_event(hd->nd, PROTO_EV_RING_DOWN, "", "ring_down", NULL,
                   "the ring is broken at stage '%s': %s", stage, why);
    } else {
        node_event(hd->nd, PROTO_EV_RING_UP, "", "", NULL,
                   "the ring answers: every stage passed "
                   "a probe on");
    }
}

/* Every request not yet running would only wait for the same silence:
 * they end now (the running ones ended with the timeout itself). */
static void fail_waiting(head *hd)
{
    proto_error e;
    head_health_refuse(hd, &e);
    for (int i = hd->n_queue - 1; i >= 0; i--) {
        if (i >= hd->n_queue || hd->queue[i]->state == JOB_RUN)
            continue;
        head_job_fail(hd, hd->queue[i], e.code, "%s", e.message);
    }
}

static void go_down(head *hd, const char *stage, const char *why)
{
    ring_health *h = &hd->health;
    if (h->state != PROTO_RING_DOWN) {
        /* Probes from now on answer for this outage; a late one from
         * before says nothing about it. */
        h->first_probe = hd->next_op + 1;
        h->next_probe = 0;
        h->probe.live = 0;
    }
    set_state(hd, PROTO_RING_DOWN, stage, why);
    fail_waiting(hd);
}

/* The silent stage's name, or the head's --next when the ring is not
 * known yet. */
static void silent_name(const head *hd, const pending *w, char *out, size_t len)
{
    int i = head_silent_index(hd, w);
    snprintf(out, len, "%s", i >= 0 ? hd->nd->members[i].name : hd->nd->o.next);
}

void head_health_broken(head *hd, const pending *w, const char *why)
{
    char stage[PROTO_TEXT_MAX];
    silent_name(hd, w, stage, sizeof stage);
    go_down(hd, stage, why);
}

void head_health_refused(head *hd, const char *stage, const char *message)
{
    go_down(hd, stage, message);
}

int head_health_refuse(const head *hd, proto_error *e)
{
    const ring_health *h = &hd->health;
    if (h->state != PROTO_RING_DOWN)
        return 0;
    memset(e, 0, sizeof *e);
    e->code = PROTO_E_RING_DOWN;
    snprintf(e->message, sizeof e->message,
             "the ring is broken at stage '%s': %.300s; the head probes the ring every %.1f s "
             "and serves again once it answers",
             h->stage, h->why, probe_interval(hd) / 1000.0);
    return 1;
}

void head_health_seen(head *hd)
{
    hd->health.probe.live = 0;
    set_state(hd, PROTO_RING_UP, "", "");
}

double head_health_deadline(const head *hd)
{
    const ring_health *h = &hd->health;
    if (!hd->nd->ring || h->state == PROTO_RING_UP)
        return 1e300;
    return h->next_probe;
}

void head_health_tick(head *hd, double now)
{
    ring_health *h = &hd->health;
    if (!hd->nd->ring || h->state == PROTO_RING_UP || now < h->next_probe)
        return;
    /* The last probe is still out after an interval: the stage it did not
     * get past is the one that breaks the ring now (another one than the
     * first, when that one came back and a later one went). */
    if (h->probe.live && h->state == PROTO_RING_DOWN) {
        char stage[PROTO_TEXT_MAX];
        silent_name(hd, &h->probe, stage, sizeof stage);
        if (strcmp(stage, h->stage) != 0) {
            char why[PROTO_MESSAGE_MAX];
            head_silent_stage(hd, &h->probe, why, sizeof why);
            snprintf(why + strlen(why), sizeof why - strlen(why),
                     " did not pass a ring probe on within %.1f s", probe_interval(hd) / 1000.0);
            set_state(hd, PROTO_RING_DOWN, stage, why);
        }
    }
    json_t *o = head_frame_json(hd);
    json_t *me = node_identity(hd->nd);
    json_object_set_new(o, "stages", json_pack("[o]", me));
    uint64_t op = ++hd->next_op;
    head_send(hd, RING_PROBE, op, o);
    json_decref(o);
    head_pending_arm(hd, &h->probe, RING_PROBE, op, -1);
    h->probe.deadline = now + probe_interval(hd);
    h->next_probe = h->probe.deadline;
}

pending *head_health_wait(head *hd, uint64_t op)
{
    pending *w = &hd->health.probe;
    return w->live && w->op == op ? w : NULL;
}

void head_health_on_probe(head *hd, const ring_frame *f)
{
    ring_health *h = &hd->health;
    if (h->state == PROTO_RING_UP || f->h.op < h->first_probe)
        return;
    /* The ring as it answered: its endpoint back to the head (so that the
     * stages can report) and its members (for status and for naming a
     * stage that falls silent later). */
    const ring_stages *s = &f->m->probe.stages;
    if (s->n >= 2) {
        for (int i = 0; i < s->n; i++)
            node_member(&hd->nd->members[i], &s->v[i]);
        hd->nd->n_members = s->n;
        snprintf(hd->nd->head_ep, sizeof hd->nd->head_ep, "%s", s->v[s->n - 1].next);
    }
    steplog_line(hd->nd->log, "RING", "probe %llu came back through %d stages",
                 (unsigned long long)f->h.op, s->n);
    head_health_seen(hd);
}
