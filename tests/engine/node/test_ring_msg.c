/* test_ring_msg.c: stage frames are checked as strictly as control
 * requests. Frames the node itself sends pass; a table of forged ones
 * (a field of the wrong type or out of range, an unknown field, a missing
 * one, header fields a kind does not use) is refused with a message that
 * names the field, before any stage acts on it. What passes is decoded
 * into its kind's struct, which is all the handlers read. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "engine/node/ring.h"
#include "engine/node/ring_msg.h"

#define FP "\"fingerprint\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\""
#define ENTRY                                                                                      \
    "{\"name\":\"b\"," FP ",\"model\":\"stories260K\",\"first\":2,\"last\":5,\"n_layers\":5,"      \
    "\"next\":\"tcp://127.0.0.1:7001\",\"ok\":true}"
#define PREPARE(extra)                                                                             \
    "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":100,\"chunk\":64,\"drop\":[],\"stages\":"  \
    "[" ENTRY "]" extra "}"
#define START(fields)                                                                              \
    "{\"req\":\"g1\",\"session\":\"s\",\"pos\":0,\"ctx\":9,\"seed\":-5,\"stages\":[]" fields "}"

typedef struct msg_case {
    ring_kind kind;
    const char *json;
    const char *named; /* the message must contain this; NULL for a valid frame */
} msg_case;

static const msg_case msg_cases[] = {
    /* what the node sends */
    {RING_PREPARE, PREPARE(""), NULL},
    {RING_PREPARE, PREPARE(",\"head\":\"tcp://127.0.0.1:7000\""), NULL},
    {RING_PREPARE, PREPARE(",\"eval\":true"), NULL},
    {RING_PREPARE, PREPARE(",\"eval\":1"), "eval"},
    {RING_START, START(",\"temperature\":0.8,\"top_p\":0.9"), NULL},
    {RING_END, "{\"req\":\"g1\",\"ok\":false}", NULL},
    {RING_PROBE, "{\"stages\":[]}", NULL},
    {RING_PROBE, "{\"stages\":[" ENTRY "]}", "ok"},
    {RING_PROBE, "{\"stages\":[],\"req\":\"g1\"}", "req"},
    {RING_SET,
     "{\"kv_bits\":8,\"stages\":[{\"name\":\"a\",\"first\":0,\"last\":2,\"ok\":true,"
     "\"kv\":{\"from_bits\":16,\"to_bits\":8,\"ms\":3.5,\"bytes_before\":10,"
     "\"bytes_after\":5}}]}",
     NULL},
    {RING_DROP, "{\"sessions\":[\"s1\",\"s2\"]}", NULL},
    {RING_REPORT,
     "{\"name\":\"b\",\"first\":2,\"of\":\"hidden\",\"ok\":false,\"code\":\"internal\","
     "\"message\":\"x\"}",
     NULL},
    /* forged */
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":2147483647,\"chunk\":8,\"drop\":[],"
     "\"stages\":[]}",
     "ctx"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":50,\"ctx\":50,\"chunk\":8,\"drop\":[],"
     "\"stages\":[]}",
     "ctx"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":-1,\"ctx\":5,\"chunk\":8,\"drop\":[],"
     "\"stages\":[]}",
     "pos"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5.5,\"chunk\":8,\"drop\":[],"
     "\"stages\":[]}",
     "ctx"},
    {RING_PREPARE,
     "{\"req\":\"\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[],\"stages\":[]}",
     "req"},
    {RING_PREPARE,
     "{\"req\":\"g\\n1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[],"
     "\"stages\":[]}",
     "req"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"stages\":[]}", "drop"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[7],"
     "\"stages\":[]}",
     "drop"},
    {RING_PREPARE, PREPARE(",\"head\":\"http://evil\""), "head"},
    {RING_PREPARE, PREPARE(",\"head\":\"tcp://a b\""), "head"},
    {RING_PREPARE, PREPARE(",\"head_key\":\"short\""), "head_key"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":0,\"drop\":[],\"stages\":[]}",
     "chunk"},
    {RING_PREPARE, PREPARE(",\"extra\":1"), "extra"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[],\"stages\":[{"
     "\"name\":\"b\"}"
     "]}",
     "stages.0.fingerprint"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[],\"stages\":[{"
     "\"name\":\"b\","
     "\"fingerprint\":\"xyz\",\"model\":\"m\",\"first\":0,\"last\":1,\"n_layers\":1,\"next\":\"\","
     "\"ok\":true}]}",
     "stages.0.fingerprint"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[],\"stages\":[{"
     "\"name\":"
     "\"b\"," FP
     ",\"model\":\"m\",\"first\":0,\"last\":1,\"n_layers\":1,\"next\":\"\",\"ok\":false,"
     "\"code\":\"no_such_code\"}]}",
     "stages.0.code"},
    {RING_PREPARE,
     "{\"req\":\"g1\",\"session\":\"\",\"pos\":0,\"ctx\":5,\"chunk\":8,\"drop\":[],\"stages\":{}}",
     "stages"},
    {RING_START, START(",\"temperature\":\"hot\",\"top_p\":0.9"), "temperature"},
    {RING_START, START(",\"temperature\":101,\"top_p\":0.9"), "temperature"},
    {RING_START, START(",\"temperature\":1,\"top_p\":0"), "top_p"},
    {RING_START, START(",\"temperature\":1"), "top_p"},
    {RING_START,
     "{\"req\":\"g1\",\"session\":\"s\",\"pos\":0,\"ctx\":9,\"seed\":1.5,\"stages\":[],"
     "\"temperature\":1,\"top_p\":1}",
     "seed"},
    {RING_END, "{\"req\":\"g1\",\"ok\":1}", "ok"},
    {RING_END, "{\"req\":\"g1\"}", "ok"},
    {RING_SET, "{\"stages\":[]}", "prefill_step"},
    {RING_SET, "{\"kv_bits\":5,\"stages\":[]}", "kv_bits"},
    {RING_SET, "{\"prefill_step\":0,\"stages\":[]}", "prefill_step"},
    {RING_SET, "{\"prefill_step\":\"fast\",\"stages\":[]}", "prefill_step"},
    {RING_SET, "{\"kv_bits\":8}", "stages"},
    {RING_SET,
     "{\"kv_bits\":8,\"stages\":[{\"name\":\"a\",\"first\":0,\"last\":2,\"ok\":true,\"kv\":{}}]}",
     "stages.0.kv.from_bits"},
    {RING_DROP, "{\"sessions\":[]}", "sessions"},
    {RING_DROP, "{\"sessions\":\"s1\"}", "sessions"},
    {RING_REPORT, "{\"name\":\"b\",\"first\":2,\"of\":\"nothing\",\"ok\":true}", "of"},
    {RING_REPORT, "{\"name\":\"b\",\"first\":-2,\"of\":\"hidden\",\"ok\":true}", "first"},
    {RING_REPORT, "{\"name\":\"\",\"first\":2,\"of\":\"hidden\",\"ok\":true}", "name"},
};

