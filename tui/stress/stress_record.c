/* stress_record.c: what the stress runner writes to the store as things
 * come back from the ring: each step message as a step row (attributed to
 * the runner's request by its id, so late steps land on the right request
 * and leg), each event (the stage a refusal or timeout names becomes the
 * event's node), and each ended request with its client-side timings, its
 * inter-token latencies and the node's stats, as one requests row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stress_int.h"

/* ---- requests ---- */

static st_node *node_named(stress_run *r, const char *name)
{
    for (int i = 0; i < r->n_nodes; i++)
        if (strcmp(r->nodes[i].name, name) == 0)
            return &r->nodes[i];
    return NULL;
}

int st_store_failed(stress_run *r)
{
    char why[256];
    if (r->store_broken || !store_write_error(r->db, why, sizeof why))
        return r->store_broken;
    r->store_broken = 1;
    snprintf(r->failure, sizeof r->failure, "the run history cannot be written: %s", why);
    st_progress_error(r, "%s", r->failure);
    return 1;
}

void st_event(stress_run *r, const char *node, const char *kind, json_t *detail)
{
    char *text = detail ? json_dumps(detail, JSON_COMPACT) : NULL;
    store_event e = {.run = r->run, .node = node, .kind = kind, .detail = text};
    if (r->run > 0)
        store_event_add(r->db, &e);
    free(text);
    json_decref(detail);
}

static const st_req *req_by_id(const stress_run *r, const char *id)
{
    for (int i = 0; i < r->n_inflight; i++)
        if (strcmp(r->inflight[i].id, id) == 0)
            return &r->inflight[i];
    return NULL;
}

/* The runner's request index and leg of a request id; 0 when not ours. */
static int idmap_find(const stress_run *r, const char *id, int64_t *idx, int *leg)
{
    for (int i = 0; i < ST_IDMAP; i++)
        if (r->idmap[i].id[0] && strcmp(r->idmap[i].id, id) == 0) {
            *idx = r->idmap[i].idx;
            *leg = r->idmap[i].leg;
            return 1;
        }
    return 0;
}

static double or_unknown(const json_t *stats, const char *key)
{
    const json_t *v = json_object_get(stats, key);
    return json_is_number(v) ? json_number_value(v) : -1.0;
}

static double mean_itl(const st_req *q)
{
    double s = 0.0;
    for (int i = 0; i < q->n_tokens - 1; i++)
        s += q->itl[i];
    return q->n_tokens > 1 ? s / (q->n_tokens - 1) : -1.0;
}

/* Nearest-rank p50/p99 of a request's inter-token latencies (the gaps
 * between its generated tokens, reordered here); < 0 with fewer than two
 * tokens. */
static void itl_dist(st_req *q, double *p50, double *p99)
{
    *p50 = *p99 = -1.0;
    if (q->n_tokens < 2)
        return;
    store_dist d;
    store_dist_compute(q->itl, (size_t)(q->n_tokens - 1), &d);
    *p50 = d.p50;
    *p99 = d.p99;
}

/* The mean step_ms of a phase on the node where it is largest: in a ring
 * every token waits for every stage, so the slowest stage sets the pace.
 * < 0 when no step of the phase was seen. */
static double slowest_mean(const st_req *q, int n_nodes, int phase)
{
    double worst = -1.0;
    for (int i = 0; i < n_nodes; i++)
        if (q->step_n[i][phase] > 0 && q->step_sum[i][phase] / q->step_n[i][phase] > worst)
            worst = q->step_sum[i][phase] / q->step_n[i][phase];
    return worst;
}

static double nan_if_unknown(double v)
{
    return v < 0 ? NAN : v;
}

void st_token(st_req *q, double now)
{
    if (q->n_tokens == 0)
        q->t_first = now;
    else
        q->itl[q->n_tokens - 1] = now - q->t_prev;
    q->t_prev = now;
    q->n_tokens++;
}

