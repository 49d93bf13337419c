/* stress_modes.c: the legs of a stress run. A quality leg asks the head
 * for one quality measurement. A growth leg grows one session
 * level by level until the target or the first failure; a fixed leg keeps
 * up to its concurrency of requests of one shape in flight, for a number
 * of requests (fixed) or a duration (soak), sending each as soon as a
 * slot is free (the node decides what runs at once and what queues); a
 * sweep applies each grid point live, checks it in every node's
 * telemetry, and runs a leg of either kind. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stress_int.h"

enum { WAIT_ENDED = 1, WAIT_TIME = 0, WAIT_ABORTED = -1, WAIT_BROKEN = -2 };

static void note_request_failure(stress_run *r, const st_outcome *o)
{
    st_note_failure(r, "leg %d, request %lld at context %lld: %s: %s", r->leg, (long long)o->idx,
                    (long long)o->ctx_before, o->code, o->message);
}

/* Pumps until a request ends (WAIT_ENDED, *out filled) or until_ms passes.
 * On abort the requests in flight are ended and recorded first. */
static int await(stress_run *r, double until_ms, st_outcome *out)
{
    for (;;) {
        if (st_take(r, out))
            return WAIT_ENDED;
        if (st_aborted(r)) {
            st_end_all(r, "aborted", "the run was aborted");
            return WAIT_ABORTED;
        }
        double now = clock_ms();
        if (now >= until_ms)
            return WAIT_TIME;
        double wait = fmin(until_ms - now, 100.0);
        char err[256];
        if (st_pump(r, (int)ceil(wait), err, sizeof err) != 0) {
            st_note_failure(r, "leg %d: %s", r->leg, err);
            st_end_all(r, "internal", err);
            return WAIT_BROKEN;
        }
    }
}

static store_status status_of_wait(int w)
{
    return w == WAIT_ABORTED ? STORE_ABORTED : STORE_FAILED;
}

/* args for one synthetic generate request; NULL when out of memory. */
static json_t *generate_args(const stress_run *r, int64_t prompt, const char *session)
{
    json_t *a = json_pack("{sI si si sI}", "synthetic_tokens", (json_int_t)prompt, "max_tokens",
                          r->o.gen, "temperature", 0, "seed", (json_int_t)(r->o.seed & INT64_MAX));
    if (a && session)
        json_object_set_new(a, "session", json_string(session));
    return a;
}

static int send_request(stress_run *r, int64_t prompt, const char *session, int64_t ctx_before,
                        int64_t ctx_target)
{
    char err[256] = "out of memory";
    int rc;
    if (r->target.http) {
        rc = st_http_send(r, ctx_before, ctx_target, (int)prompt, r->o.gen, err, sizeof err);
    } else {
        json_t *a = generate_args(r, prompt, session);
        rc = a ? st_send(r, a, ctx_before, ctx_target, (int)prompt, r->o.gen, err, sizeof err) : -1;
        json_decref(a);
    }
    if (rc != 0)
        st_note_failure(r, "leg %d: cannot send a request: %s", r->leg, err);
    return rc;
}

/* Frees a growth session's cache on every stage; a failure here is only
 * memory left for the node's LRU eviction, so it is not the leg's. */
static void drop_session(stress_run *r, const char *session)
{
    proto_reply rep;
    char err[256];
    json_t *a = json_pack("{ss}", "session", session);
    if (a && st_call(r, "drop_session", a, &rep, 5000, err, sizeof err) == 1)
        proto_reply_free(&rep);
    json_decref(a);
}

/* ---- growth ---- */

static store_status leg_growth(stress_run *r)
{
    const stress_opts *o = &r->o;
    char session[PROTO_ID_MAX + 1];
    snprintf(session, sizeof session, "stress-%lld-%d", (long long)r->run, r->leg);
    int64_t levels = 1;
    for (int64_t l = o->from; l < o->to; l = stress_growth_next(l, o->to, o->factor, o->step))
        levels++;
    st_progress_leg(r, levels, o->to);
    store_status status = STORE_COMPLETED;
    int64_t ctx = 0;
    for (int64_t level = o->from;; level = stress_growth_next(level, o->to, o->factor, o->step)) {
        /* From the context the node reports, not the plan: a level the
         * context already passed is skipped. Over HTTP each level is a
         * request of its own, of the level's size. */
        int64_t prompt = r->target.http ? (level > o->gen ? level - o->gen : 1)
                                        : stress_prompt_for(ctx, level, o->gen);
        if (prompt >= 1) {
            if (send_request(r, prompt, session, ctx, level) != 0) {
                status = STORE_FAILED;
                break;
            }
            st_outcome out;
            int w = await(r, INFINITY, &out);
            if (w != WAIT_ENDED) {
                status = status_of_wait(w);
                break;
            }
            st_progress_request(r, &out, out.ok ? out.ctx_after : ctx);
            if (!out.ok) {
                note_request_failure(r, &out);
                status = STORE_FAILED;
                break;
            }
            ctx = out.ctx_after;
            st_progress_work(r, (double)ctx, (double)o->to);
        }
        if (level == o->to)
            break;
    }
    /* After an abort the cancelled request may still hold the session:
     * leave it to the node's eviction rather than wait. */
    if (status != STORE_ABORTED && !r->target.http)
        drop_session(r, session);
    return status;
}

