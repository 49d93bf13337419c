/* view_node.c: one node in detail: its facts and config, step timing by
 * phase over time, how busy it is and its batch size over time, memory and
 * KV over time, and its log over SSH (with a cluster file; remote.h) or
 * else its own events.
 *
 * An HTTP engine's node shows what its last poll found instead: the facts
 * its engine reports (the problem its poll met first), and in place of the
 * charts its latency percentiles (vLLM), loaded models (Ollama) and slots
 * and KV cache (llama.cpp). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "meter.h"
#include "tui/core/cluster.h"
#include "tui/core/desired.h"
#include "tui/ssh/remote.h"
#include "ui.h"
#include "view.h"

#define FACT_MAX 40
#define FACT_KEY_COLS 10
#define FACT_CELL_COLS 26 /* a fact's width when they are laid out in columns */

struct fact {
    const char *key;
    char value[160];
    enum palette_role role;
};

struct facts {
    struct fact f[FACT_MAX];
    int n;
};

static void fact(struct facts *fs, const char *key, enum palette_role role, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fact(struct facts *fs, const char *key, enum palette_role role, const char *fmt, ...)
{
    va_list ap;
    if (fs->n == FACT_MAX)
        return;
    struct fact *f = &fs->f[fs->n++];
    f->key = key;
    f->role = role;
    va_start(ap, fmt);
    vsnprintf(f->value, sizeof f->value, fmt, ap);
    va_end(ap);
}

static void fact_bytes(struct facts *fs, const char *key, uint64_t b)
{
    char buf[16];
    meter_fmt_bytes(b, buf, sizeof buf);
    fact(fs, key, PAL_TEXT, "%s", buf);
}

static const char *cfg_stage_word(enum state_cfg_stage s)
{
    switch (s) {
    case STATE_CFG_REQUESTED:
        return "pending (sent)";
    case STATE_CFG_ACKED:
        return "pending (acknowledged)";
    case STATE_CFG_CONFIRMED:
        return "confirmed";
    case STATE_CFG_FAILED:
        return "failed";
    case STATE_CFG_NONE:
        break;
    }
    return "";
}

/* What the node's host said over SSH (remote.h). */
static void host_facts(struct facts *fs, const struct remote *r, int node)
{
    const char *why;
    int failed;
    const nodectl_facts *f = remote_facts(r, node, &why, &failed);
    char total[16], avail[16];
    if (!f) {
        if (why[0])
            fact(fs, "host", failed ? PAL_ERROR : PAL_PENDING, "%s", why);
        return;
    }
    fact(fs, "cores", PAL_TEXT, "%d", f->cores);
    if (f->mem_total_kb >= 0) {
        meter_fmt_bytes((uint64_t)f->mem_total_kb * 1024, total, sizeof total);
        fact(fs, "MemTotal", PAL_TEXT, "%s (%lld kB)", total, f->mem_total_kb);
    }
    if (f->mem_available_kb >= 0) {
        meter_fmt_bytes((uint64_t)f->mem_available_kb * 1024, avail, sizeof avail);
        fact(fs, "MemAvail", PAL_TEXT, "%s (%lld kB)", avail, f->mem_available_kb);
    }
    if (f->load[0] >= 0)
        fact(fs, "load", PAL_TEXT, "%.2f %.2f %.2f", f->load[0], f->load[1], f->load[2]);
    if (f->os[0])
        fact(fs, "os", PAL_TEXT, "%s", f->os);
    if (f->kernel[0])
        fact(fs, "kernel", PAL_TEXT, "%s", f->kernel);
    if (f->inferd_path[0])
        fact(fs, "inferd", PAL_TEXT, "%s",
             f->inferd_version[0] ? f->inferd_version : f->inferd_path);
    else
        fact(fs, "inferd", PAL_DIM, "not on the PATH");
}

/* How a number is written: meter_fmt_num, view_fmt_count, ... */
typedef void (*num_fmt)(double v, char *buf, size_t len);

/* A number an engine reports, "-" when it does not, with a unit. */
static void fact_num(struct facts *fs, const char *key, num_fmt f, double val, const char *unit)
{
    char buf[16];
    f(val, buf, sizeof buf);
    fact(fs, key, isnan(val) ? PAL_DIM : PAL_TEXT, "%s%s", buf, isnan(val) ? "" : unit);
}

/* "3 / 12", "-" for each side not reported. */
static void fact_pair(struct facts *fs, const char *key, num_fmt f, double a, double b,
                      const char *what)
{
    char x[16], y[16];
    f(a, x, sizeof x);
    f(b, y, sizeof y);
    fact(fs, key, isnan(a) && isnan(b) ? PAL_DIM : PAL_TEXT, "%s / %s%s", x, y, what);
}

/* The facts of an HTTP engine's node: the problem first, then what every
 * engine may report, then what only some do. */
static void engine_facts(struct view_ctx *v, int node, const struct eng_view *e, struct facts *fs)
{
    struct view_state vs;
    char buf[64], alerts[128];
    view_node_state(v->st, node, v->now, &vs);
    fact(fs, "node", PAL_TEXT, "%s", state_node_name(v->st, node));
    fact(fs, "engine", PAL_TEXT, "%s%s%s", eng_name(e->kind), e->version[0] ? " " : "", e->version);
    fact(fs, "state", vs.role, "%s", vs.word);
    if (e->problem[0])
        fact(fs, "problem", PAL_ERROR, "%s", e->problem);
    view_node_alerts_text(v, node, 0, alerts, sizeof alerts);
    if (alerts[0])
        fact(fs, "alerts", PAL_ALERT, "%s", alerts);
    fact(fs, "model", e->model[0] ? PAL_TEXT : PAL_DIM, "%s", e->model[0] ? e->model : "-");
    fact_num(fs, "n_ctx", view_fmt_count, e->n_ctx, "");
    fact_pair(fs, "tok/s", meter_fmt_num, e->prompt_tps, e->decode_tps, " (prompt / decode)");
    fact_pair(fs, "requests", view_fmt_count, e->requests_running, e->requests_waiting,
              " (running / waiting)");
    if (isnan(e->kv_usage))
        fact(fs, "kv use", PAL_DIM, "-");
    else
        fact(fs, "kv use", PAL_TEXT, "%.0f%%", 100 * e->kv_usage);
    if (e->kind == ENG_LLAMACPP) {
        fact_pair(fs, "slots", view_fmt_count, e->slots_busy, e->slots_total, " (busy / total)");
        fact_num(fs, "batch", view_fmt_batch, e->batch, " busy slots per decode");
        fact_num(fs, "ms/token", meter_fmt_num, e->ms_per_token, " ms");
        fact_num(fs, "kv tokens", view_fmt_count, e->kv_tokens, "");
    }
    if (e->kind == ENG_VLLM)
        fact_num(fs, "preempted", view_fmt_count, e->preemptions, " in the window");
    if (!isnan(e->mem_bytes)) {
        meter_fmt_bytes(e->mem_bytes > 0 ? (uint64_t)e->mem_bytes : 0, buf, sizeof buf);
        fact(fs, "memory", PAL_TEXT, "%s", buf);
    }
    fact_num(fs, "latency", meter_fmt_num, e->latency_ms, " ms (the poll's slowest answer)");
    const struct cluster *c = v->opt->cluster;
    if (c && node < c->n_nodes && c->nodes[node].url[0])
        fact(fs, "url", PAL_TEXT, "%s", c->nodes[node].url);
}

/* Most useful first: when the facts sit above the charts only the first
 * few fit. */
static void collect_facts(struct view_ctx *v, int node, struct facts *fs)
{
    struct state_node_view nv;
    const struct state_config *cfg = state_node_config(v->st, node);
    const proto_status *s = state_node_status(v->st, node);
    const struct eng_view *e = state_node_engine(v->st, node);
    char buf[64], flags[128];

    fs->n = 0;
    if (e) {
        engine_facts(v, node, e, fs);
        return;
    }
    state_node_view(v->st, node, v->now, &nv);
    fact(fs, "node", PAL_TEXT, "%s", nv.name);
    fact(fs, "state", view_live_role(nv.live), "%s", view_live_word(nv.live));
    view_node_alerts_text(v, node, nv.flags, flags, sizeof flags);
    if (flags[0])
        fact(fs, "alerts", PAL_ALERT, "%s", flags);
    view_fmt_busy(nv.busy, nv.phase < 0, buf, sizeof buf);
    char batch[16];
    view_fmt_batch(nv.batch, batch, sizeof batch);
    fact(fs, "busy", nv.phase < 0 ? PAL_DIM : PAL_TEXT, "%s, batch %s", buf, batch);
    view_fmt_prefill(cfg->prefill_step, buf, sizeof buf);
    fact(fs, "prefill", PAL_TEXT, "%s (steps of %d)", buf, cfg->prefill_effective);
    if (cfg->kv_bits > 0)
        fact(fs, "kv_bits", PAL_TEXT, "%d", cfg->kv_bits);
    else
        fact(fs, "kv_bits", PAL_DIM, "-");
    if (cfg->stage != STATE_CFG_NONE)
        fact(fs, "change", cfg->stage == STATE_CFG_FAILED ? PAL_ERROR : PAL_PENDING, "%s%s%s",
             cfg_stage_word(cfg->stage), cfg->error[0] ? ": " : "", cfg->error);
    if (nv.mem.known) {
        fact_bytes(fs, "budget", nv.mem.budget);
        fact_bytes(fs, "weights", nv.mem.weights);
        fact_bytes(fs, "kv", nv.mem.kv);
        fact_bytes(fs, "other", nv.mem.other);
        meter_fmt_bytes(nv.mem.headroom, buf, sizeof buf);
        fact(fs, "headroom", nv.flags & STATE_FLAG_LOW_HEADROOM ? PAL_ALERT : PAL_OK, "%s%s",
             nv.mem.headroom_signed < 0 ? "over by " : "", buf);
    }
    if (s) {
        fact(fs, "layers", PAL_TEXT, "%d:%d of %d", s->model.layer_first, s->model.layer_last,
             s->model.n_layers);
        fact(fs, "stage", PAL_TEXT, "%d of %d", s->stage + 1, s->n_stages);
        fact(fs, "model", PAL_TEXT, "%s%s%s", s->model.name, s->model.format[0] ? ", " : "",
             s->model.format);
        if (s->model.weight_types[0])
            fact(fs, "weights", PAL_TEXT, "%s", s->model.weight_types);
        fact(fs, "fingerprt", nv.flags & STATE_FLAG_FINGERPRINT ? PAL_ALERT : PAL_TEXT, "%.16s",
             s->model.fingerprint);
        fact(fs, "shape", PAL_TEXT, "dim %d, %d heads (%d kv), seq %d", s->model.dim,
             s->model.n_heads, s->model.n_kv_heads, s->model.seq_len);
        fact(fs, "threads", PAL_TEXT, "%d", s->config.threads);
        fact(fs, "kernels", s->cpu_path[0] ? PAL_TEXT : PAL_DIM, "%s",
             s->cpu_path[0] ? s->cpu_path : "-");
        if (s->config.max_ctx)
            fact(fs, "max_ctx", PAL_TEXT, "%d", s->config.max_ctx);
        else
            fact(fs, "max_ctx", PAL_TEXT, "no cap");
        fact_bytes(fs, "rss", s->memory.rss);
        fact(fs, "sessions", PAL_TEXT, "%d", s->sessions);
        fact(fs, "requests", s->queued ? PAL_PENDING : PAL_TEXT, "%d running, %d queued", s->active,
             s->queued);
        /* An older node runs one request at a time and says nothing. */
        if (s->config.max_seqs > 0)
            fact(fs, "batching", PAL_TEXT, "max_seqs %d, pipeline depth %d", s->config.max_seqs,
                 s->config.pipeline_depth);
        meter_fmt_duration(s->uptime_s, buf, sizeof buf);
        fact(fs, "uptime", PAL_TEXT, "%s", buf);
        fact(fs, "version", PAL_TEXT, "%s", s->version);
        fact(fs, "curve", s->curve ? PAL_TEXT : PAL_PENDING, "%s", s->curve ? "on" : "off");
        if (s->warning[0])
            fact(fs, "warning", PAL_ERROR, "%s", s->warning);
    }
    fact(fs, "messages", nv.lost ? PAL_PENDING : PAL_TEXT, "%llu, %llu lost",
         (unsigned long long)nv.received, (unsigned long long)nv.lost);
    fact(fs, "restarts", PAL_TEXT, "%llu", (unsigned long long)nv.restarts);
    proto_set_args drift;
    if (view_drift(v, node, &drift)) {
        char want[64];
        desired_describe(&drift, want, sizeof want);
        fact(fs, "drift", PAL_ERROR, "desired %s, not in effect", want);
    }
    const struct cluster *c = v->opt->cluster;
    const struct cluster_node *cn = c && node < c->n_nodes ? &c->nodes[node] : NULL;
    if (cn) {
        if (cn->ssh_host[0])
            fact(fs, "ssh", PAL_TEXT, "%s%s%s", cn->ssh_user, cn->ssh_user[0] ? "@" : "",
                 cn->ssh_host);
        else
            fact(fs, "ssh", PAL_DIM, "none (no `ssh` key)");
        fact(fs, "control", PAL_TEXT, "%s", cn->control);
        fact(fs, "telemetry", PAL_TEXT, "%s", cn->telemetry);
    }
    if (v->opt->remote)
        host_facts(fs, v->opt->remote, node);
}

/* Facts down as many columns of FACT_CELL_COLS as the pane needs and has. */
static void draw_facts(struct view_ctx *v, int node)
{
    WINDOW *w = v->win[LAYOUT_FACTS];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_FACTS];
    struct facts fs;
    if (!w)
        return;
    collect_facts(v, node, &fs);
    int cols = fs.n > p->h && p->w >= 2 * FACT_CELL_COLS ? p->w / FACT_CELL_COLS : 1;
    int cw = cols > 1 ? p->w / cols : p->w;
    for (int i = 0; i < fs.n; i++) {
        int col = i / p->h, row = i % p->h;
        if (col >= cols)
            break;
        int x = col * cw;
        draw_text(w, v->g, row, x, FACT_KEY_COLS, palette_attr(v->pal, PAL_DIM), fs.f[i].key);
        draw_text(w, v->g, row, x + FACT_KEY_COLS, cw - FACT_KEY_COLS - 1,
                  palette_attr(v->pal, fs.f[i].role), fs.f[i].value);
    }
}

