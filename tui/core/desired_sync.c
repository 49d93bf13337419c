/* desired_sync.c: the console's side of the desired settings
 * (desired_sync.h). */
#include "desired_sync.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

/* The file is read and written by a thread of its own: the console's
 * loop never waits for the disk. It hands over what to save and takes
 * what was read, under the mutex. */
struct disk {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit;
    char path[CLUSTER_PATH_MAX + 8];
    struct desired to_save; /* loop -> thread, when save_due */
    int save_due;
    struct desired loaded; /* thread -> loop, when load_ready */
    int load_ready, load_failed, save_failed;
    char load_why[1024], save_why[1024];
};

struct desired_sync {
    const struct cluster *c;
    struct desired d;
    int broken; /* the file does not parse: nothing is written to it */
    char broken_why[1024];
    double started; /* the first tick */
    struct sync_node *nodes;
    struct disk disk;
    int running; /* the disk thread */
};

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads the file when it changed since `seen` (another `infertop set`);
 * the result waits for the loop in loaded. */
static void disk_check(struct disk *k, struct stat *seen)
{
    struct stat now_st;
    struct desired got;
    char why[sizeof k->load_why] = "";
    if (stat(k->path, &now_st) != 0)
        memset(&now_st, 0, sizeof now_st);
    if (same_file(&now_st, seen))
        return;
    *seen = now_st;
    int failed = desired_load(k->path, &got, why, sizeof why) != 0;
    pthread_mutex_lock(&k->mu);
    desired_free(&k->loaded);
    k->loaded = got;
    k->load_ready = 1;
    k->load_failed = failed;
    snprintf(k->load_why, sizeof k->load_why, "%s", why);
    pthread_mutex_unlock(&k->mu);
}

static void *disk_main(void *arg)
{
    struct disk *k = arg;
    struct stat seen;
    memset(&seen, 0, sizeof seen);
    seen.st_ino = (ino_t)-1; /* read at once, whatever is there */
    pthread_mutex_lock(&k->mu);
    for (;;) {
        if (k->save_due) {
            struct desired d = k->to_save;
            char why[sizeof k->save_why];
            memset(&k->to_save, 0, sizeof k->to_save);
            k->save_due = 0;
            pthread_mutex_unlock(&k->mu);
            int rc = desired_save(&d, why, sizeof why);
            desired_free(&d);
            pthread_mutex_lock(&k->mu);
            if (rc != 0) {
                k->save_failed = 1;
                snprintf(k->save_why, sizeof k->save_why, "%s", why);
            }
            continue;
        }
        if (k->quit)
            break;
        pthread_mutex_unlock(&k->mu);
        disk_check(k, &seen);
        pthread_mutex_lock(&k->mu);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)SYNC_CHECK_S;
        while (!k->save_due && !k->quit && pthread_cond_timedwait(&k->cv, &k->mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

static int disk_start(struct disk *k)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -1;
    if (pthread_mutex_init(&k->mu, NULL) != 0) {
        pthread_cond_destroy(&k->cv);
        return -1;
    }
    if (pthread_create(&k->th, NULL, disk_main, k) != 0) {
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->cv);
        return -1;
    }
    return 0;
}

desired_sync *desired_sync_new(const struct cluster *c)
{
    desired_sync *ds = calloc(1, sizeof *ds);
    if (!ds ||
        !(ds->nodes = calloc((size_t)(c->n_nodes > 0 ? c->n_nodes : 1), sizeof *ds->nodes))) {
        free(ds);
        return NULL;
    }
    ds->c = c;
    ds->started = -1;
    desired_path(c->path, ds->d.path, sizeof ds->d.path);
    snprintf(ds->disk.path, sizeof ds->disk.path, "%s", ds->d.path);
    if (disk_start(&ds->disk) != 0) {
        desired_sync_free(ds);
        return NULL;
    }
    ds->running = 1;
    return ds;
}

/* A save still queued is written before the thread ends. */
void desired_sync_free(desired_sync *ds)
{
    if (!ds)
        return;
    if (ds->running) {
        pthread_mutex_lock(&ds->disk.mu);
        ds->disk.quit = 1;
        pthread_cond_signal(&ds->disk.cv);
        pthread_mutex_unlock(&ds->disk.mu);
        pthread_join(ds->disk.th, NULL);
        pthread_mutex_destroy(&ds->disk.mu);
        pthread_cond_destroy(&ds->disk.cv);
    }
    desired_free(&ds->disk.to_save);
    desired_free(&ds->disk.loaded);
    desired_free(&ds->d);
    free(ds->nodes);
    free(ds);
}

/* Takes what the disk thread read and says what it could not do. */
static void take_disk(desired_sync *ds, state *st, double now)
{
    struct disk *k = &ds->disk;
    pthread_mutex_lock(&k->mu);
    if (k->load_ready) {
        desired_free(&ds->d);
        ds->d = k->loaded;
        memset(&k->loaded, 0, sizeof k->loaded);
        snprintf(ds->d.path, sizeof ds->d.path, "%s", k->path);
        k->load_ready = 0;
        ds->broken = k->load_failed;
        if (ds->broken && strcmp(k->load_why, ds->broken_why) != 0)
            state_event_add(st, -1, "desired", now, "state file %s: desired settings not applied",
                            k->load_why);
        snprintf(ds->broken_why, sizeof ds->broken_why, "%s", ds->broken ? k->load_why : "");
    }
    if (k->save_failed) {
        state_event_add(st, -1, "desired", now, "not recorded: %s", k->save_why);
        k->save_failed = 0;
    }
    pthread_mutex_unlock(&k->mu);
}

/* Hands the settings to the disk thread to write. */
static void queue_save(desired_sync *ds, state *st, double now)
{
    struct disk *k = &ds->disk;
    struct desired copy;
    if (desired_copy(&copy, &ds->d) != 0) {
        state_event_add(st, -1, "desired", now, "not recorded: out of memory");
        return;
    }
    pthread_mutex_lock(&k->mu);
    desired_free(&k->to_save);
    k->to_save = copy;
    k->save_due = 1;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
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
    if (changed)
        queue_save(ds, st, now);
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
        uint64_t restarts = state_node_restarts(st, i);
        int heard = state_node_status(st, i) != NULL;
        if (restarts != sn->restarts ||
            (heard && !sn->heard && now - ds->started > SYNC_SETTLE_S)) {
            sn->due = 1;
            sn->tries = 0;
            sn->next_try = now;
        }
        sn->restarts = restarts;
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
    take_disk(ds, st, now);
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