/* ---- fixed and soak ---- */

static void soak_keep(stress_run *r, const st_outcome *out)
{
    if (r->soak_n + 3 > r->soak_cap) {
        size_t cap = r->soak_cap ? 2 * r->soak_cap : 3 * 1024;
        double *v = realloc(r->soak_v, cap * sizeof *v);
        if (!v)
            return; /* drift loses a request, the record does not */
        r->soak_v = v;
        r->soak_cap = cap;
    }
    r->soak_v[r->soak_n++] = out->ttft_ms;
    r->soak_v[r->soak_n++] = out->e2e_ms;
    r->soak_v[r->soak_n++] = out->decode_tps;
}

/* The first node that is down, or NULL. */
static const st_node *node_down(const stress_run *r)
{
    for (int i = 0; i < r->n_nodes; i++)
        if (r->nodes[i].down)
            return &r->nodes[i];
    return NULL;
}

/* requests > 0: that many; else for duration_s. At most the leg's
 * concurrency in flight; with a rate, requests start at Poisson arrival
 * times (an arrival finding every slot taken waits for one). */
static store_status leg_fixed(stress_run *r, int64_t requests, double duration_s)
{
    const stress_opts *o = &r->o;
    stress_rng rng;
    stress_rng_seed(&rng, o->seed + (uint64_t)r->leg);
    double t0 = clock_ms();
    double t_end = requests > 0 ? INFINITY : t0 + duration_s * 1000.0;
    double next = t0;
    int64_t sent = 0;
    int stop = 0;
    store_status status = STORE_COMPLETED;
    st_progress_leg(r, requests > 0 ? requests : -1, -1);
    for (;;) {
        double now = clock_ms();
        /* Every request needs every stage: with one down, sending more
         * would only pile up timeouts (a soak would for its whole duration). */
        const st_node *down = node_down(r);
        if (down && !stop) {
            st_note_failure(r, "leg %d: node '%s' is down", r->leg, down->name);
            status = STORE_FAILED;
            stop = 1;
        }
        int more = !stop && (requests > 0 ? sent < requests : now < t_end);
        if (!more && r->n_inflight == 0)
            break;
        int slot = r->n_inflight < r->concurrency;
        if (more && slot && now >= next) {
            if (send_request(r, o->prompt_tokens, NULL, 0, o->prompt_tokens + o->gen) != 0) {
                status = STORE_FAILED;
                stop = 1;
                continue;
            }
            sent++;
            if (o->rate > 0)
                next += stress_rng_gap(&rng, o->rate) * 1000.0;
            continue;
        }
        /* Wake for the next arrival or the end of a soak, while sending. */
        double until = !more ? now + 100.0 : slot ? fmin(next, t_end) : fmin(now + 100.0, t_end);
        st_outcome out;
        int w = await(r, until, &out);
        if (w == WAIT_ABORTED || w == WAIT_BROKEN) {
            status = status_of_wait(w);
            break;
        }
        if (w == WAIT_ENDED) {
            st_progress_request(r, &out, out.ctx_after);
            if (!out.ok) {
                note_request_failure(r, &out);
                status = STORE_FAILED;
                stop |= o->stop_on_failure;
            } else if (o->mode == STORE_MODE_SOAK) {
                soak_keep(r, &out);
            }
        }
        if (requests > 0)
            st_progress_work(r, (double)(r->ok_requests + r->failed_requests), (double)requests);
        else
            st_progress_work(r, fmin(clock_ms() - t0, duration_s * 1000.0), duration_s * 1000.0);
    }
    return status;
}

/* ---- quality ---- */

/* Measures what kv_bits does to the model's distributions on the run's
 * text (the `quality` op: both passes on the head's ring, nothing set on
 * the nodes) and records it with the leg. A silence of --timeout (no
 * frame: the op sends one a chunk) fails it. */
