/* head_job.c: a request on the head as a job: the ids it feeds, and its
 * end (final reply, END around the ring, its stage's cache, request-end
 * telemetry), which the queue (head.c) and the steps (head_step.c) both
 * come to. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "head_job.h"
#include "head_quality.h"
#include "head_ring.h"
#include "stage.h"

static int job_index(const head *hd, const job *j)
{
    for (int i = 0; i < hd->n_queue; i++)
        if (hd->queue[i] == j)
            return i;
    return -1;
}

job *head_job_by_op(const head *hd, uint64_t op)
{
    for (int i = 0; i < hd->n_queue; i++)
        if (hd->queue[i]->state != JOB_QUEUED && hd->queue[i]->op == op)
            return hd->queue[i];
    return NULL;
}

static proto_event_kind event_of(proto_code code)
{
    switch (code) {
    case PROTO_E_KV_OOM:
    case PROTO_E_CTX_LIMIT:
    case PROTO_E_BAD_TOKEN:
    case PROTO_E_BAD_VALUE:
    case PROTO_E_BUSY:
    case PROTO_E_NOT_FOUND:
    case PROTO_E_RING_DOWN:
        return PROTO_EV_REFUSED;
    case PROTO_E_STAGE_TIMEOUT:
        return PROTO_EV_STAGE_TIMEOUT;
    case PROTO_E_MODEL_MISMATCH:
        return PROTO_EV_MODEL_MISMATCH;
    case PROTO_E_SHUTDOWN:
        return PROTO_EV_SHUTDOWN;
    default:
        return PROTO_EV_ERROR;
    }
}

/* A rate, or NaN (null on the wire) when there was nothing to time. */
static double per_second(double count, double ms)
{
    return count > 0 && ms > 0.0 ? count * 1000.0 / ms : NAN;
}

static void job_stats(head *hd, const job *j, proto_stats *s)
{
    const stage_req *c = j->state == JOB_RUN ? stage_find(hd->st, j->op) : NULL;
    double now = clock_ms();
    memset(s, 0, sizeof *s);
    s->prompt_tokens = j->fed;
    s->gen_tokens = j->generated;
    s->ttft_ms = j->t_first > 0 ? j->t_first - j->t_recv : NAN;
    s->prefill_ms = j->t_prefill_end > 0 ? j->t_prefill_end - j->t_begin : NAN;
    s->prefill_tps = per_second(j->fed, s->prefill_ms);
    s->decode_tps = per_second(j->generated - 1, now - j->t_first);
    s->e2e_ms = now - j->t_recv;
    s->ctx = c ? stage_req_pos(c) : 0;
}

static void job_free(job *j)
{
    proto_request_free(&j->req);
    free(j->ids);
    free(j->chunk);
    free(j->logits);
    head_quality_free(j->q);
    free(j->embed);
    free(j);
}

static void queue_remove(head *hd, int i)
{
    memmove(&hd->queue[i], &hd->queue[i + 1], (size_t)(hd->n_queue - i - 1) * sizeof *hd->queue);
    hd->n_queue--;
}

/* Ends a job with its final reply: ok when e is NULL. Its steps still
 * out on the ring come back to nobody and are dropped. */
