/* test_alerts.c: each alert raises at its threshold and not before, and
 * clears; through the state, each change is an event. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tui/core/alerts.h"
#include "tui/core/state.h"

static alerts *a;
static struct eng_view ev;
static struct alert_change ch[ALERT_COUNT];

static void setup(void)
{
    /* One sample raises and clears a measured alert, as before hysteresis:
     * the hysteresis has its own tests. */
    struct alert_settings s;
    alerts_defaults(&s);
    s.hold = 1;
    a = alerts_new(2);
    cr_assert_not_null(a);
    alerts_configure(a, &s);
    eng_view_init(&ev, ENG_VLLM);
    ev.health = ENG_UP;
}

static void teardown(void)
{
    alerts_free(a);
}

TestSuite(alerts, .init = setup, .fini = teardown);

static int note(double now)
{
    struct alert_sample smp = {.e = &ev};
    return alerts_note(a, 0, &smp, now, ch);
}

/* Node 1, an inferd node: down or up, with its step times. */
static int note_inferd(int down, double model_ms, double eval_ms, double now)
{
    struct alert_sample smp = {.down = down, .model_ms = model_ms, .eval_ms = eval_ms};
    return alerts_note(a, 1, &smp, now, ch);
}

Test(alerts, defaults_are_the_table_rows)
{
    struct alert_settings s;
    alerts_defaults(&s);
    cr_expect_eq(s.queue_s, 30);
    cr_expect_eq(s.ttft_ms, 2000);
    cr_expect_eq(s.eval_ratio, 1.5);
    cr_expect_eq(s.eval_floor_ms, 1);
    cr_expect_eq(s.hold, 6);
    cr_expect_eq(s.headroom_pct, 10);
    opt_value v = {.i = 3};
    cr_expect_eq(alerts_set(&s, OPT_ALERT_HOLD, &v), 0);
    cr_expect_eq(s.hold, 3, "an integer row");
    v.d = 250;
    cr_expect_eq(alerts_set(&s, OPT_ALERT_TTFT_MS, &v), 0);
    cr_expect_eq(s.ttft_ms, 250);
    cr_expect_eq(alerts_set(&s, OPT_THREADS, &v), -1, "not an alert setting");
}

/* On after `hold` samples in a row that hold, off after as many that do
 * not: a sample against the run starts it again. */
