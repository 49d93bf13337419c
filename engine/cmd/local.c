/* local.c: a model run in this process (see local.h). */
#include "local.h"

#include <stdio.h>
#include <stdlib.h>

int local_open(local *r, const char *model, const char *tokenizer, int threads, int kv_bits,
               char *err, size_t errlen)
{
    if (model_load(&r->m, model, err, errlen) != 0)
        return -1;
    /* A GGUF file carries its own vocabulary; --tokenizer still wins. */
    const struct gguf *g = model_gguf(r->m);
    if ((!tokenizer && g ? tok_load_gguf(&r->tok, g, err, errlen)
                         : tok_load(&r->tok, tokenizer, err, errlen)) != 0)
        return -1;
    const model_config *c = model_config_of(r->m);
    if (tok_vocab_size(r->tok) > c->vocab_size) {
        snprintf(err, errlen, "tokenizer has %d tokens, more than the model's vocab_size=%d",
                 tok_vocab_size(r->tok), c->vocab_size);
        return -1;
    }
    return pool_create(&r->pool, threads, err, errlen) != 0 ||
                   fwd_create(&r->fwd, r->m, 0, c->n_layers, r->pool, err, errlen) != 0 ||
                   kv_create(&r->kv, fwd_kv_shape(r->fwd), kv_bits, err, errlen) != 0
               ? -1
               : 0;
}

void local_close(local *r)
{
    kv_free(r->kv);
    fwd_free(r->fwd);
    pool_free(r->pool);
    tok_free(r->tok);
    model_free(r->m);
}

int local_read_text(const char *flag, const char *path, char **out, size_t *len, char *err,
                    size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--%s %s: cannot open it", flag, path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int failed = !buf;
    while (!failed) {
        if (n == cap) {
            char *bigger = realloc(buf, cap * 2);
            failed = !bigger;
            if (failed)
                break;
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0)
            break;
        n += got;
    }
    failed = failed || ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        snprintf(err, errlen, "--%s %s: cannot read it", flag, path);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}
