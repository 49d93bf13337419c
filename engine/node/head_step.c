/* head_step.c: the head's steps (see head.c's top comment): which comes
 * next, a prompt's prefill chunk or a decode batch of every running
 * request ready for one; running it on this stage and, on a ring,
 * sending it on as a flight that waits for the tail's answer until
 * --step-timeout; the answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "head_health.h"
#include "head_job.h"
#include "head_quality.h"
#include "head_ring.h"
#include "head_step.h"
#include "stage.h"

/* Steps out at once: one per stage keeps every stage busy (each computes
 * one while the others compute the rest); more would only queue frames. */
static int head_depth(const head *hd)
{
    if (!hd->nd->ring)
        return 1;
    int d = hd->nd->o.pipeline_depth > 0 ? hd->nd->o.pipeline_depth : hd->nd->n_members;
    return d < 1 ? 1 : d > NODE_DEPTH_MAX ? NODE_DEPTH_MAX : d;
}

/* The chunk in effect for a prefill step at depth pos: the setting, but
 * no more than every stage's memory admitted for the request. */
static int head_chunk(const head *hd, const job *j, int pos)
{
    int step = head_job_prefill_step(hd, j);
    if (step != PROTO_PREFILL_AUTO)
        return step < j->max_chunk ? step : j->max_chunk;
    return pf_choose(&hd->pf, pos, hd->nd->o.step_target_ms,
                     PF_AUTO_MAX < j->max_chunk ? PF_AUTO_MAX : j->max_chunk);
}

static void emit_token(head *hd, job *j, int token, const proto_logprobs *lp)
{
    int prev = j->generated > 0 ? j->last_token : head_job_id(hd, j, j->n_ids - 1);
    char buf[TOK_DECODE_BUF];
    const char *text = tok_decode(hd->tok, prev, token, buf);
    node_reply(hd->nd, &j->from, proto_reply_token(j->req.id, token, text, lp));
}

/* The logprobs the tail sent with a job's token (NULL: none) against what
 * the job asked: 0, or -1 after failing the job. */
static int lp_agrees(head *hd, job *j, const proto_logprobs *lp)
{
    const proto_generate_args *g = &j->req.generate;
    int asked = g->has_logprobs ? g->logprobs : -1;
    proto_logprobs none = {.n_top = -1};
    char why[PROTO_MESSAGE_MAX - 64];
    if (proto_logprobs_check(lp ? lp : &none, asked, hd->nd->cfg->vocab_size, why, sizeof why) == 0)
        return 0;
    head_job_fail(hd, j, PROTO_E_INTERNAL, "the tail's token for this request: %s", why);
    return -1;
}

/* A token sampled for a request: by its prompt's last chunk, or by a
 * decode position, with its logprobs (NULL: none asked). */
static void token_done(head *hd, job *j, int token, const proto_logprobs *lp)
{
    if (j->generated == 0)
        j->t_first = clock_ms();
    /* The model's end of text (tok_end), as in `inferd generate`. The
     * token before it was fed by this very step: nothing is pending. */
    if (token == tok_end(hd->tok)) {
        j->last_token = -1;
        head_job_finish(hd, j, NULL);
        return;
    }
    emit_token(hd, j, token, lp);
    j->generated++;
    j->last_token = token;
    if (j->generated == j->req.generate.max_tokens)
        head_job_finish(hd, j, NULL);
}

/* A prefill chunk of n positions from pos is done (token -1: it sampled
 * none); model_ms is what the stages spent on it, for prefill_step auto. */
static void chunk_done(head *hd, job *j, int n, int pos, double model_ms, int token,
                       const proto_logprobs *lp)
{
    pf_observe(&hd->pf, n, pos, model_ms);
    j->fed += n;
    if (j->fed == j->n_ids)
        j->t_prefill_end = clock_ms();
    if (token >= 0)
        token_done(hd, j, token, lp);
    else if (j->fed == j->n_ids && j->req.generate.max_tokens == 0)
        head_job_finish(hd, j, NULL);
}

/* One eval chunk's results to the client: every position's token, most
 * likely next token and its log-probability, and the logits themselves as
 * a second frame when the client asked for them. The chunk is the next
 * one not yet done (j->fed). Returns -1 after failing the job. */
