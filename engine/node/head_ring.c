/* head_ring.c: what the head's ring operations share (see head_ring.h). */
#include "head_ring.h"

#include <stdio.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "steplog.h"

void head_send(head *hd, ring_kind kind, uint64_t op, json_t *obj)
{
    ring_hdr h = {.kind = kind, .op = op, .step = -1, .token = -1};
    char err[256];
    if (ring_send(hd->nd->ring, &h, obj, err, sizeof err) != 0)
        steplog_line(hd->nd->log, "RING", "sending %s: %s", ring_kind_name(kind), err);
}

/* Frames from the head carry its endpoint once the ring has told it (the
 * tail's --next), and with CURVE its public key, so that the stages can
 * report to it. Before that, its own --listen when it names a host (not a
 * wildcard): the first probe's stages can then report, and one past the
 * stage limit say so at start. */
json_t *head_frame_json(const head *hd)
{
    json_t *o = json_object();
    const char *listen = hd->nd->o.listen;
    if (hd->nd->head_ep[0])
        json_object_set_new(o, "head", json_string(hd->nd->head_ep));
    else if (listen && !strchr(listen, '*') && !strstr(listen, "0.0.0.0"))
        json_object_set_new(o, "head", json_string(listen));
    if (hd->nd->curve)
        json_object_set_new(o, "head_key", json_string(hd->nd->curve->public_key));
    return o;
}

void head_pending_arm(const head *hd, pending *w, ring_kind kind, uint64_t op, int64_t step)
{
    w->live = 1;
    w->kind = kind;
    w->op = op;
    w->step = step;
    w->deadline = clock_ms() + hd->nd->o.step_timeout_ms;
    memset(w->reported, 0, sizeof w->reported);
}

void head_pending_report(pending *w, int idx)
{
    if (idx > 0 && idx < PROTO_RING_MAX)
        w->reported[idx / 32] |= 1u << (idx % 32);
}

static int reported(const pending *w, int idx)
{
    return (w->reported[idx / 32] >> (idx % 32)) & 1u;
}

int head_silent_index(const head *hd, const pending *w)
{
    if (hd->nd->n_members < 2)
        return -1;
    int i = 1;
    while (i < hd->nd->n_members - 1 && reported(w, i))
        i++;
    return i;
}

/* The first stage after the head that did not report the operation: the
 * one that went silent (or, when all reported, the tail's link back). */
void head_silent_stage(const head *hd, const pending *w, char *out, size_t len)
{
    int i = head_silent_index(hd, w);
    if (i < 0) {
        snprintf(out, len, "the stage at %s (--next) or one after it", hd->nd->o.next);
        return;
    }
    const member *m = &hd->nd->members[i];
    snprintf(out, len, "stage '%s' (layers %d:%d)", m->name, m->first, m->last);
}
