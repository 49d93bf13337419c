/* test_state.c: the console's state model, fed by hand-made telemetry. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tui/core/state.h"

static state *st;
static uint64_t seqs[3];

static void setup(void)
{
    static const char *const names[] = {"head", "mid", "tail"};
    st = state_new("ring", 3, names);
    cr_assert_not_null(st);
    memset(seqs, 0, sizeof seqs);
}

static void teardown(void)
{
    state_free(st);
}

TestSuite(state, .init = setup, .fini = teardown);

static proto_head head_of(int node)
{
    proto_head h = {.seq = ++seqs[node]};
    strcpy(h.node, state_node_name(st, node));
    return h;
}

static proto_step make_step(int phase, double model_ms, double eval_ms)
{
    proto_step s = {.phase = phase,
                    .tokens = phase == PROTO_PHASE_PREFILL ? 64 : 1,
                    .model_ms = model_ms,
                    .eval_ms = eval_ms,
                    .step_ms = model_ms + eval_ms,
                    .kv_bytes = 1000,
                    .kv_bits = 16,
                    .prefill_step = 64,
                    .rss = 5000,
                    .budget = 10000,
                    .headroom = 5000,
                    .act_max = 1.0};
    strcpy(s.req, "r1");
    return s;
}

static void step(int node, int phase, double model_ms, double eval_ms, double now)
{
    proto_head h = head_of(node);
    proto_step s = make_step(phase, model_ms, eval_ms);
    state_ingest_step(st, node, &h, &s, now);
}

/* A node's clock (unix ms) when ours reads now: the two need not agree. */
static int64_t node_ms(double now)
{
    return 1700000000000 + (int64_t)(now * 1000);
}

/* A heartbeat with the given seq, sent at the node's time for `sent` and
 * heard at `now`; busy is what it says, NaN for an older node that says
 * nothing. */
static void heartbeat_sent(int node, uint64_t seq, double busy, double sent, double now)
{
    proto_head h = {.seq = seq, .t_ms = node_ms(sent)};
    strcpy(h.node, state_node_name(st, node));
    proto_status s = {0};
    s.busy = busy;
    s.config.kv_bits = 16;
    s.config.prefill_step = 64;
    s.memory.budget = 10000;
    s.memory.headroom = 4000;
    s.memory.weights_bytes = 3000;
    s.memory.kv_bytes = 1000;
    s.memory.rss = 6000;
    s.stage = node;
    s.n_stages = 3;
    s.model.layer_first = node * 4;
    s.model.layer_last = node * 4 + 4;
    strcpy(s.model.fingerprint, "aaaa");
    state_ingest_heartbeat(st, node, &h, &s, now);
}

static void heartbeat_busy(int node, double busy, double now)
{
    heartbeat_sent(node, ++seqs[node], busy, now, now);
}

static void heartbeat(int node, double now)
{
    heartbeat_busy(node, NAN, now);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The reference: sort, then take the nearest rank, ceil(q * n), as the
 * history's summaries do. */
static double ref_quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_d);
    int rank = (int)ceil(q * n);
    return v[rank < 1 ? 0 : rank - 1];
}

/* ---- aggregates and percentiles ---- */

Test(state, percentiles_match_reference_over_window_and_phase)
{
    double decode[400], all[600];
    int nd = 0, na = 0;
    srand(7);
    /* 20 s of steps, 30 per second; only the last 5 s are in the window. */
    for (int i = 0; i < 600; i++) {
        double t = 100 + i / 30.0;
        int phase = i % 3 == 0 ? PROTO_PHASE_PREFILL : PROTO_PHASE_DECODE;
        double model = (rand() % 4000) / 8.0; /* exact in a float */
        step(0, phase, model, 1.0, t);
        if (t >= 120 - 5) {
            all[na++] = model;
            if (phase == PROTO_PHASE_DECODE)
                decode[nd++] = model;
        }
    }
    const double q[] = {0.5, 0.9, 0.99};
    double got[3];
    cr_assert_eq(state_percentiles(st, 0, STATE_MODEL_MS, STATE_ANY, 5, 120, q, 3, got), na);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(got[i], ref_quantile(all, na, q[i]), 1e-9, "q=%g", q[i]);
    cr_assert_eq(state_percentiles(st, 0, STATE_MODEL_MS, STATE_DECODE, 5, 120, q, 3, got), nd);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(got[i], ref_quantile(decode, nd, q[i]), 1e-9, "q=%g", q[i]);
}

Test(state, percentiles_without_steps_are_nan)
{
    const double q = 0.5;
    double got = 0;
    cr_assert_eq(state_percentiles(st, 1, STATE_EVAL_MS, STATE_ANY, 5, 10, &q, 1, &got), 0);
    cr_assert(isnan(got));
}

Test(state, a_copy_stays_as_it_was_while_the_state_goes_on)
{
    step(0, PROTO_PHASE_DECODE, 7, 0, 50);
    state *c = state_copy(st);
    cr_assert_not_null(c);
    step(0, PROTO_PHASE_DECODE, 100, 0, 50.5);
    state_event_add(st, 0, "ssh", 50.5, "after the copy");
    const double q = 1.0;
    double live, still;
    state_percentiles(st, 0, STATE_MODEL_MS, STATE_ANY, 5, 51, &q, 1, &live);
    state_percentiles(c, 0, STATE_MODEL_MS, STATE_ANY, 5, 51, &q, 1, &still);
    cr_assert_float_eq(live, 100, 1e-9);
    cr_assert_float_eq(still, 7, 1e-9, "the copy has only the step before it");
    cr_assert_eq(state_event_count(c, &(struct state_event_filter){.node = -1}),
                 state_event_count(st, &(struct state_event_filter){.node = -1}) - 1);
    state_free(c);
}