Test(ring_msg, table)
{
    for (size_t i = 0; i < sizeof msg_cases / sizeof *msg_cases; i++) {
        const msg_case *c = &msg_cases[i];
        json_error_t je;
        json_t *o = json_loads(c->json, JSON_REJECT_DUPLICATES, &je);
        cr_assert_not_null(o, "case %zu: bad test JSON: %s", i, je.text);
        char err[512] = "";
        ring_msg *m = NULL;
        int rc = ring_msg_decode(c->kind, o, &m, err, sizeof err);
        if (!c->named) {
            cr_expect_eq(rc, 0, "case %zu (%s) refused: %s", i, c->json, err);
            cr_expect_not_null(m, "case %zu", i);
        } else {
            cr_expect_eq(rc, -1, "case %zu (%s) accepted", i, c->json);
            cr_expect_null(m, "case %zu", i);
            cr_expect(strstr(err, c->named) != NULL, "case %zu: '%s' does not name '%s'", i, err,
                      c->named);
        }
        ring_msg_free(c->kind, m);
        json_decref(o);
    }
}

static ring_msg *decoded(ring_kind kind, const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    cr_assert_not_null(o, "bad test JSON: %s", je.text);
    ring_msg *m;
    char err[512];
    cr_assert_eq(ring_msg_decode(kind, o, &m, err, sizeof err), 0, "%s", err);
    json_decref(o);
    return m;
}

