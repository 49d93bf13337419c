/* model_resident.c: how much of a stage's weights is not in this
 * process's memory yet (model.h). A GGUF or llama2.c file's tensors are
 * mapped and count in RSS only once the forward pass first reads them;
 * /proc/self/pagemap says which pages this process has mapped in (its
 * "present" bit). mincore would not do: it says what the page cache
 * holds, which another process may have read. */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "model_int.h"

#define PAGEMAP_PRESENT (1ull << 63)

/* Bytes of [p, p + n) on pages this process has not mapped in. */
static size_t unpaged_range(int fd, const void *p, size_t n)
{
    if (fd < 0 || !p || n == 0)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    uintptr_t at = lo & ~(page - 1);
    size_t missing = 0;
    enum { CHUNK = 512 };
    uint64_t entry[CHUNK];
    while (at < hi) {
        size_t pages = (hi - at + page - 1) / page;
        if (pages > CHUNK)
            pages = CHUNK;
        ssize_t got = pread(fd, entry, pages * sizeof *entry, (off_t)(at / page * sizeof *entry));
        /* What cannot be read counts as resident: the guard then stays
         * with RSS, as it was before it could tell. */
        if (got <= 0)
            return missing;
        pages = (size_t)got / sizeof *entry;
        for (size_t k = 0; k < pages; k++) {
            uintptr_t from = at + k * page, to = from + page;
            if (entry[k] & PAGEMAP_PRESENT)
                continue;
            missing += (to < hi ? to : hi) - (from > lo ? from : lo);
        }
        at += pages * page;
    }
    return missing;
}

static size_t unpaged_mat(int fd, const wmat *w)
{
    return unpaged_range(fd, w->data, (size_t)w->rows * w->row_bytes);
}

size_t model_unpaged_bytes(const model *m, int first, int last)
{
    const model_config *c = &m->cfg;
    if (first < 0 || last > c->n_layers || first >= last)
        return 0;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t norm = (size_t)c->dim * sizeof(float), bytes = 0;
    for (int l = first; l < last; l++) {
        const layer_weights *w = &m->layers[l];
        bytes += unpaged_range(fd, w->rms_att, norm) + unpaged_range(fd, w->rms_ffn, norm);
        bytes += unpaged_mat(fd, &w->wq) + unpaged_mat(fd, &w->wk) + unpaged_mat(fd, &w->wv) +
                 unpaged_mat(fd, &w->wo) + unpaged_mat(fd, &w->w1) + unpaged_mat(fd, &w->w2) +
                 unpaged_mat(fd, &w->w3);
    }
    if (first == 0)
        bytes += unpaged_mat(fd, &m->embedding);
    if (last == c->n_layers) {
        bytes += unpaged_range(fd, m->rms_final, norm);
        if (first != 0 || m->classifier.data != m->embedding.data)
            bytes += unpaged_mat(fd, &m->classifier);
    }
    close(fd);
    return bytes;
}
