/* merge.c: symbols and the pair queue (see merge.h). */
#include "merge.h"

#include <stdlib.h>

struct merge_pair {
    double prio;
    int left, right;
    uint32_t len; /* of both symbols when queued: a change makes it stale */
};

void merger_free(merger *m)
{
    free(m->sym);
    free(m->heap);
    free(m->text);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (*cap >= need)
        return 0;
    void *q = realloc(*p, need * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = need;
    return 0;
}

char *merger_text(merger *m, size_t n)
{
    return grow((void **)&m->text, &m->text_cap, n ? n : 1, 1) == 0 ? m->text : NULL;
}

static int better(const merge_pair *a, const merge_pair *b)
{
    return a->prio > b->prio || (a->prio == b->prio && a->left < b->left);
}

/* The heap has room: merge_run sizes it for every push it can make. */
static void push(merger *m, merge_pair p)
{
    size_t i = m->n_heap++;
    while (i > 0 && better(&p, &m->heap[(i - 1) / 2])) {
        m->heap[i] = m->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->heap[i] = p;
}

static merge_pair pop(merger *m)
{
    merge_pair top = m->heap[0], last = m->heap[--m->n_heap];
    size_t i = 0, n = m->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && better(&m->heap[c + 1], &m->heap[c]))
            c++;
        if (!better(&m->heap[c], &last))
            break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    if (n > 0)
        m->heap[i] = last;
    return top;
}

static void try_pair(merger *m, const char *text, int left, int right, merge_prio_fn prio,
                     const void *ctx)
{
    if (left < 0 || right < 0)
        return;
    const merge_sym *l = &m->sym[left], *r = &m->sym[right];
    merge_pair p = {.left = left, .right = right, .len = l->len + r->len};
    if (prio(ctx, text + l->off, p.len, l->len, &p.prio) == 0)
        push(m, p);
}

static int stale(const merger *m, const merge_pair *p)
{
    const merge_sym *l = &m->sym[p->left], *r = &m->sym[p->right];
    return l->len == 0 || r->len == 0 || l->next != p->right || l->len + r->len != p->len;
}

merge_sym *merger_symbols(merger *m, size_t n)
{
    return grow((void **)&m->sym, &m->sym_cap, n ? n : 1, sizeof *m->sym) == 0 ? m->sym : NULL;
}

int merge_run(merger *m, const char *text, int n, merge_prio_fn prio, const void *ctx)
{
    /* n - 1 pairs to start with and two per merge after. */
    if (grow((void **)&m->heap, &m->heap_cap, 3 * (size_t)n, sizeof *m->heap) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        m->sym[i].prev = i - 1;
        m->sym[i].next = i + 1 < n ? i + 1 : -1;
    }
    m->n_heap = 0;
    for (int i = 1; i < n; i++)
        try_pair(m, text, i - 1, i, prio, ctx);
    while (m->n_heap > 0) {
        merge_pair p = pop(m);
        if (stale(m, &p))
            continue;
        merge_sym *l = &m->sym[p.left], *r = &m->sym[p.right];
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0)
            m->sym[r->next].prev = p.left;
        try_pair(m, text, l->prev, p.left, prio, ctx);
        try_pair(m, text, p.left, l->next, prio, ctx);
    }
    return 0;
}
