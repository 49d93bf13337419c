/* test_sse.c: the OpenAI stream as the stress runner reads it, against
 * real captures (llama-server's chat stream with its `timings`, inferd's
 * completion stream), fed in pieces of every size as a socket would give
 * them; and the kind of a failed request, from the engines' real error
 * bodies. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/stress/stress.h"

#define FIX "tests/fixtures/engines/"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Feeds the file in pieces of `piece` bytes; returns the content chunks
 * the feeds reported, which must add up to what the parser counted. */
static int64_t feed_file(stress_sse *s, const char *path, size_t piece)
{
    char *text = slurp(path);
    size_t len = strlen(text);
    int64_t reported = 0;
    stress_sse_init(s);
    for (size_t at = 0; at < len; at += piece)
        reported += stress_sse_feed(s, text + at, len - at < piece ? len - at : piece);
    free(text);
    cr_assert_eq(reported, s->chunks);
    return reported;
}

ParameterizedTestParameters(sse, llamacpp_chat_stream)
{
    static size_t pieces[] = {1, 7, 100, 4096, 1 << 20};
    return cr_make_param_array(size_t, pieces, sizeof pieces / sizeof pieces[0]);
}

/* The capture's 24 tokens each came as a chunk; its last chunk carries
 * usage and llama.cpp's timings. */
ParameterizedTest(size_t *piece, sse, llamacpp_chat_stream)
{
    stress_sse *s = malloc(sizeof *s);
    cr_assert_eq(feed_file(s, FIX "llama.cpp/chat-stream.sse", *piece), 24);
    cr_expect(s->done);
    cr_expect(s->finished);
    cr_expect_not(s->error);
    cr_expect_eq(s->prompt_tokens, 46);
    cr_expect_eq(s->completion_tokens, 24);
    cr_expect_float_eq(s->prompt_tps, 128.41124471587727, 1e-9);
    cr_expect_float_eq(s->decode_tps, 215.83898411784807, 1e-9);
    cr_expect_float_eq(s->prompt_ms, 194.687, 1e-9);
    free(s);
}

ParameterizedTestParameters(sse, inferd_completion_stream)
{
    static size_t pieces[] = {1, 13, 65536};
    return cr_make_param_array(size_t, pieces, sizeof pieces / sizeof pieces[0]);
}

/* inferd's own stream: a text chunk per token, a finish, then usage on a
 * chunk without choices; no timings, so the rates stay unknown. */
ParameterizedTest(size_t *piece, sse, inferd_completion_stream)
{
    stress_sse *s = malloc(sizeof *s);
    cr_assert_eq(feed_file(s, FIX "inferd/completion-stream.sse", *piece), 12);
    cr_expect(s->done);
    cr_expect(s->finished);
    cr_expect_not(s->error);
    cr_expect_gt(s->prompt_tokens, 0);
    cr_expect_eq(s->completion_tokens, 12);
    cr_expect_lt(s->prompt_tps, 0);
    cr_expect_lt(s->decode_tps, 0);
    free(s);
}

/* A stream cut before its end: the chunks so far, no [DONE], no finish. */
Test(sse, cut_stream_is_neither_done_nor_finished)
{
    char *text = slurp(FIX "llama.cpp/chat-stream.sse");
    stress_sse *s = malloc(sizeof *s);
    stress_sse_init(s);
    size_t half = strlen(text) / 2;
    int got = stress_sse_feed(s, text, half);
    cr_expect_gt(got, 0);
    cr_expect_lt(got, 24);
    cr_expect_not(s->done);
    cr_expect_not(s->finished);
    cr_expect_eq(s->completion_tokens, -1);
    free(text);
    free(s);
}

/* CRLF line ends, comments, other fields and empty deltas (a role chunk)
 * are not tokens; an `error:` line (llama.cpp) and a data error (inferd)
 * are errors with their code. */
Test(sse, framing_and_errors)
{
    stress_sse *s = malloc(sizeof *s);
    stress_sse_init(s);
    const char *in =
        ": keep-alive\r\nevent: x\r\n"
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n"
        "data:{\"choices\":[{\"text\":\"a\"}]}\r\n\r\n";
    cr_expect_eq(stress_sse_feed(s, in, strlen(in)), 1);
    const char *err = "error: {\"code\":500,\"message\":\"boom\",\"type\":\"server_error\"}\n";
    stress_sse_feed(s, err, strlen(err));
    cr_expect(s->error);
    cr_expect_str_eq(s->code, "server_error");
    cr_expect_str_eq(s->message, "boom");
    stress_sse_init(s);
    const char *derr =
        "data: {\"error\":{\"message\":\"no room\",\"type\":\"invalid_request_error\","
        "\"param\":null,\"code\":\"kv_oom\"}}\n\n";
    stress_sse_feed(s, derr, strlen(derr));
    cr_expect(s->error);
    cr_expect_str_eq(s->code, "kv_oom");
    free(s);
}

