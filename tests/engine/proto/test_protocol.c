/* test_protocol.c: the request decoder's bad-input table, valid requests of
 * every op, and the reply and telemetry encoders read back by jansson and
 * by the client-side decoders. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/protocol.h"

typedef struct bad_case {
    const char *frame;
    proto_code code;
    const char *field; /* the message must name it; NULL for frame-level errors */
} bad_case;

#define ENV "\"v\":1,\"id\":\"t1\","

static const bad_case bad_cases[] = {
    {"not json", PROTO_E_BAD_JSON, NULL},
    {"", PROTO_E_BAD_JSON, NULL},
    {"{\"v\":1,\"id\":\"t1\",\"op\":\"status\"", PROTO_E_BAD_JSON, NULL},
    {"{" ENV "\"op\":\"status\"} trailing", PROTO_E_BAD_JSON, NULL},
    {"{\"v\":1,\"v\":1,\"id\":\"t1\",\"op\":\"status\"}", PROTO_E_BAD_JSON, NULL},
    {"{" ENV "\"op\":\"st\xff\"}", PROTO_E_BAD_JSON, NULL},
    {"{" ENV "\"op\":\"generate\",\"seed\":99999999999999999999,\"prompt\":\"x\"}",
     PROTO_E_BAD_JSON, NULL},
    {"[1,2]", PROTO_E_NOT_OBJECT, NULL},
    {"42", PROTO_E_NOT_OBJECT, NULL},
    {"{\"id\":\"t1\",\"op\":\"status\"}", PROTO_E_BAD_VERSION, "v"},
    {"{\"v\":2,\"id\":\"t1\",\"op\":\"status\"}", PROTO_E_BAD_VERSION, "v"},
    {"{\"v\":\"1\",\"id\":\"t1\",\"op\":\"status\"}", PROTO_E_BAD_VERSION, "v"},
    {"{\"v\":1,\"op\":\"status\"}", PROTO_E_BAD_ID, "id"},
    {"{\"v\":1,\"id\":5,\"op\":\"status\"}", PROTO_E_BAD_ID, "id"},
    {"{\"v\":1,\"id\":\"\",\"op\":\"status\"}", PROTO_E_BAD_ID, "id"},
    {"{\"v\":1,\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
     "\"op\":\"status\"}",
     PROTO_E_BAD_ID, "id"},
    {"{\"v\":1,\"id\":\"a\\nb\",\"op\":\"status\"}", PROTO_E_BAD_ID, "id"},
    {"{" ENV "\"x\":1}", PROTO_E_UNKNOWN_OP, "op"},
    {"{" ENV "\"op\":7}", PROTO_E_UNKNOWN_OP, "op"},
    {"{" ENV "\"op\":\"explode\"}", PROTO_E_UNKNOWN_OP, "explode"},
    {"{" ENV "\"op\":\"status\",\"extra\":1}", PROTO_E_UNKNOWN_FIELD, "extra"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"kv_bits\":8}", PROTO_E_UNKNOWN_FIELD,
     "kv_bits"},
    {"{" ENV "\"op\":\"set\"}", PROTO_E_MISSING_FIELD, "prefill_step"},
    {"{" ENV "\"op\":\"set\",\"kv_bits\":5}", PROTO_E_BAD_VALUE, "kv_bits"},
    {"{" ENV "\"op\":\"set\",\"kv_bits\":\"16\"}", PROTO_E_BAD_TYPE, "kv_bits"},
    {"{" ENV "\"op\":\"set\",\"kv_bits\":16.0}", PROTO_E_BAD_TYPE, "kv_bits"},
    {"{" ENV "\"op\":\"set\",\"prefill_step\":0}", PROTO_E_BAD_VALUE, "prefill_step"},
    {"{" ENV "\"op\":\"set\",\"prefill_step\":65537}", PROTO_E_BAD_VALUE, "prefill_step"},
    {"{" ENV "\"op\":\"set\",\"prefill_step\":\"fast\"}", PROTO_E_BAD_VALUE, "prefill_step"},
    {"{" ENV "\"op\":\"set\",\"prefill_step\":1.5}", PROTO_E_BAD_TYPE, "prefill_step"},
    {"{" ENV "\"op\":\"set\",\"prefill_step\":512,\"kv_bits\":3}", PROTO_E_BAD_VALUE, "kv_bits"},
    {"{" ENV "\"op\":\"generate\"}", PROTO_E_MISSING_FIELD, "prompt"},
    {"{" ENV "\"op\":\"generate\",\"max_tokens\":4}", PROTO_E_MISSING_FIELD, "prompt"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"tokens\":[1]}", PROTO_E_CONFLICT, "tokens"},
    {"{" ENV "\"op\":\"generate\",\"tokens\":[1],\"synthetic_tokens\":9}", PROTO_E_CONFLICT,
     "synthetic_tokens"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":5}", PROTO_E_BAD_TYPE, "prompt"},
    {"{" ENV "\"op\":\"generate\",\"tokens\":[]}", PROTO_E_BAD_VALUE, "tokens"},
    {"{" ENV "\"op\":\"generate\",\"tokens\":\"1 2 3\"}", PROTO_E_BAD_TYPE, "tokens"},
    {"{" ENV "\"op\":\"generate\",\"tokens\":[1,\"x\"]}", PROTO_E_BAD_TYPE, "tokens"},
    {"{" ENV "\"op\":\"generate\",\"tokens\":[1,-1]}", PROTO_E_BAD_VALUE, "tokens"},
    {"{" ENV "\"op\":\"generate\",\"tokens\":[16777216]}", PROTO_E_BAD_VALUE, "tokens"},
    {"{" ENV "\"op\":\"generate\",\"synthetic_tokens\":0}", PROTO_E_BAD_VALUE, "synthetic_tokens"},
    {"{" ENV "\"op\":\"generate\",\"synthetic_tokens\":\"lots\"}", PROTO_E_BAD_TYPE,
     "synthetic_tokens"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"max_tokens\":-1}", PROTO_E_BAD_VALUE,
     "max_tokens"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"max_tokens\":2000000}", PROTO_E_BAD_VALUE,
     "max_tokens"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"temperature\":-0.5}", PROTO_E_BAD_VALUE,
     "temperature"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"temperature\":\"hot\"}", PROTO_E_BAD_TYPE,
     "temperature"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"top_p\":0}", PROTO_E_BAD_VALUE, "top_p"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"top_p\":1.5}", PROTO_E_BAD_VALUE, "top_p"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"seed\":-1}", PROTO_E_BAD_VALUE, "seed"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"seed\":1.5}", PROTO_E_BAD_TYPE, "seed"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"session\":\"\"}", PROTO_E_BAD_VALUE,
     "session"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"session\":null}", PROTO_E_BAD_TYPE, "session"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"source\":\"\"}", PROTO_E_BAD_VALUE, "source"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"source\":1}", PROTO_E_BAD_TYPE, "source"},
    {"{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"special\":1}", PROTO_E_BAD_TYPE, "special"},
    {"{" ENV "\"op\":\"cancel\"}", PROTO_E_MISSING_FIELD, "target"},
    {"{" ENV "\"op\":\"cancel\",\"target\":3}", PROTO_E_BAD_TYPE, "target"},
    {"{" ENV "\"op\":\"drop_session\"}", PROTO_E_MISSING_FIELD, "session"},
    {"{" ENV "\"op\":\"drop_session\",\"session\":[\"s\"]}", PROTO_E_BAD_TYPE, "session"},
    {"{" ENV "\"op\":\"eval\"}", PROTO_E_MISSING_FIELD, "prompt"},
    {"{" ENV "\"op\":\"eval\",\"logits\":true}", PROTO_E_MISSING_FIELD, "tokens"},
    {"{" ENV "\"op\":\"eval\",\"prompt\":\"x\",\"tokens\":[1]}", PROTO_E_CONFLICT, "tokens"},
    {"{" ENV "\"op\":\"eval\",\"synthetic_tokens\":9}", PROTO_E_UNKNOWN_FIELD, "synthetic_tokens"},
    {"{" ENV "\"op\":\"eval\",\"tokens\":[1],\"max_tokens\":1}", PROTO_E_UNKNOWN_FIELD,
     "max_tokens"},
    {"{" ENV "\"op\":\"eval\",\"prompt\":\"x\",\"session\":\"s\"}", PROTO_E_UNKNOWN_FIELD,
     "session"},
    {"{" ENV "\"op\":\"eval\",\"tokens\":[]}", PROTO_E_BAD_VALUE, "tokens"},
    {"{" ENV "\"op\":\"eval\",\"tokens\":[1,-1]}", PROTO_E_BAD_VALUE, "tokens"},
    {"{" ENV "\"op\":\"eval\",\"prompt\":5}", PROTO_E_BAD_TYPE, "prompt"},
    {"{" ENV "\"op\":\"eval\",\"tokens\":[1],\"logits\":1}", PROTO_E_BAD_TYPE, "logits"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\"}", PROTO_E_MISSING_FIELD, "kv_bits"},
    {"{" ENV "\"op\":\"quality\",\"kv_bits\":4}", PROTO_E_MISSING_FIELD, "prompt"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\",\"kv_bits\":5}", PROTO_E_BAD_VALUE, "kv_bits"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\",\"kv_bits\":\"4\"}", PROTO_E_BAD_TYPE, "kv_bits"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\",\"kv_bits\":4,\"ctx\":1}", PROTO_E_BAD_VALUE,
     "ctx"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\",\"kv_bits\":4,\"ctx\":64,\"score_from\":63}",
     PROTO_E_BAD_VALUE, "score_from"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\",\"kv_bits\":4,\"bucket\":0}", PROTO_E_BAD_VALUE,
     "bucket"},
    {"{" ENV "\"op\":\"quality\",\"prompt\":\"x\",\"kv_bits\":4,\"logits\":true}",
     PROTO_E_UNKNOWN_FIELD, "logits"},
    {"{" ENV "\"op\":\"quality\",\"synthetic_tokens\":9,\"kv_bits\":4}", PROTO_E_UNKNOWN_FIELD,
     "synthetic_tokens"},
};