Test(state, ring_keeps_the_newest_steps)
{
    /* 5000 steps in one second: the oldest 904 fall out of the ring. */
    for (int i = 0; i < 5000; i++)
        step(0, PROTO_PHASE_DECODE, i, 0, 50 + i / 10000.0);
    const double q[] = {0.0, 1.0};
    double got[2];
    cr_assert_eq(state_percentiles(st, 0, STATE_MODEL_MS, STATE_ANY, 60, 51, q, 2, got),
                 STATE_STEP_RING);
    cr_assert_float_eq(got[0], 5000 - STATE_STEP_RING, 1e-9);
    cr_assert_float_eq(got[1], 4999, 1e-9);
}

Test(state, per_second_series_and_rates)
{
    /* Second 10+k has k+1 decode steps of model_ms k, and one prefill step. */
    for (int k = 0; k < 5; k++) {
        for (int j = 0; j <= k; j++)
            step(2, PROTO_PHASE_DECODE, k, 2 * k, 10 + k + j / 10.0);
        step(2, PROTO_PHASE_PREFILL, 100, 0, 10.95 + k);
    }
    /* At 15.5 the last 6 complete seconds are 9..14: v[k + 1] is second 10 + k. */
    double v[6];
    state_series(st, 2, STATE_SERIES_MODEL_MS, STATE_DECODE, 6, 15.5, v);
    cr_assert(isnan(v[0]), "nothing in second 9");
    for (int k = 0; k < 5; k++)
        cr_assert_float_eq(v[k + 1], k, 1e-9, "second %d", 10 + k);
    state_series(st, 2, STATE_SERIES_EVAL_MS, STATE_DECODE, 6, 15.5, v);
    cr_assert_float_eq(v[3], 4, 1e-9);
    state_series(st, 2, STATE_SERIES_STEPS, STATE_ANY, 6, 15.5, v);
    cr_assert_float_eq(v[0], 0, 1e-9);
    for (int k = 0; k < 5; k++)
        cr_assert_float_eq(v[k + 1], k + 2, 1e-9);
    state_series(st, 2, STATE_SERIES_TOKENS, STATE_PREFILL, 6, 15.5, v);
    cr_assert_float_eq(v[2], 64, 1e-9);
    /* Both phases in second 12: three decode steps of 2 ms and a prefill of 100. */
    state_series(st, 2, STATE_SERIES_MODEL_MS, STATE_ANY, 6, 15.5, v);
    cr_assert_float_eq(v[3], 106.0 / 4, 1e-9);
    state_series(st, 2, STATE_SERIES_KV_BYTES, STATE_ANY, 6, 15.5, v);
    cr_assert_float_eq(v[5], 1000, 1e-9);
    cr_assert(isnan(v[0]));

    /* Rates count complete seconds only: at 15.5, seconds 10..14. */
    cr_assert_float_eq(state_steps_per_s(st, 2, STATE_ANY, 5, 15.5), (2 + 3 + 4 + 5 + 6) / 5.0,
                       1e-9);
    cr_assert_float_eq(state_steps_per_s(st, 2, STATE_DECODE, 5, 15.0), (1 + 2 + 3 + 4 + 5) / 5.0,
                       1e-9);
    cr_assert_float_eq(state_steps_per_s(st, 2, STATE_ANY, 5, 14.99), (2 + 3 + 4 + 5) / 5.0, 1e-9,
                       "the running second 14 is left out");
}

Test(state, seconds_slots_are_reused_after_ten_minutes)
{
    step(0, PROTO_PHASE_DECODE, 5, 0, 10.5);
    step(0, PROTO_PHASE_DECODE, 7, 0, 10.5 + STATE_SECONDS);
    double v[STATE_SECONDS];
    state_series(st, 0, STATE_SERIES_MODEL_MS, STATE_ANY, STATE_SECONDS, 11 + STATE_SECONDS, v);
    cr_assert_float_eq(v[STATE_SECONDS - 1], 7, 1e-9, "the new second, not a mix");
    state_series(st, 0, STATE_SERIES_MODEL_MS, STATE_ANY, 1, 11, v);
    cr_assert(isnan(v[0]), "second 10 is gone");
}

/* ---- liveness ---- */

Test(state, stale_after_three_seconds_then_down_then_recovers)
{
    cr_assert_eq(state_node_live(st, 0, 0), STATE_DOWN, "never heard of");
    heartbeat(0, 100);
    cr_assert_eq(state_node_live(st, 0, 102.9), STATE_UP);
    cr_assert_eq(state_node_live(st, 0, 103.0), STATE_STALE);
    cr_assert_eq(state_node_live(st, 0, 109.9), STATE_STALE);
    cr_assert_eq(state_node_live(st, 0, 110.0), STATE_DOWN);
    heartbeat(0, 111);
    cr_assert_eq(state_node_live(st, 0, 111), STATE_UP);
}

Test(state, tick_logs_each_change_once)
{
    heartbeat(1, 100);
    state_tick(st, 101);
    state_tick(st, 104);
    state_tick(st, 105);
    state_tick(st, 111);
    heartbeat(1, 112);
    struct state_event_filter f = {.node = 1, .kind = "node_"};
    const struct state_event *ev[8];
    int n = state_events(st, &f, 0, 8, ev);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(ev[0]->kind, "node_up");
    cr_assert_str_eq(ev[1]->kind, "node_down");
    cr_assert_str_eq(ev[2]->kind, "node_stale");
    cr_assert(strstr(ev[2]->message, "4.0 s"), "%s", ev[2]->message);
    cr_assert_str_eq(ev[3]->kind, "node_up");
}

