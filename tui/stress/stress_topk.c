/* stress_topk.c: the quality of an HTTP node's setting, estimated from the
 * engine's top-k logprobs (the `quality` op is inferd's control socket's
 * only). The text is tokenized by the engine (BOS first where its
 * tokenizer adds one) and cut into windows as the op cuts it
 * (engine/PROTOCOL.md 2.7: windows of ctx tokens, each after the first
 * starting with the stream's first token, positions from score_from to
 * ctx-2 scored); each scored position is one completions request of its
 * prefix asking the next token's top k (tui/engine/eng_topk.h). The
 * reference setting (the engine's most precise, eng_knob_ref_bits) is
 * applied by restart and scored once, then each leg's setting; the
 * node's own start line comes back after the last leg. Perplexity is not
 * estimated: the text's next token is rarely among a greedy request's
 * alternatives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stress_int.h"
#include "tui/engine/eng_knob.h"

#define TOPK_CTX 256       /* the window when --ctx is not given */
#define TOPK_BUCKET 1024   /* the bucket width when --bucket is not given (the op's) */
#define TOPK_TOKENIZE_S 60 /* the whole text in one /tokenize */

struct st_topk {
    int *tokens;
    int n_tokens;
    int64_t ctx, score_from, windows, bucket;
    int per_window, n_pos; /* scored positions a window, and in all */
    int ref_bits;
    eng_topk *ref; /* the reference's top-k at each scored position */
    int restarted; /* a leg restarted the node: its start line comes back at the end */
};

double stress_topk_kl(const eng_topk *ref, const eng_topk *test, int *agree)
{
    double pr[ENG_TOPK_MAX + 1], pt[ENG_TOPK_MAX + 1], sr = 0.0, st = 0.0;
    int n = 0;
    for (int i = 0; i < ref->n; i++)
        for (int j = 0; j < test->n; j++)
            if (strcmp(ref->piece[i], test->piece[j]) == 0) {
                pr[n] = exp(ref->logprob[i]);
                pt[n] = exp(test->logprob[j]);
                sr += pr[n];
                st += pt[n];
                n++;
                break;
            }
    /* The rest: every token not in both lists, as one bucket. */
    pr[n] = 1.0 - sr;
    pt[n] = 1.0 - st;
    n++;
    sr = st = 0.0;
    for (int i = 0; i < n; i++) {
        pr[i] = fmax(pr[i], STRESS_TOPK_FLOOR);
        pt[i] = fmax(pt[i], STRESS_TOPK_FLOOR);
        sr += pr[i];
        st += pt[i];
    }
    double kl = 0.0;
    for (int i = 0; i < n; i++) {
        double r = pr[i] / sr, t = pt[i] / st;
        kl += r * (log(r) - log(t));
    }
    *agree = ref->n > 0 && test->n > 0 && strcmp(ref->piece[0], test->piece[0]) == 0;
    return kl;
}

/* ---- the text's positions ---- */

static int tokenize(stress_run *r, struct st_topk *k, char *err, size_t errlen)
{
    json_t *req = json_pack("{ss ss ss sb sb}", "content", r->o.text, "prompt", r->o.text, "model",
                            st_http_model(r), "add_special", 1, "add_special_tokens", 1);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    char why[512] = "out of memory";
    json_t *o = body ? st_http_json(r, "/tokenize", body, TOPK_TOKENIZE_S, why, sizeof why) : NULL;
    free(body);
    const json_t *t = json_object_get(o, "tokens"), *v;
    int rc = -1;
    if (!json_is_array(t)) {
        snprintf(err, errlen, "the engine's /tokenize cannot tokenize the text: %s",
                 o ? "its answer has no `tokens`" : why);
        goto done;
    }
    k->n_tokens = (int)json_array_size(t);
    k->tokens = malloc(((size_t)k->n_tokens + 1) * sizeof *k->tokens);
    if (!k->tokens) {
        snprintf(err, errlen, "out of memory for %d tokens", k->n_tokens);
        goto done;
    }
    size_t i;
    json_array_foreach(t, i, v)
    {
        if (!json_is_integer(v)) {
            snprintf(err, errlen, "/tokenize: token %zu is not an id", i);
            goto done;
        }
        k->tokens[i] = (int)json_integer_value(v);
    }
    rc = 0;
done:
    json_decref(o);
    return rc;
}

