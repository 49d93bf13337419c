/* test_metrics.c: Prometheus metrics from telemetry messages: what each
 * topic adds, histograms, seq gaps, label escaping and the node bound. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/http/metrics.h"

static proto_tel tel(proto_topic topic, const char *node, uint64_t seq)
{
    proto_tel t;
    memset(&t, 0, sizeof t);
    t.topic = topic;
    snprintf(t.head.node, sizeof t.head.node, "%s", node);
    t.head.seq = seq;
    return t;
}

static proto_tel step(const char *node, uint64_t seq, proto_phase phase, double step_ms,
                      double model_ms, int tokens)
{
    proto_tel t = tel(PROTO_TOPIC_STEP, node, seq);
    t.step.phase = phase;
    t.step.step_ms = step_ms;
    t.step.model_ms = model_ms;
    t.step.eval_ms = step_ms - model_ms;
    t.step.tokens = tokens;
    t.step.kv_bytes = 4096;
    t.step.kv_bits = 8;
    t.step.prefill_step = 64;
    return t;
}

/* The value of one series in the text, NAN when absent. */
static double value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, series, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return NAN;
}

static char *render(metrics *m, double now)
{
    size_t len;
    char *text = metrics_render(m, now, &len);
    cr_assert_not_null(text);
    cr_assert_eq(len, strlen(text));
    return text;
}

Test(metrics, steps_fill_histograms_by_phase)
{
    metrics *m = metrics_new();
    cr_assert_not_null(m);
    proto_tel t = step("a", 1, PROTO_PHASE_PREFILL, 12.0, 10.0, 64);
    metrics_take(m, &t, 1.0);
    t = step("a", 2, PROTO_PHASE_DECODE, 0.8, 0.5, 1);
    metrics_take(m, &t, 1.0);
    t = step("a", 3, PROTO_PHASE_DECODE, 3.0, 2.0, 1);
    metrics_take(m, &t, 1.0);
    char *text = render(m, 1.0);
    cr_expect_eq(value(text, "inferd_step_seconds_count{node=\"a\",phase=\"decode\"}"), 2);
    cr_expect_float_eq(value(text, "inferd_step_seconds_sum{node=\"a\",phase=\"decode\"}"), 0.0038,
                       1e-12);
    cr_expect_eq(value(text, "inferd_step_seconds_count{node=\"a\",phase=\"prefill\"}"), 1);
    cr_expect_float_eq(value(text, "inferd_step_model_seconds_sum{node=\"a\",phase=\"prefill\"}"),
                       0.010, 1e-12);
    cr_expect_float_eq(value(text, "inferd_step_eval_seconds_sum{node=\"a\",phase=\"decode\"}"),
                       0.0013, 1e-12);
    /* Buckets are cumulative: 0.8 ms is over 0.5 ms, 3 ms over 2.5 ms. */
    cr_expect_eq(
        value(text, "inferd_step_seconds_bucket{node=\"a\",phase=\"decode\",le=\"0.0005\"}"), 0);
    cr_expect_eq(
        value(text, "inferd_step_seconds_bucket{node=\"a\",phase=\"decode\",le=\"0.001\"}"), 1);
    cr_expect_eq(
        value(text, "inferd_step_seconds_bucket{node=\"a\",phase=\"decode\",le=\"0.005\"}"), 2);
    cr_expect_eq(value(text, "inferd_step_seconds_bucket{node=\"a\",phase=\"decode\",le=\"+Inf\"}"),
                 2);
    cr_expect_eq(value(text, "inferd_tokens_processed_total{node=\"a\",phase=\"prefill\"}"), 64);
    cr_expect_eq(value(text, "inferd_tokens_processed_total{node=\"a\",phase=\"decode\"}"), 2);
    cr_expect_eq(value(text, "inferd_kv_cache_bytes{node=\"a\"}"), 4096);
    cr_expect_eq(value(text, "inferd_kv_cache_precision{node=\"a\"}"), 8);
    cr_expect_eq(value(text, "inferd_up{node=\"a\"}"), 0, "no heartbeat yet");
    free(text);
    metrics_free(m);
}