Test(alerts, hold_needs_n_samples_in_a_row_both_ways)
{
    struct alert_hold h = {0};
    static const int in[] = {1, 1, 0, 1, 1, 1, 0, 0, 1, 0, 0, 0};
    static const int out[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        cr_assert_eq(alerts_hold_step(&h, in[i], 3), out[i], "sample %zu", i);
}

/* EVAL>MODEL needs the ratio and the floor, for `hold` samples: the demo's
 * eval 0.05 ms against model 0.04 ms never raises it, and a flapping
 * number raises it once. */
Test(alerts, eval_over_model_by_ratio_and_floor_with_hysteresis)
{
    struct alert_settings s;
    alerts_defaults(&s);
    s.hold = 4;
    alerts_configure(a, &s);
    double t = 0;
    for (int i = 0; i < 20; i++, t += 0.5) {
        cr_assert_eq(note_inferd(0, 0.04, 0.05, t), 0, "tiny steps");
        cr_assert_eq(note_inferd(0, 0.1, 0.9, t), 0, "over the ratio, under the floor");
        cr_assert_eq(note_inferd(0, 2, 2.5, t), 0, "over the floor, under the ratio");
    }
    for (int i = 0; i < 3; i++, t += 0.5)
        cr_assert_eq(note_inferd(0, 1, 4, t), 0, "raised after %d samples", i + 1);
    cr_assert_eq(note_inferd(0, 1, 4, t), 1);
    cr_expect_eq(ch[0].kind, ALERT_EVAL);
    cr_expect(ch[0].raised);
    cr_expect_neq(strstr(ch[0].message, "4.00"), NULL, "%s", ch[0].message);
    /* Flapping: good and bad samples in turn keep it, and log nothing. */
    for (int i = 0; i < 10; i++, t += 0.5)
        cr_assert_eq(note_inferd(0, 1, i % 2 ? 4 : 1, t), 0);
    cr_expect_eq(alerts_active(a, 1), ALERT_BIT(ALERT_EVAL));
    for (int i = 0; i < 3; i++, t += 0.5)
        cr_assert_eq(note_inferd(0, 1, 1, t), 0, "cleared after %d samples", i + 1);
    cr_assert_eq(note_inferd(0, 1, 1, t), 1);
    cr_expect_not(ch[0].raised);
    /* Not stepping: NaN p50s hold nothing. */
    cr_expect_eq(note_inferd(0, NAN, NAN, t + 1), 0);
}

/* Waiting at 0 for 5 s, then one more each second: raised 30 s after the
 * last poll at 0, not a poll before; cleared by the first fall. */
Test(alerts, queue_growing_for_n_seconds_and_not_before)
{
    double t = 0;
    for (; t <= 4; t++) {
        ev.requests_waiting = 0;
        cr_assert_eq(note(t), 0);
    }
    for (; t < 34; t++) {
        ev.requests_waiting = t - 4;
        cr_assert_eq(note(t), 0, "raised at %.0f s, %.0f s into the growth", t, t - 4);
    }
    ev.requests_waiting = 30;
    cr_assert_eq(note(34), 1);
    cr_expect_eq(ch[0].kind, ALERT_QUEUE);
    cr_expect(ch[0].raised);
    cr_expect_neq(strstr(ch[0].message, "30 requests waiting"), NULL, "%s", ch[0].message);
    cr_expect_eq(alerts_active(a, 0), ALERT_BIT(ALERT_QUEUE));
    /* Holding at its level keeps it; a fall clears it. */
    cr_expect_eq(note(35), 0);
    ev.requests_waiting = 29;
    cr_assert_eq(note(36), 1);
    cr_expect_eq(ch[0].kind, ALERT_QUEUE);
    cr_expect_not(ch[0].raised);
    cr_expect_eq(alerts_active(a, 0), 0);
}

/* A queue that stays where it is, however long, is not growing; an
 * engine that does not report it never raises. */
Test(alerts, flat_or_unreported_queue_does_not_raise)
{
    ev.requests_waiting = 5;
    for (double t = 0; t < 100; t++)
        cr_assert_eq(note(t), 0);
    ev.requests_waiting = NAN;
    for (double t = 100; t < 200; t++)
        cr_assert_eq(note(t), 0);
}

Test(alerts, kv_over_90_percent)
{
    ev.kv_usage = 0.90;
    cr_expect_eq(note(0), 0, "90% itself is not over");
    ev.kv_usage = 0.91;
    cr_assert_eq(note(1), 1);
    cr_expect_eq(ch[0].kind, ALERT_KV);
    cr_expect(ch[0].raised);
    cr_expect_neq(strstr(ch[0].message, "91%"), NULL, "%s", ch[0].message);
    /* Hovering between 80% and 90% holds it: no event. */
    ev.kv_usage = 0.86;
    cr_assert_eq(note(2), 0);
    ev.kv_usage = 0.93;
    cr_assert_eq(note(3), 0);
    ev.kv_usage = 0.5;
    cr_assert_eq(note(4), 1);
    cr_expect_not(ch[0].raised);
    cr_expect_neq(strstr(ch[0].message, "under 80%"), NULL, "%s", ch[0].message);
}

Test(alerts, ttft_p95_over_the_threshold)
{
    ev.hist_p95[ENG_H_TTFT] = 2000;
    cr_expect_eq(note(0), 0);
    ev.hist_p95[ENG_H_TTFT] = 2500;
    cr_assert_eq(note(1), 1);
    cr_expect_eq(ch[0].kind, ALERT_TTFT);
    cr_expect(ch[0].raised);
    /* No requests in the window: no percentile, no alert. */
    ev.hist_p95[ENG_H_TTFT] = NAN;
    cr_assert_eq(note(2), 1);
    cr_expect_not(ch[0].raised);
}

Test(alerts, loading_then_ready)
{
    ev.health = ENG_LOADING;
    cr_assert_eq(note(0), 1);
    cr_expect_eq(ch[0].kind, ALERT_LOADING);
    ev.health = ENG_UP;
    cr_assert_eq(note(1), 1);
    cr_expect_not(ch[0].raised);
}

/* Down replaces every other alert, says the poll's problem, and clears
 * when the engine answers again. */
Test(alerts, engine_down_with_its_problem)
{
    ev.kv_usage = 0.95;
    cr_assert_eq(note(0), 1);
    ev.health = ENG_DOWN;
    strcpy(ev.problem, "connection refused");
    cr_assert_eq(note(1), 2);
    cr_expect_eq(alerts_active(a, 0), ALERT_BIT(ALERT_DOWN));
    cr_expect_eq(ch[0].kind, ALERT_DOWN);
    cr_expect(ch[0].raised);
    cr_expect_str_eq(ch[0].message, "down: connection refused");
    cr_expect_eq(ch[1].kind, ALERT_KV);
    cr_expect_not(ch[1].raised);
    ev.health = ENG_UP;
    ev.problem[0] = '\0';
    ev.kv_usage = 0.1;
    cr_assert_eq(note(2), 1);
    cr_expect_not(ch[0].raised);
}

/* An inferd node gets `down` from its liveness; one never heard is given
 * ALERTS_GRACE_S to send its first heartbeat. */
Test(alerts, inferd_down_after_the_grace)
{
    cr_expect_eq(note_inferd(1, NAN, NAN, 100), 0);
    cr_expect_eq(note_inferd(1, NAN, NAN, 100 + ALERTS_GRACE_S - 0.5), 0);
    cr_assert_eq(note_inferd(1, NAN, NAN, 100 + ALERTS_GRACE_S), 1);
    cr_expect_eq(ch[0].kind, ALERT_DOWN);
    cr_expect_eq(alerts_total(a), 1);
    cr_assert_eq(note_inferd(0, NAN, NAN, 120), 1);
    cr_expect_not(ch[0].raised);
    /* Once heard, down is at once. */
    cr_assert_eq(note_inferd(1, NAN, NAN, 121), 1);
    cr_expect(ch[0].raised);
}

Test(alerts, words)
{
    char buf[64];
    alerts_text(ALERT_BIT(ALERT_QUEUE) | ALERT_BIT(ALERT_KV), buf, sizeof buf);
    cr_expect_str_eq(buf, "QUEUE KV>90%");
}

/* Through the state: state_tick moves them on and logs an event per change. */
Test(alerts, state_logs_raise_and_clear_as_events)
{
    static const char *const names[] = {"llama"};
    state *st = state_new("t", 1, names);
    cr_assert_not_null(st);
    state_node_set_engine(st, 0, ENG_LLAMACPP);
    struct eng_view v;
    eng_view_init(&v, ENG_LLAMACPP);
    v.health = ENG_UP;
    v.kv_usage = 0.97;
    state_ingest_engine(st, 0, &v, 1.0);
    state_tick(st, 1.0);
    cr_expect_eq(alerts_active(state_alerts(st), 0), ALERT_BIT(ALERT_KV));
    v.kv_usage = 0.2;
    state_ingest_engine(st, 0, &v, 2.0);
    state_tick(st, 2.0);
    cr_expect_eq(alerts_active(state_alerts(st), 0), 0);
    struct state_event_filter f = {.node = -1, .kind = "alert"};
    const struct state_event *e[4];
    cr_assert_eq(state_events(st, &f, 0, 4, e), 2);
    cr_expect_str_eq(e[0]->kind, "alert_clear");
    cr_expect_str_eq(e[1]->kind, "alert");
    cr_expect_neq(strstr(e[1]->message, "97%"), NULL, "%s", e[1]->message);
    /* The thresholds come from the cluster file and the console's flags;
     * TTFT is measured, so it waits for `hold` ticks. */
    struct alert_settings s;
    alerts_defaults(&s);
    s.ttft_ms = 100;
    s.hold = 2;
    state_alert_settings(st, &s);
    v.hist_p95[ENG_H_TTFT] = 150;
    state_ingest_engine(st, 0, &v, 3.0);
    state_tick(st, 3.0);
    cr_expect_eq(alerts_active(state_alerts(st), 0), 0);
    state_tick(st, 3.5);
    cr_expect_eq(alerts_active(state_alerts(st), 0), ALERT_BIT(ALERT_TTFT));
    state_free(st);
}

/* A head whose ring is broken: raised at once with the stage and why,
 * "ring broken at" on the alerts line, and cleared once it answers. */
Test(alerts, ring_broken_at_a_stage)
{
    struct alert_sample smp = {.model_ms = NAN, .eval_ms = NAN};
    cr_assert_eq(alerts_note(a, 0, &smp, 0, ch), 0, "a ring that answers raises nothing");
    smp.ring_stage = "b";
    smp.ring_why = "stage 'b' (layers 1:2) did not answer step 7 within 5.0 s";
    cr_assert_eq(alerts_note(a, 0, &smp, 0.5, ch), 1);
    cr_expect_eq(ch[0].kind, ALERT_RING);
    cr_expect(ch[0].raised);
    cr_expect_neq(strstr(ch[0].message, "broken at stage 'b'"), NULL, "%s", ch[0].message);
    cr_expect_neq(strstr(ch[0].message, "step 7"), NULL, "%s", ch[0].message);
    char text[64];
    alerts_text(alerts_active(a, 0), text, sizeof text);
    cr_expect_str_eq(text, "RING");
    cr_assert_eq(alerts_note(a, 0, &smp, 1, ch), 0, "raised once");
    smp.ring_stage = smp.ring_why = NULL;
    cr_assert_eq(alerts_note(a, 0, &smp, 1.5, ch), 1);
    cr_expect_not(ch[0].raised);
    cr_expect_eq(alerts_active(a, 0), 0);
}
