/* stage_req.c: a request's life on this stage: its place and cache
 * (a session's when it names one), its steps through this stage's layers,
 * the telemetry of each step, and its end; and what the caches add up
 * to. The bottom of the stage's files: stage_admit.c, stage_config.c and
 * stage.c call into it, never the other way. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stage.h"
#include "stage_state.h"

size_t stage_kv_bytes(const stage *sg)
{
    size_t bytes = sess_bytes(sg->sessions);
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        if (sg->reqs[i].live)
            bytes +=
                kv_bytes(sg->reqs[i].kv) + (sg->reqs[i].other ? kv_bytes(sg->reqs[i].other) : 0);
    return bytes;
}

int stage_req_follows_set(const stage_req *c)
{
    return c->live && !c->other;
}

void stage_req_select(stage_req *c, unsigned flags)
{
    if (!c->other)
        return;
    int ref = (flags & RING_F_REF) != 0;
    if (ref != c->ref_now) {
        kv_cache *t = c->kv;
        c->kv = c->other;
        c->other = t;
        c->ref_now = ref;
    }
    /* Each window is a context of its own. */
    if (flags & RING_F_RESET)
        kv_set_len(c->kv, 0);
}

void stage_name_layers(const stage *sg, char *buf, size_t len)
{
    snprintf(buf, len, "stage '%s' (layers %d:%d)", sg->nd->o.name, fwd_first(sg->fwd),
             fwd_last(sg->fwd));
}

stage_req *stage_find(stage *sg, uint64_t op)
{
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        if (sg->reqs[i].live && sg->reqs[i].op == op)
            return &sg->reqs[i];
    return NULL;
}

int stage_begin(stage *sg, uint64_t op, const char *req, const char *session, int pos, int ctx,
                int quality_bits, const proto_generate_args *sampling, uint64_t seed,
                proto_error *e)
{
    char err[256];
    stage_req *c = stage_find(sg, op);
    if (c) /* a head that restarted reuses its operation numbers */
        stage_end(sg, c, 0, -1);
    for (c = sg->reqs; c < sg->reqs + NODE_SEQS_MAX && c->live; c++)
        ;
    if (c == sg->reqs + NODE_SEQS_MAX)
        return proto_fail(e, PROTO_E_BUSY, "", "stage '%s': %d requests already running",
                          sg->nd->o.name, NODE_SEQS_MAX);
    memset(c, 0, sizeof *c);
    if (session[0]) {
        int pending;
        c->kv = sess_take(sg->sessions, session, &pending);
        if (c->kv && kv_len(c->kv) != pos) {
            kv_free(c->kv);
            c->kv = NULL;
            if (pos > 0)
                return proto_fail(e, PROTO_E_NOT_FOUND, "session",
                                  "stage '%s': session '%s' is not at position %d", sg->nd->o.name,
                                  session, pos);
        }
    }
    int bits = quality_bits ? quality_bits : sg->kv_bits;
    if ((!c->kv && kv_create(&c->kv, fwd_kv_shape(sg->fwd), bits, err, sizeof err) != 0) ||
        (quality_bits && kv_create(&c->other, fwd_kv_shape(sg->fwd), 32, err, sizeof err) != 0)) {
        kv_free(c->kv);
        c->kv = NULL;
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", sg->nd->o.name, err);
    }
    sampler_bias bias[PROTO_BIAS_MAX];
    for (int i = 0; i < sampling->n_bias; i++)
        bias[i] = (sampler_bias){sampling->bias[i].token, sampling->bias[i].bias};
    sampler_opts so = {.top_k = sampling->top_k,
                       .min_p = sampling->min_p,
                       .repeat_penalty = sampling->repeat_penalty,
                       .presence_penalty = sampling->presence_penalty,
                       .frequency_penalty = sampling->frequency_penalty,
                       .bias = bias,
                       .n_bias = sampling->n_bias};
    int vocab = sg->nd->cfg->vocab_size;
    c->logprobs = sampling->has_logprobs ? sampling->logprobs : -1;
    if (sg->nd->tail &&
        (sampler_create(&c->smp, vocab, sampling->temperature, sampling->top_p, seed, err,
                        sizeof err) != 0 ||
         sampler_configure(c->smp, &so, err, sizeof err) != 0 ||
         (c->logprobs >= 0 && !(c->lp_row = malloc((size_t)vocab * sizeof *c->lp_row)) &&
          snprintf(err, sizeof err, "out of memory for the logprobs of %d tokens", vocab) > 0))) {
        sampler_free(c->smp);
        c->smp = NULL;
        kv_free(c->kv);
        kv_free(c->other);
        c->kv = c->other = NULL;
        return proto_fail(e, PROTO_E_BAD_VALUE, "", "stage '%s': %s", sg->nd->o.name, err);
    }
    c->live = 1;
    c->op = op;
    snprintf(c->req, sizeof c->req, "%s", req);
    snprintf(c->session, sizeof c->session, "%s", session);
    c->pos0 = pos;
    c->ctx = ctx;
    if (sg->n_reqs++ == 0)
        busy_idle(&sg->busy, clock_ms());
    return 0;
}

