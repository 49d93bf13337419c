/* model_resident.c: how much of a stage's weights is not in memory yet
 * (model.h). A GGUF or llama2.c file's tensors are mapped and become
 * resident as the forward pass first reads them; mincore says which
 * pages are there. */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model_int.h"

/* Bytes of [p, p + n) on pages that are not resident. */
static size_t unpaged_range(const void *p, size_t n)
{
    if (!p || n == 0)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    uintptr_t at = lo & ~(page - 1);
    size_t missing = 0;
    enum { CHUNK = 4096 };
    unsigned char vec[CHUNK];
    while (at < hi) {
        size_t pages = (hi - at + page - 1) / page;
        if (pages > CHUNK)
            pages = CHUNK;
        /* A range mincore cannot read counts as resident: the guard then
         * stays with RSS, as it was before it could tell. */
        if (mincore((void *)at, pages * page, vec) != 0)
            return missing;
        for (size_t k = 0; k < pages; k++) {
            uintptr_t from = at + k * page, to = from + page;
            if (vec[k] & 1)
                continue;
            missing += (to < hi ? to : hi) - (from > lo ? from : lo);
        }
        at += pages * page;
    }
    return missing;
}

static size_t unpaged_mat(const wmat *w)
{
    return unpaged_range(w->data, (size_t)w->rows * w->row_bytes);
}

size_t model_unpaged_bytes(const model *m, int first, int last)
{
    const model_config *c = &m->cfg;
    if (first < 0 || last > c->n_layers || first >= last)
        return 0;
    size_t norm = (size_t)c->dim * sizeof(float), bytes = 0;
    for (int l = first; l < last; l++) {
        const layer_weights *w = &m->layers[l];
        bytes += unpaged_range(w->rms_att, norm) + unpaged_range(w->rms_ffn, norm);
        bytes += unpaged_mat(&w->wq) + unpaged_mat(&w->wk) + unpaged_mat(&w->wv) +
                 unpaged_mat(&w->wo) + unpaged_mat(&w->w1) + unpaged_mat(&w->w2) +
                 unpaged_mat(&w->w3);
    }
    if (first == 0)
        bytes += unpaged_mat(&m->embedding);
    if (last == c->n_layers) {
        bytes += unpaged_range(m->rms_final, norm);
        if (first != 0 || m->classifier.data != m->embedding.data)
            bytes += unpaged_mat(&m->classifier);
    }
    return bytes;
}
