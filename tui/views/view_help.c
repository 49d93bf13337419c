/* view_help.c: the overlays drawn over the current view: the help (F1 or
 * ?), made of the key tables (keys.h) and a legend, and the selected
 * node's raw status (y), as the state holds it. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draw.h"
#include "legend.h"
#include "view.h"

#define KEY_COLS 12
#define RAW_MAX 65536 /* the raw status's text, at most */
#define LINES_MAX 1024

/* The lines an overlay shows: a key (NULL for a heading or plain text)
 * and its text. raw_text holds what the raw lines point into (NULL for
 * the help). */
struct lines {
    struct keys_line line[LINES_MAX];
    int n;
    char *raw_text;
};

/* The keys (keys.h), then the legend (legend.h). */
static void help_lines(const struct view_keys *const *t, int nt, struct lines *l)
{
    int n_legend;
    const char *const *legend = legend_lines(&n_legend);
    l->n = keys_help(t, nt, l->line, LINES_MAX - n_legend);
    if (l->n > LINES_MAX - n_legend)
        l->n = LINES_MAX - n_legend;
    for (int i = 0; i < n_legend; i++) {
        const char *tab = strchr(legend[i], '\t');
        l->line[l->n++] =
            tab ? (struct keys_line){legend[i], tab + 1} : (struct keys_line){NULL, legend[i]};
    }
}

/* Appends a line to l (at most LINES_MAX: the rest is left out). */
static void add_line(struct lines *l, const char *text)
{
    if (l->n < LINES_MAX)
        l->line[l->n++] = (struct keys_line){NULL, text};
}

/* Compact JSON (one line) as indented lines in l, written into out (cut
 * at cap). */
static void json_lines(const char *json, char *out, size_t cap, struct lines *l)
{
    size_t o = 0;
    int depth = 0, quoted = 0;
    char *line = out;
    for (const char *c = json; *c && o + 4 * (size_t)depth + 8 < cap; c++) {
        int open = !quoted && (*c == '{' || *c == '['), close = !quoted && (*c == '}' || *c == ']');
        if (close) {
            out[o++] = '\0';
            add_line(l, line);
            line = out + o;
            depth--;
            for (int i = 0; i < 2 * depth; i++)
                out[o++] = ' ';
        }
        out[o++] = *c;
        if (quoted && *c == '\\' && c[1])
            out[o++] = *++c;
        else if (*c == '"')
            quoted = !quoted;
        else if (!quoted && *c == ':')
            out[o++] = ' ';
        if (open)
            depth++;
        if (open || (!quoted && *c == ',')) {
            out[o++] = '\0';
            add_line(l, line);
            line = out + o;
            for (int i = 0; i < 2 * depth; i++)
                out[o++] = ' ';
        }
    }
    out[o] = '\0';
    add_line(l, line);
}

/* An HTTP engine's node as its last poll left it (engine.h): "key: value"
 * lines, "-" for what the engine does not report. */
static void engine_lines(const struct eng_view *e, char *out, size_t cap, struct lines *l)
{
    static const char *const health[] = {[ENG_UNKNOWN] = "unknown",
                                         [ENG_UP] = "up",
                                         [ENG_LOADING] = "loading",
                                         [ENG_ERROR] = "error",
                                         [ENG_DOWN] = "down"};
    static const char *const hist[ENG_H_COUNT] = {"ttft", "tpot", "e2e", "queue"};
    static const struct {
        const char *key;
        size_t offset;
    } nums[] = {
#define NUM(f) {#f, offsetof(struct eng_view, f)}
        NUM(n_ctx),        NUM(prompt_tps),       NUM(decode_tps),
        NUM(ms_per_token), NUM(requests_running), NUM(requests_waiting),
        NUM(kv_usage),     NUM(kv_tokens),        NUM(batch),
        NUM(slots_busy),   NUM(slots_total),      NUM(preemptions),
        NUM(mem_bytes),    NUM(latency_ms),
#undef NUM
    };
    size_t o = 0;
#define LINE(...)                                                                                  \
    do {                                                                                           \
        int w_ = snprintf(out + o, cap - o, __VA_ARGS__);                                          \
        if (w_ < 0 || (size_t)w_ >= cap - o)                                                       \
            return;                                                                                \
        add_line(l, out + o);                                                                      \
        o += (size_t)w_ + 1;                                                                       \
    } while (0)
    LINE("engine: %s", eng_name(e->kind));
    LINE("health: %s", health[e->health]);
    LINE("problem: %s", e->problem[0] ? e->problem : "-");
    LINE("model: %s", e->model[0] ? e->model : "-");
    LINE("version: %s", e->version[0] ? e->version : "-");
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        double x = *(const double *)((const char *)e + nums[i].offset);
        if (isnan(x))
            LINE("%s: -", nums[i].key);
        else
            LINE("%s: %g", nums[i].key, x);
    }
    for (int h = 0; h < ENG_H_COUNT; h++)
        LINE("%s_ms p50/p95: %g / %g", hist[h], e->hist_p50[h], e->hist_p95[h]);
    for (int m = 0; m < e->n_models && m < ENG_MODELS_MAX; m++)
        LINE("loaded: %s, %g bytes (%g in VRAM), expires %s", e->models[m].name, e->models[m].size,
             e->models[m].size_vram, e->models[m].expires[0] ? e->models[m].expires : "-");
