/* steplog.c: see steplog.h. */
#include "steplog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct steplog {
    FILE *f;
};

int steplog_open(steplog **out, const char *path, char *err, size_t errlen)
{
    steplog *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->f = fopen(path, "a");
    if (!l->f) {
        snprintf(err, errlen, "--log %s: %s", path, strerror(errno));
        free(l);
        return -1;
    }
    /* Line buffered: `tail -f` over SSH sees each step as it ends. */
    setvbuf(l->f, NULL, _IOLBF, 0);
    *out = l;
    return 0;
}

void steplog_close(steplog *l)
{
    if (!l)
        return;
    fclose(l->f);
    free(l);
}

static void steplog_stamp(steplog *l)
{
    struct timespec ts;
    struct tm tm;
    char buf[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(l->f, "%s.%03ld ", buf, ts.tv_nsec / 1000000);
}

/* Bytes in the largest binary unit that keeps the number at or above 1. */
static void steplog_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f%s" : "%.0f%s", v, units[u]);
}

void steplog_step(steplog *l, const proto_step *s)
{
    if (!l)
        return;
    char kv[32];
    steplog_bytes(kv, sizeof kv, s->kv_bytes);
    steplog_stamp(l);
    fprintf(l->f,
            "[STEP %lld] req=%s phase=%s tokens=%d pos=%d model=%.1fms eval=%.1fms wait=%.1fms "
            "step=%.1fms kv=%s kv_bits=%d prefill_step=%d act_max=%.3g "
            "nonfinite=%lld\n",
            (long long)s->step, s->req, s->phase == PROTO_PHASE_DECODE ? "decode" : "prefill",
            s->tokens, s->pos, s->model_ms, s->eval_ms, s->wait_ms, s->step_ms, kv, s->kv_bits,
            s->prefill_step, s->act_max, (long long)s->nonfinite);
}

void steplog_line(steplog *l, const char *tag, const char *fmt, ...)
{
    if (!l)
        return;
    steplog_stamp(l);
    fprintf(l->f, "[%s] ", tag);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(l->f, fmt, ap);
    va_end(ap);
    fputc('\n', l->f);
}
