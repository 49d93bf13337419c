/* stage_admit.c: whether a request fits this stage (see stage_admit in
 * stage.h): its context against --max-ctx and --max-seqs, its cache and
 * steps against the memory guard beside what the running requests were
 * promised, evicting idle sessions when that makes room; and the largest
 * prefill chunk whose steps fit. */
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stage.h"
#include "stage_state.h"

/* What the running requests' caches will still grow by, up to the
 * context each was admitted for: memory the guard does not see yet but
 * has promised. */
static size_t stage_promised(const stage *sg)
{
    kv_shape shape = fwd_kv_shape(sg->fwd);
    size_t sum = 0;
    for (int i = 0; i < NODE_SEQS_MAX; i++) {
        const stage_req *c = &sg->reqs[i];
        if (!c->live)
            continue;
        size_t want = kv_bytes_for(shape, kv_bits(c->kv), c->ctx), have = kv_bytes(c->kv);
        sum += want > have ? want - have : 0;
        if (c->other) {
            want = kv_bytes_for(shape, kv_bits(c->other), c->ctx);
            have = kv_bytes(c->other);
            sum += want > have ? want - have : 0;
        }
    }
    return sum;
}

/* Frees idle sessions, least recently used first (never `keep`), until
 * `bytes` are freed; their names go to `evicted`. */
static void stage_evict(stage *sg, const char *keep, size_t bytes, json_t *evicted)
{
    size_t freed = 0;
    while (freed < bytes) {
        const char *name = sess_lru(sg->sessions, keep);
        if (!name)
            break;
        char copy[PROTO_ID_MAX + 1];
        snprintf(copy, sizeof copy, "%s", name);
        int pending;
        kv_cache *kv = sess_take(sg->sessions, copy, &pending);
        freed += kv_bytes(kv);
        kv_free(kv);
        json_array_append_new(evicted, json_string(copy));
        steplog_line(sg->nd->log, "SESSION", "evicted '%s' (least recently used) to make room",
                     copy);
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
static size_t stage_logit_chunks(const stage *sg, stage_eval eval)
{
    if (eval == STAGE_EVAL_NONE)
        return 0;
    /* A quality request's head keeps the reference chunk until the test
     * chunk's comes. */
    if (eval == STAGE_QUALITY)
        return sg->nd->head ? 2 : (size_t)sg->nd->tail;
    return (size_t)(sg->nd->head || sg->nd->tail) +
           (size_t)(sg->nd->head && eval == STAGE_EVAL_RAW);
}

/* Bytes a step of n positions needs beyond what this node holds now: its
 * forward pass's scratch, the hidden states it receives and sends (a
 * frame each way, n * dim floats) and an eval's logits. */
static size_t stage_step_bytes(stage *sg, int n, stage_eval eval)
{
    /* A decode batch of every running request is a step of that many rows. */
    int rows = n > sg->nd->o.max_seqs ? n : sg->nd->o.max_seqs;
    size_t scratch = fwd_scratch_bytes_for(sg->fwd, fwd_kv_shape(sg->fwd), rows);
    size_t held = fwd_scratch_bytes(sg->fwd);
    size_t frames = (size_t)(!sg->nd->head + !sg->nd->tail) * (size_t)n * (size_t)sg->nd->cfg->dim *
                    sizeof(float);
    size_t logits =
        stage_logit_chunks(sg, eval) * (size_t)n * (size_t)sg->nd->cfg->vocab_size * sizeof(float);
    return add_sat(add_sat(scratch > held ? scratch - held : 0, frames), logits);
}

/* The largest chunk up to `chunk` whose step fits beside `kv` new bytes of
 * cache; 1 when none does (admission has checked that 1 fits). */
static int stage_chunk_cap(stage *sg, size_t kv, int chunk, stage_eval eval)
{
    const guard_mem *g = node_mem(sg->nd, 1);
    int lo = 1, hi = chunk;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        size_t evict;
        char msg[8];
        size_t need = add_sat(add_sat(kv, stage_promised(sg)), stage_step_bytes(sg, mid, eval));
        if (guard_admit(g, need, 0, &evict, msg, sizeof msg) == GUARD_FITS)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void stage_admit(stage *sg, const char *session, int pos, int ctx, int chunk, stage_eval eval,
                 int quality_bits, json_t *evicted, stage_admission *out)
{
    char who[PROTO_TEXT_MAX + 64];
    stage_name_layers(sg, who, sizeof who);
    memset(out, 0, sizeof *out);
    char msg[PROTO_MESSAGE_MAX];
    if (guard_ctx(sg->nd->o.max_ctx, ctx, msg, sizeof msg) != 0) {
        admission_fail(out, PROTO_E_CTX_LIMIT, "%s: %s", who, msg);
        return;
    }
    /* The head counts its own places; another stage with a smaller
     * --max-seqs says so here rather than failing a batch later. */
    if (sg->n_reqs >= sg->nd->o.max_seqs) {
        admission_fail(out, PROTO_E_BUSY,
                       "%s: %d requests already running here (--max-seqs %d); give every stage "
                       "the head's --max-seqs",
                       who, sg->n_reqs, sg->nd->o.max_seqs);
        return;
    }
    size_t held = 0;
    if (session[0]) {
        int len = sess_len(sg->sessions, session);
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
            sess_drop(sg->sessions, session);
        if (pos > 0)
            held = kv_bytes(sess_peek(sg->sessions, session));
    }
    int bits = quality_bits ? quality_bits : sg->kv_bits;
    size_t want = kv_bytes_for(fwd_kv_shape(sg->fwd), bits, ctx);
    if (quality_bits)
        want = add_sat(want, kv_bytes_for(fwd_kv_shape(sg->fwd), 32, ctx));
    size_t kv = want > held ? want - held : 0, step = stage_step_bytes(sg, 1, eval);
    size_t promised = stage_promised(sg);
    out->needed = add_sat(add_sat(kv, step), promised);
    size_t idle = sess_bytes(sg->sessions) - held;
    const guard_mem *g = node_mem(sg->nd, 1);
    out->available = guard_available(g);
    out->budget = g->budget;
    size_t evict;
    switch (guard_admit(g, out->needed, idle, &evict, msg, sizeof msg)) {
    case GUARD_FITS:
        break;
    case GUARD_EVICT:
        stage_evict(sg, session, evict, evicted);
        break;
    case GUARD_REFUSE:
        admission_fail(out, PROTO_E_KV_OOM,
                       "%s: context %d at kv_bits %d%s (KV cache %zu bytes, a step %zu bytes, "
                       "%zu bytes promised to the %d requests running): %s",
                       who, ctx, bits, quality_bits ? " and 32 (the reference)" : "", kv, step,
                       promised, sg->n_reqs, msg);
        return;
    }
    out->chunk = stage_chunk_cap(sg, kv, chunk, eval);
}
