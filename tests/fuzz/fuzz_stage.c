/* fuzz_stage.c: libFuzzer target for the stage-frame decoder, which reads
 * what any peer that reaches a stage's --listen sends. Whatever the bytes,
 * the decoder must return a frame whose fields are all in range, or a
 * message, without crashing or leaking; a JSON payload decoded into its
 * kind's struct, which is all the handlers read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/node/ring.h"
#include "engine/sys/kvbits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A string member ends inside the member, and is not longer than max. */
#define CHECK_STR(a, max)                                                                          \
    do {                                                                                           \
        if (!memchr((a), 0, sizeof(a)) || strlen(a) > (max))                                       \
            abort();                                                                               \
    } while (0)

static void check_code(proto_code c)
{
    if ((unsigned)c >= PROTO_CODE_COUNT)
        abort();
}

static void check_stages(const ring_stages *s)
{
    if (s->n < 0 || s->n > PROTO_RING_MAX)
        abort();
    for (int i = 0; i < s->n; i++) {
        const ring_stage *e = &s->v[i];
        CHECK_STR(e->name, PROTO_NAME_MAX);
        CHECK_STR(e->fingerprint, RING_FINGERPRINT_LEN);
        CHECK_STR(e->model, RING_MODEL_MAX);
        CHECK_STR(e->next, PROTO_TEXT_MAX - 1);
        CHECK_STR(e->message, PROTO_MESSAGE_MAX - 1);
        check_code(e->code);
        if (e->first < 0 || e->last > RING_LAYERS_MAX || e->chunk < 0 ||
            e->chunk > PROTO_PREFILL_STEP_MAX || (e->ok != 0 && e->ok != 1))
            abort();
    }
}

static void check_ids(const ring_ids *ids, int lo)
{
    if (ids->n < lo || ids->n > RING_DROP_MAX || (ids->n > 0 && !ids->v))
        abort();
    for (int i = 0; i < ids->n; i++)
        if (!memchr(ids->v[i], 0, sizeof ids->v[i]) || !ids->v[i][0])
            abort();
}

/* A request's place: pos below ctx, both within the context bound. */
static void check_context(const char *req, const char *session, int pos, int ctx)
{
    if (!req[0] || !memchr(session, 0, PROTO_ID_MAX + 1) || pos < 0 || ctx <= pos ||
        ctx > RING_CTX_MAX)
        abort();
}

/* The decoded payload: every value within the range its field allows. */
static void check_msg(ring_kind kind, const ring_msg *m)
{
    switch (kind) {
    case RING_PREPARE: {
        const ring_msg_prepare *p = &m->prepare;
        CHECK_STR(p->head, PROTO_TEXT_MAX - 1);
        CHECK_STR(p->head_key, CURVE_Z85_LEN);
        CHECK_STR(p->req, PROTO_ID_MAX);
        check_context(p->req, p->session, p->pos, p->ctx);
        if (p->chunk < 1 || p->chunk > PROTO_PREFILL_STEP_MAX || p->running.n < 0 ||
            p->running.n > RING_RUNNING_MAX)
            abort();
        for (int i = 0; i < p->running.n; i++)
            if (p->running.v[i] < 1)
                abort();
        check_ids(&p->drop, 0);
        check_stages(&p->stages);
        return;
    }
    case RING_START: {
        const ring_msg_start *s = &m->start;
        CHECK_STR(s->req, PROTO_ID_MAX);
        check_context(s->req, s->session, s->pos, s->ctx);
        if (!(s->temperature >= 0 && s->temperature <= PROTO_TEMPERATURE_MAX) ||
            !(s->top_p > 0 && s->top_p <= 1))
            abort();
        check_stages(&s->stages);
        return;
    }
    case RING_SET:
    case RING_SET_CHECK:
    case RING_SET_UNDO: {
        const proto_set_args *a = &m->set.args;
        if ((kind != RING_SET_UNDO && !a->has_prefill_step && !a->has_kv_bits) ||
            (a->has_kv_bits && !kv_bits_valid(a->kv_bits)) ||
            (a->has_prefill_step &&
             (a->prefill_step < 0 || a->prefill_step > PROTO_PREFILL_STEP_MAX)))
            abort();
        check_stages(&m->set.stages);
        return;
    }
    case RING_DROP:
        check_ids(&m->drop.sessions, 1);
        return;
    case RING_REPORT:
        check_code(m->report.code);
        CHECK_STR(m->report.message, PROTO_MESSAGE_MAX - 1);
        if (m->report.of <= 0 || m->report.of >= RING_KIND_COUNT)
            abort();
        return;
    default:
        return;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ring_frame f;
    char err[512] = "";
    if (ring_frame_decode(data, size, &f, err, sizeof err) != 0) {
        if (!err[0])
            abort();
        return 0;
    }
    /* An accepted frame's payload is exactly what its header claims: floats
     * (hidden states, an eval's logits), a batch's segments and floats, a
     * batch's tokens, a token, or JSON. */
    int floats = f.h.kind == RING_HIDDEN || f.h.kind == RING_LOGITS;
    int batch = f.h.kind == RING_BATCH, tokens = f.h.kind == RING_TOKENS;
    int json_kind = !floats && !batch && !tokens && f.h.kind != RING_TOKEN;
    if (json_kind != (f.json != NULL) || json_kind != (f.m != NULL) || batch != (f.segs != NULL) ||
        tokens != (f.tokens != NULL))
        abort();
    if (f.m)
        check_msg(f.h.kind, f.m);
    size_t rows = (size_t)f.h.n * (size_t)f.h.dim * sizeof(float);
    /* Logprobs records follow a token's or a batch's tokens, one a token. */
    int has_lp = (f.h.flags & RING_F_LOGPROBS) != 0;
    size_t n_lp = has_lp ? (tokens ? (size_t)f.h.n : 1) : 0;
    if ((floats && rows + RING_HDR_BYTES != size) ||
        (batch && rows + (size_t)f.h.n * RING_SEG_BYTES + RING_HDR_BYTES != size) ||
        (tokens &&
         (size_t)f.h.n * sizeof(int32_t) + n_lp * RING_LP_BYTES + RING_HDR_BYTES != size) ||
        (f.h.kind == RING_TOKEN && n_lp * RING_LP_BYTES + RING_HDR_BYTES != size) ||
        has_lp != (f.lp != NULL) || (has_lp && !tokens && f.h.kind != RING_TOKEN))
        abort();
    for (size_t i = 0; i < n_lp; i++) {
        const proto_logprobs *lp = &f.lp[i];
        if (lp->n_top < -1 || lp->n_top > PROTO_LOGPROBS_MAX ||
            (f.h.kind == RING_TOKEN && lp->n_top < 0) || (lp->n_top >= 0 && !(lp->logprob <= 0)))
            abort();
        for (int k = 0; k < lp->n_top; k++)
            if (lp->top[k] < 0 || lp->top[k] > PROTO_TOKEN_ID_MAX || !(lp->top_lp[k] <= 0) ||
                (k && lp->top_lp[k] > lp->top_lp[k - 1]))
                abort();
    }
    for (int i = 0; batch && i < f.h.n; i++)
        if (f.segs[i].op == 0 || f.segs[i].step < 0 || f.segs[i].pos < 0)
            abort();
    for (int i = 0; tokens && i < f.h.n; i++)
        if (f.tokens[i] < 0)
            abort();
    ring_frame_free(&f);
    return 0;
}
