/* head.c: generate and eval requests on the head stage (see node.h,
 * PROTOCOL.md "Stage-to-stage frames"): the queue, the admission round,
 * frames back and deadlines. Steps are head_step.c's, a job's ids and end
 * head_job.c's; `set` goes around the ring in head_set.c.
 *
 * A request goes through:
 *   queued   -> waits for a place: up to --max-seqs requests run at once
 *   prepare  -> the admission round: every stage adds who it is (name,
 *               model fingerprint, layers) and whether the request fits its
 *               memory beside what the running ones were promised; the
 *               head checks that the ring is whole and holds one model,
 *               then sends START (one round at a time, so that no two
 *               requests are admitted against the same free memory)
 *   run      -> its steps: prefill chunks, then decode positions, which
 *               go out batched with every other running request ready to
 *               decode, so that the weights are read once for all of them
 * and ends with one final reply, an END frame around the ring, and a
 * request-end telemetry message.
 *
 * On a ring, up to --pipeline-depth steps are out at once (flights): the
 * head computes the next step while the other stages compute earlier
 * ones. A prompt's next chunk needs only this stage's cache of the chunks
 * before it, so a prompt's chunks follow each other without waiting for
 * the ring; a request's next decode position needs its last token, so
 * the running requests are split into as many decode batches as there
 * are flights, which take turns. Frames travel one path in order, so
 * every stage sees every request's steps in the head's order.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/model/gguf.h"
#include "engine/sys/clock.h"
#include "head.h"
#include "head_health.h"
#include "head_job.h"
#include "head_quality.h"
#include "head_ring.h"
#include "head_set.h"
#include "head_state.h"
#include "head_step.h"

int head_create(head **out, node *nd, stage *st, char *err, size_t errlen)
{
    head *hd = calloc(1, sizeof *hd);
    *out = NULL;
    if (!hd) {
        snprintf(err, errlen, "out of memory for the head");
        return -1;
    }
    hd->nd = nd;
    hd->st = st;
    pf_init(&hd->pf);
    /* Ring operation ids start from the clock so that frames a restarted
     * head's predecessor left in flight never match a new operation. */
    hd->next_op = (uint64_t)time(NULL) << 20;
    /* A GGUF file carries its own vocabulary; --tokenizer still wins. */
    const struct gguf *g = model_gguf(nd->m);
    if (nd->head &&
        ((!nd->o.tokenizer && g ? tok_load_gguf(&hd->tok, g, err, errlen)
                                : tok_load(&hd->tok, nd->o.tokenizer, err, errlen)) != 0 ||
         tokwork_start(&hd->tokw, hd->tok, err, errlen) != 0)) {
        head_free(hd);
        return -1;
    }
    *out = hd;
    return 0;
}

void head_free(head *hd)
{
    if (!hd)
        return;
    /* A prompt still being tokenized keeps the tokenizer until exit. */
    if (tokwork_stop(hd->tokw) == 0)
        tok_free(hd->tok);
    free(hd);
}

int head_tokenizer_fd(const head *hd)
{
    return hd->tokw ? tokwork_fd(hd->tokw) : -1;
}

const tokenizer *head_tok(const head *hd)
{
    return hd->tok;
}

/* Requests that hold a place: started, not waiting in the queue. */
int head_active(const head *hd)
{
    int n = 0;
    for (int i = 0; i < hd->n_queue; i++)
        n += hd->queue[i]->state != JOB_QUEUED;
    return n;
}

int head_queued(const head *hd)
{
    return hd->n_queue - head_active(hd);
}

/* When the oldest request still queued has waited --queue-timeout. */
static double queue_deadline(const head *hd)
{
    for (int i = 0; i < hd->n_queue && hd->nd->o.queue_timeout_ms > 0; i++)
        if (hd->queue[i]->state == JOB_QUEUED)
            return hd->queue[i]->t_recv + hd->nd->o.queue_timeout_ms;
    return 1e300;
}

double head_deadline(const head *hd)
{
    double d = queue_deadline(hd);
    for (int i = 0; i < hd->n_queue; i++) {
        const job *j = hd->queue[i];
        if (j->wait.live && j->wait.deadline < d)
            d = j->wait.deadline;
    }
    for (int i = 0; i < hd->n_flights; i++)
        if (hd->flights[i].wait.deadline < d)
            d = hd->flights[i].wait.deadline;
    if (hd->set.live && hd->set.wait.deadline < d)
        d = hd->set.wait.deadline;
    if (hd->nd->head && head_health_deadline(hd) < d)
        d = head_health_deadline(hd);
    return d;
}

