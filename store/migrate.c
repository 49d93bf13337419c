/* migrate.c: the schema as a list of numbered migrations. The database's
 * PRAGMA user_version is the number of the last one applied; a migration is
 * never edited once shipped, a change is a new entry at the end. */
#include <stdio.h>

#include "store_int.h"

/* v1: the base schema. Steps are a WITHOUT ROWID table keyed by (run, seq)
 * so that one run's steps are contiguous on disk: the run summary reads
 * them in one range scan and inserts append at the end of the range. */
static const char migration_1[] =
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL DEFAULT '',"
    " notes TEXT NOT NULL DEFAULT '',"
    " mode TEXT NOT NULL CHECK (mode IN ('growth','fixed','soak','sweep')),"
    " status TEXT NOT NULL CHECK (status IN ('running','completed','failed','aborted')),"
    " started REAL NOT NULL,"
    " ended REAL,"
    " params TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),"
    " cluster TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(cluster)),"
    " failure TEXT,"
    " max_context INTEGER);"
    "CREATE INDEX runs_started ON runs(started);"
    "CREATE TABLE legs ("
    " run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " idx INTEGER NOT NULL,"
    " kv_bits INTEGER NOT NULL,"
    " prefill_step INTEGER NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('running','completed','failed','aborted')),"
    " started REAL NOT NULL,"
    " ended REAL,"
    " max_context INTEGER,"
    " PRIMARY KEY (run, idx)) WITHOUT ROWID;"
    "CREATE TABLE requests ("
    " run INTEGER NOT NULL,"
    " leg INTEGER NOT NULL,"
    " idx INTEGER NOT NULL,"
    " session TEXT,"
    " ctx_before INTEGER NOT NULL,"
    " ctx_after INTEGER NOT NULL,"
    " prompt_tokens INTEGER NOT NULL,"
    " gen_tokens INTEGER NOT NULL,"
    " ttft_ms REAL, prefill_ms REAL, prefill_tps REAL, decode_tps REAL, tpot_ms REAL,"
    " e2e_ms REAL,"
    " status TEXT NOT NULL CHECK (status IN ('ok','failed')),"
    " error_code TEXT,"
    " error_message TEXT,"
    " t REAL NOT NULL,"
    " PRIMARY KEY (run, idx),"
    " FOREIGN KEY (run, leg) REFERENCES legs(run, idx) ON DELETE CASCADE) WITHOUT ROWID;"
    "CREATE TABLE steps ("
    " run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL,"
    " leg INTEGER NOT NULL,"
    " node TEXT NOT NULL,"
    " phase TEXT NOT NULL,"
    " step_ms REAL, model_ms REAL, eval_ms REAL,"
    " req INTEGER,"
    " step INTEGER,"
    " tokens INTEGER,"
    " pos INTEGER,"
    " wait_ms REAL, comm_ms REAL,"
    " kv_bytes INTEGER, kv_bits INTEGER, prefill_step INTEGER,"
    " rss INTEGER, headroom INTEGER,"
    " t REAL NOT NULL,"
    " PRIMARY KEY (run, seq)) WITHOUT ROWID;"
    "CREATE TABLE events ("
    " id INTEGER PRIMARY KEY,"
    " run INTEGER REFERENCES runs(id) ON DELETE CASCADE,"
    " t REAL NOT NULL,"
    " node TEXT,"
    " kind TEXT NOT NULL,"
    " detail TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail)));"
    "CREATE INDEX events_run ON events(run, t);";

/* v2: loss and crash accounting, and stored step aggregates.
 * dropped_rows makes a full writer queue visible; last_context says how
 * far an aborted run got; owner_pid and owner_start (the process start
 * time, which pid reuse cannot fake) let a later open tell a live run from
 * one whose process died; runs_status serves that check and the status
 * filter. step_stats holds a run's step percentiles so that a summary does
 * not read millions of steps each time; stats_seq is the last step seq
 * they cover (see stepstats.c). */
static const char migration_2[] =
    "ALTER TABLE runs ADD COLUMN dropped_rows INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN last_context INTEGER;"
    "ALTER TABLE runs ADD COLUMN owner_pid INTEGER;"
    "ALTER TABLE runs ADD COLUMN owner_start INTEGER;"
    "ALTER TABLE runs ADD COLUMN stats_seq INTEGER;"
    "CREATE INDEX runs_status ON runs(status);"
    "CREATE TABLE step_stats ("
    " run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " leg INTEGER NOT NULL,"
    " node TEXT NOT NULL,"
    " phase TEXT NOT NULL,"
    " metric TEXT NOT NULL,"
    " count INTEGER NOT NULL,"
    " p50 REAL, p90 REAL, p99 REAL, max REAL,"
    " PRIMARY KEY (run, leg, node, phase, metric)) WITHOUT ROWID;";