static void fmt_bytes(double v, char *buf, size_t len)
{
    meter_fmt_bytes(v > 0 ? (uint64_t)v : 0, buf, len);
}

/* Points of a chart of that width, within what the state keeps. */
static int chart_points(struct view_ctx *v, int width)
{
    int n = draw_chart_points(v->g, width);
    return n < STATE_SECONDS ? n : STATE_SECONDS;
}

static void draw_timing(struct view_ctx *v, int node)
{
    WINDOW *w = v->win[LAYOUT_TIMING];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_TIMING];
    static const struct {
        int phase;
        const char *title;
    } ph[2] = {{STATE_PREFILL, "prefill ms"}, {STATE_DECODE, "decode ms"}};
    double model[STATE_SECONDS], eval[STATE_SECONDS];
    if (!w)
        return;
    /* Two charts side by side, a column apart and a column from the facts. */
    int half = p->w / 2;
    for (int i = 0; i < 2; i++) {
        int x = i * half, width = half - 1;
        int n = chart_points(v, width);
        state_series(v->st, node, STATE_SERIES_MODEL_MS, ph[i].phase, n, v->now, model);
        state_series(v->st, node, STATE_SERIES_EVAL_MS, ph[i].phase, n, v->now, eval);
        struct draw_series s[2] = {{"model", model, n}, {"eval", eval, n}};
        draw_chart(w, v->g, v->pal, 0, x, width, p->h, ph[i].title, s, 2, 0, meter_fmt_num);
    }
}

