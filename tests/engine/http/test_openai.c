/* test_openai.c: OpenAI requests into generate requests, the error table,
 * and the JSON of responses and stream chunks. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/http/openai.h"

static const oai_model plain = {{"stories260K"}, 1, CHAT_PLAIN, 4};

static int parse(oai_kind kind, const char *body, const oai_model *m, oai_req *r, oai_error *e)
{
    return oai_parse(kind, body, strlen(body), m, r, e);
}

static const char *gen_str(const oai_req *r, const char *key)
{
    return json_string_value(json_object_get(r->generate, key));
}

static double gen_num(const oai_req *r, const char *key)
{
    return json_number_value(json_object_get(r->generate, key));
}

Test(openai, completion_defaults_are_openais)
{
    oai_req r;
    oai_error e;
    cr_assert_eq(
        parse(OAI_COMPLETION, "{\"model\":\"stories260K\",\"prompt\":\"Once\"}", &plain, &r, &e), 0,
        "%s", e.message);
    cr_expect_str_eq(gen_str(&r, "prompt"), "Once");
    cr_expect_eq(r.max_tokens, OAI_COMPLETION_MAX_TOKENS);
    cr_expect_eq(gen_num(&r, "max_tokens"), OAI_COMPLETION_MAX_TOKENS);
    cr_expect_eq(gen_num(&r, "temperature"), 1.0);
    cr_expect_eq(gen_num(&r, "top_p"), 1.0, "OpenAI's top_p default, not the node's 0.9");
    cr_expect_str_eq(gen_str(&r, "source"), "http");
    cr_expect_null(json_object_get(r.generate, "seed"));
    cr_expect_eq(r.stream, 0);
    oai_req_free(&r);
}

Test(openai, llama_cpp_and_openai_sampling_reach_the_node)
{
    oai_req r;
    oai_error e;
    cr_assert_eq(parse(OAI_CHAT,
                       "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"x\"}],\"top_k\":40,\"min_p\":0.05,\"repeat_penalty\":1.1,"
                       "\"presence_penalty\":0.5,\"frequency_penalty\":-0.5,\"n\":3,"
                       "\"logit_bias\":{\"7\":-100,\"12\":2.5}}",
                       &plain, &r, &e),
                 0, "%s", e.message);
    cr_expect_eq(gen_num(&r, "top_k"), 40);
    cr_expect_float_eq(gen_num(&r, "min_p"), 0.05, 1e-9);
    cr_expect_float_eq(gen_num(&r, "repeat_penalty"), 1.1, 1e-9);
    cr_expect_eq(gen_num(&r, "presence_penalty"), 0.5);
    cr_expect_eq(gen_num(&r, "frequency_penalty"), -0.5);
    json_t *bias = json_object_get(r.generate, "logit_bias");
    cr_expect_eq(json_number_value(json_object_get(bias, "7")), -100.0);
    cr_expect_eq(json_number_value(json_object_get(bias, "12")), 2.5);
    cr_expect_eq(r.n, 3);
    oai_req_free(&r);
    cr_assert_eq(
        parse(OAI_COMPLETION, "{\"model\":\"stories260K\",\"prompt\":\"x\"}", &plain, &r, &e), 0,
        "%s", e.message);
    cr_expect_eq(gen_num(&r, "top_k"), 0, "every one off by default");
    cr_expect_eq(gen_num(&r, "min_p"), 0);
    cr_expect_eq(gen_num(&r, "repeat_penalty"), 1);
    cr_expect_eq(r.n, 1);
    oai_req_free(&r);
}

Test(openai, sampling_fields_and_nulls)
{
    oai_req r;
    oai_error e;
    cr_assert_eq(parse(OAI_COMPLETION,
                       "{\"model\":\"stories260K\",\"prompt\":[\"x\"],\"max_tokens\":7,"
                       "\"temperature\":0,\"top_p\":0.5,\"seed\":42,\"stop\":null,\"user\":\"u\","
                       "\"n\":1,\"logprobs\":null,\"echo\":false,\"presence_penalty\":0,"
                       "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                       &plain, &r, &e),
                 0, "%s", e.message);
    cr_expect_str_eq(gen_str(&r, "prompt"), "x");
    cr_expect_eq(r.max_tokens, 7);
    cr_expect_eq(gen_num(&r, "temperature"), 0);
    cr_expect_eq(gen_num(&r, "top_p"), 0.5);
    cr_expect_eq(json_integer_value(json_object_get(r.generate, "seed")), 42);
    cr_expect(r.stream && r.include_usage);
    cr_expect_eq(r.stop.n, 0);
    oai_req_free(&r);
}

Test(openai, token_prompts_become_tokens)
{
    oai_req r;
    oai_error e;
    cr_assert_eq(parse(OAI_COMPLETION, "{\"model\":\"stories260K\",\"prompt\":[[1,403,471]]}",
                       &plain, &r, &e),
                 0, "%s", e.message);
    json_t *t = json_object_get(r.generate, "tokens");
    cr_assert_eq(json_array_size(t), 3);
    cr_expect_eq(json_integer_value(json_array_get(t, 1)), 403);
    cr_expect_null(json_object_get(r.generate, "prompt"));
    oai_req_free(&r);
}

Test(openai, stop_sequences)
{
    oai_req r;
    oai_error e;
    cr_assert_eq(parse(OAI_COMPLETION,
                       "{\"model\":\"stories260K\",\"prompt\":\"x\",\"stop\":[\"\\n\",\"END\"]}",
                       &plain, &r, &e),
                 0, "%s", e.message);
    cr_assert_eq(r.stop.n, 2);
    cr_expect_str_eq(r.stop.s[0], "\n");
    cr_expect_str_eq(r.stop.s[1], "END");
    oai_req_free(&r);
    cr_assert_eq(parse(OAI_CHAT,
                       "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"x\"}],\"stop\":\"User:\"}",
                       &plain, &r, &e),
                 0, "%s", e.message);
    cr_expect_eq(r.stop.n, 1);
    oai_req_free(&r);
}

Test(openai, chat_renders_with_the_models_format)
{
    oai_model chatml = {{"qwen"}, 1, CHAT_CHATML, 4};
    oai_req r;
    oai_error e;
    cr_assert_eq(parse(OAI_CHAT,
                       "{\"model\":\"qwen\",\"messages\":[{\"role\":\"developer\",\"content\":"
                       "\"Be brief\"},{\"role\":\"user\",\"name\":\"ann\",\"content\":[{\"type\":"
                       "\"text\",\"text\":\"Hi \"},{\"type\":\"text\",\"text\":\"there\"}]}],"
                       "\"max_completion_tokens\":5}",
                       &chatml, &r, &e),
                 0, "%s", e.message);
    cr_expect_str_eq(gen_str(&r, "prompt"),
                     "<|im_start|>system\nBe brief<|im_end|>\n<|im_start|>user\nHi "
                     "there<|im_end|>\n<|im_start|>assistant\n");
    cr_expect(json_is_true(json_object_get(r.generate, "special")),
              "the format's markers are tokenized as the model's control tokens");
    cr_expect_eq(r.max_tokens, 5);
    oai_req_free(&r);
    cr_assert_eq(parse(OAI_CHAT,
                       "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"Once upon a time\"}]}",
                       &plain, &r, &e),
                 0, "%s", e.message);
    cr_expect_str_eq(gen_str(&r, "prompt"), "User: Once upon a time\nAssistant:");
    cr_expect_null(json_object_get(r.generate, "special"), "the plain format has no markers");
    cr_expect_eq(r.max_tokens, PROTO_DEFAULT_MAX_TOKENS);
    oai_req_free(&r);
}

typedef struct bad {
    oai_kind kind;
    const char *body;
    int status;
    const char *code, *param;
} bad;

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
#define M "\"model\":\"stories260K\","

static const bad bads[] = {
    {OAI_CHAT, "", 400, "bad_json", ""},
    {OAI_CHAT, "{\"model\":", 400, "bad_json", ""},
    {OAI_CHAT, "{" M M MSG "}", 400, "bad_json", ""},
    {OAI_CHAT, "[]", 400, "not_object", ""},
    {OAI_CHAT, "{" MSG "}", 400, "missing_field", "model"},
    {OAI_CHAT, "{\"model\":null," MSG "}", 400, "missing_field", "model"},
    {OAI_CHAT, "{\"model\":\"gpt-4\"," MSG "}", 404, "model_not_found", "model"},
    {OAI_CHAT, "{\"model\":7," MSG "}", 400, "bad_type", "model"},
    {OAI_CHAT, "{" M "\"prompt\":\"x\"}", 400, "unknown_field", ""},
    {OAI_COMPLETION, "{" M MSG "}", 400, "unknown_field", ""},
    {OAI_CHAT, "{" M "\"messages\":[]}", 400, "bad_value", "messages"},
    {OAI_CHAT, "{" M "\"messages\":{}}", 400, "bad_type", "messages"},
    {OAI_CHAT, "{" M "\"messages\":[\"x\"]}", 400, "bad_type", "messages"},
    {OAI_CHAT, "{" M "\"messages\":[{\"content\":\"x\"}]}", 400, "bad_value", "messages"},
    {OAI_CHAT, "{" M "\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", 400, "bad_value",
     "messages"},
    {OAI_CHAT, "{" M "\"messages\":[{\"role\":\"user\"}]}", 400, "bad_value", "messages"},
    {OAI_CHAT, "{" M "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
     400, "unsupported", "messages"},
    {OAI_CHAT, "{" M "\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}", 400,
     "unsupported", "messages"},
    {OAI_CHAT, "{" M MSG ",\"max_tokens\":0}", 400, "bad_value", "max_tokens"},
    {OAI_CHAT, "{" M MSG ",\"max_tokens\":1.5}", 400, "bad_type", "max_tokens"},
    {OAI_CHAT, "{" M MSG ",\"max_tokens\":2,\"max_completion_tokens\":2}", 400, "conflict",
     "max_completion_tokens"},
    {OAI_CHAT, "{" M MSG ",\"temperature\":2.5}", 400, "bad_value", "temperature"},
    {OAI_CHAT, "{" M MSG ",\"temperature\":\"hot\"}", 400, "bad_type", "temperature"},
    {OAI_CHAT, "{" M MSG ",\"top_p\":0}", 400, "bad_value", "top_p"},
    {OAI_CHAT, "{" M MSG ",\"seed\":-1}", 400, "bad_value", "seed"},
    {OAI_CHAT, "{" M MSG ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 400, "bad_value", "stop"},
    {OAI_CHAT, "{" M MSG ",\"stop\":\"\"}", 400, "bad_value", "stop"},
    {OAI_CHAT, "{" M MSG ",\"stop\":[1]}", 400, "bad_type", "stop"},
    {OAI_CHAT, "{" M MSG ",\"stream\":\"yes\"}", 400, "bad_type", "stream"},
    {OAI_CHAT, "{" M MSG ",\"stream_options\":{\"include_usage\":true}}", 400, "bad_value",
     "stream_options"},
    {OAI_CHAT, "{" M MSG ",\"stream\":true,\"stream_options\":{\"x\":1}}", 400, "unknown_field",
     "stream_options"},
    {OAI_CHAT, "{" M MSG ",\"n\":5}", 400, "bad_value", "n"}, /* past max_seqs 4 */
    {OAI_CHAT, "{" M MSG ",\"n\":0}", 400, "bad_value", "n"},
    {OAI_CHAT, "{" M MSG ",\"frequency_penalty\":2.5}", 400, "bad_value", "frequency_penalty"},
    {OAI_CHAT, "{" M MSG ",\"presence_penalty\":\"x\"}", 400, "bad_type", "presence_penalty"},
    {OAI_CHAT, "{" M MSG ",\"top_k\":-1}", 400, "bad_value", "top_k"},
    {OAI_CHAT, "{" M MSG ",\"top_k\":1.5}", 400, "bad_type", "top_k"},
    {OAI_CHAT, "{" M MSG ",\"min_p\":1.5}", 400, "bad_value", "min_p"},
    {OAI_CHAT, "{" M MSG ",\"repeat_penalty\":-1}", 400, "bad_value", "repeat_penalty"},
    {OAI_CHAT, "{" M MSG ",\"logit_bias\":[]}", 400, "bad_type", "logit_bias"},
    {OAI_CHAT, "{" M MSG ",\"logit_bias\":{\"x\":1}}", 400, "bad_value", "logit_bias"},
    {OAI_CHAT, "{" M MSG ",\"logit_bias\":{\"5\":101}}", 400, "bad_value", "logit_bias"},
    {OAI_CHAT, "{" M MSG ",\"top_logprobs\":2}", 400, "bad_value", "top_logprobs"},
    {OAI_CHAT, "{" M MSG ",\"logprobs\":false,\"top_logprobs\":2}", 400, "bad_value",
     "top_logprobs"},
    {OAI_CHAT, "{" M MSG ",\"logprobs\":true,\"top_logprobs\":21}", 400, "bad_value",
     "top_logprobs"},
    {OAI_CHAT, "{" M MSG ",\"logprobs\":2}", 400, "bad_type", "logprobs"},
    {OAI_COMPLETION, "{" M "\"prompt\":\"x\",\"logprobs\":true}", 400, "bad_type", "logprobs"},
    {OAI_COMPLETION, "{" M "\"prompt\":\"x\",\"logprobs\":-1}", 400, "bad_value", "logprobs"},
    {OAI_COMPLETION, "{" M "\"prompt\":\"x\",\"logprobs\":21}", 400, "bad_value", "logprobs"},
    {OAI_CHAT, "{" M MSG ",\"tools\":[{\"type\":\"function\"}]}", 400, "unsupported", "tools"},
    {OAI_CHAT, "{" M MSG ",\"response_format\":{\"type\":\"json_object\"}}", 400, "unsupported",
     "response_format"},
    {OAI_COMPLETION, "{" M "\"prompt\":[\"a\",\"b\"]}", 400, "unsupported", "prompt"},
    {OAI_COMPLETION, "{" M "\"prompt\":[]}", 400, "bad_value", "prompt"},
    {OAI_COMPLETION, "{" M "\"prompt\":[1,-2]}", 400, "bad_value", "prompt"},
    {OAI_COMPLETION, "{" M "\"prompt\":5}", 400, "bad_type", "prompt"},
    {OAI_COMPLETION, "{" M "\"prompt\":\"x\",\"echo\":true}", 400, "unsupported", "echo"},
    {OAI_COMPLETION, "{" M "\"prompt\":\"x\",\"best_of\":3}", 400, "unsupported", "best_of"},
    {OAI_COMPLETION, "{\"model\":\"stories260K\"}", 400, "missing_field", "prompt"},
};

