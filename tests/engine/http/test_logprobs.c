/* test_logprobs.c: logprobs asked in OpenAI's two ways reach the generate
 * request, and the collected tokens come out in OpenAI's two shapes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/http/logprobs.h"

#define S260 "tests/fixtures/gguf/stories260K-f32.gguf"

static const oai_model plain = {{"m"}, 1, CHAT_PLAIN, 4};

static int asked(oai_kind kind, const char *body, int *n)
{
    oai_req r;
    oai_error e;
    int rc = oai_parse(kind, body, strlen(body), &plain, &r, &e);
    cr_assert_eq(rc, 0, "%s: %s", body, e.message);
    const json_t *v = json_object_get(r.generate, "logprobs");
    *n = r.logprobs;
    int sent = v ? (int)json_integer_value(v) : -1;
    oai_req_free(&r);
    return sent;
}

Test(logprobs, asked_on_both_endpoints)
{
    int n;
    cr_expect_eq(asked(OAI_CHAT,
                       "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"x\"}],\"logprobs\":true,\"top_logprobs\":5}",
                       &n),
                 5);
    cr_expect_eq(n, 5);
    cr_expect_eq(asked(OAI_CHAT,
                       "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"x\"}],\"logprobs\":true}",
                       &n),
                 0, "logprobs alone: the chosen token's");
    cr_expect_eq(asked(OAI_CHAT,
                       "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"x\"}],\"logprobs\":false}",
                       &n),
                 -1, "false: none");
    cr_expect_eq(n, -1);
    cr_expect_eq(asked(OAI_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":20}", &n),
                 20);
    cr_expect_eq(asked(OAI_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":0}", &n), 0);
    cr_expect_eq(asked(OAI_COMPLETION, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":null}", &n),
                 -1);
}

static tokenizer *load(void)
{
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, S260, err, sizeof err), 0, "%s", err);
    return t;
}

/* Two tokens: " a" then " b" at offset 2 of the text " a b". */
static void two_tokens(const tokenizer *t, lp_list *l, int *a, int *b)
{
    int ids[8];
    cr_assert_eq(tok_encode(t, "a", 0, ids), 1);
    *a = ids[0];
    cr_assert_eq(tok_encode(t, "b", 0, ids), 1);
    *b = ids[0];
    proto_logprobs x = {.n_top = 2, .logprob = -0.5, .top = {*a, *b}, .top_lp = {-0.5, -1.5}};
    proto_logprobs y = {.n_top = 2, .logprob = -2.0, .top = {*a, *b}, .top_lp = {-0.25, -1.0}};
    cr_assert_eq(lp_add(l, 0, *a, &x), 0);
    cr_assert_eq(lp_add(l, 2, *b, &y), 0);
}

Test(logprobs, chat_shape)
{
    tokenizer *t = load();
    lp_list l = {0};
    int a, b;
    two_tokens(t, &l, &a, &b);
    char *s = lp_render(OAI_CHAT, t, l.v, 0, l.n, " a b");
    cr_assert_not_null(s);
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "%s", s);
    json_t *content = json_object_get(o, "content");
    cr_assert_eq(json_array_size(content), 2, "%s", s);
    json_t *e1 = json_array_get(content, 1);
    cr_expect_str_eq(json_string_value(json_object_get(e1, "token")), " b");
    cr_expect_eq(json_real_value(json_object_get(e1, "logprob")), -2.0);
    json_t *bytes = json_object_get(e1, "bytes");
    cr_expect_eq(json_array_size(bytes), 2);
    cr_expect_eq(json_integer_value(json_array_get(bytes, 0)), ' ');
    cr_expect_eq(json_integer_value(json_array_get(bytes, 1)), 'b');
    json_t *top = json_object_get(e1, "top_logprobs");
    cr_assert_eq(json_array_size(top), 2);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(top, 0), "token")), " a");
    cr_expect_eq(json_real_value(json_object_get(json_array_get(top, 0), "logprob")), -0.25);
    cr_expect(json_is_null(json_object_get(o, "refusal")));
    json_decref(o);
    free(s);
    /* A stream's chunk carries only its own tokens. */
    s = lp_render(OAI_CHAT, t, l.v, 1, 2, " a b");
    o = json_loads(s, 0, NULL);
    cr_expect_eq(json_array_size(json_object_get(o, "content")), 1, "%s", s);
    json_decref(o);
    free(s);
    lp_free(&l);
    tok_free(t);
}

Test(logprobs, completion_shape)
{
    tokenizer *t = load();
    lp_list l = {0};
    int a, b;
    two_tokens(t, &l, &a, &b);
    char *s = lp_render(OAI_COMPLETION, t, l.v, 0, l.n, " a b");
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o, "%s", s);
    json_t *tokens = json_object_get(o, "tokens"), *lps = json_object_get(o, "token_logprobs"),
           *tops = json_object_get(o, "top_logprobs"), *off = json_object_get(o, "text_offset");
    cr_assert_eq(json_array_size(tokens), 2, "%s", s);
    cr_expect_str_eq(json_string_value(json_array_get(tokens, 0)), " a");
    cr_expect_eq(json_real_value(json_array_get(lps, 1)), -2.0);
    cr_expect_eq(json_integer_value(json_array_get(off, 0)), 0);
    cr_expect_eq(json_integer_value(json_array_get(off, 1)), 2);
    json_t *m = json_array_get(tops, 1);
    cr_expect_eq(json_object_size(m), 2, "the top two, the chosen among them: %s", s);
    cr_expect_eq(json_real_value(json_object_get(m, " a")), -0.25);
    cr_expect_eq(json_real_value(json_object_get(m, " b")), -1.0);
    json_decref(o);
    free(s);
    lp_free(&l);
    /* The chosen token outside the top N is added to its map. */
    proto_logprobs x = {.n_top = 1, .logprob = -3.0, .top = {a}, .top_lp = {-0.1}};
    cr_assert_eq(lp_add(&l, 0, b, &x), 0);
    s = lp_render(OAI_COMPLETION, t, l.v, 0, 1, " b");
    o = json_loads(s, 0, NULL);
    m = json_array_get(json_object_get(o, "top_logprobs"), 0);
    cr_expect_eq(json_object_size(m), 2, "%s", s);
    cr_expect_eq(json_real_value(json_object_get(m, " b")), -3.0);
    json_decref(o);
    free(s);
    lp_free(&l);
    tok_free(t);
}

Test(logprobs, chunks_and_responses_carry_them)
{
    oai_reply r = {OAI_CHAT, "chatcmpl-1", "m", 7};
    sbuf b = {0};
    oai_chunk(&b, &r, 0, "x", 1, "{\"content\":[]}", NULL);
    cr_expect_not_null(strstr(b.data, "\"logprobs\":{\"content\":[]}"), "%s", b.data);
    sbuf_free(&b);
    char *text = oai_response(&r, &(oai_choice){"x", 1, "stop", "{\"content\":[]}"}, 1, 1, 1);
    cr_expect_not_null(strstr(text, "\"logprobs\":{\"content\":[]},\"finish_reason\":\"stop\""),
                       "%s", text);
    free(text);
}
