/* quality.c: quality measurements (schema 8): what a leg's kv_bits did to
 * the model's distributions against the reference, recorded through the
 * queue like every row (store_quality_add, applied on the writer thread)
 * and read back per run or as a setting's latest measurement. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* A measurement has a bucket per bucket width over its window: far fewer
 * than this for any context the engine takes. */
#define QUALITY_BUCKETS_MAX 4096

int store_quality_add(store *s, const store_quality *q)
{
    if (q->leg < 0 || !q->text_name || !q->model || q->n_buckets > QUALITY_BUCKETS_MAX ||
        (q->n_buckets && !q->buckets) || strlen(q->text_sha256) != STORE_SHA256_HEX - 1)
        return store_refuse(s, q->run);
    store_quality *c = calloc(1, sizeof *c);
    if (c) {
        *c = *q;
        c->text_name = strdup(q->text_name);
        c->model = strdup(q->model);
        c->buckets = q->n_buckets ? malloc(q->n_buckets * sizeof *c->buckets) : NULL;
        if (c->buckets)
            memcpy(c->buckets, q->buckets, q->n_buckets * sizeof *c->buckets);
        if (!c->text_name || !c->model || (q->n_buckets && !c->buckets)) {
            store_quality_release(c);
            c = NULL;
        }
    }
    if (!c)
        return store_refuse(s, q->run);
    store_rec r = {.kind = REC_QUALITY, .run = q->run, .t = q->t > 0 ? q->t : store_now()};
    r.u.qual = c;
    return store_queue_push(s, &r, 1);
}

/* ---- the writer's side ---- */

static int step_once(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc;
}

static int insert_bucket(store *s, const store_rec *r, const store_quality_bucket *b)
{
    sqlite3_stmt *st = s->ws.quality_bucket;
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int(st, 2, r->u.qual->leg);
    sqlite3_bind_int64(st, 3, b->from);
    sqlite3_bind_int64(st, 4, b->to);
    sqlite3_bind_int64(st, 5, b->positions);
    const double v[] = {b->kl_mean, b->kl_p99, b->kl_max, b->top1, b->ppl_ref, b->ppl_test};
    for (int i = 0; i < 6; i++)
        store_bind_finite(st, 6 + i, v[i]);
    return store_stmt_run(st);
}

static int insert_quality(store *s, const store_rec *r)
{
    const store_quality *q = r->u.qual;
    sqlite3_stmt *st = s->ws.quality;
    sqlite3_bind_int64(st, 1, r->run);
    sqlite3_bind_int(st, 2, q->leg);
    sqlite3_bind_int(st, 3, q->kv_bits);
    sqlite3_bind_int(st, 4, q->ref_kv_bits);
    sqlite3_bind_int64(st, 5, q->ctx);
    sqlite3_bind_int64(st, 6, q->score_from);
    sqlite3_bind_int64(st, 7, q->windows);
    sqlite3_bind_int64(st, 8, q->positions);
    const double v[] = {q->kl_mean, q->kl_p99,   q->kl_max,     q->top1,
                        q->ppl_ref, q->ppl_test, q->ppl_ref_err};
    for (int i = 0; i < 7; i++)
        store_bind_finite(st, 9 + i, v[i]);
    sqlite3_bind_text(st, 16, q->text_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 17, q->text_sha256, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 18, q->model, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 19, r->t);
    if (q->topk > 0)
        sqlite3_bind_int(st, 20, q->topk);
    else
        sqlite3_bind_null(st, 20);
    return store_stmt_run(st);
}

int store_quality_apply(store *s, store_rec *r)
{
    int rc = step_once(s->ws.savepoint);
    if (rc != SQLITE_DONE)
        return rc;
    rc = insert_quality(s, r);
    for (size_t i = 0; rc == SQLITE_DONE && i < r->u.qual->n_buckets; i++)
        rc = insert_bucket(s, r, &r->u.qual->buckets[i]);
    if (rc != SQLITE_DONE)
        step_once(s->ws.rollback_to);
    int released = step_once(s->ws.release);
    return rc == SQLITE_DONE ? released : rc;
}