Test(metrics, heartbeat_gauges_and_liveness)
{
    metrics *m = metrics_new();
    proto_tel t = tel(PROTO_TOPIC_NODE, "n\"1\\x\ny", 1);
    snprintf(t.status.model.name, sizeof t.status.model.name, "synth:110m");
    snprintf(t.status.model.chat_template, sizeof t.status.model.chat_template, "plain");
    t.status.model.layer_first = 6;
    t.status.model.layer_last = 12;
    t.status.config.prefill_step = PROTO_PREFILL_AUTO;
    t.status.config.kv_bits = 16;
    t.status.memory.budget = 1000;
    t.status.memory.used = 400;
    t.status.memory.headroom = -5;
    t.status.sessions = 3;
    metrics_take(m, &t, 10.0);
    char *text = render(m, 11.0);
    /* The name is escaped as a label value. */
    const char *node = "{node=\"n\\\"1\\\\x\\ny\"}";
    char series[128];
    snprintf(series, sizeof series, "inferd_up%s", node);
    cr_expect_eq(value(text, series), 1);
    snprintf(series, sizeof series, "inferd_memory_headroom_bytes%s", node);
    cr_expect_eq(value(text, series), -5);
    snprintf(series, sizeof series, "inferd_sessions%s", node);
    cr_expect_eq(value(text, series), 3);
    snprintf(series, sizeof series, "inferd_prefill_step_tokens%s", node);
    cr_expect_eq(value(text, series), 0, "auto before any step");
    cr_expect(strstr(text, "model=\"synth:110m\"") && strstr(text, "layers=\"6:12\"") &&
                  strstr(text, "chat_template=\"plain\""),
              "model info labels");
    free(text);
    text = render(m, 10.0 + METRICS_DOWN_S + 0.1);
    snprintf(series, sizeof series, "inferd_up%s", node);
    cr_expect_eq(value(text, series), 0, "silent for 3 s: down");
    free(text);
    metrics_free(m);
}

/* The head of a ring: inferd_ring_up, and the broken stage while it is;
 * neither for a node that is no head of a ring. */
Test(metrics, ring_gauge_and_broken_stage)
{
    metrics *m = metrics_new();
    proto_tel t = tel(PROTO_TOPIC_NODE, "h", 1);
    t.status.ring_health.known = 1;
    t.status.ring_health.state = PROTO_RING_DOWN;
    snprintf(t.status.ring_health.stage, sizeof t.status.ring_health.stage, "b");
    metrics_take(m, &t, 1.0);
    proto_tel other = tel(PROTO_TOPIC_NODE, "b", 1);
    metrics_take(m, &other, 1.0);
    char *text = render(m, 1.5);
    cr_expect_eq(value(text, "inferd_ring_up{node=\"h\"}"), 0);
    cr_expect_eq(value(text, "inferd_ring_broken_stage{node=\"h\",stage=\"b\"}"), 1);
    cr_expect(isnan(value(text, "inferd_ring_up{node=\"b\"}")), "not a head of a ring");
    free(text);
    t = tel(PROTO_TOPIC_NODE, "h", 2);
    t.status.ring_health.known = 1;
    t.status.ring_health.state = PROTO_RING_UP;
    metrics_take(m, &t, 2.0);
    text = render(m, 2.5);
    cr_expect_eq(value(text, "inferd_ring_up{node=\"h\"}"), 1);
    cr_expect_null(strstr(text, "inferd_ring_broken_stage{"), "no stage while it answers");
    free(text);
    metrics_free(m);
}

