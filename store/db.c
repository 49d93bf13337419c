/* db.c: the sqlite helpers every file of the store uses: errors, statements,
 * bindings. The bottom of the store: it calls no other file of it. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

double store_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void store_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void store_dberr(char *err, size_t errlen, sqlite3 *db, const char *what)
{
    store_errf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

int store_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        store_errf(err, errlen, "%s (in: %.60s)", msg ? msg : sqlite3_errmsg(db), sql);
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
        store_errf(err, errlen, "preparing \"%.60s\": %s", sql, sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

void store_bind_measure(sqlite3_stmt *st, int i, double v)
{
    if (v < 0)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

void store_bind_finite(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v))
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

double store_col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int store_stmt_run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

char *store_col_strdup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}