/* The windows and scored positions, as the op cuts them. */
static int cut(const stress_opts *o, struct st_topk *k, char *err, size_t errlen)
{
    k->ctx = o->ctx > 0 ? o->ctx : TOPK_CTX;
    k->score_from = o->score_from >= 0 ? o->score_from : k->ctx / 2;
    k->bucket = o->bucket > 0 ? o->bucket : TOPK_BUCKET;
    k->windows = k->n_tokens / k->ctx;
    if (k->windows < 1) {
        snprintf(err, errlen, "the text holds %d tokens, not one whole window of ctx %lld",
                 k->n_tokens, (long long)k->ctx);
        return -1;
    }
    if (k->score_from >= k->ctx - 1) {
        snprintf(err, errlen, "--score-from %lld leaves no position of a window of %lld to score",
                 (long long)k->score_from, (long long)k->ctx);
        return -1;
    }
    k->per_window = (int)(k->ctx - 1 - k->score_from);
    k->n_pos = (int)k->windows * k->per_window;
    return 0;
}

/* Scored position i: its window and its position within it. */
static void position_of(const struct st_topk *k, int i, int64_t *window, int64_t *pos)
{
    *window = i / k->per_window;
    *pos = k->score_from + i % k->per_window;
}

/* ---- one pass: every scored position under the node's setting ---- */

static int score_one(stress_run *r, const struct st_topk *k, int i, int *ids, eng_topk *out,
                     char *err, size_t errlen)
{
    int64_t w, p;
    position_of(k, i, &w, &p);
    memcpy(ids, k->tokens + w * k->ctx, (size_t)(p + 1) * sizeof *ids);
    ids[0] = k->tokens[0];
    char *body = eng_topk_body(st_http_model(r), ids, (int)p + 1, ENG_TOPK_K);
    char why[512] = "out of memory";
    long timeout = (long)ceil(r->o.timeout_s);
    json_t *o = body ? st_http_json(r, "/v1/completions", body, timeout, why, sizeof why) : NULL;
    free(body);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    int rc = text ? eng_topk_read(text, strlen(text), out, why, sizeof why) : -1;
    free(text);
    if (rc == 1)
        return 0; /* withheld (out->n 0): the position is left out of the figures */
    if (rc != 0)
        snprintf(err, errlen, "window %lld, position %lld: %s", (long long)w, (long long)p, why);
    return rc;
}

/* 0, -1 with err, or 1 on abort. */
static int score_all(stress_run *r, const struct st_topk *k, eng_topk *out, char *err,
                     size_t errlen)
{
    int *ids = malloc((size_t)k->ctx * sizeof *ids);
    if (!ids) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < k->n_pos && rc == 0; i++) {
        if (st_aborted(r))
            rc = 1;
        else
            rc = score_one(r, k, i, ids, &out[i], err, errlen);
        st_progress_work(r, i + 1, k->n_pos);
    }
    free(ids);
    return rc;
}

/* ---- the figures ---- */

/* llama-perplexity's "99.0% KLD", as the op computes it. */
static double p99_of(double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    double p = 0.99 * (double)(n - 1), f = floor(p);
    size_t i = (size_t)f, next = i + 1 < n ? i + 1 : n - 1;
    return (1.0 - (p - f)) * v[i] + (p - f) * v[next];
}

/* Mean, p99 and max of kl[sel[0..n)] and the share agreeing. */
static void figures(const double *kl, const int *agree, const int *sel, size_t n, double *work,
                    double *mean, double *p99, double *max, double *top1)
{
    double sum = 0.0, hi = 0.0;
    int same = 0;
    for (size_t i = 0; i < n; i++) {
        work[i] = kl[sel[i]];
        sum += work[i];
        hi = fmax(hi, work[i]);
        same += agree[sel[i]];
    }
    *mean = n ? sum / (double)n : NAN;
    *max = n ? hi : NAN;
    *top1 = n ? (double)same / (double)n : NAN;
    *p99 = n ? p99_of(work, n) : NAN;
}

/* The figures of the positions both passes have a top-k of (an engine
 * may withhold one: eng_topk_read); -1 when none has. */
static int fill(const struct st_topk *k, const eng_topk *test, store_quality *q)
{
    size_t n = (size_t)k->n_pos;
    double *kl = malloc(n * sizeof *kl), *work = malloc(n * sizeof *work);
    int *agree = malloc(n * sizeof *agree), *sel = malloc(n * sizeof *sel);
    int64_t nb = (k->ctx + k->bucket - 1) / k->bucket;
    q->buckets = calloc((size_t)nb, sizeof *q->buckets);
    int rc = -1;
    if (!kl || !work || !agree || !sel || !q->buckets)
        goto done;
    q->n_buckets = (size_t)nb;
    size_t both = 0;
    for (size_t i = 0; i < n; i++) {
        kl[i] = stress_topk_kl(&k->ref[i], &test[i], &agree[i]);
        if (k->ref[i].n && test[i].n)
            sel[both++] = (int)i;
    }
    q->positions = (int64_t)both;
    if (both == 0)
        goto done;
    figures(kl, agree, sel, both, work, &q->kl_mean, &q->kl_p99, &q->kl_max, &q->top1);
    for (int64_t b = 0; b < nb; b++) {
        store_quality_bucket *qb = &q->buckets[b];
        qb->from = b * k->bucket;
        qb->to = qb->from + k->bucket < k->ctx ? qb->from + k->bucket : k->ctx;
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t w, p;
            position_of(k, (int)i, &w, &p);
            if (p >= qb->from && p < qb->to && k->ref[i].n && test[i].n)
                sel[m++] = (int)i;
        }
        qb->positions = (int64_t)m;
        figures(kl, agree, sel, m, work, &qb->kl_mean, &qb->kl_p99, &qb->kl_max, &qb->top1);
        qb->ppl_ref = qb->ppl_test = NAN;
    }
    rc = 0;