/* Prompt positions known before tokenizing (a text prompt's are not);
 * a quality request's context is its window's. */
static int known_prompt(const proto_request *req)
{
    const proto_generate_args *g = &req->generate;
    if (req->op == PROTO_OP_QUALITY)
        return req->quality.ctx;
    switch (g->input) {
    case PROTO_INPUT_TOKENS:
        return g->n_tokens;
    case PROTO_INPUT_SYNTHETIC:
        return g->synthetic_tokens;
    default:
        return 0;
    }
}

/* Refused before it queued: the reply, and the event that has
 * inferd_requests_total count it (outcome refused, its code). */
static void refuse(head *hd, const peer *from, proto_request *req, proto_code code, const char *msg)
{
    node_reply_error(hd->nd, from, req->id, code, "%s", msg);
    node_event(hd->nd, PROTO_EV_REFUSED, req->id, proto_code_name(code), NULL, "%s", msg);
    proto_request_free(req);
}

void head_enqueue(head *hd, const peer *from, proto_request *req)
{
    if (!hd->nd->head) {
        node_reply_error(hd->nd, from, req->id, PROTO_E_BUSY,
                         "this node holds layers %d:%d, not the head of the ring: send %s "
                         "to the stage whose layers start at 0",
                         hd->nd->o.first, hd->nd->o.last, proto_op_name(req->op));
        proto_request_free(req);
        return;
    }
    /* Places and queue counted together: requests that arrive at once are
     * all queued before any starts, and the bound must not depend on that. */
    char msg[PROTO_MESSAGE_MAX];
    if (hd->n_queue >= hd->nd->o.max_seqs + NODE_QUEUE_MAX) {
        snprintf(msg, sizeof msg,
                 "%d requests already running or queued on this node (--max-seqs %d, and %d "
                 "more queued); retry later",
                 hd->n_queue, hd->nd->o.max_seqs, NODE_QUEUE_MAX);
        refuse(hd, from, req, PROTO_E_BUSY, msg);
        return;
    }
    /* A broken ring refuses at once: waiting would only be waiting for
     * the same timeout again. */
    proto_error down;
    if (head_health_refuse(hd, &down)) {
        node_reply(hd->nd, from, proto_reply_error(req->id, &down));
        node_event(hd->nd, PROTO_EV_REFUSED, req->id, "ring_down", NULL, "%s", down.message);
        proto_request_free(req);
        return;
    }
    const proto_generate_args *g = &req->generate;
    /* A request whose context passes --max-ctx by what is known of it now
     * (a session's length may change until its turn) is refused now
     * rather than after waiting for its turn. */
    if (guard_ctx(hd->nd->o.max_ctx, g->max_tokens + known_prompt(req), msg, sizeof msg) != 0) {
        refuse(hd, from, req, PROTO_E_CTX_LIMIT, msg);
        return;
    }
    if (g->input == PROTO_INPUT_TOKENS) {
        for (int i = 0; i < g->n_tokens; i++) {
            if (g->tokens[i] >= hd->nd->cfg->vocab_size) {
                snprintf(msg, sizeof msg,
                         "tokens[%d] = %d is outside the model's vocabulary (0..%d)", i,
                         g->tokens[i], hd->nd->cfg->vocab_size - 1);
                refuse(hd, from, req, PROTO_E_BAD_TOKEN, msg);
                return;
            }
        }
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        node_reply_error(hd->nd, from, req->id, PROTO_E_INTERNAL, "out of memory queueing request");
        proto_request_free(req);
        return;
    }
    j->from = *from;
    j->req = *req;
    j->state = JOB_QUEUED;
    j->t_recv = clock_ms();
    j->pending0 = -1;
    hd->queue[hd->n_queue++] = j;
}

/* Counts the ids the request feeds: the session's pending token, then the
 * prompt. Only a text prompt is held as ids (encoded by the tokenizer's
 * thread, and small: it came in one frame); token ids stay in the request and
 * synthetic ones are made as they are fed (job_id), so that a long prompt
 * costs no memory before it is admitted. */