void st_finish(stress_run *r, int i, int ok, const json_t *stats, const char *code,
               const char *message)
{
    st_req *q = &r->inflight[i];
    double now = clock_ms();
    st_outcome out = {.idx = q->idx, .ok = ok, .ctx_before = q->ctx_before};
    json_int_t ctx = json_integer_value(json_object_get(stats, "ctx"));
    out.ctx_after = ok && ctx > 0 ? ctx : q->ctx_target;
    /* The engine's own count where it gives one (over HTTP, `usage`: chunks
     * may carry more than a token each), else the token frames heard. */
    json_t *gen = json_object_get(stats, "gen_tokens");
    out.gen_tokens = ok && json_is_integer(gen) ? (int)json_integer_value(gen) : q->n_tokens;
    out.ttft_ms = q->t_first > 0 ? q->t_first - q->t_sent : -1.0;
    out.e2e_ms = now - q->t_sent;
    out.decode_tps = ok ? or_unknown(stats, "decode_tps") : -1.0;
    snprintf(out.code, sizeof out.code, "%s", ok ? "" : code);
    snprintf(out.message, sizeof out.message, "%s", ok ? "" : message);
    double tpot = mean_itl(q), itl_p50, itl_p99;
    itl_dist(q, &itl_p50, &itl_p99);
    double prefill_step_ms = slowest_mean(q, r->n_nodes, 0);
    double decode_step_ms = slowest_mean(q, r->n_nodes, 1);

    store_request row = {
        .run = r->run,
        .leg = q->leg,
        .idx = q->idx,
        .session = q->session[0] ? q->session : NULL,
        .ctx_before = q->ctx_before,
        .ctx_after = out.ctx_after,
        .prompt_tokens =
            ok ? json_integer_value(json_object_get(stats, "prompt_tokens")) : q->prompt_tokens,
        .gen_tokens = out.gen_tokens,
        .ttft_ms = out.ttft_ms,
        .prefill_ms = ok ? or_unknown(stats, "prefill_ms") : -1.0,
        .prefill_tps = ok ? or_unknown(stats, "prefill_tps") : -1.0,
        .decode_tps = out.decode_tps,
        .tpot_ms = tpot,
        .itl_p50_ms = itl_p50,
        .itl_p99_ms = itl_p99,
        .prefill_step_ms = prefill_step_ms,
        .decode_step_ms = decode_step_ms,
        .e2e_ms = out.e2e_ms,
        .ok = ok,
        .error_code = ok ? NULL : code,
        .error_message = ok ? NULL : message,
    };
    store_request_add(r->db, &row);
    out.point = (store_point){
        .leg = q->leg,
        .idx = q->idx,
        .ctx = out.ctx_after,
        .prefill_tps = nan_if_unknown(row.prefill_tps),
        .decode_tps = nan_if_unknown(row.decode_tps),
        .prefill_step_ms = nan_if_unknown(prefill_step_ms),
        .decode_step_ms = nan_if_unknown(decode_step_ms),
    };

    if (ok) {
        r->ok_requests++;
        r->gen_tokens_ok += out.gen_tokens;
    } else {
        r->failed_requests++;
    }
    r->t_last_end = now;
    if (r->n_done < ST_INFLIGHT_MAX)
        r->done[r->n_done++] = out;
    free(q->itl);
    r->inflight[i] = r->inflight[--r->n_inflight];
}

/* ---- telemetry ---- */

/* The stage a head's error message names ("stage 'b' (layers 2:4) ..."). */
static void stage_named(const char *message, char *out, size_t len)
{
    const char *p = strstr(message, "stage '");
    out[0] = '\0';
    if (!p)
        return;
    p += strlen("stage '");
    const char *q = strchr(p, '\'');
    if (q && (size_t)(q - p) < len)
        snprintf(out, len, "%.*s", (int)(q - p), p);
}

