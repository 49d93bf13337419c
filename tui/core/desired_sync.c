/* desired_sync.c: the console's side of the desired settings
 * (desired_sync.h). */
#include "desired_sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The state file is looked at this often for another process's write. */
#define SYNC_CHECK_S 1.0
/* A node that refused a re-apply (its ring was still broken, say) is
 * tried again after this, at most SYNC_TRIES times per life of its
 * process, so that a node that keeps refusing does not flood the events. */
#define SYNC_RETRY_S 1.0
#define SYNC_TRIES 5

/* A node heard first this long after the console started was not
 * running then: its first heartbeat is a node coming back. */
#define SYNC_SETTLE_S 5.0

struct sync_node {
    double seen_request; /* t_requested of the last own set looked at */
    uint64_t restarts;   /* the node's restart count when last looked at */
    int heard;           /* a heartbeat came since the console started */
    int due;             /* it came back: its desired settings are to be re-applied */
    int tries;
    double next_try;
};

struct desired_sync {
    const struct cluster *c;
    struct desired d;
    int broken; /* the file does not parse: nothing is written to it */
    char broken_why[1024];
    struct stat seen;  /* the file as last read; st_ino 0 = missing */
    double next_check; /* when to stat it again */
    double started;    /* the first tick */
    struct sync_node *nodes;
};

desired_sync *desired_sync_new(const struct cluster *c)
{
    desired_sync *ds = calloc(1, sizeof *ds);
    if (!ds ||
        !(ds->nodes = calloc((size_t)(c->n_nodes > 0 ? c->n_nodes : 1), sizeof *ds->nodes))) {
        free(ds);
        return NULL;
    }
    ds->c = c;
    ds->next_check = -1;
    ds->started = -1;
    ds->seen.st_ino = (ino_t)-1; /* read at the first tick, whatever is there */
    desired_path(c->path, ds->d.path, sizeof ds->d.path);
    return ds;
}

