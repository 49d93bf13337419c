/* test_writer.c: the writer thread and its queue. Readers run queries
 * while it writes (no SQLITE_BUSY surfaces); a full queue drops rows and
 * counts them in the run; rows that cannot be written are refused; a disk
 * that fills up is told without waiting. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fixture.h"

typedef struct reader {
    const char *path;
    int64_t run;
    atomic_int stop;
    int queries, failures;
    char err[512];
} reader;

static int count_rows(void *ctx, int ncol, const char *const *names, const store_cell *cells)
{
    (void)ncol;
    (void)names;
    if (cells)
        ++*(int *)ctx;
    return 0;
}

static void *read_loop(void *arg)
{
    reader *r = arg;
    store *s = store_open(r->path, NULL, r->err, sizeof r->err);
    if (!s) {
        r->failures++;
        return NULL;
    }
    while (!atomic_load(&r->stop)) {
        store_run_list l;
        store_summary sum;
        store_run_filter all = {0};
        int rows = 0;
        if (store_runs_list(s, &all, &l, r->err, sizeof r->err) != 0)
            r->failures++;
        else
            store_run_list_free(&l);
        if (store_run_summary(s, r->run, &sum, r->err, sizeof r->err) != 0)
            r->failures++;
        else
            store_summary_free(&sum);
        if (store_export_each(s, r->run, STORE_EXPORT_REQUESTS, count_rows, &rows, r->err,
                              sizeof r->err) != 0)
            r->failures++;
        r->queries += 3;
    }
    store_close(s);
    return NULL;
}

Test(store_writer, readers_and_writer_run_together)
{
    fx f;
    fx_open(&f);
    int64_t run = fx_run(f.s, STORE_MODE_SOAK, "busy", "m1");
    store_leg_start(f.s, run, 0,
                    &(store_leg_info){.kv_bits = 16, .prefill_step = 512, .concurrency = 1});
    reader r = {.path = f.path, .run = run};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, read_loop, &r), 0);
    enum { ROWS = 40000 };
    store_stats st;
    for (int k = 0; k < ROWS; k++) {
        /* pace on the queue: this test is about locking, not dropping */
        do
            store_stats_get(f.s, &st);
        while (st.pending + 2 >= st.capacity && usleep(100) == 0);
        fx_step(f.s, run, 0, k / 100, k % 2 ? "n1" : "n2", STORE_PHASE_DECODE, k % 50, 7, 20, k);
        if (k % 100 == 99)
            fx_request(f.s, run, 0, k / 100, k - 99, k + 1, 1, 10, 5, 50);
    }
    char err[512];
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    while (r.queries < 30)
        usleep(1000);
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    cr_assert_eq(r.failures, 0, "a query failed: %s", r.err);
    store_stats_get(f.s, &st);
    cr_assert_eq(st.dropped, 0);
    cr_assert_eq(st.written, st.queued);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld", (long long)run);
    cr_assert_eq(fx_int(f.path, sql), ROWS);
    fx_close(&f);
}