static void fmt_percent(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.0f%%", v);
}

/* How much of the time the node computes, and in batches of what size:
 * two charts side by side, as the timing ones. */
static void draw_load(struct view_ctx *v, int node)
{
    WINDOW *w = v->win[LAYOUT_LOAD];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_LOAD];
    double busy[STATE_SECONDS], seqs[STATE_SECONDS];
    if (!w)
        return;
    int half = p->w / 2;
    int n = chart_points(v, half - 1);
    state_series(v->st, node, STATE_SERIES_BUSY, STATE_ANY, n, v->now, busy);
    for (int i = 0; i < n; i++)
        busy[i] *= 100.0;
    struct draw_series b = {"model/wall", busy, n};
    draw_chart(w, v->g, v->pal, 0, 0, half - 1, p->h, "busy %", &b, 1, 100.0, fmt_percent);
    n = chart_points(v, p->w - half - 1);
    state_series(v->st, node, STATE_SERIES_SEQS, STATE_ANY, n, v->now, seqs);
    struct draw_series q = {"seqs/step", seqs, n};
    draw_chart(w, v->g, v->pal, 0, half, p->w - half - 1, p->h, "batch", &q, 1, 0, meter_fmt_num);
}

static void draw_memory(struct view_ctx *v, int node)
{
    WINDOW *w = v->win[LAYOUT_MEMORY];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_MEMORY];
    double rss[STATE_SECONDS], kv[STATE_SECONDS];
    struct state_node_view nv;
    char title[48], budget[16];
    if (!w)
        return;
    state_node_view(v->st, node, v->now, &nv);
    int n = chart_points(v, p->w - 1);
    state_series(v->st, node, STATE_SERIES_RSS, STATE_ANY, n, v->now, rss);
    state_series(v->st, node, STATE_SERIES_KV_BYTES, STATE_ANY, n, v->now, kv);
    struct draw_series s[2] = {{"rss", rss, n}, {"kv", kv, n}};
    /* Scaled to what it shows (its axis says how far): 17 MiB of a 23 GiB
     * budget would be a flat line. The budget is in the title. */
    meter_fmt_bytes(nv.mem.budget, budget, sizeof budget);
    snprintf(title, sizeof title, "memory (budget %s)", budget);
    draw_chart(w, v->g, v->pal, 0, 0, p->w - 1, p->h, nv.mem.budget ? title : "memory", s, 2, 0,
               fmt_bytes);
}

