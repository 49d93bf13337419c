/* proto_tel.c: telemetry messages (node PUB -> subscribers): encoders for
 * the four topics and the subscriber's decoder.
 *
 * The step encoder runs once per step of every request and must cost a
 * small fraction of the step: it writes into the caller's buffer with
 * jsonw (no allocation, no tree). The other topics are rare (a heartbeat a
 * second, two per request, events) and use jansson. On the subscriber's
 * side, step messages are read by proto_step_scan.c for the same reason,
 * with the jansson decoder below as its reference and fallback.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "jsonr.h"
#include "jsonw.h"
#include "proto_step_scan.h"
#include "protocol.h"

static const char *const topic_names[] = {
    [PROTO_TOPIC_STEP] = "step",   [PROTO_TOPIC_NODE] = "node",       [PROTO_TOPIC_REQ] = "req",
    [PROTO_TOPIC_EVENT] = "event", [PROTO_TOPIC_UNKNOWN] = "unknown",
};

const char *proto_topic_name(proto_topic t)
{
    return (unsigned)t <= PROTO_TOPIC_UNKNOWN ? topic_names[t] : "unknown";
}

static const char *const event_names[] = {
    [PROTO_EV_CONFIG_APPLIED] = "config_applied",
    [PROTO_EV_KV_CONVERTED] = "kv_converted",
    [PROTO_EV_REFUSED] = "refused",
    [PROTO_EV_STAGE_TIMEOUT] = "stage_timeout",
    [PROTO_EV_MODEL_MISMATCH] = "model_mismatch",
    [PROTO_EV_NUMERIC] = "numeric",
    [PROTO_EV_ERROR] = "error",
    [PROTO_EV_SHUTDOWN] = "shutdown",
    [PROTO_EV_UNKNOWN] = "unknown",
};

const char *proto_event_name(proto_event_kind k)
{
    return (unsigned)k <= PROTO_EV_UNKNOWN ? event_names[k] : "unknown";
}

static const char *const input_names[] = {
    [PROTO_INPUT_PROMPT] = "prompt",
    [PROTO_INPUT_TOKENS] = "tokens",
    [PROTO_INPUT_SYNTHETIC] = "synthetic",
};

int proto_step_encode(const proto_head *h, const proto_step *s, char *buf, size_t cap)
{
    jw w;

    jw_init(&w, buf, cap);
    jw_open(&w);
    jw_key(&w, "v");
    jw_i64(&w, PROTO_VERSION);
    jw_key(&w, "node");
    jw_str(&w, h->node, strnlen(h->node, sizeof h->node));
    jw_key(&w, "seq");
    jw_u64(&w, h->seq);
    jw_key(&w, "t");
    jw_i64(&w, h->t_ms);
    jw_key(&w, "req");
    jw_str(&w, s->req, strnlen(s->req, sizeof s->req));
    jw_key(&w, "step");
    jw_i64(&w, s->step);
    jw_key(&w, "phase");
    if (s->phase == PROTO_PHASE_PREFILL)
        jw_raw(&w, "\"prefill\"", 9);
    else
        jw_raw(&w, "\"decode\"", 8);
    jw_key(&w, "tokens");
    jw_i64(&w, s->tokens);
    jw_key(&w, "pos");
    jw_i64(&w, s->pos);
    jw_key(&w, "step_ms");
    jw_fixed(&w, s->step_ms, 3);
    jw_key(&w, "model_ms");
    jw_fixed(&w, s->model_ms, 3);
    jw_key(&w, "eval_ms");
    jw_fixed(&w, s->eval_ms, 3);
    jw_key(&w, "wait_ms");
    jw_fixed(&w, s->wait_ms, 3);
    jw_key(&w, "kv_bytes");
    jw_u64(&w, s->kv_bytes);
    jw_key(&w, "kv_bits");
    jw_i64(&w, s->kv_bits);
    jw_key(&w, "prefill_step");
    jw_i64(&w, s->prefill_step);
    jw_key(&w, "rss");
    jw_u64(&w, s->rss);
    jw_key(&w, "budget");
    jw_u64(&w, s->budget);
    jw_key(&w, "headroom");
    jw_i64(&w, s->headroom);
    jw_key(&w, "act_max");
    jw_fixed(&w, s->act_max, 6);
    jw_key(&w, "nonfinite");
    jw_i64(&w, s->nonfinite);
    jw_key(&w, "seqs");
    jw_i64(&w, s->seqs);
    jw_key(&w, "busy");
    jw_fixed(&w, s->busy, 3);
    jw_close(&w);
    return jw_end(&w);
}

/* {"v":1,"node":..,"seq":..,"t":..}: every telemetry payload starts so. */
static json_t *envelope(const proto_head *h)
{
    char node[sizeof h->node];
    snprintf(node, sizeof node, "%.*s", (int)strnlen(h->node, sizeof h->node), h->node);
    return json_pack("{s:i,s:o,s:I,s:I}", "v", PROTO_VERSION, "node", jw_string(node), "seq",
                     (json_int_t)(h->seq & INT64_MAX), "t", (json_int_t)h->t_ms);
}