done:
    free(kl);
    free(work);
    free(agree);
    free(sel);
    return rc;
}

/* ---- the legs ---- */

/* The text's positions and the reference's top-k, before the first leg. */
static int prepare(stress_run *r, char *err, size_t errlen)
{
    struct st_topk *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->topk = k;
    k->ref_bits = eng_knob_ref_bits(r->target.http_node.engine);
    if (tokenize(r, k, err, errlen) != 0 || cut(&r->o, k, err, errlen) != 0)
        return -1;
    if (!(k->ref = calloc((size_t)k->n_pos, sizeof *k->ref))) {
        snprintf(err, errlen, "out of memory for %d positions", k->n_pos);
        return -1;
    }
    k->restarted = 1;
    if (st_restart_with(r, k->ref_bits, r->prefill_step) != 0)
        return 1;
    int rc = score_all(r, k, k->ref, err, errlen);
    if (rc == 0)
        return 0;
    free(k->ref);
    k->ref = NULL;
    return rc;
}

store_status st_topk_measure(stress_run *r, int kv_bits)
{
    char err[768] = "";
    int rc = 0;
    if (!r->topk)
        rc = prepare(r, err, sizeof err);
    else if (!r->topk->ref) {
        snprintf(err, sizeof err, "the reference setting was not scored (an earlier leg failed)");
        rc = -1;
    }
    struct st_topk *k = r->topk;
    eng_topk *test = NULL;
    st_progress_measuring(r, 1);
    if (rc == 0 && st_restart_with(r, kv_bits, r->prefill_step) != 0)
        rc = 1;
    else if (rc == 0 && !(test = calloc((size_t)k->n_pos, sizeof *test))) {
        snprintf(err, sizeof err, "out of memory for %d positions", k->n_pos);
        rc = -1;
    } else if (rc == 0)
        rc = score_all(r, k, test, err, sizeof err);
    st_progress_measuring(r, 0);
    store_status st = STORE_FAILED;
    if (st_aborted(r))
        st = STORE_ABORTED;
    else if (rc < 0)
        st_note_failure(r, "leg %d: top-k quality at kv_bits %d: %s", r->leg, kv_bits, err);
    if (rc != 0) {
        free(test);
        return st;
    }
    r->measurements++;
    store_quality q = {.run = r->run,
                       .leg = r->leg,
                       .kv_bits = kv_bits,
                       .ref_kv_bits = k->ref_bits,
                       .ctx = k->ctx,
                       .score_from = k->score_from,
                       .windows = k->windows,
                       .positions = k->n_pos,
                       .ppl_ref = NAN,
                       .ppl_test = NAN,
                       .ppl_ref_err = NAN,
                       .topk = ENG_TOPK_K,
                       .text_name = r->o.text_name,
                       .model = (char *)st_http_model(r)};
    memcpy(q.text_sha256, r->text_sha256, sizeof q.text_sha256);
    if (fill(k, test, &q) != 0)
        st_note_failure(r, "leg %d: top-k quality at kv_bits %d: %s", r->leg, kv_bits,
                        q.n_buckets ? "the engine withheld the logprobs of every position"
                                    : "out of memory");
    else if (store_quality_add(r->db, &q) != 0)
        st_note_failure(r,
                        "leg %d: top-k quality at kv_bits %d: the history did not take the "
                        "measurement",
                        r->leg, kv_bits);
    else
        st = STORE_COMPLETED;
    if (st == STORE_COMPLETED)
        st_progress_quality(r, &q);
    free(q.buckets);
    free(test);
    return st;
}

void st_topk_end(stress_run *r)
{
    struct st_topk *k = r->topk;
    if (!k)
        return;
    const stress_http_node *n = &r->target.http_node;
    if (k->restarted && st_restart_with(r, n->kv_bits, n->prefill_step) != 0 && !r->failure[0])
        snprintf(r->failure, sizeof r->failure, "node '%s' was not restarted with its start line",
                 n->name);
    free(k->tokens);
    free(k->ref);
    free(k);
    r->topk = NULL;
}
