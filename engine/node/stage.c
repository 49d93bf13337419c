/* stage.c: this node's layers as a stage of the ring: what the stage
 * holds and its status, and the ring frames a stage that is not the head
 * handles (see node.h and PROTOCOL.md "Stage-to-stage frames"). The top
 * of the stage's files: admission is stage_admit.c's, a request's cache and
 * steps stage_req.c's, live config stage_config.c's.
 *
 * Every stage holds its own share of a request: the KV cache of its layers
 * (a session's cache when the request names one) and, on the tail, the
 * sampler. The head decides; the other stages follow its frames and check
 * that what they hold agrees with what the head says (the step number, the
 * context position), so that a stage that restarted or missed a frame
 * fails the request loudly instead of computing on the wrong context.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stage.h"
#include "stage_state.h"

int stage_create(stage **out, node *nd, char *err, size_t errlen)
{
    stage *sg = calloc(1, sizeof *sg);
    *out = NULL;
    if (!sg) {
        snprintf(err, errlen, "out of memory for the stage");
        return -1;
    }
    sg->nd = nd;
    sg->kv_bits = nd->o.kv_bits;
    sg->prefill_step = nd->o.prefill_step;
    busy_init(&sg->busy, clock_ms());
    kv_cache *probe;
    if (pool_create(&sg->pool, nd->o.threads, err, errlen) != 0 ||
        fwd_create(&sg->fwd, nd->m, nd->o.first, nd->o.last, sg->pool, err, errlen) != 0 ||
        sess_table_create(&sg->sessions, err, errlen) != 0 ||
        /* A shape the KV cache cannot hold is found now, not by each request. */
        kv_create(&probe, fwd_kv_shape(sg->fwd), sg->kv_bits, err, errlen) != 0) {
        stage_free(sg);
        return -1;
    }
    kv_free(probe);
    if (nd->tail) {
        /* A decode batch's: one row per running request. */
        sg->logits =
            malloc((size_t)nd->o.max_seqs * (size_t)nd->cfg->vocab_size * sizeof *sg->logits);
        if (!sg->logits) {
            snprintf(err, errlen, "out of memory for logits");
            stage_free(sg);
            return -1;
        }
    }
    *out = sg;
    return 0;
}

void stage_free(stage *sg)
{
    if (!sg)
        return;
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        stage_end(sg, &sg->reqs[i], 0, -1);
    sess_table_free(sg->sessions);
    free(sg->logits);
    fwd_free(sg->fwd);
    pool_free(sg->pool);
    free(sg);
}

void stage_status(stage *sg, proto_status *s)
{
    s->config.prefill_step = sg->prefill_step;
    s->config.kv_bits = sg->kv_bits;
    s->memory.kv_bytes = stage_kv_bytes(sg);
    s->sessions = sess_count(sg->sessions);
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        s->sessions += sg->reqs[i].live && sg->reqs[i].session[0];
    s->active = sg->n_reqs;
    s->busy = busy_ratio(&sg->busy, clock_ms());
}

int stage_session(const stage *sg, const char *name, int *pending)
{
    *pending = sess_pending(sg->sessions, name);
    return sess_len(sg->sessions, name);
}

int stage_drop_session(stage *sg, const char *name)
{
    return sess_drop(sg->sessions, name);
}

int stage_prefill_step(const stage *sg)
{
    return sg->prefill_step;
}

float *stage_logits(stage *sg)
{
    return sg->logits;
}

void stage_drop_sessions(stage *sg, const ring_ids *names)
{
    int dropped = 0;
    for (int i = 0; i < names->n; i++) {
        if (sess_drop(sg->sessions, names->v[i])) {
            steplog_line(sg->nd->log, "SESSION", "dropped '%s'", names->v[i]);
            dropped = 1;
        }
    }
    if (dropped)
        malloc_trim(0);
}

/* ---- frames on a stage that is not the head ---------------------------- */