/* The newest lines of the node's log that fit, the oldest on top. */
static void draw_remote_log(struct view_ctx *v, WINDOW *w, const struct layout_rect *p, int node)
{
    const struct remote *r = v->opt->remote;
    const nodelog *l = remote_log(r, node);
    char src[CLUSTER_HOST_MAX + CLUSTER_PATH_MAX + 80];
    remote_log_source(r, node, src, sizeof src);
    draw_textf(w, v->g, 0, 0, p->w, palette_attr(v->pal, PAL_TITLE), "log (%s)", src);
    int n = nodelog_count(l), rows = p->h - 1;
    int first = n > rows ? n - rows : 0;
    for (int i = first; i < n; i++) {
        enum nodelog_mark m;
        const char *line = nodelog_line(l, i, &m);
        enum palette_role role = m == NODELOG_ERROR  ? PAL_ERROR
                                 : m == NODELOG_INFO ? PAL_DIM
                                                     : PAL_TEXT;
        draw_text(w, v->g, 1 + i - first, 0, p->w, palette_attr(v->pal, role), line);
    }
}

static void draw_log(struct view_ctx *v, int node)
{
    WINDOW *w = v->win[LAYOUT_LOG];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_LOG];
    struct state_event_filter f = {.node = node};
    const struct state_event *ev[256];
    if (!w)
        return;
    if (v->opt->remote) {
        draw_remote_log(v, w, p, node);
        return;
    }
    draw_textf(w, v->g, 0, 0, p->w, palette_attr(v->pal, PAL_TITLE), "events of %s",
               state_node_name(v->st, node));
    int n = state_events(v->st, &f, 0, p->h - 1 < 256 ? p->h - 1 : 256, ev);
    for (int i = 0; i < n; i++)
        view_event_line(v, w, 1 + i, p->w, ev[i]);
}