static store_status measure_quality(stress_run *r, int kv_bits)
{
    const stress_opts *o = &r->o;
    json_t *a = json_pack("{ss si}", "prompt", o->text, "kv_bits", kv_bits);
    if (a && o->ctx > 0)
        json_object_set_new(a, "ctx", json_integer(o->ctx));
    if (a && o->bucket > 0)
        json_object_set_new(a, "bucket", json_integer(o->bucket));
    if (a && o->score_from >= 0)
        json_object_set_new(a, "score_from", json_integer(o->score_from));
    if (a && r->prefill_step > 0)
        json_object_set_new(a, "prefill_step", json_integer(r->prefill_step));
    proto_reply rep;
    char err[512] = "out of memory";
    st_progress_measuring(r, 1);
    int got =
        a ? st_call(r, "quality", a, &rep, (int)(o->timeout_s * 1000.0), err, sizeof err) : -1;
    st_progress_measuring(r, 0);
    json_decref(a);
    if (got != 1) {
        if (st_aborted(r))
            return STORE_ABORTED;
        st_note_failure(r, "leg %d: quality at kv_bits %d: %s", r->leg, kv_bits, err);
        return STORE_FAILED;
    }
    r->measurements++;
    store_quality q = {.run = r->run,
                       .leg = r->leg,
                       .text_name = r->o.text_name,
                       .model = r->nodes[0].status.model.name};
    memcpy(q.text_sha256, r->text_sha256, sizeof q.text_sha256);
    store_status st = STORE_FAILED;
    if (!rep.ok)
        st_note_failure(r, "leg %d: quality at kv_bits %d: %s: %s", r->leg, kv_bits, rep.code,
                        rep.message);
    else if (st_quality_read(rep.json, &q, err, sizeof err) != 0)
        st_note_failure(r, "leg %d: quality at kv_bits %d: %s", r->leg, kv_bits, err);
    else if (store_quality_add(r->db, &q) != 0)
        st_note_failure(r,
                        "leg %d: quality at kv_bits %d: the history did not take the measurement",
                        r->leg, kv_bits);
    else
        st = STORE_COMPLETED;
    if (st == STORE_COMPLETED)
        st_progress_quality(r, &q);
    free(q.buckets);
    proto_reply_free(&rep);
    return st;
}

static store_status run_leg(stress_run *r, store_mode mode)
{
    switch (mode) {
    case STORE_MODE_QUALITY:
        st_progress_leg(r, -1, -1);
        return r->target.http ? st_topk_measure(r, r->kv_bits) : measure_quality(r, r->kv_bits);
    case STORE_MODE_GROWTH:
        return leg_growth(r);
    case STORE_MODE_SOAK:
        return leg_fixed(r, 0, r->o.duration_s);
    default:
        return leg_fixed(r, r->o.requests, 0);
    }
}

/* ---- sweep ---- */

static int every_node_shows(const stress_run *r, int kv_bits, int prefill_step, int *lagging)
{
    for (int i = 0; i < r->n_nodes; i++)
        if (r->nodes[i].kv_bits != kv_bits || r->nodes[i].prefill_step != prefill_step) {
            *lagging = i;
            return 0;
        }
    return 1;
}

/* Applies a grid point through the head (which passes it around the ring)
 * and waits until every node's own telemetry reports it. */
static int apply_settings(stress_run *r, int kv_bits, int prefill_step)
{
    if (r->target.http)
        return st_restart_with(r, kv_bits, prefill_step);
    for (int i = 0; i < r->n_nodes; i++)
        r->nodes[i].kv_bits = r->nodes[i].prefill_step = -1;
    double t0 = clock_ms();
    proto_reply rep;
    char err[256];
    json_t *a = json_pack("{si si}", "kv_bits", kv_bits, "prefill_step", prefill_step);
    int got = a ? st_call(r, "set", a, &rep, 60000, err, sizeof err) : -1;
    json_decref(a);
    if (got != 1 && st_aborted(r))
        return -1;
    if (got != 1) {
        st_note_failure(r, "leg %d: set kv_bits %d, prefill_step %d: %s", r->leg, kv_bits,
                        prefill_step, a ? err : "out of memory");
        return -1;
    }
    json_t *d =
        json_pack("{si si sb}", "kv_bits", kv_bits, "prefill_step", prefill_step, "acked", rep.ok);
    if (d && rep.ok)
        json_object_set(d, "stages", json_object_get(rep.json, "stages"));
    if (!rep.ok) {
        st_note_failure(r, "leg %d: set kv_bits %d, prefill_step %d: %s: %s", r->leg, kv_bits,
                        prefill_step, rep.code, rep.message);
        json_object_set_new(d, "error",
                            json_pack("{ss ss}", "code", rep.code, "message", rep.message));
        st_event(r, r->nodes[0].name, "config", d);
        proto_reply_free(&rep);
        return -1;
    }
    proto_reply_free(&rep);
    /* Heartbeats come every second: a few of them is plenty. */
    double deadline = clock_ms() + 10000.0;
    int lag = 0;
    while (!every_node_shows(r, kv_bits, prefill_step, &lag)) {
        if (st_aborted(r) || clock_ms() > deadline || st_pump(r, 50, err, sizeof err) != 0) {
            if (!st_aborted(r))
                st_note_failure(r,
                                "leg %d: node '%s' still reports kv_bits %d, prefill_step %d "
                                "10 s after set kv_bits %d, prefill_step %d",
                                r->leg, r->nodes[lag].name, r->nodes[lag].kv_bits,
                                r->nodes[lag].prefill_step, kv_bits, prefill_step);
            json_object_set_new(d, "verified", json_false());
            st_event(r, r->nodes[0].name, "config", d);
            return -1;
        }
    }
    json_object_set_new(d, "verified", json_true());
    json_object_set_new(d, "verify_ms", json_real(clock_ms() - t0));
    st_event(r, r->nodes[0].name, "config", d);
    return 0;
}

