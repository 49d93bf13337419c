/* view_common.c: small pieces more than one view needs, and the requests
 * views make back to ui.c (actions, messages, questions), which they leave
 * in their context for ui.c to act on after the key. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "draw.h"
#include "tui/core/desired_sync.h"
#include "ui.h"
#include "view.h"

const char *view_live_word(enum state_live l)
{
    switch (l) {
    case STATE_UP:
        return "up";
    case STATE_STALE:
        return "stale";
    case STATE_STARTING:
        return "starting";
    case STATE_DOWN:
        break;
    }
    return "down";
}

enum palette_role view_live_role(enum state_live l)
{
    switch (l) {
    case STATE_UP:
        return PAL_UP;
    case STATE_STALE:
        return PAL_STALE;
    case STATE_STARTING:
        return PAL_STARTING;
    case STATE_DOWN:
        break;
    }
    return PAL_DOWN;
}

void view_node_state(const state *st, int node, double now, struct view_state *out)
{
    enum state_live l = state_node_live(st, node, now);
    const struct eng_view *e = state_node_engine(st, node);
    out->word = view_live_word(l);
    out->role = view_live_role(l);
    out->up = l == STATE_UP;
    /* Liveness says more until the first poll, and while a launched
     * engine's server does not answer yet. */
    if (!e || e->health == ENG_UNKNOWN || (e->health == ENG_DOWN && l == STATE_STARTING))
        return;
    static const struct {
        const char *word;
        enum palette_role role;
    } by_health[] = {[ENG_UP] = {"up", PAL_UP},
                     [ENG_LOADING] = {"loading", PAL_STARTING},
                     [ENG_ERROR] = {"error", PAL_ERROR},
                     [ENG_DOWN] = {"down", PAL_DOWN}};
    out->word = by_health[e->health].word;
    out->role = by_health[e->health].role;
    out->up = e->health == ENG_UP;
}

void view_node_alerts_text(const struct view_ctx *v, int node, unsigned flags, char *buf,
                           size_t len)
{
    char alerts[128];
    unsigned active = alerts_active(state_alerts(v->st), node);
    view_flags_text(v->g, flags, buf, len);
    /* The ring alert says where: the stage is what the operator acts on. */
    if ((active & ALERT_BIT(ALERT_RING)) && state_ring_broken(v->st, node)) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%sring broken at %s", n ? " " : "",
                 state_node_status(v->st, node)->ring_health.stage);
        active &= ~ALERT_BIT(ALERT_RING);
    }
    alerts_text(active, alerts, sizeof alerts);
    if (alerts[0]) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "%s%s", n ? " " : "", alerts);
    }
}

void view_flags_text(const struct glyphs *g, unsigned flags, char *buf, size_t len)
{
    const char *reason[] = {"LOW MEM", "NaN", "ACT!", g->fp_differs};
    const unsigned bit[] = {STATE_FLAG_LOW_HEADROOM, STATE_FLAG_NONFINITE, STATE_FLAG_ACT_SPIKE,
                            STATE_FLAG_FINGERPRINT};
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof bit / sizeof bit[0]; i++) {
        if (!(flags & bit[i]))
            continue;
        int k = snprintf(buf + n, len - n, "%s%s", n ? " " : "", reason[i]);
        if (k < 0 || (size_t)k >= len - n)
            return;
        n += (size_t)k;
    }
}

int view_move(int key, int sel, int n, int page)
{
    int to;
    if (n <= 0)
        return -1;
    if (page < 1)
        page = 1;
    switch (key) {
    case KEY_UP:
    case 'k':
        to = sel - 1;
        break;
    case KEY_DOWN:
    case 'j':
        to = sel + 1;
        break;
    case KEY_PPAGE:
        to = sel - page;
        break;
    case KEY_NPAGE:
        to = sel + page;
        break;
    case KEY_HOME:
    case 'g':
        to = 0;
        break;
    case KEY_END:
    case 'G':
        to = n - 1;
        break;
    default:
        return -1;
    }
    return to < 0 ? 0 : to >= n ? n - 1 : to;
}

void view_scroll_to(int sel, int rows, int *top)
{
    if (rows < 1)
        rows = 1;
    if (sel < *top)
        *top = sel;
    if (sel >= *top + rows)
        *top = sel - rows + 1;
    if (*top < 0)
        *top = 0;
}

int view_node_action_key(struct view_ctx *v, int key, int node)
{
    /* Stop and restart end the node's work, so they ask first; a start
     * harms nothing (a running node refuses it). */
    static const struct {
        int key;
        enum action_kind kind;
        const char *verb;
        int ask;
    } acts[] = {{'S', ACT_NODE_START, "start", 0},
                {'X', ACT_NODE_STOP, "stop", 1},
                {'R', ACT_NODE_RESTART, "restart", 1}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        if (key != acts[i].key)
            continue;
        if (node < 0 || node >= v->n_nodes)
            return 1;
        if (view_refuse_readonly(v, "node actions"))
            return 1;
        struct action a = {.kind = acts[i].kind, .node = node};
        if (acts[i].ask) {
            view_ask(v, &a, "%s node %s?", acts[i].verb, state_node_name(v->st, node));
        } else {
            view_emit(v, &a);
            view_message(v, 0, "%s node %s: see the events", acts[i].verb,
                         state_node_name(v->st, node));
        }
        return 1;
    }
    return 0;
}

