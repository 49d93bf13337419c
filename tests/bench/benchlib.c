/* benchlib.c: the result table and JSON file of one bench part.
 *
 * Rows live in a jansson array from the start, so the table printed and the
 * file written are the same figures by construction.
 */
#include "benchlib.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/compute/blas.h"

struct bench {
    char *part;
    json_t *rows;
    int lost; /* rows dropped because jansson could not allocate */
};

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bench *bench_open(const char *part)
{
    bench *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->part = strdup(part);
    b->rows = json_array();
    if (!b->part || !b->rows) {
        free(b->part);
        json_decref(b->rows);
        free(b);
        return NULL;
    }
    return b;
}

void bench_add(bench *b, const char *name, double value, const char *unit, const char *target,
               int pass)
{
    if (!b)
        return;
    /* JSON has no NaN or infinity: a figure that could not be computed
     * (a zero time, say) is stored as null and shown as n/a. */
    json_t *row = json_pack("{s:s, s:o, s:s, s:s?, s:o}", "name", name, "value",
                            isfinite(value) ? json_real(value) : json_null(), "unit",
                            unit ? unit : "", "target", target,
                            "pass", pass < 0 ? json_null() : json_boolean(pass));
    if (!row || json_array_append_new(b->rows, row) != 0)
        b->lost++;
}

/* Enough digits to read the figure, no more: 173.2, 0.3125, 251234, 0. */
static void format_value(const json_t *value, char *buf, size_t len)
{
    if (!json_is_real(value)) {
        snprintf(buf, len, "n/a");
        return;
    }
    double v = json_real_value(value), a = fabs(v);
    const char *fmt = a >= 1000 || v == 0 ? "%.0f" : a >= 100 ? "%.1f" : a >= 1 ? "%.2f" : "%.4f";
    snprintf(buf, len, fmt, v);
}

static void print_table(const bench *b)
{
    int wname = 4, wvalue = 5, wunit = 4, wtarget = 6;
    size_t i;
    json_t *row;
    char value[32];

    json_array_foreach(b->rows, i, row) {
        int n = (int)strlen(json_string_value(json_object_get(row, "name")));
        int u = (int)strlen(json_string_value(json_object_get(row, "unit")));
        const char *t = json_string_value(json_object_get(row, "target"));
        format_value(json_object_get(row, "value"), value, sizeof value);
        wname = n > wname ? n : wname;
        wunit = u > wunit ? u : wunit;
        wvalue = (int)strlen(value) > wvalue ? (int)strlen(value) : wvalue;
        if (t && (int)strlen(t) > wtarget)
            wtarget = (int)strlen(t);
    }
    printf("%-*s  %*s  %-*s  %-*s  %s\n", wname, "name", wvalue, "value", wunit, "unit", wtarget,
           "target", "result");
    json_array_foreach(b->rows, i, row) {
        json_t *pass = json_object_get(row, "pass");
        const char *t = json_string_value(json_object_get(row, "target"));
        format_value(json_object_get(row, "value"), value, sizeof value);
        printf("%-*s  %*s  %-*s  %-*s  %s\n", wname,
               json_string_value(json_object_get(row, "name")), wvalue, value, wunit,
               json_string_value(json_object_get(row, "unit")), wtarget, t ? t : "-",
               json_is_null(pass) ? "-" : json_is_true(pass) ? "PASS" : "MISS");
    }
}

/* The "model name" line of /proc/cpuinfo, or "unknown". */
static void cpu_model(char *buf, size_t len)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, len, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, len, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

static json_t *machine_info(void)
{
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    /* OPENBLAS_CORETYPE: set by the user, or by blas_select_core's re-exec. */
    return json_pack("{s:s, s:i, s:s, s:s?}", "cpu", cpu, "cores",
                     (int)sysconf(_SC_NPROCESSORS_ONLN), "openblas_core", blas_core(),
                     "openblas_coretype_env", getenv("OPENBLAS_CORETYPE"));
}

/* mkdir -p: BENCH_DIR may name a directory several levels down. */
static int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

const char *bench_dir(void)
{
    const char *dir = getenv("BENCH_DIR");
    if (!dir || !*dir)
        dir = "build/bench";
    if (make_dirs(dir) != 0) {
        fprintf(stderr, "bench: cannot create directory %s: %s\n", dir, strerror(errno));
        return NULL;
    }
    return dir;
}

static int write_json(const bench *b)
{
    const char *dir = bench_dir();
    char path[4096], stamp[32];
    time_t now = time(NULL);
    struct tm tm;

    if (!dir)
        return -1;
    snprintf(path, sizeof path, "%s/%s.json", dir, b->part);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    json_t *doc = json_pack("{s:s, s:s, s:o, s:O}", "part", b->part, "timestamp", stamp, "machine",
                            machine_info(), "rows", b->rows);
    if (!doc || json_dump_file(doc, path, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) != 0) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        json_decref(doc);
        return -1;
    }
    json_decref(doc);
    printf("results: %s\n", path);
    return 0;
}

int bench_close(bench *b)
{
    if (!b) {
        fprintf(stderr, "bench: out of memory, no results kept\n");
        return -1;
    }
    int rc = 0;
    print_table(b);
    if (b->lost) {
        fprintf(stderr, "bench %s: %d rows lost (out of memory)\n", b->part, b->lost);
        rc = -1;
    }
    if (write_json(b) != 0)
        rc = -1;
    json_decref(b->rows);
    free(b->part);
    free(b);
    return rc;
}
