/* guard.h: the memory budget of a node and the rules that admit growth.
 *
 * budget    = min(--mem-limit, the cgroup limit, RSS + MemAvailable)
 * used      = RSS + the mapped weights of the stage not paged in yet: a
 *             GGUF stage's tensors stay in the file's mapping until a
 *             step reads them, and they are the node's all the same
 * available = budget - used (0 when used is already past the budget)
 * reserve   = max(GUARD_RESERVE_MIN, budget / GUARD_RESERVE_DIV): what a
 *             request must leave free for what nothing counts (allocator
 *             slack, libraries' buffers)
 *
 * A request that would grow the node by `needed` bytes (its KV cache, and
 * the scratch and frames of a step: stage.c counts them) is admitted
 * when needed + reserve <= available. When that fails but would hold after
 * freeing idle sessions, the node evicts them (least recently used first)
 * and admits; otherwise it refuses with kv_oom before allocating anything.
 */
#ifndef GUARD_H
#define GUARD_H

#include <stddef.h>
#include <stdint.h>

#define GUARD_RESERVE_MIN ((size_t)32 << 20)
#define GUARD_RESERVE_DIV 16

typedef struct guard_mem {
    size_t budget;
    size_t rss;
    size_t unpaged; /* mapped weights not resident yet (set by the node) */
    size_t reserve;
    size_t limit;          /* min(--mem-limit, cgroup limit), 0: none */
    size_t host_available; /* MemAvailable of the host, 0: unknown */
} guard_mem;

/* Reads the process and the system now. mem_limit 0: no explicit limit. */
void guard_measure(size_t mem_limit, guard_mem *out);

/* The same from given numbers (cgroup 0: none), for tests and callers
 * that already measured; unpaged starts at 0. */
void guard_from(size_t mem_limit, size_t cgroup_limit, size_t rss, size_t mem_available,
                guard_mem *out);

size_t guard_used(const guard_mem *g); /* RSS + unpaged */
size_t guard_available(const guard_mem *g);
int64_t guard_headroom(const guard_mem *g); /* budget - used, negative when over */

typedef enum guard_verdict {
    GUARD_FITS,  /* admit */
    GUARD_EVICT, /* admit after freeing *evict bytes of idle sessions */
    GUARD_REFUSE /* kv_oom: err says needed, available and budget bytes */
} guard_verdict;

/* needed: bytes the node will grow by; idle: bytes the idle sessions
 * that may be evicted hold. */
guard_verdict guard_admit(const guard_mem *g, size_t needed, size_t idle, size_t *evict, char *err,
                          size_t errlen);

/* 0 when a context of ctx positions is within max_ctx (0: no cap), else
 * -1 with a message for ctx_limit. */
int guard_ctx(int max_ctx, int ctx, char *err, size_t errlen);

#endif