Test(state, down_at_once_when_told_and_starting_until_heartbeat)
{
    heartbeat(2, 100);
    state_mark_down(st, 2, "process exited with status 137", 100.5);
    cr_assert_eq(state_node_live(st, 2, 100.5), STATE_DOWN);
    state_mark_starting(st, 2, 101);
    cr_assert_eq(state_node_live(st, 2, 150), STATE_STARTING, "old heartbeat age is moot");
    cr_assert_eq(state_node_live(st, 2, 101 + STATE_START_TIMEOUT_S), STATE_DOWN);
    heartbeat(2, 160);
    cr_assert_eq(state_node_live(st, 2, 160), STATE_UP);
    struct state_event_filter f = {.node = 2, .text = "137"};
    cr_assert_eq(state_event_count(st, &f), 1);
}

/* The console can learn of a death (the demo reaps its child) before it
 * reads what the process sent last: those heartbeats must not bring it
 * back, or it shows stale, not down, until they age. */
Test(state, what_a_dead_node_sent_before_dying_does_not_revive_it)
{
    heartbeat(1, 100);
    state_mark_down(st, 1, "process killed by signal 9", 100.5);
    heartbeat_sent(1, ++seqs[1], NAN, 100.45, 100.6);
    cr_assert_eq(state_node_live(st, 1, 100.6), STATE_DOWN, "queued before the death");
    heartbeat_sent(1, ++seqs[1], NAN, 100.5 + STATE_STALE_S - 0.1, 104);
    cr_assert_eq(state_node_live(st, 1, 104), STATE_DOWN, "may still be the dead process's");
    struct state_event_filter up = {.node = 1, .kind = "node_up"};
    cr_assert_eq(state_event_count(st, &up), 1, "only the first heartbeat said up");

    heartbeat_sent(1, 1, NAN, 104.2, 104.2);
    cr_assert_eq(state_node_live(st, 1, 104.2), STATE_UP, "a new process starts its seq over");
}

Test(state, a_new_process_revives_a_dead_node_even_when_its_restart_was_missed)
{
    heartbeat(1, 100);
    state_mark_down(st, 1, "stopped over SSH", 101);
    /* Its seq went on past the old one's before we heard it. */
    heartbeat_sent(1, seqs[1] + 50, NAN, 101 + STATE_STALE_S + 0.1, 104.2);
    cr_assert_eq(state_node_live(st, 1, 104.2), STATE_UP, "sent after the dead one could have");
}

/* ---- loss ---- */

Test(state, loss_from_seq_gaps_and_restart_is_not_loss)
{
    static const uint64_t seq[] = {100, 101, 104, 105, 1, 2, 5, 6};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        proto_head h = {.seq = seq[i]};
        proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
        state_ingest_step(st, 0, &h, &s, 10 + i);
    }
    struct state_node_view v;
    state_node_view(st, 0, 20, &v);
    cr_assert_eq(v.received, 8);
    cr_assert_eq(v.lost, 2 + 2, "102-103 and 3-4; nothing before the first heard");
    cr_assert_eq(v.restarts, 1);
    struct state_cluster_view c;
    state_cluster_view(st, 20, &c);
    cr_assert_eq(c.lost, 4);
    struct state_event_filter f = {.node = -1, .kind = "node_restart"};
    cr_assert_eq(state_event_count(st, &f), 1);
}

Test(state, seq_is_shared_by_all_topics)
{
    proto_head h = {.seq = 1};
    proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
    state_ingest_step(st, 1, &h, &s, 1);
    h.seq = 2;
    proto_event e = {.kind = PROTO_EV_ERROR};
    state_ingest_event(st, 1, &h, &e, 1);
    h.seq = 3;
    proto_req_msg m = {.end = 0};
    state_ingest_req(st, 1, &h, &m, 1);
    h.seq = 4;
    proto_tel t = {.topic = PROTO_TOPIC_UNKNOWN, .head = h};
    state_ingest(st, 1, &t, 1);
    h.seq = 5;
    state_ingest_step(st, 1, &h, &s, 1);
    struct state_node_view v;
    state_node_view(st, 1, 2, &v);
    cr_assert_eq(v.lost, 0);
    cr_assert_eq(v.received, 5);
}

/* ---- highlights ---- */

/* EVAL>MODEL is an alert the ticks move on (alerts.h): raised once the
 * default alert_hold ticks have seen it, from the window's p50s. */
Test(state, orchestration_bound_when_eval_exceeds_model)
{
    for (int i = 0; i < 20; i++) {
        step(0, PROTO_PHASE_DECODE, 7, 29, 10 + i * 0.1);
        step(1, PROTO_PHASE_DECODE, 30, 6, 10 + i * 0.1);
    }
    int hold = (int)opt_default_int(OPT_ALERT_HOLD);
    for (int k = 0; k < hold; k++) {
        cr_assert_not(alerts_active(state_alerts(st), 0) & ALERT_BIT(ALERT_EVAL), "tick %d", k);
        for (int i = 0; i < 3; i++) /* up: a node that is down has no other alert */
            heartbeat(i, 12 + k * 0.5);
        state_tick(st, 12 + k * 0.5);
    }
    cr_assert(alerts_active(state_alerts(st), 0) & ALERT_BIT(ALERT_EVAL));
    cr_assert_not(alerts_active(state_alerts(st), 1) & ALERT_BIT(ALERT_EVAL));
    cr_assert_not(alerts_active(state_alerts(st), 2) & ALERT_BIT(ALERT_EVAL), "no steps, no alert");
}