/* ---- reading ---- */

#define QUALITY_COLUMNS                                                                            \
    "SELECT q.run, q.leg, q.kv_bits, q.ref_kv_bits, q.ctx, q.score_from, q.windows, q.positions,"  \
    " q.kl_mean, q.kl_p99, q.kl_max, q.top1, q.ppl_ref, q.ppl_test, q.ppl_ref_err, q.text_name,"   \
    " q.text_sha256, q.model, q.t, coalesce(q.topk, 0) FROM quality q "

static int buckets_of(sqlite3 *db, store_quality *q, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(
            db,
            "SELECT pos_from, pos_to, positions, kl_mean, kl_p99, kl_max, top1, ppl_ref,"
            " ppl_test FROM quality_buckets WHERE run = ?1 AND leg = ?2 ORDER BY pos_from",
            &st, err, errlen) != 0)
        return -1;
    sqlite3_bind_int64(st, 1, q->run);
    sqlite3_bind_int(st, 2, q->leg);
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (q->n_buckets == cap) {
            size_t ncap = cap ? 2 * cap : 8;
            store_quality_bucket *grown = realloc(q->buckets, ncap * sizeof *grown);
            if (!grown)
                break;
            q->buckets = grown;
            cap = ncap;
        }
        store_quality_bucket *b = &q->buckets[q->n_buckets++];
        b->from = sqlite3_column_int64(st, 0);
        b->to = sqlite3_column_int64(st, 1);
        b->positions = sqlite3_column_int64(st, 2);
        double *v[] = {&b->kl_mean, &b->kl_p99, &b->kl_max, &b->top1, &b->ppl_ref, &b->ppl_test};
        for (int i = 0; i < 6; i++)
            *v[i] = store_col_num(st, 3 + i);
    }
    if (rc != SQLITE_DONE)
        store_dberr(err, errlen, rc == SQLITE_ROW ? NULL : db, "reading quality buckets");
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* One row of QUALITY_COLUMNS, with its buckets. */
static int quality_of_row(sqlite3 *db, sqlite3_stmt *st, store_quality *q, char *err, size_t errlen)
{
    memset(q, 0, sizeof *q);
    q->run = sqlite3_column_int64(st, 0);
    q->leg = sqlite3_column_int(st, 1);
    q->kv_bits = sqlite3_column_int(st, 2);
    q->ref_kv_bits = sqlite3_column_int(st, 3);
    q->ctx = sqlite3_column_int64(st, 4);
    q->score_from = sqlite3_column_int64(st, 5);
    q->windows = sqlite3_column_int64(st, 6);
    q->positions = sqlite3_column_int64(st, 7);
    double *v[] = {&q->kl_mean, &q->kl_p99,   &q->kl_max,     &q->top1,
                   &q->ppl_ref, &q->ppl_test, &q->ppl_ref_err};
    for (int i = 0; i < 7; i++)
        *v[i] = store_col_num(st, 8 + i);
    q->text_name = store_col_strdup(st, 15);
    const unsigned char *sha = sqlite3_column_text(st, 16);
    snprintf(q->text_sha256, sizeof q->text_sha256, "%s", sha ? (const char *)sha : "");
    q->model = store_col_strdup(st, 17);
    q->t = sqlite3_column_double(st, 18);
    q->topk = sqlite3_column_int(st, 19);
    if (!q->text_name || !q->model) {
        store_quality_free(q);
        store_errf(err, errlen, "out of memory reading a quality measurement");
        return -1;
    }
    if (buckets_of(db, q, err, errlen) != 0) {
        store_quality_free(q);
        return -1;
    }
    return 0;
}

void store_quality_list_free(store_quality_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        store_quality_free(&l->q[i]);
    free(l->q);
    l->q = NULL;
    l->n = 0;
}

