/* stage.c: this node's layers in a request, and the ring frames a stage
 * that is not the head handles (see node.h and PROTOCOL.md "Stage-to-stage
 * frames").
 *
 * Every stage holds its own share of a request: the KV cache of its layers
 * (a session's cache when the request names one) and, on the tail, the
 * sampler. The head decides; the other stages follow its frames and check
 * that what they hold agrees with what the head says (the step number, the
 * context position), so that a stage that restarted or missed a frame
 * fails the request loudly instead of computing on the wrong context.
 */
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "node.h"
#include "stage.h"

size_t stage_kv_bytes(const node *nd)
{
    size_t bytes = sess_bytes(nd->sessions);
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        if (nd->reqs[i].live)
            bytes += kv_bytes(nd->reqs[i].kv);
    return bytes;
}

stage_req *stage_find(node *nd, uint64_t op)
{
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        if (nd->reqs[i].live && nd->reqs[i].op == op)
            return &nd->reqs[i];
    return NULL;
}

/* What the running requests' caches will still grow by, up to the
 * context each was admitted for: memory the guard does not see yet but
 * has promised. */
static size_t stage_promised(const node *nd)
{
    kv_shape shape = fwd_kv_shape(nd->fwd);
    size_t sum = 0;
    for (int i = 0; i < NODE_SEQS_MAX; i++) {
        const stage_req *c = &nd->reqs[i];
        if (!c->live)
            continue;
        size_t want = kv_bytes_for(shape, kv_bits(c->kv), c->ctx), have = kv_bytes(c->kv);
        sum += want > have ? want - have : 0;
    }
    return sum;
}

static void stage_name_layers(const node *nd, char *buf, size_t len)
{
    snprintf(buf, len, "stage '%s' (layers %d:%d)", nd->o.name, fwd_first(nd->fwd),
             fwd_last(nd->fwd));
}

/* Frees idle sessions, least recently used first (never `keep`), until
 * `bytes` are freed; their names go to `evicted`. */
static void stage_evict(node *nd, const char *keep, size_t bytes, json_t *evicted)
{
    size_t freed = 0;
    while (freed < bytes) {
        const char *name = sess_lru(nd->sessions, keep);
        if (!name)
            break;
        char copy[PROTO_ID_MAX + 1];
        snprintf(copy, sizeof copy, "%s", name);
        int pending;
        kv_cache *kv = sess_take(nd->sessions, copy, &pending);
        freed += kv_bytes(kv);
        kv_free(kv);
        json_array_append_new(evicted, json_string(copy));
        steplog_line(nd->log, "SESSION", "evicted '%s' (least recently used) to make room", copy);
    }
    malloc_trim(0);
}

