/* fuzz_gguf.c: libFuzzer target for the GGUF reader and the llama
 * description, the code that reads model files from anyone. Whatever the
 * bytes, opening must succeed or fail with a message naming the buffer,
 * and on success every value, string and tensor byte it hands out must lie
 * inside the input (ASan checks each one touched here). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/gguf.h"
#include "engine/model/gguf_llama.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

static void touch(const void *p, size_t n)
{
    if (n > 0)
        sink ^= ((const uint8_t *)p)[0] ^ ((const uint8_t *)p)[n - 1];
}

static void read_metadata(const gguf *g)
{
    static const char *const keys[] = {"tokenizer.ggml.tokens",     "tokenizer.ggml.scores",
                                       "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
                                       "general.architecture",      "llama.embedding_length"};
    char err[256];
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        int type;
        uint64_t n;
        const char *s;
        size_t len;
        int64_t i64;
        double f64;
        uint64_t u64;
        if (gguf_get_str(g, keys[k], &s, &len, err, sizeof err) == 0)
            touch(s, len);
        gguf_get_u64(g, keys[k], &u64, err, sizeof err);
        if (gguf_get_arr(g, keys[k], &type, &n, err, sizeof err) != 0)
            continue;
        for (uint64_t i = 0; i < n && i < 4096; i++) {
            if (gguf_arr_str(g, keys[k], i, &s, &len) == 0)
                touch(s, len);
            if (gguf_arr_i64(g, keys[k], i, &i64) == 0 && gguf_arr_f64(g, keys[k], i, &f64) != 0)
                abort();
        }
        if (n > 0 && gguf_arr_str(g, keys[k], n - 1, &s, &len) == 0)
            touch(s, len);
    }
}

static void read_llama(const gguf *g)
{
    char err[256] = "";
    gguf_llama_config c;
    if (gguf_llama_config_read(g, &c, err, sizeof err) < 0) {
        if (strncmp(err, "fuzz: ", 6) != 0)
            abort();
        return;
    }
    gguf_llama *m;
    if (gguf_llama_open(&m, g, 0, c.n_layers, err, sizeof err) < 0) {
        if (strncmp(err, "fuzz: ", 6) != 0)
            abort();
        return;
    }
    const gguf_llama_layer *l = &m->layers[c.n_layers - 1];
    touch(l->w_down.data, l->w_down.row_bytes * (size_t)l->w_down.rows);
    touch(m->output.data, m->output.row_bytes * (size_t)m->output.rows);
    gguf_llama_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    gguf *g;
    /* libFuzzer passes a heap copy of exactly `size` bytes: ASan sees any
     * read past it. */
    if (gguf_open_mem(&g, data, size, "fuzz", err, sizeof err) < 0) {
        if (strncmp(err, "fuzz: ", 6) != 0)
            abort();
        return 0;
    }
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        touch(t->data, t->bytes);
        if (gguf_tensor_find(g, t->name) != t)
            abort();
    }
    read_metadata(g);
    read_llama(g);
    gguf_close(g);
    return 0;
}