/* Every field a handler reads comes out of the walk that checks it. */
Test(ring_msg, decodes_prepare)
{
    ring_msg *m = decoded(
        RING_PREPARE,
        "{\"head\":\"tcp://127.0.0.1:7000\",\"req\":\"g1\",\"session\":\"s\",\"pos\":3,"
        "\"ctx\":100,\"chunk\":64,\"eval\":true,\"drop\":[\"old\",\"older\"],\"running\":[7,9],"
        "\"stages\":[" ENTRY ",{\"name\":\"c\"," FP ",\"model\":\"m\",\"first\":5,\"last\":6,"
        "\"n_layers\":6,\"next\":\"\",\"ok\":false,\"code\":\"kv_oom\",\"message\":\"full\","
        "\"needed\":10,\"available\":5,\"budget\":20}]}");
    const ring_msg_prepare *p = &m->prepare;
    cr_expect_str_eq(p->head, "tcp://127.0.0.1:7000");
    cr_expect_str_eq(p->head_key, "");
    cr_expect_str_eq(p->req, "g1");
    cr_expect_str_eq(p->session, "s");
    cr_expect_eq(p->pos, 3);
    cr_expect_eq(p->ctx, 100);
    cr_expect_eq(p->chunk, 64);
    cr_expect_eq(p->eval, 1);
    cr_assert_eq(p->drop.n, 2);
    cr_expect_str_eq(p->drop.v[1], "older");
    cr_assert_eq(p->running.n, 2);
    cr_expect_eq(p->running.v[1], 9);
    cr_assert_eq(p->stages.n, 2);
    const ring_stage *b = &p->stages.v[0], *c = &p->stages.v[1];
    cr_expect_str_eq(b->name, "b");
    cr_expect_str_eq(b->model, "stories260K");
    cr_expect_eq(b->fingerprint[63], 'f');
    cr_expect_eq(b->first, 2);
    cr_expect_eq(b->last, 5);
    cr_expect_str_eq(b->next, "tcp://127.0.0.1:7001");
    cr_expect_eq(b->ok, 1);
    cr_expect_eq(b->code, PROTO_OK);
    cr_expect_eq(b->chunk, 0, "no chunk said");
    cr_expect_eq(c->ok, 0);
    cr_expect_eq(c->code, PROTO_E_KV_OOM);
    cr_expect_str_eq(c->message, "full");
    ring_msg_free(RING_PREPARE, m);
}

Test(ring_msg, decodes_start_set_report)
{
    ring_msg *m = decoded(RING_START, START(",\"temperature\":0.5,\"top_p\":0.25"));
    cr_expect_eq(m->start.temperature, 0.5f);
    cr_expect_eq(m->start.top_p, 0.25f);
    cr_expect_eq(m->start.seed, -5, "the seed's bits");
    cr_expect_eq(m->start.ctx, 9);
    ring_msg_free(RING_START, m);

    m = decoded(RING_SET_CHECK, "{\"prefill_step\":\"auto\",\"stages\":[]}");
    cr_expect_eq(m->set.args.has_prefill_step, 1);
    cr_expect_eq(m->set.args.prefill_step, PROTO_PREFILL_AUTO);
    cr_expect_eq(m->set.args.has_kv_bits, 0);
    ring_msg_free(RING_SET_CHECK, m);
    m = decoded(RING_SET, "{\"kv_bits\":8,\"prefill_step\":512,\"stages\":[]}");
    cr_expect_eq(m->set.args.kv_bits, 8);
    cr_expect_eq(m->set.args.prefill_step, 512);
    ring_msg_free(RING_SET, m);

    m = decoded(RING_REPORT, "{\"name\":\"b\",\"first\":2,\"of\":\"batch\",\"ok\":false,"
                             "\"code\":\"stage_timeout\",\"message\":\"slow\"}");
    cr_expect_eq(m->report.first, 2);
    cr_expect_eq(m->report.of, RING_BATCH);
    cr_expect_eq(m->report.ok, 0);
    cr_expect_eq(m->report.code, PROTO_E_STAGE_TIMEOUT);
    cr_expect_str_eq(m->report.message, "slow");
    ring_msg_free(RING_REPORT, m);

    m = decoded(RING_PROBE,
                "{\"head\":\"tcp://127.0.0.1:7000\",\"stages\":[{\"name\":\"b\"," FP
                ",\"model\":\"m\",\"first\":2,\"last\":5,\"n_layers\":5,\"next\":\"\"}]}");
    cr_assert_eq(m->probe.stages.n, 1);
    cr_expect_str_eq(m->probe.stages.v[0].name, "b");
    cr_expect_str_eq(m->probe.head, "tcp://127.0.0.1:7000");
    ring_msg_free(RING_PROBE, m);
    m = decoded(RING_REPORT, "{\"name\":\"q\",\"first\":300,\"of\":\"probe\",\"ok\":false,"
                             "\"code\":\"ring_down\",\"message\":\"past the limit\"}");
    cr_expect_str_eq(m->report.name, "q");
    cr_expect_eq(m->report.of, RING_PROBE);
    cr_expect_eq(m->report.code, PROTO_E_RING_DOWN);
    ring_msg_free(RING_REPORT, m);

    m = decoded(RING_DROP, "{\"sessions\":[\"s1\"]}");
    cr_assert_eq(m->drop.sessions.n, 1);
    cr_expect_str_eq(m->drop.sessions.v[0], "s1");
    ring_msg_free(RING_DROP, m);
}