static int eval_reply(head *hd, job *j, int pos, int n, const float *logits)
{
    int vocab = hd->nd->cfg->vocab_size;
    proto_eval_row *rows = malloc((size_t)n * sizeof *rows);
    if (!rows) {
        head_job_fail(hd, j, PROTO_E_INTERNAL, "out of memory for %d eval rows", n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        rows[i].token = head_job_id(hd, j, j->fed + i);
        sampler_top1(logits + (size_t)i * vocab, vocab, &rows[i].top1, &rows[i].logprob);
    }
    int raw = j->req.eval_logits;
    node_reply_with(hd->nd, &j->from, proto_reply_eval(j->req.id, pos, rows, n, raw ? vocab : 0),
                    raw ? logits : NULL, (size_t)n * (size_t)vocab * sizeof *logits);
    free(rows);
    return 0;
}

/* A chunk's logits to their reader: an eval's client, or a quality
 * request's comparison. -1 after failing the job. */
static int logits_done(head *hd, job *j, unsigned flags, int pos, int n, const float *logits)
{
    proto_error e;
    if (!j->q)
        return eval_reply(hd, j, pos, n, logits);
    if (head_quality_take(hd, j, flags, pos, n, logits, &e) == 0)
        return 0;
    head_job_finish(hd, j, &e);
    return -1;
}

/* A quality request's reference chunk buffer; NULL after failing the job. */
static float *quality_ref(head *hd, job *j, int n)
{
    proto_error e;
    float *buf = head_quality_ref(hd, j, n, &e);
    if (!buf)
        head_job_finish(hd, j, &e);
    return buf;
}

/* An embed chunk's final-norm rows [n][dim], summed into the job's. */
static void embed_add(head *hd, job *j, int n, const float *rows)
{
    int dim = hd->nd->cfg->dim;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < dim; k++)
            j->embed[k] += rows[(size_t)i * dim + k];
}

/* What an eval or embed step gives back for each position: the logits
 * [vocab], or the final norm's output [dim]. */
static int eval_row(const head *hd, const job *j)
{
    return j->embed ? hd->nd->cfg->dim : hd->nd->cfg->vocab_size;
}

/* The job's buffer for one chunk of logits (admission counted it). */
static float *eval_buffer(head *hd, job *j, int n)
{
    size_t want = (size_t)n * (size_t)eval_row(hd, j);
    if (want > j->logits_cap) {
        /* The old rows are never read again: no realloc copy. */
        free(j->logits);
        j->logits_cap = 0;
        if (!(j->logits = malloc(want * sizeof *j->logits))) {
            head_job_fail(hd, j, PROTO_E_INTERNAL, "out of memory for the logits of %d positions",
                          n);
            return NULL;
        }
        j->logits_cap = want;
    }
    return j->logits;
}

/* The ids of the job's next prefill chunk of n, into j->chunk. */
static int chunk_ids(head *hd, job *j, int n)
{
    if (n > j->chunk_cap) {
        int *grown = realloc(j->chunk, (size_t)n * sizeof *grown);
        if (!grown) {
            head_job_fail(hd, j, PROTO_E_INTERNAL, "out of memory for a chunk of %d ids", n);
            return -1;
        }
        j->chunk = grown;
        j->chunk_cap = n;
    }
    for (int i = 0; i < n; i++)
        j->chunk[i] = j->q ? head_quality_id(j, i) : head_job_id(hd, j, j->sent + i);
    return 0;
}

/* A step out on the ring, waited for until --step-timeout. */
static flight *flight_add(head *hd, int batch, uint64_t op, int64_t step)
{
    flight *f = &hd->flights[hd->n_flights++];
    memset(f, 0, sizeof *f);
    f->batch = batch;
    head_pending_arm(hd, &f->wait, batch ? RING_BATCH : RING_HIDDEN, op, step);
    return f;
}

int head_flight_find(const head *hd, uint64_t op, int64_t step)
{
    for (int i = 0; i < hd->n_flights; i++)
        if (hd->flights[i].wait.op == op && hd->flights[i].wait.step == step)
            return i;
    return -1;
}

/* Takes flights[i] off the list into *out. */
void head_flight_take(head *hd, int i, flight *out)
{
    *out = hd->flights[i];
    memmove(&hd->flights[i], &hd->flights[i + 1],
            (size_t)(hd->n_flights - i - 1) * sizeof *hd->flights);
    hd->n_flights--;
}

/* The next prefill chunk of j: computed here, then on a single node done
 * at once, on a ring sent on. */