static int job_prompt(head *hd, job *j, proto_error *e)
{
    const proto_generate_args *g = &j->req.generate;
    int pending = j->pending0 >= 0;
    int n = 0;
    switch (g->input) {
    case PROTO_INPUT_PROMPT:
        n = j->n_text;
        if (n < 0)
            return proto_fail(e, PROTO_E_INTERNAL, "prompt", "out of memory encoding the prompt");
        /* A tokenizer larger than the model (--tokenizer) could name rows
         * the embedding table does not have. */
        for (int i = 0; i < n; i++)
            if (j->ids[i] >= hd->nd->cfg->vocab_size)
                return proto_fail(e, PROTO_E_BAD_TOKEN, "prompt",
                                  "the prompt encodes to id %d, outside the model's vocabulary "
                                  "(0..%d): use a tokenizer made for this model",
                                  j->ids[i], hd->nd->cfg->vocab_size - 1);
        break;
    case PROTO_INPUT_TOKENS:
        n = g->n_tokens;
        break;
    case PROTO_INPUT_SYNTHETIC:
        n = g->synthetic_tokens;
        break;
    }
    if (n + pending == 0)
        return proto_fail(e, PROTO_E_BAD_VALUE, "prompt",
                          "the prompt encodes to no tokens and the session has none pending: "
                          "nothing to continue from");
    if (j->req.op == PROTO_OP_QUALITY)
        return head_quality_prepare(hd, j, n, e);
    j->n_ids = n + pending;
    return 0;
}

static json_t *head_members_json(const head *hd)
{
    json_t *a = json_array();
    for (int i = 0; i < hd->nd->n_members; i++) {
        const member *m = &hd->nd->members[i];
        json_array_append_new(a, json_pack("{ss ss si si ss}", "name", m->name, "fingerprint",
                                           m->fingerprint, "first", m->first, "last", m->last,
                                           "next", m->next));
    }
    return a;
}

/* What the request's steps hold for logits (stage_admit counts it). */
static stage_eval job_eval(const job *j)
{
    if (j->req.op == PROTO_OP_QUALITY)
        return STAGE_QUALITY;
    if (j->req.op != PROTO_OP_EVAL && j->req.op != PROTO_OP_EMBED)
        return STAGE_EVAL_NONE;
    return j->req.eval_logits ? STAGE_EVAL_RAW : STAGE_EVAL;
}

/* The context the request may reach: what the admission rounds check. */
static int job_ctx(const job *j)
{
    if (j->q)
        return head_quality_ctx(j);
    return j->pos0 + j->n_ids + j->req.generate.max_tokens;
}

/* Positions one pass prefills: a quality request's window, else its ids. */
static int job_fed(const job *j)
{
    return j->q ? head_quality_ctx(j) : j->n_ids;
}

/* A quality request's test bits, for its caches; 0 for another request. */
static int job_quality_bits(const job *j)
{
    return j->q ? j->req.quality.kv_bits : 0;
}

