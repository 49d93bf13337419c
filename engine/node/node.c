/* node.c: what the server's files share about the node they make up:
 * replies to control clients, events, the memory reading and the node's
 * identity in the ring. Below head.c, stage.c and serve.c, so that they
 * call down into it and never into each other's callers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "node.h"

void node_reply(node *nd, const peer *to, char *payload)
{
    node_reply_with(nd, to, payload, NULL, 0);
}

void node_reply_with(node *nd, const peer *to, char *payload, const void *data, size_t len)
{
    if (!payload) {
        steplog_line(nd->log, "CONTROL", "out of memory encoding a reply");
        return;
    }
    /* Never blocks and never drops: what the peer has no room for waits
     * in the outbox, and the head pauses the request meanwhile. */
    if (outbox_send(nd->out, to, payload, data, len, clock_ms()) == OUTBOX_FULL)
        steplog_line(nd->log, "CONTROL",
                     "a reply dropped: %d frames already wait for a client that does not read "
                     "(or memory ran out)",
                     OUTBOX_PEER_MAX);
}

void node_reply_error(node *nd, const peer *to, const char *id, proto_code code, const char *fmt,
                      ...)
{
    proto_error e = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    node_reply(nd, to, proto_reply_error(id, &e));
}

void node_event(node *nd, proto_event_kind kind, const char *req, const char *code,
                const json_t *detail, const char *fmt, ...)
{
    char msg[PROTO_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tel_event(nd->tel, kind, req, code, detail, "%s", msg);
    steplog_line(nd->log, "EVENT", "%s%s%s: %s", proto_event_name(kind),
                 req && req[0] ? " req=" : "", req ? req : "", msg);
}

const guard_mem *node_mem(node *nd, int fresh)
{
    /* Step messages read memory at most every 100 ms: /proc reads cost
     * more than the rest of a step message. Admission always reads. */
    double now = clock_ms();
    if (fresh || now - nd->mem_t >= 100.0) {
        guard_measure(nd->o.mem_limit, &nd->mem);
        /* Mapped weights are the node's before a step reads them; once
         * all were in, what the kernel drops later is RSS's to say. */
        if (!nd->paged_in) {
            nd->mem.unpaged = model_unpaged_bytes(nd->m, nd->o.first, nd->o.last);
            nd->paged_in = nd->mem.unpaged == 0;
        }
        nd->mem_t = now;
    }
    return &nd->mem;
}

json_t *node_identity(const node *nd)
{
    return json_pack("{ss ss ss si si si ss}", "name", nd->o.name, "fingerprint",
                     model_fingerprint(nd->m), "model", model_name(nd->m), "first", nd->o.first,
                     "last", nd->o.last, "n_layers", nd->cfg->n_layers, "next",
                     nd->o.next ? nd->o.next : "");
}

void node_member(member *m, const ring_stage *s)
{
    snprintf(m->name, sizeof m->name, "%s", s->name);
    snprintf(m->fingerprint, sizeof m->fingerprint, "%s", s->fingerprint);
    snprintf(m->next, sizeof m->next, "%s", s->next);
    m->first = s->first;
    m->last = s->last;
}