Test(state, low_headroom_and_memory_split)
{
    proto_head h = head_of(0);
    proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
    heartbeat(0, 10); /* weights 3000 */
    s.kv_bytes = 2000;
    s.budget = 10000;
    s.headroom = 999;
    state_ingest_step(st, 0, &h, &s, 10.5);
    struct state_node_view v;
    state_node_view(st, 0, 11, &v);
    cr_assert(v.flags & STATE_FLAG_LOW_HEADROOM);
    cr_assert(v.mem.known);
    cr_assert_eq(v.mem.weights, 3000);
    cr_assert_eq(v.mem.kv, 2000);
    cr_assert_eq(v.mem.other, 10000 - 999 - 3000 - 2000);
    cr_assert_eq(v.mem.headroom, 999);
    cr_assert_eq(v.mem.weights + v.mem.kv + v.mem.other + v.mem.headroom, v.mem.budget);

    h = head_of(0);
    s.headroom = 1000;
    state_ingest_step(st, 0, &h, &s, 11);
    cr_assert_not(state_node_flags(st, 0, 11) & STATE_FLAG_LOW_HEADROOM, "exactly 10%%");

    h = head_of(0);
    s.headroom = -500;
    state_ingest_step(st, 0, &h, &s, 12);
    state_node_view(st, 0, 12, &v);
    cr_assert_eq(v.mem.headroom, 0);
    cr_assert_eq(v.mem.headroom_signed, -500);
}

Test(state, nonfinite_flag_lasts_a_minute)
{
    proto_head h = head_of(1);
    proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
    s.act_max = NAN;
    state_ingest_step(st, 1, &h, &s, 100);
    cr_assert(state_node_flags(st, 1, 101) & STATE_FLAG_NONFINITE);
    cr_assert(state_node_flags(st, 1, 100 + STATE_ACT_BASE_S - 1) & STATE_FLAG_NONFINITE);
    cr_assert_not(state_node_flags(st, 1, 100 + STATE_ACT_BASE_S) & STATE_FLAG_NONFINITE);

    h = head_of(2);
    s.act_max = 3;
    s.nonfinite = 2;
    state_ingest_step(st, 2, &h, &s, 100);
    cr_assert(state_node_flags(st, 2, 100) & STATE_FLAG_NONFINITE);

    h = head_of(0);
    proto_event e = {.kind = PROTO_EV_NUMERIC};
    strcpy(e.kind_name, "numeric");
    state_ingest_event(st, 0, &h, &e, 100);
    cr_assert(state_node_flags(st, 0, 100) & STATE_FLAG_NONFINITE);
}

/* A minute at act_max around 2, then one value. */
static unsigned spike_flags(double value)
{
    for (int sec = 0; sec < 60; sec++) {
        proto_head h = head_of(0);
        proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
        s.act_max = 1.5 + (sec % 3) * 0.5;
        state_ingest_step(st, 0, &h, &s, 1000 + sec);
    }
    proto_head h = head_of(0);
    proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
    s.act_max = value;
    state_ingest_step(st, 0, &h, &s, 1062.5);
    return state_node_flags(st, 0, 1063);
}

Test(state, act_spike_far_above_recent_median)
{
    cr_assert(spike_flags(2.0 * STATE_ACT_SPIKE + 0.5) & STATE_FLAG_ACT_SPIKE);
}

Test(state, act_rise_within_bounds_is_not_a_spike)
{
    cr_assert_not(spike_flags(2.0 * STATE_ACT_SPIKE - 0.5) & STATE_FLAG_ACT_SPIKE);
}

Test(state, act_spike_needs_history)
{
    proto_head h = head_of(0);
    proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
    s.act_max = 1000;
    state_ingest_step(st, 0, &h, &s, 5);
    cr_assert_not(state_node_flags(st, 0, 5) & STATE_FLAG_ACT_SPIKE);
}

static void heartbeat_fp(int node, const char *fp)
{
    proto_head h = head_of(node);
    proto_status s = {0};
    strcpy(s.model.fingerprint, fp);
    state_ingest_heartbeat(st, node, &h, &s, 10);
}

Test(state, fingerprint_mismatch_flags_the_odd_stage)
{
    heartbeat_fp(0, "aaaa");
    heartbeat_fp(1, "aaaa");
    cr_assert_not(state_node_flags(st, 0, 10) & STATE_FLAG_FINGERPRINT);
    heartbeat_fp(2, "bbbb");
    cr_assert_not(state_node_flags(st, 0, 10) & STATE_FLAG_FINGERPRINT);
    cr_assert_not(state_node_flags(st, 1, 10) & STATE_FLAG_FINGERPRINT);
    cr_assert(state_node_flags(st, 2, 10) & STATE_FLAG_FINGERPRINT);
}

Test(state, fingerprint_tie_flags_both)
{
    heartbeat_fp(0, "aaaa");
    heartbeat_fp(1, "bbbb");
    cr_assert(state_node_flags(st, 0, 10) & STATE_FLAG_FINGERPRINT);
    cr_assert(state_node_flags(st, 1, 10) & STATE_FLAG_FINGERPRINT);
    cr_assert_not(state_node_flags(st, 2, 10) & STATE_FLAG_FINGERPRINT, "no heartbeat yet");
}