/* Admission done everywhere: set up this stage and tell the others. */
static void job_begin(head *hd, job *j)
{
    const proto_generate_args *g = &j->req.generate;
    int pos0 = j->pos0;
    proto_error e;
    /* Admitted for the whole prompt at once: memory does not bound the
     * chunk, which stays what prefill_step says (and telemetry with it). */
    if (j->max_chunk >= job_fed(j))
        j->max_chunk = PROTO_PREFILL_STEP_MAX;
    if (stage_begin(hd->st, j->op, j->req.id, g->session, pos0, job_ctx(j), job_quality_bits(j), g,
                    j->seed, &e) != 0) {
        head_job_finish(hd, j, &e);
        return;
    }
    if (hd->nd->ring) {
        json_t *o = head_frame_json(hd);
        json_object_set_new(o, "req", json_string(j->req.id));
        json_object_set_new(o, "session", json_string(g->session));
        json_object_set_new(o, "pos", json_integer(pos0));
        json_object_set_new(o, "ctx", json_integer(job_ctx(j)));
        if (j->q)
            json_object_set_new(o, "quality_bits", json_integer(job_quality_bits(j)));
        json_object_set_new(o, "temperature", json_real(g->temperature));
        json_object_set_new(o, "top_p", json_real(g->top_p));
        /* The bits of the 64-bit seed, as JSON integers are signed. */
        json_object_set_new(o, "seed", json_integer((json_int_t)j->seed));
        json_object_set_new(o, "top_k", json_integer(g->top_k));
        json_object_set_new(o, "min_p", json_real(g->min_p));
        json_object_set_new(o, "repeat_penalty", json_real(g->repeat_penalty));
        json_object_set_new(o, "presence_penalty", json_real(g->presence_penalty));
        json_object_set_new(o, "frequency_penalty", json_real(g->frequency_penalty));
        if (g->n_bias)
            json_object_set_new(o, "logit_bias", proto_bias_json(g->bias, g->n_bias));
        if (g->has_logprobs)
            json_object_set_new(o, "logprobs", json_integer(g->logprobs));
        json_object_set_new(o, "stages", head_members_json(hd));
        head_send(hd, RING_START, j->op, o);
        json_decref(o);
    }
    proto_req_msg m;
    memset(&m, 0, sizeof m);
    snprintf(m.req, sizeof m.req, "%s", j->req.id);
    snprintf(m.session, sizeof m.session, "%s", g->session);
    m.input = g->input;
    snprintf(m.kind, sizeof m.kind, "%s", proto_op_name(j->req.op));
    /* A request that does not say who sent it came in on the control socket. */
    snprintf(m.source, sizeof m.source, "%s", g->source[0] ? g->source : "control");
    m.prompt_tokens = j->n_ids;
    m.max_tokens = g->max_tokens;
    tel_req(hd->nd->tel, &m);
    steplog_line(hd->nd->log, "REQ", "%s start session='%s' pos=%d prompt=%d max_tokens=%d",
                 j->req.id, g->session, pos0, j->n_ids, g->max_tokens);
    j->begun = 1;
    j->t_begin = clock_ms();
    j->state = JOB_RUN;
}

/* The ring operations of the requests running now, which a stage keeps;
 * it ends any other it still holds (PROTOCOL.md, prepare). */
static json_t *head_running_json(const head *hd)
{
    json_t *a = json_array();
    for (int i = 0; i < hd->n_queue; i++)
        if (hd->queue[i]->state == JOB_RUN)
            json_array_append_new(a, json_integer((json_int_t)hd->queue[i]->op));
    return a;
}

/* The prompt counted, the head's own admission, then the ring's. */
static void job_admit(head *hd, job *j)
{
    const proto_generate_args *g = &j->req.generate;
    int pos0 = j->pos0;
    j->state = JOB_PREPARE;
    proto_error e;
    if (job_prompt(hd, j, &e) != 0) {
        head_job_finish(hd, j, &e);
        return;
    }
    /* An embedding past the trained context would pool positions the
     * model never learned: refused, whatever --max-ctx allows. */
    if (j->req.op == PROTO_OP_EMBED && j->n_ids > hd->nd->cfg->seq_len) {
        head_job_fail(hd, j, PROTO_E_CTX_LIMIT,
                      "an embedding of %d tokens passes the model's context of %d", j->n_ids,
                      hd->nd->cfg->seq_len);
        return;
    }
    if (j->req.op == PROTO_OP_EMBED &&
        !(j->embed = calloc((size_t)hd->nd->cfg->dim, sizeof *j->embed))) {
        head_job_fail(hd, j, PROTO_E_INTERNAL, "out of memory for an embedding");
        return;
    }
    json_t *evicted = json_array();
    stage_admission a;
    int step = head_job_prefill_step(hd, j);
    int most = step == PROTO_PREFILL_AUTO ? PF_AUTO_MAX : step;
    int fed = job_fed(j);
    stage_admit(hd->st, g->session, pos0, job_ctx(j), fed < most ? fed : most, job_eval(j),
                job_quality_bits(j), evicted, &a);
    if (a.code != PROTO_OK) {
        json_decref(evicted);
        head_job_fail(hd, j, a.code, "%s", a.message);
        return;
    }
    j->max_chunk = a.chunk;
    if (!hd->nd->ring) {
        json_decref(evicted);
        job_begin(hd, j);
        return;
    }
    json_t *o = head_frame_json(hd);
    json_t *me = node_identity(hd->nd);
    json_object_set_new(me, "ok", json_true());
    json_object_set_new(o, "req", json_string(j->req.id));
    json_object_set_new(o, "session", json_string(g->session));
    json_object_set_new(o, "pos", json_integer(pos0));
    json_object_set_new(o, "ctx", json_integer(job_ctx(j)));
    json_object_set_new(o, "chunk", json_integer(j->max_chunk));
    if (job_eval(j) != STAGE_EVAL_NONE)
        json_object_set_new(o, "eval", json_true());
    if (j->q)
        json_object_set_new(o, "quality_bits", json_integer(job_quality_bits(j)));
    json_object_set_new(o, "drop", evicted);
    json_object_set_new(o, "running", head_running_json(hd));
    json_object_set_new(o, "stages", json_pack("[o]", me));
    head_send(hd, RING_PREPARE, j->op, o);
    json_decref(o);
    head_pending_arm(hd, &j->wait, RING_PREPARE, j->op, -1);
}