/* The envelope followed by o's fields (the envelope's win), as text; frees
 * o. Starting from the envelope puts it first in the text, which keeps
 * messages readable in a log. */
static char *finish(const proto_head *h, json_t *o)
{
    json_t *env = envelope(h);
    char *text = NULL;
    if (o && env && !json_object_update_missing(env, o))
        text = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    json_decref(o);
    return text;
}

char *proto_node_encode(const proto_head *h, const proto_status *s)
{
    return finish(h, proto_status_json(h->node, s));
}

char *proto_req_encode(const proto_head *h, const proto_req_msg *m)
{
    json_t *o = json_pack("{s:o,s:s}", "req", jw_string(m->req), "state", m->end ? "end" : "start");
    int bad = !o;
    if (!bad && m->session[0])
        bad = json_object_set_new(o, "session", jw_string(m->session));
    if (!bad && m->kind[0])
        bad = json_object_set_new(o, "kind", jw_string(m->kind));
    if (!bad && !m->end && m->source[0])
        bad = json_object_set_new(o, "source", jw_string(m->source));
    if (!bad && !m->end)
        bad =
            json_object_set_new(
                o, "input",
                json_string(input_names[m->input <= PROTO_INPUT_SYNTHETIC ? m->input
                                                                          : PROTO_INPUT_PROMPT])) ||
            json_object_set_new(o, "prompt_tokens", json_integer(m->prompt_tokens)) ||
            json_object_set_new(o, "max_tokens", json_integer(m->max_tokens));
    if (!bad && m->end)
        bad = json_object_set_new(o, "ok", json_boolean(m->ok)) ||
              json_object_set_new(o, "stats", proto_stats_json(&m->stats));
    if (!bad && m->end && !m->ok)
        bad = json_object_set_new(
            o, "error",
            json_pack("{s:o,s:o}", "code", jw_string(m->code), "message", jw_string(m->message)));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return finish(h, o);
}

char *proto_event_encode(const proto_head *h, const proto_event *ev, const json_t *detail)
{
    json_t *o = json_pack("{s:s,s:o}", "kind", proto_event_name(ev->kind), "message",
                          jw_string(ev->message));
    int bad = !o;
    if (!bad && ev->req[0])
        bad = json_object_set_new(o, "req", jw_string(ev->req));
    if (!bad && ev->code[0])
        bad = json_object_set_new(o, "code", jw_string(ev->code));
    if (!bad && detail) /* only read, as in proto_reply_ok */
        bad = json_object_update_missing(o, (json_t *)detail);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return finish(h, o);
}