void head_job_finish(head *hd, job *j, const proto_error *e)
{
    proto_stats stats;
    job_stats(hd, j, &stats);
    /* Failures carry the stats too: what was done (an HTTP client's usage). */
    json_t *res = json_pack("{so}", "stats", proto_stats_json(&stats));
    proto_error qe;
    json_t *quality = !e && j->q ? head_quality_result(j, &qe) : NULL;
    if (!e && j->q && !quality)
        e = &qe;
    if (quality)
        json_object_set_new(res, "quality", quality);
    if (!e && j->embed)
        json_object_set_new(res, "embedding",
                            proto_embedding_json(j->embed, hd->nd->cfg->dim, j->fed));
    node_reply(hd->nd, &j->from,
               e ? proto_reply_error_with(j->req.id, e, res) : proto_reply_ok(j->req.id, res));
    json_decref(res);
    /* A request that began and then failed for lack of room was not
     * refused up front: its end message counts it, as an error. */
    proto_event_kind kind = e ? event_of(e->code) : PROTO_EV_ERROR;
    if (kind == PROTO_EV_REFUSED && j->begun)
        kind = PROTO_EV_ERROR;
    if (e && e->code != PROTO_E_CANCELLED)
        node_event(hd->nd, kind, j->req.id, proto_code_name(e->code), NULL, "%s", e->message);
    stage_req *c = j->state == JOB_RUN ? stage_find(hd->st, j->op) : NULL;
    if (c && hd->nd->ring) {
        json_t *o = json_pack("{ss sb}", "req", j->req.id, "ok", e == NULL);
        head_send(hd, RING_END, j->op, o);
        json_decref(o);
    }
    if (c) {
        /* The last sampled token was not fed (unless the request ended on
         * BOS): the session's next request starts with it. */
        int pending = e ? j->pending0 : (j->generated > 0 ? j->last_token : -1);
        stage_end(hd->st, c, e == NULL, pending);
    }
    /* A request counts once in inferd_requests_total: refused up front
     * (its event), or ended (this message), whether it began or not (one
     * cancelled or stalled while still queued ends too). */
    if (j->begun || (e && event_of(e->code) != PROTO_EV_REFUSED)) {
        proto_req_msg m;
        memset(&m, 0, sizeof m);
        snprintf(m.req, sizeof m.req, "%s", j->req.id);
        snprintf(m.session, sizeof m.session, "%s", j->req.generate.session);
        snprintf(m.kind, sizeof m.kind, "%s", proto_op_name(j->req.op));
        m.end = 1;
        m.ok = e == NULL;
        m.stats = stats;
        if (e) {
            snprintf(m.code, sizeof m.code, "%s", proto_code_name(e->code));
            snprintf(m.message, sizeof m.message, "%s", e->message);
        }
        tel_req(hd->nd->tel, &m);
    }
    steplog_line(hd->nd->log, "REQ",
                 "%s end %s%s%s prompt=%d generated=%d ttft=%.1fms prefill_tok_s=%.1f "
                 "decode_tok_s=%.1f e2e=%.1fms",
                 j->req.id, e ? proto_code_name(e->code) : "ok", e ? ": " : "", e ? e->message : "",
                 stats.prompt_tokens, stats.gen_tokens, stats.ttft_ms, stats.prefill_tps,
                 stats.decode_tps, stats.e2e_ms);
    if (j->submitted)
        tokwork_cancel(hd->tokw, j->op);
    queue_remove(hd, job_index(hd, j));
    job_free(j);
}

void head_job_fail(head *hd, job *j, proto_code code, const char *fmt, ...)
{
    proto_error e = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    head_job_finish(hd, j, &e);
}

int head_job_paused(const head *hd, const job *j)
{
    return outbox_held(hd->nd->out, &j->from, NULL) > 0;
}

void head_job_check_clients(head *hd, double now)
{
    double limit = hd->nd->o.stall_limit_ms;
    for (int i = hd->n_queue - 1; i >= 0; i--) {
        if (i >= hd->n_queue)
            continue;
        job *j = hd->queue[i];
        double since = now;
        if (outbox_gone(hd->nd->out, &j->from))
            head_job_fail(hd, j, PROTO_E_CANCELLED, "its client is gone: a reply found no peer");
        else if (outbox_held(hd->nd->out, &j->from, &since) > 0 && now - since >= limit)
            head_job_fail(hd, j, PROTO_E_STALLED,
                          "its client took no reply frame for %.1f s (--stall-limit %.1f s)",
                          (now - since) / 1000.0, limit / 1000.0);
    }
}

/* Synthetic prompt ids: a splitmix64 hash of the context position, so a
 * session that grows by synthetic prompts gets a different id at every
 * position, the same on every run. Ids 0..2 (unk, BOS, EOS) are avoided,
 * and ids stay inside the tokenizer's vocabulary so they decode to text. */
static int synthetic_id(int pos, int vocab)
{
    uint64_t z = (uint64_t)pos + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return 3 + (int)(z % (uint64_t)(vocab - 3));
}

/* The i-th id the request feeds. */
int head_job_id(const head *hd, const job *j, int i)
{
    const proto_generate_args *g = &j->req.generate;
    if (j->pending0 >= 0) {
        if (i == 0)
            return j->pending0;
        i--;
    }
    switch (g->input) {
    case PROTO_INPUT_PROMPT:
        return j->ids[i];
    case PROTO_INPUT_TOKENS:
        return g->tokens[i];
    case PROTO_INPUT_SYNTHETIC:
        break;
    }
    int vocab = tok_vocab_size(hd->tok) < hd->nd->cfg->vocab_size ? tok_vocab_size(hd->tok)
                                                                  : hd->nd->cfg->vocab_size;
    return synthetic_id(j->pos0 + (j->pending0 >= 0) + i, vocab);
}

int head_job_prefill_step(const head *hd, const job *j)
{
    const proto_quality_args *q = &j->req.quality;
    return j->req.op == PROTO_OP_QUALITY && q->has_prefill_step ? q->prefill_step
                                                                : stage_prefill_step(hd->st);
}