static void prefill_step(head *hd, job *j)
{
    double t0 = clock_ms();
    stage_req *c = stage_find(hd->st, j->op);
    /* A quality request's steps go in pairs over the positions of its windows. */
    int remaining = j->q ? head_quality_left(j) : j->n_ids - j->sent;
    int pos = j->q ? head_quality_pos(j) : stage_req_pos(c);
    int chunk = head_chunk(hd, j, pos);
    int n = remaining < chunk ? remaining : chunk;
    unsigned qflags = j->q ? head_quality_begin(j, c, &n) : 0u;
    if (chunk_ids(hd, j, n) != 0)
        return;
    int sample = n == remaining && j->req.generate.max_tokens > 0;
    /* prefill steps only: max_tokens is 0 */
    int eval = j->req.op == PROTO_OP_EVAL || j->q || j->embed;
    int64_t step = j->step++;
    j->sent += n;
    fwd_stats st;
    proto_error e;
    stage_step p = {.t0 = t0, .step = step, .seqs = 1, .n = n, .pos = pos, .chunk = chunk};
    if (!hd->nd->ring) {
        float *logits = (qflags & RING_F_REF) ? quality_ref(hd, j, n)
                        : eval                ? eval_buffer(hd, j, n)
                        : sample              ? stage_logits(hd->st)
                                              : NULL;
        if (eval && !logits)
            return;
        int rc = eval ? stage_forward_rows(hd->st, c, j->chunk, NULL, n, j->embed != NULL, logits,
                                           &st, &e)
                      : stage_forward(hd->st, c, j->chunk, NULL, n, NULL, logits, &st, &e);
        if (rc != 0) {
            head_job_finish(hd, j, &e);
            return;
        }
        stage_publish(hd->st, c, &p, &st);
        if (j->embed)
            embed_add(hd, j, n, logits);
        else if (eval && logits_done(hd, j, qflags, pos, n, logits) != 0)
            return;
        proto_logprobs lp = {.n_top = -1};
        int vocab = hd->nd->cfg->vocab_size;
        chunk_done(hd, j, n, pos, st.model_ms, sample ? stage_sample(c, logits, vocab, &lp) : -1,
                   &lp);
        return;
    }
    ring_hdr h = {.kind = RING_HIDDEN,
                  .op = j->op,
                  .step = step,
                  .pos = pos,
                  .n = n,
                  .dim = hd->nd->cfg->dim,
                  .token = -1,
                  .chunk = chunk,
                  .flags = (sample ? RING_F_SAMPLE : 0u) | (eval ? RING_F_LOGITS : 0u) |
                           (j->embed ? RING_F_EMBED : 0u) | qflags};
    zmq_msg_t msg;
    float *x_out = ring_hidden_init(&msg, &h);
    if (!x_out) {
        head_job_fail(hd, j, PROTO_E_INTERNAL, "out of memory for step %lld's hidden states",
                      (long long)step);
        return;
    }
    if (stage_forward(hd->st, c, j->chunk, NULL, n, x_out, NULL, &st, &e) != 0) {
        zmq_msg_close(&msg);
        head_job_finish(hd, j, &e);
        return;
    }
    char err[256];
    if (ring_send_msg(hd->nd->ring, &msg, err, sizeof err) != 0) {
        head_job_fail(hd, j, PROTO_E_STAGE_TIMEOUT,
                      "step %lld: the next stage does not take frames: %s", (long long)step, err);
        return;
    }
    stage_publish(hd->st, c, &p, &st);
    flight *f = flight_add(hd, 0, j->op, step);
    f->pos = pos;
    f->n = n;
    f->head_ms = st.model_ms;
    j->in_flight++;
}

/* Fails every job of a batch that could not go out. */
static void batch_fail(head *hd, job *const *js, int b, const proto_error *e)
{
    for (int i = 0; i < b; i++)
        head_job_finish(hd, js[i], e);
}

/* The next decode position of each of b running jobs, in one step: on a
 * single node sampled at once, on a ring sent on as a batch frame. */
