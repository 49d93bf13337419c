/* stress_progress.c: what a run shares between its thread and the
 * callers watching it: progress, chart points, the abort flag. The run's
 * thread writes it under the run's lock (st_progress_*), watchers copy it
 * out (stress_progress_get, stress_points_since). Below the files that run
 * the legs, so that they report without calling up into stress.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stress_int.h"

int st_aborted(stress_run *r)
{
    return atomic_load(&r->abort);
}

void st_progress_leg(stress_run *r, int64_t requests_total, int64_t ctx_target)
{
    pthread_mutex_lock(&r->mu);
    r->prog.leg = r->leg;
    r->prog.n_legs = r->n_legs;
    r->prog.kv_bits = r->kv_bits;
    r->prog.prefill_step = r->prefill_step;
    r->prog.concurrency = r->concurrency;
    r->prog.agg_tps = 0.0;
    r->prog.decode_p50 = 0.0;
    r->prog.requests_total = requests_total;
    r->prog.ctx = 0;
    r->prog.ctx_target = ctx_target;
    r->leg_fraction = 0.0;
    pthread_mutex_unlock(&r->mu);
    r->leg_t_first = 0.0;
    r->leg_gen_tokens = 0;
    r->leg_decode_n = 0;
}

/* Takes an ok request's decode tok/s into the leg's p50, as the store
 * keeps it (a negative one is unknown). Out of memory, the p50 stays as
 * it was: a figure on screen, not one recorded. */
static void leg_decode_add(stress_run *r, double tps)
{
    if (tps < 0)
        return;
    if (r->leg_decode_n == r->leg_decode_cap) {
        size_t cap = r->leg_decode_cap ? 2 * r->leg_decode_cap : 64;
        double *v = realloc(r->leg_decode, cap * sizeof *v);
        if (!v)
            return;
        r->leg_decode = v;
        r->leg_decode_cap = cap;
    }
    r->leg_decode[r->leg_decode_n++] = tps;
}

/* The leg's aggregate tok/s as the store will compute it at its end:
 * every request's tokens, ok or not, over the time since the first was
 * sent. */
void st_progress_request(stress_run *r, const st_outcome *o, int64_t ctx)
{
    r->leg_gen_tokens += o->gen_tokens;
    double wall_s = r->leg_t_first > 0 ? (clock_ms() - r->leg_t_first) / 1000.0 : 0.0;
    pthread_mutex_lock(&r->mu);
    if (wall_s > 0)
        r->prog.agg_tps = (double)r->leg_gen_tokens / wall_s;
    r->prog.requests_done++;
    r->prog.requests_failed += !o->ok;
    r->prog.ctx = ctx;
    if (o->ok) {
        leg_decode_add(r, o->decode_tps);
        if (r->leg_decode_n)
            r->prog.decode_p50 = store_percentile(r->leg_decode, r->leg_decode_n, 50);
    }
    if (o->ok)
        r->points[r->n_points++ % STRESS_POINTS_MAX] = o->point;
    pthread_mutex_unlock(&r->mu);
}

void st_progress_work(stress_run *r, double done, double total)
{
    pthread_mutex_lock(&r->mu);
    r->leg_fraction = total > 0 ? fmin(done / total, 1.0) : 0.0;
    r->prog.in_flight = r->n_inflight;
    r->prog.telemetry_lost = r->telemetry_lost;
    pthread_mutex_unlock(&r->mu);
}

void st_progress_error(stress_run *r, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&r->mu);
    va_start(ap, fmt);
    vsnprintf(r->prog.last_error, sizeof r->prog.last_error, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&r->mu);
}

void stress_quality_leg_of(const store_quality *q, double decode_p50, stress_quality_leg *out)
{
    memset(out, 0, sizeof *out);
    out->leg = q->leg;
    out->kv_bits = q->kv_bits;
    out->ref_kv_bits = q->ref_kv_bits;
    out->topk = q->topk;
    out->kl_mean = q->kl_mean;
    out->kl_p99 = q->kl_p99;
    out->kl_max = q->kl_max;
    out->top1 = q->top1;
    out->ppl_ref = q->ppl_ref;
    out->ppl_test = q->ppl_test;
    out->decode_p50 = decode_p50;
    for (size_t i = 0; i < q->n_buckets && out->n_buckets < STRESS_QBUCKETS_MAX; i++) {
        int k = out->n_buckets++;
        out->bucket_from[k] = q->buckets[i].from;
        out->bucket_to[k] = q->buckets[i].to;
        out->bucket_kl[k] = q->buckets[i].positions > 0 ? q->buckets[i].kl_mean : NAN;
    }
}

/* The newest STRESS_QUALITY_MAX legs stay, oldest dropped first. */
void st_progress_quality(stress_run *r, const store_quality *q)
{
    pthread_mutex_lock(&r->mu);
    int speed = r->o.mode == STORE_MODE_SWEEP && r->leg_decode_n;
    stress_progress *p = &r->prog;
    if (p->n_quality == STRESS_QUALITY_MAX) {
        memmove(&p->quality[0], &p->quality[1], (STRESS_QUALITY_MAX - 1) * sizeof p->quality[0]);
        p->n_quality--;
    }
    stress_quality_leg_of(q, speed ? p->decode_p50 : NAN, &p->quality[p->n_quality++]);
    pthread_mutex_unlock(&r->mu);
}

void st_progress_measuring(stress_run *r, int on)
{
    pthread_mutex_lock(&r->mu);
    r->prog.measuring = on;
    pthread_mutex_unlock(&r->mu);
}

size_t stress_points_since(stress_run *r, size_t *seen, store_point *out, size_t max)
{
    pthread_mutex_lock(&r->mu);
    size_t from = *seen;
    if (r->n_points > STRESS_POINTS_MAX && from < r->n_points - STRESS_POINTS_MAX)
        from = r->n_points - STRESS_POINTS_MAX;
    size_t n = 0;
    for (; from < r->n_points && n < max; from++)
        out[n++] = r->points[from % STRESS_POINTS_MAX];
    *seen = from;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void stress_progress_get(stress_run *r, stress_progress *p)
{
    pthread_mutex_lock(&r->mu);
    *p = r->prog;
    double end = r->t_end_ms > 0 ? r->t_end_ms : clock_ms();
    p->elapsed_s = (end - r->t0_ms) / 1000.0;
    if (p->state == STRESS_FINISHED)
        p->eta_s = 0.0;
    else if (p->state == STRESS_RUNNING && p->n_legs > 0)
        p->eta_s = stress_eta(p->elapsed_s, (p->leg + r->leg_fraction) / p->n_legs, 1.0);
    else
        p->eta_s = -1.0;
    pthread_mutex_unlock(&r->mu);
}

void stress_abort(stress_run *r)
{
    atomic_store(&r->abort, 1);
}

void st_note_failure(stress_run *r, const char *fmt, ...)
{
    char msg[sizeof r->failure];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!r->failure[0])
        snprintf(r->failure, sizeof r->failure, "%s", msg);
    st_progress_error(r, "%s", msg);
}