static void on_step(stress_run *r, const proto_tel *t)
{
    const proto_step *s = &t->step;
    int64_t idx = -1;
    int leg = r->leg;
    int ours = idmap_find(r, s->req, &idx, &leg);
    st_req *q = (st_req *)req_by_id(r, s->req);
    if (q)
        q->t_activity = clock_ms(); /* a long prefill is not silence */
    st_node *n = node_named(r, t->head.node);
    if (q && n) {
        int phase = s->phase == PROTO_PHASE_PREFILL ? 0 : 1;
        q->step_sum[n - r->nodes][phase] += s->step_ms;
        q->step_n[n - r->nodes][phase]++;
    }
    if (n) {
        n->kv_bits = s->kv_bits;
        n->prefill_step = s->prefill_step;
        if (s->step_ms > n->slowest_ms)
            n->slowest_ms = s->step_ms;
    }
    /* Only the run's own requests' steps are its: the nodes publish every
     * client's (another stress run, a console's demo load), and a run not
     * yet begun has no id to file them under. */
    if (r->run <= 0 || !ours)
        return;
    store_step row = {
        .run = r->run,
        .leg = leg,
        .req = idx,
        .node = t->head.node,
        .step = s->step,
        .phase = s->phase == PROTO_PHASE_PREFILL ? STORE_PHASE_PREFILL : STORE_PHASE_DECODE,
        .tokens = s->tokens,
        .pos = s->pos,
        .step_ms = s->step_ms,
        .model_ms = s->model_ms,
        .eval_ms = s->eval_ms,
        .wait_ms = s->wait_ms,
        .kv_bytes = (int64_t)s->kv_bytes,
        .kv_bits = s->kv_bits,
        .prefill_step = s->prefill_step,
        .rss = (int64_t)s->rss,
        .headroom = s->headroom,
        .t = (double)t->head.t_ms / 1000.0,
    };
    store_step_add(r->db, &row);
}

static const char *store_kind(const proto_event *e)
{
    switch (e->kind) {
    case PROTO_EV_CONFIG_APPLIED:
        return "config";
    case PROTO_EV_REFUSED:
        return "refusal";
    case PROTO_EV_STAGE_TIMEOUT:
        return "timeout";
    default:
        return e->kind_name;
    }
}

static void on_event(stress_run *r, const proto_tel *t)
{
    const proto_event *e = &t->event;
    st_node *n = node_named(r, t->head.node);
    if (n && e->kind == PROTO_EV_CONFIG_APPLIED) {
        json_t *kb = json_object_get(t->json, "kv_bits");
        json_t *ps = json_object_get(t->json, "prefill_step");
        if (json_is_integer(kb))
            n->kv_bits = (int)json_integer_value(kb);
        if (json_is_integer(ps))
            n->prefill_step = (int)json_integer_value(ps);
        else if (json_is_string(ps))
            n->prefill_step = PROTO_PREFILL_AUTO;
    }
    json_t *d = json_deep_copy(t->json);
    int64_t idx;
    int leg;
    if (d && e->req[0] && idmap_find(r, e->req, &idx, &leg))
        json_object_set_new(d, "request", json_integer(idx));
    /* Which stage refused or fell silent: the head reports for the ring. */
    char stage[PROTO_NAME_MAX + 1] = "";
    if (e->kind == PROTO_EV_REFUSED || e->kind == PROTO_EV_STAGE_TIMEOUT ||
        e->kind == PROTO_EV_ERROR)
        stage_named(e->message, stage, sizeof stage);
    if (d && stage[0])
        json_object_set_new(d, "stage", json_string(stage));
    st_event(r, stage[0] ? stage : t->head.node, store_kind(e), d);
}

static void on_heartbeat(stress_run *r, const proto_tel *t)
{
    st_node *n = node_named(r, t->head.node);
    if (!n)
        return;
    n->kv_bits = t->status.config.kv_bits;
    n->prefill_step = t->status.config.prefill_step;
}

void st_on_telemetry(stress_run *r, const proto_tel *t)
{
    st_node *n = node_named(r, t->head.node);
    if (n) {
        if (n->has_seq && t->head.seq > n->seq + 1)
            r->telemetry_lost += (int64_t)(t->head.seq - n->seq - 1);
        n->has_seq = 1;
        n->seq = t->head.seq;
        n->seen_ms = clock_ms();
        if (n->down) {
            n->down = 0;
            st_event(r, n->name, "node_up", json_pack("{ss}", "node", n->name));
        }
    }
    switch (t->topic) {
    case PROTO_TOPIC_STEP:
        on_step(r, t);
        break;
    case PROTO_TOPIC_EVENT:
        on_event(r, t);
        break;
    case PROTO_TOPIC_NODE:
        on_heartbeat(r, t);
        break;
    default:
        break;
    }
}