/* ---- an HTTP engine's panes, where inferd's charts go ---- */

/* The latency histograms' windowed percentiles (vLLM). */
static void draw_engine_latency(struct view_ctx *v, const struct eng_view *e)
{
    WINDOW *w = v->win[LAYOUT_TIMING];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_TIMING];
    static const char *const names[ENG_H_COUNT] = {
        [ENG_H_TTFT] = "TTFT", [ENG_H_TPOT] = "TPOT", [ENG_H_E2E] = "e2e", [ENG_H_QUEUE] = "queue"};
    attr_t dim = palette_attr(v->pal, PAL_DIM);
    unsigned alerts = alerts_active(state_alerts(v->st), v->node);
    int y = 0;
    if (!w)
        return;
    /* What the operator should do comes first, across the widest pane. */
    if (e->problem[0])
        draw_text(w, v->g, y++, 0, p->w, palette_attr(v->pal, PAL_ERROR) | A_BOLD, e->problem);
    draw_textf(w, v->g, y++, 0, p->w, palette_attr(v->pal, PAL_TITLE),
               "latency, ms over the last %.0f s", ENG_WINDOW_S);
    if (e->kind != ENG_VLLM) {
        draw_textf(w, v->g, y, 0, p->w, dim, "%s exports no latency histograms", eng_name(e->kind));
        return;
    }
    draw_textf(w, v->g, y++, 0, p->w, dim, "%-8s %8s %8s", "", "p50", "p95");
    for (int h = 0; h < ENG_H_COUNT && y < p->h; h++, y++) {
        char p50[16], p95[16];
        meter_fmt_num(e->hist_p50[h], p50, sizeof p50);
        meter_fmt_num(e->hist_p95[h], p95, sizeof p95);
        int over = h == ENG_H_TTFT && (alerts & ALERT_BIT(ALERT_TTFT));
        draw_textf(w, v->g, y, 0, p->w, over ? palette_attr(v->pal, PAL_ALERT) : A_NORMAL,
                   "%-8s %8s %8s", names[h], p50, p95);
    }
}