/* Events about trouble stand out from the routine ones. */
static enum palette_role event_role(const struct state_event *e)
{
    static const char *const bad[] = {"fail",    "error",    "refused", "down",
                                      "timeout", "mismatch", "numeric", "stale"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (strcasestr(e->kind, bad[i]))
            return PAL_ERROR;
    if (strcmp(e->kind, "alert") == 0)
        return PAL_ERROR;
    if (strncmp(e->kind, "config", 6) == 0 || strcmp(e->kind, "alert_clear") == 0)
        return PAL_OK;
    return PAL_TEXT;
}

void view_event_line(struct view_ctx *v, WINDOW *w, int y, int width, const struct state_event *e)
{
    char when[16];
    time_t t = (time_t)(v->wall - (v->now - e->t));
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    const char *who = e->node >= 0 ? state_node_name(v->st, e->node) : "infertop";
    int x = draw_text(w, v->g, y, 0, width, palette_attr(v->pal, PAL_DIM), when) + 1;
    x += draw_text(w, v->g, y, x, 10 < width - x ? 10 : width - x, A_BOLD, who);
    x = x < 20 ? 20 : x + 1;
    if (x >= width)
        return;
    int k = draw_text(w, v->g, y, x, width - x, palette_attr(v->pal, event_role(e)), e->kind);
    x += (k < 16 ? 16 : k + 1);
    if (x >= width)
        return;
    char rest[PROTO_MESSAGE_MAX + PROTO_CODE_MAX + PROTO_ID_MAX + 16];
    snprintf(rest, sizeof rest, "%s%s%s%s%s%s", e->code[0] ? "[" : "", e->code,
             e->code[0] ? "] " : "", e->message, e->req[0] ? "  req " : "", e->req);
    draw_text(w, v->g, y, x, width - x, A_NORMAL, rest);
}

int view_drift(const struct view_ctx *v, int node, proto_set_args *drift)
{
    memset(drift, 0, sizeof *drift);
    return v->opt->desired && desired_sync_drift(v->opt->desired, v->st, node, drift);
}

void view_fmt_prefill(int prefill, char *buf, size_t len)
{
    if (prefill == PROTO_PREFILL_AUTO)
        snprintf(buf, len, "auto");
    else if (prefill < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%d", prefill);
}

void view_fmt_busy(double busy, int idle, char *buf, size_t len)
{
    if (isnan(busy))
        snprintf(buf, len, "-");
    else if (idle)
        snprintf(buf, len, "idle");
    else
        snprintf(buf, len, "%.0f%%", 100.0 * fmin(fmax(busy, 0.0), 1.0));
}

enum palette_role view_grade(double v, double warn, double bad)
{
    return isnan(v) ? PAL_DIM : v < warn ? PAL_OK : v < bad ? PAL_PENDING : PAL_ALERT;
}

void view_fmt_count(double n, char *buf, size_t len)
{
    if (isnan(n))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.0f", n);
}

/* One decimal below 100: a mean of 1.5 sequences per step is not 2. */
void view_fmt_batch(double batch, char *buf, size_t len)
{
    if (isnan(batch))
        snprintf(buf, len, "-");
    else if (batch < 100)
        snprintf(buf, len, "%.1f", batch);
    else
        snprintf(buf, len, "%.0f", batch);
}

/* ---- requests back to ui.c ---- */

void view_emit(struct view_ctx *v, const struct action *a)
{
    if (v->out && v->n_out < v->max_out)
        v->out[v->n_out++] = *a;
}

void view_vmessage(struct view_ctx *v, int error, const char *fmt, va_list ap)
{
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    v->message_error = error;
}

void view_message(struct view_ctx *v, int error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    view_vmessage(v, error, fmt, ap);
    va_end(ap);
}

void view_ask(struct view_ctx *v, const struct action *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->question, sizeof v->question, fmt, ap);
    va_end(ap);
    v->confirm_act = *a;
    v->confirm = 1;
}

int view_refuse_readonly(struct view_ctx *v, const char *what)
{
    if (!v->opt->readonly)
        return 0;
    view_message(v, 1, "read-only: %s are disabled (--readonly)", what);
    return 1;
}

/* Whether key is Enter (the terminal's or the keypad's). */
static int is_enter(int key)
{
    return key == '\n' || key == '\r' || key == KEY_ENTER;
}

int view_type_key(char *buf, size_t len, int key, int digits)
{
    size_t n = strlen(buf);
    if (is_enter(key))
        return 1;
    if (key == 27)
        return -1;
    if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (n)
            buf[n - 1] = '\0';
    } else if ((digits ? key >= '0' && key <= '9' : key >= 0x20 && key < 0x7F) && n + 1 < len) {
        buf[n] = (char)key;
        buf[n + 1] = '\0';
    }
    return 0;
}