#undef LINE
}

/* The node's last status as the state holds it: an inferd node's
 * heartbeat in its wire JSON, an HTTP engine's last poll as its fields. */
static void raw_lines(const struct view_ctx *v, struct lines *l)
{
    const struct eng_view *e = state_node_engine(v->st, v->node);
    const proto_status *s = e ? NULL : state_node_status(v->st, v->node);
    l->n = 0;
    l->raw_text = malloc(RAW_MAX);
    if (!l->raw_text)
        return;
    if (e) {
        engine_lines(e, l->raw_text, RAW_MAX, l);
        return;
    }
    proto_head h = {.seq = 0};
    snprintf(h.node, sizeof h.node, "%s", state_node_name(v->st, v->node));
    char *json = s ? proto_node_encode(&h, s) : NULL;
    if (json)
        json_lines(json, l->raw_text, RAW_MAX, l);
    else
        add_line(l, "no status heard from this node yet");
    free(json);
    /* The envelope's seq and t are the heartbeat's, which the state does
     * not keep: the zeros h carries would read as the node's. */
    int kept = 0;
    for (int i = 0; i < l->n; i++)
        if (strncmp(l->line[i].text, "  \"seq\": ", 9) != 0 &&
            strncmp(l->line[i].text, "  \"t\": ", 7) != 0)
            l->line[kept++] = l->line[i];
    l->n = kept;
}

static void overlay_lines(const struct view_ctx *v, const struct view_keys *const *t, int nt,
                          struct lines *l)
{
    l->raw_text = NULL;
    if (v->overlay == VIEW_OVERLAY_RAW && v->node < v->n_nodes)
        raw_lines(v, l);
    else
        help_lines(t, nt, l);
}

static int overlay_rows(const struct view_ctx *v)
{
    return v->lay->pane[LAYOUT_HELP].h - 2;
}

void view_overlay_draw(struct view_ctx *v, const struct view_keys *const *t, int nt)
{
    WINDOW *w = v->win[LAYOUT_HELP];
    const struct layout_rect *p = &v->lay->pane[LAYOUT_HELP];
    struct lines *l = malloc(sizeof *l);
    if (!w || !l) {
        free(l);
        return;
    }
    overlay_lines(v, t, nt, l);
    int raw = v->overlay == VIEW_OVERLAY_RAW;
    draw_box(w, v->g, palette_attr(v->pal, PAL_TITLE));
    if (raw)
        draw_textf(w, v->g, 0, 2, p->w - 4, palette_attr(v->pal, PAL_TITLE),
                   " %s: raw status, j/k scroll, any other key closes ",
                   state_node_name(v->st, v->node));
    else
        draw_text(w, v->g, 0, 2, p->w - 4, palette_attr(v->pal, PAL_TITLE),
                  " infertop help: j/k scroll, any other key closes ");
    int rows = overlay_rows(v), inner = p->w - 4;
    if (v->overlay_top > l->n - rows)
        v->overlay_top = l->n - rows > 0 ? l->n - rows : 0;
    for (int i = 0; i < rows && v->overlay_top + i < l->n; i++) {
        const struct keys_line *line = &l->line[v->overlay_top + i];
        if (!line->keys) {
            draw_text(w, v->g, 1 + i, 2, inner, palette_attr(v->pal, raw ? PAL_TEXT : PAL_TITLE),
                      line->text);
            continue;
        }
        draw_text(w, v->g, 1 + i, 3, KEY_COLS, palette_attr(v->pal, PAL_KEY), line->keys);
        draw_text(w, v->g, 1 + i, 3 + KEY_COLS, inner - KEY_COLS - 1, A_NORMAL, line->text);
    }
    free(l->raw_text);
    free(l);
}

int view_overlay_key(struct view_ctx *v, const struct view_keys *const *t, int nt, int key)
{
    struct lines *l = malloc(sizeof *l);
    if (!l)
        return 0;
    overlay_lines(v, t, nt, l);
    int to = view_move(key, v->overlay_top, l->n - overlay_rows(v) + 1, overlay_rows(v));
    free(l->raw_text);
    free(l);
    if (to < 0)
        return 0;
    v->overlay_top = to;
    return 1;
}