int store_run_quality(store *s, int64_t run, store_quality_list *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->db_lock);
    int ret = store_run_exists(s, run, err, errlen);
    sqlite3_stmt *st = NULL;
    if (ret != 0 || (ret = store_prepare(s->db, QUALITY_COLUMNS "WHERE q.run = ?1 ORDER BY q.leg",
                                         &st, err, errlen)) != 0)
        goto out;
    sqlite3_bind_int64(st, 1, run);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        store_quality *grown = realloc(out->q, (out->n + 1) * sizeof *grown);
        if (!grown) {
            store_errf(err, errlen, "out of memory reading run %lld's quality", (long long)run);
            break;
        }
        out->q = grown;
        if (quality_of_row(s->db, st, &out->q[out->n], err, errlen) != 0)
            break;
        out->n++;
    }
    if (rc == SQLITE_DONE)
        ret = 0;
    else {
        if (rc != SQLITE_ROW)
            store_dberr(err, errlen, s->db, "reading quality");
        ret = -1;
    }
out:
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->db_lock);
    if (ret != 0)
        store_quality_list_free(out);
    return ret;
}

int store_quality_last(store *s, const char *model, const char *engine, int kv_bits,
                       store_quality *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->db_lock);
    sqlite3_stmt *st;
    int ret = -1;
    if (store_prepare(s->db,
                      QUALITY_COLUMNS "JOIN runs r ON r.id = q.run"
                                      " WHERE q.model = ?1 AND q.kv_bits = ?2 AND r.engine = ?3"
                                      " ORDER BY q.t DESC, q.run DESC LIMIT 1",
                      &st, err, errlen) != 0)
        goto out;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, kv_bits);
    sqlite3_bind_text(st, 3, engine ? engine : "inferd", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        ret = quality_of_row(s->db, st, out, err, errlen);
    else if (rc == SQLITE_DONE)
        ret = 1;
    else
        store_dberr(err, errlen, s->db, "finding the last quality measurement");
    sqlite3_finalize(st);
out:
    pthread_mutex_unlock(&s->db_lock);
    return ret;
}

/* ---- JSON ---- */

static void set_figures(json_t *o, const double *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        json_object_set_new(o, names[i], store_json_num(v[i]));
}

static const char *const figure_names[] = {"kl_mean", "kl_p99",   "kl_max",     "top1",
                                           "ppl_ref", "ppl_test", "ppl_ref_err"};

json_t *store_quality_json(const store_quality *q)
{
    json_t *o =
        json_pack("{sI si si si sI sI sI sI ss ss ss sf}", "run", (json_int_t)q->run, "leg", q->leg,
                  "kv_bits", q->kv_bits, "ref_kv_bits", q->ref_kv_bits, "ctx", (json_int_t)q->ctx,
                  "score_from", (json_int_t)q->score_from, "windows", (json_int_t)q->windows,
                  "positions", (json_int_t)q->positions, "text", q->text_name, "text_sha256",
                  q->text_sha256, "model", q->model, "t", q->t);
    json_t *buckets = json_array();
    if (!o || !buckets) {
        json_decref(o);
        json_decref(buckets);
        return NULL;
    }
    const double v[] = {q->kl_mean, q->kl_p99,   q->kl_max,     q->top1,
                        q->ppl_ref, q->ppl_test, q->ppl_ref_err};
    set_figures(o, v, figure_names, 7);
    json_object_set_new(o, "estimate", json_string(q->topk > 0 ? "topk" : "full"));
    json_object_set_new(o, "topk", q->topk > 0 ? json_integer(q->topk) : json_null());
    for (size_t i = 0; i < q->n_buckets; i++) {
        const store_quality_bucket *b = &q->buckets[i];
        json_t *bj = json_pack("{sI sI sI}", "from", (json_int_t)b->from, "to", (json_int_t)b->to,
                               "positions", (json_int_t)b->positions);
        const double bv[] = {b->kl_mean, b->kl_p99, b->kl_max, b->top1, b->ppl_ref, b->ppl_test};
        if (bj)
            set_figures(bj, bv, figure_names, 6);
        json_array_append_new(buckets, bj);
    }
    json_object_set_new(o, "buckets", buckets);
    return o;
}
