/* local.h: a model run in this process, as `inferd generate` and `inferd
 * eval` use it: the model, its tokenizer, the threads, every layer's
 * forward stage and a KV cache. */
#ifndef LOCAL_H
#define LOCAL_H

#include <stddef.h>

#include "engine/compute/forward.h"
#include "engine/compute/kvcache.h"
#include "engine/compute/pool.h"
#include "engine/model/model.h"
#include "engine/model/tokenizer.h"

typedef struct local {
    model *m;
    tokenizer *tok;
    pool *pool;
    fwd_stage *fwd;
    kv_cache *kv;
} local;

/* model: a spec (model.h); tokenizer: a llama2.c tokenizer file, or NULL
 * for the model's own (a GGUF file's) or else the embedded one. On error
 * fills err; local_close releases what was opened either way. */
int local_open(local *r, const char *model, const char *tokenizer, int threads, int kv_bits,
               char *err, size_t errlen);
void local_close(local *r);

/* The bytes of the file a flag names (--flag PATH), allocated into *out. */
int local_read_text(const char *flag, const char *path, char **out, size_t *len, char *err,
                    size_t errlen);

#endif
