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
    return sess_bytes(nd->sessions) + (nd->cur.live ? kv_bytes(nd->cur.kv) : 0);
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
    size_t scratch = fwd_scratch_bytes_for(nd->fwd, fwd_kv_shape(nd->fwd), n);
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
        if (guard_admit(g, add_sat(kv, stage_step_bytes(nd, mid, eval)), 0, &evict, msg,
                        sizeof msg) == GUARD_FITS)
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
    out->needed = add_sat(kv, step);
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
                       "%s: context %d at kv_bits %d (KV cache %zu bytes, a step %zu bytes): %s",
                       who, ctx, nd->kv_bits, kv, step, msg);
        return;
    }
    out->chunk = stage_chunk_cap(nd, kv, chunk, eval);
}

int stage_begin(node *nd, uint64_t op, const char *req, const char *session, int pos, int ctx,
                const proto_generate_args *sampling, uint64_t seed, proto_error *e)
{
    char err[256];
    if (nd->cur.live)
        stage_end(nd, 0, -1);
    stage_req *c = &nd->cur;
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
    return 0;
}

void stage_end(node *nd, int ok, int pending_token)
{
    stage_req *c = &nd->cur;
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
    /* The next request admits its own chunk's scratch: this one's goes. */
    fwd_scratch_release(nd->fwd);
    /* KV blocks are small allocations: without a trim, the heap keeps the
     * pages and RSS (which the memory guard reads) would not come down. */
    malloc_trim(0);
}