/* A text prompt goes to the tokenizer's thread, however long it takes
 * there: the job goes on when its ids are back (head_tick calls this
 * again). Other prompts need no tokenizer. The admission round waits
 * for the one in progress, if any. */
static void job_tokenize(head *hd, job *j, int round_free)
{
    const proto_generate_args *g = &j->req.generate;
    if (g->input == PROTO_INPUT_PROMPT && !j->tokenized) {
        if (!j->submitted) {
            /* BOS only at the very start of a context, as `inferd generate`. */
            int bos = j->pos0 == 0 && j->pending0 < 0;
            int flags = (bos ? TOK_ADD_BOS : 0) | (g->special ? TOK_PARSE_SPECIAL : 0);
            int rc = tokwork_submit(hd->tokw, j->op, g->prompt, g->prompt_len, flags);
            if (rc < 0) {
                head_job_fail(hd, j, PROTO_E_INTERNAL, "out of memory encoding the prompt");
                return;
            }
            j->submitted = rc == 0;
            return;
        }
        if (!tokwork_take(hd->tokw, j->op, &j->ids, &j->n_text))
            return;
        j->submitted = 0;
        j->tokenized = 1;
    }
    if (round_free)
        job_admit(hd, j);
}

/* 1 when a started request uses this session: a request on a session
 * waits for the one before it, which moves the session on. */
static int session_busy(const head *hd, const char *session)
{
    for (int i = 0; session[0] && i < hd->n_queue; i++) {
        const job *q = hd->queue[i];
        if (q->state != JOB_QUEUED && strcmp(q->req.generate.session, session) == 0)
            return 1;
    }
    return 0;
}

/* Starts a queued job: its ring operation, seed and session, then its prompt. */
static void job_start(head *hd, job *j)
{
    const proto_generate_args *g = &j->req.generate;
    j->op = ++hd->next_op;
    /* The seed travels to the tail; one the client did not give is
     * drawn here, so that the tail is told a definite value. */
    j->seed = g->has_seed ? g->seed : ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ j->op);
    if (g->session[0]) {
        int len = stage_session(hd->st, g->session, &j->pending0);
        j->pos0 = len > 0 ? len : 0;
    }
    j->state = JOB_TOKENIZE;
}

/* model_mismatch when a stage holds other weights or the layer ranges do
 * not chain from 0 to the last layer; names the stages at fault. */
static int ring_check(const head *hd, const member *ms, int n, const ring_stages *stages, char *msg,
                      size_t len)
{
    const char *mine = model_fingerprint(hd->nd->m);
    size_t used = 0;
    for (int i = 1; i < n; i++) {
        if (strcmp(ms[i].fingerprint, mine) == 0)
            continue;
        used += (size_t)snprintf(msg + used, used < len ? len - used : 0,
                                 "%sstage '%s' (layers %d:%d) holds model %s fingerprint %.12s",
                                 used ? "; " : "", ms[i].name, ms[i].first, ms[i].last,
                                 stages->v[i].model, ms[i].fingerprint);
    }
    if (used) {
        snprintf(msg + (used < len ? used : len - 1), used < len ? len - used : 1,
                 ", but the head '%s' holds %s fingerprint %.12s", hd->nd->o.name,
                 model_name(hd->nd->m), mine);
        return -1;
    }
    for (int i = 1; i < n; i++) {
        if (ms[i].first != ms[i - 1].last || ms[i].last <= ms[i].first) {
            snprintf(msg, len,
                     "incompatible layer ranges: stage '%s' (layers %d:%d) follows stage '%s' "
                     "(layers %d:%d); each stage must start where the one before it ends",
                     ms[i].name, ms[i].first, ms[i].last, ms[i - 1].name, ms[i - 1].first,
                     ms[i - 1].last);
            return -1;
        }
    }
    if (ms[n - 1].last != hd->nd->cfg->n_layers) {
        snprintf(msg, len,
                 "incompatible layer ranges: the ring ends at layer %d (stage '%s'), the model "
                 "has %d layers",
                 ms[n - 1].last, ms[n - 1].name, hd->nd->cfg->n_layers);
        return -1;
    }
    return 0;
}

