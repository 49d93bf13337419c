/* head.c: generate and eval requests on the head stage (see node.h,
 * PROTOCOL.md "Stage-to-stage frames"); `set` goes around the ring in
 * head_set.c.
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

#include "engine/sys/clock.h"
#include "head.h"
#include "head_ring.h"
#include "head_set.h"
#include "node.h"
#include "stage.h"

static int job_index(const node *nd, const job *j)
{
    for (int i = 0; i < nd->n_queue; i++)
        if (nd->queue[i] == j)
            return i;
    return -1;
}

static job *job_by_op(const node *nd, uint64_t op)
{
    for (int i = 0; i < nd->n_queue; i++)
        if (nd->queue[i]->state != JOB_QUEUED && nd->queue[i]->op == op)
            return nd->queue[i];
    return NULL;
}

/* Requests that hold a place: started, not waiting in the queue. */
int head_active(const node *nd)
{
    int n = 0;
    for (int i = 0; i < nd->n_queue; i++)
        n += nd->queue[i]->state != JOB_QUEUED;
    return n;
}

int head_queued(const node *nd)
{
    return nd->n_queue - head_active(nd);
}

/* Steps out at once: one per stage keeps every stage busy (each computes
 * one while the others compute the rest); more would only queue frames. */
static int head_depth(const node *nd)
{
    if (!nd->ring)
        return 1;
    int d = nd->o.pipeline_depth > 0 ? nd->o.pipeline_depth : nd->n_members;
    return d < 1 ? 1 : d > NODE_DEPTH_MAX ? NODE_DEPTH_MAX : d;
}

/* When the oldest request still queued has waited --queue-timeout. */
static double queue_deadline(const node *nd)
{
    for (int i = 0; i < nd->n_queue && nd->o.queue_timeout_ms > 0; i++)
        if (nd->queue[i]->state == JOB_QUEUED)
            return nd->queue[i]->t_recv + nd->o.queue_timeout_ms;
    return 1e300;
}

double head_deadline(const node *nd)
{
    double d = queue_deadline(nd);
    for (int i = 0; i < nd->n_queue; i++) {
        const job *j = nd->queue[i];
        if (j->wait.live && j->wait.deadline < d)
            d = j->wait.deadline;
    }
    for (int i = 0; i < nd->n_flights; i++)
        if (nd->flights[i].wait.deadline < d)
            d = nd->flights[i].wait.deadline;
    if (nd->set.live && nd->set.wait.deadline < d)
        d = nd->set.wait.deadline;
    return d;
}

/* ---- finishing -------------------------------------------------------- */

