/* test_session.c: the session table hands caches out and back, keeps the
 * pending token, and names the least recently used session for eviction. */
#include <criterion/criterion.h>

#include "engine/node/session.h"

static kv_cache *cache_of_len(int len)
{
    kv_shape shape = {.n_layers = 1, .n_kv_heads = 1, .head_dim = 8, .block = 8};
    kv_cache *kv;
    char err[256];
    cr_assert_eq(kv_create(&kv, shape, 16, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_reserve(kv, len, err, sizeof err), 0, "%s", err);
    kv_set_len(kv, len);
    return kv;
}

Test(session, take_and_put_back)
{
    sess_table *t;
    char err[256];
    cr_assert_eq(sess_table_create(&t, err, sizeof err), 0);
    kv_cache *kv = cache_of_len(5);
    cr_assert_eq(sess_put(t, "s", kv, 42, err, sizeof err), 0);
    cr_assert_eq(sess_count(t), 1);
    cr_assert_eq(sess_len(t, "s"), 5);
    cr_assert_eq(sess_pending(t, "s"), 42);
    cr_assert_eq(sess_bytes(t), kv_bytes(kv));
    cr_assert_eq(sess_len(t, "other"), -1);

    int pending = 0;
    cr_assert_eq(sess_take(t, "s", &pending), kv, "the same cache comes back");
    cr_assert_eq(pending, 42);
    cr_assert_eq(sess_count(t), 0, "a taken session is out of the table");
    cr_assert_null(sess_take(t, "s", &pending));
    cr_assert_eq(sess_put(t, "s", kv, -1, err, sizeof err), 0);
    cr_assert_eq(sess_pending(t, "s"), -1);
    cr_assert_eq(sess_drop(t, "s"), 1);
    cr_assert_eq(sess_drop(t, "s"), 0);
    cr_assert_eq(sess_bytes(t), 0);
    sess_table_free(t);
}

Test(session, lru_order_follows_use)
{
    sess_table *t;
    char err[256];
    cr_assert_eq(sess_table_create(&t, err, sizeof err), 0);
    const char *names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(sess_put(t, names[i], cache_of_len(i + 1), -1, err, sizeof err), 0);
    cr_assert_str_eq(sess_lru(t, NULL), "a");
    cr_assert_str_eq(sess_lru(t, "a"), "b", "the request's own session is never the victim");

    /* Using "a" (take and put back) makes "b" the oldest. */
    int pending;
    kv_cache *a = sess_take(t, "a", &pending);
    cr_assert_eq(sess_put(t, "a", a, pending, err, sizeof err), 0);
    cr_assert_str_eq(sess_lru(t, NULL), "b");
    cr_assert_eq(sess_drop(t, "b"), 1);
    cr_assert_str_eq(sess_lru(t, NULL), "c");
    cr_assert_eq(sess_drop(t, "c"), 1);
    cr_assert_null(sess_lru(t, "a"));
    sess_table_free(t);
}
