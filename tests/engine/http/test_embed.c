/* test_embed.c: /v1/embeddings' bodies (every input shape, every refusal)
 * and its response (unit vectors, OpenAI's shape, base64). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/http/embed.h"

static const oai_model m = {{"emb"}, 1, CHAT_PLAIN, 4};

static int parse(const char *body, embed_req *r, oai_error *e)
{
    return embed_parse(body, strlen(body), &m, 4, r, e);
}

Test(embed, every_input_shape)
{
    static const struct {
        const char *body;
        size_t n;
        int first_is_string;
    } ok[] = {
        {"{\"model\":\"emb\",\"input\":\"a\"}", 1, 1},
        {"{\"model\":\"emb\",\"input\":[\"a\",\"b\"]}", 2, 1},
        {"{\"model\":\"emb\",\"input\":[1,2,3]}", 1, 0},
        {"{\"model\":\"emb\",\"input\":[[1,2],[3]],\"encoding_format\":\"float\"}", 2, 0},
        {"{\"model\":\"emb\",\"input\":\"a\",\"dimensions\":4,\"user\":\"u\"}", 1, 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        embed_req r;
        oai_error e;
        cr_assert_eq(parse(ok[i].body, &r, &e), 0, "%s: %s", ok[i].body, e.message);
        cr_expect_eq(json_array_size(r.inputs), ok[i].n, "%s", ok[i].body);
        cr_expect_eq(json_is_string(json_array_get(r.inputs, 0)), ok[i].first_is_string);
        cr_expect_str_eq(r.model, "emb");
        embed_req_free(&r);
    }
}

Test(embed, refusals_name_the_field)
{
    static const struct {
        const char *body;
        int status;
        const char *code, *param;
    } bad[] = {
        {"{\"model\":\"emb\",\"input\":\"\"}", 400, "bad_value", "input"},
        {"{\"model\":\"emb\",\"input\":[]}", 400, "bad_value", "input"},
        {"{\"model\":\"emb\",\"input\":[[]]}", 400, "bad_value", "input"},
        {"{\"model\":\"emb\",\"input\":[\"a\",\"\"]}", 400, "bad_value", "input"},
        {"{\"model\":\"emb\",\"input\":[1,-1]}", 400, "bad_value", "input"},
        {"{\"model\":\"emb\",\"input\":[1,\"a\"]}", 400, "bad_type", "input"},
        {"{\"model\":\"emb\",\"input\":5}", 400, "bad_type", "input"},
        {"{\"model\":\"emb\",\"input\":{}}", 400, "bad_type", "input"},
        {"{\"model\":\"emb\"}", 400, "missing_field", "input"},
        {"{\"input\":\"a\"}", 400, "missing_field", "model"},
        {"{\"model\":\"other\",\"input\":\"a\"}", 404, "model_not_found", "model"},
        {"{\"model\":\"emb\",\"input\":\"a\",\"encoding_format\":\"hex\"}", 400, "bad_value",
         "encoding_format"},
        {"{\"model\":\"emb\",\"input\":\"a\",\"dimensions\":3}", 400, "unsupported", "dimensions"},
        {"{\"model\":\"emb\",\"input\":\"a\",\"dimensions\":0}", 400, "bad_value", "dimensions"},
        {"{\"model\":\"emb\",\"input\":\"a\",\"pooling\":\"cls\"}", 400, "unknown_field", ""},
        {"[1]", 400, "not_object", ""},
        {"{", 400, "bad_json", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        embed_req r;
        oai_error e;
        cr_expect_eq(parse(bad[i].body, &r, &e), -1, "accepted: %s", bad[i].body);
        cr_expect_eq(e.status, bad[i].status, "%s: %d", bad[i].body, e.status);
        cr_expect_str_eq(e.code, bad[i].code, "%s: %s", bad[i].body, e.message);
        cr_expect_str_eq(e.param, bad[i].param, "%s", bad[i].body);
    }
    /* More inputs than OpenAI takes. */
    char *big = malloc(16 + 4 * (EMBED_INPUTS_MAX + 1) + 32);
    size_t len = (size_t)sprintf(big, "{\"model\":\"emb\",\"input\":[");
    for (int i = 0; i <= EMBED_INPUTS_MAX; i++)
        len += (size_t)sprintf(big + len, "%s\"a\"", i ? "," : "");
    strcpy(big + len, "]}");
    embed_req r;
    oai_error e;
    cr_expect_eq(parse(big, &r, &e), -1);
    cr_expect(strstr(e.message, "at most 2048"), "%s", e.message);
    free(big);
}

Test(embed, response_is_unit_vectors_in_openais_shape)
{
    embed_req r;
    oai_error e;
    cr_assert_eq(parse("{\"model\":\"emb\",\"input\":[\"a\",\"b\"]}", &r, &e), 0);
    float v[8] = {3, 0, 4, 0, 0, 0, 0, 0};
    char *text = embed_response(&r, v, 2, 4, 9);
    json_t *o = json_loads(text, 0, NULL);
    cr_assert_not_null(o, "%s", text);
    cr_expect_str_eq(json_string_value(json_object_get(o, "object")), "list");
    cr_expect_str_eq(json_string_value(json_object_get(o, "model")), "emb");
    json_t *d1 = json_array_get(json_object_get(o, "data"), 1);
    cr_expect_eq(json_integer_value(json_object_get(d1, "index")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(d1, "object")), "embedding");
    json_t *v0 = json_object_get(json_array_get(json_object_get(o, "data"), 0), "embedding");
    cr_expect_float_eq(json_real_value(json_array_get(v0, 0)), 0.6, 1e-7);
    cr_expect_float_eq(json_real_value(json_array_get(v0, 2)), 0.8, 1e-7);
    cr_expect_eq(json_real_value(json_array_get(json_object_get(d1, "embedding"), 0)), 0.0,
                 "a zero vector stays zero");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "usage"), "prompt_tokens")),
                 9);
    json_decref(o);
    free(text);
    embed_req_free(&r);

    cr_assert_eq(
        parse("{\"model\":\"emb\",\"input\":\"a\",\"encoding_format\":\"base64\"}", &r, &e), 0);
    float w[4] = {1, 0, 0, 0};
    text = embed_response(&r, w, 1, 4, 2);
    /* 1.0f, 0, 0, 0 as little-endian float32s: 00 00 80 3f, then zeros. */
    cr_expect(strstr(text, "\"embedding\":\"AACAPwAAAAAAAAAAAAAAAA==\""), "%s", text);
    free(text);
    embed_req_free(&r);
}
