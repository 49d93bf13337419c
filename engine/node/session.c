/* session.c: the session table (see session.h).
 *
 * A node holds a handful of sessions at most (each one is a whole growing
 * context), so a flat array with a use counter is all the LRU needs.
 */
#include "session.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sess {
    char *name;
    kv_cache *kv;
    int pending_token;
    uint64_t used; /* value of the table's clock at the last put */
} sess;

struct sess_table {
    sess *v;
    int n, cap;
    uint64_t clock;
};

int sess_table_create(sess_table **out, char *err, size_t errlen)
{
    *out = calloc(1, sizeof **out);
    if (!*out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void sess_table_free(sess_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        kv_free(t->v[i].kv);
        free(t->v[i].name);
    }
    free(t->v);
    free(t);
}

int sess_count(const sess_table *t)
{
    return t->n;
}

size_t sess_bytes(const sess_table *t)
{
    size_t sum = 0;
    for (int i = 0; i < t->n; i++)
        sum += kv_bytes(t->v[i].kv);
    return sum;
}

static int sess_find(const sess_table *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->v[i].name, name) == 0)
            return i;
    return -1;
}

int sess_len(const sess_table *t, const char *name)
{
    const kv_cache *kv = sess_peek(t, name);
    return kv ? kv_len(kv) : -1;
}

const kv_cache *sess_peek(const sess_table *t, const char *name)
{
    int i = sess_find(t, name);
    return i < 0 ? NULL : t->v[i].kv;
}

/* Removes entry i, keeping the others in place order. */
static void sess_remove(sess_table *t, int i)
{
    free(t->v[i].name);
    memmove(&t->v[i], &t->v[i + 1], (size_t)(t->n - i - 1) * sizeof *t->v);
    t->n--;
}

kv_cache *sess_take(sess_table *t, const char *name, int *pending_token)
{
    int i = sess_find(t, name);
    if (i < 0)
        return NULL;
    kv_cache *kv = t->v[i].kv;
    *pending_token = t->v[i].pending_token;
    sess_remove(t, i);
    return kv;
}

int sess_put(sess_table *t, const char *name, kv_cache *kv, int pending_token, char *err,
             size_t errlen)
{
    int i = sess_find(t, name);
    if (i >= 0) {
        /* Only one request holds a session at a time, so this is the
         * same name stored again: the newer cache replaces the older. */
        if (t->v[i].kv != kv)
            kv_free(t->v[i].kv);
    } else {
        if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 4;
            sess *v = realloc(t->v, (size_t)cap * sizeof *v);
            if (!v) {
                snprintf(err, errlen, "out of memory storing session '%s'", name);
                return -1;
            }
            t->v = v;
            t->cap = cap;
        }
        char *copy = strdup(name);
        if (!copy) {
            snprintf(err, errlen, "out of memory storing session '%s'", name);
            return -1;
        }
        i = t->n++;
        t->v[i].name = copy;
    }
    t->v[i].kv = kv;
    t->v[i].pending_token = pending_token;
    t->v[i].used = ++t->clock;
    return 0;
}

int sess_drop(sess_table *t, const char *name)
{
    int i = sess_find(t, name);
    if (i < 0)
        return 0;
    kv_free(t->v[i].kv);
    sess_remove(t, i);
    return 1;
}

int sess_pending(const sess_table *t, const char *name)
{
    int i = sess_find(t, name);
    return i < 0 ? -1 : t->v[i].pending_token;
}

const char *sess_lru(const sess_table *t, const char *except)
{
    int best = -1;
    for (int i = 0; i < t->n; i++) {
        if (except && strcmp(t->v[i].name, except) == 0)
            continue;
        if (best < 0 || t->v[i].used < t->v[best].used)
            best = i;
    }
    return best < 0 ? NULL : t->v[best].name;
}

kv_cache *sess_cache_at(sess_table *t, int i)
{
    return i >= 0 && i < t->n ? t->v[i].kv : NULL;
}
