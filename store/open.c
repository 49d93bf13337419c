/* open.c: opening the history database: where it lives, the connection
 * settings, and the order of checks that keeps a newer database untouched;
 * then the migrations, the recovery of runs a dead process left running,
 * and the writer thread. The top of the store: it calls every other file
 * of it, none calls it. */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"

int store_default_path(char *buf, size_t len, char *err, size_t errlen)
{
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    int n;
    /* The XDG spec says a relative XDG_DATA_HOME is invalid and ignored. */
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, len, "%s/infertop/history.db", xdg);
    else if (home && home[0])
        n = snprintf(buf, len, "%s/.local/share/infertop/history.db", home);
    else {
        store_errf(err, errlen,
                   "no history database path: neither XDG_DATA_HOME nor HOME is set"
                   " (pass --db PATH)");
        return -1;
    }
    if (n < 0 || (size_t)n >= len) {
        store_errf(err, errlen, "history database path is longer than %zu bytes", len);
        return -1;
    }
    return 0;
}

/* mkdir -p of the directory holding path. */
static int make_parent_dirs(const char *path, char *err, size_t errlen)
{
    char *dir = strdup(path);
    if (!dir) {
        store_errf(err, errlen, "out of memory");
        return -1;
    }
    char *d = dirname(dir);
    for (char *p = d + 1;; p++) {
        int end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(d, 0755) != 0 && errno != EEXIST) {
                store_errf(err, errlen, "cannot create directory %s: %s", d, strerror(errno));
                free(dir);
                return -1;
            }
            if (end)
                break;
            *p = '/';
        }
    }
    free(dir);
    return 0;
}

/* SQLite's "unable to open database file" does not say why; the directory
 * is the usual reason, so name it. */
static int check_creatable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            store_errf(err, errlen, "cannot open database %s: it is a directory", path);
            return -1;
        }
        return 0;
    }
    char *copy = strdup(path);
    if (!copy) {
        store_errf(err, errlen, "out of memory");
        return -1;
    }
    const char *dir = dirname(copy);
    int rc = 0;
    if (stat(dir, &st) != 0) {
        store_errf(err, errlen, "cannot create database %s: directory %s: %s", path, dir,
                   strerror(errno));
        rc = -1;
    } else if (!S_ISDIR(st.st_mode)) {
        store_errf(err, errlen, "cannot create database %s: %s is not a directory", path, dir);
        rc = -1;
    } else if (access(dir, W_OK) != 0) {
        store_errf(err, errlen, "cannot create database %s: directory %s is not writable", path,
                   dir);
        rc = -1;
    }
    free(copy);
    return rc;
}

/* Opens one connection. The schema version is read before any pragma that
 * writes (journal_mode=WAL rewrites the file header), so a database from a
 * newer infertop is refused byte-for-byte untouched. */
static int open_connection(const char *path, int busy_ms, int foreign_keys, sqlite3 **out,
                           char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    /* NOMUTEX: each connection is used by one thread at a time (the writer's
     * by its thread, the query one under db_lock); sqlite's own per-call
     * locking would cost a third of a summary. */
    int rc = sqlite3_open_v2(
        path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        store_errf(err, errlen, "cannot open database %s: %s", path,
                   db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, busy_ms);
    int version;
    char why[256];
    if (store_schema_version(db, &version, why, sizeof why) != 0) {
        store_errf(err, errlen, "cannot open database %s: %s", path, why);
        goto fail;
    }
    if (version > STORE_SCHEMA_VERSION) {
        store_errf(err, errlen,
                   "database %s has schema version %d, newer than this infertop supports (%d);"
                   " refusing to use it (upgrade infertop)",
                   path, version, STORE_SCHEMA_VERSION);
        goto fail;
    }
    if (sqlite3_db_readonly(db, "main") == 1) {
        store_errf(err, errlen, "database %s is not writable", path);
        goto fail;
    }
    /* WAL: readers never block the writer thread nor the other way round.
     * synchronous=NORMAL: a commit survives a process crash (the stated
     * guarantee); only a power loss may roll back the last commits. */
    sqlite3_stmt *st = NULL;
    if (store_prepare(db, "PRAGMA journal_mode=WAL", &st, why, sizeof why) != 0) {
        store_errf(err, errlen, "database %s: %s", path, why);
        goto fail;
    }
    rc = sqlite3_step(st);
    const char *mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!mode || strcmp(mode, "wal") != 0) {
        store_errf(err, errlen, "database %s: cannot switch to WAL mode: %s", path,
                   mode ? mode : sqlite3_errmsg(db));
        sqlite3_finalize(st);
        goto fail;
    }
    sqlite3_finalize(st);
    if (store_exec(db,
                   "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;"
                   " PRAGMA temp_store=MEMORY;",
                   why, sizeof why) != 0 ||
        store_exec(db, foreign_keys ? "PRAGMA foreign_keys=ON" : "PRAGMA foreign_keys=OFF", why,
                   sizeof why) != 0) {
        store_errf(err, errlen, "database %s: %s", path, why);
        goto fail;
    }
    *out = db;
    return 0;
fail:
    sqlite3_close(db);
    return -1;
}

store *store_open(const char *path, const store_options *opt, char *err, size_t errlen)
{
    char defpath[4096];
    if (!path) {
        if (store_default_path(defpath, sizeof defpath, err, errlen) != 0 ||
            make_parent_dirs(defpath, err, errlen) != 0)
            return NULL;
        path = defpath;
    }
    if (check_creatable(path, err, errlen) != 0)
        return NULL;

    store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        store_errf(err, errlen, "out of memory");
        return NULL;
    }
    s->reserve_fd = -1;
    pthread_mutex_init(&s->db_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->nonempty, NULL);
    pthread_cond_init(&s->drained, NULL);
    s->capacity = opt && opt->queue_capacity ? opt->queue_capacity : 65536;
    int busy = opt && opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : 5000;

    char why[512];
    if (open_connection(path, busy, 1, &s->db, err, errlen) != 0)
        goto fail;
    if (store_migrate(s->db, STORE_SCHEMA_VERSION, why, sizeof why) != 0) {
        store_errf(err, errlen, "database %s: %s", path, why);
        goto fail;
    }
    if (store_recover(s, why, sizeof why) != 0) {
        store_errf(err, errlen, "database %s: %s", path, why);
        goto fail;
    }
    /* The writer checks no foreign keys: it only writes rows of runs this
     * handle began (store_queue_push refuses the others), and the check
     * would halve its insert rate. Deletes, which cascade, happen on the
     * query connection, where foreign keys are on. */
    if (open_connection(path, busy, 0, &s->wdb, err, errlen) != 0)
        goto fail;
    if (store_writer_start(s, why, sizeof why) != 0) {
        store_errf(err, errlen, "database %s: %s", path, why);
        goto fail;
    }
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (!s)
        return;
    store_writer_stop(s);
    store_wstmts_finalize(&s->ws);
    sqlite3_close(s->wdb);
    sqlite3_close(s->db);
    while (s->active) {
        store_active *next = s->active->next;
        free(s->active);
        s->active = next;
    }
    free(s->ring);
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
    pthread_mutex_destroy(&s->db_lock);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->nonempty);
    pthread_cond_destroy(&s->drained);
    free(s->path);
    free(s);
}