static store_status run_legs(stress_run *r)
{
    const stress_opts *o = &r->o;
    int sweep = o->mode == STORE_MODE_SWEEP;
    r->n_legs = stress_leg_count(o);
    store_status run = STORE_COMPLETED;
    for (int leg = 0; leg < r->n_legs; leg++) {
        store_leg_info info;
        stress_leg_at(o, leg, &info);
        /* A quality leg's kv_bits is the setting it measures; other
         * legs outside a sweep run at the ring's own. */
        if (!sweep) {
            if (o->mode != STORE_MODE_QUALITY)
                info.kv_bits = r->nodes[0].kv_bits;
            info.prefill_step = r->nodes[0].prefill_step;
        }
        r->leg = leg;
        r->kv_bits = info.kv_bits;
        r->prefill_step = info.prefill_step;
        r->concurrency = info.concurrency;
        st_progress_work(r, 0, 1);
        store_leg_start(r->db, r->run, leg, &info);
        store_status st = STORE_FAILED;
        if (!sweep || apply_settings(r, r->kv_bits, r->prefill_step) == 0)
            st = run_leg(r, sweep ? o->leg_mode : o->mode);
        /* Speed and quality of the same setting: measured even after a
         * failed speed leg (an OOM at a large context says nothing of
         * the answers), but not after an abort or a store failure. */
        if (sweep && o->quality && !st_aborted(r) && !r->store_broken) {
            store_status q = measure_quality(r, r->kv_bits);
            if (st == STORE_COMPLETED)
                st = q;
        }
        if (st_aborted(r))
            st = STORE_ABORTED;
        store_leg_end(r->db, r->run, leg, st);
        if (st == STORE_ABORTED)
            return STORE_ABORTED;
        if (st == STORE_FAILED) {
            run = STORE_FAILED;
            if (o->stop_on_failure || r->store_broken)
                break;
        }
    }
    return run;
}

/* A sweep leaves the ring as it found it (unless --keep-last): the
 * settings every node reported at connect go back through the head, also
 * after a failed leg or an abort, whose flag is lifted for the restore
 * (a restore is one set, bounded by its timeouts). A ring that was mixed
 * at start cannot be restored through the head: the run says so. */
static int restore_found(stress_run *r, int kv_bits, int prefill_step, int uniform)
{
    if (!uniform) {
        st_note_failure(r, "the settings found at start differ between the nodes: not restored");
        return -1;
    }
    int aborted = atomic_exchange(&r->abort, 0);
    r->leg = r->n_legs;
    int rc = apply_settings(r, kv_bits, prefill_step);
    if (aborted)
        atomic_store(&r->abort, aborted);
    json_t *d = json_pack("{si si sb}", "kv_bits", kv_bits, "prefill_step", prefill_step,
                          "restored", rc == 0);
    st_event(r, r->nodes[0].name, "restore", d);
    return rc;
}

store_status st_run_legs(stress_run *r)
{
    int sweep = r->o.mode == STORE_MODE_SWEEP, uniform = 1;
    int kv_bits = r->nodes[0].kv_bits, prefill_step = r->nodes[0].prefill_step;
    for (int i = 1; i < r->n_nodes; i++)
        uniform &= r->nodes[i].kv_bits == kv_bits && r->nodes[i].prefill_step == prefill_step;
    store_status run = run_legs(r);
    if (sweep && !r->o.keep_last && !r->store_broken &&
        restore_found(r, kv_bits, prefill_step, uniform) != 0 && run == STORE_COMPLETED)
        run = STORE_FAILED;
    return run;
}