/* Tells the head this stage handled (or failed) a frame. Without a known
 * head endpoint there is nobody to tell yet: the head's deadline covers it. */
static void stage_report(stage *sg, const ring_hdr *of, const proto_error *e)
{
    if (!sg->nd->head_ep[0])
        return;
    ring_hdr h = {.kind = RING_REPORT, .op = of->op, .step = of->step, .token = -1};
    json_t *o = json_pack("{ss si ss sb}", "name", sg->nd->o.name, "first", fwd_first(sg->fwd),
                          "of", ring_kind_name(of->kind), "ok", e == NULL);
    if (e) {
        json_object_set_new(o, "code", json_string(proto_code_name(e->code)));
        json_object_set_new(o, "message", json_string(e->message));
    }
    char err[256];
    if (ring_report(sg->nd->ring, sg->nd->head_ep, sg->nd->head_key, &h, o, err, sizeof err) != 0)
        steplog_line(sg->nd->log, "RING", "report to the head: %s", err);
    json_decref(o);
}

static void stage_forward_frame(stage *sg, const ring_frame *f)
{
    char err[256];
    if (ring_send(sg->nd->ring, &f->h, f->json, err, sizeof err) != 0)
        steplog_line(sg->nd->log, "RING", "forwarding a %s frame: %s", ring_kind_name(f->h.kind),
                     err);
}

static void stage_learn_head(stage *sg, const char *ep, const char *key)
{
    if (ep[0])
        snprintf(sg->nd->head_ep, sizeof sg->nd->head_ep, "%s", ep);
    if (key[0])
        snprintf(sg->nd->head_key, sizeof sg->nd->head_key, "%s", key);
}

/* A list of the frame this stage adds to (its entry in "stages", the
 * sessions it evicts in "drop"), which goes on with the additions. */
static json_t *frame_list(ring_frame *f, const char *key)
{
    return json_object_get(f->json, key);
}

/* A request this stage runs that the head no longer does (its end frame
 * was lost, or the head restarted) ends here: the head lists what it
 * runs with every admission round. */
static void stage_end_abandoned(stage *sg, const ring_ops *running)
{
    for (int i = 0; i < NODE_SEQS_MAX; i++) {
        stage_req *c = &sg->reqs[i];
        if (!c->live)
            continue;
        int found = 0;
        for (int k = 0; k < running->n; k++)
            found |= running->v[k] == c->op;
        if (found)
            continue;
        steplog_line(sg->nd->log, "REQ", "%s abandoned by the head", c->req);
        stage_end(sg, c, 0, -1);
    }
}

/* A round-trip frame that has passed PROTO_RING_MAX stages already goes
 * no further: the ring is longer than a ring may be (or a loop that
 * misses its head). The head is told why, naming this stage, rather
 * than left to time out. */
static int over_limit(stage *sg, const ring_frame *f, int n)
{
    if (n < PROTO_RING_MAX)
        return 0;
    proto_error e = {.code = PROTO_E_RING_DOWN};
    snprintf(e.message, sizeof e.message,
             "stage '%s' (layers %d:%d) would be stage %d of the ring, past the limit of %d "
             "stages: hold more layers per stage",
             sg->nd->o.name, sg->nd->o.first, sg->nd->o.last, n + 1, PROTO_RING_MAX);
    steplog_line(sg->nd->log, "RING", "dropped a %s frame: %s", ring_kind_name(f->h.kind),
                 e.message);
    stage_report(sg, &f->h, &e);
    return 1;
}

/* A probe: this stage's entry joins the list, and on it goes. */
static void on_probe(stage *sg, ring_frame *f)
{
    const ring_msg_probe *p = &f->m->probe;
    stage_learn_head(sg, p->head, p->head_key);
    if (over_limit(sg, f, p->stages.n))
        return;
    json_array_append_new(frame_list(f, "stages"), node_identity(sg->nd));
    stage_forward_frame(sg, f);
    stage_report(sg, &f->h, NULL);
}

