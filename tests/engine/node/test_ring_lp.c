/* test_ring_lp.c: the logprobs records the tail sends with its tokens
 * (RING_F_LOGPROBS on token and tokens frames): round trip, and every
 * malformed record refused with a message. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/node/ring.h"

/* Builds a frame with ring_tokens_init and ring_lp_put into buf; returns
 * its length. */
static size_t build(const ring_hdr *h, const int32_t *ids, const proto_logprobs *lp, int n_lp,
                    unsigned char *buf, size_t cap)
{
    zmq_msg_t msg;
    int32_t *p = ring_tokens_init(&msg, h);
    cr_assert_not_null(p);
    if (h->kind == RING_TOKENS)
        memcpy(p, ids, (size_t)h->n * sizeof *ids);
    for (int i = 0; i < n_lp; i++)
        ring_lp_put(&msg, h, i, lp[i].n_top < 0 ? NULL : &lp[i]);
    size_t len = zmq_msg_size(&msg);
    cr_assert(len <= cap);
    memcpy(buf, zmq_msg_data(&msg), len);
    zmq_msg_close(&msg);
    return len;
}

static unsigned char buf[RING_HDR_BYTES + 4 * 8 + 4 * RING_LP_BYTES];

Test(ring_lp, tokens_frame_round_trip)
{
    ring_hdr h = {
        .kind = RING_TOKENS, .op = 3, .step = 1, .n = 2, .token = -1, .flags = RING_F_LOGPROBS};
    int32_t ids[2] = {5, 9};
    proto_logprobs lp[2] = {
        {.n_top = -1},
        {.n_top = 3, .logprob = -1.25, .top = {9, 4, 12}, .top_lp = {-1.25, -1.5, -1.5}}};
    size_t len = build(&h, ids, lp, 2, buf, sizeof buf);
    cr_assert_eq(len, RING_HDR_BYTES + 2 * 4 + 2 * RING_LP_BYTES);
    ring_frame f;
    char err[256];
    cr_assert_eq(ring_frame_decode(buf, len, &f, err, sizeof err), 0, "%s", err);
    cr_assert_not_null(f.lp);
    cr_expect_eq(f.tokens[1], 9);
    cr_expect_eq(f.lp[0].n_top, -1, "a request that did not ask");
    cr_expect_eq(f.lp[1].n_top, 3);
    cr_expect_eq(f.lp[1].logprob, -1.25);
    cr_expect_eq(f.lp[1].top[2], 12);
    cr_expect_eq(f.lp[1].top_lp[1], -1.5);
    ring_frame_free(&f);

    /* Without the flag: no records, and none may follow. */
    h.flags = 0;
    len = build(&h, ids, NULL, 0, buf, sizeof buf);
    cr_assert_eq(ring_frame_decode(buf, len, &f, err, sizeof err), 0, "%s", err);
    cr_expect_null(f.lp);
    ring_frame_free(&f);
    cr_expect_eq(ring_frame_decode(buf, len + RING_LP_BYTES, &f, err, sizeof err), -1);
    cr_expect(strstr(err, "payload bytes"), "%s", err);
}

Test(ring_lp, token_frame_round_trip)
{
    ring_hdr h = {.kind = RING_TOKEN,
                  .op = 3,
                  .step = 0,
                  .pos = 4,
                  .n = 2,
                  .token = 7,
                  .flags = RING_F_SAMPLE | RING_F_LOGPROBS};
    proto_logprobs lp = {.n_top = 0, .logprob = -0.5};
    size_t len = build(&h, NULL, &lp, 1, buf, sizeof buf);
    cr_assert_eq(len, RING_HDR_BYTES + RING_LP_BYTES);
    ring_frame f;
    char err[256];
    cr_assert_eq(ring_frame_decode(buf, len, &f, err, sizeof err), 0, "%s", err);
    cr_expect_eq(f.h.token, 7);
    cr_expect_eq(f.lp[0].n_top, 0);
    cr_expect_eq(f.lp[0].logprob, -0.5);
    ring_frame_free(&f);
}

/* A frame of one record, its byte `at` (-1: none) set to poke, must be
 * refused naming why. */
static void refused(const proto_logprobs *lp, int at, unsigned char poke, const char *why)
{
    ring_hdr h = {.kind = RING_TOKEN,
                  .op = 3,
                  .step = 0,
                  .pos = 4,
                  .n = 1,
                  .token = 7,
                  .flags = RING_F_SAMPLE | RING_F_LOGPROBS};
    zmq_msg_t msg;
    cr_assert_not_null(ring_tokens_init(&msg, &h));
    ring_lp_put(&msg, &h, 0, lp);
    size_t len = zmq_msg_size(&msg);
    memcpy(buf, zmq_msg_data(&msg), len);
    zmq_msg_close(&msg);
    if (at >= 0)
        buf[RING_HDR_BYTES + at] = poke;
    ring_frame f;
    char err[256];
    cr_expect_eq(ring_frame_decode(buf, len, &f, err, sizeof err), -1, "accepted: %s", why);
    cr_expect(strstr(err, why), "expected '%s' in: %s", why, err);
}

/* A frame of kind h.kind with the logprobs flag and a payload of len
 * bytes: refused for its flags. */
static void flag_refused(ring_hdr h, size_t len)
{
    ring_frame f;
    char err[256];
    h.flags = RING_F_LOGPROBS;
    ring_hdr_encode(&h, buf);
    cr_expect_eq(ring_frame_decode(buf, RING_HDR_BYTES + len, &f, err, sizeof err), -1);
    cr_expect(strstr(err, "flags 8"), "%s", err);
}

Test(ring_lp, malformed_records_are_refused)
{
    proto_logprobs ok = {.n_top = 2, .logprob = -1.0, .top = {1, 2}, .top_lp = {-0.5, -1.0}};
    refused(NULL, -1, 0, "no logprobs for its token");
    refused(&ok, 0, 21, "n_top 21");
    refused(&ok, 4, 1, "reserved 0");
    refused(&ok, 16 + 4 * 2, 1, "other bytes not zero"); /* an unused id */
    proto_logprobs rising = ok;
    rising.top_lp[1] = -0.25;
    refused(&rising, -1, 0, "top_logprobs[1]");
    proto_logprobs positive = ok;
    positive.logprob = 0.5;
    refused(&positive, -1, 0, "logprob 0.5");
    proto_logprobs far = ok;
    far.top[0] = 1 << 24;
    refused(&far, -1, 0, "top_logprobs[0]: token 16777216");

    /* The flag only on token frames that sampled, and on tokens frames. */
    flag_refused((ring_hdr){.kind = RING_TOKEN, .op = 3, .n = 1, .pos = 4, .token = -1},
                 RING_LP_BYTES);
    flag_refused((ring_hdr){.kind = RING_HIDDEN, .op = 3, .n = 1, .dim = 1, .token = -1}, 4);
    flag_refused((ring_hdr){.kind = RING_BATCH, .op = 3, .n = 1, .dim = 1, .token = -1},
                 RING_SEG_BYTES + 4);
}