#define N_BAD (sizeof bad_cases / sizeof *bad_cases)

static int decode(const char *frame, proto_request *req, proto_error *err)
{
    return proto_request_decode(frame, strlen(frame), req, err);
}

Test(protocol, bad_input_table)
{
    proto_request req;
    proto_error err;

    cr_assert_geq(N_BAD, 25);
    for (size_t i = 0; i < N_BAD; i++) {
        const bad_case *c = &bad_cases[i];
        int rc = decode(c->frame, &req, &err);
        cr_expect_eq(rc, -1, "case %zu (%s) was accepted", i, c->frame);
        cr_expect_eq(err.code, c->code, "case %zu (%s): got %s (%s), expected %s", i, c->frame,
                     proto_code_name(err.code), err.message, proto_code_name(c->code));
        if (c->field)
            cr_expect(strstr(err.message, c->field) != NULL,
                      "case %zu: message '%s' does not name '%s'", i, err.message, c->field);
        cr_expect_neq(err.message[0], '\0', "case %zu: no message", i);
        cr_expect_null(req.generate.prompt);
        cr_expect_null(req.generate.tokens);
        /* Past the envelope the id is known, so the error reply carries it. */
        if (c->code > PROTO_E_BAD_ID)
            cr_expect_str_eq(req.id, "t1", "case %zu: id not kept", i);
    }
    /* The decoder keeps no state: a good request right after still works. */
    cr_assert_eq(decode("{" ENV "\"op\":\"set\",\"kv_bits\":8}", &req, &err), 0, "%s", err.message);
    cr_assert_eq(req.set.kv_bits, 8);
}

Test(protocol, oversized_frame)
{
    size_t len = PROTO_MAX_FRAME + 1;
    char *big = malloc(len);
    proto_request req;
    proto_error err;

    cr_assert_not_null(big);
    /* A valid request padded with a long prompt: only the size is wrong. */
    const char *head = "{" ENV "\"op\":\"generate\",\"prompt\":\"";
    memset(big, 'a', len);
    memcpy(big, head, strlen(head));
    memcpy(big + len - 2, "\"}", 2);
    cr_assert_eq(proto_request_decode(big, len, &req, &err), -1);
    cr_assert_eq(err.code, PROTO_E_TOO_LARGE);
    cr_assert(strstr(err.message, "65536") != NULL, "%s", err.message);
    /* One byte less fits. */
    memcpy(big + len - 3, "\"}", 2);
    cr_assert_eq(proto_request_decode(big, len - 1, &req, &err), 0, "%s", err.message);
    cr_assert_eq(req.generate.prompt_len, len - 1 - strlen(head) - 2);
    proto_request_free(&req);
    free(big);
}