/* Drops sessions here and, by a drop frame, on every other stage. */
static void drop_everywhere(head *hd, uint64_t op, const ring_ids *names)
{
    stage_drop_sessions(hd->st, names);
    json_t *list = json_array();
    for (int i = 0; i < names->n; i++)
        json_array_append_new(list, json_string(names->v[i]));
    json_t *d = json_pack("{so}", "sessions", list);
    head_send(hd, RING_DROP, op, d);
    json_decref(d);
}

static void prepare_done(head *hd, job *j, const ring_msg_prepare *p)
{
    j->wait.live = 0;
    member ms[PROTO_RING_MAX];
    int n = p->stages.n;
    for (int i = 0; i < n; i++)
        node_member(&ms[i], &p->stages.v[i]);
    if (n < 2) {
        head_job_fail(hd, j, PROTO_E_INTERNAL, "the ring returned %d stages", n);
        return;
    }
    /* Sessions some stage evicted must go everywhere, or the stages
     * would disagree about them later. */
    if (p->drop.n > 0)
        drop_everywhere(hd, j->op, &p->drop);
    char msg[PROTO_MESSAGE_MAX];
    if (ring_check(hd, ms, n, &p->stages, msg, sizeof msg) != 0) {
        head_job_fail(hd, j, PROTO_E_MODEL_MISMATCH, "%s", msg);
        return;
    }
    memcpy(hd->nd->members, ms, (size_t)n * sizeof *ms);
    hd->nd->n_members = n;
    snprintf(hd->nd->head_ep, sizeof hd->nd->head_ep, "%s", ms[n - 1].next);
    head_health_seen(hd);

    for (int i = 0; i < n; i++) {
        const ring_stage *s = &p->stages.v[i];
        if (s->chunk && s->chunk < j->max_chunk)
            j->max_chunk = s->chunk;
        if (s->ok)
            continue;
        proto_code c = s->code != PROTO_OK ? s->code : PROTO_E_INTERNAL;
        /* A stage that lost the session (it restarted) can never catch up:
         * the session goes everywhere, and the client starts it again. */
        const char *session = j->req.generate.session;
        int lost = c == PROTO_E_NOT_FOUND && session[0];
        if (lost) {
            char name[1][PROTO_ID_MAX + 1];
            snprintf(name[0], sizeof name[0], "%s", session);
            drop_everywhere(hd, j->op, &(ring_ids){1, name});
        }
        head_job_fail(hd, j, c, "%s%s", s->message[0] ? s->message : "a stage refused the request",
                      lost ? "; the session was dropped on every stage" : "");
        return;
    }
    job_begin(hd, j);
}

static int member_index(const head *hd, int first)
{
    for (int i = 0; i < hd->nd->n_members; i++)
        if (hd->nd->members[i].first == first)
            return i;
    return -1;
}