void stage_end(stage *sg, stage_req *c, int ok, int pending_token)
{
    if (!c->live)
        return;
    if (c->session[0]) {
        /* A request that did not end well leaves its session as it found
         * it, so every stage agrees on where the session is. */
        if (!ok)
            kv_set_len(c->kv, c->pos0);
        char err[256];
        if (sess_put(sg->sessions, c->session, c->kv, pending_token, err, sizeof err) != 0) {
            steplog_line(sg->nd->log, "SESSION", "lost '%s': %s", c->session, err);
            kv_free(c->kv);
        }
    } else {
        kv_free(c->kv);
        kv_free(c->other);
    }
    sampler_free(c->smp);
    free(c->lp_row);
    memset(c, 0, sizeof *c);
    /* The next requests admit their own chunk's scratch: this one's goes
     * once nothing runs. */
    if (--sg->n_reqs == 0)
        fwd_scratch_release(sg->fwd);
    /* KV blocks are small allocations: without a trim, the heap keeps the
     * pages and RSS (which the memory guard reads) would not come down. */
    malloc_trim(0);
}

int stage_forward(stage *sg, stage_req *c, const int *tokens, const float *x_in, int n,
                  float *x_out, float *logits, fwd_stats *st, proto_error *e)
{
    char err[256];
    if (fwd_step(sg->fwd, c->kv, tokens, x_in, n, x_out, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", sg->nd->o.name, err);
    return 0;
}

int stage_forward_rows(stage *sg, stage_req *c, const int *tokens, const float *x_in, int n,
                       int normed, float *out, fwd_stats *st, proto_error *e)
{
    char err[256];
    if ((normed ? fwd_step_normed : fwd_step_logits)(sg->fwd, c->kv, tokens, x_in, n, out, st, err,
                                                     sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", sg->nd->o.name, err);
    return 0;
}

int stage_forward_batch(stage *sg, stage_req *const *cs, int b, const int *tokens,
                        const float *x_in, float *x_out, float *logits, fwd_stats *st,
                        proto_error *e)
{
    kv_cache *kvs[NODE_SEQS_MAX];
    for (int i = 0; i < b; i++)
        kvs[i] = cs[i]->kv;
    char err[256];
    if (fwd_step_batch(sg->fwd, kvs, b, tokens, x_in, x_out, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", sg->nd->o.name, err);
    return 0;
}

void stage_publish(stage *sg, stage_req *c, const stage_step *p, const fwd_stats *st)
{
    double now = clock_ms();
    double wait_ms = busy_step(&sg->busy, p->t0, now, st->model_ms);
    const guard_mem *g = node_mem(sg->nd, 0);
    proto_step s;
    memset(&s, 0, sizeof s);
    snprintf(s.req, sizeof s.req, "%s", c->req);
    s.step = p->step;
    s.phase = p->decode ? PROTO_PHASE_DECODE : PROTO_PHASE_PREFILL;
    s.seqs = p->seqs;
    s.tokens = p->n;
    s.pos = p->pos + (p->seqs == 1 ? p->n : 1);
    s.step_ms = now - p->t0;
    s.model_ms = st->model_ms;
    s.eval_ms = s.step_ms > st->model_ms ? s.step_ms - st->model_ms : 0.0;
    s.wait_ms = wait_ms;
    s.busy = busy_ratio(&sg->busy, now);
    s.kv_bytes = stage_kv_bytes(sg);
    s.kv_bits = kv_bits(c->kv); /* a quality request's step: its own */
    s.prefill_step = p->chunk;
    s.rss = g->rss;
    s.budget = g->budget;
    s.headroom = guard_headroom(g);
    s.act_max = st->nonfinite ? NAN : st->act_max;
    s.nonfinite = st->nonfinite;
    tel_step(sg->nd->tel, &s);
    steplog_step(sg->nd->log, &s);
    if (st->nonfinite && !c->numeric) {
        c->numeric = 1;
        json_t *d = json_pack("{sI sI}", "step", (json_int_t)p->step, "nonfinite",
                              (json_int_t)st->nonfinite);
        node_event(sg->nd, PROTO_EV_NUMERIC, c->req, "", d,
                   "stage '%s' output %d non-finite values at step %lld (%d positions of %d "
                   "requests from position %d)",
                   sg->nd->o.name, st->nonfinite, (long long)p->step, p->n, p->seqs, p->pos);
        json_decref(d);
    }
}

int stage_req_pos(const stage_req *c)
{
    return kv_len(c->kv);
}

int stage_sample(stage_req *c, float *logits, int vocab, proto_logprobs *lp)
{
    lp->n_top = -1;
    if (c->logprobs < 0)
        return sampler_sample(c->smp, logits);
    memcpy(c->lp_row, logits, (size_t)vocab * sizeof *logits);
    int token = sampler_sample(c->smp, logits);
    lp->n_top =
        sampler_logprobs(c->lp_row, vocab, token, c->logprobs, lp->top, lp->top_lp, &lp->logprob);
    return token;
}