Test(store_writer, a_full_queue_drops_and_counts)
{
    fx f;
    fx_open(&f);
    store_close(f.s);
    char err[512];
    store_options opt = {.queue_capacity = 64, .busy_timeout_ms = 20000};
    f.s = store_open(f.path, &opt, err, sizeof err);
    cr_assert_not_null(f.s, "%s", err);
    int64_t run = fx_run(f.s, STORE_MODE_SOAK, "flood", "m1");
    store_leg_start(f.s, run, 0,
                    &(store_leg_info){.kv_bits = 16, .prefill_step = 512, .concurrency = 1});
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);

    /* Another writer holds the write lock: the writer thread waits, the
     * queue fills, the rest is dropped. */
    sqlite3 *blocker;
    cr_assert_eq(sqlite3_open(f.path, &blocker), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    enum { ROWS = 1000 };
    int refused = 0;
    for (int k = 0; k < ROWS; k++) {
        store_step st = {.run = run,
                         .node = "n1",
                         .phase = STORE_PHASE_DECODE,
                         .pos = k,
                         .tokens = 1,
                         .step_ms = 1};
        refused += store_step_add(f.s, &st) != 0;
    }
    cr_assert_eq(sqlite3_exec(blocker, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(blocker);
    store_run_end(f.s, run, STORE_COMPLETED, NULL);
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);

    cr_assert_geq(refused, ROWS - 2 * 64, "refused %d", refused);
    store_stats st;
    store_stats_get(f.s, &st);
    cr_assert_eq(st.dropped, (uint64_t)refused);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld", (long long)run);
    cr_assert_eq(fx_int(f.path, sql), ROWS - refused);
    store_run r;
    cr_assert_eq(store_run_get(f.s, run, &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r.dropped_rows, refused);
    cr_assert_str_eq(r.status, "completed", "control rows use the reserve");
    store_run_free(&r);
    fx_close(&f);
}

Test(store_writer, unwritable_rows_are_refused)
{
    fx f;
    fx_open(&f);
    int64_t run = fx_run(f.s, STORE_MODE_FIXED, "refusals", "m1");
    store_step unknown = {.run = run + 100, .node = "n1", .phase = STORE_PHASE_DECODE};
    cr_assert_eq(store_step_add(f.s, &unknown), -1);
    /* A step outside any run (run 0) has no step sequence to join. */
    store_step runless = {.run = 0, .node = "n1", .phase = STORE_PHASE_DECODE};
    cr_assert_eq(store_step_add(f.s, &runless), -1);
    char longname[STORE_NODE_MAX + 1];
    memset(longname, 'x', STORE_NODE_MAX);
    longname[STORE_NODE_MAX] = '\0';
    store_step toolong = {.run = run, .node = longname, .phase = STORE_PHASE_DECODE};
    cr_assert_eq(store_step_add(f.s, &toolong), -1);
    store_event bad = {.run = run, .kind = "note", .detail = "{not json"};
    cr_assert_eq(store_event_add(f.s, &bad), -1);
    store_event cluster = {.node = "n2", .kind = "node_down", .detail = "{\"why\":\"oom\"}"};
    cr_assert_eq(store_event_add(f.s, &cluster), 0);
    store_event note = {.run = run, .kind = "note", .detail = NULL};
    cr_assert_eq(store_event_add(f.s, &note), 0);
    cr_assert_eq(store_run_end(f.s, run, STORE_RUNNING, NULL), -1, "a run cannot end running");
    cr_assert_eq(store_run_end(f.s, run, STORE_COMPLETED, NULL), 0);
    store_step late = {.run = run, .node = "n1", .phase = STORE_PHASE_DECODE};
    cr_assert_eq(store_step_add(f.s, &late), -1, "the run has ended");
    char err[512];
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM events WHERE run IS NULL AND"
                                " kind = 'node_down' AND detail ->> 'why' = 'oom'"),
                 1);
    cr_assert_eq(fx_int(f.path, "SELECT count(*) FROM events WHERE detail = '{}'"), 1);
    store_run r;
    cr_assert_eq(store_run_get(f.s, run, &r, err, sizeof err), 0, "%s", err);
    /* toolong, bad event, the running end: refused while the run was active */
    cr_assert_eq(r.dropped_rows, 3);
    store_run_free(&r);
    store_run_info bad_info = {.mode = STORE_MODE_FIXED, .params = "[1,2]"};
    int64_t id;
    cr_assert_eq(store_run_begin(f.s, &bad_info, &id, err, sizeof err), -1);
    cr_assert(strstr(err, "params"), "%s", err);
    fx_close(&f);
}

/* A full disk (here a file size limit; Criterion runs each test in a
 * process of its own) shows in store_write_error as soon as the writer
 * fails, without waiting for a flush, and the flush then reports it. */
Test(store_writer, a_full_disk_is_told_at_once)
{
    fx f;
    fx_open(&f);
    int64_t run = fx_run(f.s, STORE_MODE_SOAK, "full", "m1");
    char err[512] = "";
    cr_assert_eq(store_flush(f.s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_write_error(f.s, err, sizeof err), 0);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 256 << 10, .rlim_max = RLIM_INFINITY};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int told = 0;
    for (int64_t i = 0; i < 200000 && !told; i++) {
        fx_step(f.s, run, 0, i / 8, "n1", STORE_PHASE_DECODE, 1.0, 0.5, 0.5, i);
        if (i % 1000 == 999) {
            usleep(20000);
            told = store_write_error(f.s, err, sizeof err);
        }
    }
    cr_assert(told, "no write error after 200000 rows under a 256 KiB file limit");
    cr_assert(strstr(err, f.path), "the message names the database: %s", err);
    char again[512];
    cr_assert_eq(store_flush(f.s, again, sizeof again), -1);
    fx_close(&f);
}
