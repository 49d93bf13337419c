/* bench_store.c: the store's bars. Step rows per second sustained through
 * the writer thread, and the time of a run summary over 1M step rows.
 * The producer paces itself on the queue depth so that no row is dropped:
 * the figure is the writer's throughput, not the producer's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"
#include "store/store.h"

#define INSERT_ROWS 2000000
#define SUMMARY_ROWS 1000000
#define NODES 4

static int remove_db(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

/* Writes `rows` decode/prefill steps spread over NODES nodes and two legs;
 * returns the seconds from the first add to the end of the flush. */
static double fill(store *s, int64_t run, long rows)
{
    static const char *const nodes[NODES] = {"node1", "node2", "node3", "node4"};
    store_stats st;
    store_leg_start(s, run, 0,
                    &(store_leg_info){.kv_bits = 16, .prefill_step = 512, .concurrency = 1});
    store_leg_start(s, run, 1,
                    &(store_leg_info){.kv_bits = 4, .prefill_step = 512, .concurrency = 1});
    double t0 = bench_now();
    for (long i = 0; i < rows; i++) {
        store_step step = {
            .run = run,
            .leg = i < rows / 2 ? 0 : 1,
            .req = i / 1000,
            .node = nodes[i % NODES],
            .step = i / NODES,
            .phase = i % 50 == 0 ? STORE_PHASE_PREFILL : STORE_PHASE_DECODE,
            .tokens = 1,
            .pos = i / NODES,
            .step_ms = 30 + (double)((i * 7919) % 1000) / 100,
            .model_ms = 7 + (double)((i * 104729) % 300) / 100,
            .eval_ms = 23 + (double)((i * 1299709) % 700) / 100,
            .wait_ms = 0.5,
            .kv_bytes = 1 << 20,
            .kv_bits = 16,
            .prefill_step = 512,
            .rss = 1L << 30,
            .headroom = 8L << 30,
            .t = 1.7e9 + i * 0.001,
        };
        while (i % 1024 == 0) {
            store_stats_get(s, &st);
            if (st.pending + 1024 < st.capacity)
                break;
            usleep(200);
        }
        store_step_add(s, &step);
    }
    store_flush(s, NULL, 0);
    return bench_now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of 5 summaries in ms; -1 on error. */
static double time_summary(store *s, int64_t run, char *err, size_t errlen)
{
    double t[5];
    for (int i = 0; i < 5; i++) {
        store_summary sum;
        double t0 = bench_now();
        if (store_run_summary(s, run, &sum, err, errlen) != 0)
            return -1;
        t[i] = (bench_now() - t0) * 1e3;
        store_summary_free(&sum);
    }
    qsort(t, 5, sizeof t[0], cmp_double);
    return t[2];
}

int main(void)
{
    char dir[] = "/tmp/infertop-bench-store-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/history.db", dir);
    bench *b = bench_open("store");
    store *s = store_open(path, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "bench_store: %s\n", err);
        remove_db(dir);
        return 1;
    }
    store_run_info info = {.name = "bench",
                           .mode = STORE_MODE_SOAK,
                           .cluster = "{\"model\":\"bench\",\"name\":\"lab\"}"};
    int64_t run;
    int rc = 1;
    if (store_run_begin(s, &info, &run, err, sizeof err) == 0) {
        double secs = fill(s, run, INSERT_ROWS);
        store_stats st;
        store_stats_get(s, &st);
        double rate = (double)st.written / secs;
        bench_add(b, "step rows inserted through the writer", rate, "rows/s", ">= 250000",
                  rate >= 250000);
        bench_add(b, "step rows dropped while pacing", (double)st.dropped, "rows", NULL, -1);
        store_run_end(s, run, STORE_COMPLETED, NULL);

        /* A running run's summary reads every step; an ended one reads the
         * aggregates the writer stored at its end. Both are shown; the bar
         * is what `infertop history show` costs on a finished run. */
        int64_t run2;
        store_run_begin(s, &info, &run2, err, sizeof err);
        fill(s, run2, SUMMARY_ROWS);
        double cold = time_summary(s, run2, err, sizeof err);
        store_run_end(s, run2, STORE_COMPLETED, NULL);
        store_flush(s, NULL, 0);
        double warm = cold >= 0 ? time_summary(s, run2, err, sizeof err) : -1;
        rc = cold < 0 || warm < 0;
        if (rc == 0) {
            bench_add(b, "run summary, 1M steps, computed from the rows", cold, "ms", NULL, -1);
            bench_add(b, "run summary, 1M steps, finished run", warm, "ms", "< 200", warm < 200);
        } else {
            fprintf(stderr, "bench_store: %s\n", err);
        }
    } else {
        fprintf(stderr, "bench_store: %s\n", err);
    }
    store_close(s);
    remove_db(dir);
    return bench_close(b) != 0 || rc != 0;
}
