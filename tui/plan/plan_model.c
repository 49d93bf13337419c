/* plan_model.c: a model's bytes as the engine counts them (see plan.h):
 * weights from the engine's header reader, KV from its formula, the
 * reserve from its memory guard, and the scratch the forward pass takes. */
#include <stdio.h>
#include <string.h>

#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/node/guard.h"
#include "plan.h"

const int plan_bits[PLAN_N_BITS] = {16, 8, 4};

int plan_model_probe(const char *spec, plan_model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (snprintf(m->spec, sizeof m->spec, "%s", spec) >= (int)sizeof m->spec) {
        snprintf(err, errlen, "model %.64s...: name too long", spec);
        return -1;
    }
    return model_probe_bytes(spec, &m->cfg, &m->embed_bytes, m->layer_bytes, PLAN_LAYERS_MAX,
                             &m->out_bytes, err, errlen);
}

int plan_model_from_status(const proto_status *s, plan_model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    int L = s->model.n_layers;
    if (s->model.n_layer_bytes <= 0 || s->model.n_layer_bytes != L || L > PLAN_LAYERS_MAX ||
        s->model.head_dim <= 0) {
        snprintf(err, errlen,
                 "the nodes do not report their model's shape (inferd %s is older): give --model",
                 s->version[0] ? s->version : "?");
        return -1;
    }
    snprintf(m->spec, sizeof m->spec, "%s", s->model.name);
    m->cfg = (model_config){.dim = s->model.dim,
                            .hidden_dim = s->model.hidden_dim,
                            .n_layers = L,
                            .n_heads = s->model.n_heads,
                            .n_kv_heads = s->model.n_kv_heads,
                            .head_dim = s->model.head_dim,
                            .vocab_size = s->model.vocab_size,
                            .seq_len = s->model.seq_len,
                            .shared_classifier = s->model.shared_classifier};
    m->embed_bytes = s->model.embed_bytes;
    m->out_bytes = s->model.out_bytes;
    for (int l = 0; l < L; l++)
        m->layer_bytes[l] = s->model.layer_bytes[l];
    return 0;
}

/* A stage's weights from the bytes of its layers: the embedding on the
 * first stage, the norm and classifier on the last, one table when the
 * same stage holds both and the classifier is shared (model.h). */
size_t plan_weights_from(const plan_model *m, size_t layers, int first, int last)
{
    int head = first == 0, tail = last == m->cfg.n_layers;
    size_t bytes = layers;
    if (head)
        bytes += m->embed_bytes;
    if (tail)
        bytes += m->out_bytes;
    if (head && tail && m->cfg.shared_classifier)
        bytes -= m->embed_bytes;
    return bytes;
}

size_t plan_stage_weights(const plan_model *m, int first, int last)
{
    size_t layers = 0;
    for (int l = first; l < last; l++)
        layers += m->layer_bytes[l];
    return plan_weights_from(m, layers, first, last);
}

static kv_shape shape_of(const plan_model *m, int n_layers)
{
    kv_shape s = {.n_layers = n_layers,
                  .n_kv_heads = m->cfg.n_kv_heads,
                  .head_dim = m->cfg.head_dim,
                  .block = KV_BLOCK_DEFAULT};
    return s;
}

size_t plan_stage_kv(const plan_model *m, int n_layers, int bits, int ctx)
{
    return kv_bytes_for(shape_of(m, n_layers), bits, ctx);
}

int plan_kv_check(const plan_model *m, int bits, char *err, size_t errlen)
{
    kv_cache *kv;
    if (kv_create(&kv, shape_of(m, 1), bits, err, errlen) != 0)
        return -1;
    kv_free(kv);
    return 0;
}

size_t plan_scratch_bytes(const plan_model *m, int last, int prefill_step, int threads)
{
    /* The forward pass's own figure for a chunk and a decode batch of
     * prefill_step rows (the files planned here are sized as fp32, whose
     * products take no tiles), and the tail's logits, a row per request
     * running (the engine's default --max-seqs). */
    size_t logits = last == m->cfg.n_layers ? (size_t)PLAN_SEQS * (size_t)m->cfg.vocab_size : 0;
    return fwd_scratch_bytes_of(&m->cfg, shape_of(m, last), prefill_step, threads) +
           logits * sizeof(float);
}

uint64_t plan_reserve(uint64_t budget)
{
    guard_mem g;
    guard_from((size_t)budget, 0, 0, 0, &g);
    return g.reserve;
}
