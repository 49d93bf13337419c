/* console_runs.c: the console's stress run and history (console_runs.h). */
#include "console_runs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/core/cluster.h"

struct console_runs {
    store *db;
    stress_target target;
    stress_run *run; /* NULL when none is going */
    int have_progress;
    stress_progress progress;
    size_t seen_points; /* the run's chart points taken in so far */
    size_t n_points;
    store_point points[CONSOLE_RUNS_POINTS]; /* the newest, oldest first */

    store_run_list list;
    int have_summary;
    store_summary summary;
    int have_compare;
    store_compare compare;
    /* The chart points of the two runs shown last (a comparison shows
     * two); the older one goes when a third is asked for. */
    struct {
        int64_t id; /* 0: empty */
        store_curve curve;
    } curves[2];
    int curve_next;
    /* The quality of the run shown last, and the latest measurement of
     * the setting the Config view asked about last. */
    struct {
        int64_t id; /* 0: empty */
        store_quality_list list;
    } quality;
    struct {
        int asked, found;
        char model[128];
        int kv_bits;
        store_quality q;
    } last;
};

int console_runs_target(const struct cluster *c, stress_target *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (c->n_nodes > STRESS_NODES_MAX) {
        snprintf(err, errlen, "%s has %d nodes; at most %d", c->path, c->n_nodes, STRESS_NODES_MAX);
        return -1;
    }
    /* The ring is the inferd nodes: the others have no endpoint to drive. */
    for (int i = 0; i < c->n_nodes; i++) {
        if (!cluster_node_is_inferd(c, i))
            continue;
        snprintf(t->nodes[t->n_nodes].control, STRESS_EP_MAX, "%s", c->nodes[i].control);
        snprintf(t->nodes[t->n_nodes].telemetry, STRESS_EP_MAX, "%s", c->nodes[i].telemetry);
        t->n_nodes++;
    }
    snprintf(t->cluster, sizeof t->cluster, "%s", c->name);
    return 0;
}

/* The first line of an api_key_file, without its line end. */
static int read_key(const char *path, char *out, size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "api_key_file %s: %s", path, strerror(errno));
        return -1;
    }
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

int console_runs_http_target(const struct cluster *c, const char *name, stress_target *t, char *err,
                             size_t errlen)
{
    memset(t, 0, sizeof *t);
    const struct cluster_node *n = cluster_node_find(c, name);
    if (!n) {
        snprintf(err, errlen, "%s has no node '%s'", c->path, name);
        return -1;
    }
    if (!n->url[0]) {
        snprintf(err, errlen,
                 "node '%s' has no HTTP endpoint: give it `url = http://HOST:PORT` in %s (an "
                 "inferd node serves one with --http)",
                 name, c->path);
        return -1;
    }
    stress_http_node *h = &t->http_node;
    t->http = 1;
    snprintf(t->cluster, sizeof t->cluster, "%s", c->name);
    snprintf(h->name, sizeof h->name, "%s", n->name);
    snprintf(h->url, sizeof h->url, "%s", n->url); /* without a trailing / (cluster.c) */
    h->engine = (eng_kind)n->engine;
    h->kv_bits = n->kv_bits;
    h->prefill_step = n->prefill_step;
    return n->api_key_file[0]
               ? read_key(n->api_key_file, h->api_key, sizeof h->api_key, err, errlen)
               : 0;
}

console_runs *console_runs_open(const char *db_path, const struct cluster *c, char *err,
                                size_t errlen)
{
    console_runs *cr = calloc(1, sizeof *cr);
    if (!cr) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (console_runs_target(c, &cr->target, err, errlen) != 0 ||
        !(cr->db = store_open(db_path, NULL, err, errlen))) {
        free(cr);
        return NULL;
    }
    return cr;
}

static void drop_history(console_runs *c)
{
    store_run_list_free(&c->list);
    memset(&c->list, 0, sizeof c->list);
    if (c->have_summary)
        store_summary_free(&c->summary);
    if (c->have_compare)
        store_compare_free(&c->compare);
    c->have_summary = c->have_compare = 0;
    for (int i = 0; i < 2; i++) {
        store_curve_free(&c->curves[i].curve);
        c->curves[i].id = 0;
    }
    store_quality_list_free(&c->quality.list);
    c->quality.id = 0;
    if (c->last.found)
        store_quality_free(&c->last.q);
    c->last.asked = c->last.found = 0;
}

static void join(console_runs *c)
{
    stress_result res;
    stress_wait(c->run, &res);
    stress_progress_get(c->run, &c->progress);
    stress_free(c->run);
    c->run = NULL;
}

void console_runs_free(console_runs *c)
{
    if (!c)
        return;
    if (c->run) {
        stress_abort(c->run);
        join(c);
    }
    drop_history(c);
    store_close(c->db);
    free(c);
}

int console_runs_start(console_runs *c, const stress_opts *o, char *err, size_t errlen)
{
    if (c->run) {
        snprintf(err, errlen, "run %lld is still going: abort it first (a)",
                 (long long)c->progress.run_id);
        return -1;
    }
    if (stress_start(&c->run, o, &c->target, c->db, err, errlen) != 0)
        return -1;
    c->n_points = 0;
    c->seen_points = 0;
    c->have_progress = 1;
    stress_progress_get(c->run, &c->progress);
    return 0;
}