/* v3: a request's inter-token latencies (nearest-rank p50/p99 of the gaps
 * between its generated tokens), which tpot_ms (their mean) hides: one
 * slow step in a long decode shows in p99 and not in the mean. NULL for
 * requests that generated fewer than two tokens. */
static const char migration_3[] = "ALTER TABLE requests ADD COLUMN itl_p50_ms REAL;"
                                  "ALTER TABLE requests ADD COLUMN itl_p99_ms REAL;";

/* v4: the step time of each request on the ring's slowest node, by phase,
 * so that a run's step time can be charted against context from its
 * requests alone: computing it from steps means reading every step of the
 * run (millions of rows in a soak), too slow for the console's thread. */
static const char migration_4[] = "ALTER TABLE requests ADD COLUMN prefill_step_ms REAL;"
                                  "ALTER TABLE requests ADD COLUMN decode_step_ms REAL;";

/* v5: legs of many requests in flight at once (a node batching them): a
 * leg's concurrency, and its aggregate throughput, the figure batching
 * moves. Older legs get theirs from what was recorded: a growth leg kept
 * one request in flight, a fixed one the run's concurrency parameter (one
 * number before v5); agg_tps comes from their requests as at a leg's end. */
static const char migration_5[] =
    "ALTER TABLE legs ADD COLUMN concurrency INTEGER;"
    "ALTER TABLE legs ADD COLUMN agg_tps REAL;"
    "UPDATE legs SET concurrency = (SELECT CASE"
    "  WHEN coalesce(json_extract(r.params, '$.leg_mode'), r.mode) = 'growth' THEN 1"
    "  WHEN json_type(r.params, '$.concurrency') = 'integer'"
    "   THEN json_extract(r.params, '$.concurrency')"
    "  ELSE 1 END FROM runs r WHERE r.id = legs.run);"
    "UPDATE legs SET agg_tps = " LEG_AGG_TPS " WHERE status <> 'running';";

/* v6: steps.comm_ms goes. Nodes only ever sent a copy of eval_ms in it, so
 * it held nothing eval_ms does not. DROP COLUMN (SQLite 3.35; Debian 12
 * has 3.40) suffices: no index, view, trigger or constraint names the
 * column. It rewrites every row of steps, once. */
static const char migration_6[] = "ALTER TABLE steps DROP COLUMN comm_ms;";

/* v7: runs of other engines than inferd (llama.cpp, vLLM, Ollama, any
 * OpenAI-compatible server, driven over HTTP): which engine a run drove
 * and the version it reported, so that history can filter and compare by
 * engine. Older runs all drove inferd, whose version cluster.engine held. */
static const char migration_7[] =
    "ALTER TABLE runs ADD COLUMN engine TEXT NOT NULL DEFAULT 'inferd';"
    "ALTER TABLE runs ADD COLUMN engine_version TEXT;"
    "UPDATE runs SET engine_version = json_extract(cluster, '$.engine')"
    " WHERE json_type(cluster, '$.engine') = 'text';";

/* v8: quality measurements (infertop stress quality, sweep --quality):
 * per leg what the setting under test did to the model's distributions
 * against the reference (kv_bits 32), and the same per depth bucket. The
 * runs table is rebuilt to let its mode CHECK take 'quality' (SQLite
 * cannot alter a CHECK): store_migrate runs it with foreign keys off, so
 * that dropping the old table cascades nowhere; the copy keeps every id,
 * so every reference to a run still holds.
 * quality_model serves the latest measurement of a setting on a model
 * (the Config view, history best's floor). */
