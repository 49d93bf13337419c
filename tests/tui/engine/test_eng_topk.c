/* test_eng_topk.c: a position's top-k read from real completions answers
 * (tests/fixtures/engines: inferd's legacy shape, llama-server's
 * content[] shape and its withheld logprobs), the request body, and the
 * answers refused. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "engfix.h"
#include "tui/engine/eng_topk.h"

static void read_ok(const char *file, eng_topk *t)
{
    struct engfix f = engfix_load(file);
    char why[256] = "";
    cr_assert_eq(eng_topk_read(f.body, f.len, t, why, sizeof why), 0, "%s: %s", file, why);
    engfix_free(&f);
    for (int i = 1; i < t->n; i++)
        cr_assert_geq(t->logprob[i - 1], t->logprob[i], "%s: not most probable first at %d", file,
                      i);
}

Test(eng_topk, inferd_legacy_shape)
{
    eng_topk t;
    read_ok("../inferd/completion-topk.json", &t);
    cr_assert_eq(t.n, 20);
    cr_assert_str_eq(t.piece[0], ",");
    cr_assert(fabs(t.logprob[0] - -0.031801529543155668) < 1e-15);
    cr_assert_str_eq(t.piece[1], " there");
    cr_assert_str_eq(t.piece[19], " T");
}

/* llama-server's shape, the same prefix of the same model (stories260K
 * F16): the same 20 tokens, the same order, its logprobs in float. */
Test(eng_topk, llamacpp_content_shape)
{
    eng_topk t, inferd;
    read_ok("completion-topk.json", &t);
    read_ok("../inferd/completion-topk.json", &inferd);
    cr_assert_eq(t.n, 20);
    cr_assert_str_eq(t.piece[0], ",");
    cr_assert(fabs(t.logprob[0] - -0.0318431481719017) < 1e-15);
    for (int i = 0; i < 20; i++) {
        cr_expect_str_eq(t.piece[i], inferd.piece[i], "token %d", i);
        cr_expect(fabs(t.logprob[i] - inferd.logprob[i]) < 0.02, "token %d: %g vs %g", i,
                  t.logprob[i], inferd.logprob[i]);
    }
}

/* A greedy token ending inside a UTF-8 character: llama-server holds its
 * text back and answers `logprobs` null. Withheld, not an error. */
Test(eng_topk, llamacpp_withheld)
{
    struct engfix f = engfix_load("completion-topk-withheld.json");
    eng_topk t;
    char why[256] = "";
    cr_assert_eq(eng_topk_read(f.body, f.len, &t, why, sizeof why), 1, "%s", why);
    cr_assert_eq(t.n, 0);
    engfix_free(&f);
}

static void refused(const char *body, const char *needle)
{
    eng_topk t;
    char why[256] = "";
    cr_assert_eq(eng_topk_read(body, strlen(body), &t, why, sizeof why), -1, "%s", body);
    cr_assert(strstr(why, needle), "'%s' not in '%s'", needle, why);
    cr_assert_eq(t.n, 0);
}

Test(eng_topk, refusals)
{
    refused("{\"choices\":[", "not JSON");
    refused("{\"choices\":[{\"logprobs\":null}]}", "no logprobs");
    refused("{\"choices\":[{\"logprobs\":{\"tokens\":[]}}]}", "neither content nor");
    refused("{\"choices\":[{\"logprobs\":{\"top_logprobs\":[{\"a\":0.5}]}}]}", "not a number <= 0");
    refused("{\"choices\":[{\"logprobs\":{\"top_logprobs\":[{\"a\":\"x\"}]}}]}", "not a number");
    refused("{\"choices\":[{\"logprobs\":{\"top_logprobs\":[{}]}}]}", "no alternative");
    refused("{\"choices\":[{\"logprobs\":{\"content\":[{\"token\":\"a\"}]}}]}", "no top_logprobs");
    refused("{\"choices\":[{\"logprobs\":{\"content\":[{\"top_logprobs\":[{\"logprob\":-1}]}]}}]}",
            "has no token");
}

/* Two ids of one text: the first (the more probable) is kept. */
Test(eng_topk, one_text_twice_keeps_the_first)
{
    const char *body = "{\"choices\":[{\"logprobs\":{\"content\":[{\"top_logprobs\":["
                       "{\"id\":5,\"token\":\"a\",\"logprob\":-0.5},"
                       "{\"id\":9,\"token\":\"a\",\"logprob\":-2},"
                       "{\"id\":7,\"token\":\"b\",\"logprob\":-1}]}]}}]}";
    eng_topk t;
    char why[256];
    cr_assert_eq(eng_topk_read(body, strlen(body), &t, why, sizeof why), 0, "%s", why);
    cr_assert_eq(t.n, 2);
    cr_assert_str_eq(t.piece[0], "a");
    cr_assert_eq(t.logprob[0], -0.5);
    cr_assert_str_eq(t.piece[1], "b");
}

Test(eng_topk, body)
{
    static const int ids[] = {1, 403, 407};
    char *b = eng_topk_body("stories260K", ids, 3, 20);
    cr_assert(b);
    json_t *o = json_loads(b, 0, NULL);
    cr_assert(o, "%s", b);
    cr_assert_str_eq(json_string_value(json_object_get(o, "model")), "stories260K");
    cr_assert_eq(json_array_size(json_object_get(o, "prompt")), 3);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(o, "prompt"), 2)), 407);
    cr_assert_eq(json_integer_value(json_object_get(o, "max_tokens")), 1);
    cr_assert_eq(json_integer_value(json_object_get(o, "temperature")), 0);
    cr_assert_eq(json_integer_value(json_object_get(o, "logprobs")), 20);
    json_decref(o);
    free(b);
}