int proto_publish(void *pub, proto_topic topic, const char *payload, size_t len)
{
    const char *name = proto_topic_name(topic);
    if (zmq_send(pub, name, strlen(name), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    return zmq_send(pub, payload, len, ZMQ_DONTWAIT) < 0 ? -1 : 0;
}

static proto_topic topic_of(const void *topic, size_t len)
{
    for (int t = 0; t < PROTO_TOPIC_UNKNOWN; t++)
        if (strlen(topic_names[t]) == len && !memcmp(topic, topic_names[t], len))
            return (proto_topic)t;
    return PROTO_TOPIC_UNKNOWN;
}

static int decode_head(const json_t *o, proto_head *h, char *err, size_t errlen)
{
    int v = 0;
    if (jr_int(o, "v", &v, err, errlen))
        return -1;
    if (v != PROTO_VERSION) {
        snprintf(err, errlen, "field 'v' is %d, expected %d", v, PROTO_VERSION);
        return -1;
    }
    if (!json_is_string(json_object_get(o, "node")) || !json_object_get(o, "seq") ||
        !json_object_get(o, "t")) {
        snprintf(err, errlen, "telemetry needs 'node', 'seq' and 't'");
        return -1;
    }
    return jr_str(o, "node", h->node, sizeof h->node, err, errlen) ||
                   jr_u64(o, "seq", &h->seq, err, errlen) || jr_i64(o, "t", &h->t_ms, err, errlen)
               ? -1
               : 0;
}

static int decode_step(const json_t *o, proto_step *s, char *err, size_t errlen)
{
    char phase[16] = "";
    s->act_max = 0;
    s->seqs = 1;
    s->busy = NAN;
    if (jr_str(o, "req", s->req, sizeof s->req, err, errlen) ||
        jr_i64(o, "step", &s->step, err, errlen) ||
        jr_str(o, "phase", phase, sizeof phase, err, errlen) ||
        jr_int(o, "tokens", &s->tokens, err, errlen) || jr_int(o, "pos", &s->pos, err, errlen) ||
        jr_num(o, "step_ms", &s->step_ms, err, errlen) ||
        jr_num(o, "model_ms", &s->model_ms, err, errlen) ||
        jr_num(o, "eval_ms", &s->eval_ms, err, errlen) ||
        jr_num(o, "wait_ms", &s->wait_ms, err, errlen) ||
        jr_u64(o, "kv_bytes", &s->kv_bytes, err, errlen) ||
        jr_int(o, "kv_bits", &s->kv_bits, err, errlen) ||
        jr_int(o, "prefill_step", &s->prefill_step, err, errlen) ||
        jr_u64(o, "rss", &s->rss, err, errlen) || jr_u64(o, "budget", &s->budget, err, errlen) ||
        jr_i64(o, "headroom", &s->headroom, err, errlen) ||
        jr_num(o, "act_max", &s->act_max, err, errlen) ||
        jr_i64(o, "nonfinite", &s->nonfinite, err, errlen) ||
        jr_int(o, "seqs", &s->seqs, err, errlen) || jr_num(o, "busy", &s->busy, err, errlen))
        return -1;
    if (!strcmp(phase, "prefill")) {
        s->phase = PROTO_PHASE_PREFILL;
    } else if (!strcmp(phase, "decode")) {
        s->phase = PROTO_PHASE_DECODE;
    } else {
        snprintf(err, errlen, "step: field 'phase': expected \"prefill\" or \"decode\"");
        return -1;
    }
    return 0;
}

static int decode_req(const json_t *o, proto_req_msg *m, char *err, size_t errlen)
{
    char state[16] = "", input[16] = "";
    if (jr_str(o, "req", m->req, sizeof m->req, err, errlen) ||
        jr_str(o, "state", state, sizeof state, err, errlen) ||
        jr_str(o, "session", m->session, sizeof m->session, err, errlen) ||
        jr_str(o, "kind", m->kind, sizeof m->kind, err, errlen) ||
        jr_str(o, "input", input, sizeof input, err, errlen) ||
        jr_str(o, "source", m->source, sizeof m->source, err, errlen) ||
        jr_int(o, "prompt_tokens", &m->prompt_tokens, err, errlen) ||
        jr_int(o, "max_tokens", &m->max_tokens, err, errlen) ||
        jr_bool(o, "ok", &m->ok, err, errlen))
        return -1;
    if (strcmp(state, "start") && strcmp(state, "end")) {
        snprintf(err, errlen, "req: field 'state': expected \"start\" or \"end\"");
        return -1;
    }
    m->end = !strcmp(state, "end");
    for (int i = 0; i <= PROTO_INPUT_SYNTHETIC; i++)
        if (!strcmp(input, input_names[i]))
            m->input = (proto_input)i;
    const json_t *stats = json_object_get(o, "stats");
    if (stats && proto_stats_from_json(stats, &m->stats, err, errlen))
        return -1;
    const json_t *e = json_object_get(o, "error");
    if (e && (!json_is_object(e) || jr_str(e, "code", m->code, sizeof m->code, err, errlen) ||
              jr_str(e, "message", m->message, sizeof m->message, err, errlen))) {
        if (!json_is_object(e))
            snprintf(err, errlen, "req: field 'error': expected an object, got %s", jr_type(e));
        return -1;
    }
    return 0;
}

static int decode_event(const json_t *o, proto_event *ev, char *err, size_t errlen)
{
    if (jr_str(o, "kind", ev->kind_name, sizeof ev->kind_name, err, errlen) ||
        jr_str(o, "req", ev->req, sizeof ev->req, err, errlen) ||
        jr_str(o, "code", ev->code, sizeof ev->code, err, errlen) ||
        jr_str(o, "message", ev->message, sizeof ev->message, err, errlen))
        return -1;
    ev->kind = PROTO_EV_UNKNOWN;
    for (int k = 0; k < PROTO_EV_UNKNOWN; k++)
        if (!strcmp(ev->kind_name, event_names[k]))
            ev->kind = (proto_event_kind)k;
    return 0;
}

int proto_tel_decode_json(const void *topic, size_t topic_len, const void *payload, size_t len,
                          proto_tel *out, char *err, size_t errlen)
{
    json_error_t jerr;
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->topic = topic_of(topic, topic_len);
    json_t *o = json_loadb(payload, len, JSON_DECODE_ANY, &jerr);
    if (!o) {
        snprintf(err, errlen, "%s: not valid JSON at byte %d: %s", proto_topic_name(out->topic),
                 jerr.position, jerr.text);
        return -1;
    }
    out->json = o;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "%s: expected a JSON object, got %s", proto_topic_name(out->topic),
                 jr_type(o));
        rc = -1;
    } else if (decode_head(o, &out->head, err, errlen)) {
        rc = -1;
    } else if (out->topic == PROTO_TOPIC_STEP) {
        rc = decode_step(o, &out->step, err, errlen);
    } else if (out->topic == PROTO_TOPIC_NODE) {
        rc = proto_status_from_json(o, &out->status, err, errlen);
    } else if (out->topic == PROTO_TOPIC_REQ) {
        rc = decode_req(o, &out->req, err, errlen);
    } else if (out->topic == PROTO_TOPIC_EVENT) {
        rc = decode_event(o, &out->event, err, errlen);
    }
    if (rc)
        proto_tel_free(out);
    return rc;
}

/* Step messages, nearly all of the traffic, go through the scanner (see
 * proto_step_scan.c for why); whatever it does not take, jansson decides. */
int proto_tel_decode(const void *topic, size_t topic_len, const void *payload, size_t len,
                     proto_tel *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->topic = topic_of(topic, topic_len);
    if (out->topic == PROTO_TOPIC_STEP && proto_step_scan(payload, len, &out->head, &out->step))
        return 0;
    return proto_tel_decode_json(topic, topic_len, payload, len, out, err, errlen);
}

void proto_tel_free(proto_tel *t)
{
    json_decref(t->json);
    t->json = NULL;
}