Test(metrics, requests_events_and_lost_messages)
{
    metrics *m = metrics_new();
    proto_tel t = tel(PROTO_TOPIC_REQ, "h", 1);
    t.req.end = 1;
    t.req.ok = 1;
    t.req.stats.ttft_ms = 30;
    t.req.stats.prompt_tokens = 5;
    t.req.stats.gen_tokens = 7;
    metrics_take(m, &t, 0);
    t.head.seq = 5; /* 2, 3 and 4 were lost */
    t.req.ok = 0;
    snprintf(t.req.code, sizeof t.req.code, "cancelled");
    t.req.stats.ttft_ms = NAN; /* no token came */
    metrics_take(m, &t, 0);
    t = tel(PROTO_TOPIC_EVENT, "h", 6);
    t.event.kind = PROTO_EV_REFUSED;
    snprintf(t.event.kind_name, sizeof t.event.kind_name, "refused");
    snprintf(t.event.code, sizeof t.event.code, "kv_oom");
    metrics_take(m, &t, 0);
    t.head.seq = 7;
    t.event.kind = PROTO_EV_STAGE_TIMEOUT;
    snprintf(t.event.kind_name, sizeof t.event.kind_name, "stage_timeout");
    metrics_take(m, &t, 0);
    char *text = render(m, 0);
    cr_expect_eq(value(text, "inferd_requests_total{node=\"h\",outcome=\"ok\"}"), 1);
    cr_expect_eq(
        value(text, "inferd_requests_total{node=\"h\",outcome=\"error\",code=\"cancelled\"}"), 1);
    cr_expect_eq(
        value(text, "inferd_requests_total{node=\"h\",outcome=\"refused\",code=\"kv_oom\"}"), 1);
    cr_expect_eq(value(text, "inferd_events_total{node=\"h\",kind=\"stage_timeout\"}"), 1);
    cr_expect_eq(value(text, "inferd_stage_timeouts_total{node=\"h\"}"), 1);
    cr_expect_eq(value(text, "inferd_time_to_first_token_seconds_count{node=\"h\"}"), 1);
    cr_expect_float_eq(value(text, "inferd_time_to_first_token_seconds_sum{node=\"h\"}"), 0.03,
                       1e-12);
    cr_expect_eq(value(text, "inferd_generated_tokens_total{node=\"h\"}"), 14);
    cr_expect_eq(value(text, "inferd_telemetry_messages_total{node=\"h\"}"), 4);
    cr_expect_eq(value(text, "inferd_telemetry_dropped_messages_total{node=\"h\"}"), 3);
    free(text);

    /* A restarted node counts from 0 again: no loss. */
    t = tel(PROTO_TOPIC_EVENT, "h", 0);
    metrics_take(m, &t, 0);
    text = render(m, 0);
    cr_expect_eq(value(text, "inferd_telemetry_dropped_messages_total{node=\"h\"}"), 3);
    free(text);
    metrics_free(m);
}

Test(metrics, bounded_by_node_count_and_label_values)
{
    metrics *m = metrics_new();
    for (int i = 0; i < METRICS_NODES_MAX + 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        proto_tel t = tel(PROTO_TOPIC_EVENT, name, 1);
        metrics_take(m, &t, 0);
    }
    for (int i = 0; i < 100; i++) {
        proto_tel t = tel(PROTO_TOPIC_EVENT, "n0", (uint64_t)i + 2);
        t.event.kind = PROTO_EV_UNKNOWN;
        snprintf(t.event.kind_name, sizeof t.event.kind_name, "kind%d", i);
        metrics_take(m, &t, 0);
    }
    char *text = render(m, 0);
    char series[64];
    snprintf(series, sizeof series, "inferd_telemetry_messages_total{node=\"n%d\"}",
             METRICS_NODES_MAX - 1);
    cr_expect_eq(value(text, series), 1);
    snprintf(series, sizeof series, "inferd_telemetry_messages_total{node=\"n%d\"}",
             METRICS_NODES_MAX);
    cr_expect(isnan(value(text, series)), "past the bound, a node is ignored");
    cr_expect_gt(value(text, "inferd_events_total{node=\"n0\",kind=\"other\"}"), 70,
                 "kinds past the bound are folded into other");
    free(text);
    metrics_free(m);
}