static void on_prepare(stage *sg, ring_frame *f)
{
    const ring_msg_prepare *p = &f->m->prepare;
    stage_learn_head(sg, p->head, p->head_key);
    if (over_limit(sg, f, p->stages.n))
        return;
    stage_end_abandoned(sg, &p->running);
    stage_drop_sessions(sg, &p->drop);
    stage_admission a;
    stage_eval eval = p->quality_bits ? STAGE_QUALITY : p->eval ? STAGE_EVAL : STAGE_EVAL_NONE;
    stage_admit(sg, p->session, p->pos, p->ctx, p->chunk, eval, p->quality_bits,
                frame_list(f, "drop"), &a);
    json_t *entry = node_identity(sg->nd);
    json_object_set_new(entry, "ok", json_boolean(a.code == PROTO_OK));
    if (a.code == PROTO_OK)
        json_object_set_new(entry, "chunk", json_integer(a.chunk));
    if (a.code != PROTO_OK) {
        json_object_set_new(entry, "code", json_string(proto_code_name(a.code)));
        json_object_set_new(entry, "message", json_string(a.message));
        json_object_set_new(entry, "needed", json_integer((json_int_t)a.needed));
        json_object_set_new(entry, "available", json_integer((json_int_t)a.available));
        json_object_set_new(entry, "budget", json_integer((json_int_t)a.budget));
    }
    json_array_append_new(frame_list(f, "stages"), entry);
    stage_forward_frame(sg, f);
    stage_report(sg, &f->h, NULL);
}

static void on_start(stage *sg, ring_frame *f)
{
    const ring_msg_start *s = &f->m->start;
    stage_learn_head(sg, s->head, s->head_key);
    /* The ring as the head saw it, for status. */
    sg->nd->n_members = s->stages.n;
    for (int i = 0; i < s->stages.n; i++)
        node_member(&sg->nd->members[i], &s->stages.v[i]);
    proto_generate_args sampling = {.temperature = s->temperature,
                                    .top_p = s->top_p,
                                    .top_k = s->top_k,
                                    .min_p = s->min_p,
                                    .repeat_penalty = s->repeat_penalty,
                                    .presence_penalty = s->presence_penalty,
                                    .frequency_penalty = s->frequency_penalty,
                                    .has_logprobs = s->has_logprobs,
                                    .logprobs = s->logprobs,
                                    .n_bias = s->logit_bias.n,
                                    .bias = (proto_bias *)s->logit_bias.v};
    proto_error e;
    if (stage_begin(sg, f->h.op, s->req, s->session, s->pos, s->ctx, s->quality_bits, &sampling,
                    (uint64_t)s->seed, &e) != 0) {
        steplog_line(sg->nd->log, "REQ", "%s: %s", s->req, e.message);
        stage_report(sg, &f->h, &e);
        return;
    }
    steplog_line(sg->nd->log, "REQ", "%s start session='%s' pos=%d", s->req, s->session, s->pos);
    if (!sg->nd->tail)
        stage_forward_frame(sg, f);
}

/* Runs a step into a frame of n * out->dim floats and sends it on: hidden
 * states to the next stage or, for an eval on the tail, every position's
 * logits to the head. The frame is the buffer: nothing is copied. */
static int send_floats(stage *sg, stage_req *c, const ring_frame *f, ring_hdr *out, double t0,
                       fwd_stats *st, proto_error *e, char *err, size_t errlen)
{
    zmq_msg_t msg;
    float *y = ring_hidden_init(&msg, out);
    if (!y)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': out of memory for step %lld",
                          sg->nd->o.name, (long long)f->h.step);
    int normed = (f->h.flags & RING_F_EMBED) != 0;
    int rc = out->kind == RING_LOGITS
                 ? stage_forward_rows(sg, c, NULL, f->x, f->h.n, normed, y, st, e)
                 : stage_forward(sg, c, NULL, f->x, f->h.n, y, NULL, st, e);
    if (rc != 0) {
        zmq_msg_close(&msg);
        return -1;
    }
    out->down_ms = f->h.down_ms + (clock_ms() - t0);
    ring_hdr_encode(out, zmq_msg_data(&msg));
    return ring_send_msg(sg->nd->ring, &msg, err, errlen);
}