Test(protocol, every_code_is_documented)
{
    const char *root = getenv("INFERTOP_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/engine/PROTOCOL.md", root ? root : ".");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s (set INFERTOP_ROOT)", path);
    static char doc[256 * 1024];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    for (int c = PROTO_E_TOO_LARGE; c < PROTO_CODE_COUNT; c++) {
        char cell[64];
        snprintf(cell, sizeof cell, "| `%s` |", proto_code_name((proto_code)c));
        cr_expect(strstr(doc, cell) != NULL, "code %s is not in the PROTOCOL.md table",
                  proto_code_name((proto_code)c));
        cr_expect_eq(proto_code_parse(proto_code_name((proto_code)c)), c);
    }
    cr_expect_eq(proto_code_parse("from_the_future"), PROTO_CODE_COUNT);
}

Test(protocol, valid_status_cancel_drop)
{
    proto_request req;
    proto_error err;

    cr_assert_eq(decode("{\"v\":1,\"id\":\"s-1\",\"op\":\"status\"}", &req, &err), 0, "%s",
                 err.message);
    cr_assert_eq(req.op, PROTO_OP_STATUS);
    cr_assert_str_eq(req.id, "s-1");

    cr_assert_eq(decode("{" ENV "\"op\":\"cancel\",\"target\":\"r-7\"}", &req, &err), 0, "%s",
                 err.message);
    cr_assert_eq(req.op, PROTO_OP_CANCEL);
    cr_assert_str_eq(req.target, "r-7");

    cr_assert_eq(decode("{" ENV "\"op\":\"drop_session\",\"session\":\"growth\"}", &req, &err), 0,
                 "%s", err.message);
    cr_assert_eq(req.op, PROTO_OP_DROP_SESSION);
    cr_assert_str_eq(req.session, "growth");

    /* Field order does not matter, and a 64-byte id is the longest allowed. */
    cr_assert_eq(decode("{\"op\":\"status\",\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                        "aaaaaaaaaaaaaaaaaaa\",\"v\":1}",
                        &req, &err),
                 0, "%s", err.message);
    cr_assert_eq(strlen(req.id), 64);
}

Test(protocol, valid_set)
{
    proto_request req;
    proto_error err;

    cr_assert_eq(
        decode("{" ENV "\"op\":\"set\",\"prefill_step\":\"auto\",\"kv_bits\":4}", &req, &err), 0,
        "%s", err.message);
    cr_assert_eq(req.op, PROTO_OP_SET);
    cr_assert(req.set.has_prefill_step && req.set.has_kv_bits);
    cr_assert_eq(req.set.prefill_step, PROTO_PREFILL_AUTO);
    cr_assert_eq(req.set.kv_bits, 4);

    cr_assert_eq(decode("{" ENV "\"op\":\"set\",\"prefill_step\":65536}", &req, &err), 0);
    cr_assert(req.set.has_prefill_step && !req.set.has_kv_bits);
    cr_assert_eq(req.set.prefill_step, 65536);

    static const int bits[] = {32, 16, 8, 4};
    for (int i = 0; i < 4; i++) {
        char frame[128];
        snprintf(frame, sizeof frame, "{" ENV "\"op\":\"set\",\"kv_bits\":%d}", bits[i]);
        cr_assert_eq(decode(frame, &req, &err), 0, "%s", err.message);
        cr_assert_eq(req.set.kv_bits, bits[i]);
    }
}

Test(protocol, generate_sampling_fields)
{
    proto_request req;
    proto_error err;
    cr_assert_eq(decode("{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"top_k\":40,\"min_p\":0.05,"
                        "\"repeat_penalty\":1.1,\"presence_penalty\":-2,\"frequency_penalty\":2,"
                        "\"logit_bias\":{\"7\":-100,\"15\":0.5}}",
                        &req, &err),
                 0, "%s", err.message);
    cr_expect_eq(req.generate.top_k, 40);
    cr_expect_float_eq(req.generate.min_p, 0.05, 1e-6);
    cr_expect_float_eq(req.generate.repeat_penalty, 1.1, 1e-6);
    cr_expect_float_eq(req.generate.presence_penalty, -2, 1e-6);
    cr_expect_float_eq(req.generate.frequency_penalty, 2, 1e-6);
    cr_assert_eq(req.generate.n_bias, 2);
    cr_expect(req.generate.bias[0].token == 7 && req.generate.bias[0].bias == -100.0f);
    cr_expect(req.generate.bias[1].token == 15 && req.generate.bias[1].bias == 0.5f);
    proto_request_free(&req);
    cr_expect_null(req.generate.bias);
    cr_assert_eq(decode("{" ENV "\"op\":\"generate\",\"prompt\":\"x\"}", &req, &err), 0, "%s",
                 err.message);
    cr_expect(req.generate.top_k == 0 && req.generate.min_p == 0 && req.generate.n_bias == 0 &&
                  req.generate.repeat_penalty == 1.0f,
              "off by default");
    proto_request_free(&req);
    static const char *const bad[] = {
        "\"logit_bias\":[1]",
        "\"logit_bias\":{\"a\":1}",
        "\"logit_bias\":{\"1\":-101}",
        "\"logit_bias\":{\"1\":\"x\"}",
        "\"top_k\":-1",
        "\"min_p\":2",
        "\"frequency_penalty\":3",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char frame[256];
        snprintf(frame, sizeof frame, "{" ENV "\"op\":\"generate\",\"prompt\":\"x\",%s}", bad[i]);
        cr_expect_eq(decode(frame, &req, &err), -1, "%s accepted", bad[i]);
        cr_expect(err.code == PROTO_E_BAD_VALUE || err.code == PROTO_E_BAD_TYPE, "%s", bad[i]);
    }
}