static proto_event_kind event_of(proto_code code)
{
    switch (code) {
    case PROTO_E_KV_OOM:
    case PROTO_E_CTX_LIMIT:
    case PROTO_E_BAD_TOKEN:
    case PROTO_E_BAD_VALUE:
    case PROTO_E_BUSY:
    case PROTO_E_NOT_FOUND:
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

static void job_stats(node *nd, const job *j, proto_stats *s)
{
    const stage_req *c = j->state == JOB_RUN ? stage_find(nd, j->op) : NULL;
    double now = clock_ms();
    memset(s, 0, sizeof *s);
    s->prompt_tokens = j->fed;
    s->gen_tokens = j->generated;
    s->ttft_ms = j->t_first > 0 ? j->t_first - j->t_recv : NAN;
    s->prefill_ms = j->t_prefill_end > 0 ? j->t_prefill_end - j->t_begin : NAN;
    s->prefill_tps = per_second(j->fed, s->prefill_ms);
    s->decode_tps = per_second(j->generated - 1, now - j->t_first);
    s->e2e_ms = now - j->t_recv;
    s->ctx = c ? kv_len(c->kv) : 0;
}

static void job_free(job *j)
{
    proto_request_free(&j->req);
    free(j->ids);
    free(j->chunk);
    free(j->logits);
    free(j);
}

static void queue_remove(node *nd, int i)
{
    memmove(&nd->queue[i], &nd->queue[i + 1], (size_t)(nd->n_queue - i - 1) * sizeof *nd->queue);
    nd->n_queue--;
}

/* Ends a job with its final reply: ok when e is NULL. Its steps still
 * out on the ring come back to nobody and are dropped. */
static void job_finish(node *nd, job *j, const proto_error *e)
{
    proto_stats stats;
    job_stats(nd, j, &stats);
    /* Failures carry the stats too: what was done (an HTTP client's usage). */
    json_t *res = json_pack("{so}", "stats", proto_stats_json(&stats));
    node_reply(nd, &j->from,
               e ? proto_reply_error_with(j->req.id, e, res) : proto_reply_ok(j->req.id, res));
    json_decref(res);
    if (e && e->code != PROTO_E_CANCELLED)
        node_event(nd, event_of(e->code), j->req.id, proto_code_name(e->code), NULL, "%s",
                   e->message);
    stage_req *c = j->state == JOB_RUN ? stage_find(nd, j->op) : NULL;
    if (c && nd->ring) {
        json_t *o = json_pack("{ss sb}", "req", j->req.id, "ok", e == NULL);
        head_send(nd, RING_END, j->op, o);
        json_decref(o);
    }
    if (c) {
        /* The last sampled token was not fed (unless the request ended on
         * BOS): the session's next request starts with it. */
        int pending = e ? j->pending0 : (j->generated > 0 ? j->last_token : -1);
        stage_end(nd, c, e == NULL, pending);
    }
    if (j->begun) {
        proto_req_msg m;
        memset(&m, 0, sizeof m);
        snprintf(m.req, sizeof m.req, "%s", j->req.id);
        snprintf(m.session, sizeof m.session, "%s", j->req.generate.session);
        m.end = 1;
        m.ok = e == NULL;
        m.stats = stats;
        if (e) {
            snprintf(m.code, sizeof m.code, "%s", proto_code_name(e->code));
            snprintf(m.message, sizeof m.message, "%s", e->message);
        }
        tel_req(nd->tel, &m);
    }
    steplog_line(nd->log, "REQ",
                 "%s end %s%s%s prompt=%d generated=%d ttft=%.1fms prefill_tok_s=%.1f "
                 "decode_tok_s=%.1f e2e=%.1fms",
                 j->req.id, e ? proto_code_name(e->code) : "ok", e ? ": " : "", e ? e->message : "",
                 stats.prompt_tokens, stats.gen_tokens, stats.ttft_ms, stats.prefill_tps,
                 stats.decode_tps, stats.e2e_ms);
    if (j->submitted)
        tokwork_cancel(nd->tokw, j->op);
    queue_remove(nd, job_index(nd, j));
    job_free(j);
}

static void job_fail(node *nd, job *j, proto_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void job_fail(node *nd, job *j, proto_code code, const char *fmt, ...)
{
    proto_error e = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    job_finish(nd, j, &e);
}

/* ---- accepting -------------------------------------------------------- */

/* Prompt positions known before tokenizing (a text prompt's are not). */
static int known_prompt(const proto_generate_args *g)
{
    switch (g->input) {
    case PROTO_INPUT_TOKENS:
        return g->n_tokens;
    case PROTO_INPUT_SYNTHETIC:
        return g->synthetic_tokens;
    default:
        return 0;
    }
}

void head_enqueue(node *nd, const peer *from, proto_request *req)
{
    if (!nd->head) {
        node_reply_error(nd, from, req->id, PROTO_E_BUSY,
                         "this node holds layers %d:%d, not the head of the ring: send %s "
                         "to the stage whose layers start at 0",
                         fwd_first(nd->fwd), fwd_last(nd->fwd), proto_op_name(req->op));
        proto_request_free(req);
        return;
    }
    /* Places and queue counted together: requests that arrive at once are
     * all queued before any starts, and the bound must not depend on that. */
    if (nd->n_queue >= nd->max_seqs + NODE_QUEUE_MAX) {
        node_reply_error(nd, from, req->id, PROTO_E_BUSY,
                         "%d requests already running or queued on this node (--max-seqs %d, "
                         "and %d more queued); retry later",
                         nd->n_queue, nd->max_seqs, NODE_QUEUE_MAX);
        proto_request_free(req);
        return;
    }
    const proto_generate_args *g = &req->generate;
    /* A request whose context passes --max-ctx by what is known of it now
     * (a session's length may change until its turn) is refused now
     * rather than after waiting for its turn. */
    char msg[PROTO_MESSAGE_MAX];
    if (guard_ctx(nd->o.max_ctx, g->max_tokens + known_prompt(g), msg, sizeof msg) != 0) {
        node_reply_error(nd, from, req->id, PROTO_E_CTX_LIMIT, "%s", msg);
        proto_request_free(req);
        return;
    }
    if (g->input == PROTO_INPUT_TOKENS) {
        for (int i = 0; i < g->n_tokens; i++) {
            if (g->tokens[i] >= nd->cfg->vocab_size) {
                node_reply_error(nd, from, req->id, PROTO_E_BAD_TOKEN,
                                 "tokens[%d] = %d is outside the model's vocabulary (0..%d)", i,
                                 g->tokens[i], nd->cfg->vocab_size - 1);
                proto_request_free(req);
                return;
            }
        }
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        node_reply_error(nd, from, req->id, PROTO_E_INTERNAL, "out of memory queueing request");
        proto_request_free(req);
        return;
    }
    j->from = *from;
    j->req = *req;
    j->state = JOB_QUEUED;
    j->t_recv = clock_ms();
    j->pending0 = -1;
    nd->queue[nd->n_queue++] = j;
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

/* Counts the ids the request feeds: the session's pending token, then the
 * prompt. Only a text prompt is held as ids (encoded by the tokenizer's
 * thread, and small: it came in one frame); token ids stay in the request and
 * synthetic ones are made as they are fed (job_id), so that a long prompt
 * costs no memory before it is admitted. */
static int job_prompt(node *nd, job *j, proto_error *e)
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
            if (j->ids[i] >= nd->cfg->vocab_size)
                return proto_fail(e, PROTO_E_BAD_TOKEN, "prompt",
                                  "the prompt encodes to id %d, outside the model's vocabulary "
                                  "(0..%d): use a tokenizer made for this model",
                                  j->ids[i], nd->cfg->vocab_size - 1);
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
    j->n_ids = n + pending;
    return 0;
}

/* The i-th id the request feeds. */
static int job_id(const node *nd, const job *j, int i)
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
    int vocab = tok_vocab_size(nd->tok) < nd->cfg->vocab_size ? tok_vocab_size(nd->tok)
                                                              : nd->cfg->vocab_size;
    return synthetic_id(j->pos0 + (j->pending0 >= 0) + i, vocab);
}

static json_t *head_members_json(const node *nd)
{
    json_t *a = json_array();
    for (int i = 0; i < nd->n_members; i++) {
        const member *m = &nd->members[i];
        json_array_append_new(a, json_pack("{ss ss si si ss}", "name", m->name, "fingerprint",
                                           m->fingerprint, "first", m->first, "last", m->last,
                                           "next", m->next));
    }
    return a;
}

/* What the request's steps hold for logits (stage_admit counts it). */
static stage_eval job_eval(const job *j)
{
    if (j->req.op != PROTO_OP_EVAL)
        return STAGE_EVAL_NONE;
    return j->req.eval_logits ? STAGE_EVAL_RAW : STAGE_EVAL;
}

/* The context the request may reach: what the admission rounds check. */
static int job_ctx(const job *j)
{
    return j->pos0 + j->n_ids + j->req.generate.max_tokens;
}

/* Admission done everywhere: set up this stage and tell the others. */
static void job_begin(node *nd, job *j)
{
    const proto_generate_args *g = &j->req.generate;
    int pos0 = j->pos0;
    proto_error e;
    /* Admitted for the whole prompt at once: memory does not bound the
     * chunk, which stays what prefill_step says (and telemetry with it). */
    if (j->max_chunk >= j->n_ids)
        j->max_chunk = PROTO_PREFILL_STEP_MAX;
    if (stage_begin(nd, j->op, j->req.id, g->session, pos0, job_ctx(j), g, j->seed, &e) != 0) {
        job_finish(nd, j, &e);
        return;
    }
    if (nd->ring) {
        json_t *o = head_frame_json(nd);
        json_object_set_new(o, "req", json_string(j->req.id));
        json_object_set_new(o, "session", json_string(g->session));
        json_object_set_new(o, "pos", json_integer(pos0));
        json_object_set_new(o, "ctx", json_integer(job_ctx(j)));
        json_object_set_new(o, "temperature", json_real(g->temperature));
        json_object_set_new(o, "top_p", json_real(g->top_p));
        /* The bits of the 64-bit seed, as JSON integers are signed. */
        json_object_set_new(o, "seed", json_integer((json_int_t)j->seed));
        json_object_set_new(o, "stages", head_members_json(nd));
        head_send(nd, RING_START, j->op, o);
        json_decref(o);
    }
    proto_req_msg m;
    memset(&m, 0, sizeof m);
    snprintf(m.req, sizeof m.req, "%s", j->req.id);
    snprintf(m.session, sizeof m.session, "%s", g->session);
    m.input = g->input;
    /* A request that does not say who sent it came in on the control socket. */
    snprintf(m.source, sizeof m.source, "%s", g->source[0] ? g->source : "control");
    m.prompt_tokens = j->n_ids;
    m.max_tokens = g->max_tokens;
    tel_req(nd->tel, &m);
    steplog_line(nd->log, "REQ", "%s start session='%s' pos=%d prompt=%d max_tokens=%d", j->req.id,
                 g->session, pos0, j->n_ids, g->max_tokens);
    j->begun = 1;
    j->t_begin = clock_ms();
    j->state = JOB_RUN;
}

/* The ring operations of the requests running now, which a stage keeps;
 * it ends any other it still holds (PROTOCOL.md, prepare). */
static json_t *head_running_json(const node *nd)
{
    json_t *a = json_array();
    for (int i = 0; i < nd->n_queue; i++)
        if (nd->queue[i]->state == JOB_RUN)
            json_array_append_new(a, json_integer((json_int_t)nd->queue[i]->op));
    return a;
}

/* The prompt counted, the head's own admission, then the ring's. */
static void job_admit(node *nd, job *j)
{
    const proto_generate_args *g = &j->req.generate;
    int pos0 = j->pos0;
    j->state = JOB_PREPARE;
    proto_error e;
    if (job_prompt(nd, j, &e) != 0) {
        job_finish(nd, j, &e);
        return;
    }
    json_t *evicted = json_array();
    stage_admission a;
    int most = nd->prefill_step == PROTO_PREFILL_AUTO ? PF_AUTO_MAX : nd->prefill_step;
    stage_admit(nd, g->session, pos0, job_ctx(j), j->n_ids < most ? j->n_ids : most, job_eval(j),
                evicted, &a);
    if (a.code != PROTO_OK) {
        json_decref(evicted);
        job_fail(nd, j, a.code, "%s", a.message);
        return;
    }
    j->max_chunk = a.chunk;
    if (!nd->ring) {
        json_decref(evicted);
        job_begin(nd, j);
        return;
    }
    json_t *o = head_frame_json(nd);
    json_t *me = node_identity(nd);
    json_object_set_new(me, "ok", json_true());
    json_object_set_new(o, "req", json_string(j->req.id));
    json_object_set_new(o, "session", json_string(g->session));
    json_object_set_new(o, "pos", json_integer(pos0));
    json_object_set_new(o, "ctx", json_integer(job_ctx(j)));
    json_object_set_new(o, "chunk", json_integer(j->max_chunk));
    if (job_eval(j) != STAGE_EVAL_NONE)
        json_object_set_new(o, "eval", json_true());
    json_object_set_new(o, "drop", evicted);
    json_object_set_new(o, "running", head_running_json(nd));
    json_object_set_new(o, "stages", json_pack("[o]", me));
    head_send(nd, RING_PREPARE, j->op, o);
    json_decref(o);
    head_pending_arm(nd, &j->wait, RING_PREPARE, j->op, -1);
}

/* A text prompt goes to the tokenizer's thread, however long it takes
 * there: the job goes on when its ids are back (head_tick calls this
 * again). Other prompts need no tokenizer. The admission round waits
 * for the one in progress, if any. */
static void job_tokenize(node *nd, job *j, int round_free)
{
    const proto_generate_args *g = &j->req.generate;
    if (g->input == PROTO_INPUT_PROMPT && !j->tokenized) {
        if (!j->submitted) {
            /* BOS only at the very start of a context, as `inferd generate`. */
            int bos = j->pos0 == 0 && j->pending0 < 0;
            int flags = (bos ? TOK_ADD_BOS : 0) | (g->special ? TOK_PARSE_SPECIAL : 0);
            int rc = tokwork_submit(nd->tokw, j->op, g->prompt, g->prompt_len, flags);
            if (rc < 0) {
                job_fail(nd, j, PROTO_E_INTERNAL, "out of memory encoding the prompt");
                return;
            }
            j->submitted = rc == 0;
            return;
        }
        if (!tokwork_take(nd->tokw, j->op, &j->ids, &j->n_text))
            return;
        j->submitted = 0;
        j->tokenized = 1;
    }
    if (round_free)
        job_admit(nd, j);
}

/* 1 when a started request uses this session: a request on a session
 * waits for the one before it, which moves the session on. */
static int session_busy(const node *nd, const char *session)
{
    for (int i = 0; session[0] && i < nd->n_queue; i++) {
        const job *q = nd->queue[i];
        if (q->state != JOB_QUEUED && strcmp(q->req.generate.session, session) == 0)
            return 1;
    }
    return 0;
}

/* Starts a queued job: its ring operation, seed and session, then its prompt. */
static void job_start(node *nd, job *j)
{
    const proto_generate_args *g = &j->req.generate;
    j->op = ++nd->next_op;
    /* The seed travels to the tail; one the client did not give is
     * drawn here, so that the tail is told a definite value. */
    j->seed = g->has_seed ? g->seed : ((uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ j->op);
    if (g->session[0]) {
        int len = sess_len(nd->sessions, g->session);
        j->pos0 = len > 0 ? len : 0;
        j->pending0 = sess_pending(nd->sessions, g->session);
    }
    j->state = JOB_TOKENIZE;
}

/* ---- the admission round coming back ---------------------------------- */

static int member_from_json(const json_t *s, member *m)
{
    const char *name = json_string_value(json_object_get(s, "name"));
    const char *fp = json_string_value(json_object_get(s, "fingerprint"));
    const char *next = json_string_value(json_object_get(s, "next"));
    const json_t *first = json_object_get(s, "first"), *last = json_object_get(s, "last");
    if (!name || !fp || !json_is_integer(first) || !json_is_integer(last))
        return -1;
    snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(m->fingerprint, sizeof m->fingerprint, "%s", fp);
    snprintf(m->next, sizeof m->next, "%s", next ? next : "");
    m->first = (int)json_integer_value(first);
    m->last = (int)json_integer_value(last);
    return 0;
}

/* model_mismatch when a stage holds other weights or the layer ranges do
 * not chain from 0 to the last layer; names the stages at fault. */
static int ring_check(const node *nd, const member *ms, int n, const json_t *stages, char *msg,
                      size_t len)
{
    const char *mine = model_fingerprint(nd->m);
    size_t used = 0;
    for (int i = 1; i < n; i++) {
        if (strcmp(ms[i].fingerprint, mine) == 0)
            continue;
        const char *model =
            json_string_value(json_object_get(json_array_get(stages, (size_t)i), "model"));
        used += (size_t)snprintf(msg + used, used < len ? len - used : 0,
                                 "%sstage '%s' (layers %d:%d) holds model %s fingerprint %.12s",
                                 used ? "; " : "", ms[i].name, ms[i].first, ms[i].last,
                                 model ? model : "?", ms[i].fingerprint);
    }
    if (used) {
        snprintf(msg + (used < len ? used : len - 1), used < len ? len - used : 1,
                 ", but the head '%s' holds %s fingerprint %.12s", nd->o.name, model_name(nd->m),
                 mine);
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
    if (ms[n - 1].last != nd->cfg->n_layers) {
        snprintf(msg, len,
                 "incompatible layer ranges: the ring ends at layer %d (stage '%s'), the model "
                 "has %d layers",
                 ms[n - 1].last, ms[n - 1].name, nd->cfg->n_layers);
        return -1;
    }
    return 0;
}

static void prepare_done(node *nd, job *j, const json_t *o)
{
    j->wait.live = 0;
    const json_t *stages = json_object_get(o, "stages");
    member ms[PROTO_RING_MAX];
    int n = 0;
    size_t i;
    const json_t *s;
    json_array_foreach(stages, i, s)
    {
        if (n == PROTO_RING_MAX || member_from_json(s, &ms[n]) != 0) {
            job_fail(nd, j, PROTO_E_INTERNAL, "the ring returned a malformed stage list");
            return;
        }
        n++;
    }
    if (n < 2) {
        job_fail(nd, j, PROTO_E_INTERNAL, "the ring returned %d stages", n);
        return;
    }
    /* Sessions some stage evicted must go everywhere, or the stages
     * would disagree about them later. */
    const json_t *drop = json_object_get(o, "drop");
    if (json_array_size(drop) > 0) {
        stage_drop_sessions(nd, drop);
        json_t *d = json_pack("{sO}", "sessions", drop);
        head_send(nd, RING_DROP, j->op, d);
        json_decref(d);
    }
    char msg[PROTO_MESSAGE_MAX];
    if (ring_check(nd, ms, n, stages, msg, sizeof msg) != 0) {
        job_fail(nd, j, PROTO_E_MODEL_MISMATCH, "%s", msg);
        return;
    }
    memcpy(nd->members, ms, (size_t)n * sizeof *ms);
    nd->n_members = n;
    snprintf(nd->head_ep, sizeof nd->head_ep, "%s", ms[n - 1].next);

    json_array_foreach(stages, i, s)
    {
        const json_t *chunk = json_object_get(s, "chunk");
        if (chunk && json_integer_value(chunk) < j->max_chunk)
            j->max_chunk = (int)json_integer_value(chunk);
        if (json_is_true(json_object_get(s, "ok")))
            continue;
        const char *code = json_string_value(json_object_get(s, "code"));
        const char *message = json_string_value(json_object_get(s, "message"));
        proto_code c = code ? proto_code_parse(code) : PROTO_E_INTERNAL;
        if (c == PROTO_CODE_COUNT)
            c = PROTO_E_INTERNAL;
        /* A stage that lost the session (it restarted) can never catch up:
         * the session goes everywhere, and the client starts it again. */
        const char *session = j->req.generate.session;
        int lost = c == PROTO_E_NOT_FOUND && session[0];
        if (lost) {
            sess_drop(nd->sessions, session);
            json_t *d = json_pack("{s[s]}", "sessions", session);
            head_send(nd, RING_DROP, j->op, d);
            json_decref(d);
        }
        job_fail(nd, j, c, "%s%s", message ? message : "a stage refused the request",
                 lost ? "; the session was dropped on every stage" : "");
        return;
    }
    job_begin(nd, j);
}

/* ---- steps ------------------------------------------------------------ */

/* The chunk in effect for a prefill step at depth pos: the setting, but
 * no more than every stage's memory admitted for the request. */
static int head_chunk(const node *nd, const job *j, int pos)
{
    if (nd->prefill_step != PROTO_PREFILL_AUTO)
        return nd->prefill_step < j->max_chunk ? nd->prefill_step : j->max_chunk;
    return pf_choose(&nd->pf, pos, nd->o.step_target_ms,
                     PF_AUTO_MAX < j->max_chunk ? PF_AUTO_MAX : j->max_chunk);
}

static void emit_token(node *nd, job *j, int token)
{
    int prev = j->generated > 0 ? j->last_token : job_id(nd, j, j->n_ids - 1);
    char buf[TOK_DECODE_BUF];
    const char *text = tok_decode(nd->tok, prev, token, buf);
    node_reply(nd, &j->from, proto_reply_token(j->req.id, token, text));
}

/* A token sampled for a request: by its prompt's last chunk, or by a
 * decode position. */
static void token_done(node *nd, job *j, int token)
{
    if (j->generated == 0)
        j->t_first = clock_ms();
    /* The model's end of text (tok_end), as in `inferd generate`. The
     * token before it was fed by this very step: nothing is pending. */
    if (token == tok_end(nd->tok)) {
        j->last_token = -1;
        job_finish(nd, j, NULL);
        return;
    }
    emit_token(nd, j, token);
    j->generated++;
    j->last_token = token;
    if (j->generated == j->req.generate.max_tokens)
        job_finish(nd, j, NULL);
}

/* A prefill chunk of n positions from pos is done (token -1: it sampled
 * none); model_ms is what the stages spent on it, for prefill_step auto. */
static void chunk_done(node *nd, job *j, int n, int pos, double model_ms, int token)
{
    pf_observe(&nd->pf, n, pos, model_ms);
    j->fed += n;
    if (j->fed == j->n_ids)
        j->t_prefill_end = clock_ms();
    if (token >= 0)
        token_done(nd, j, token);
    else if (j->fed == j->n_ids && j->req.generate.max_tokens == 0)
        job_finish(nd, j, NULL);
}

/* One eval chunk's results to the client: every position's token, most
 * likely next token and its log-probability, and the logits themselves as
 * a second frame when the client asked for them. The chunk is the next
 * one not yet done (j->fed). Returns -1 after failing the job. */
static int eval_reply(node *nd, job *j, int pos, int n, const float *logits)
{
    int vocab = nd->cfg->vocab_size;
    proto_eval_row *rows = malloc((size_t)n * sizeof *rows);
    if (!rows) {
        job_fail(nd, j, PROTO_E_INTERNAL, "out of memory for %d eval rows", n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        rows[i].token = job_id(nd, j, j->fed + i);
        sampler_top1(logits + (size_t)i * vocab, vocab, &rows[i].top1, &rows[i].logprob);
    }
    int raw = j->req.eval_logits;
    node_reply_with(nd, &j->from, proto_reply_eval(j->req.id, pos, rows, n, raw ? vocab : 0),
                    raw ? logits : NULL, (size_t)n * (size_t)vocab * sizeof *logits);
    free(rows);
    return 0;
}

/* The job's buffer for one chunk of logits (admission counted it). */
static float *eval_buffer(node *nd, job *j, int n)
{
    size_t want = (size_t)n * (size_t)nd->cfg->vocab_size;
    if (want > j->logits_cap) {
        /* The old rows are never read again: no realloc copy. */
        free(j->logits);
        j->logits_cap = 0;
        if (!(j->logits = malloc(want * sizeof *j->logits))) {
            job_fail(nd, j, PROTO_E_INTERNAL, "out of memory for the logits of %d positions", n);
            return NULL;
        }
        j->logits_cap = want;
    }
    return j->logits;
}

/* The ids of the job's next prefill chunk of n, into j->chunk. */
static int chunk_ids(node *nd, job *j, int n)
{
    if (n > j->chunk_cap) {
        int *grown = realloc(j->chunk, (size_t)n * sizeof *grown);
        if (!grown) {
            job_fail(nd, j, PROTO_E_INTERNAL, "out of memory for a chunk of %d ids", n);
            return -1;
        }
        j->chunk = grown;
        j->chunk_cap = n;
    }
    for (int i = 0; i < n; i++)
        j->chunk[i] = job_id(nd, j, j->sent + i);
    return 0;
}

/* A step out on the ring, waited for until --step-timeout. */
static flight *flight_add(node *nd, int batch, uint64_t op, int64_t step)
{
    flight *f = &nd->flights[nd->n_flights++];
    memset(f, 0, sizeof *f);
    f->batch = batch;
    head_pending_arm(nd, &f->wait, batch ? RING_BATCH : RING_HIDDEN, op, step);
    return f;
}

static int flight_find(const node *nd, uint64_t op, int64_t step)
{
    for (int i = 0; i < nd->n_flights; i++)
        if (nd->flights[i].wait.op == op && nd->flights[i].wait.step == step)
            return i;
    return -1;
}

/* Takes flights[i] off the list into *out. */
static void flight_take(node *nd, int i, flight *out)
{
    *out = nd->flights[i];
    memmove(&nd->flights[i], &nd->flights[i + 1],
            (size_t)(nd->n_flights - i - 1) * sizeof *nd->flights);
    nd->n_flights--;
}

/* The next prefill chunk of j: computed here, then on a single node done
 * at once, on a ring sent on. */
static void prefill_step(node *nd, job *j)
{
    double t0 = clock_ms();
    stage_req *c = stage_find(nd, j->op);
    int remaining = j->n_ids - j->sent;
    int pos = kv_len(c->kv);
    int chunk = head_chunk(nd, j, pos);
    int n = remaining < chunk ? remaining : chunk;
    if (chunk_ids(nd, j, n) != 0)
        return;
    int sample = n == remaining && j->req.generate.max_tokens > 0;
    int eval = j->req.op == PROTO_OP_EVAL; /* prefill steps only: max_tokens is 0 */
    int64_t step = j->step++;
    j->sent += n;
    fwd_stats st;
    proto_error e;
    stage_step p = {.t0 = t0, .step = step, .seqs = 1, .n = n, .pos = pos, .chunk = chunk};
    if (!nd->ring) {
        float *logits = eval ? eval_buffer(nd, j, n) : sample ? nd->logits : NULL;
        if (eval && !logits)
            return;
        int rc = eval ? stage_forward_logits(nd, c, j->chunk, NULL, n, logits, &st, &e)
                      : stage_forward(nd, c, j->chunk, NULL, n, NULL, logits, &st, &e);
        if (rc != 0) {
            job_finish(nd, j, &e);
            return;
        }
        stage_publish(nd, c, &p, &st);
        if (eval && eval_reply(nd, j, pos, n, logits) != 0)
            return;
        chunk_done(nd, j, n, pos, st.model_ms, sample ? sampler_sample(c->smp, logits) : -1);
        return;
    }
    ring_hdr h = {.kind = RING_HIDDEN,
                  .op = j->op,
                  .step = step,
                  .pos = pos,
                  .n = n,
                  .dim = nd->cfg->dim,
                  .token = -1,
                  .chunk = chunk,
                  .flags = (sample ? RING_F_SAMPLE : 0u) | (eval ? RING_F_LOGITS : 0u)};
    zmq_msg_t msg;
    float *x_out = ring_hidden_init(&msg, &h);
    if (!x_out) {
        job_fail(nd, j, PROTO_E_INTERNAL, "out of memory for step %lld's hidden states",
                 (long long)step);
        return;
    }
    if (stage_forward(nd, c, j->chunk, NULL, n, x_out, NULL, &st, &e) != 0) {
        zmq_msg_close(&msg);
        job_finish(nd, j, &e);
        return;
    }
    char err[256];
    if (ring_send_msg(nd->ring, &msg, err, sizeof err) != 0) {
        job_fail(nd, j, PROTO_E_STAGE_TIMEOUT, "step %lld: the next stage does not take frames: %s",
                 (long long)step, err);
        return;
    }
    stage_publish(nd, c, &p, &st);
    flight *f = flight_add(nd, 0, j->op, step);
    f->pos = pos;
    f->n = n;
    f->head_ms = st.model_ms;
    j->in_flight++;
}

/* Fails every job of a batch that could not go out. */
static void batch_fail(node *nd, job *const *js, int b, const proto_error *e)
{
    for (int i = 0; i < b; i++)
        job_finish(nd, js[i], e);
}

/* The next decode position of each of b running jobs, in one step: on a
 * single node sampled at once, on a ring sent on as a batch frame. */
static void decode_step(node *nd, job *const *js, int b)
{
    double t0 = clock_ms();
    stage_req *cs[NODE_SEQS_MAX];
    int tokens[NODE_SEQS_MAX];
    ring_seg segs[NODE_SEQS_MAX];
    for (int i = 0; i < b; i++) {
        cs[i] = stage_find(nd, js[i]->op);
        tokens[i] = js[i]->last_token;
        segs[i] = (ring_seg){.op = js[i]->op, .step = js[i]->step, .pos = kv_len(cs[i]->kv)};
    }
    stage_step p = {.t0 = t0, .decode = 1, .seqs = b, .n = b, .pos = segs[0].pos,
                    .chunk = head_chunk(nd, js[0], segs[0].pos)};
    fwd_stats st;
    proto_error e;
    if (!nd->ring) {
        if (stage_forward_batch(nd, cs, b, tokens, NULL, NULL, nd->logits, &st, &e) != 0) {
            batch_fail(nd, js, b, &e);
            return;
        }
        p.step = b == 1 ? js[0]->step : nd->next_batch++;
        stage_publish(nd, cs[0], &p, &st);
        /* Sampling may end a job (and free its place): take the tokens
         * first, then finish each. */
        for (int i = 0; i < b; i++) {
            js[i]->step++;
            tokens[i] = sampler_sample(cs[i]->smp, nd->logits + (size_t)i * nd->cfg->vocab_size);
        }
        for (int i = 0; i < b; i++)
            token_done(nd, js[i], tokens[i]);
        return;
    }
    uint64_t op = ++nd->next_op;
    ring_hdr h = {.kind = RING_BATCH,
                  .op = op,
                  .step = nd->next_batch,
                  .n = b,
                  .dim = nd->cfg->dim,
                  .token = -1,
                  .chunk = p.chunk};
    zmq_msg_t msg;
    float *x_out = ring_batch_init(&msg, &h, segs);
    if (!x_out) {
        proto_fail(&e, PROTO_E_INTERNAL, "", "out of memory for a batch of %d", b);
        batch_fail(nd, js, b, &e);
        return;
    }
    if (stage_forward_batch(nd, cs, b, tokens, NULL, x_out, NULL, &st, &e) != 0) {
        zmq_msg_close(&msg);
        batch_fail(nd, js, b, &e);
        return;
    }
    char err[256];
    if (ring_send_msg(nd->ring, &msg, err, sizeof err) != 0) {
        proto_fail(&e, PROTO_E_STAGE_TIMEOUT, "", "batch %lld: the next stage does not take frames: %s",
                   (long long)h.step, err);
        batch_fail(nd, js, b, &e);
        return;
    }
    p.step = b == 1 ? js[0]->step : h.step;
    nd->next_batch++;
    stage_publish(nd, cs[0], &p, &st);
    flight *f = flight_add(nd, 1, op, h.step);
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
static int pick_step(const node *nd, job **prefill, job **batch, int *n_batch)
{
    int depth = head_depth(nd);
    *prefill = NULL;
    *n_batch = 0;
    if (nd->n_flights >= depth)
        return 0;
    int decoding = 0;
    for (int i = 0; i < nd->n_queue; i++) {
        job *j = nd->queue[i];
        if (j->state != JOB_RUN)
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
static void run_step(node *nd)
{
    job *prefill, *batch[NODE_SEQS_MAX];
    int n_batch;
    if (!pick_step(nd, &prefill, batch, &n_batch))
        return;
    int decode = n_batch > 0 && (!prefill || nd->decode_turn);
    nd->decode_turn = !decode;
    if (decode)
        decode_step(nd, batch, n_batch);
    else
        prefill_step(nd, prefill);
}

/* ---- frames back at the head ------------------------------------------ */

/* The tail's answer to a prefill chunk: a token frame for a generate (the
 * token, or -1 before the prompt's last chunk), a logits frame (every
 * position's) for an eval. */
static void on_chunk_back(node *nd, const ring_frame *f)
{
    int i = flight_find(nd, f->h.op, f->h.step);
    if (i < 0 || nd->flights[i].batch)
        return; /* a step of a request that already ended */
    flight fl;
    flight_take(nd, i, &fl);
    job *j = job_by_op(nd, f->h.op);
    if (!j)
        return;
    j->in_flight--;
    int vocab = nd->cfg->vocab_size;
    int eval = j->req.op == PROTO_OP_EVAL;
    ring_kind want = eval ? RING_LOGITS : RING_TOKEN;
    if (f->h.kind != want || f->h.token >= vocab || f->h.pos != fl.pos || f->h.n != fl.n ||
        (eval && f->h.dim != vocab)) {
        job_fail(nd, j, PROTO_E_INTERNAL,
                 "step %lld came back as a %s frame (token %d, dim %d) for positions %d+%d; the "
                 "head sent positions %d+%d for a %s frame of a %d-token vocabulary",
                 (long long)f->h.step, ring_kind_name(f->h.kind), f->h.token, f->h.dim, f->h.pos,
                 f->h.n, fl.pos, fl.n, ring_kind_name(want), vocab);
        return;
    }
    if (eval && eval_reply(nd, j, f->h.pos, f->h.n, f->x) != 0)
        return;
    chunk_done(nd, j, f->h.n, f->h.pos, fl.head_ms + f->h.down_ms, f->h.token);
}

/* The tail's tokens for a decode batch, in the batch's order. */
static void on_batch_back(node *nd, const ring_frame *f)
{
    int i = flight_find(nd, f->h.op, f->h.step);
    if (i < 0 || !nd->flights[i].batch)
        return;
    flight fl;
    flight_take(nd, i, &fl);
    for (int k = 0; k < fl.n; k++) {
        job *j = job_by_op(nd, fl.ops[k]);
        if (!j)
            continue; /* it ended while its position was out */
        j->in_flight--;
        if (f->h.n != fl.n || f->tokens[k] >= nd->cfg->vocab_size)
            job_fail(nd, j, PROTO_E_INTERNAL,
                     "batch %lld of %d came back with %d tokens (this one %d, the vocabulary "
                     "holds %d)",
                     (long long)f->h.step, fl.n, f->h.n, k < f->h.n ? f->tokens[k] : -1,
                     nd->cfg->vocab_size);
        else
            token_done(nd, j, f->tokens[k]);
    }
}

static int member_index(const node *nd, int first)
{
    for (int i = 0; i < nd->n_members; i++)
        if (nd->members[i].first == first)
            return i;
    return -1;
}

/* Fails every job of a flight (a stage failed its step). */
static void flight_fail(node *nd, const flight *fl, proto_code code, const char *message)
{
    int n = fl->batch ? fl->n : 1;
    for (int k = 0; k < n; k++) {
        job *j = job_by_op(nd, fl->batch ? fl->ops[k] : fl->wait.op);
        if (j)
            job_fail(nd, j, code, "%s", message);
    }
}

static void on_report(node *nd, const ring_frame *f)
{
    const json_t *o = f->json;
    int idx = member_index(nd, (int)json_integer_value(json_object_get(o, "first")));
    const char *of = json_string_value(json_object_get(o, "of"));
    pending *w = NULL;
    job *prep = job_by_op(nd, f->h.op);
    int fi = flight_find(nd, f->h.op, f->h.step);
    if (fi >= 0)
        w = &nd->flights[fi].wait;
    else if (prep && prep->wait.live)
        w = &prep->wait;
    else if (nd->set.live && nd->set.wait.op == f->h.op)
        w = &nd->set.wait;
    if (!w || !of || strcmp(of, ring_kind_name(w->kind)) != 0 || f->h.step != w->step)
        return;
    if (idx > 0)
        w->reported |= 1u << idx;
    /* A stage that fails a set still passes it on with its verdict: only
     * a failed request step ends something here. */
    if (json_is_true(json_object_get(o, "ok")) || w == &nd->set.wait)
        return;
    const char *code = json_string_value(json_object_get(o, "code"));
    const char *message = json_string_value(json_object_get(o, "message"));
    proto_code c = code ? proto_code_parse(code) : PROTO_E_INTERNAL;
    if (c == PROTO_CODE_COUNT)
        c = PROTO_E_INTERNAL;
    if (!message)
        message = "a stage failed the step";
    if (fi >= 0) {
        flight fl;
        flight_take(nd, fi, &fl);
        flight_fail(nd, &fl, c, message);
    } else {
        job_fail(nd, prep, c, "%s", message);
    }
}

void head_on_frame(node *nd, ring_frame *f)
{
    job *j;
    switch (f->h.kind) {
    case RING_PREPARE:
        j = job_by_op(nd, f->h.op);
        if (j && j->state == JOB_PREPARE)
            prepare_done(nd, j, f->json);
        return;
    case RING_TOKEN:
    case RING_LOGITS:
        on_chunk_back(nd, f);
        return;
    case RING_TOKENS:
        on_batch_back(nd, f);
        return;
    case RING_SET_CHECK:
    case RING_SET:
    case RING_SET_UNDO:
        head_set_on_frame(nd, f);
        return;
    case RING_REPORT:
        on_report(nd, f);
        return;
    default:
        /* Frames of operations that already ended (a late token after a
         * timeout or cancel) are expected here and mean nothing now. */
        return;
    }
}

/* ---- deadlines, cancel, drop ------------------------------------------- */

/* A step did not come back in time: the silent stage has lost (or never
 * got) what every running request holds there, so they all end. */
static void flight_timed_out(node *nd, const flight *fl)
{
    char who[PROTO_TEXT_MAX + 64], what[96];
    head_silent_stage(nd, &fl->wait, who, sizeof who);
    if (fl->batch)
        snprintf(what, sizeof what, "decode batch %lld (%d requests)", (long long)fl->wait.step,
                 fl->n);
    else
        snprintf(what, sizeof what, "step %lld", (long long)fl->wait.step);
    nd->n_flights = 0;
    for (int i = nd->n_queue - 1; i >= 0; i--) {
        if (i >= nd->n_queue || nd->queue[i]->state != JOB_RUN)
            continue;
        job_fail(nd, nd->queue[i], PROTO_E_STAGE_TIMEOUT, "%s did not answer %s within %.1f s",
                 who, what, nd->o.step_timeout_ms / 1000.0);
    }
}

static void check_deadlines(node *nd)
{
    double now = clock_ms();
    char who[PROTO_TEXT_MAX + 64];
    for (int i = nd->n_queue - 1; i >= 0; i--) {
        if (i >= nd->n_queue)
            continue;
        job *q = nd->queue[i];
        if (q->state == JOB_QUEUED && nd->o.queue_timeout_ms > 0 &&
            now - q->t_recv >= nd->o.queue_timeout_ms) {
            job_fail(nd, q, PROTO_E_BUSY,
                     "waited %.1f s in the queue behind other requests (--queue-timeout %.1f s)",
                     (now - q->t_recv) / 1000.0, nd->o.queue_timeout_ms / 1000.0);
        } else if (q->state == JOB_PREPARE && q->wait.live && now >= q->wait.deadline) {
            head_silent_stage(nd, &q->wait, who, sizeof who);
            job_fail(nd, q, PROTO_E_STAGE_TIMEOUT, "%s did not answer the ring check within %.1f s",
                     who, nd->o.step_timeout_ms / 1000.0);
        }
    }
    for (int i = 0; i < nd->n_flights; i++) {
        if (now >= nd->flights[i].wait.deadline) {
            flight fl = nd->flights[i];
            flight_timed_out(nd, &fl);
            break;
        }
    }
    head_set_check_deadline(nd, now);
}

/* 1 when no admission round is going around the ring. */
static int round_free(const node *nd)
{
    for (int i = 0; i < nd->n_queue; i++)
        if (nd->queue[i]->state == JOB_PREPARE)
            return 0;
    return 1;
}

/* 1 when job_tokenize has something to do for j now. The tokenizer's
 * thread wakes the loop when it has ids or becomes free. */
static int tokenize_ready(const node *nd, const job *j)
{
    int text = j->req.generate.input == PROTO_INPUT_PROMPT && !j->tokenized;
    if (text)
        return !j->submitted && !tokwork_busy(nd->tokw);
    return round_free(nd);
}

/* The queued jobs that can take a place now, in arrival order. */
static job *startable(const node *nd)
{
    if (head_active(nd) >= nd->max_seqs)
        return NULL;
    for (int i = 0; i < nd->n_queue; i++) {
        job *j = nd->queue[i];
        if (j->state == JOB_QUEUED && !session_busy(nd, j->req.generate.session))
            return j;
    }
    return NULL;
}

void head_tick(node *nd)
{
    check_deadlines(nd);
    job *j;
    while ((j = startable(nd)) != NULL)
        job_start(nd, j);
    for (int i = 0; i < nd->n_queue; i++) {
        j = nd->queue[i];
        if (j->state != JOB_TOKENIZE)
            continue;
        job_tokenize(nd, j, round_free(nd));
        if (i < nd->n_queue && nd->queue[i] != j)
            i--; /* it ended: the next one moved into its place */
    }
    run_step(nd);
}

int head_busy(const node *nd)
{
    if (startable(nd))
        return 1;
    for (int i = 0; i < nd->n_queue; i++)
        if (nd->queue[i]->state == JOB_TOKENIZE && tokenize_ready(nd, nd->queue[i]))
            return 1;
    job *prefill, *batch[NODE_SEQS_MAX];
    int n_batch;
    return pick_step(nd, &prefill, batch, &n_batch);
}

void head_client_gone(node *nd, client_tag conn)
{
    for (int i = nd->n_queue - 1; i >= 0; i--) {
        if (i >= nd->n_queue)
            continue;
        const client_tag *c = &nd->queue[i]->from.conn;
        if (c->fd == conn.fd && c->gen == conn.gen)
            job_fail(nd, nd->queue[i], PROTO_E_CANCELLED, "its client disconnected");
    }
}

void head_cancel(node *nd, const peer *from, const proto_request *req)
{
    for (int i = 0; i < nd->n_queue; i++) {
        if (strcmp(nd->queue[i]->req.id, req->target) != 0)
            continue;
        job_fail(nd, nd->queue[i], PROTO_E_CANCELLED, "cancelled by request '%s'", req->id);
        node_reply(nd, from, proto_reply_ok(req->id, NULL));
        return;
    }
    node_reply_error(nd, from, req->id, PROTO_E_NOT_FOUND,
                     "no request '%s' is running or queued on this node", req->target);
}

void head_drop(node *nd, const peer *from, const proto_request *req)
{
    for (int i = 0; i < nd->n_queue; i++) {
        const job *q = nd->queue[i];
        if (q->state != JOB_QUEUED && strcmp(q->req.generate.session, req->session) == 0) {
            node_reply_error(nd, from, req->id, PROTO_E_BUSY,
                             "session '%s' is in use by request '%s'", req->session, q->req.id);
            return;
        }
    }
    if (!sess_drop(nd->sessions, req->session)) {
        node_reply_error(nd, from, req->id, PROTO_E_NOT_FOUND, "no session '%s' on this node",
                         req->session);
        return;
    }
    steplog_line(nd->log, "SESSION", "dropped '%s' by request '%s'", req->session, req->id);
    if (nd->ring && nd->head) {
        json_t *o = json_pack("{s[s]}", "sessions", req->session);
        head_send(nd, RING_DROP, ++nd->next_op, o);
        json_decref(o);
    }
    node_reply(nd, from, proto_reply_ok(req->id, NULL));
}

void head_shutdown(node *nd)
{
    nd->n_flights = 0;
    while (nd->n_queue > 0)
        job_fail(nd, nd->queue[nd->n_queue - 1], PROTO_E_SHUTDOWN, "the node is shutting down");
    head_set_shutdown(nd);
}