static const char migration_8[] =
    "CREATE TABLE runs_v8 ("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL DEFAULT '',"
    " notes TEXT NOT NULL DEFAULT '',"
    " mode TEXT NOT NULL CHECK (mode IN ('growth','fixed','soak','sweep','quality')),"
    " status TEXT NOT NULL CHECK (status IN ('running','completed','failed','aborted')),"
    " started REAL NOT NULL,"
    " ended REAL,"
    " params TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),"
    " cluster TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(cluster)),"
    " failure TEXT,"
    " max_context INTEGER,"
    " dropped_rows INTEGER NOT NULL DEFAULT 0,"
    " last_context INTEGER, owner_pid INTEGER, owner_start INTEGER, stats_seq INTEGER,"
    " engine TEXT NOT NULL DEFAULT 'inferd',"
    " engine_version TEXT);"
    "INSERT INTO runs_v8 SELECT id, name, notes, mode, status, started, ended, params, cluster,"
    " failure, max_context, dropped_rows, last_context, owner_pid, owner_start, stats_seq,"
    " engine, engine_version FROM runs;"
    "DROP TABLE runs;"
    "ALTER TABLE runs_v8 RENAME TO runs;"
    "CREATE INDEX runs_started ON runs(started);"
    "CREATE INDEX runs_status ON runs(status);"
    "CREATE TABLE quality ("
    " run INTEGER NOT NULL,"
    " leg INTEGER NOT NULL,"
    " kv_bits INTEGER NOT NULL,"
    " ref_kv_bits INTEGER NOT NULL,"
    " ctx INTEGER NOT NULL,"
    " score_from INTEGER NOT NULL,"
    " windows INTEGER NOT NULL,"
    " positions INTEGER NOT NULL,"
    " kl_mean REAL, kl_p99 REAL, kl_max REAL, top1 REAL,"
    " ppl_ref REAL, ppl_test REAL, ppl_ref_err REAL,"
    " text_name TEXT NOT NULL,"
    " text_sha256 TEXT NOT NULL,"
    " model TEXT NOT NULL,"
    " t REAL NOT NULL,"
    " PRIMARY KEY (run, leg),"
    " FOREIGN KEY (run, leg) REFERENCES legs(run, idx) ON DELETE CASCADE) WITHOUT ROWID;"
    "CREATE INDEX quality_model ON quality(model, kv_bits, t);"
    "CREATE TABLE quality_buckets ("
    " run INTEGER NOT NULL,"
    " leg INTEGER NOT NULL,"
    " pos_from INTEGER NOT NULL,"
    " pos_to INTEGER NOT NULL,"
    " positions INTEGER NOT NULL,"
    " kl_mean REAL, kl_p99 REAL, kl_max REAL, top1 REAL, ppl_ref REAL, ppl_test REAL,"
    " PRIMARY KEY (run, leg, pos_from),"
    " FOREIGN KEY (run, leg) REFERENCES quality(run, leg) ON DELETE CASCADE) WITHOUT ROWID;";

/* v9: a measurement of another engine's setting is an estimate from its
 * top-k logprobs (stress_topk.c): topk holds its k, NULL for the
 * full-vocabulary measurement of inferd's quality op. */
static const char migration_9[] = "ALTER TABLE quality ADD COLUMN topk INTEGER CHECK (topk > 0);";

static const char *const migrations[STORE_SCHEMA_VERSION] = {migration_1, migration_2, migration_3,
                                                             migration_4, migration_5, migration_6,
                                                             migration_7, migration_8, migration_9};

int store_schema_version(sqlite3 *db, int *version, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK) {
        store_errf(err, errlen, "%s", sqlite3_errmsg(db));
        return -1;
    }
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        store_errf(err, errlen, "%s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return -1;
    }
    *version = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

/* One migration in one transaction. The version is read again inside the
 * write lock: another process may have migrated while we waited for it. */
static int apply(sqlite3 *db, int to, char *err, size_t errlen)
{
    char why[256];
    if (store_exec(db, "BEGIN IMMEDIATE", why, sizeof why) != 0) {
        store_errf(err, errlen, "migrating to schema version %d: %s", to, why);
        return -1;
    }
    int now;
    if (store_schema_version(db, &now, why, sizeof why) != 0)
        goto fail;
    if (now >= to) {
        store_exec(db, "COMMIT", NULL, 0);
        return 0;
    }
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version=%d", to);
    if (store_exec(db, migrations[to - 1], why, sizeof why) != 0 ||
        store_exec(db, set, why, sizeof why) != 0 || store_exec(db, "COMMIT", why, sizeof why) != 0)
        goto fail;
    return 0;
fail:
    store_exec(db, "ROLLBACK", NULL, 0);
    store_errf(err, errlen, "migrating to schema version %d: %s", to, why);
    return -1;
}

int store_migrate(sqlite3 *db, int target, char *err, size_t errlen)
{
    int version;
    if (target < 0 || target > STORE_SCHEMA_VERSION) {
        store_errf(err, errlen, "no schema version %d (known: 1..%d)", target,
                   STORE_SCHEMA_VERSION);
        return -1;
    }
    if (store_schema_version(db, &version, err, errlen) != 0)
        return -1;
    if (version > STORE_SCHEMA_VERSION) {
        store_errf(err, errlen, "schema version %d is newer than this infertop supports (%d)",
                   version, STORE_SCHEMA_VERSION);
        return -1;
    }
    if (version >= target)
        return 0;
    /* The pragma is a no-op inside a transaction: set it around them. */
    int fk = 0;
    sqlite3_stmt *st;
    if (store_prepare(db, "PRAGMA foreign_keys", &st, err, errlen) != 0)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        fk = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    int rc = store_exec(db, "PRAGMA foreign_keys=OFF", err, errlen);
    for (int v = version + 1; rc == 0 && v <= target; v++)
        rc = apply(db, v, err, errlen);
    if (fk && store_exec(db, "PRAGMA foreign_keys=ON", rc == 0 ? err : NULL, errlen) != 0)
        rc = -1;
    return rc;
}