/* ---- config ---- */

Test(state, config_requested_acked_confirmed)
{
    proto_set_args want = {.has_kv_bits = 1, .kv_bits = 4};
    const struct state_config *c = state_node_config(st, 1);
    cr_assert_eq(c->stage, STATE_CFG_NONE);
    state_config_request(st, 1, &want, 10);
    cr_assert_eq(c->stage, STATE_CFG_REQUESTED);
    step(1, PROTO_PHASE_DECODE, 1, 1, 10.1); /* still kv_bits 16 */
    cr_assert_eq(c->stage, STATE_CFG_REQUESTED);
    state_config_reply(st, 1, 1, NULL, 10.2);
    cr_assert_eq(c->stage, STATE_CFG_ACKED);
    proto_head h = head_of(1);
    proto_step s = make_step(PROTO_PHASE_DECODE, 1, 1);
    s.kv_bits = 4;
    state_ingest_step(st, 1, &h, &s, 10.3);
    cr_assert_eq(c->stage, STATE_CFG_CONFIRMED);
    cr_assert_eq(c->kv_bits, 4);
    cr_assert_float_eq(c->t_confirmed, 10.3, 1e-9);
    struct state_event_filter f = {.node = 1, .kind = "config_request"};
    const struct state_event *ev;
    cr_assert_eq(state_events(st, &f, 0, 1, &ev), 1);
    cr_assert_str_eq(ev->message, "kv_bits=4 requested");
}

Test(state, config_refused)
{
    proto_set_args want = {.has_prefill_step = 1, .prefill_step = 512};
    state_config_request(st, 0, &want, 10);
    state_config_reply(st, 0, 0, "bad_value: prefill_step 512 exceeds max_ctx", 10.1);
    const struct state_config *c = state_node_config(st, 0);
    cr_assert_eq(c->stage, STATE_CFG_FAILED);
    cr_assert(strstr(c->error, "max_ctx"));
    step(0, PROTO_PHASE_PREFILL, 1, 1, 10.2);
    cr_assert_eq(c->stage, STATE_CFG_FAILED, "telemetry does not undo a refusal");
}

Test(state, config_auto_prefill_is_confirmed_by_heartbeat_only)
{
    proto_set_args want = {.has_prefill_step = 1, .prefill_step = PROTO_PREFILL_AUTO};
    state_config_request(st, 2, &want, 10);
    state_config_reply(st, 2, 1, NULL, 10.1);
    step(2, PROTO_PHASE_PREFILL, 1, 1, 10.2);
    const struct state_config *c = state_node_config(st, 2);
    cr_assert_eq(c->stage, STATE_CFG_ACKED);
    cr_assert_eq(c->prefill_effective, 64);
    proto_head h = head_of(2);
    proto_status s = {0};
    s.config.prefill_step = PROTO_PREFILL_AUTO;
    s.config.kv_bits = 16;
    state_ingest_heartbeat(st, 2, &h, &s, 11);
    cr_assert_eq(c->stage, STATE_CFG_CONFIRMED);
    cr_assert_eq(c->prefill_step, PROTO_PREFILL_AUTO);
}

/* ---- events ---- */

static void node_event(int node, const char *kind, const char *msg, double now)
{
    proto_head h = head_of(node);
    proto_event e = {.kind = PROTO_EV_ERROR};
    strcpy(e.kind_name, kind);
    strcpy(e.message, msg);
    strcpy(e.code, "kv_oom");
    state_ingest_event(st, node, &h, &e, now);
}

Test(state, events_filter_by_node_kind_and_text)
{
    node_event(0, "refused", "needs 4 GiB, has 1 GiB", 1);
    node_event(1, "config_applied", "kv_bits 16 -> 4", 2);
    node_event(2, "refused", "Context LIMIT reached", 3);
    state_event_add(st, -1, "ssh", 4, "connected to %s", "tail");

    const struct state_event *ev[8];
    cr_assert_eq(state_events(st, NULL, 0, 8, ev), 4);
    cr_assert_str_eq(ev[0]->kind, "ssh", "newest first");
    cr_assert_eq(ev[0]->node, -1);

    struct state_event_filter by_node = {.node = 2};
    cr_assert_eq(state_events(st, &by_node, 0, 8, ev), 1);
    cr_assert(strstr(ev[0]->message, "LIMIT"));

    struct state_event_filter by_kind = {.node = -1, .kind = "refused"};
    cr_assert_eq(state_event_count(st, &by_kind), 2);

    struct state_event_filter by_text = {.node = -1, .text = "context limit"};
    cr_assert_eq(state_events(st, &by_text, 0, 8, ev), 1);
    cr_assert_eq(ev[0]->node, 2);

    struct state_event_filter by_name = {.node = -1, .text = "TAIL"};
    cr_assert_eq(state_event_count(st, &by_name), 2, "node name and message both match");

    struct state_event_filter by_code = {.node = -1, .text = "kv_oom"};
    cr_assert_eq(state_event_count(st, &by_code), 3);
    cr_assert_eq(state_events(st, &by_code, 1, 8, ev), 2, "skip scrolls");
    cr_assert_eq(ev[0]->node, 1);
}

Test(state, events_ring_keeps_the_newest)
{
    for (int i = 0; i < STATE_EVENTS + 50; i++)
        state_event_add(st, -1, "test", i, "event %d", i);
    struct state_event_filter all = {.node = -1};
    cr_assert_eq(state_event_count(st, &all), STATE_EVENTS);
    const struct state_event *ev[STATE_EVENTS];
    cr_assert_eq(state_events(st, &all, STATE_EVENTS - 1, 5, ev), 1);
    cr_assert_str_eq(ev[0]->message, "event 50");
}