static void decode_step(head *hd, job *const *js, int b)
{
    double t0 = clock_ms();
    stage_req *cs[NODE_SEQS_MAX];
    int tokens[NODE_SEQS_MAX];
    ring_seg segs[NODE_SEQS_MAX];
    for (int i = 0; i < b; i++) {
        cs[i] = stage_find(hd->st, js[i]->op);
        tokens[i] = js[i]->last_token;
        segs[i] = (ring_seg){.op = js[i]->op, .step = js[i]->step, .pos = stage_req_pos(cs[i])};
    }
    stage_step p = {.t0 = t0,
                    .decode = 1,
                    .seqs = b,
                    .n = b,
                    .pos = segs[0].pos,
                    .chunk = head_chunk(hd, js[0], segs[0].pos)};
    fwd_stats st;
    proto_error e;
    if (!hd->nd->ring) {
        if (stage_forward_batch(hd->st, cs, b, tokens, NULL, NULL, stage_logits(hd->st), &st, &e) !=
            0) {
            batch_fail(hd, js, b, &e);
            return;
        }
        p.step = b == 1 ? js[0]->step : hd->next_batch++;
        stage_publish(hd->st, cs[0], &p, &st);
        /* Sampling may end a job (and free its place): take the tokens
         * first, then finish each. */
        int vocab = hd->nd->cfg->vocab_size;
        proto_logprobs lp[NODE_SEQS_MAX];
        for (int i = 0; i < b; i++) {
            js[i]->step++;
            tokens[i] =
                stage_sample(cs[i], stage_logits(hd->st) + (size_t)i * vocab, vocab, &lp[i]);
        }
        for (int i = 0; i < b; i++)
            token_done(hd, js[i], tokens[i], &lp[i]);
        return;
    }
    uint64_t op = ++hd->next_op;
    ring_hdr h = {.kind = RING_BATCH,
                  .op = op,
                  .step = hd->next_batch,
                  .n = b,
                  .dim = hd->nd->cfg->dim,
                  .token = -1,
                  .chunk = p.chunk};
    zmq_msg_t msg;
    float *x_out = ring_batch_init(&msg, &h, segs);
    if (!x_out) {
        proto_fail(&e, PROTO_E_INTERNAL, "", "out of memory for a batch of %d", b);
        batch_fail(hd, js, b, &e);
        return;
    }
    if (stage_forward_batch(hd->st, cs, b, tokens, NULL, x_out, NULL, &st, &e) != 0) {
        zmq_msg_close(&msg);
        batch_fail(hd, js, b, &e);
        return;
    }
    char err[256];
    if (ring_send_msg(hd->nd->ring, &msg, err, sizeof err) != 0) {
        proto_fail(&e, PROTO_E_STAGE_TIMEOUT, "",
                   "batch %lld: the next stage does not take frames: %s", (long long)h.step, err);
        batch_fail(hd, js, b, &e);
        return;
    }
    p.step = b == 1 ? js[0]->step : h.step;
    hd->next_batch++;
    stage_publish(hd->st, cs[0], &p, &st);
    flight *f = flight_add(hd, 1, op, h.step);
    f->n = b;
    f->head_ms = st.model_ms;
    for (int i = 0; i < b; i++) {
        f->ops[i] = js[i]->op;
        js[i]->step++;
        js[i]->in_flight++;
    }
}

/* What can run next: the first running job with prompt left to send (a
 * prompt's chunks may follow each other on the ring up to the depth),
 * and the jobs ready to decode, at most their share of the flights. */
static int pick_step(const head *hd, job **prefill, job **batch, int *n_batch)
{
    int depth = head_depth(hd);
    *prefill = NULL;
    *n_batch = 0;
    if (hd->n_flights >= depth)
        return 0;
    int decoding = 0;
    for (int i = 0; i < hd->n_queue; i++) {
        job *j = hd->queue[i];
        if (j->state != JOB_RUN)
            continue;
        /* A paused job (its client reads slower than it runs) keeps its
         * place and its cache, and resumes at the same position. */
        if (head_job_paused(hd, j))
            continue;
        if (j->fed == j->n_ids && j->generated > 0) {
            decoding++;
            if (j->in_flight == 0)
                batch[(*n_batch)++] = j;
        } else if (!*prefill && j->sent < j->n_ids && j->in_flight < depth) {
            *prefill = j;
        }
    }
    /* As many batches as flights: while one is out, the next is computed. */
    int share = (decoding + depth - 1) / depth;
    if (*n_batch > share)
        *n_batch = share;
    return *prefill || *n_batch;
}

/* One step, when one is ready: prefill and decode take turns when both wait. */
void head_step_run(head *hd)
{
    job *prefill, *batch[NODE_SEQS_MAX];
    int n_batch;
    if (!pick_step(hd, &prefill, batch, &n_batch))
        return;
    int decode = n_batch > 0 && (!prefill || hd->decode_turn);
    hd->decode_turn = !decode;
    if (decode)
        decode_step(hd, batch, n_batch);
    else
        prefill_step(hd, prefill);
}

/* The tail's answer to a prefill chunk: a token frame for a generate (the
 * token, or -1 before the prompt's last chunk), a logits frame (every
 * position's) for an eval. */
