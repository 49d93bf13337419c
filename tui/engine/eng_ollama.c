/* eng_ollama.c: Ollama (engine.h), its table.
 *
 * Ollama exports no metrics: what it tells is its version and the models
 * it holds in memory (/api/ps). Throughput of an Ollama node comes from
 * the console's own traffic (stress), not from here. */
#include <math.h>
#include <stdio.h>

#include "eng_map.h"

/* /api/ps: {"models": [{name, size, size_vram, expires_at}, ...]}. The
 * first model is the node's model; what they hold adds up. */
static int read_ps(struct eng_view *v, const char *body, size_t len, char *why, size_t whylen)
{
    json_t *j = eng_json_load(body, len, why, whylen), *m;
    if (!j)
        return -1;
    json_t *models = json_object_get(j, "models");
    if (!json_is_array(models)) {
        json_decref(j);
        snprintf(why, whylen, "no `models` array");
        return -1;
    }
    size_t i;
    v->mem_bytes = 0;
    json_array_foreach(models, i, m)
    {
        double size = eng_json_num(m, "size");
        if (!isnan(size))
            v->mem_bytes += size;
        if (v->n_models == ENG_MODELS_MAX)
            continue;
        struct eng_model *o = &v->models[v->n_models++];
        eng_json_text(o->name, sizeof o->name, m, "name");
        o->size = size;
        o->size_vram = eng_json_num(m, "size_vram");
        eng_json_text(o->expires, sizeof o->expires, m, "expires_at");
    }
    if (v->n_models)
        snprintf(v->model, sizeof v->model, "%s", v->models[0].name);
    json_decref(j);
    return 0;
}

static const struct eng_ep_row eps[] = {
    {.path = "/api/version", .read = eng_read_version},
    {.path = "/api/ps", .read = read_ps},
};

const struct eng_table eng_ollama_table = {ENG_ROWS(eps, eps)};
