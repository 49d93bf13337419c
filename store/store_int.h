/* store_int.h: what the files of store/ share and callers do not see.
 * Tests include it to reach the migrations (store_migrate). */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <sys/types.h>

#include "store.h"

#define STORE_SCHEMA_VERSION 9

/* Control rows (requests, legs, run ends) may use this many slots beyond
 * the queue capacity, so that a flood of steps drops steps first. */
#define STORE_CONTROL_RESERVE 1024

/* SQL shared by the writer (apply.c) and recovery (recover.c). */
/* The largest context an ok request reached: of the run ?1, and of the
 * leg being updated. */
#define RUN_OK_CONTEXT                                                                             \
    "(SELECT max(ctx_after) FROM requests q WHERE q.run = ?1 AND q.status = 'ok')"
#define LEG_OK_CONTEXT                                                                             \
    "(SELECT max(ctx_after) FROM requests q WHERE q.run = legs.run AND q.leg = legs.idx"           \
    " AND q.status = 'ok')"
/* The leg's aggregate throughput: the tokens every request of the leg
 * generated (ok or not: the ring did the work) over the leg's wall time,
 * from the first request sent (its end less its e2e) to the last ended.
 * NULL without requests or wall time. */
#define LEG_AGG_TPS                                                                                \
    "(SELECT sum(gen_tokens) / nullif(max(t) - min(t - coalesce(e2e_ms, 0) / 1000.0), 0)"          \
    " FROM requests q WHERE q.run = legs.run AND q.leg = legs.idx)"

/* ---- db.c: sqlite helpers every file uses ---- */
double store_now(void);
void store_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "what: sqlite's message" */
void store_dberr(char *err, size_t errlen, sqlite3 *db, const char *what);
int store_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
int store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen);
/* Binds NULL for a negative (unknown) measurement. */
void store_bind_measure(sqlite3_stmt *st, int i, double v);
/* Binds v, or NULL when it is not finite. */
void store_bind_finite(sqlite3_stmt *st, int i, double v);
/* Column i as a number, NaN when NULL. */
double store_col_num(sqlite3_stmt *st, int i);
/* Steps a writer statement once, then resets it and clears its bindings. */
int store_stmt_run(sqlite3_stmt *st);
/* Copies column i (NULL: "") into a new string; NULL when out of memory. */
char *store_col_strdup(sqlite3_stmt *st, int i);

/* ---- migrate.c ---- */
int store_schema_version(sqlite3 *db, int *version, char *err, size_t errlen);
/* Applies the numbered migrations above the database's user_version up to
 * target, each in its own transaction. Refuses a database newer than
 * STORE_SCHEMA_VERSION. */
int store_migrate(sqlite3 *db, int target, char *err, size_t errlen);

/* ---- the queue of records (queue.c) ---- */

typedef enum store_rec_kind {
    REC_STEP,
    REC_REQUEST,
    REC_EVENT,
    REC_LEG_BEGIN,
    REC_LEG_END,
    REC_RUN_END,
    REC_QUALITY
} store_rec_kind;

/* One queued row. Pointers inside are owned by the record (store_rec_release). */
typedef struct store_rec {
    store_rec_kind kind;
    int lost; /* the writer could not apply it */
    int64_t run;
    double t;
    union {
        struct {
            store_step v; /* v.node unused: see node */
            char node[STORE_NODE_MAX];
        } step;
        store_request req; /* strings strdup'ed */
        struct {
            char *node, *kind, *detail;
        } ev;
        struct {
            int leg;
            store_leg_info info;
        } leg;
        struct {
            int leg; /* -1: every leg still running */
            store_status status;
            char *failure; /* REC_RUN_END only */
        } end;
        store_quality *qual; /* a deep copy */
    } u;
} store_rec;

void store_rec_release(store_rec *r);
/* Frees a deep copy made by store_quality_add (queue.c: records own it). */
void store_quality_release(store_quality *q);

/* A run this handle began and has not ended: the writer's running state
 * for it. dropped/closing are guarded by store.lock; the rest belongs to
 * the writer thread. */
typedef struct store_active {
    int64_t id;
    int64_t dropped; /* rows of this run not written */
    int closing;     /* store_run_end queued */
    int ended;       /* run end applied: freed after commit */
    int64_t next_seq;
    int64_t last_context; /* -1 until a step arrives */
    int64_t saved_dropped, saved_context;
    struct store_active *next;
} store_active;

