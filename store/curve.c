/* curve.c: a run's requests as chart points (store_run_curve). */
#include <math.h>
#include <stdlib.h>

#include "store_int.h"

void store_curve_free(store_curve *c)
{
    free(c->points);
    c->points = NULL;
    c->n = 0;
}

static double measure(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int curve_locked(store *s, int64_t run, store_curve *out, char *err, size_t errlen)
{
    int rc = store_run_exists(s, run, err, errlen);
    if (rc != 0)
        return rc;
    sqlite3_stmt *st;
    if (store_prepare(s->db,
                      "SELECT leg, idx, ctx_after, prefill_tps, decode_tps, prefill_step_ms,"
                      " decode_step_ms FROM requests WHERE run = ? AND status = 'ok'"
                      " ORDER BY idx",
                      &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    size_t cap = 0;
    int oom = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            size_t want = cap ? 2 * cap : 64;
            store_point *grown = realloc(out->points, want * sizeof *grown);
            if (!grown) {
                oom = 1;
                break;
            }
            out->points = grown;
            cap = want;
        }
        out->points[out->n++] = (store_point){
            .leg = sqlite3_column_int(st, 0),
            .idx = sqlite3_column_int64(st, 1),
            .ctx = sqlite3_column_int64(st, 2),
            .prefill_tps = measure(st, 3),
            .decode_tps = measure(st, 4),
            .prefill_step_ms = measure(st, 5),
            .decode_step_ms = measure(st, 6),
        };
    }
    sqlite3_finalize(st);
    if (oom || rc != SQLITE_DONE) {
        store_dberr(err, errlen, oom ? NULL : s->db, "reading a run's requests");
        store_curve_free(out);
        return -1;
    }
    return 0;
}

int store_run_curve(store *s, int64_t run, store_curve *out, char *err, size_t errlen)
{
    out->points = NULL;
    out->n = 0;
    pthread_mutex_lock(&s->db_lock);
    int rc = curve_locked(s, run, out, err, errlen);
    pthread_mutex_unlock(&s->db_lock);
    return rc;
}