void desired_sync_free(desired_sync *ds)
{
    if (!ds)
        return;
    desired_free(&ds->d);
    free(ds->nodes);
    free(ds);
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads the file again when it changed; a new file starts every node's
 * tries over. */
static void reload(desired_sync *ds, state *st, double now)
{
    struct stat now_st;
    char err[1024], path[sizeof ds->d.path];
    if (now < ds->next_check)
        return;
    ds->next_check = now + SYNC_CHECK_S;
    if (stat(ds->d.path, &now_st) != 0)
        memset(&now_st, 0, sizeof now_st);
    if (same_file(&now_st, &ds->seen))
        return;
    ds->seen = now_st;
    snprintf(path, sizeof path, "%s", ds->d.path);
    desired_free(&ds->d);
    ds->broken = desired_load(path, &ds->d, err, sizeof err) != 0;
    snprintf(ds->d.path, sizeof ds->d.path, "%s", path);
    if (ds->broken && strcmp(err, ds->broken_why) != 0)
        state_event_add(st, -1, "desired", now, "state file %s: desired settings not applied", err);
    snprintf(ds->broken_why, sizeof ds->broken_why, "%s", ds->broken ? err : "");
}

/* 1 when `had` holds every setting of `want` with its value. */
static int covers(const proto_set_args *had, const proto_set_args *want)
{
    return had && (!want->has_kv_bits || (had->has_kv_bits && had->kv_bits == want->kv_bits)) &&
           (!want->has_prefill_step ||
            (had->has_prefill_step && had->prefill_step == want->prefill_step));
}

static const proto_set_args *desired_sync_want(const desired_sync *ds, const state *st, int node)
{
    return desired_get(&ds->d, state_node_name(st, node));
}

/* A set the console sent (the Config view, or a re-apply) that a node
 * accepted is what the operator wants from now on. */
static void record_own(desired_sync *ds, state *st, double now)
{
    int changed = 0;
    for (int i = 0; i < ds->c->n_nodes; i++) {
        const struct state_config *cfg = state_node_config(st, i);
        struct sync_node *sn = &ds->nodes[i];
        if (cfg->t_requested == sn->seen_request ||
            (cfg->stage != STATE_CFG_ACKED && cfg->stage != STATE_CFG_CONFIRMED))
            continue;
        sn->seen_request = cfg->t_requested;
        if (covers(desired_get(&ds->d, ds->c->nodes[i].name), &cfg->want))
            continue; /* nothing new: a re-apply */
        if (ds->broken) {
            state_event_add(st, i, "desired", now, "not recorded: state file %s", ds->broken_why);
            continue;
        }
        if (desired_record(&ds->d, ds->c->nodes[i].name, &cfg->want) != 0) {
            state_event_add(st, i, "desired", now, "not recorded: out of memory");
            continue;
        }
        changed = 1;
    }
    char err[1024];
    if (changed && desired_save(&ds->d, err, sizeof err) != 0)
        state_event_add(st, -1, "desired", now, "not recorded: %s", err);
    else if (changed && stat(ds->d.path, &ds->seen) != 0)
        memset(&ds->seen, 0, sizeof ds->seen);
}

static int same_want(const proto_set_args *a, const proto_set_args *b)
{
    return a && b && covers(a, b) && covers(b, a);
}

static int in_ring(const state *st, int i)
{
    return state_ring_head(st, i) || state_ring_stage(st, i);
}

/* 1 when every node of node i's ring wants what it wants: then the set
 * goes to the whole ring through its head. */
static int ring_uniform(const desired_sync *ds, const state *st, int node)
{
    const proto_set_args *want = desired_sync_want(ds, st, node);
    if (!in_ring(st, node))
        return 0;
    for (int j = 0; j < ds->c->n_nodes; j++)
        if (in_ring(st, j) && !same_want(want, desired_sync_want(ds, st, j)))
            return 0;
    return 1;
}

/* A node comes back when its process restarted (its sequence numbers
 * went back), or when it is first heard well after the console started. */
static void note_comebacks(desired_sync *ds, const state *st, double now)
{
    for (int i = 0; i < ds->c->n_nodes; i++) {
        struct sync_node *sn = &ds->nodes[i];
        struct state_node_view nv;
        state_node_view(st, i, now, &nv);
        int heard = state_node_status(st, i) != NULL;
        if (nv.restarts != sn->restarts ||
            (heard && !sn->heard && now - ds->started > SYNC_SETTLE_S)) {
            sn->due = 1;
            sn->tries = 0;
            sn->next_try = now;
        }
        sn->restarts = nv.restarts;
        sn->heard |= heard;
    }
}

static void reapply(desired_sync *ds, state *st, links *l, double now)
{
    for (int i = 0; i < ds->c->n_nodes; i++) {
        struct sync_node *sn = &ds->nodes[i];
        proto_set_args drift;
        enum state_cfg_stage stage = state_node_config(st, i)->stage;
        /* A set in flight, or acknowledged and not yet in telemetry, is
         * waited for: sending it again would also undo a change made
         * meanwhile by someone else. */
        if (!sn->due || !cluster_node_is_inferd(ds->c, i) ||
            state_node_live(st, i, now) != STATE_UP || stage == STATE_CFG_REQUESTED ||
            stage == STATE_CFG_ACKED)
            continue;
        if (!desired_sync_drift(ds, st, i, &drift) || sn->tries >= SYNC_TRIES) {
            sn->due = state_node_config(st, i)->kv_bits == 0; /* not known yet: wait */
            continue;
        }
        if (now < sn->next_try)
            continue;
        sn->tries++;
        sn->next_try = now + SYNC_RETRY_S;
        char what[64];
        desired_describe(&drift, what, sizeof what);
        int whole = ring_uniform(ds, st, i);
        state_event_add(st, i, "desired", now, "the node came back: re-applying %s%s", what,
                        whole ? " to the ring, through its head" : "");
        if (whole) {
            for (int j = 0; j < ds->c->n_nodes; j++)
                if (in_ring(st, j))
                    ds->nodes[j].next_try = now + SYNC_RETRY_S;
            links_set(l, -1, desired_sync_want(ds, st, i), now);
        } else {
            links_set(l, i, &drift, now);
        }
    }
}

void desired_sync_tick(desired_sync *ds, state *st, links *l, int reapplying, double now)
{
    if (ds->started < 0)
        ds->started = now;
    reload(ds, st, now);
    record_own(ds, st, now);
    note_comebacks(ds, st, now);
    if (reapplying)
        reapply(ds, st, l, now);
}

int desired_sync_drift(const desired_sync *ds, const state *st, int node, proto_set_args *drift)
{
    const struct state_config *cfg = state_node_config(st, node);
    return desired_drift(desired_sync_want(ds, st, node), cfg->kv_bits, cfg->prefill_step, drift);
}