/* The writer connection's prepared statements. */
typedef struct store_wstmts {
    sqlite3_stmt *begin, *commit, *rollback;
    sqlite3_stmt *step, *steps, *request, *event, *leg_begin, *leg_end, *run_end, *progress;
    sqlite3_stmt *quality, *quality_bucket, *savepoint, *release, *rollback_to;
} store_wstmts;

struct store {
    char *path;
    sqlite3 *db; /* query connection, under db_lock */
    pthread_mutex_t db_lock;

    sqlite3 *wdb; /* writer connection: writer thread only */
    store_wstmts ws;
    store_active *wlast; /* the writer's last run lookup */
    pthread_t thread;
    int thread_started;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t nonempty, drained;
    store_rec *ring;
    size_t capacity, ring_size, head, count;
    uint64_t queued, written, dropped, done;
    int stop;
    char werr[256]; /* first write error since the last flush */
    store_active *active;
    int reserve_fd; /* the room for the ends of runs (reserve.c); -1: none */
    int disk_full;  /* the reserve was spent: only ends of runs are written */
};

/* Takes ownership of r. control: may use the reserve. 0 queued, -1 dropped. */
int store_queue_push(store *s, store_rec *r, int control);
store_active *store_active_find(store *s, int64_t run);
/* Charges n lost rows to their run, for runs.dropped_rows. Caller holds
 * s->lock; the global count is kept by the caller. */
void store_charge_run(store *s, int64_t run, int64_t n);

/* A row that could not be built or queued: counted as dropped, and
 * against its run while the run is going. Returns -1. */
int store_refuse(store *s, int64_t run);

/* ---- reserve.c: room for the ends of runs on a full disk ---- */
#define STORE_RESERVE (256 * 1024)
/* Takes the reserve unless held (and leaves the full-disk mode): 0, or -1
 * when the disk has no room for it. */
int store_reserve_take(store *s, char *err, size_t errlen);
/* Frees the reserve for the ends of runs and enters the full-disk mode.
 * 1 when there was one to free. */
int store_reserve_release(store *s);

/* ---- writer.c: the thread that drains the queue ---- */
int store_writer_start(store *s, char *err, size_t errlen);
void store_writer_stop(store *s);

/* ---- apply.c: the SQL of recording, run on the writer thread ---- */
int store_wstmts_prepare(sqlite3 *db, store_wstmts *w, char *err, size_t errlen);
void store_wstmts_finalize(store_wstmts *w);
/* Applies one record; SQLITE_DONE on success, else the sqlite code. */
int store_rec_apply(store *s, store_rec *r);
/* Applies STORE_STEP_CHUNK step records in one statement, all or none. */
#define STORE_STEP_CHUNK 32
int store_steps_apply(store *s, store_rec *const *recs);
/* Writes dropped counts and last contexts of the active runs that changed. */
int store_progress_save(store *s);

/* ---- export.c ---- */
/* NaN and infinities have no JSON form: they become null. */
json_t *store_json_num(double v);

/* ---- quality.c ---- */
/* Writes a quality record and its buckets, all or none (a savepoint). */
int store_quality_apply(store *s, store_rec *r);

/* ---- recover.c ---- */
/* Marks runs left running by a dead process as aborted. */
int store_recover(store *s, char *err, size_t errlen);
/* A process's start time (clock ticks since boot), telling apart a live
 * process that reused a dead one's id; -1 when unknown. */
int64_t store_process_start(pid_t pid);

/* ---- percentile.c ---- */
typedef struct store_dvec {
    double *v;
    size_t n, cap;
} store_dvec;

int store_dvec_push(store_dvec *d, double x);
/* Count, nearest-rank p50/p90/p99 and max of d's values (reordered). */
void store_dist_of(store_dvec *d, store_dist *out);

/* ---- stepstats.c ---- */
/* The step groups of a run's summary (by leg, node, phase): from the
 * stored aggregates when they cover the run's last step, else computed
 * from the steps and, for a run no longer running, stored. */
int store_step_stats(sqlite3 *db, int64_t run, store_step_group **groups, size_t *n, char *err,
                     size_t errlen);

/* ---- query.c ---- */
/* 0 exists, 1 not, -1 error; caller holds db_lock. */
int store_run_exists(store *s, int64_t run, char *err, size_t errlen);
int store_summary_locked(store *s, int64_t run, store_summary *out, char *err, size_t errlen);

#endif