Test(protocol, valid_generate)
{
    proto_request req;
    proto_error err;

    cr_assert_eq(
        decode("{" ENV "\"op\":\"generate\",\"prompt\":\"Once upon a \\u00e9\"}", &req, &err), 0,
        "%s", err.message);
    cr_assert_eq(req.op, PROTO_OP_GENERATE);
    cr_assert_eq(req.generate.input, PROTO_INPUT_PROMPT);
    cr_assert_str_eq(req.generate.prompt, "Once upon a \xc3\xa9");
    cr_assert_eq(req.generate.prompt_len, 14);
    cr_assert_eq(req.generate.max_tokens, PROTO_DEFAULT_MAX_TOKENS);
    cr_assert_float_eq(req.generate.temperature, PROTO_DEFAULT_TEMPERATURE, 1e-6);
    cr_assert_float_eq(req.generate.top_p, PROTO_DEFAULT_TOP_P, 1e-6);
    cr_assert_eq(req.generate.has_seed, 0);
    cr_assert_str_eq(req.generate.session, "");
    proto_request_free(&req);
    cr_assert_null(req.generate.prompt);

    cr_assert_eq(decode("{" ENV "\"op\":\"generate\",\"tokens\":[1,0,16777215],\"max_tokens\":0,"
                        "\"temperature\":0,\"top_p\":1,\"seed\":9007199254740993,"
                        "\"session\":\"grow\"}",
                        &req, &err),
                 0, "%s", err.message);
    cr_assert_eq(req.generate.input, PROTO_INPUT_TOKENS);
    cr_assert_eq(req.generate.n_tokens, 3);
    cr_assert_eq(req.generate.tokens[0], 1);
    cr_assert_eq(req.generate.tokens[1], 0);
    cr_assert_eq(req.generate.tokens[2], PROTO_TOKEN_ID_MAX);
    cr_assert_eq(req.generate.max_tokens, 0);
    cr_assert_float_eq(req.generate.temperature, 0.0, 1e-9);
    cr_assert_float_eq(req.generate.top_p, 1.0, 1e-9);
    cr_assert(req.generate.has_seed);
    cr_assert_eq(req.generate.seed, 9007199254740993ull);
    cr_assert_str_eq(req.generate.session, "grow");
    cr_assert_str_eq(req.generate.source, "");
    cr_assert(!req.generate.special, "control tokens' texts are text unless asked");
    proto_request_free(&req);

    /* Who sent it, for telemetry: the HTTP server says so. */
    cr_assert_eq(
        decode("{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"source\":\"http\"}", &req, &err), 0,
        "%s", err.message);
    cr_assert_str_eq(req.generate.source, "http");
    proto_request_free(&req);

    cr_assert_eq(
        decode("{" ENV "\"op\":\"generate\",\"prompt\":\"x\",\"special\":true}", &req, &err), 0,
        "%s", err.message);
    cr_assert(req.generate.special);
    proto_request_free(&req);

    cr_assert_eq(decode("{" ENV "\"op\":\"generate\",\"synthetic_tokens\":200000}", &req, &err), 0,
                 "%s", err.message);
    cr_assert_eq(req.generate.input, PROTO_INPUT_SYNTHETIC);
    cr_assert_eq(req.generate.synthetic_tokens, 200000);
    proto_request_free(&req);

    /* An empty prompt is a prompt: the node starts from BOS alone. */
    cr_assert_eq(decode("{" ENV "\"op\":\"generate\",\"prompt\":\"\"}", &req, &err), 0);
    cr_assert_eq(req.generate.prompt_len, 0);
    proto_request_free(&req);
}

Test(protocol, valid_eval)
{
    proto_request req;
    proto_error err;

    cr_assert_eq(decode("{" ENV "\"op\":\"eval\",\"tokens\":[1,403,407]}", &req, &err), 0, "%s",
                 err.message);
    cr_assert_eq(req.op, PROTO_OP_EVAL);
    cr_assert_eq(req.generate.input, PROTO_INPUT_TOKENS);
    cr_assert_eq(req.generate.n_tokens, 3);
    cr_assert_eq(req.generate.tokens[2], 407);
    /* A prefill with nothing to generate and no session. */
    cr_assert_eq(req.generate.max_tokens, 0);
    cr_assert_str_eq(req.generate.session, "");
    cr_assert_eq(req.eval_logits, 0);
    proto_request_free(&req);

    cr_assert_eq(decode("{" ENV "\"op\":\"eval\",\"prompt\":\"Once\",\"logits\":true}", &req, &err),
                 0, "%s", err.message);
    cr_assert_eq(req.generate.input, PROTO_INPUT_PROMPT);
    cr_assert_str_eq(req.generate.prompt, "Once");
    cr_assert_eq(req.eval_logits, 1);
    proto_request_free(&req);
    cr_assert_str_eq(proto_op_name(PROTO_OP_EVAL), "eval");
}

Test(protocol, valid_quality)
{
    proto_request req;
    proto_error err;

    cr_assert_eq(decode("{" ENV "\"op\":\"quality\",\"tokens\":[1,5,9],\"kv_bits\":4}", &req, &err),
                 0, "%s", err.message);
    cr_assert_eq(req.op, PROTO_OP_QUALITY);
    cr_assert_eq(req.generate.n_tokens, 3);
    cr_assert_eq(req.quality.kv_bits, 4);
    /* Unsaid: the whole text as one window, scored from 0, the node's
     * chunk, buckets of 1024; nothing generated. */
    cr_assert_eq(req.quality.ctx, 0);
    cr_assert_eq(req.quality.has_score_from, 0);
    cr_assert_eq(req.quality.has_prefill_step, 0);
    cr_assert_eq(req.quality.bucket, 1024);
    cr_assert_eq(req.generate.max_tokens, 0);
    proto_request_free(&req);

    cr_assert_eq(decode("{" ENV "\"op\":\"quality\",\"prompt\":\"Once\",\"kv_bits\":32,\"ctx\":512,"
                        "\"score_from\":10,\"prefill_step\":128,\"bucket\":256}",
                        &req, &err),
                 0, "%s", err.message);
    cr_assert_eq(req.quality.kv_bits, 32);
    cr_assert_eq(req.quality.ctx, 512);
    cr_assert_eq(req.quality.score_from, 10);
    cr_assert_eq(req.quality.has_score_from, 1);
    cr_assert_eq(req.quality.prefill_step, 128);
    cr_assert_eq(req.quality.has_prefill_step, 1);
    cr_assert_eq(req.quality.bucket, 256);
    proto_request_free(&req);
    cr_assert_str_eq(proto_op_name(PROTO_OP_QUALITY), "quality");
}

/* An eval chunk frame as the node sends it, with its logits as the second
 * frame the client reads into data. */
static void eval_frame(proto_reply *r, const char *text, const float *logits, size_t len)
{
    char err[256];
    cr_assert_eq(proto_reply_decode(text, strlen(text), r, err, sizeof err), 0, "%s", err);
    r->data_len = len;
    r->data = len ? malloc(len) : NULL;
    if (len)
        memcpy(r->data, logits, len);
}