static void on_report(head *hd, const ring_frame *f)
{
    const ring_msg_report *r = &f->m->report;
    int idx = member_index(hd, r->first);
    pending *w = NULL;
    job *prep = head_job_by_op(hd, f->h.op);
    int fi = head_flight_find(hd, f->h.op, f->h.step);
    if (fi >= 0)
        w = &hd->flights[fi].wait;
    else if (prep && prep->wait.live)
        w = &prep->wait;
    else if (hd->set.live && hd->set.wait.op == f->h.op)
        w = &hd->set.wait;
    else
        w = head_health_wait(hd, f->h.op);
    if (!w || r->of != w->kind || f->h.step != w->step)
        return;
    head_pending_report(w, idx);
    /* A stage that refuses a ring round as such (a ring past the stage
     * limit) breaks the ring for every request, not one. */
    if (!r->ok && r->code == PROTO_E_RING_DOWN && w == head_health_wait(hd, f->h.op)) {
        head_health_refused(hd, r->name, r->message);
        return;
    }
    /* A stage that fails a set still passes it on with its verdict: only
     * a failed request step ends something here. */
    if (r->ok || w == &hd->set.wait)
        return;
    proto_code c = r->code != PROTO_OK ? r->code : PROTO_E_INTERNAL;
    const char *message = r->message[0] ? r->message : "a stage failed the step";
    if (fi >= 0) {
        flight fl;
        head_flight_take(hd, fi, &fl);
        head_flight_fail(hd, &fl, c, message);
    } else {
        head_job_fail(hd, prep, c, "%s", message);
    }
    if (c == PROTO_E_RING_DOWN)
        head_health_refused(hd, r->name, message);
}

void head_on_frame(head *hd, ring_frame *f)
{
    job *j;
    switch (f->h.kind) {
    case RING_PREPARE:
        j = head_job_by_op(hd, f->h.op);
        if (j && j->state == JOB_PREPARE)
            prepare_done(hd, j, &f->m->prepare);
        return;
    case RING_TOKEN:
    case RING_LOGITS:
        head_step_on_chunk(hd, f);
        return;
    case RING_TOKENS:
        head_step_on_batch(hd, f);
        return;
    case RING_SET_CHECK:
    case RING_SET:
    case RING_SET_UNDO:
        head_set_on_frame(hd, f);
        return;
    case RING_REPORT:
        on_report(hd, f);
        return;
    case RING_PROBE:
        head_health_on_probe(hd, f);
        return;
    default:
        /* Frames of operations that already ended (a late token after a
         * timeout or cancel) are expected here and mean nothing now. */
        return;
    }
}

static void check_deadlines(head *hd)
{
    double now = clock_ms();
    char who[PROTO_TEXT_MAX + 64];
    for (int i = hd->n_queue - 1; i >= 0; i--) {
        if (i >= hd->n_queue)
            continue;
        job *q = hd->queue[i];
        if (q->state == JOB_QUEUED && hd->nd->o.queue_timeout_ms > 0 &&
            now - q->t_recv >= hd->nd->o.queue_timeout_ms) {
            head_job_fail(
                hd, q, PROTO_E_BUSY,
                "waited %.1f s in the queue behind other requests (--queue-timeout %.1f s)",
                (now - q->t_recv) / 1000.0, hd->nd->o.queue_timeout_ms / 1000.0);
        } else if (q->state == JOB_PREPARE && q->wait.live && now >= q->wait.deadline) {
            char why[PROTO_MESSAGE_MAX];
            pending w = q->wait;
            head_silent_stage(hd, &w, who, sizeof who);
            snprintf(why, sizeof why, "%s did not answer the ring check within %.1f s", who,
                     hd->nd->o.step_timeout_ms / 1000.0);
            head_job_fail(hd, q, PROTO_E_STAGE_TIMEOUT, "%s", why);
            head_health_broken(hd, &w, why);
        }
    }
    head_job_check_clients(hd, now);
    head_step_check_deadlines(hd, now);
    head_set_check_deadline(hd, now);
}

/* 1 when no admission round is going around the ring. */
static int round_free(const head *hd)
{
    for (int i = 0; i < hd->n_queue; i++)
        if (hd->queue[i]->state == JOB_PREPARE)
            return 0;
    return 1;
}

/* 1 when job_tokenize has something to do for j now. The tokenizer's
 * thread wakes the loop when it has ids or becomes free. */
static int tokenize_ready(const head *hd, const job *j)
{
    int text = j->req.generate.input == PROTO_INPUT_PROMPT && !j->tokenized;
    if (text)
        return !j->submitted && !tokwork_busy(hd->tokw);
    return round_free(hd);
}