/* A whole frame (header and payload) through the decoder. */
static int decode(const ring_hdr *h, const void *payload, size_t len, char *err, size_t errlen)
{
    unsigned char buf[RING_HDR_BYTES + 256];
    cr_assert_leq(len, 256);
    ring_hdr_encode(h, buf);
    if (len)
        memcpy(buf + RING_HDR_BYTES, payload, len);
    ring_frame f;
    int rc = ring_frame_decode(buf, RING_HDR_BYTES + len, &f, err, errlen);
    if (rc == 0)
        ring_frame_free(&f);
    return rc;
}

Test(ring_msg, step_headers)
{
    float x[4] = {0};
    char err[512];
    ring_hdr ok = {.kind = RING_HIDDEN,
                   .op = 1,
                   .step = 0,
                   .pos = 10,
                   .n = 2,
                   .dim = 2,
                   .token = -1,
                   .flags = RING_F_SAMPLE,
                   .chunk = 2};
    cr_assert_eq(decode(&ok, x, sizeof x, err, sizeof err), 0, "%s", err);

    ring_hdr h = ok;
    h.pos = 2147483647 - 1;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "pos past the context bound");
    h = ok;
    h.pos = -3;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "negative pos");
    h = ok;
    h.step = -1;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "hidden outside a step");
    h = ok;
    h.flags = 8;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "unknown flag");
    h = ok;
    h.flags = RING_F_DECODE;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "a decode step of 2 positions");
    h = ok;
    h.token = 5;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "a token in a hidden frame");
    h = ok;
    h.down_ms = -1.0;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "negative down_ms");
    h = ok;
    h.down_ms = 0.0 / 0.0;
    cr_expect_eq(decode(&h, x, sizeof x, err, sizeof err), -1, "NaN down_ms");
    cr_expect(strstr(err, "down_ms"), "%s", err);

    ring_hdr t = {.kind = RING_TOKEN, .op = 1, .step = 3, .pos = 10, .n = 1, .token = 7};
    cr_assert_eq(decode(&t, NULL, 0, err, sizeof err), 0, "%s", err);
    t.token = -2;
    cr_expect_eq(decode(&t, NULL, 0, err, sizeof err), -1, "token below -1");
    t.token = 7;
    t.dim = 4;
    cr_expect_eq(decode(&t, NULL, 0, err, sizeof err), -1, "a token frame with a dim");
}

Test(ring_msg, json_headers)
{
    const char *end = "{\"req\":\"g1\",\"ok\":true}";
    char err[512];
    ring_hdr ok = {.kind = RING_END, .op = 1, .step = -1, .token = -1};
    cr_assert_eq(decode(&ok, end, strlen(end), err, sizeof err), 0, "%s", err);
    ring_hdr h = ok;
    h.n = 4;
    cr_expect_eq(decode(&h, end, strlen(end), err, sizeof err), -1, "n in an end frame");
    h = ok;
    h.step = 3;
    cr_expect_eq(decode(&h, end, strlen(end), err, sizeof err), -1, "a step in an end frame");
    cr_expect(strstr(err, "step"), "%s", err);
    /* A payload of another kind: a start's fields in an end frame. */
    const char *drop = "{\"sessions\":[\"s\"]}";
    cr_expect_eq(decode(&ok, drop, strlen(drop), err, sizeof err), -1);
    cr_expect(strstr(err, "sessions"), "%s", err);
}