Test(openai, bad_requests_table)
{
    for (size_t i = 0; i < sizeof bads / sizeof *bads; i++) {
        oai_req r;
        oai_error e;
        cr_expect_eq(parse(bads[i].kind, bads[i].body, &plain, &r, &e), -1, "case %zu accepted: %s",
                     i, bads[i].body);
        cr_expect_eq(e.status, bads[i].status, "case %zu (%s): status %d", i, bads[i].body,
                     e.status);
        cr_expect_str_eq(e.code, bads[i].code, "case %zu (%s): %s", i, bads[i].body, e.message);
        cr_expect_str_eq(e.param, bads[i].param, "case %zu (%s): param", i, bads[i].body);
        cr_expect_neq(e.message[0], '\0', "case %zu: no message", i);
        cr_expect_null(r.generate, "case %zu: left something to free", i);
    }
}

Test(openai, node_errors_map_to_http)
{
    static const struct {
        const char *code;
        int status;
    } map[] = {{"kv_oom", 503},         {"ctx_limit", 400},      {"bad_token", 400},
               {"busy", 429},           {"too_large", 413},      {"stage_timeout", 503},
               {"model_mismatch", 503}, {"shutdown", 503},       {"internal", 500},
               {"stalled", 503},        {"from_the_future", 500}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        oai_error e;
        oai_from_node(map[i].code, "the engine's words", &e);
        cr_expect_eq(e.status, map[i].status, "%s", map[i].code);
        cr_expect_str_eq(e.code, map[i].code);
        cr_expect_str_eq(e.message, "the engine's words");
    }
}