/* ---- cluster header ---- */

Test(state, cluster_view_totals)
{
    for (int i = 0; i < 3; i++)
        heartbeat(i, 100);
    state_mark_down(st, 1, "killed", 100);
    proto_head h = head_of(0);
    proto_req_msg m = {.end = 0, .prompt_tokens = 300};
    strcpy(m.req, "r7");
    strcpy(m.source, "http");
    state_ingest_req(st, 0, &h, &m, 100);
    /* head: 2 prefill chunks of 64 per second; tail: 10 decode steps a second. */
    for (int sec = 0; sec < STATE_RECENT_S; sec++) {
        for (int k = 0; k < 2; k++)
            step(0, PROTO_PHASE_PREFILL, 1, 1, 100 + sec + k * 0.4);
        for (int k = 0; k < 10; k++)
            step(2, PROTO_PHASE_DECODE, 1, 1, 100 + sec + k * 0.09);
        step(0, PROTO_PHASE_DECODE, 1, 1, 100 + sec); /* not the tail: not counted */
    }
    struct state_cluster_view c;
    state_cluster_view(st, 100 + STATE_RECENT_S, &c);
    cr_assert_str_eq(c.name, "ring");
    cr_assert_eq(c.nodes_total, 3);
    cr_assert_eq(c.nodes_up, 0, "heartbeats are 5 s old: stale");
    cr_assert_str_eq(c.req, "r7");
    cr_assert_str_eq(c.req_source, "http", "the header says who sent the request");
    cr_assert_float_eq(c.prefill_tps, 128, 1e-9);
    cr_assert_float_eq(c.decode_tps, 10, 1e-9);
    cr_assert(isnan(c.last_ttft_ms));

    for (int i = 0; i < 3; i++)
        heartbeat(i, 105);
    h = head_of(0);
    m.end = 1;
    m.ok = 1;
    m.stats.ttft_ms = 42.5;
    state_ingest_req(st, 0, &h, &m, 105);
    state_cluster_view(st, 105, &c);
    cr_assert_eq(c.nodes_up, 3);
    cr_assert_str_eq(c.req, "");
    cr_assert_str_eq(c.req_source, "");
    cr_assert_float_eq(c.last_ttft_ms, 42.5, 1e-9);
}

Test(state, failed_request_is_an_event)
{
    proto_head h = head_of(0);
    proto_req_msg m = {.end = 1, .ok = 0};
    strcpy(m.req, "r9");
    strcpy(m.code, "stage_timeout");
    strcpy(m.message, "stage 2 silent for 5 s");
    state_ingest_req(st, 0, &h, &m, 1);
    struct state_event_filter f = {.node = 0, .kind = "req_failed"};
    const struct state_event *ev;
    cr_assert_eq(state_events(st, &f, 0, 1, &ev), 1);
    cr_assert_str_eq(ev->req, "r9");
    cr_assert_str_eq(ev->code, "stage_timeout");
}

Test(state, node_view_row)
{
    heartbeat(1, 50);
    for (int i = 0; i < 10; i++)
        step(1, PROTO_PHASE_DECODE, 7, 29, 50 + i * 0.1);
    struct state_node_view v;
    state_node_view(st, 1, 51, &v);
    cr_assert_str_eq(v.name, "mid");
    cr_assert_eq(v.live, STATE_UP);
    cr_assert_eq(v.phase, STATE_DECODE);
    cr_assert_eq(v.layer_first, 4);
    cr_assert_eq(v.layer_last, 8);
    cr_assert_float_eq(v.model_p50, 7, 1e-6);
    cr_assert_float_eq(v.eval_p50, 29, 1e-6);
    cr_assert_float_eq(v.steps_per_s, 10.0 / STATE_RECENT_S, 1e-9);
    cr_assert_str_eq(v.fingerprint, "aaaa");
    state_node_view(st, 1, 50.9 + STATE_IDLE_S + 0.1, &v);
    cr_assert_eq(v.phase, -1, "idle");
    cr_assert_eq(state_node_index(st, "tail"), 2);
    cr_assert_eq(state_node_index(st, "nope"), -1);
}

/* ---- load: busy and batch ---- */

/* A decode step carrying `seqs` sequences; busy NaN: the node says none. */
static void step_load(int node, double model_ms, int seqs, double busy, double now)
{
    proto_head h = head_of(node);
    proto_step s = make_step(PROTO_PHASE_DECODE, model_ms, 1);
    s.seqs = seqs;
    s.busy = busy;
    state_ingest_step(st, node, &h, &s, now);
}

Test(state, batch_is_sequences_per_step_each_second)
{
    /* Second 20: two steps of 4 sequences and one of 1; second 21: one of
     * 8 and a prefill chunk (1 sequence); an older node's 0 counts as 1. */
    step_load(0, 5, 4, NAN, 20.1);
    step_load(0, 5, 4, NAN, 20.2);
    step_load(0, 5, 1, NAN, 20.3);
    step_load(0, 5, 8, NAN, 21.1);
    step(0, PROTO_PHASE_PREFILL, 5, 1, 21.2);
    double v[3];
    state_series(st, 0, STATE_SERIES_SEQS, STATE_ANY, 3, 22.5, v);
    cr_assert(isnan(v[0]), "no steps in second 19");
    cr_assert_float_eq(v[1], 9.0 / 3, 1e-9);
    cr_assert_float_eq(v[2], 9.0 / 2, 1e-9);
    state_series(st, 0, STATE_SERIES_SEQS, STATE_DECODE, 3, 22.5, v);
    cr_assert_float_eq(v[2], 8, 1e-9, "the prefill chunk is left out of the decode batch");
    struct state_node_view nv;
    state_node_view(st, 0, 22.5, &nv);
    cr_assert_float_eq(nv.batch, 18.0 / 5, 1e-9, "seqs over steps of the recent seconds");
    state_node_view(st, 0, 22.5 + STATE_RECENT_S, &nv);
    cr_assert(isnan(nv.batch), "no steps in the window");
}