/* The models an engine has loaded (Ollama /api/ps). */
static void draw_engine_models(struct view_ctx *v, const struct eng_view *e)
{
    WINDOW *w = v->win[LAYOUT_LOAD];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_LOAD];
    attr_t dim = palette_attr(v->pal, PAL_DIM);
    if (!w)
        return;
    draw_text(w, v->g, 0, 0, p->w, palette_attr(v->pal, PAL_TITLE), "loaded models");
    if (e->kind != ENG_OLLAMA) {
        draw_textf(w, v->g, 1, 0, p->w, dim, "%s: %s", eng_name(e->kind),
                   e->model[0] ? e->model : "-");
        return;
    }
    if (e->n_models == 0) {
        draw_text(w, v->g, 1, 0, p->w, dim, "none loaded");
        return;
    }
    draw_textf(w, v->g, 1, 0, p->w, dim, "%-24s %6s %6s  %s", "name", "size", "vram", "expires");
    for (int i = 0; i < e->n_models && 2 + i < p->h; i++) {
        const struct eng_model *m = &e->models[i];
        char size[16] = "-", vram[16] = "-";
        if (!isnan(m->size))
            meter_fmt_bytes(m->size > 0 ? (uint64_t)m->size : 0, size, sizeof size);
        if (!isnan(m->size_vram))
            meter_fmt_bytes(m->size_vram > 0 ? (uint64_t)m->size_vram : 0, vram, sizeof vram);
        draw_textf(w, v->g, 2 + i, 0, p->w, A_NORMAL, "%-24.24s %6s %6s  %s", m->name, size, vram,
                   m->expires[0] ? m->expires : "-");
    }
}

