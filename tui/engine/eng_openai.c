/* eng_openai.c: any OpenAI-compatible server (engine.h), its table.
 *
 * All such a server is known to answer is /v1/models: whether it answers
 * (the node's health), how fast, and the first model it serves. */
#include <stdio.h>

#include "eng_map.h"

int eng_read_models(struct eng_view *v, const char *body, size_t len, char *why, size_t whylen)
{
    json_t *j = eng_json_load(body, len, why, whylen);
    if (!j)
        return -1;
    json_t *first = json_array_get(json_object_get(j, "data"), 0);
    if (!json_is_object(first)) {
        json_decref(j);
        snprintf(why, whylen, "no model in `data`");
        return -1;
    }
    eng_json_text(v->model, sizeof v->model, first, "id");
    v->n_ctx = eng_json_num(first, "max_model_len"); /* vLLM's; NaN elsewhere */
    json_decref(j);
    return 0;
}

static const struct eng_ep_row eps[] = {
    {.path = "/v1/models", .read = eng_read_models},
};

const struct eng_table eng_openai_table = {ENG_ROWS(eps, eps)};