Test(state, busy_is_what_the_steps_say_else_the_heartbeat_else_model_time)
{
    double v[4];
    /* Second 30: the steps say 0.6 and 0.8; the heartbeat's 0.1 loses. */
    heartbeat_busy(0, 0.1, 30.05);
    step_load(0, 100, 1, 0.6, 30.1);
    step_load(0, 100, 1, 0.8, 30.2);
    /* Second 31: steps without busy, the heartbeat says 0.45. */
    step_load(0, 100, 1, NAN, 31.1);
    heartbeat_busy(0, 0.45, 31.5);
    /* Second 32: nobody says: 3 steps of 150 ms model time are 45% of it. */
    heartbeat(0, 32.05);
    for (int i = 0; i < 3; i++)
        step_load(0, 150, 1, NAN, 32.1 + i * 0.1);
    state_series(st, 0, STATE_SERIES_BUSY, STATE_ANY, 4, 33.5, v);
    cr_assert(isnan(v[0]), "nothing heard in second 29");
    cr_assert_float_eq(v[1], 0.7, 1e-9);
    cr_assert_float_eq(v[2], 0.45, 1e-9);
    cr_assert_float_eq(v[3], 0.45, 1e-9);
    /* Capped at 1 either way: a node's 1.5, or 1.2 s of model time in a second. */
    step_load(1, 5, 1, 1.5, 40.1);
    for (int i = 0; i < 4; i++)
        step_load(2, 300, 1, NAN, 40.1 + i * 0.2);
    state_series(st, 1, STATE_SERIES_BUSY, STATE_ANY, 1, 41, v);
    cr_assert_float_eq(v[0], 1, 1e-9);
    state_series(st, 2, STATE_SERIES_BUSY, STATE_ANY, 1, 41, v);
    cr_assert_float_eq(v[0], 1, 1e-9);
}

Test(state, busy_on_the_dashboard_decays_to_idle)
{
    struct state_node_view nv;
    state_node_view(st, 0, 5, &nv);
    cr_assert(isnan(nv.busy), "nothing heard yet");
    /* Seconds 50 and 51 stepping at 0.4 and 0.6, heartbeats every second. */
    for (int s = 50; s < 54; s++)
        heartbeat_busy(0, s < 52 ? 0.5 : 0.0, s + 0.05);
    step_load(0, 10, 1, 0.4, 50.5);
    step_load(0, 10, 1, 0.6, 51.5);
    state_node_view(st, 0, 52.2, &nv);
    cr_assert_eq(nv.phase, STATE_DECODE);
    cr_assert_float_eq(nv.busy, 0.5, 1e-9, "the mean of the last %d complete seconds",
                       STATE_BUSY_S);
    state_node_view(st, 0, 53.2, &nv);
    cr_assert_float_eq(nv.busy, (0.6 + 0.0) / 2, 1e-9, "the heartbeat's 0 follows the steps");
    /* No step since 51.5: idle after STATE_IDLE_S, and busy 0 with it. */
    state_node_view(st, 0, 51.5 + STATE_IDLE_S + 0.1, &nv);
    cr_assert_eq(nv.phase, -1);
    cr_assert_float_eq(nv.busy, 0, 1e-9);
    /* An older node (no busy anywhere) idles to 0 through its heartbeats. */
    heartbeat(1, 60.05);
    step_load(1, 200, 1, NAN, 60.5);
    heartbeat(1, 61.05);
    heartbeat(1, 62.05);
    state_node_view(st, 1, 61.5, &nv);
    cr_assert_float_eq(nv.busy, 0.2, 1e-9, "200 ms of model time in second 60");
    state_node_view(st, 1, 62.4, &nv);
    cr_assert_eq(nv.phase, STATE_DECODE);
    cr_assert_float_eq(nv.busy, 0.1, 1e-9, "second 61 heard a heartbeat and no step");
    /* Down: nothing heard in the window. */
    state_node_view(st, 1, 100, &nv);
    cr_assert(isnan(nv.busy));
}

/* ---- nodes of other engines, watched over HTTP ---- */

static void poll_result(int node, eng_health health, const char *problem, double decode_tps,
                        double now)
{
    struct eng_view v;
    eng_view_init(&v, ENG_OPENAI);
    v.health = health;
    snprintf(v.problem, sizeof v.problem, "%s", problem);
    snprintf(v.model, sizeof v.model, "tiny");
    v.decode_tps = decode_tps;
    v.prompt_tps = 100;
    state_ingest_engine(st, node, &v, now);
}

