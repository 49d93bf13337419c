/* test_ring.c: stage-to-stage frames: the header codec round-trips every
 * field, bad headers and payloads are refused with a message, and frames
 * cross a real PUSH/PULL pair intact (hidden states written in place). */
#include <criterion/criterion.h>
#include <string.h>
#include <zmq.h>

#include "engine/node/ring.h"

Test(ring, header_round_trip)
{
    ring_hdr h = {.kind = RING_HIDDEN,
                  .op = 0x0123456789abcdefull,
                  .step = -1,
                  .pos = 70000,
                  .n = 512,
                  .dim = 768,
                  .token = -1,
                  .flags = RING_F_SAMPLE | RING_F_DECODE,
                  .chunk = 512,
                  .down_ms = 12.625};
    unsigned char buf[RING_HDR_BYTES];
    ring_hdr_encode(&h, buf);
    cr_assert_eq(memcmp(buf, "IFRM", 4), 0);
    cr_assert_eq(buf[4], 1, "version is little-endian 1");
    cr_assert_eq(buf[5], 0);
    ring_hdr back;
    char err[256];
    cr_assert_eq(ring_hdr_decode(buf, sizeof buf, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back.kind, h.kind);
    cr_assert_eq(back.op, h.op);
    cr_assert_eq(back.step, h.step);
    cr_assert_eq(back.pos, h.pos);
    cr_assert_eq(back.n, h.n);
    cr_assert_eq(back.dim, h.dim);
    cr_assert_eq(back.token, h.token);
    cr_assert_eq(back.flags, h.flags);
    cr_assert_eq(back.chunk, h.chunk);
    cr_assert_eq(back.down_ms, h.down_ms);
}

Test(ring, bad_headers_are_refused)
{
    ring_hdr h = {.kind = RING_TOKEN, .op = 1}, back;
    unsigned char buf[RING_HDR_BYTES];
    char err[256];
    ring_hdr_encode(&h, buf);
    cr_assert_eq(ring_hdr_decode(buf, RING_HDR_BYTES - 1, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "shorter"), "%s", err);
    buf[0] = 'X';
    cr_assert_eq(ring_hdr_decode(buf, sizeof buf, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "magic"), "%s", err);
    ring_hdr_encode(&h, buf);
    buf[4] = 2;
    cr_assert_eq(ring_hdr_decode(buf, sizeof buf, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "version 2"), "%s", err);
    ring_hdr_encode(&h, buf);
    buf[6] = RING_KIND_COUNT;
    cr_assert_eq(ring_hdr_decode(buf, sizeof buf, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown kind"), "%s", err);
}

/* A ring of one: the PUSH goes to the node's own PULL over inproc. */
static void open_loop(void **ctx, ring **r)
{
    char err[256];
    *ctx = zmq_ctx_new();
    cr_assert_not_null(*ctx);
    cr_assert_eq(ring_open(r, *ctx, "inproc://ring-test", "inproc://ring-test", 1 << 20, NULL, err,
                           sizeof err),
                 0, "%s", err);
}

/* Waits (bounded) for the next frame. */
static int recv_wait(ring *r, ring_frame *f, char *err, size_t errlen)
{
    zmq_pollitem_t item = {.socket = ring_socket(r), .events = ZMQ_POLLIN};
    cr_assert_eq(zmq_poll(&item, 1, 2000), 1, "no frame within 2 s");
    return ring_recv(r, f, err, errlen);
}

Test(ring, frames_cross_a_socket_pair)
{
    void *ctx;
    ring *r;
    open_loop(&ctx, &r);
    char err[256];

    ring_hdr h = {
        .kind = RING_HIDDEN, .op = 7, .step = 3, .pos = 10, .n = 2, .dim = 3, .token = -1};
    zmq_msg_t msg;
    float *x = ring_hidden_init(&msg, &h);
    cr_assert_not_null(x);
    for (int i = 0; i < 6; i++)
        x[i] = (float)i * 0.5f;
    cr_assert_eq(ring_send_msg(r, &msg, err, sizeof err), 0, "%s", err);

    json_t *o = json_pack("{ss sb}", "req", "g1", "ok", 1);
    ring_hdr c = {.kind = RING_END, .op = 7, .step = -1, .token = -1};
    cr_assert_eq(ring_send(r, &c, o, err, sizeof err), 0, "%s", err);
    json_decref(o);

    ring_frame f;
    cr_assert_eq(recv_wait(r, &f, err, sizeof err), 1, "%s", err);
    cr_assert_eq(f.h.kind, RING_HIDDEN);
    cr_assert_eq(f.h.step, 3);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(f.x[i], (float)i * 0.5f);
    ring_frame_free(&f);

    cr_assert_eq(recv_wait(r, &f, err, sizeof err), 1, "%s", err);
    cr_assert_eq(f.h.kind, RING_END);
    cr_assert_str_eq(json_string_value(json_object_get(f.json, "req")), "g1");
    ring_frame_free(&f);
    cr_assert_eq(ring_recv(r, &f, err, sizeof err), 0, "nothing else queued");

    ring_close(r);
    zmq_ctx_term(ctx);
}

Test(ring, malformed_payloads_are_dropped)
{
    void *ctx;
    ring *r;
    open_loop(&ctx, &r);
    char err[256];
    ring_frame f;

    /* A hidden frame whose payload is one float short of n * dim. */
    ring_hdr h = {.kind = RING_HIDDEN, .op = 1, .n = 2, .dim = 4, .token = -1};
    unsigned char buf[RING_HDR_BYTES + 7 * sizeof(float)];
    ring_hdr_encode(&h, buf);
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    cr_assert_eq(zmq_connect(push, "inproc://ring-test"), 0);
    cr_assert_eq(zmq_send(push, buf, sizeof buf, 0), (int)sizeof buf);
    cr_assert_eq(recv_wait(r, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "n=2 dim=4 needs 32"), "%s", err);

    /* A control frame whose payload is not a JSON object. */
    ring_hdr s = {.kind = RING_SET, .op = 1, .step = -1, .token = -1};
    unsigned char js[RING_HDR_BYTES + 3];
    ring_hdr_encode(&s, js);
    memcpy(js + RING_HDR_BYTES, "[1]", 3);
    cr_assert_eq(zmq_send(push, js, sizeof js, 0), (int)sizeof js);
    cr_assert_eq(recv_wait(r, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "set frame"), "%s", err);

    /* A token frame with a payload. */
    ring_hdr t = {.kind = RING_TOKEN, .op = 1, .n = 1, .token = -1};
    unsigned char tk[RING_HDR_BYTES + 1];
    ring_hdr_encode(&t, tk);
    cr_assert_eq(zmq_send(push, tk, sizeof tk, 0), (int)sizeof tk);
    cr_assert_eq(recv_wait(r, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "token frame"), "%s", err);

    zmq_close(push);
    ring_close(r);
    zmq_ctx_term(ctx);
}

/* An eval step: the head flags the hidden frame, the tail answers with
 * every position's logits ([n][vocab] in dim), never with a token. */
Test(ring, logits_frames)
{
    char err[256];
    ring_frame f;
    unsigned char buf[RING_HDR_BYTES + 6 * sizeof(float)];
    ring_hdr h = {.kind = RING_LOGITS,
                  .op = 7,
                  .step = 3,
                  .pos = 9,
                  .n = 2,
                  .dim = 3,
                  .token = -1,
                  .flags = RING_F_LOGITS,
                  .chunk = 64};
    ring_hdr_encode(&h, buf);
    float row[6] = {0.5f, -1.0f, 2.0f, 3.0f, -0.25f, 1e-8f};
    memcpy(buf + RING_HDR_BYTES, row, sizeof row);
    cr_assert_eq(ring_frame_decode(buf, sizeof buf, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.h.kind, RING_LOGITS);
    cr_assert_eq(f.x[5], 1e-8f);
    ring_frame_free(&f);

    /* A row short, a token, no rows at all: refused. */
    cr_assert_eq(ring_frame_decode(buf, sizeof buf - 4, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "logits frame"), "%s", err);
    h.token = 5;
    ring_hdr_encode(&h, buf);
    cr_assert_eq(ring_frame_decode(buf, sizeof buf, &f, err, sizeof err), -1);
    h.token = -1;
    h.dim = 0;
    ring_hdr_encode(&h, buf);
    cr_assert_eq(ring_frame_decode(buf, RING_HDR_BYTES, &f, err, sizeof err), -1);

    /* An eval step samples nothing and is no decode step. */
    ring_hdr hid = {.kind = RING_HIDDEN,
                    .op = 7,
                    .step = 3,
                    .n = 1,
                    .dim = 6,
                    .token = -1,
                    .flags = RING_F_LOGITS | RING_F_SAMPLE};
    ring_hdr_encode(&hid, buf);
    cr_assert_eq(ring_frame_decode(buf, sizeof buf, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "flags"), "%s", err);
    hid.flags = RING_F_LOGITS;
    ring_hdr_encode(&hid, buf);
    cr_assert_eq(ring_frame_decode(buf, sizeof buf, &f, err, sizeof err), 0, "%s", err);
    ring_frame_free(&f);
}

/* A decode batch: segments naming each row's request, built in place by
 * ring_batch_init, cross a socket pair intact; its tokens answer in the
 * batch's order. */
Test(ring, batch_and_tokens_frames)
{
    void *ctx;
    ring *r;
    open_loop(&ctx, &r);
    char err[256];
    ring_seg segs[3] = {{.op = 11, .step = 0, .pos = 5},
                        {.op = 1ull << 40, .step = 9, .pos = 1 << 20},
                        {.op = 13, .step = 2, .pos = 0}};
    ring_hdr h = {
        .kind = RING_BATCH, .op = 99, .step = 4, .n = 3, .dim = 2, .token = -1, .chunk = 512};
    zmq_msg_t msg;
    float *x = ring_batch_init(&msg, &h, segs);
    cr_assert_not_null(x);
    for (int i = 0; i < 6; i++)
        x[i] = (float)i - 2.5f;
    cr_assert_eq(ring_send_msg(r, &msg, err, sizeof err), 0, "%s", err);
    ring_frame f;
    cr_assert_eq(recv_wait(r, &f, err, sizeof err), 1, "%s", err);
    cr_assert_eq(f.h.kind, RING_BATCH);
    cr_assert_eq(f.h.n, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(f.segs[i].op, segs[i].op);
        cr_assert_eq(f.segs[i].step, segs[i].step);
        cr_assert_eq(f.segs[i].pos, segs[i].pos);
    }
    for (int i = 0; i < 6; i++)
        cr_assert_eq(f.x[i], (float)i - 2.5f);
    ring_frame_free(&f);

    ring_hdr t = {.kind = RING_TOKENS, .op = 99, .step = 4, .n = 3, .token = -1};
    int32_t *ids = ring_tokens_init(&msg, &t);
    cr_assert_not_null(ids);
    ids[0] = 7;
    ids[1] = 0;
    ids[2] = 16777215;
    cr_assert_eq(ring_send_msg(r, &msg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(recv_wait(r, &f, err, sizeof err), 1, "%s", err);
    cr_assert_eq(f.h.kind, RING_TOKENS);
    cr_assert_eq(f.tokens[0], 7);
    cr_assert_eq(f.tokens[2], 16777215);
    ring_frame_free(&f);
    ring_close(r);
    zmq_ctx_term(ctx);
}

/* What a stage must never act on: a batch's counts, segments and tokens
 * out of range each get a message naming what was wrong. */
Test(ring, bad_batches_are_refused)
{
    char err[256];
    ring_frame f;
    enum { N = 2, DIM = 2 };
    unsigned char buf[RING_HDR_BYTES + N * RING_SEG_BYTES + N * DIM * sizeof(float)];
    ring_seg segs[N] = {{.op = 1, .step = 0, .pos = 3}, {.op = 2, .step = 1, .pos = 4}};
    ring_hdr h = {.kind = RING_BATCH, .op = 5, .step = 0, .n = N, .dim = DIM, .token = -1};
    zmq_msg_t msg;
    cr_assert_not_null(ring_batch_init(&msg, &h, segs));
    memset(buf, 0, sizeof buf);
    memcpy(buf, zmq_msg_data(&msg), RING_HDR_BYTES + N * RING_SEG_BYTES);
    zmq_msg_close(&msg);
    cr_assert_eq(ring_frame_decode(buf, sizeof buf, &f, err, sizeof err), 0, "%s", err);
    ring_frame_free(&f);

    /* a row short */
    cr_assert_eq(ring_frame_decode(buf, sizeof buf - 4, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "batch frame of"), "%s", err);
    /* a segment of operation 0, then one with a reserved byte set */
    unsigned char bad[sizeof buf];
    memcpy(bad, buf, sizeof buf);
    memset(bad + RING_HDR_BYTES, 0, 8);
    cr_assert_eq(ring_frame_decode(bad, sizeof bad, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "segment 0"), "%s", err);
    memcpy(bad, buf, sizeof buf);
    bad[RING_HDR_BYTES + RING_SEG_BYTES + 20] = 1;
    cr_assert_eq(ring_frame_decode(bad, sizeof bad, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "segment 1"), "%s", err);
    /* flags, a position, too many requests: a batch has none of those */
    ring_hdr bh = h;
    bh.flags = RING_F_SAMPLE;
    ring_hdr_encode(&bh, bad);
    cr_assert_eq(ring_frame_decode(bad, sizeof bad, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "no flags"), "%s", err);
    bh = h;
    bh.n = RING_BATCH_MAX + 1;
    ring_hdr_encode(&bh, bad);
    cr_assert_eq(ring_frame_decode(bad, sizeof bad, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "n 1..256"), "%s", err);

    /* tokens: one short, and one out of range */
    unsigned char tk[RING_HDR_BYTES + 2 * sizeof(int32_t)];
    ring_hdr t = {.kind = RING_TOKENS, .op = 5, .step = 0, .n = 2, .token = -1};
    ring_hdr_encode(&t, tk);
    int32_t ids[2] = {3, -1};
    memcpy(tk + RING_HDR_BYTES, ids, sizeof ids);
    cr_assert_eq(ring_frame_decode(tk, sizeof tk - 4, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "tokens frame of"), "%s", err);
    cr_assert_eq(ring_frame_decode(tk, sizeof tk, &f, err, sizeof err), -1);
    cr_assert(strstr(err, "token 1 is -1"), "%s", err);
}