/* The tail's step of a generate: the token (sampled when the step says
 * so, else -1) back to the head. */
static int send_token(stage *sg, stage_req *c, const ring_frame *f, ring_hdr *out, double t0,
                      fwd_stats *st, proto_error *e, char *err, size_t errlen)
{
    int sample = (f->h.flags & RING_F_SAMPLE) != 0;
    if (stage_forward(sg, c, NULL, f->x, f->h.n, NULL, sample ? sg->logits : NULL, st, e) != 0)
        return -1;
    out->kind = RING_TOKEN;
    out->dim = 0;
    proto_logprobs lp = {.n_top = -1};
    out->token = sample ? stage_sample(c, sg->logits, sg->nd->cfg->vocab_size, &lp) : -1;
    out->down_ms = f->h.down_ms + (clock_ms() - t0);
    if (lp.n_top < 0)
        return ring_send(sg->nd->ring, out, NULL, err, errlen);
    out->flags |= RING_F_LOGPROBS;
    zmq_msg_t msg;
    if (!ring_tokens_init(&msg, out))
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': out of memory for step %lld",
                          sg->nd->o.name, (long long)f->h.step);
    ring_lp_put(&msg, out, 0, &lp);
    return ring_send_msg(sg->nd->ring, &msg, err, errlen);
}

/* Runs this stage's layers on a step's hidden states and passes the result
 * on: hidden states to the next stage, or (tail) the token or an eval's
 * logits to the head. */
static void on_hidden(stage *sg, ring_frame *f)
{
    double t0 = clock_ms();
    const ring_hdr *in = &f->h;
    stage_req *c = stage_find(sg, in->op);
    if (!c) {
        steplog_line(sg->nd->log, "RING",
                     "dropped step %lld of an operation this stage does not hold",
                     (long long)in->step);
        return;
    }
    proto_error e;
    stage_req_select(c, in->flags);
    if (in->step != c->next_step || in->pos != kv_len(c->kv) || in->dim != sg->nd->cfg->dim) {
        proto_fail(&e, PROTO_E_INTERNAL, "",
                   "stage '%s': step %lld at position %d with dim %d, expected step %lld at "
                   "position %d with dim %d",
                   sg->nd->o.name, (long long)in->step, in->pos, in->dim, (long long)c->next_step,
                   kv_len(c->kv), sg->nd->cfg->dim);
        stage_report(sg, in, &e);
        return;
    }
    ring_hdr out = *in;
    fwd_stats st;
    char err[256] = "";
    int rc;
    e.code = PROTO_OK;
    if (sg->nd->tail && (in->flags & RING_F_LOGITS)) {
        out.kind = RING_LOGITS;
        out.dim = (in->flags & RING_F_EMBED) ? sg->nd->cfg->dim : sg->nd->cfg->vocab_size;
    }
    if (sg->nd->tail && !(in->flags & RING_F_LOGITS))
        rc = send_token(sg, c, f, &out, t0, &st, &e, err, sizeof err);
    else
        rc = send_floats(sg, c, f, &out, t0, &st, &e, err, sizeof err);
    if (rc != 0) {
        /* A failed send (e.code still OK) means the next stage does not
         * take frames: the ring is broken after this stage. */
        if (e.code == PROTO_OK)
            proto_fail(&e, PROTO_E_STAGE_TIMEOUT, "", "stage '%s' cannot pass step %lld on: %s",
                       sg->nd->o.name, (long long)in->step, err);
        stage_report(sg, in, &e);
        return;
    }
    c->next_step++;
    stage_report(sg, in, NULL);
    stage_step p = {.t0 = t0,
                    .step = in->step,
                    .decode = (in->flags & RING_F_DECODE) != 0,
                    .seqs = 1,
                    .n = in->n,
                    .pos = in->pos,
                    .chunk = in->chunk};
    stage_publish(sg, c, &p, &st);
}

