/* merge.h: the merge loop both BPE flavours share.
 *
 * A text is cut into symbols (a doubly linked list over byte ranges; the
 * caller cuts) and every adjacent pair that may merge goes into a priority
 * queue. The best
 * pair merges, the pairs it forms with its neighbours are queued, and
 * entries that went stale are skipped when they come up: O(n log n) for n
 * symbols, where rescanning all pairs after each merge is O(n^2).
 *
 * The best pair has the highest priority; among equals the leftmost one
 * merges first, as in llama.cpp (and llama2.c's rescanning loop).
 */
#ifndef MERGE_H
#define MERGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct merge_sym {
    int prev, next; /* -1 at the ends */
    uint32_t off, len;
} merge_sym;

typedef struct merge_pair merge_pair;

/* Scratch for one tokenizing call, reused from piece to piece. */
typedef struct merger {
    merge_sym *sym; /* after merge_run: the list from sym[0], following next */
    size_t sym_cap;
    merge_pair *heap;
    size_t n_heap, heap_cap;
    char *text; /* merger_text's buffer */
    size_t text_cap;
} merger;

/* Whether s[0..len), the symbols s[0..split) and s[split..len), merges:
 * 0 with its priority in *prio, -1 when it does not. */
typedef int (*merge_prio_fn)(const void *ctx, const char *s, size_t len, size_t split,
                             double *prio);

void merger_free(merger *m);

/* A buffer of at least n bytes, kept until the next call; NULL when out of
 * memory. */
char *merger_text(merger *m, size_t n);

/* Room for n symbols (NULL when out of memory): the caller sets off and len
 * of each, in text order, covering the text. */
merge_sym *merger_symbols(merger *m, size_t n);

/* Merges the n >= 1 symbols set in m->sym until no pair merges. 0, or -1
 * when out of memory. */
int merge_run(merger *m, const char *text, int n, merge_prio_fn prio, const void *ctx);

#endif