/* llama.cpp's slots and KV cache. */
static void draw_engine_slots(struct view_ctx *v, const struct eng_view *e)
{
    WINDOW *w = v->win[LAYOUT_MEMORY];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_MEMORY];
    attr_t dim = palette_attr(v->pal, PAL_DIM);
    char busy[16], total[16], used[16], ctx[16];
    if (!w)
        return;
    draw_text(w, v->g, 0, 0, p->w, palette_attr(v->pal, PAL_TITLE), "slots and KV cache");
    if (e->kind != ENG_LLAMACPP && isnan(e->kv_usage)) {
        draw_textf(w, v->g, 1, 0, p->w, dim, "%s reports neither", eng_name(e->kind));
        return;
    }
    view_fmt_count(e->slots_busy, busy, sizeof busy);
    view_fmt_count(e->slots_total, total, sizeof total);
    draw_textf(w, v->g, 1, 0, p->w, isnan(e->slots_total) ? dim : A_NORMAL, "slots %s of %s busy",
               busy, total);
    view_fmt_count(e->kv_tokens, used, sizeof used);
    view_fmt_count(e->n_ctx, ctx, sizeof ctx);
    if (isnan(e->kv_usage))
        draw_textf(w, v->g, 2, 0, p->w, dim, "kv cache -, %s tokens (n_ctx %s)", used, ctx);
    else
        draw_textf(w, v->g, 2, 0, p->w, A_NORMAL, "kv cache %.0f%% used, %s tokens (n_ctx %s)",
                   100 * e->kv_usage, used, ctx);
}

static void node_draw(struct view_ctx *v)
{
    if (v->n_nodes == 0)
        return;
    const struct eng_view *e = state_node_engine(v->st, v->node);
    draw_facts(v, v->node);
    if (e) {
        draw_engine_latency(v, e);
        draw_engine_models(v, e);
        draw_engine_slots(v, e);
    } else {
        draw_timing(v, v->node);
        draw_load(v, v->node);
        draw_memory(v, v->node);
    }
    draw_log(v, v->node);
}

enum { N_PREV, N_NEXT, N_BACK, N_RAW };

static const struct view_key node_keys[] = {
    {{KEY_LEFT, 'h'}, "h/l", "node", "previous / next node (arrows, j/k too)", N_PREV},
    {{KEY_RIGHT, 'l'}, "", NULL, NULL, N_NEXT},
    {{27}, "Esc", "back", "back to the dashboard", N_BACK},
    {{'y'}, "y", "raw", "the node's raw status: its last heartbeat or poll", N_RAW},
    {{0}, "S/X/R", "start/stop/restart", "start / stop / restart the node (X, R ask y/n)", -1},
    {{0}, "log", NULL, "follows the node's log over SSH, shows its host facts", -1},
};
static const struct view_keys node_table = KEYS_TABLE("Node detail", node_keys);

static int node_key(struct view_ctx *v, int key)
{
    int to = view_move(key, v->node, v->n_nodes, 1);
    switch (keys_cmd(&node_table, key)) {
    case N_PREV:
        to = v->node > 0 ? v->node - 1 : 0;
        break;
    case N_NEXT:
        to = v->node + 1 < v->n_nodes ? v->node + 1 : v->node;
        break;
    case N_BACK:
        v->goto_view = LAYOUT_DASHBOARD;
        return 1;
    case N_RAW:
        v->overlay = VIEW_OVERLAY_RAW;
        v->overlay_top = 0;
        return 1;
    }
    if (to >= 0) {
        v->node = to;
        return 1;
    }
    return view_node_action_key(v, key, v->node);
}

const struct ui_view view_node = {
    .name = "Node",
    .layout = LAYOUT_NODE,
    .draw = node_draw,
    .key = node_key,
    .click = NULL,
    .keys = &node_table,
};