/* The running requests a batch frame names, in its order, each checked
 * against what this stage holds for it. -1 with e when one disagrees. */
static int batch_members(stage *sg, const ring_frame *f, stage_req **cs, proto_error *e)
{
    for (int i = 0; i < f->h.n; i++) {
        const ring_seg *g = &f->segs[i];
        stage_req *c = stage_find(sg, g->op);
        if (!c)
            return proto_fail(e, PROTO_E_INTERNAL, "",
                              "stage '%s': batch %lld names operation %llu, which this stage "
                              "does not run (did it restart?)",
                              sg->nd->o.name, (long long)f->h.step, (unsigned long long)g->op);
        if (g->step != c->next_step || g->pos != kv_len(c->kv))
            return proto_fail(e, PROTO_E_INTERNAL, "",
                              "stage '%s': request '%s' in batch %lld at step %lld position %d, "
                              "expected step %lld at position %d",
                              sg->nd->o.name, c->req, (long long)f->h.step, (long long)g->step,
                              g->pos, (long long)c->next_step, kv_len(c->kv));
        cs[i] = c;
    }
    return 0;
}

/* A batch through this stage's layers, passed on: hidden states to the
 * next stage, or (tail) every request's sampled token to the head. */
static int batch_run(stage *sg, const ring_frame *f, stage_req *const *cs, ring_hdr *out, double t0,
                     fwd_stats *st, proto_error *e, char *err, size_t errlen)
{
    int b = f->h.n;
    zmq_msg_t msg;
    if (!sg->nd->tail) {
        float *y = ring_batch_init(&msg, out, f->segs);
        if (!y)
            return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': out of memory for batch %lld",
                              sg->nd->o.name, (long long)f->h.step);
        if (stage_forward_batch(sg, cs, b, NULL, f->x, y, NULL, st, e) != 0) {
            zmq_msg_close(&msg);
            return -1;
        }
    } else {
        if (stage_forward_batch(sg, cs, b, NULL, f->x, NULL, sg->logits, st, e) != 0)
            return -1;
        int vocab = sg->nd->cfg->vocab_size;
        int32_t drawn[NODE_SEQS_MAX];
        proto_logprobs lp[NODE_SEQS_MAX];
        out->kind = RING_TOKENS;
        out->dim = 0;
        for (int i = 0; i < b; i++) {
            drawn[i] = stage_sample(cs[i], sg->logits + (size_t)i * (size_t)vocab, vocab, &lp[i]);
            out->flags |= lp[i].n_top >= 0 ? RING_F_LOGPROBS : 0u;
        }
        int32_t *tokens = ring_tokens_init(&msg, out);
        if (!tokens)
            return proto_fail(e, PROTO_E_INTERNAL, "",
                              "stage '%s': out of memory for batch %lld's tokens", sg->nd->o.name,
                              (long long)f->h.step);
        memcpy(tokens, drawn, (size_t)b * sizeof *drawn);
        for (int i = 0; (out->flags & RING_F_LOGPROBS) && i < b; i++)
            ring_lp_put(&msg, out, i, &lp[i]);
    }
    out->down_ms = f->h.down_ms + (clock_ms() - t0);
    ring_hdr_encode(out, zmq_msg_data(&msg));
    return ring_send_msg(sg->nd->ring, &msg, err, errlen);
}