Test(protocol, eval_reply_round_trip)
{
    const proto_eval_row rows[3] = {
        {1, 430, -0.4834389453465327}, {403, 488, -1.367416}, {407, 5, NAN}};
    const float logits[6] = {0.5f, -1.0f, 2.0f, 3.0f, -0.25f, 1e-8f};
    char *text = proto_reply_eval("e-1", 7, rows, 3, 2);
    cr_assert_not_null(text);
    proto_reply r;
    eval_frame(&r, text, logits, sizeof logits);
    cr_assert(!r.done && !r.has_token);
    int pos, n, vocab;
    proto_eval_row *got;
    char err[256];
    cr_assert_eq(proto_eval_decode(&r, &pos, &got, &n, &vocab, err, sizeof err), 1, "%s", err);
    cr_assert_eq(pos, 7);
    cr_assert_eq(n, 3);
    cr_assert_eq(vocab, 2);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(got[i].token, rows[i].token);
        cr_expect_eq(got[i].top1, rows[i].top1);
        /* Exact: the client prints the digits the node computed. */
        cr_expect_eq(got[i].logprob, rows[i].logprob);
    }
    cr_expect(isnan(got[2].logprob), "a non-finite logprob travels as null");
    free(got);
    proto_reply_free(&r);

    /* Logits that do not match vocab * rows are refused. */
    eval_frame(&r, text, logits, sizeof logits - sizeof *logits);
    cr_assert_eq(proto_eval_decode(&r, &pos, &got, &n, &vocab, err, sizeof err), -1);
    cr_assert(strstr(err, "logits") != NULL, "%s", err);
    proto_reply_free(&r);
    free(text);

    /* Without logits: vocab 0 and no second frame. */
    text = proto_reply_eval("e-1", 0, rows, 1, 0);
    eval_frame(&r, text, NULL, 0);
    cr_assert_eq(proto_eval_decode(&r, &pos, &got, &n, &vocab, err, sizeof err), 1, "%s", err);
    cr_assert_eq(vocab, 0);
    cr_assert_eq(n, 1);
    free(got);
    proto_reply_free(&r);
    free(text);

    /* A token frame is not an eval chunk; a chunk with ragged arrays is a bad one. */
    text = proto_reply_token("g-1", 3, "x", NULL);
    eval_frame(&r, text, NULL, 0);
    cr_assert_eq(proto_eval_decode(&r, &pos, &got, &n, &vocab, err, sizeof err), 0);
    proto_reply_free(&r);
    free(text);
    eval_frame(&r,
               "{\"v\":1,\"id\":\"e\",\"done\":false,\"pos\":0,\"tokens\":[1,2],\"top1\":[3],"
               "\"logprob\":[0.5,0.5]}",
               NULL, 0);
    cr_assert_eq(proto_eval_decode(&r, &pos, &got, &n, &vocab, err, sizeof err), -1);
    proto_reply_free(&r);
    eval_frame(&r,
               "{\"v\":1,\"id\":\"e\",\"done\":false,\"pos\":0,\"tokens\":[1],\"top1\":[-3],"
               "\"logprob\":[0.5]}",
               NULL, 0);
    cr_assert_eq(proto_eval_decode(&r, &pos, &got, &n, &vocab, err, sizeof err), -1);
    cr_assert(strstr(err, "top1[0]") != NULL, "%s", err);
    proto_reply_free(&r);
}

Test(protocol, token_reply_round_trip)
{
    /* Quote, backslash, newline, a control byte, UTF-8, and an invalid
     * byte as a byte-fallback token can produce. */
    char *text = proto_reply_token("r-1", 42, "a\"b\\c\nd\x01\xc3\xa9\xff", NULL);
    cr_assert_not_null(text);
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    cr_assert_not_null(o, "%s: %s", text, jerr.text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "text")),
                     "a\"b\\c\nd\x01\xc3\xa9\xef\xbf\xbd");
    json_decref(o);

    proto_reply r;
    char err[256];
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.id, "r-1");
    cr_assert(r.has_token && !r.done);
    cr_assert_eq(r.token, 42);
    cr_assert_str_eq(r.text, "a\"b\\c\nd\x01\xc3\xa9\xef\xbf\xbd");
    proto_reply_free(&r);
    free(text);
}