Test(openai, error_body_is_openais_shape)
{
    oai_error e;
    oai_fail(&e, 429, "busy", NULL, "16 requests queued");
    char *text = oai_error_json(&e);
    json_t *o = json_loads(text, 0, NULL);
    cr_assert_not_null(o, "%s", text);
    json_t *err = json_object_get(o, "error");
    cr_expect_str_eq(json_string_value(json_object_get(err, "message")), "16 requests queued");
    cr_expect_str_eq(json_string_value(json_object_get(err, "type")), "rate_limit_error");
    cr_expect_str_eq(json_string_value(json_object_get(err, "code")), "busy");
    cr_expect(json_is_null(json_object_get(err, "param")));
    json_decref(o);
    free(text);
}

static json_t *sse_json(const sbuf *b, size_t *at)
{
    const char *p = b->data + *at;
    cr_assert_eq(strncmp(p, "data: ", 6), 0, "not an event: %s", p);
    const char *end = strstr(p, "\n\n");
    cr_assert_not_null(end);
    *at = (size_t)(end + 2 - b->data);
    json_t *o = json_loadb(p + 6, (size_t)(end - p - 6), 0, NULL);
    cr_assert_not_null(o, "%.*s", (int)(end - p), p);
    return o;
}

Test(openai, chat_stream_chunks)
{
    oai_reply r = {OAI_CHAT, "chatcmpl-1", "m\"odel", 1700000000};
    sbuf b = {0};
    oai_chunk_role(&b, &r, 0);
    oai_chunk(&b, &r, 0, "Hi \"there\"\n", 11, NULL, NULL);
    oai_chunk(&b, &r, 0, NULL, 0, NULL, "length");
    oai_chunk_usage(&b, &r, 5, 2);
    oai_chunk_done(&b);
    size_t at = 0;
    json_t *o = sse_json(&b, &at);
    cr_expect_str_eq(json_string_value(json_object_get(o, "object")), "chat.completion.chunk");
    cr_expect_str_eq(json_string_value(json_object_get(o, "model")), "m\"odel");
    json_t *c = json_array_get(json_object_get(o, "choices"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(c, "delta"), "role")),
                     "assistant");
    json_decref(o);
    o = sse_json(&b, &at);
    c = json_array_get(json_object_get(o, "choices"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(c, "delta"), "content")),
                     "Hi \"there\"\n");
    cr_expect(json_is_null(json_object_get(c, "finish_reason")));
    json_decref(o);
    o = sse_json(&b, &at);
    c = json_array_get(json_object_get(o, "choices"), 0);
    cr_expect_eq(json_object_size(json_object_get(c, "delta")), 0);
    cr_expect_str_eq(json_string_value(json_object_get(c, "finish_reason")), "length");
    json_decref(o);
    o = sse_json(&b, &at);
    cr_expect_eq(json_array_size(json_object_get(o, "choices")), 0);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "usage"), "total_tokens")),
                 7);
    json_decref(o);
    cr_expect_str_eq(b.data + at, "data: [DONE]\n\n");
    sbuf_free(&b);
}

