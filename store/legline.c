/* legline.c: a leg's summary line as text. `infertop history` and the
 * console's History view both print these cells, so that they cannot
 * disagree on a run's numbers or on how a count is written. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store.h"

const char *const store_leg_heads[STORE_LEG_COLS] = {
    [STORE_LEG_IDX] = "LEG",         [STORE_LEG_KV] = "KV",
    [STORE_LEG_PREFILL] = "PREFILL", [STORE_LEG_CONC] = "CONC",
    [STORE_LEG_REQS] = "REQS",       [STORE_LEG_FAILED] = "FAILED",
    [STORE_LEG_MAX_CTX] = "MAX_CTX", [STORE_LEG_DECODE] = "DEC_TPS",
    [STORE_LEG_AGG] = "AGG_TPS",     [STORE_LEG_TTFT50] = "TTFT50",
    [STORE_LEG_TTFT95] = "TTFT95",
};

/* Two lines, each narrower than 80 columns. */
const char store_leg_legend[] =
    "KV kv_bits, PREFILL prefill_step, CONC concurrency; TTFT50/95: first token, ms\n"
    "DEC_TPS: a request's decode tok/s, p50; AGG_TPS: the leg's tokens / its time";

void store_fmt_num(double v, int decimals, char *buf, size_t len)
{
    if (!isfinite(v))
        snprintf(buf, len, "-");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%.*f", decimals, v);
}

void store_fmt_estimate(int topk, char *buf, size_t len)
{
    if (topk > 0)
        snprintf(buf, len, "top-k estimate (k=%d)", topk);
    else
        snprintf(buf, len, "%s", topk == 0 ? "full" : "-");
}

/* A distribution's p50 as text; "-" when it holds no value. */
static void fmt_p50(const store_dist *d, char *buf, size_t len)
{
    store_fmt_num(d->count > 0 ? d->p50 : NAN, 1, buf, len);
}

void store_leg_line_of(const store_leg_summary *l, store_leg_line *out)
{
    char(*c)[STORE_CELL_MAX] = out->cell;
    snprintf(c[STORE_LEG_IDX], STORE_CELL_MAX, "%d", l->idx);
    snprintf(c[STORE_LEG_KV], STORE_CELL_MAX, "%d", l->kv_bits);
    snprintf(c[STORE_LEG_PREFILL], STORE_CELL_MAX, "%d", l->prefill_step);
    snprintf(c[STORE_LEG_CONC], STORE_CELL_MAX, "%d", l->concurrency);
    snprintf(c[STORE_LEG_REQS], STORE_CELL_MAX, "%lld", (long long)l->requests);
    snprintf(c[STORE_LEG_FAILED], STORE_CELL_MAX, "%lld", (long long)l->failed);
    if (l->max_context >= 0)
        snprintf(c[STORE_LEG_MAX_CTX], STORE_CELL_MAX, "%lld", (long long)l->max_context);
    else
        snprintf(c[STORE_LEG_MAX_CTX], STORE_CELL_MAX, "-");
    fmt_p50(&l->decode_tps, c[STORE_LEG_DECODE], STORE_CELL_MAX);
    store_fmt_num(l->agg_tps, 1, c[STORE_LEG_AGG], STORE_CELL_MAX);
    fmt_p50(&l->ttft_ms, c[STORE_LEG_TTFT50], STORE_CELL_MAX);
    store_fmt_num(l->ttft_p95_ms, 1, c[STORE_LEG_TTFT95], STORE_CELL_MAX);
}

static void fmt_ratio(double a, double b, char *buf)
{
    if (isfinite(a) && isfinite(b) && a != 0)
        snprintf(buf, STORE_CELL_MAX, "%.2f", b / a);
    else
        snprintf(buf, STORE_CELL_MAX, "-");
}

void store_leg_ratio_of(const store_leg_summary *a, const store_leg_summary *b, store_leg_line *out)
{
    memset(out, 0, sizeof *out);
    char(*c)[STORE_CELL_MAX] = out->cell;
    fmt_ratio(a->decode_tps.count ? a->decode_tps.p50 : NAN,
              b->decode_tps.count ? b->decode_tps.p50 : NAN, c[STORE_LEG_DECODE]);
    fmt_ratio(a->agg_tps, b->agg_tps, c[STORE_LEG_AGG]);
    fmt_ratio(a->ttft_ms.count ? a->ttft_ms.p50 : NAN, b->ttft_ms.count ? b->ttft_ms.p50 : NAN,
              c[STORE_LEG_TTFT50]);
    fmt_ratio(a->ttft_p95_ms, b->ttft_p95_ms, c[STORE_LEG_TTFT95]);
}
