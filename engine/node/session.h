/* session.h: named KV caches that outlive a request.
 *
 * A request that names a session appends to that session's context: its
 * cache is taken out of the table for the request (so nothing can evict
 * it meanwhile) and put back when the request ends. When memory runs
 * short, idle sessions go first, least recently used first.
 */
#ifndef SESSION_H
#define SESSION_H

#include <stddef.h>

#include "engine/compute/kvcache.h"

typedef struct sess_table sess_table;

int sess_table_create(sess_table **out, char *err, size_t errlen);
void sess_table_free(sess_table *t);

int sess_count(const sess_table *t);
/* KV bytes held by the idle sessions. */
size_t sess_bytes(const sess_table *t);

/* Context length of a session, -1 when there is none. */
int sess_len(const sess_table *t, const char *name);

/* A session's cache, left in the table; NULL when there is none. */
const kv_cache *sess_peek(const sess_table *t, const char *name);

/* Removes the session from the table and hands its cache to the caller,
 * with the token the head sampled last but did not feed yet (-1 for none).
 * NULL when there is no such session. */
kv_cache *sess_take(sess_table *t, const char *name, int *pending_token);

/* Stores (or stores back) a session's cache as the most recently used;
 * the table owns it from now on. On failure (out of memory) the caller
 * still owns kv. */
int sess_put(sess_table *t, const char *name, kv_cache *kv, int pending_token, char *err,
             size_t errlen);

/* Frees a session's cache. Returns 1 when it existed, 0 when not. */
int sess_drop(sess_table *t, const char *name);

/* The token a session's last request sampled but did not feed, -1 for
 * none or no such session. */
int sess_pending(const sess_table *t, const char *name);

/* The least recently used session other than `except` (may be NULL), or
 * NULL when there is none. */
const char *sess_lru(const sess_table *t, const char *except);

/* Every idle session's cache, for conversion: i in [0, sess_count). */
kv_cache *sess_cache_at(sess_table *t, int i);

#endif