Test(protocol, ok_and_error_replies)
{
    proto_stats st = {.prompt_tokens = 5,
                      .gen_tokens = 7,
                      .ttft_ms = 12.5,
                      .prefill_ms = 10,
                      .prefill_tps = 500,
                      .decode_tps = NAN,
                      .e2e_ms = 40.25,
                      .ctx = 12};
    json_t *results = json_object();
    json_object_set_new(results, "stats", proto_stats_json(&st));
    json_object_set_new(results, "id", json_string("must not override"));
    char *text = proto_reply_ok("g-9", results);
    json_decref(results);
    cr_assert_not_null(text);

    proto_reply r;
    char err[256];
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.id, "g-9");
    cr_assert(r.done && r.ok && !r.has_token);
    proto_stats back;
    cr_assert_eq(proto_stats_from_json(json_object_get(r.json, "stats"), &back, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(back.prompt_tokens, 5);
    cr_assert_eq(back.gen_tokens, 7);
    cr_assert_float_eq(back.ttft_ms, 12.5, 1e-9);
    cr_assert_float_eq(back.e2e_ms, 40.25, 1e-9);
    cr_assert(isnan(back.decode_tps), "a NaN travels as null");
    cr_assert_eq(back.ctx, 12);
    proto_reply_free(&r);
    free(text);

    proto_error e;
    proto_fail(&e, PROTO_E_KV_OOM, "", "needs %d bytes, %d available of a %d budget", 300, 200,
               1000);
    text = proto_reply_error("", &e);
    cr_assert_not_null(text);
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_assert(r.done && !r.ok);
    cr_assert_str_eq(r.id, "");
    cr_assert_str_eq(r.code, "kv_oom");
    cr_assert_str_eq(r.message, "needs 300 bytes, 200 available of a 1000 budget");
    cr_assert_str_eq(r.field, "");
    cr_assert_null(json_object_get(r.json, "stats"));
    proto_reply_free(&r);
    free(text);

    /* A failed generate says what was done. */
    proto_fail(&e, PROTO_E_CANCELLED, "", "cancelled by request 'c1'");
    results = json_pack("{s:o}", "stats", proto_stats_json(&st));
    text = proto_reply_error_with("g-9", &e, results);
    json_decref(results);
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_assert(r.done && !r.ok);
    cr_assert_str_eq(r.code, "cancelled");
    cr_assert_eq(proto_stats_from_json(json_object_get(r.json, "stats"), &back, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(back.gen_tokens, 7);
    proto_reply_free(&r);
    free(text);

    /* A decoder error goes back with its field, under the request's id. */
    proto_request req;
    cr_assert_eq(decode("{" ENV "\"op\":\"set\",\"kv_bits\":5}", &req, &e), -1);
    text = proto_reply_error(req.id, &e);
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.id, "t1");
    cr_assert_str_eq(r.code, "bad_value");
    cr_assert_str_eq(r.field, "kv_bits");
    proto_reply_free(&r);
    free(text);
}

Test(protocol, reply_decoder_refuses_non_replies)
{
    static const char *const frames[] = {
        "nope",
        "[]",
        "{\"id\":\"x\",\"done\":true,\"ok\":true}",
        "{\"v\":1,\"id\":\"x\",\"done\":true}",
        "{\"v\":1,\"id\":\"x\",\"done\":true,\"ok\":false}",
        "{\"v\":1,\"id\":\"x\",\"done\":\"yes\"}",
    };
    proto_reply r;
    char err[256];
    for (size_t i = 0; i < sizeof frames / sizeof *frames; i++) {
        cr_expect_eq(proto_reply_decode(frames[i], strlen(frames[i]), &r, err, sizeof err), -1,
                     "accepted %s", frames[i]);
        cr_expect_null(r.json);
    }
}

static proto_step sample_step(void)
{
    proto_step s = {
        .step = 17,
        .phase = PROTO_PHASE_DECODE,
        .tokens = 1,
        .pos = 4096,
        .step_ms = 36.125,
        .model_ms = 7.0004,
        .eval_ms = 29.1246,
        .wait_ms = 25.5,
        .kv_bytes = 123456789012ull,
        .kv_bits = 4,
        .prefill_step = 512,
        .rss = 8589934592ull,
        .budget = 17179869184ull,
        .headroom = -1048576,
        .act_max = 12.34567,
        .nonfinite = 0,
    };
    snprintf(s.req, sizeof s.req, "r-\"1\"");
    return s;
}

Test(protocol, step_encodes_to_the_same_values)
{
    proto_head h = {.seq = 18446744073709ull, .t_ms = 1700000000123};
    snprintf(h.node, sizeof h.node, "n\\1\t\xe2\x82\xac");
    proto_step s = sample_step();
    char buf[PROTO_STEP_BUF];
    int n = proto_step_encode(&h, &s, buf, sizeof buf);
    cr_assert_gt(n, 0);
    cr_assert_eq((size_t)n, strlen(buf));

    json_error_t jerr;
    json_t *o = json_loads(buf, 0, &jerr);
    cr_assert_not_null(o, "%s: %s", buf, jerr.text);
    cr_assert_eq(json_integer_value(json_object_get(o, "v")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(o, "node")), "n\\1\t\xe2\x82\xac");
    cr_assert_str_eq(json_string_value(json_object_get(o, "req")), "r-\"1\"");
    cr_assert_str_eq(json_string_value(json_object_get(o, "phase")), "decode");
    cr_assert_eq(json_integer_value(json_object_get(o, "headroom")), -1048576);
    cr_assert_eq(json_integer_value(json_object_get(o, "kv_bytes")), 123456789012ll);
    /* Millisecond fields keep microseconds. */
    cr_assert_float_eq(json_number_value(json_object_get(o, "model_ms")), 7.0, 1e-9);
    cr_assert_float_eq(json_number_value(json_object_get(o, "eval_ms")), 29.125, 1e-9);
    json_decref(o);

    proto_tel t;
    char err[256];
    cr_assert_eq(proto_tel_decode("step", 4, buf, (size_t)n, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(t.topic, PROTO_TOPIC_STEP);
    cr_assert_str_eq(t.head.node, h.node);
    cr_assert_eq(t.head.seq, h.seq);
    cr_assert_eq(t.head.t_ms, h.t_ms);
    cr_assert_str_eq(t.step.req, s.req);
    cr_assert_eq(t.step.step, 17);
    cr_assert_eq(t.step.phase, PROTO_PHASE_DECODE);
    cr_assert_eq(t.step.tokens, 1);
    cr_assert_eq(t.step.pos, 4096);
    cr_assert_float_eq(t.step.step_ms, 36.125, 1e-9);
    cr_assert_float_eq(t.step.wait_ms, 25.5, 1e-9);
    cr_assert_eq(t.step.kv_bytes, s.kv_bytes);
    cr_assert_eq(t.step.kv_bits, 4);
    cr_assert_eq(t.step.prefill_step, 512);
    cr_assert_eq(t.step.rss, s.rss);
    cr_assert_eq(t.step.budget, s.budget);
    cr_assert_eq(t.step.headroom, s.headroom);
    cr_assert_float_eq(t.step.act_max, 12.34567, 1e-9);
    proto_tel_free(&t);
}

Test(protocol, step_edge_values)
{
    proto_head h = {.seq = 0, .t_ms = 0};
    proto_step s = sample_step();
    char buf[PROTO_STEP_BUF];

    s.phase = PROTO_PHASE_PREFILL;
    s.act_max = INFINITY;
    s.nonfinite = 3;
    s.step_ms = -0.0004;
    s.model_ms = 1e13;
    /* The worst case of escaping: every byte of both names invalid. */
    memset(h.node, 0xff, PROTO_NAME_MAX);
    memset(s.req, 0x01, PROTO_ID_MAX);
    int n = proto_step_encode(&h, &s, buf, sizeof buf);
    cr_assert_gt(n, 0, "PROTO_STEP_BUF too small for the worst case");

    proto_tel t;
    char err[256];
    cr_assert_eq(proto_tel_decode("step", 4, buf, (size_t)n, &t, err, sizeof err), 0, "%s: %s", err,
                 buf);
    cr_assert_eq(t.step.phase, PROTO_PHASE_PREFILL);
    cr_assert(isnan(t.step.act_max), "a non-finite act_max travels as null");
    cr_assert_eq(t.step.nonfinite, 3);
    cr_assert_float_eq(t.step.step_ms, 0.0, 1e-9);
    cr_assert_float_eq(t.step.model_ms, 1e13, 1e3);
    cr_assert_eq(strlen(t.step.req), PROTO_ID_MAX);
    proto_tel_free(&t);

    /* Too small a buffer: -1, never a cut message. */
    cr_assert_eq(proto_step_encode(&h, &s, buf, 64), -1);
    cr_assert_eq(buf[0], '\0');
}

static proto_status sample_status(void)
{
    proto_status s = {0};
    snprintf(s.version, sizeof s.version, "0.1.0");
    snprintf(s.model.name, sizeof s.model.name, "synth:110m");
    snprintf(s.model.chat_template, sizeof s.model.chat_template, "llama3");
    s.model.dim = 768;
    s.model.n_layers = 12;
    s.model.layer_first = 6;
    s.model.layer_last = 12;
    s.config.prefill_step = PROTO_PREFILL_AUTO;
    s.config.kv_bits = 8;
    s.config.threads = 2;
    s.memory.budget = 1ull << 34;
    s.memory.headroom = -5;
    s.memory.kv_bytes = 1234;
    s.sessions = 2;
    s.uptime_s = 3.5;
    s.stage = 1;
    s.n_stages = 2;
    s.n_ring = 2;
    snprintf(s.ring[0], sizeof s.ring[0], "tcp://127.0.0.1:7000");
    snprintf(s.ring[1], sizeof s.ring[1], "tcp://127.0.0.1:7001");
    snprintf(s.warning, sizeof s.warning, "control bound to 0.0.0.0 without CURVE");
    return s;
}

Test(protocol, heartbeat_round_trip)
{
    proto_head h = {.seq = 5, .t_ms = 1700000000000};
    snprintf(h.node, sizeof h.node, "n2");
    proto_status s = sample_status();
    char *text = proto_node_encode(&h, &s);
    cr_assert_not_null(text);

    proto_tel t;
    char err[256];
    cr_assert_eq(proto_tel_decode("node", 4, text, strlen(text), &t, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(t.topic, PROTO_TOPIC_NODE);
    cr_assert_eq(t.head.seq, 5);
    cr_assert_str_eq(t.status.model.name, "synth:110m");
    cr_assert_eq(t.status.model.layer_first, 6);
    cr_assert_eq(t.status.model.layer_last, 12);
    cr_assert_eq(t.status.config.prefill_step, PROTO_PREFILL_AUTO);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(t.json, "config"), "prefill_step")),
        "auto");
    cr_assert_eq(t.status.config.kv_bits, 8);
    cr_assert_eq(t.status.memory.budget, 1ull << 34);
    cr_assert_eq(t.status.memory.headroom, -5);
    cr_assert_eq(t.status.n_ring, 2);
    cr_assert_str_eq(t.status.ring[1], "tcp://127.0.0.1:7001");
    cr_assert_str_eq(t.status.warning, s.warning);
    cr_assert_float_eq(t.status.uptime_s, 3.5, 1e-9);
    cr_assert_str_eq(t.status.model.chat_template, "llama3");
    proto_tel_free(&t);
    free(text);
}

/* The kernel path travels in the heartbeat when the node names it, and
 * an older node's heartbeat, without it, reads as "". */
Test(protocol, heartbeat_cpu_path_is_optional)
{
    proto_head h = {.seq = 1, .t_ms = 1700000000000};
    snprintf(h.node, sizeof h.node, "n2");
    for (int named = 0; named <= 1; named++) {
        proto_status s = sample_status();
        snprintf(s.cpu_path, sizeof s.cpu_path, "%s", named ? "avx2" : "");
        char *text = proto_node_encode(&h, &s);
        cr_assert_not_null(text);
        cr_assert_eq(strstr(text, "\"cpu_path\":\"avx2\"") != NULL, named, "%s", text);
        cr_assert_eq(strstr(text, "cpu_path") != NULL, named, "%s", text);
        proto_tel t;
        char err[256];
        cr_assert_eq(proto_tel_decode("node", 4, text, strlen(text), &t, err, sizeof err), 0, "%s",
                     err);
        cr_assert_str_eq(t.status.cpu_path, named ? "avx2" : "");
        proto_tel_free(&t);
        free(text);
    }
}

Test(protocol, req_and_event_round_trip)
{
    proto_head h = {.seq = 9, .t_ms = 1};
    snprintf(h.node, sizeof h.node, "head");
    proto_req_msg m = {.input = PROTO_INPUT_SYNTHETIC, .prompt_tokens = 8192, .max_tokens = 16};
    snprintf(m.req, sizeof m.req, "g1");
    snprintf(m.session, sizeof m.session, "grow");
    char *text = proto_req_encode(&h, &m);
    proto_tel t;
    char err[256];
    cr_assert_eq(proto_tel_decode("req", 3, text, strlen(text), &t, err, sizeof err), 0, "%s", err);
    cr_assert(!t.req.end);
    cr_assert_eq(t.req.input, PROTO_INPUT_SYNTHETIC);
    cr_assert_eq(t.req.prompt_tokens, 8192);
    cr_assert_str_eq(t.req.session, "grow");
    cr_assert_str_eq(t.req.source, "");
    cr_assert_null(json_object_get(t.json, "source"), "no source, no field");
    proto_tel_free(&t);
    free(text);

    cr_assert_str_eq(t.req.kind, "", "an older node's: no kind");
    snprintf(m.source, sizeof m.source, "http");
    snprintf(m.kind, sizeof m.kind, "quality");
    text = proto_req_encode(&h, &m);
    cr_assert_eq(proto_tel_decode("req", 3, text, strlen(text), &t, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(t.req.source, "http");
    cr_assert_str_eq(t.req.kind, "quality");
    cr_assert_eq(t.req.input, PROTO_INPUT_SYNTHETIC, "the sender is not the prompt's input");
    proto_tel_free(&t);
    free(text);

    m.end = 1;
    m.ok = 0;
    m.stats.gen_tokens = 3;
    snprintf(m.code, sizeof m.code, "stage_timeout");
    snprintf(m.message, sizeof m.message, "stage 2 (tcp://127.0.0.1:7001) silent for 5000 ms");
    text = proto_req_encode(&h, &m);
    cr_assert_eq(proto_tel_decode("req", 3, text, strlen(text), &t, err, sizeof err), 0, "%s", err);
    cr_assert(t.req.end && !t.req.ok);
    cr_assert_eq(t.req.stats.gen_tokens, 3);
    cr_assert_str_eq(t.req.code, "stage_timeout");
    cr_assert_str_eq(t.req.message, m.message);
    proto_tel_free(&t);
    free(text);

    proto_event ev = {.kind = PROTO_EV_KV_CONVERTED};
    snprintf(ev.message, sizeof ev.message, "kv 16 -> 4 bits");
    json_t *detail =
        json_pack("{s:i,s:i,s:f,s:s}", "from_bits", 16, "to_bits", 4, "ms", 1.5, "node", "spoofed");
    text = proto_event_encode(&h, &ev, detail);
    json_decref(detail);
    cr_assert_eq(proto_tel_decode("event", 5, text, strlen(text), &t, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(t.event.kind, PROTO_EV_KV_CONVERTED);
    cr_assert_str_eq(t.event.kind_name, "kv_converted");
    cr_assert_str_eq(t.event.message, "kv 16 -> 4 bits");
    cr_assert_str_eq(t.head.node, "head", "a detail field overrode the envelope");
    cr_assert_eq(json_integer_value(json_object_get(t.json, "to_bits")), 4);
    proto_tel_free(&t);
    free(text);
}

Test(protocol, telemetry_is_forward_compatible)
{
    proto_tel t;
    char err[256];
    const char *newer = "{\"v\":1,\"node\":\"n\",\"seq\":1,\"t\":2,\"kind\":\"gpu_melted\","
                        "\"message\":\"m\",\"new_field\":[1,2]}";
    cr_assert_eq(proto_tel_decode("event", 5, newer, strlen(newer), &t, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(t.event.kind, PROTO_EV_UNKNOWN);
    cr_assert_str_eq(t.event.kind_name, "gpu_melted");
    proto_tel_free(&t);

    cr_assert_eq(proto_tel_decode("power", 5, newer, strlen(newer), &t, err, sizeof err), 0);
    cr_assert_eq(t.topic, PROTO_TOPIC_UNKNOWN);
    proto_tel_free(&t);

    static const char *const bad[] = {
        "{\"v\":2,\"node\":\"n\",\"seq\":1,\"t\":2,\"phase\":\"decode\"}",
        "{\"v\":1,\"seq\":1,\"t\":2,\"phase\":\"decode\"}",
        "{\"v\":1,\"node\":\"n\",\"seq\":-1,\"t\":2,\"phase\":\"decode\"}",
        "{\"v\":1,\"node\":\"n\",\"seq\":1,\"t\":2,\"phase\":\"thinking\"}",
        "{\"v\":1,\"node\":\"n\",\"seq\":1,\"t\":2,\"phase\":\"decode\",\"step_ms\":\"slow\"}",
        "not json",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(proto_tel_decode("step", 4, bad[i], strlen(bad[i]), &t, err, sizeof err), -1,
                     "accepted %s", bad[i]);
        cr_expect_null(t.json);
    }
}

Test(protocol, endpoint_loopback)
{
    static const struct {
        const char *ep;
        int loopback;
    } cases[] = {
        {"tcp://127.0.0.1:5555", 1}, {"tcp://127.8.9.10:1", 1},
        {"tcp://localhost:5555", 1}, {"tcp://lo:5555", 1},
        {"tcp://[::1]:5555", 1},     {"ipc:///tmp/inferd.sock", 1},
        {"inproc://x", 1},           {"tcp://*:5555", 0},
        {"tcp://0.0.0.0:5555", 0},   {"tcp://10.0.0.5:5555", 0},
        {"tcp://[::]:5555", 0},      {"tcp://eth0:5555", 0},
        {"tcp://128.0.0.1:5555", 0}, {"udp://127.0.0.1:1", 0},
        {"tcp://127.0.0.1", 0},      {"garbage", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_expect_eq(proto_endpoint_is_loopback(cases[i].ep), cases[i].loopback, "%s", cases[i].ep);
}

/* The head's ring_health goes out in status and comes back as it was;
 * a status without it (any other node, an older head) reads as unknown. */
Test(protocol, status_ring_health_round_trip)
{
    proto_status s, back;
    char err[256];
    memset(&s, 0, sizeof s);
    s.ring_health.known = 1;
    s.ring_health.state = PROTO_RING_DOWN;
    snprintf(s.ring_health.stage, sizeof s.ring_health.stage, "b");
    snprintf(s.ring_health.message, sizeof s.ring_health.message, "stage 'b' did not answer");
    json_t *o = proto_status_json("a", &s);
    cr_assert_not_null(o);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(o, "ring_health"), "state")),
                     "down");
    cr_assert_eq(proto_status_from_json(o, &back, err, sizeof err), 0, "%s", err);
    cr_expect_eq(back.ring_health.known, 1);
    cr_expect_eq(back.ring_health.state, PROTO_RING_DOWN);
    cr_expect_str_eq(back.ring_health.stage, "b");
    cr_expect_str_eq(back.ring_health.message, "stage 'b' did not answer");
    json_decref(o);

    s.ring_health.known = 0;
    o = proto_status_json("a", &s);
    cr_expect_null(json_object_get(o, "ring_health"));
    cr_assert_eq(proto_status_from_json(o, &back, err, sizeof err), 0, "%s", err);
    cr_expect_eq(back.ring_health.known, 0);
    json_decref(o);
    cr_expect_eq(proto_ring_state_parse("from_the_future"), PROTO_RING_LOADING);
    cr_expect_str_eq(proto_ring_state_name(PROTO_RING_UP), "up");
}

/* What a planner needs of a node goes out in status and comes back. */
Test(protocol, status_shape_and_host_round_trip)
{
    proto_status s, back;
    char err[256];
    memset(&s, 0, sizeof s);
    s.model.n_layers = s.model.n_layer_bytes = 3;
    s.model.head_dim = 64;
    s.model.shared_classifier = 1;
    s.model.embed_bytes = 1000;
    s.model.out_bytes = 1004;
    for (int l = 0; l < 3; l++)
        s.model.layer_bytes[l] = 500u + (uint64_t)l;
    s.memory.unpaged = 7;
    s.memory.limit = 1 << 20;
    s.memory.host_available = 1ull << 33;
    snprintf(s.host_id, sizeof s.host_id, "boot-1");
    json_t *o = proto_status_json("a", &s);
    cr_assert_not_null(o);
    cr_assert_eq(proto_status_from_json(o, &back, err, sizeof err), 0, "%s", err);
    cr_expect_eq(back.model.n_layer_bytes, 3);
    cr_expect_eq(back.model.layer_bytes[2], 502);
    cr_expect_eq(back.model.head_dim, 64);
    cr_expect_eq(back.model.shared_classifier, 1);
    cr_expect_eq(back.model.embed_bytes, 1000);
    cr_expect_eq(back.model.out_bytes, 1004);
    cr_expect_eq(back.memory.unpaged, 7);
    cr_expect_eq(back.memory.limit, 1 << 20);
    cr_expect_eq(back.memory.host_available, 1ull << 33);
    cr_expect_str_eq(back.host_id, "boot-1");
    /* A shape that is not one is refused by name. */
    json_object_set_new(json_object_get(json_object_get(o, "model"), "shape"), "layer_bytes",
                        json_string("many"));
    cr_expect_eq(proto_status_from_json(o, &back, err, sizeof err), -1);
    cr_expect(strstr(err, "model.shape.layer_bytes"), "%s", err);
    json_decref(o);
    /* An older node says nothing of it. */
    s.model.n_layer_bytes = 0;
    s.host_id[0] = '\0';
    o = proto_status_json("a", &s);
    cr_expect_null(json_object_get(json_object_get(o, "model"), "shape"));
    cr_expect_null(json_object_get(o, "host_id"));
    json_decref(o);
}