/* A line longer than the buffer is dropped, and the next one still read. */
Test(sse, overlong_line_is_skipped)
{
    stress_sse *s = malloc(sizeof *s);
    stress_sse_init(s);
    size_t n = STRESS_SSE_LINE_MAX + 10;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    memcpy(big, "data: ", 6);
    big[n - 1] = '\n';
    stress_sse_feed(s, big, n);
    const char *next = "data: [DONE]\n";
    stress_sse_feed(s, next, strlen(next));
    cr_expect(s->done);
    free(big);
    free(s);
}

/* ---- failure kinds ---- */

static void classify(long status, const char *body, const char *transport, char *code,
                     char *message)
{
    stress_http_classify(status, body, transport, code, 64, message, 512);
}

/* llama.cpp's real 500 (the body after the headers of the capture). */
Test(classify, llamacpp_http_error)
{
    char *raw = slurp(FIX "llama.cpp/error-bad-json.http");
    const char *body = strstr(raw, "\r\n\r\n");
    cr_assert_not_null(body);
    char code[64], msg[512];
    classify(500, body + 4, "", code, msg);
    cr_expect_str_eq(code, "http_status");
    cr_expect(strncmp(msg, "HTTP 500: [json.exception.parse_error.101]", 42) == 0, "%s", msg);
    free(raw);
}

/* inferd's real answer to a prompt beyond its context (captured from
 * inferd serve --http). */
Test(classify, inferd_context_overflow)
{
    char *body = slurp(FIX "inferd/error-ctx-limit.json");
    char code[64], msg[512];
    classify(400, body, "", code, msg);
    cr_expect_str_eq(code, "context_overflow");
    cr_expect(strncmp(msg, "HTTP 400: ", 10) == 0, "%s", msg);
    free(body);
}

/* The other engines' shapes, as their sources write them: llama.cpp's
 * exceed_context_size_error (and its older message), vLLM's message. */
Test(classify, other_engines_context_overflow)
{
    static const char *const bodies[] = {
        "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, "
        "try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":9000,"
        "\"n_ctx\":4096}}",
        "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, "
        "try increasing the context size or enable context shift\",\"type\":"
        "\"invalid_request_error\"}}",
        "{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens. "
        "However, you requested 5000 tokens.\",\"type\":\"BadRequestError\",\"param\":null,"
        "\"code\":400}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        char code[64], msg[512];
        classify(400, bodies[i], "", code, msg);
        cr_expect_str_eq(code, "context_overflow", "body %zu", i);
    }
}

/* A 503 with a body that is not JSON still says its status and text. */
Test(classify, status_without_json)
{
    char code[64], msg[512];
    classify(503, "Service Unavailable", "", code, msg);
    cr_expect_str_eq(code, "http_status");
    cr_expect_str_eq(msg, "HTTP 503: Service Unavailable");
    classify(429, "", "", code, msg);
    cr_expect_str_eq(msg, "HTTP 429: no error body");
}

/* An error event on a 200 stream that is not about the context. */
Test(classify, stream_error)
{
    char code[64], msg[512];
    classify(200, "{\"error\":{\"code\":\"stage_timeout\",\"message\":\"stage 'b' is silent\"}}",
             "", code, msg);
    cr_expect_str_eq(code, "error");
    cr_expect_str_eq(msg, "stage 'b' is silent");
}

/* A 200 stream that stopped before [DONE]: a disconnect, with the
 * transport's reason when there is one. */
Test(classify, disconnect)
{
    char code[64], msg[512];
    classify(200, NULL, "transfer closed with outstanding read data remaining", code, msg);
    cr_expect_str_eq(code, "disconnect");
    cr_expect(strstr(msg, "outstanding read data") != NULL, "%s", msg);
    classify(0, NULL, "Failed to connect to 127.0.0.1 port 9: Connection refused", code, msg);
    cr_expect_str_eq(code, "disconnect");
}
