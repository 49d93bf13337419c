/* head_set.c: `set` on a ring, from its head. The change is checked on
 * every stage, then applied on every stage, and when a stage fails to
 * apply it (or falls silent) put back on the stages that did: three
 * rounds of frames, each with its deadline (PROTOCOL.md, set). */
#include "head_set.h"

#include <stdarg.h>
#include <stdio.h>

#include "head_health.h"
#include "head_ring.h"
#include "stage.h"

/* Sends one round of the set around the ring, the head's entry first. */
static void set_round(head *hd, ring_kind kind, uint64_t op, json_t *entry)
{
    set_op *s = &hd->set;
    json_t *o = head_frame_json(hd);
    if (kind != RING_SET_UNDO) {
        json_t *fields = stage_set_to_json(&s->args);
        json_object_update(o, fields);
        json_decref(fields);
    }
    json_object_set_new(o, "stages", json_pack("[o]", entry));
    head_send(hd, kind, op, o);
    json_decref(o);
    head_pending_arm(hd, &s->wait, kind, op, -1);
}

/* Ends the set with an error reply. */
static void set_fail(head *hd, proto_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_fail(head *hd, proto_code code, const char *fmt, ...)
{
    proto_error e = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    hd->set.live = 0;
    hd->set.wait.live = 0;
    node_reply(hd->nd, &hd->set.from, proto_reply_error(hd->set.id, &e));
}

/* The first stage of a round that refused, or NULL. */
static const ring_stage *set_refusal(const ring_stages *stages, proto_error *e)
{
    for (int i = 0; i < stages->n; i++) {
        const ring_stage *st = &stages->v[i];
        if (st->ok)
            continue;
        e->code = st->code != PROTO_OK ? st->code : PROTO_E_INTERNAL;
        snprintf(e->message, sizeof e->message, "%s",
                 st->message[0] ? st->message : "a stage refused");
        return st;
    }
    return NULL;
}

/* A stage failed to apply (or fell silent): every stage that applied the
 * set puts it back, the head first. */
static void set_undo_round(head *hd, const proto_error *why)
{
    set_op *s = &hd->set;
    s->failure = *why;
    json_t *entry = json_object();
    proto_error e;
    stage_undo_set(hd->st, s->wait.op, entry, &e);
    set_round(hd, RING_SET_UNDO, s->wait.op, entry);
}

static void set_round_done(head *hd, const ring_frame *f)
{
    set_op *s = &hd->set;
    s->wait.live = 0;
    proto_error e;
    const ring_stage *refused = set_refusal(&f->m->set.stages, &e);
    if (f->h.kind == RING_SET_CHECK) {
        if (refused) {
            set_fail(hd, e.code, "%s; no stage changed", e.message);
            return;
        }
        json_t *entry = json_object();
        if (stage_apply_set(hd->st, f->h.op, &s->args, entry, &e) != 0) {
            json_decref(entry);
            set_fail(hd, e.code, "%s; no stage changed", e.message);
            return;
        }
        set_round(hd, RING_SET, f->h.op, entry);
    } else if (f->h.kind == RING_SET) {
        if (refused) {
            set_undo_round(hd, &e);
            return;
        }
        s->live = 0;
        /* The reply lists the entries as the stages wrote them. */
        json_t *res = json_pack("{sO}", "stages", json_object_get(f->json, "stages"));
        node_reply(hd->nd, &s->from, proto_reply_ok(s->id, res));
        json_decref(res);
    } else if (refused) {
        set_fail(hd, s->failure.code, "%s; putting the set back failed too: %s", s->failure.message,
                 e.message);
    } else {
        set_fail(hd, s->failure.code, "%s; every stage was put back", s->failure.message);
    }
}

/* A round's deadline passed. Before anything was applied nothing needs
 * undoing; after, the stages that applied put it back. */
static void set_timed_out(head *hd, const char *who)
{
    set_op *s = &hd->set;
    double secs = hd->nd->o.step_timeout_ms / 1000.0;
    node_event(hd->nd, PROTO_EV_STAGE_TIMEOUT, "", "stage_timeout", NULL,
               "%s did not answer a %s within %.1f s", who, ring_kind_name(s->wait.kind), secs);
    if (s->wait.kind == RING_SET_CHECK) {
        set_fail(hd, PROTO_E_STAGE_TIMEOUT, "%s did not answer within %.1f s; no stage changed",
                 who, secs);
    } else if (s->wait.kind == RING_SET) {
        proto_error e = {.code = PROTO_E_STAGE_TIMEOUT};
        snprintf(e.message, sizeof e.message, "%s did not answer within %.1f s", who, secs);
        set_undo_round(hd, &e);
    } else {
        set_fail(hd, s->failure.code,
                 "%s; %s did not answer the undo within %.1f s: the stages from it on may still "
                 "hold the set",
                 s->failure.message, who, secs);
    }
}

void head_set_on_frame(head *hd, const ring_frame *f)
{
    if (hd->set.live && hd->set.wait.live && hd->set.wait.op == f->h.op &&
        hd->set.wait.kind == f->h.kind)
        set_round_done(hd, f);
}

void head_set_check_deadline(head *hd, double now)
{
    char who[PROTO_TEXT_MAX + 64];
    if (!hd->set.live || !hd->set.wait.live || now < hd->set.wait.deadline)
        return;
    pending w = hd->set.wait;
    head_silent_stage(hd, &w, who, sizeof who);
    set_timed_out(hd, who);
    char why[PROTO_MESSAGE_MAX];
    snprintf(why, sizeof why, "%s did not answer a %s within %.1f s", who, ring_kind_name(w.kind),
             hd->nd->o.step_timeout_ms / 1000.0);
    head_health_broken(hd, &w, why);
}

void head_set_shutdown(head *hd)
{
    if (!hd->set.live)
        return;
    hd->set.live = 0;
    node_reply_error(hd->nd, &hd->set.from, hd->set.id, PROTO_E_SHUTDOWN,
                     "the node is shutting down");
}

void head_set(head *hd, const peer *from, const proto_request *req)
{
    int ring = hd->nd->ring && hd->nd->head;
    if (ring && hd->set.live) {
        node_reply_error(hd->nd, from, req->id, PROTO_E_BUSY,
                         "set '%s' is still going around the ring", hd->set.id);
        return;
    }
    proto_error e;
    /* A broken ring would only time out the check round: nothing changes. */
    if (ring && head_health_refuse(hd, &e)) {
        node_reply_error(hd->nd, from, req->id, e.code, "%s; no stage changed", e.message);
        return;
    }
    json_t *entry = json_object();
    /* Alone, a node applies at once; the head of a ring checks every
     * stage first (head_set_on_frame). */
    int rc = ring ? stage_check_set(hd->st, &req->set, entry, &e)
                  : stage_apply_set(hd->st, ++hd->next_op, &req->set, entry, &e);
    if (rc != 0) {
        json_decref(entry);
        node_reply_error(hd->nd, from, req->id, e.code, "%s; %s", e.message,
                         ring ? "no stage changed" : "nothing changed");
        return;
    }
    if (!ring) {
        json_t *res = json_pack("{s[o]}", "stages", entry);
        node_reply(hd->nd, from, proto_reply_ok(req->id, res));
        json_decref(res);
        return;
    }
    set_op *s = &hd->set;
    s->live = 1;
    s->from = *from;
    s->args = req->set;
    snprintf(s->id, sizeof s->id, "%s", req->id);
    set_round(hd, RING_SET_CHECK, ++hd->next_op, entry);
}
