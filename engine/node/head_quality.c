/* head_quality.c: see head_quality.h. Memory is one chunk's logits of the
 * reference (kept until the test chunk of the same positions comes: frames
 * come back in the order the head sent them) and the figures of the scored
 * positions, never context x vocabulary. */
#include "head_quality.h"

#include <stdlib.h>
#include <string.h>

#include "engine/compute/kldiv.h"
#include "quality.h"
#include "stage.h"

struct head_quality {
    kld_plan plan;
    kld_acc *acc;
    /* The next step: window w from position p, the reference's when ref. */
    int w, p, ref;
    int n_ref;          /* the reference chunk's length, which the test's repeats */
    int step_w, step_p; /* the step begun, for its ids */
    /* The logits back: the window they are of, the reference chunk held. */
    int take_w;
    float *ref_logits;
    size_t ref_cap; /* floats */
    int ref_pos, ref_n;
    double *kl; /* a chunk frame's figures */
    int *agree;
    int cap;
};

void head_quality_free(head_quality *q)
{
    if (!q)
        return;
    kld_acc_free(q->acc);
    free(q->ref_logits);
    free(q->kl);
    free(q->agree);
    free(q);
}

/* The text's ids: a prompt's from the tokenizer, or the request's. */
static const int *text_ids(const job *j)
{
    return j->req.generate.input == PROTO_INPUT_PROMPT ? j->ids : j->req.generate.tokens;
}

int head_quality_prepare(head *hd, job *j, int n, proto_error *e)
{
    const proto_quality_args *a = &j->req.quality;
    char err[PROTO_MESSAGE_MAX - 64];
    head_quality *q = calloc(1, sizeof *q);
    if (!q)
        return proto_fail(e, PROTO_E_INTERNAL, "", "out of memory for a quality request");
    j->q = q;
    q->ref = 1;
    if (kld_plan_make(&q->plan, n, a->ctx, a->has_score_from ? a->score_from : -1, a->bucket,
                      hd->nd->o.max_ctx, tok_bos(hd->tok), err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_BAD_VALUE, a->ctx ? "ctx" : "score_from", "%s", err);
    if (kld_acc_create(&q->acc, kld_positions(&q->plan), err, sizeof err) != 0)
        return proto_fail(e, PROTO_E_INTERNAL, "", "%s", err);
    j->n_ids = 2 * q->plan.windows * q->plan.len;
    return 0;
}

int head_quality_ctx(const job *j)
{
    return j->q->plan.len;
}

int head_quality_pos(const job *j)
{
    return j->q->p;
}

int head_quality_left(const job *j)
{
    return j->q->plan.len - j->q->p;
}

unsigned head_quality_begin(job *j, stage_req *c, int *n)
{
    head_quality *q = j->q;
    unsigned flags = (q->ref ? RING_F_REF : 0u) | (q->p == 0 ? RING_F_RESET : 0u);
    q->step_w = q->w;
    q->step_p = q->p;
    if (q->ref) {
        q->n_ref = *n;
    } else {
        *n = q->n_ref;
        q->p += q->n_ref;
        if (q->p == q->plan.len) {
            q->w++;
            q->p = 0;
        }
    }
    q->ref = !q->ref;
    stage_req_select(c, flags);
    return flags;
}

int head_quality_id(const job *j, int i)
{
    const head_quality *q = j->q;
    return kld_token(&q->plan, text_ids(j), q->step_w, q->step_p + i);
}

float *head_quality_ref(head *hd, job *j, int n, proto_error *e)
{
    head_quality *q = j->q;
    size_t want = (size_t)n * (size_t)hd->nd->cfg->vocab_size;
    if (want > q->ref_cap) {
        free(q->ref_logits);
        q->ref_cap = 0;
        if (!(q->ref_logits = malloc(want * sizeof *q->ref_logits))) {
            proto_fail(e, PROTO_E_INTERNAL, "",
                       "out of memory for the reference logits of %d positions", n);
            return NULL;
        }
        q->ref_cap = want;
    }
    return q->ref_logits;
}

/* The test chunk against the reference chunk held: each scored
 * position's figures kept, the chunk's frame to the client. */
static int compare(head *hd, job *j, int pos, int n, const float *test, proto_error *e)
{
    head_quality *q = j->q;
    int vocab = hd->nd->cfg->vocab_size;
    if (n > q->cap) {
        free(q->kl);
        free(q->agree);
        q->kl = malloc((size_t)n * sizeof *q->kl);
        q->agree = malloc((size_t)n * sizeof *q->agree);
        q->cap = q->kl && q->agree ? n : 0;
        if (!q->cap)
            return proto_fail(e, PROTO_E_INTERNAL, "", "out of memory for a chunk of %d positions",
                              n);
    }
    int k = 0, first = pos;
    for (int i = 0; i < n; i++) {
        if (!kld_scored(&q->plan, pos + i))
            continue;
        kld_pos r;
        size_t at = (size_t)i * (size_t)vocab;
        kld_position(q->ref_logits + at, test + at, vocab,
                     kld_token(&q->plan, text_ids(j), q->take_w, pos + i + 1), &r);
        kld_acc_add(q->acc, pos + i, &r);
        if (k == 0)
            first = pos + i;
        q->kl[k] = r.kl;
        q->agree[k++] = r.agree;
    }
    node_reply(hd->nd, &j->from,
               proto_reply_quality(j->req.id, q->take_w, first, q->kl, q->agree, k));
    if (pos + n == q->plan.len)
        q->take_w++;
    return 0;
}

int head_quality_take(head *hd, job *j, unsigned flags, int pos, int n, const float *logits,
                      proto_error *e)
{
    head_quality *q = j->q;
    if (flags & RING_F_REF) {
        if (logits != q->ref_logits) {
            if (!head_quality_ref(hd, j, n, e))
                return -1;
            memcpy(q->ref_logits, logits,
                   (size_t)n * (size_t)hd->nd->cfg->vocab_size * sizeof *logits);
        }
        q->ref_pos = pos;
        q->ref_n = n;
        return 0;
    }
    if (pos != q->ref_pos || n != q->ref_n)
        return proto_fail(e, PROTO_E_INTERNAL, "",
                          "a test chunk of positions %d+%d came after the reference chunk %d+%d",
                          pos, n, q->ref_pos, q->ref_n);
    return compare(hd, j, pos, n, logits, e);
}

json_t *head_quality_result(const job *j, proto_error *e)
{
    char err[PROTO_MESSAGE_MAX - 64];
    json_t *o = quality_json(&j->q->plan, j->q->acc, j->req.quality.kv_bits, err, sizeof err);
    if (!o)
        proto_fail(e, PROTO_E_INTERNAL, "", "%s", err);
    return o;
}