void head_step_on_chunk(head *hd, const ring_frame *f)
{
    int i = head_flight_find(hd, f->h.op, f->h.step);
    if (i < 0 || hd->flights[i].batch)
        return; /* a step of a request that already ended */
    flight fl;
    head_flight_take(hd, i, &fl);
    job *j = head_job_by_op(hd, f->h.op);
    if (!j)
        return;
    j->in_flight--;
    int vocab = hd->nd->cfg->vocab_size;
    int eval = j->req.op == PROTO_OP_EVAL || j->q || j->embed;
    ring_kind want = eval ? RING_LOGITS : RING_TOKEN;
    if (f->h.kind != want || f->h.token >= vocab || f->h.pos != fl.pos || f->h.n != fl.n ||
        (eval && f->h.dim != eval_row(hd, j)) || !(f->h.flags & RING_F_EMBED) != !j->embed) {
        head_job_fail(
            hd, j, PROTO_E_INTERNAL,
            "step %lld came back as a %s frame (token %d, dim %d, flags %u) for positions %d+%d; "
            "the head sent positions %d+%d for a %s frame of %d floats a position",
            (long long)f->h.step, ring_kind_name(f->h.kind), f->h.token, f->h.dim, f->h.flags,
            f->h.pos, f->h.n, fl.pos, fl.n, ring_kind_name(want), eval ? eval_row(hd, j) : 0);
        return;
    }
    if (j->embed)
        embed_add(hd, j, f->h.n, f->x);
    else if (eval && logits_done(hd, j, f->h.flags, f->h.pos, f->h.n, f->x) != 0)
        return;
    if (f->h.token >= 0 && lp_agrees(hd, j, f->lp) != 0)
        return;
    chunk_done(hd, j, f->h.n, f->h.pos, fl.head_ms + f->h.down_ms, f->h.token, f->lp);
}

/* The tail's tokens for a decode batch, in the batch's order. */
void head_step_on_batch(head *hd, const ring_frame *f)
{
    int i = head_flight_find(hd, f->h.op, f->h.step);
    if (i < 0 || !hd->flights[i].batch)
        return;
    flight fl;
    head_flight_take(hd, i, &fl);
    for (int k = 0; k < fl.n; k++) {
        job *j = head_job_by_op(hd, fl.ops[k]);
        if (!j)
            continue; /* it ended while its position was out */
        j->in_flight--;
        if (f->h.n != fl.n || f->tokens[k] >= hd->nd->cfg->vocab_size)
            head_job_fail(hd, j, PROTO_E_INTERNAL,
                          "batch %lld of %d came back with %d tokens (this one %d, the vocabulary "
                          "holds %d)",
                          (long long)f->h.step, fl.n, f->h.n, k < f->h.n ? f->tokens[k] : -1,
                          hd->nd->cfg->vocab_size);
        else if (lp_agrees(hd, j, f->lp ? &f->lp[k] : NULL) == 0)
            token_done(hd, j, f->tokens[k], f->lp ? &f->lp[k] : NULL);
    }
}

/* Fails every job of a flight (a stage failed its step). */
void head_flight_fail(head *hd, const flight *fl, proto_code code, const char *message)
{
    int n = fl->batch ? fl->n : 1;
    for (int k = 0; k < n; k++) {
        job *j = head_job_by_op(hd, fl->batch ? fl->ops[k] : fl->wait.op);
        if (j)
            head_job_fail(hd, j, code, "%s", message);
    }
}

/* A step did not come back in time: the silent stage has lost (or never
 * got) what every running request holds there, so they all end. */
static void flight_timed_out(head *hd, const flight *fl)
{
    char who[PROTO_TEXT_MAX + 64], what[96];
    head_silent_stage(hd, &fl->wait, who, sizeof who);
    if (fl->batch)
        snprintf(what, sizeof what, "decode batch %lld (%d requests)", (long long)fl->wait.step,
                 fl->n);
    else
        snprintf(what, sizeof what, "step %lld", (long long)fl->wait.step);
    char why[PROTO_MESSAGE_MAX];
    snprintf(why, sizeof why, "%s did not answer %s within %.1f s", who, what,
             hd->nd->o.step_timeout_ms / 1000.0);
    hd->n_flights = 0;
    for (int i = hd->n_queue - 1; i >= 0; i--) {
        if (i >= hd->n_queue || hd->queue[i]->state != JOB_RUN)
            continue;
        head_job_fail(hd, hd->queue[i], PROTO_E_STAGE_TIMEOUT, "%s", why);
    }
    head_health_broken(hd, &fl->wait, why);
}

int head_step_ready(const head *hd)
{
    job *prefill, *batch[NODE_SEQS_MAX];
    int n_batch;
    return pick_step(hd, &prefill, batch, &n_batch);
}

void head_step_check_deadlines(head *hd, double now)
{
    for (int i = 0; i < hd->n_flights; i++) {
        if (now >= hd->flights[i].wait.deadline) {
            flight fl = hd->flights[i];
            flight_timed_out(hd, &fl);
            return;
        }
    }
}