static void on_batch(stage *sg, ring_frame *f)
{
    double t0 = clock_ms();
    stage_req *cs[NODE_SEQS_MAX];
    proto_error e;
    if (f->h.n > sg->nd->o.max_seqs || f->h.dim != sg->nd->cfg->dim) {
        proto_fail(&e, PROTO_E_INTERNAL, "",
                   "stage '%s': batch %lld of %d requests with dim %d, expected at most %d "
                   "(--max-seqs) with dim %d",
                   sg->nd->o.name, (long long)f->h.step, f->h.n, f->h.dim, sg->nd->o.max_seqs,
                   sg->nd->cfg->dim);
        stage_report(sg, &f->h, &e);
        return;
    }
    if (batch_members(sg, f, cs, &e) != 0) {
        stage_report(sg, &f->h, &e);
        return;
    }
    ring_hdr out = f->h;
    fwd_stats st;
    char err[256] = "";
    e.code = PROTO_OK;
    if (batch_run(sg, f, cs, &out, t0, &st, &e, err, sizeof err) != 0) {
        if (e.code == PROTO_OK)
            proto_fail(&e, PROTO_E_STAGE_TIMEOUT, "", "stage '%s' cannot pass batch %lld on: %s",
                       sg->nd->o.name, (long long)f->h.step, err);
        stage_report(sg, &f->h, &e);
        return;
    }
    for (int i = 0; i < f->h.n; i++)
        cs[i]->next_step++;
    stage_report(sg, &f->h, NULL);
    /* A batch of one is numbered as its request's step, as on the head. */
    stage_step p = {.t0 = t0,
                    .step = f->h.n == 1 ? f->segs[0].step : f->h.step,
                    .decode = 1,
                    .seqs = f->h.n,
                    .n = f->h.n,
                    .pos = f->segs[0].pos,
                    .chunk = f->h.chunk};
    stage_publish(sg, cs[0], &p, &st);
}

static void on_end(stage *sg, ring_frame *f)
{
    stage_req *c = stage_find(sg, f->h.op);
    if (c) {
        int ok = f->m->end.ok;
        steplog_line(sg->nd->log, "REQ", "%s end %s", c->req, ok ? "ok" : "failed");
        stage_end(sg, c, ok, -1);
    }
    if (!sg->nd->tail)
        stage_forward_frame(sg, f);
}

/* One round of a set (check, apply or undo): this stage's verdict joins
 * the list, and the frame goes on back to the head. */
static void on_set(stage *sg, ring_frame *f)
{
    const ring_msg_set *s = &f->m->set;
    stage_learn_head(sg, s->head, s->head_key);
    if (over_limit(sg, f, s->stages.n))
        return;
    json_t *entry = json_object();
    proto_error e;
    if (f->h.kind == RING_SET_CHECK)
        stage_check_set(sg, &s->args, entry, &e);
    else if (f->h.kind == RING_SET)
        stage_apply_set(sg, f->h.op, &s->args, entry, &e);
    else
        stage_undo_set(sg, f->h.op, entry, &e);
    json_array_append_new(frame_list(f, "stages"), entry);
    stage_forward_frame(sg, f);
    stage_report(sg, &f->h, NULL);
}

static void on_drop(stage *sg, ring_frame *f)
{
    stage_drop_sessions(sg, &f->m->drop.sessions);
    if (!sg->nd->tail)
        stage_forward_frame(sg, f);
}

void stage_on_frame(stage *sg, ring_frame *f)
{
    switch (f->h.kind) {
    case RING_PREPARE:
        on_prepare(sg, f);
        return;
    case RING_START:
        on_start(sg, f);
        return;
    case RING_HIDDEN:
        on_hidden(sg, f);
        return;
    case RING_BATCH:
        on_batch(sg, f);
        return;
    case RING_END:
        on_end(sg, f);
        return;
    case RING_SET_CHECK:
    case RING_SET:
    case RING_SET_UNDO:
        on_set(sg, f);
        return;
    case RING_DROP:
        on_drop(sg, f);
        return;
    case RING_PROBE:
        on_probe(sg, f);
        return;
    default:
        steplog_line(sg->nd->log, "RING", "dropped a %s frame: only the head takes those",
                     ring_kind_name(f->h.kind));
        return;
    }
}