Test(state, an_http_node_is_what_its_poll_found_and_never_stale)
{
    state_node_set_engine(st, 1, ENG_OPENAI);
    cr_assert_eq(state_node_live(st, 1, 0), STATE_DOWN, "not polled yet");
    cr_assert_null(state_node_engine(st, 0), "an inferd node has no engine view");
    cr_assert_eq(state_node_engine(st, 1)->kind, ENG_OPENAI);
    poll_result(1, ENG_UP, "", NAN, 100);
    cr_assert_eq(state_node_live(st, 1, 100), STATE_UP);
    state_tick(st, 100 + STATE_DOWN_S + 5);
    cr_assert_eq(state_node_live(st, 1, 100 + STATE_DOWN_S + 5), STATE_UP,
                 "no heartbeat is expected from it");
    poll_result(1, ENG_LOADING, "", NAN, 120);
    cr_assert_eq(state_node_live(st, 1, 120), STATE_STARTING);
    poll_result(1, ENG_DOWN, "Connection refused", NAN, 121);
    cr_assert_eq(state_node_live(st, 1, 121), STATE_DOWN, "down at the first failed poll");
    poll_result(1, ENG_ERROR, "HTTP 500", NAN, 122);
    cr_assert_eq(state_node_live(st, 1, 122), STATE_DOWN);
    cr_assert_str_eq(state_node_engine(st, 1)->problem, "HTTP 500");

    struct state_event_filter f = {.node = 1, .kind = "node_"};
    const struct state_event *ev[8];
    int n = state_events(st, &f, 0, 8, ev);
    cr_assert_eq(n, 3, "the repeated down is logged once");
    cr_assert_str_eq(ev[0]->kind, "node_down");
    cr_assert_str_eq(ev[0]->message, "Connection refused");
    cr_assert_str_eq(ev[1]->kind, "node_starting");
    cr_assert_str_eq(ev[2]->kind, "node_up");
}

Test(state, an_http_node_launched_stays_starting_until_a_poll_finds_it_up)
{
    state_node_set_engine(st, 2, ENG_LLAMACPP);
    state_mark_starting(st, 2, 100);
    poll_result(2, ENG_DOWN, "Connection refused", NAN, 101);
    cr_assert_eq(state_node_live(st, 2, 101), STATE_STARTING, "not listening yet");
    cr_assert_eq(state_node_live(st, 2, 100 + STATE_START_TIMEOUT_S), STATE_DOWN);
    poll_result(2, ENG_UP, "", NAN, 102);
    cr_assert_eq(state_node_live(st, 2, 102), STATE_UP);
    state_mark_down(st, 2, "process exited", 103);
    cr_assert_eq(state_node_live(st, 2, 103), STATE_DOWN);
    poll_result(2, ENG_UP, "", NAN, 104);
    cr_assert_eq(state_node_live(st, 2, 104), STATE_UP, "started again by other means");
}

Test(state, cluster_view_of_a_mixed_cluster)
{
    /* head is an HTTP node: mid and tail are the ring, and without a
     * heartbeat the file's order of the inferd nodes says who heads it. */
    state_node_set_engine(st, 0, ENG_VLLM);
    for (int sec = 0; sec < STATE_RECENT_S; sec++) {
        step(1, PROTO_PHASE_PREFILL, 1, 1, 100 + sec);
        for (int k = 0; k < 10; k++)
            step(2, PROTO_PHASE_DECODE, 1, 1, 100 + sec + k * 0.09);
    }
    poll_result(0, ENG_UP, "", 30, 104);
    struct state_cluster_view c;
    state_cluster_view(st, 100 + STATE_RECENT_S, &c);
    cr_assert_eq(c.nodes_up, 1, "the HTTP node is up; the ring sent no heartbeat");
    cr_assert_float_eq(c.prefill_tps, 64 + 100, 1e-9, "mid heads the ring");
    cr_assert_float_eq(c.decode_tps, 10 + 30, 1e-9);
    cr_assert_str_eq(c.model, "tiny", "no inferd status yet: the HTTP node's model");

    poll_result(0, ENG_DOWN, "timed out", 30, 105);
    state_cluster_view(st, 100 + STATE_RECENT_S, &c);
    cr_assert_float_eq(c.decode_tps, 10, 1e-9, "a node down adds no rate");

    struct state_node_view nv;
    state_node_view(st, 0, 105, &nv);
    cr_assert_eq(nv.live, STATE_DOWN);
    cr_assert_eq(nv.phase, -1);
}

Test(state, summary_of_any_node)
{
    state_node_set_engine(st, 2, ENG_LLAMACPP);
    struct eng_view v;
    state_node_summary(st, 0, 100, &v);
    cr_assert_eq(v.kind, ENG_INFERD);
    cr_assert_eq(v.health, ENG_DOWN, "never heard of");
    cr_assert(isnan(v.requests_running), "no heartbeat: not known");
    heartbeat(0, 100);
    for (int sec = 0; sec < STATE_RECENT_S; sec++)
        for (int k = 0; k < 4; k++)
            step(0, PROTO_PHASE_DECODE, 1, 1, 100 + sec + k * 0.2);
    state_node_summary(st, 0, 100 + STATE_RECENT_S, &v);
    cr_assert_eq(v.health, ENG_DOWN, "heartbeat 5 s old: stale is not up");
    heartbeat(0, 105);
    state_node_summary(st, 0, 100 + STATE_RECENT_S, &v);
    cr_assert_eq(v.health, ENG_UP);
    cr_assert_float_eq(v.decode_tps, 4, 1e-9);
    cr_assert_float_eq(v.prompt_tps, 0, 1e-9);
    cr_assert_float_eq(v.requests_running, 0, 1e-9);
    cr_assert(isnan(v.kv_usage), "inferd does not say");

    poll_result(2, ENG_UP, "", 12, 105);
    state_node_summary(st, 2, 105, &v);
    cr_assert_float_eq(v.decode_tps, 12, 1e-9, "an HTTP node: its poll");
}