/* The queued jobs that can take a place now, in arrival order. */
static job *startable(const head *hd)
{
    if (head_active(hd) >= hd->nd->o.max_seqs)
        return NULL;
    for (int i = 0; i < hd->n_queue; i++) {
        job *j = hd->queue[i];
        if (j->state == JOB_QUEUED && !session_busy(hd, j->req.generate.session))
            return j;
    }
    return NULL;
}

void head_tick(head *hd)
{
    check_deadlines(hd);
    head_health_tick(hd, clock_ms());
    job *j;
    while ((j = startable(hd)) != NULL)
        job_start(hd, j);
    for (int i = 0; i < hd->n_queue; i++) {
        j = hd->queue[i];
        if (j->state != JOB_TOKENIZE)
            continue;
        job_tokenize(hd, j, round_free(hd));
        if (i < hd->n_queue && hd->queue[i] != j)
            i--; /* it ended: the next one moved into its place */
    }
    head_step_run(hd);
}

int head_busy(const head *hd)
{
    if (startable(hd))
        return 1;
    for (int i = 0; i < hd->n_queue; i++)
        if (hd->queue[i]->state == JOB_TOKENIZE && tokenize_ready(hd, hd->queue[i]))
            return 1;
    return head_step_ready(hd);
}

void head_client_gone(head *hd, client_tag conn)
{
    for (int i = hd->n_queue - 1; i >= 0; i--) {
        if (i >= hd->n_queue)
            continue;
        const client_tag *c = &hd->queue[i]->from.conn;
        if (c->fd == conn.fd && c->gen == conn.gen)
            head_job_fail(hd, hd->queue[i], PROTO_E_CANCELLED, "its client disconnected");
    }
}

void head_cancel(head *hd, const peer *from, const proto_request *req)
{
    for (int i = 0; i < hd->n_queue; i++) {
        if (strcmp(hd->queue[i]->req.id, req->target) != 0)
            continue;
        if (req->stalled)
            head_job_fail(hd, hd->queue[i], PROTO_E_STALLED,
                          "its client stopped reading (cancel '%s' from the HTTP server)", req->id);
        else
            head_job_fail(hd, hd->queue[i], PROTO_E_CANCELLED, "cancelled by request '%s'",
                          req->id);
        node_reply(hd->nd, from, proto_reply_ok(req->id, NULL));
        return;
    }
    node_reply_error(hd->nd, from, req->id, PROTO_E_NOT_FOUND,
                     "no request '%s' is running or queued on this node", req->target);
}

void head_drop(head *hd, const peer *from, const proto_request *req)
{
    for (int i = 0; i < hd->n_queue; i++) {
        const job *q = hd->queue[i];
        if (q->state != JOB_QUEUED && strcmp(q->req.generate.session, req->session) == 0) {
            node_reply_error(hd->nd, from, req->id, PROTO_E_BUSY,
                             "session '%s' is in use by request '%s'", req->session, q->req.id);
            return;
        }
    }
    if (!stage_drop_session(hd->st, req->session)) {
        node_reply_error(hd->nd, from, req->id, PROTO_E_NOT_FOUND, "no session '%s' on this node",
                         req->session);
        return;
    }
    steplog_line(hd->nd->log, "SESSION", "dropped '%s' by request '%s'", req->session, req->id);
    if (hd->nd->ring && hd->nd->head) {
        json_t *o = json_pack("{s[s]}", "sessions", req->session);
        head_send(hd, RING_DROP, ++hd->next_op, o);
        json_decref(o);
    }
    node_reply(hd->nd, from, proto_reply_ok(req->id, NULL));
}

void head_shutdown(head *hd)
{
    hd->n_flights = 0;
    while (hd->n_queue > 0)
        head_job_fail(hd, hd->queue[hd->n_queue - 1], PROTO_E_SHUTDOWN,
                      "the node is shutting down");
    head_set_shutdown(hd);
}

void head_ring_health(const head *hd, proto_status *s)
{
    if (!hd->nd->head || !hd->nd->ring)
        return;
    const ring_health *h = &hd->health;
    s->ring_health.known = 1;
    s->ring_health.state = h->state;
    snprintf(s->ring_health.stage, sizeof s->ring_health.stage, "%s", h->stage);
    snprintf(s->ring_health.message, sizeof s->ring_health.message, "%s", h->why);
}

unsigned head_health_changes(const head *hd)
{
    return hd->health.changes;
}