int stage_forward(node *nd, const int *tokens, const float *x_in, int n, float *x_out,
                  float *logits, fwd_stats *st, proto_error *e)
{
    char err[256];
    if (fwd_step(nd->fwd, nd->cur.kv, tokens, x_in, n, x_out, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", nd->o.name, err);
    return 0;
}

int stage_forward_logits(node *nd, const int *tokens, const float *x_in, int n, float *logits,
                         fwd_stats *st, proto_error *e)
{
    char err[256];
    if (fwd_step_logits(nd->fwd, nd->cur.kv, tokens, x_in, n, logits, st, err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': %s", nd->o.name, err);
    return 0;
}

void stage_publish(node *nd, int64_t step, int decode, int n, int pos, int chunk, double step_ms,
                   const fwd_stats *st, double wait_ms)
{
    const guard_mem *g = node_mem(nd, 0);
    proto_step s;
    memset(&s, 0, sizeof s);
    snprintf(s.req, sizeof s.req, "%s", nd->cur.req);
    s.step = step;
    s.phase = decode ? PROTO_PHASE_DECODE : PROTO_PHASE_PREFILL;
    s.tokens = n;
    s.pos = pos + n;
    s.step_ms = step_ms;
    s.model_ms = st->model_ms;
    s.eval_ms = step_ms > st->model_ms ? step_ms - st->model_ms : 0.0;
    s.wait_ms = wait_ms < s.eval_ms ? wait_ms : s.eval_ms;
    s.comm_ms = s.eval_ms - s.wait_ms;
    s.kv_bytes = stage_kv_bytes(nd);
    s.kv_bits = nd->kv_bits;
    s.prefill_step = chunk;
    s.rss = g->rss;
    s.budget = g->budget;
    s.headroom = guard_headroom(g);
    s.act_max = st->nonfinite ? NAN : st->act_max;
    s.nonfinite = st->nonfinite;
    tel_step(nd->tel, &s);
    steplog_step(nd->log, &s);
    if (st->nonfinite && !nd->cur.numeric) {
        nd->cur.numeric = 1;
        json_t *d =
            json_pack("{sI sI}", "step", (json_int_t)step, "nonfinite", (json_int_t)st->nonfinite);
        node_event(nd, PROTO_EV_NUMERIC, nd->cur.req, "", d,
                   "stage '%s' output %d non-finite values at step %lld (positions %d..%d)",
                   nd->o.name, st->nonfinite, (long long)step, pos, pos + n - 1);
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
    if (nd->cur.live)
        tally(kv_bytes(nd->cur.kv), kv_bytes_for(shape, bits, nd->cur.ctx), &grow, &shrink);
    for (int i = 0; i < sess_count(nd->sessions); i++) {
        kv_cache *kv = sess_cache_at(nd->sessions, i);
        tally(kv_bytes(kv), kv_bytes_for(shape, bits, kv_len(kv)), &grow, &shrink);
    }
    return grow > shrink ? grow - shrink : 0;
}

/* Converts every cache this node holds to `bits`; on a failure converts
 * the ones already done back, so that all caches keep one precision. */
static int stage_convert(node *nd, int bits, char *err, size_t errlen)
{
    int n = sess_count(nd->sessions) + (nd->cur.live ? 1 : 0);
    for (int i = 0; i < n; i++) {
        kv_cache *kv = i < sess_count(nd->sessions) ? sess_cache_at(nd->sessions, i) : nd->cur.kv;
        if (kv_convert(kv, bits, err, errlen) != 0) {
            char ignored[64];
            for (int k = 0; k < i; k++) {
                kv_cache *done =
                    k < sess_count(nd->sessions) ? sess_cache_at(nd->sessions, k) : nd->cur.kv;
                kv_convert(done, nd->kv_bits, ignored, sizeof ignored);
            }
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
        node_event(nd, PROTO_EV_KV_CONVERTED, nd->cur.live ? nd->cur.req : "", "", d,
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
    node_event(nd, PROTO_EV_CONFIG_APPLIED, nd->cur.live ? nd->cur.req : "", "", d,
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
    if (nd->cur.live && nd->cur.op != f->h.op) {
        steplog_line(nd->log, "REQ", "%s abandoned by the head", nd->cur.req);
        stage_end(nd, 0, -1);
    }
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
    steplog_line(nd->log, "REQ", "%s start session='%s' pos=%d", nd->cur.req, nd->cur.session,
                 nd->cur.pos0);
    if (!nd->tail)
        stage_forward_frame(nd, f);
}

/* Runs a step into a frame of n * out->dim floats and sends it on: hidden
 * states to the next stage or, for an eval on the tail, every position's
 * logits to the head. The frame is the buffer: nothing is copied. */
static int send_floats(node *nd, const ring_frame *f, ring_hdr *out, double t0, fwd_stats *st,
                       proto_error *e, char *err, size_t errlen)
{
    zmq_msg_t msg;
    float *y = ring_hidden_init(&msg, out);
    if (!y)
        return proto_fail(e, PROTO_E_INTERNAL, "", "stage '%s': out of memory for step %lld",
                          nd->o.name, (long long)f->h.step);
    int rc = out->kind == RING_LOGITS ? stage_forward_logits(nd, NULL, f->x, f->h.n, y, st, e)
                                      : stage_forward(nd, NULL, f->x, f->h.n, y, NULL, st, e);
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
static int send_token(node *nd, const ring_frame *f, ring_hdr *out, double t0, fwd_stats *st,
                      proto_error *e, char *err, size_t errlen)
{
    int sample = (f->h.flags & RING_F_SAMPLE) != 0;
    if (stage_forward(nd, NULL, f->x, f->h.n, NULL, sample ? nd->logits : NULL, st, e) != 0)
        return -1;
    out->kind = RING_TOKEN;
    out->dim = 0;
    out->token = sample ? sampler_sample(nd->cur.smp, nd->logits) : -1;
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
    stage_req *c = &nd->cur;
    if (!c->live || c->op != in->op) {
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
        rc = send_token(nd, f, &out, t0, &st, &e, err, sizeof err);
    else
        rc = send_floats(nd, f, &out, t0, &st, &e, err, sizeof err);
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
    stage_publish(nd, in->step, (in->flags & RING_F_DECODE) != 0, in->n, in->pos, in->chunk,
                  clock_ms() - t0, &st, 0.0);
}

static void on_end(node *nd, ring_frame *f)
{
    if (nd->cur.live && nd->cur.op == f->h.op) {
        int ok = json_is_true(json_object_get(f->json, "ok"));
        steplog_line(nd->log, "REQ", "%s end %s", nd->cur.req, ok ? "ok" : "failed");
        stage_end(nd, ok, -1);
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
