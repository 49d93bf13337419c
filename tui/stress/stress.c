/* stress.c: the life of a stress run. stress_start copies the options and
 * starts the run's thread; the thread connects to the ring, records the
 * run (its parameters and the cluster it ran on, from every node's
 * status), runs the legs and records how it ended. The caller's thread
 * only reads the progress snapshot under the lock and may ask for an
 * abort, so a console never blocks on the network or the disk. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "engine/sys/clock.h"
#include "stress_int.h"

/* ---- progress (written by the run's thread, read by anyone) ---- */

/* ---- the run ---- */

static json_t *growth_params(const stress_opts *o)
{
    json_t *p = json_pack("{sI sI si}", "from", (json_int_t)o->from, "to", (json_int_t)o->to, "gen",
                          o->gen);
    if (p && o->step > 0)
        json_object_set_new(p, "step", json_integer(o->step));
    else if (p)
        json_object_set_new(p, "factor", json_real(o->factor));
    return p;
}

static json_t *int_list(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* concurrency: one number, or a sweep's list (each leg records its own). */
static json_t *fixed_params(const stress_opts *o)
{
    json_t *conc = o->mode == STORE_MODE_SWEEP ? int_list(o->concurrency, o->n_concurrency)
                                               : json_integer(o->concurrency[0]);
    json_t *p =
        json_pack("{si si so sf sI}", "prompt_tokens", o->prompt_tokens, "gen", o->gen,
                  "concurrency", conc, "rate", o->rate, "seed", (json_int_t)(o->seed & INT64_MAX));
    if (p && o->mode == STORE_MODE_SOAK)
        json_object_set_new(p, "duration_s", json_real(o->duration_s));
    else if (p)
        json_object_set_new(p, "requests", json_integer(o->requests));
    return p;
}

/* What a quality measurement scores, for the run's parameters. */
static void quality_params(json_t *p, const stress_run *r)
{
    const stress_opts *o = &r->o;
    json_object_set_new(p, "text", json_string(o->text_name));
    json_object_set_new(p, "text_sha256", json_string(r->text_sha256));
    if (o->ctx > 0)
        json_object_set_new(p, "ctx", json_integer(o->ctx));
    if (o->bucket > 0)
        json_object_set_new(p, "bucket", json_integer(o->bucket));
    if (o->score_from >= 0)
        json_object_set_new(p, "score_from", json_integer(o->score_from));
}

/* The run's parameters as recorded in runs.params. */
static char *params_json(const stress_run *r)
{
    const stress_opts *o = &r->o;
    store_mode legs = o->mode == STORE_MODE_SWEEP ? o->leg_mode : o->mode;
    json_t *p = legs == STORE_MODE_QUALITY
                    ? json_pack("{so}", "kv_bits", int_list(o->kv_bits, o->n_kv_bits))
                : legs == STORE_MODE_GROWTH ? growth_params(o)
                                            : fixed_params(o);
    if (!p)
        return NULL;
    if (legs == STORE_MODE_QUALITY || o->quality)
        quality_params(p, r);
    json_object_set_new(p, "mode", json_string(store_mode_name(o->mode)));
    json_object_set_new(p, "timeout_s", json_real(o->timeout_s));
    json_object_set_new(p, "stop_on_failure", json_boolean(o->stop_on_failure));
    if (o->mode == STORE_MODE_SWEEP) {
        json_object_set_new(p, "leg_mode", json_string(store_mode_name(o->leg_mode)));
        json_object_set_new(p, "kv_bits", int_list(o->kv_bits, o->n_kv_bits));
        json_object_set_new(p, "prefill_step", int_list(o->prefill_step, o->n_prefill_step));
        json_object_set_new(p, "keep_last", json_boolean(o->keep_last));
    }
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return text;
}

static void fill_result(stress_run *r, store_status status, stress_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = status;
    res->run_id = r->run;
    res->requests = r->ok_requests + r->failed_requests;
    res->failed = r->failed_requests;
    if (r->counted) {
        res->unrecorded =
            res->requests > r->recorded_requests ? res->requests - r->recorded_requests : 0;
        res->requests = r->recorded_requests;
        res->failed = r->recorded_failed;
    }
    res->measurements = r->measurements;
    if (r->t_first_sent > 0 && r->t_last_end > r->t_first_sent) {
        res->wall_s = (r->t_last_end - r->t_first_sent) / 1000.0;
        res->req_per_s = (double)r->ok_requests / res->wall_s;
        res->tok_per_s = (double)r->gen_tokens_ok / res->wall_s;
    }
    size_t n = r->soak_n / 3;
    double *v = n ? malloc(3 * n * sizeof *v) : NULL;
    if (v) {
        for (size_t i = 0; i < n; i++) {
            v[i] = r->soak_v[3 * i];
            v[n + i] = r->soak_v[3 * i + 1];
            v[2 * n + i] = r->soak_v[3 * i + 2];
        }
        stress_drift_of(v, v + n, v + 2 * n, n, &res->drift);
        free(v);
    }
    snprintf(res->failure, sizeof res->failure, "%s", r->failure);
    res->store_failed = r->store_broken;
}

/* The figures the tables do not hold, kept with the run as a `result`
 * event so that the console's History can show them later. */
static void record_result(stress_run *r, const stress_result *res)
{
    json_t *d = json_pack("{sI sI sf sf sf}", "requests", (json_int_t)res->requests, "failed",
                          (json_int_t)res->failed, "wall_s", res->wall_s, "req_per_s",
                          res->req_per_s, "tok_per_s", res->tok_per_s);
    if (d && res->unrecorded)
        json_object_set_new(d, "unrecorded", json_integer(res->unrecorded));
    if (d && res->drift.valid)
        json_object_set_new(d, "drift",
                            json_pack("{sf sf sf sf sf sf}", "ttft_ms_first", res->drift.ttft_first,
                                      "ttft_ms_last", res->drift.ttft_last, "e2e_ms_first",
                                      res->drift.e2e_first, "e2e_ms_last", res->drift.e2e_last,
                                      "decode_tps_first", res->drift.decode_first,
                                      "decode_tps_last", res->drift.decode_last));
    if (d && r->telemetry_lost)
        json_object_set_new(d, "telemetry_lost", json_integer(r->telemetry_lost));
    st_event(r, NULL, "result", d);
}

/* Writes how the run ended, and waits until it is written so that the
 * console's History, on another connection, sees it. When the store
 * cannot write it (still a full disk), the run stays `running` in the
 * history until the next infertop to open the database marks it aborted;
 * the failure says so. */
static void record_end(stress_run *r, store_status status)
{
    char why[256];
    /* Earlier write errors are in the failure already: only this one counts. */
    store_flush(r->db, why, sizeof why);
    /* Every row of the run is now written or lost: the result reports
     * what the history holds, not what the runner saw. */
    store_run got;
    if (store_run_get(r->db, r->run, &got, why, sizeof why) == 0) {
        r->recorded_requests = got.n_requests;
        r->recorded_failed = got.n_failed;
        r->counted = 1;
        store_run_free(&got);
    }
    stress_result res;
    fill_result(r, status, &res);
    record_result(r, &res);
    store_run_end(r->db, r->run, status, r->failure[0] ? r->failure : NULL);
    if (store_flush(r->db, why, sizeof why) == 0)
        return;
    char was[sizeof r->failure];
    snprintf(was, sizeof was, "%s", r->failure);
    snprintf(r->failure, sizeof r->failure,
             "%.250s%sthe run's end cannot be written either (%.120s): it shows as running "
             "until infertop next opens the database",
             was, was[0] ? "; " : "", why);
    r->store_broken = 1;
    st_progress_error(r, "%s", r->failure);
}

static void set_state(stress_run *r, stress_state state, store_status status)
{
    pthread_mutex_lock(&r->mu);
    r->prog.state = state;
    r->prog.status = status;
    r->prog.run_id = r->run;
    r->prog.telemetry_lost = r->telemetry_lost;
    if (state == STRESS_FINISHED)
        r->t_end_ms = clock_ms();
    pthread_mutex_unlock(&r->mu);
}

/* The last request's final frame comes from the head, but the other
 * stages publish their steps of it on their own sockets, which may be a
 * few ms behind: without this, a run's last steps on those stages (the
 * ones that reach its largest context) could go unrecorded. */
static void settle(stress_run *r)
{
    char err[256];
    double until = clock_ms() + ST_SETTLE_MS;
    for (double now = clock_ms(); now < until && !st_aborted(r); now = clock_ms())
        if (st_pump(r, (int)(until - now) + 1, err, sizeof err) != 0)
            break;
}

static void *run_main(void *arg)
{
    stress_run *r = arg;
    char err[512], why[256];
    int connected = st_connect(r, err, sizeof err) == 0;
    char *cluster = connected ? st_cluster_json(r) : NULL;
    char *params = params_json(r);
    if (connected && !r->target.http)
        snprintf(r->engine_version, sizeof r->engine_version, "%s", r->nodes[0].status.version);
    store_run_info info = {.name = r->o.name[0] ? r->o.name : NULL,
                           .notes = r->o.notes[0] ? r->o.notes : NULL,
                           .mode = r->o.mode,
                           .params = params,
                           .cluster = cluster,
                           .engine =
                               r->target.http ? eng_name(r->target.http_node.engine) : "inferd",
                           .engine_version = r->engine_version[0] ? r->engine_version : NULL};
    store_status status = STORE_FAILED;
    if (store_run_begin(r->db, &info, &r->run, why, sizeof why) != 0) {
        snprintf(r->failure, sizeof r->failure, "recording the run: %s", why);
        st_progress_error(r, "%s", r->failure);
    } else {
        set_state(r, STRESS_RUNNING, STORE_RUNNING);
        if (connected) {
            status = st_run_legs(r);
            st_topk_end(r);
            settle(r);
        } else {
            status = st_aborted(r) ? STORE_ABORTED : STORE_FAILED;
            snprintf(r->failure, sizeof r->failure, "%s", err);
            st_progress_error(r, "%s", err);
        }
        if (status == STORE_ABORTED && !r->failure[0])
            snprintf(r->failure, sizeof r->failure, "aborted by the operator");
    }
    free(cluster);
    free(params);
    st_disconnect(r);
    if (r->store_broken)
        status = STORE_FAILED;
    if (r->run > 0)
        record_end(r, status);
    fill_result(r, status, &r->res);
    set_state(r, STRESS_FINISHED, status);
    return NULL;
}

/* An HTTP node takes its settings at start: a sweep that changes them
 * needs the target's way to restart it. */
static int check_http_sweep(const stress_opts *o, const stress_target *t, char *err, size_t errlen)
{
    const stress_http_node *n = &t->http_node;
    if (o->mode != STORE_MODE_SWEEP || t->apply_knobs)
        return 0;
    for (int i = 0; i < o->n_kv_bits; i++)
        if (o->kv_bits[i] != n->kv_bits)
            goto refuse;
    for (int i = 0; i < o->n_prefill_step; i++)
        if (o->prefill_step[i] != n->prefill_step)
            goto refuse;
    return 0;
refuse:
    snprintf(err, errlen,
             "a sweep over kv_bits or prefill_step on node '%s' (%s, over HTTP) needs a restart "
             "of the node between legs, and this infertop has no way to restart it: sweep "
             "only --concurrency, at the node's kv_bits %d and prefill_step %d",
             n->name, eng_name(n->engine), n->kv_bits, n->prefill_step);
    return -1;
}

int stress_start(stress_run **out, const stress_opts *o, const stress_target *t, store *db,
                 char *err, size_t errlen)
{
    *out = NULL;
    if (stress_opts_check(o, err, errlen) != 0)
        return -1;
    if (!t->http && (t->n_nodes < 1 || t->n_nodes > STRESS_NODES_MAX)) {
        snprintf(err, errlen, "%d nodes given: expected 1..%d", t->n_nodes, STRESS_NODES_MAX);
        return -1;
    }
    if (t->http && check_http_sweep(o, t, err, errlen) != 0)
        return -1;
    if (t->http && o->mode == STORE_MODE_SWEEP && o->quality) {
        snprintf(err, errlen,
                 "node '%s' (%s) is driven over HTTP: sweep --quality needs the `quality` op of "
                 "an inferd ring (-c with the ring, or --control/--telemetry); `stress quality "
                 "--node` estimates an HTTP node's quality from top-k logprobs",
                 t->http_node.name, eng_name(t->http_node.engine));
        return -1;
    }
    /* The estimate's two settings are the node's by restart. */
    if (t->http && o->mode == STORE_MODE_QUALITY && !t->apply_knobs) {
        snprintf(err, errlen,
                 "node '%s' (%s): a top-k quality estimate restarts the node with the reference "
                 "setting and each one measured, and this infertop has no way to restart it",
                 t->http_node.name, eng_name(t->http_node.engine));
        return -1;
    }
    stress_run *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (t->http && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "libcurl cannot start");
        free(r);
        return -1;
    }
    r->o = *o;
    r->target = *t;
    r->db = db;
    if (o->text) {
        if (!(r->text = strdup(o->text))) {
            snprintf(err, errlen, "out of memory");
            free(r);
            return -1;
        }
        r->o.text = r->text;
        st_text_sha256(r->text, r->text_sha256);
    }
    atomic_init(&r->abort, 0);
    pthread_mutex_init(&r->mu, NULL);
    r->prog.state = STRESS_STARTING;
    r->prog.mode = o->mode;
    r->prog.status = STORE_RUNNING;
    r->prog.requests_total = -1;
    r->prog.ctx_target = -1;
    r->prog.eta_s = -1.0;
    r->t0_ms = clock_ms();
    if (pthread_create(&r->thread, NULL, run_main, r) != 0) {
        snprintf(err, errlen, "cannot start the run's thread");
        pthread_mutex_destroy(&r->mu);
        if (t->http)
            curl_global_cleanup();
        free(r->text);
        free(r);
        return -1;
    }
    r->started = 1;
    *out = r;
    return 0;
}

void stress_wait(stress_run *r, stress_result *res)
{
    if (r->started) {
        pthread_join(r->thread, NULL);
        r->started = 0;
    }
    *res = r->res;
}

void stress_free(stress_run *r)
{
    if (!r)
        return;
    if (r->started) {
        stress_abort(r);
        pthread_join(r->thread, NULL);
    }
    pthread_mutex_destroy(&r->mu);
    if (r->target.http)
        curl_global_cleanup();
    free(r->soak_v);
    free(r->leg_decode);
    free(r->text);
    free(r);
}