Test(openai, whole_responses)
{
    oai_reply r = {OAI_COMPLETION, "cmpl-2", "stories260K", 1};
    char *text = oai_response(&r, &(oai_choice){", there was", 11, "stop", NULL}, 1, 5, 3);
    json_t *o = json_loads(text, 0, NULL);
    cr_assert_not_null(o, "%s", text);
    cr_expect_str_eq(json_string_value(json_object_get(o, "object")), "text_completion");
    json_t *c = json_array_get(json_object_get(o, "choices"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(c, "text")), ", there was");
    cr_expect_str_eq(json_string_value(json_object_get(c, "finish_reason")), "stop");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "usage"), "prompt_tokens")),
                 5);
    json_decref(o);
    free(text);

    r.kind = OAI_CHAT;
    text = oai_response(&r, &(oai_choice){"ab", 1, "length", NULL}, 1, 1, 1);
    o = json_loads(text, 0, NULL);
    c = json_array_get(json_object_get(o, "choices"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(c, "message"), "content")),
                     "a");
    json_decref(o);
    free(text);

    text = oai_models(&plain, 42, 512);
    o = json_loads(text, 0, NULL);
    cr_expect_str_eq(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "data"), 0), "id")),
        "stories260K");
    json_decref(o);
    free(text);
}
