/* test_crash.c: a process killed with SIGKILL in the middle of a run. The
 * next open marks the run aborted and every row committed before the kill
 * is there. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

enum { COMMITTED_STEPS = 300 };

/* The child: records a run, flushes, says so, then keeps writing until
 * it is killed. Never returns. */
static void child(const char *path, int fd)
{
    char err[512];
    store *s = store_open(path, NULL, err, sizeof err);
    if (!s)
        _exit(1);
    int64_t run = fx_run(s, STORE_MODE_GROWTH, "killed", "m1");
    store_leg_start(s, run, 0,
                    &(store_leg_info){.kv_bits = 4, .prefill_step = 256, .concurrency = 1});
    for (int i = 0; i < 3; i++)
        fx_request(s, run, 0, i, 1000 * i, 1000 * (i + 1), 1, 10, 5, 50);
    for (int k = 0; k < COMMITTED_STEPS; k++)
        fx_step(s, run, 0, 3, "n1", STORE_PHASE_DECODE, 30, 7, 23, k);
    if (store_flush(s, err, sizeof err) != 0)
        _exit(1);
    if (write(fd, &run, sizeof run) != sizeof run)
        _exit(1);
    for (int64_t k = COMMITTED_STEPS;; k++) {
        store_step st = {.run = run,
                         .req = 3,
                         .node = "n1",
                         .phase = STORE_PHASE_DECODE,
                         .tokens = 1,
                         .pos = k + 1,
                         .step_ms = 30,
                         .model_ms = 7,
                         .eval_ms = 23};
        store_step_add(s, &st);
        if (k % 64 == 0)
            usleep(100);
    }
}

Test(store_crash, killed_run_is_aborted_and_committed_rows_survive)
{
    fx f;
    fx_open(&f);
    store_close(f.s); /* the child opens its own; no connection crosses fork */
    f.s = NULL;
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        close(fds[0]);
        child(f.path, fds[1]);
    }
    close(fds[1]);
    int64_t run = 0;
    cr_assert_eq(read(fds[0], &run, sizeof run), (ssize_t)sizeof run, "the child failed");
    close(fds[0]);
    usleep(50 * 1000); /* let it commit a few batches more */
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    char err[512];
    f.s = store_open(f.path, NULL, err, sizeof err);
    cr_assert_not_null(f.s, "%s", err);
    store_run r;
    cr_assert_eq(store_run_get(f.s, run, &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.status, "aborted");
    cr_assert(r.failure && strstr(r.failure, "died"), "%s", r.failure ? r.failure : "(null)");
    cr_assert_eq(r.max_context, 3000);
    cr_assert_geq(r.last_context, COMMITTED_STEPS);
    cr_assert_eq(r.n_requests, 3);
    cr_assert_gt(r.ended, 0);
    store_run_free(&r);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM steps WHERE run = %lld AND seq < %d",
             (long long)run, COMMITTED_STEPS);
    cr_assert_eq(fx_int(f.path, sql), COMMITTED_STEPS);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM legs WHERE run = %lld AND status = 'aborted'",
             (long long)run);
    cr_assert_eq(fx_int(f.path, sql), 1);
    /* The summary of an aborted run works and sees the committed steps. */
    store_summary sum;
    cr_assert_eq(store_run_summary(f.s, run, &sum, err, sizeof err), 0, "%s", err);
    cr_assert_geq(sum.groups[0].step_ms.count, COMMITTED_STEPS);
    store_summary_free(&sum);
    fx_close(&f);
}

Test(store_crash, a_live_run_is_left_alone)
{
    fx f;
    fx_open(&f);
    int64_t run = fx_run(f.s, STORE_MODE_SOAK, "live", "m1");
    char err[512];
    store *other = store_open(f.path, NULL, err, sizeof err);
    cr_assert_not_null(other, "%s", err);
    store_run r;
    cr_assert_eq(store_run_get(other, run, &r, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(r.status, "running");
    store_run_free(&r);
    store_close(other);
    fx_close(&f);
}
