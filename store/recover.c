/* recover.c: runs a dead process left `running` are marked aborted when
 * the next process opens the database. A run records its process id and
 * start time, so a live process that reused the id is told apart. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "store_int.h"

typedef struct dead_run {
    int64_t id, pid;
} dead_run;

/* Field 22 of /proc/PID/stat (clock ticks after boot); -1 when unknown. */
int64_t store_process_start(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parens: skip past the
     * last ')' and count the fields after it (state is field 3). */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        if (field == 22)
            return strtoll(p, NULL, 10);
        while (*p && *p != ' ')
            p++;
    }
    return -1;
}

static int process_alive(int64_t pid, int64_t start)
{
    if (pid <= 0)
        return 0;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 0;
    int64_t now = store_process_start((pid_t)pid);
    /* Without /proc, kill() is all there is to go on. */
    return now < 0 || start < 0 || now == start;
}

static int abort_run(store *s, int64_t run, int64_t pid, char *err, size_t errlen)
{
    char failure[128];
    snprintf(failure, sizeof failure,
             "aborted: process %lld died while the run was going (found on reopen)",
             (long long)pid);
    /* ended: the time of the last row committed, the best we know. */
    static const char *const sql[] = {
        "UPDATE legs SET status = 'aborted', max_context = " LEG_OK_CONTEXT ","
        " agg_tps = " LEG_AGG_TPS ","
        " ended = (SELECT max(t) FROM requests q WHERE q.run = ?1 AND q.leg = legs.idx)"
        " WHERE run = ?1 AND status = 'running'",
        "UPDATE runs SET status = 'aborted', failure = ?2, max_context = " RUN_OK_CONTEXT ","
        " ended = max(started, coalesce((SELECT t FROM steps WHERE run = ?1"
        " ORDER BY seq DESC LIMIT 1), started),"
        " coalesce((SELECT max(t) FROM requests WHERE run = ?1), started))"
        " WHERE id = ?1 AND status = 'running'",
    };
    for (size_t i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        if (store_prepare(s->db, sql[i], &st, err, errlen) != 0)
            return -1;
        sqlite3_bind_int64(st, 1, run);
        if (i == 1)
            sqlite3_bind_text(st, 2, failure, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            store_dberr(err, errlen, s->db, "marking a dead run aborted");
            return -1;
        }
    }
    return 0;
}

int store_recover(store *s, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (store_prepare(s->db,
                      "SELECT id, owner_pid, coalesce(owner_start, -1) FROM runs"
                      " WHERE status = 'running'",
                      &st, err, errlen) != 0)
        return -1;
    dead_run *dead = NULL;
    size_t n = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(st, 1);
        if (process_alive(pid, sqlite3_column_int64(st, 2)))
            continue;
        dead_run *grown = realloc(dead, (n + 1) * sizeof *grown);
        if (!grown) {
            rc = SQLITE_NOMEM;
            break;
        }
        dead = grown;
        dead[n++] = (dead_run){sqlite3_column_int64(st, 0), pid};
    }
    sqlite3_finalize(st);
    int ret = 0;
    if (rc != SQLITE_DONE) {
        store_errf(err, errlen, "looking for interrupted runs: %s",
                   rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(s->db));
        ret = -1;
    }
    if (ret == 0 && n > 0) {
        ret = store_exec(s->db, "BEGIN IMMEDIATE", err, errlen);
        for (size_t i = 0; ret == 0 && i < n; i++)
            ret = abort_run(s, dead[i].id, dead[i].pid, err, errlen);
        if (ret == 0)
            ret = store_exec(s->db, "COMMIT", err, errlen);
        else
            store_exec(s->db, "ROLLBACK", NULL, 0);
    }
    free(dead);
    return ret;
}