static void admission_fail(stage_admission *out, proto_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Messages are built from other messages: cut, never overflowed. */
static void admission_fail(stage_admission *out, proto_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    out->code = code;
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Chunks of logits (n * vocab floats each) an eval's step holds here: the
 * tail computes them into the frame it sends back (or, alone, into the
 * head's buffer); the head holds them while it replies (the frame it
 * received, or that buffer), and copies them into the reply when the
 * client asked for them raw. */
static size_t stage_logit_chunks(const node *nd, stage_eval eval)
{
    if (eval == STAGE_EVAL_NONE)
        return 0;
    return (size_t)(nd->head || nd->tail) + (size_t)(nd->head && eval == STAGE_EVAL_RAW);
}

/* Bytes a step of n positions needs beyond what this node holds now: its
 * forward pass's scratch, the hidden states it receives and sends (a
 * frame each way, n * dim floats) and an eval's logits. */
static size_t stage_step_bytes(node *nd, int n, stage_eval eval)
{
    /* A decode batch of every running request is a step of that many rows. */
    int rows = n > nd->max_seqs ? n : nd->max_seqs;
    size_t scratch = fwd_scratch_bytes_for(nd->fwd, fwd_kv_shape(nd->fwd), rows);
    size_t held = fwd_scratch_bytes(nd->fwd);
    size_t frames =
        (size_t)(!nd->head + !nd->tail) * (size_t)n * (size_t)nd->cfg->dim * sizeof(float);
    size_t logits =
        stage_logit_chunks(nd, eval) * (size_t)n * (size_t)nd->cfg->vocab_size * sizeof(float);
    return add_sat(add_sat(scratch > held ? scratch - held : 0, frames), logits);
}

/* The largest chunk up to `chunk` whose step fits beside `kv` new bytes of
 * cache; 1 when none does (admission has checked that 1 fits). */
static int stage_chunk_cap(node *nd, size_t kv, int chunk, stage_eval eval)
{
    const guard_mem *g = node_mem(nd, 1);
    int lo = 1, hi = chunk;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        size_t evict;
        char msg[8];
        size_t need = add_sat(add_sat(kv, stage_promised(nd)), stage_step_bytes(nd, mid, eval));
        if (guard_admit(g, need, 0, &evict, msg, sizeof msg) == GUARD_FITS)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void stage_admit(node *nd, const char *session, int pos, int ctx, int chunk, stage_eval eval,
                 json_t *evicted, stage_admission *out)
{
    char who[PROTO_TEXT_MAX + 64];
    stage_name_layers(nd, who, sizeof who);
    memset(out, 0, sizeof *out);
    char msg[PROTO_MESSAGE_MAX];
    if (guard_ctx(nd->o.max_ctx, ctx, msg, sizeof msg) != 0) {
        admission_fail(out, PROTO_E_CTX_LIMIT, "%s: %s", who, msg);
        return;
    }
    /* The head counts its own places; another stage with a smaller
     * --max-seqs says so here rather than failing a batch later. */
    if (nd->n_reqs >= nd->max_seqs) {
        admission_fail(out, PROTO_E_BUSY,
                       "%s: %d requests already running here (--max-seqs %d); give every stage "
                       "the head's --max-seqs",
                       who, nd->n_reqs, nd->max_seqs);
        return;
    }
    size_t held = 0;
    if (session[0]) {
        int len = sess_len(nd->sessions, session);
        if (pos > 0 && len != pos) {
            admission_fail(out, PROTO_E_NOT_FOUND,
                           "%s: session '%s' holds %d positions here but %d on the head (did "
                           "this stage restart?)",
                           who, session, len < 0 ? 0 : len, pos);
            return;
        }
        /* The head starts this session afresh: whatever this stage still
         * holds under the name is from before (the head restarted). */
        if (pos == 0 && len >= 0)
            sess_drop(nd->sessions, session);
        if (pos > 0)
            held = kv_bytes(sess_peek(nd->sessions, session));
    }
    size_t want = kv_bytes_for(fwd_kv_shape(nd->fwd), nd->kv_bits, ctx);
    size_t kv = want > held ? want - held : 0, step = stage_step_bytes(nd, 1, eval);
    size_t promised = stage_promised(nd);
    out->needed = add_sat(add_sat(kv, step), promised);
    size_t idle = sess_bytes(nd->sessions) - held;
    const guard_mem *g = node_mem(nd, 1);
    out->available = guard_available(g);
    out->budget = g->budget;
    size_t evict;
    switch (guard_admit(g, out->needed, idle, &evict, msg, sizeof msg)) {
    case GUARD_FITS:
        break;
    case GUARD_EVICT:
        stage_evict(nd, session, evict, evicted);
        break;
    case GUARD_REFUSE:
        admission_fail(out, PROTO_E_KV_OOM,
                       "%s: context %d at kv_bits %d (KV cache %zu bytes, a step %zu bytes, "
                       "%zu bytes promised to the %d requests running): %s",
                       who, ctx, nd->kv_bits, kv, step, promised, nd->n_reqs, msg);
        return;
    }
    out->chunk = stage_chunk_cap(nd, kv, chunk, eval);
}

int stage_begin(node *nd, uint64_t op, const char *req, const char *session, int pos, int ctx,
                const proto_generate_args *sampling, uint64_t seed, proto_error *e)
{
    char err[256];
    stage_req *c = stage_find(nd, op);
    if (c) /* a head that restarted reuses its operation numbers */
        stage_end(nd, c, 0, -1);
    for (c = nd->reqs; c < nd->reqs + NODE_SEQS_MAX && c->live; c++)
        ;
    if (c == nd->reqs + NODE_SEQS_MAX)
        return proto_fail(e, PROTO_E_BUSY, "", "stage '%s': %d requests already running",
                          nd->o.name, NODE_SEQS_MAX);
    memset(c, 0, sizeof *c);
    if (session[0]) {
        int pending;
        c->kv = sess_take(nd->sessions, session, &pending);
        if (c->kv && kv_len(c->kv) != pos) {
            kv_free(c->kv);
            c->kv = NULL;
            if (pos > 0)
                return proto_fail(e, PROTO_E_NOT_FOUND, "session",
                                  "stage '%s': session '%s' is not at position %d", nd->o.name,
                                  session, pos);
        }
    }
    if (!c->kv && kv_create(&c->kv, fwd_kv_shape(nd->fwd), nd->kv_bits, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", nd->o.name, err);
    if (nd->tail && sampler_create(&c->smp, nd->cfg->vocab_size, sampling->temperature,
                                   sampling->top_p, seed, err, sizeof err) != 0) {
        kv_free(c->kv);
        c->kv = NULL;
        return proto_fail(e, PROTO_E_BAD_VALUE, "", "stage '%s': %s", nd->o.name, err);
    }
    c->live = 1;
    c->op = op;
    snprintf(c->req, sizeof c->req, "%s", req);
    snprintf(c->session, sizeof c->session, "%s", session);
    c->pos0 = pos;
    c->ctx = ctx;
    if (nd->n_reqs++ == 0)
        busy_idle(&nd->busy, clock_ms());
    return 0;
}

void stage_end(node *nd, stage_req *c, int ok, int pending_token)
{
    if (!c->live)
        return;
    if (c->session[0]) {
        /* A request that did not end well leaves its session as it found
         * it, so every stage agrees on where the session is. */
        if (!ok)
            kv_set_len(c->kv, c->pos0);
        char err[256];
        if (sess_put(nd->sessions, c->session, c->kv, pending_token, err, sizeof err) != 0) {
            steplog_line(nd->log, "SESSION", "lost '%s': %s", c->session, err);
            kv_free(c->kv);
        }
    } else {
        kv_free(c->kv);
    }
    sampler_free(c->smp);
    memset(c, 0, sizeof *c);
    /* The next requests admit their own chunk's scratch: this one's goes
     * once nothing runs. */
    if (--nd->n_reqs == 0)
        fwd_scratch_release(nd->fwd);
    /* KV blocks are small allocations: without a trim, the heap keeps the
     * pages and RSS (which the memory guard reads) would not come down. */
    malloc_trim(0);
}

int stage_forward(node *nd, stage_req *c, const int *tokens, const float *x_in, int n, float *x_out,
                  float *logits, fwd_stats *st, proto_error *e)
{
    char err[256];
    if (fwd_step(nd->fwd, c->kv, tokens, x_in, n, x_out, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", nd->o.name, err);
    return 0;
}

int stage_forward_logits(node *nd, stage_req *c, const int *tokens, const float *x_in, int n,
                         float *logits, fwd_stats *st, proto_error *e)
{
    char err[256];
    if (fwd_step_logits(nd->fwd, c->kv, tokens, x_in, n, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", nd->o.name, err);
    return 0;
}

int stage_forward_batch(node *nd, stage_req *const *cs, int b, const int *tokens, const float *x_in,
                        float *x_out, float *logits, fwd_stats *st, proto_error *e)
{
    kv_cache *kvs[NODE_SEQS_MAX];
    for (int i = 0; i < b; i++)
        kvs[i] = cs[i]->kv;
    char err[256];
    if (fwd_step_batch(nd->fwd, kvs, b, tokens, x_in, x_out, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", nd->o.name, err);
    return 0;
}

void stage_publish(node *nd, stage_req *c, const stage_step *p, const fwd_stats *st)
{
    double now = clock_ms();
    double wait_ms = busy_step(&nd->busy, p->t0, now, st->model_ms);
    const guard_mem *g = node_mem(nd, 0);
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
    s.busy = busy_ratio(&nd->busy, now);
    s.kv_bytes = stage_kv_bytes(nd);
    s.kv_bits = nd->kv_bits;
    s.prefill_step = p->chunk;
    s.rss = g->rss;
    s.budget = g->budget;
    s.headroom = guard_headroom(g);
    s.act_max = st->nonfinite ? NAN : st->act_max;
    s.nonfinite = st->nonfinite;
    tel_step(nd->tel, &s);
    steplog_step(nd->log, &s);
    if (st->nonfinite && !c->numeric) {
        c->numeric = 1;
        json_t *d = json_pack("{sI sI}", "step", (json_int_t)p->step, "nonfinite",
                              (json_int_t)st->nonfinite);
        node_event(nd, PROTO_EV_NUMERIC, c->req, "", d,
                   "stage '%s' output %d non-finite values at step %lld (%d positions of %d "
                   "requests from position %d)",
                   nd->o.name, st->nonfinite, (long long)p->step, p->n, p->seqs, p->pos);
        json_decref(d);
    }
}

/* ---- live config ------------------------------------------------------ */

/* The knobs of a set frame, whose values ring_msg_check has checked. */
static proto_set_args set_from_json(const json_t *obj)
{
    proto_set_args out = {0};
    const json_t *ps = json_object_get(obj, "prefill_step");
    const json_t *kb = json_object_get(obj, "kv_bits");
    if (ps) {
        out.has_prefill_step = 1;
        out.prefill_step = json_is_integer(ps) ? (int)json_integer_value(ps) : PROTO_PREFILL_AUTO;
    }
    if (kb) {
        out.has_kv_bits = 1;
        out.kv_bits = (int)json_integer_value(kb);
    }
    return out;
}

static json_t *prefill_json(int prefill_step)
{
    return prefill_step == PROTO_PREFILL_AUTO ? json_string("auto") : json_integer(prefill_step);
}

json_t *stage_set_to_json(const proto_set_args *set)
{
    json_t *o = json_object();
    if (set->has_prefill_step)
        json_object_set_new(o, "prefill_step", prefill_json(set->prefill_step));
    if (set->has_kv_bits)
        json_object_set_new(o, "kv_bits", json_integer(set->kv_bits));
    return o;
}

/* Adds to *grow or *shrink how a cache holding `have` bytes changes to `want`. */
static void tally(size_t have, size_t want, size_t *grow, size_t *shrink)
{
    if (want >= have)
        *grow = want - have > SIZE_MAX - *grow ? SIZE_MAX : *grow + (want - have);
    else
        *shrink += have - want;
}

/* Bytes the caches would grow by at `bits`, each up to the context it is
 * meant to reach (the request's admitted context, a session's length);
 * 0 when they shrink. */
static size_t stage_growth(node *nd, int bits)
{
    kv_shape shape = fwd_kv_shape(nd->fwd);
    size_t grow = 0, shrink = 0;
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        if (nd->reqs[i].live)
            tally(kv_bytes(nd->reqs[i].kv), kv_bytes_for(shape, bits, nd->reqs[i].ctx), &grow,
                  &shrink);
    for (int i = 0; i < sess_count(nd->sessions); i++) {
        kv_cache *kv = sess_cache_at(nd->sessions, i);
        tally(kv_bytes(kv), kv_bytes_for(shape, bits, kv_len(kv)), &grow, &shrink);
    }
    return grow > shrink ? grow - shrink : 0;
}

/* The i-th cache this node holds: the sessions', then the running
 * requests'. NULL past the last. */
static kv_cache *stage_cache_at(node *nd, int i)
{
    if (i < sess_count(nd->sessions))
        return sess_cache_at(nd->sessions, i);
    i -= sess_count(nd->sessions);
    for (int k = 0; k < NODE_SEQS_MAX; k++)
        if (nd->reqs[k].live && i-- == 0)
            return nd->reqs[k].kv;
    return NULL;
}

/* Converts every cache this node holds to `bits`, the running requests'
 * too (they go on at the new precision from their next step); on a
 * failure converts the ones already done back, so that all caches keep
 * one precision. */
static int stage_convert(node *nd, int bits, char *err, size_t errlen)
{
    kv_cache *kv;
    for (int i = 0; (kv = stage_cache_at(nd, i)) != NULL; i++) {
        if (kv_convert(kv, bits, err, errlen) != 0) {
            char ignored[64];
            for (int k = 0; k < i; k++)
                kv_convert(stage_cache_at(nd, k), nd->kv_bits, ignored, sizeof ignored);
            return -1;
        }
    }
    return 0;
}

static void set_entry_identity(const node *nd, json_t *result)
{
    json_object_set_new(result, "name", json_string(nd->o.name));
    json_object_set_new(result, "first", json_integer(fwd_first(nd->fwd)));
    json_object_set_new(result, "last", json_integer(fwd_last(nd->fwd)));
}

/* 0 when this node's caches would fit its budget at the set's kv_bits,
 * else kv_oom naming the stage. Changes nothing. */
static int stage_set_fits(node *nd, const proto_set_args *set, proto_error *e)
{
    if (!set->has_kv_bits || set->kv_bits == nd->kv_bits)
        return 0;
    size_t growth = stage_growth(nd, set->kv_bits);
    char msg[PROTO_MESSAGE_MAX];
    size_t evict;
    if (growth == 0 ||
        guard_admit(node_mem(nd, 1), growth, 0, &evict, msg, sizeof msg) == GUARD_FITS)
        return 0;
    char who[PROTO_TEXT_MAX + 64];
    stage_name_layers(nd, who, sizeof who);
    return proto_fail(e, PROTO_E_KV_OOM, "kv_bits", "%s: kv_bits %d -> %d: %s", who, nd->kv_bits,
                      set->kv_bits, msg);
}

/* A refusal goes into the stage's entry too, so that the round carries it. */
static int set_verdict(json_t *result, int rc, const proto_error *e)
{
    json_object_set_new(result, "ok", json_boolean(rc == 0));
    if (rc != 0) {
        json_object_set_new(result, "code", json_string(proto_code_name(e->code)));
        json_object_set_new(result, "message", json_string(e->message));
    }
    return rc;
}

int stage_check_set(node *nd, const proto_set_args *set, json_t *result, proto_error *e)
{
    set_entry_identity(nd, result);
    return set_verdict(result, stage_set_fits(nd, set, e), e);
}

/* Applies a set that fits: converts the caches, then the knobs. */
static int set_apply(node *nd, const proto_set_args *set, json_t *result, proto_error *e)
{
    set_entry_identity(nd, result);
    if (stage_set_fits(nd, set, e) != 0)
        return -1;
    if (set->has_kv_bits && set->kv_bits != nd->kv_bits) {
        size_t before = stage_kv_bytes(nd);
        double t0 = clock_ms();
        char err[256];
        if (stage_convert(nd, set->kv_bits, err, sizeof err) != 0)
            return proto_fail(e, PROTO_E_INTERNAL, "kv_bits", "stage '%s': converting KV: %s",
                              nd->o.name, err);
        double ms = clock_ms() - t0;
        size_t after = stage_kv_bytes(nd);
        malloc_trim(0);
        json_t *d =
            json_pack("{si si sf sI sI}", "from_bits", nd->kv_bits, "to_bits", set->kv_bits, "ms",
                      ms, "bytes_before", (json_int_t)before, "bytes_after", (json_int_t)after);
        node_event(nd, PROTO_EV_KV_CONVERTED, "", "", d,
                   "KV cache converted from %d to %d bits in %.1f ms: %zu -> %zu bytes",
                   nd->kv_bits, set->kv_bits, ms, before, after);
        json_object_set_new(result, "kv", d);
        nd->kv_bits = set->kv_bits;
    }
    if (set->has_prefill_step)
        nd->prefill_step = set->prefill_step;
    json_t *d = json_pack("{so si}", "prefill_step", prefill_json(nd->prefill_step), "kv_bits",
                          nd->kv_bits);
    char step_text[16];
    if (nd->prefill_step == PROTO_PREFILL_AUTO)
        snprintf(step_text, sizeof step_text, "auto");
    else
        snprintf(step_text, sizeof step_text, "%d", nd->prefill_step);
    node_event(nd, PROTO_EV_CONFIG_APPLIED, "", "", d,
               "config applied on stage '%s': kv_bits %d, prefill_step %s", nd->o.name, nd->kv_bits,
               step_text);
    json_object_update(result, d);
    json_decref(d);
    return 0;
}

int stage_apply_set(node *nd, uint64_t op, const proto_set_args *set, json_t *result,
                    proto_error *e)
{
    set_undo before = {.op = op, .kv_bits = nd->kv_bits, .prefill_step = nd->prefill_step};
    if (set_verdict(result, set_apply(nd, set, result, e), e) != 0)
        return -1;
    nd->undo = before;
    return 0;
}

int stage_undo_set(node *nd, uint64_t op, json_t *result, proto_error *e)
{
    if (nd->undo.op != op) {
        /* This stage never applied it: nothing to put back. */
        set_entry_identity(nd, result);
        json_object_set_new(result, "prefill_step", prefill_json(nd->prefill_step));
        json_object_set_new(result, "kv_bits", json_integer(nd->kv_bits));
        return set_verdict(result, 0, e);
    }
    proto_set_args back = {.has_kv_bits = 1,
                           .kv_bits = nd->undo.kv_bits,
                           .has_prefill_step = 1,
                           .prefill_step = nd->undo.prefill_step};
    nd->undo.op = 0;
    return set_verdict(result, set_apply(nd, &back, result, e), e);
}

void stage_drop_sessions(node *nd, const json_t *names)
{
    size_t i;
    const json_t *v;
    int dropped = 0;
    json_array_foreach(names, i, v)
    {
        if (json_is_string(v) && sess_drop(nd->sessions, json_string_value(v))) {
            steplog_line(nd->log, "SESSION", "dropped '%s'", json_string_value(v));
            dropped = 1;
        }
    }
    if (dropped)
        malloc_trim(0);
}

/* ---- frames on a stage that is not the head ---------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static int jint(const json_t *o, const char *key, int fallback)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : fallback;
}

/* Tells the head this stage handled (or failed) a frame. Without a known
 * head endpoint there is nobody to tell yet: the head's deadline covers it. */
static void stage_report(node *nd, const ring_hdr *of, const proto_error *e)
{
    if (!nd->head_ep[0])
        return;
    ring_hdr h = {.kind = RING_REPORT, .op = of->op, .step = of->step, .token = -1};
    json_t *o = json_pack("{ss si ss sb}", "name", nd->o.name, "first", fwd_first(nd->fwd), "of",
                          ring_kind_name(of->kind), "ok", e == NULL);
    if (e) {
        json_object_set_new(o, "code", json_string(proto_code_name(e->code)));
        json_object_set_new(o, "message", json_string(e->message));
    }
    char err[256];
    if (ring_report(nd->ring, nd->head_ep, nd->head_key, &h, o, err, sizeof err) != 0)
        steplog_line(nd->log, "RING", "report to the head: %s", err);
    json_decref(o);
}

static void stage_forward_frame(node *nd, const ring_frame *f)
{
    char err[256];
    if (ring_send(nd->ring, &f->h, f->json, err, sizeof err) != 0)
        steplog_line(nd->log, "RING", "forwarding a %s frame: %s", ring_kind_name(f->h.kind), err);
}

static void stage_learn_head(node *nd, const json_t *o)
{
    const char *ep = jstr(o, "head");
    if (ep[0])
        snprintf(nd->head_ep, sizeof nd->head_ep, "%s", ep);
    const char *key = jstr(o, "head_key");
    if (key[0])
        snprintf(nd->head_key, sizeof nd->head_key, "%s", key);
}

/* A request this stage runs that the head no longer does (its end frame
 * was lost, or the head restarted) ends here: the head lists what it
 * runs with every admission round. */
static void stage_end_abandoned(node *nd, const json_t *running)
{
    for (int i = 0; i < NODE_SEQS_MAX; i++) {
        stage_req *c = &nd->reqs[i];
        if (!c->live)
            continue;
        size_t k;
        const json_t *v;
        int found = 0;
        json_array_foreach(running, k, v) found |= (uint64_t)json_integer_value(v) == c->op;
        if (found)
            continue;
        steplog_line(nd->log, "REQ", "%s abandoned by the head", c->req);
        stage_end(nd, c, 0, -1);
    }
}

static void on_prepare(node *nd, ring_frame *f)
{
    json_t *stages = json_object_get(f->json, "stages");
    json_t *drop = json_object_get(f->json, "drop");
    if (json_array_size(stages) >= PROTO_RING_MAX) {
        /* A frame that went around more stages than a ring can hold is
         * circling a loop that misses its head: let it die here. */
        steplog_line(nd->log, "RING", "dropped a prepare frame with %zu stages",
                     json_array_size(stages));
        return;
    }
    stage_learn_head(nd, f->json);
    stage_end_abandoned(nd, json_object_get(f->json, "running"));
    stage_drop_sessions(nd, drop);
    stage_admission a;
    stage_eval eval = json_is_true(json_object_get(f->json, "eval")) ? STAGE_EVAL : STAGE_EVAL_NONE;
    stage_admit(nd, jstr(f->json, "session"), jint(f->json, "pos", 0), jint(f->json, "ctx", 0),
                jint(f->json, "chunk", 1), eval, drop, &a);
    json_t *entry = node_identity(nd);
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
    json_array_append_new(stages, entry);
    stage_forward_frame(nd, f);
    stage_report(nd, &f->h, NULL);
}

/* The ring as the head saw it, for status. */
static void stage_learn_members(node *nd, const json_t *stages)
{
    size_t i;
    const json_t *s;
    nd->n_members = 0;
    json_array_foreach(stages, i, s)
    {
        if (i >= PROTO_RING_MAX)
            break;
        member *m = &nd->members[nd->n_members++];
        snprintf(m->name, sizeof m->name, "%s", jstr(s, "name"));
        snprintf(m->fingerprint, sizeof m->fingerprint, "%s", jstr(s, "fingerprint"));
        snprintf(m->next, sizeof m->next, "%s", jstr(s, "next"));
        m->first = jint(s, "first", 0);
        m->last = jint(s, "last", 0);
    }
}

static void on_start(node *nd, ring_frame *f)
{
    const json_t *o = f->json;
    stage_learn_head(nd, o);
    stage_learn_members(nd, json_object_get(o, "stages"));
    proto_generate_args sampling = {
        .temperature = (float)json_number_value(json_object_get(o, "temperature")),
        .top_p = (float)json_number_value(json_object_get(o, "top_p")),
    };
    const json_t *seed = json_object_get(o, "seed");
    proto_error e;
    if (stage_begin(nd, f->h.op, jstr(o, "req"), jstr(o, "session"), jint(o, "pos", 0),
                    jint(o, "ctx", 0), &sampling,
                    json_is_integer(seed) ? (uint64_t)json_integer_value(seed) : 0, &e) != 0) {
        steplog_line(nd->log, "REQ", "%s: %s", jstr(o, "req"), e.message);
        stage_report(nd, &f->h, &e);
        return;
    }
    steplog_line(nd->log, "REQ", "%s start session='%s' pos=%d", jstr(o, "req"), jstr(o, "session"),
                 jint(o, "pos", 0));
    if (!nd->tail)
        stage_forward_frame(nd, f);
}

/* Runs a step into a frame of n * out->dim floats and sends it on: hidden
 * states to the next stage or, for an eval on the tail, every position's
 * logits to the head. The frame is the buffer: nothing is copied. */
static int send_floats(node *nd, stage_req *c, const ring_frame *f, ring_hdr *out, double t0,
                       fwd_stats *st, proto_error *e, char *err, size_t errlen)
{
    zmq_msg_t msg;
    float *y = ring_hidden_init(&msg, out);
    if (!y)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': out of memory for step %lld",
                          nd->o.name, (long long)f->h.step);
    int rc = out->kind == RING_LOGITS ? stage_forward_logits(nd, c, NULL, f->x, f->h.n, y, st, e)
                                      : stage_forward(nd, c, NULL, f->x, f->h.n, y, NULL, st, e);
    if (rc != 0) {
        zmq_msg_close(&msg);
        return -1;
    }
    out->down_ms = f->h.down_ms + (clock_ms() - t0);
    ring_hdr_encode(out, zmq_msg_data(&msg));
    return ring_send_msg(nd->ring, &msg, err, errlen);
}

/* The tail's step of a generate: the token (sampled when the step says
 * so, else -1) back to the head. */
static int send_token(node *nd, stage_req *c, const ring_frame *f, ring_hdr *out, double t0,
                      fwd_stats *st, proto_error *e, char *err, size_t errlen)
{
    int sample = (f->h.flags & RING_F_SAMPLE) != 0;
    if (stage_forward(nd, c, NULL, f->x, f->h.n, NULL, sample ? nd->logits : NULL, st, e) != 0)
        return -1;
    out->kind = RING_TOKEN;
    out->dim = 0;
    out->token = sample ? sampler_sample(c->smp, nd->logits) : -1;
    out->down_ms = f->h.down_ms + (clock_ms() - t0);
    return ring_send(nd->ring, out, NULL, err, errlen);
}

/* Runs this stage's layers on a step's hidden states and passes the result
 * on: hidden states to the next stage, or (tail) the token or an eval's
 * logits to the head. */
static void on_hidden(node *nd, ring_frame *f)
{
    double t0 = clock_ms();
    const ring_hdr *in = &f->h;
    stage_req *c = stage_find(nd, in->op);
    if (!c) {
        steplog_line(nd->log, "RING", "dropped step %lld of an operation this stage does not hold",
                     (long long)in->step);
        return;
    }
    proto_error e;
    if (in->step != c->next_step || in->pos != kv_len(c->kv) || in->dim != nd->cfg->dim) {
        proto_fail(&e, PROTO_E_INTERNAL, "",
                   "stage '%s': step %lld at position %d with dim %d, expected step %lld at "
                   "position %d with dim %d",
                   nd->o.name, (long long)in->step, in->pos, in->dim, (long long)c->next_step,
                   kv_len(c->kv), nd->cfg->dim);
        stage_report(nd, in, &e);
        return;
    }
    ring_hdr out = *in;
    fwd_stats st;
    char err[256] = "";
    int rc;
    e.code = PROTO_OK;
    if (nd->tail && (in->flags & RING_F_LOGITS)) {
        out.kind = RING_LOGITS;
        out.dim = nd->cfg->vocab_size;
    }
    if (nd->tail && !(in->flags & RING_F_LOGITS))
        rc = send_token(nd, c, f, &out, t0, &st, &e, err, sizeof err);
    else
        rc = send_floats(nd, c, f, &out, t0, &st, &e, err, sizeof err);
    if (rc != 0) {
        /* A failed send (e.code still OK) means the next stage does not
         * take frames: the ring is broken after this stage. */
        if (e.code == PROTO_OK)
            proto_fail(&e, PROTO_E_STAGE_TIMEOUT, "", "stage '%s' cannot pass step %lld on: %s",
                       nd->o.name, (long long)in->step, err);
        stage_report(nd, in, &e);
        return;
    }
    c->next_step++;
    stage_report(nd, in, NULL);
    stage_step p = {.t0 = t0,
                    .step = in->step,
                    .decode = (in->flags & RING_F_DECODE) != 0,
                    .seqs = 1,
                    .n = in->n,
                    .pos = in->pos,
                    .chunk = in->chunk};
    stage_publish(nd, c, &p, &st);
}

/* The running requests a batch frame names, in its order, each checked
 * against what this stage holds for it. -1 with e when one disagrees. */
static int batch_members(node *nd, const ring_frame *f, stage_req **cs, proto_error *e)
{
    for (int i = 0; i < f->h.n; i++) {
        const ring_seg *g = &f->segs[i];
        stage_req *c = stage_find(nd, g->op);
        if (!c)
            return proto_fail(e, PROTO_E_INTERNAL, "",
                              "stage '%s': batch %lld names operation %llu, which this stage "
                              "does not run (did it restart?)",
                              nd->o.name, (long long)f->h.step, (unsigned long long)g->op);
        if (g->step != c->next_step || g->pos != kv_len(c->kv))
            return proto_fail(e, PROTO_E_INTERNAL, "",
                              "stage '%s': request '%s' in batch %lld at step %lld position %d, "
                              "expected step %lld at position %d",
                              nd->o.name, c->req, (long long)f->h.step, (long long)g->step, g->pos,
                              (long long)c->next_step, kv_len(c->kv));
        cs[i] = c;
    }
    return 0;
}

/* A batch through this stage's layers, passed on: hidden states to the
 * next stage, or (tail) every request's sampled token to the head. */
static int batch_run(node *nd, const ring_frame *f, stage_req *const *cs, ring_hdr *out, double t0,
                     fwd_stats *st, proto_error *e, char *err, size_t errlen)
{
    int b = f->h.n;
    zmq_msg_t msg;
    if (!nd->tail) {
        float *y = ring_batch_init(&msg, out, f->segs);
        if (!y)
            return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': out of memory for batch %lld",
                              nd->o.name, (long long)f->h.step);
        if (stage_forward_batch(nd, cs, b, NULL, f->x, y, NULL, st, e) != 0) {
            zmq_msg_close(&msg);
            return -1;
        }
    } else {
        if (stage_forward_batch(nd, cs, b, NULL, f->x, NULL, nd->logits, st, e) != 0)
            return -1;
        out->kind = RING_TOKENS;
        out->dim = 0;
        int32_t *tokens = ring_tokens_init(&msg, out);
        if (!tokens)
            return proto_fail(e, PROTO_E_INTERNAL, "",
                              "stage '%s': out of memory for batch %lld's tokens", nd->o.name,
                              (long long)f->h.step);
        for (int i = 0; i < b; i++)
            tokens[i] =
                sampler_sample(cs[i]->smp, nd->logits + (size_t)i * (size_t)nd->cfg->vocab_size);
    }
    out->down_ms = f->h.down_ms + (clock_ms() - t0);
    ring_hdr_encode(out, zmq_msg_data(&msg));
    return ring_send_msg(nd->ring, &msg, err, errlen);
}

static void on_batch(node *nd, ring_frame *f)
{
    double t0 = clock_ms();
    stage_req *cs[NODE_SEQS_MAX];
    proto_error e;
    if (f->h.n > nd->max_seqs || f->h.dim != nd->cfg->dim) {
        proto_fail(&e, PROTO_E_INTERNAL, "",
                   "stage '%s': batch %lld of %d requests with dim %d, expected at most %d "
                   "(--max-seqs) with dim %d",
                   nd->o.name, (long long)f->h.step, f->h.n, f->h.dim, nd->max_seqs, nd->cfg->dim);
        stage_report(nd, &f->h, &e);
        return;
    }
    if (batch_members(nd, f, cs, &e) != 0) {
        stage_report(nd, &f->h, &e);
        return;
    }
    ring_hdr out = f->h;
    fwd_stats st;
    char err[256] = "";
    e.code = PROTO_OK;
    if (batch_run(nd, f, cs, &out, t0, &st, &e, err, sizeof err) != 0) {
        if (e.code == PROTO_OK)
            proto_fail(&e, PROTO_E_STAGE_TIMEOUT, "", "stage '%s' cannot pass batch %lld on: %s",
                       nd->o.name, (long long)f->h.step, err);
        stage_report(nd, &f->h, &e);
        return;
    }
    for (int i = 0; i < f->h.n; i++)
        cs[i]->next_step++;
    stage_report(nd, &f->h, NULL);
    /* A batch of one is numbered as its request's step, as on the head. */
    stage_step p = {.t0 = t0,
                    .step = f->h.n == 1 ? f->segs[0].step : f->h.step,
                    .decode = 1,
                    .seqs = f->h.n,
                    .n = f->h.n,
                    .pos = f->segs[0].pos,
                    .chunk = f->h.chunk};
    stage_publish(nd, cs[0], &p, &st);
}

static void on_end(node *nd, ring_frame *f)
{
    stage_req *c = stage_find(nd, f->h.op);
    if (c) {
        int ok = json_is_true(json_object_get(f->json, "ok"));
        steplog_line(nd->log, "REQ", "%s end %s", c->req, ok ? "ok" : "failed");
        stage_end(nd, c, ok, -1);
    }
    if (!nd->tail)
        stage_forward_frame(nd, f);
}

/* One round of a set (check, apply or undo): this stage's verdict joins
 * the list, and the frame goes on back to the head. */
static void on_set(node *nd, ring_frame *f)
{
    stage_learn_head(nd, f->json);
    json_t *stages = json_object_get(f->json, "stages");
    if (json_array_size(stages) >= PROTO_RING_MAX) {
        steplog_line(nd->log, "RING", "dropped a %s frame that went past %d stages",
                     ring_kind_name(f->h.kind), PROTO_RING_MAX);
        return;
    }
    proto_set_args set = set_from_json(f->json);
    json_t *entry = json_object();
    proto_error e;
    if (f->h.kind == RING_SET_CHECK)
        stage_check_set(nd, &set, entry, &e);
    else if (f->h.kind == RING_SET)
        stage_apply_set(nd, f->h.op, &set, entry, &e);
    else
        stage_undo_set(nd, f->h.op, entry, &e);
    json_array_append_new(stages, entry);
    stage_forward_frame(nd, f);
    stage_report(nd, &f->h, NULL);
}

static void on_drop(node *nd, ring_frame *f)
{
    stage_drop_sessions(nd, json_object_get(f->json, "sessions"));
    if (!nd->tail)
        stage_forward_frame(nd, f);
}

void stage_on_frame(node *nd, ring_frame *f)
{
    switch (f->h.kind) {
    case RING_PREPARE:
        on_prepare(nd, f);
        return;
    case RING_START:
        on_start(nd, f);
        return;
    case RING_HIDDEN:
        on_hidden(nd, f);
        return;
    case RING_BATCH:
        on_batch(nd, f);
        return;
    case RING_END:
        on_end(nd, f);
        return;
    case RING_SET_CHECK:
    case RING_SET:
    case RING_SET_UNDO:
        on_set(nd, f);
        return;
    case RING_DROP:
        on_drop(nd, f);
        return;
    default:
        steplog_line(nd->log, "RING", "dropped a %s frame: only the head takes those",
                     ring_kind_name(f->h.kind));
        return;
    }
}