void console_runs_abort(console_runs *c)
{
    if (c->run)
        stress_abort(c->run);
}

/* Takes in the points of the requests that ended since the last tick,
 * keeping the newest CONSOLE_RUNS_POINTS. */
static void take_points(console_runs *c)
{
    store_point fresh[CONSOLE_RUNS_POINTS];
    size_t n = stress_points_since(c->run, &c->seen_points, fresh, CONSOLE_RUNS_POINTS);
    size_t keep = c->n_points + n > CONSOLE_RUNS_POINTS ? CONSOLE_RUNS_POINTS - n : c->n_points;
    memmove(c->points, c->points + (c->n_points - keep), keep * sizeof *c->points);
    memcpy(c->points + keep, fresh, n * sizeof *fresh);
    c->n_points = keep + n;
}

int console_runs_tick(console_runs *c)
{
    if (!c || !c->run)
        return 0;
    stress_progress_get(c->run, &c->progress);
    take_points(c);
    if (c->progress.state == STRESS_FINISHED)
        join(c);
    return 1;
}

int console_runs_progress(const console_runs *c, stress_progress *p)
{
    if (!c || !c->have_progress)
        return 0;
    *p = c->progress;
    return 1;
}

size_t console_runs_points(const console_runs *c, const store_point **points)
{
    *points = c->points;
    return c->n_points;
}

/* ---- history ---- */

static int by_context(const void *a, const void *b)
{
    const store_run *x = a, *y = b;
    if (x->max_context != y->max_context)
        return x->max_context < y->max_context ? 1 : -1;
    return x->id < y->id ? 1 : x->id > y->id ? -1 : 0;
}

int console_runs_list(console_runs *c, const char *status, int sort_context, char *err,
                      size_t errlen)
{
    store_run_filter f = {.status = status, .limit = CONSOLE_RUNS_PAGE};
    store_run_list l;
    if (store_runs_list(c->db, &f, &l, err, errlen) != 0)
        return -1;
    drop_history(c);
    c->list = l;
    if (sort_context && l.n > 1)
        qsort(c->list.runs, c->list.n, sizeof *c->list.runs, by_context);
    return 0;
}

const store_run_list *console_runs_listed(const console_runs *c)
{
    return &c->list;
}

const store_summary *console_runs_summary(console_runs *c, int64_t id, char *err, size_t errlen)
{
    if (c->have_summary && c->summary.run.id == id)
        return &c->summary;
    if (c->have_summary)
        store_summary_free(&c->summary);
    c->have_summary = 0;
    int rc = store_run_summary(c->db, id, &c->summary, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "no run %lld in the history", (long long)id);
    if (rc != 0)
        return NULL;
    c->have_summary = 1;
    return &c->summary;
}

const store_quality_list *console_runs_quality(console_runs *c, int64_t id, char *err,
                                               size_t errlen)
{
    if (c->quality.id == id)
        return &c->quality.list;
    store_quality_list_free(&c->quality.list);
    c->quality.id = 0;
    int rc = store_run_quality(c->db, id, &c->quality.list, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "no run %lld in the history", (long long)id);
    if (rc != 0)
        return NULL;
    c->quality.id = id;
    return &c->quality.list;
}

const store_quality *console_runs_quality_last(console_runs *c, const char *model, int kv_bits)
{
    if (!c->last.asked || c->last.kv_bits != kv_bits || strcmp(c->last.model, model) != 0) {
        if (c->last.found)
            store_quality_free(&c->last.q);
        char err[256];
        c->last.found =
            store_quality_last(c->db, model, NULL, kv_bits, &c->last.q, err, sizeof err) == 0;
        c->last.asked = 1;
        c->last.kv_bits = kv_bits;
        snprintf(c->last.model, sizeof c->last.model, "%s", model);
    }
    return c->last.found ? &c->last.q : NULL;
}

const store_compare *console_runs_compare(console_runs *c, int64_t a, int64_t b, char *err,
                                          size_t errlen)
{
    if (c->have_compare && c->compare.a.run.id == a && c->compare.b.run.id == b)
        return &c->compare;
    if (c->have_compare)
        store_compare_free(&c->compare);
    c->have_compare = 0;
    int rc = store_run_compare(c->db, a, b, &c->compare, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "run %lld or %lld is no longer in the history", (long long)a,
                 (long long)b);
    if (rc != 0)
        return NULL;
    c->have_compare = 1;
    return &c->compare;
}

const store_curve *console_runs_curve(console_runs *c, int64_t id, char *err, size_t errlen)
{
    for (int i = 0; i < 2; i++)
        if (c->curves[i].id == id)
            return &c->curves[i].curve;
    int slot = c->curve_next;
    store_curve_free(&c->curves[slot].curve);
    c->curves[slot].id = 0;
    int rc = store_run_curve(c->db, id, &c->curves[slot].curve, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "no run %lld in the history", (long long)id);
    if (rc != 0)
        return NULL;
    c->curves[slot].id = id;
    c->curve_next = 1 - slot;
    return &c->curves[slot].curve;
}

int console_runs_export(console_runs *c, int64_t id, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = store_export(c->db, id, STORE_EXPORT_REQUESTS, STORE_FORMAT_CSV, f, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "no run %lld in the history", (long long)id);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        remove(path);
    return rc == 0 ? 0 : -1;
}
