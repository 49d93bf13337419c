/* test_proto_logprobs.c: a generate's logprobs field, checked by its row,
 * and token frames carrying logprobs, both ways. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/protocol.h"

static int decode(const char *text, proto_request *r, proto_error *e)
{
    return proto_request_decode(text, strlen(text), r, e);
}

Test(proto_logprobs, generate_field)
{
    proto_request r;
    proto_error e;
    cr_assert_eq(
        decode("{\"v\":1,\"id\":\"g\",\"op\":\"generate\",\"tokens\":[1],\"logprobs\":5}", &r, &e),
        0, "%s", e.message);
    cr_expect(r.generate.has_logprobs);
    cr_expect_eq(r.generate.logprobs, 5);
    proto_request_free(&r);
    cr_assert_eq(decode("{\"v\":1,\"id\":\"g\",\"op\":\"generate\",\"tokens\":[1]}", &r, &e), 0);
    cr_expect_not(r.generate.has_logprobs, "absent: none");
    proto_request_free(&r);
    cr_expect_eq(
        decode("{\"v\":1,\"id\":\"g\",\"op\":\"generate\",\"tokens\":[1],\"logprobs\":21}", &r, &e),
        -1);
    cr_expect_eq(e.code, PROTO_E_BAD_VALUE);
    cr_expect_str_eq(e.field, "logprobs");
    cr_expect_eq(
        decode("{\"v\":1,\"id\":\"g\",\"op\":\"generate\",\"tokens\":[1],\"logprobs\":true}", &r,
               &e),
        -1);
    cr_expect_eq(e.code, PROTO_E_BAD_TYPE);
    cr_expect_eq(
        decode("{\"v\":1,\"id\":\"e\",\"op\":\"eval\",\"tokens\":[1],\"logprobs\":1}", &r, &e), -1,
        "an eval reports its own");
    cr_expect_eq(e.code, PROTO_E_UNKNOWN_FIELD);
}

Test(proto_logprobs, token_frame_round_trip)
{
    proto_logprobs lp = {.n_top = 2,
                         .logprob = -0.1234567890123,
                         .top = {42, 7},
                         .top_lp = {-0.1234567890123, -2.5}};
    char *text = proto_reply_token("g", 42, " x", &lp);
    cr_assert_not_null(text);
    proto_reply r;
    char err[256];
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.token, 42);
    cr_expect_str_eq(r.text, " x");
    cr_expect_eq(r.lp.n_top, 2);
    cr_expect_eq(r.lp.logprob, lp.logprob, "every digit: %s", text);
    cr_expect_eq(r.lp.top[1], 7);
    cr_expect_eq(r.lp.top_lp[1], -2.5);
    cr_expect_eq(proto_logprobs_check(&r.lp, 2, 100, err, sizeof err), 0, "%s", err);
    cr_expect_eq(proto_logprobs_check(&r.lp, 3, 100, err, sizeof err), -1, "fewer than asked");
    cr_expect_eq(proto_logprobs_check(&r.lp, 2, 40, err, sizeof err), -1, "42 is past 40");
    cr_expect(strstr(err, "top_logprobs[0]"), "%s", err);
    proto_reply_free(&r);
    free(text);

    /* Without: the frame is as before, and decodes to none. */
    text = proto_reply_token("g", 42, " x", NULL);
    cr_expect_null(strstr(text, "logprob"));
    cr_assert_eq(proto_reply_decode(text, strlen(text), &r, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.lp.n_top, -1);
    proto_reply_free(&r);
    free(text);

    const char *bad = "{\"v\":1,\"id\":\"g\",\"done\":false,\"token\":1,\"text\":\"\","
                      "\"logprob\":-1,\"top_logprobs\":[{\"token\":-1,\"logprob\":0}]}";
    cr_expect_eq(proto_reply_decode(bad, strlen(bad), &r, err, sizeof err), -1);
    cr_expect(strstr(err, "top_logprobs[0]"), "%s", err);
}
