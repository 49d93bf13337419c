/* feed.c: telemetry into metrics, on a thread of its own (see feed.h). */
#include "feed.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "engine/sys/clock.h"
#include "metrics.h"

/* How often the thread looks at the stop flag. */
#define WAKE_MS 100
/* Messages the SUB may queue: a burst of step messages from a ring of
 * fast stages must not be dropped here. */
#define RCVHWM 100000

/* Requests in flight tracked for /slots: every place and the queue. */
#define SLOTS_MAX (PROTO_SEQS_MAX + 64)
typedef struct slot {
    proto_req_msg start; /* its start message */
    double t;            /* when it came: clock_ms */
} slot;

struct feed {
    void *sub;
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t heard; /* the first heartbeat came */
    metrics *m;
    int has_status;
    proto_status status;
    int n_slots;
    slot slots[SLOTS_MAX]; /* in the order they began */
};

/* A request's start adds it, its end takes it out (a restarted node's
 * ids may be reused: a start replaces any of the same id). */
static void track(feed *f, const proto_req_msg *r)
{
    int i = 0;
    while (i < f->n_slots && strcmp(f->slots[i].start.req, r->req) != 0)
        i++;
    if (i < f->n_slots) {
        memmove(&f->slots[i], &f->slots[i + 1], (size_t)(f->n_slots - i - 1) * sizeof *f->slots);
        f->n_slots--;
    }
    if (!r->end && f->n_slots < SLOTS_MAX)
        f->slots[f->n_slots++] = (slot){*r, clock_ms()};
}

static void take(feed *f, zmq_msg_t *topic, zmq_msg_t *payload)
{
    proto_tel t;
    char err[128];
    if (proto_tel_decode(zmq_msg_data(topic), zmq_msg_size(topic), zmq_msg_data(payload),
                         zmq_msg_size(payload), &t, err, sizeof err) != 0)
        return; /* malformed: skipped, as every subscriber does */
    pthread_mutex_lock(&f->lock);
    metrics_take(f->m, &t, clock_ms() / 1000.0);
    if (t.topic == PROTO_TOPIC_REQ)
        track(f, &t.req);
    if (t.topic == PROTO_TOPIC_NODE) {
        f->status = t.status;
        f->has_status = 1;
        pthread_cond_broadcast(&f->heard);
    }
    pthread_mutex_unlock(&f->lock);
    proto_tel_free(&t);
}

/* Takes the next message in. Returns 0 when none is waiting. */
static int take_next(feed *f)
{
    zmq_msg_t topic, payload;
    zmq_msg_init(&topic);
    zmq_msg_init(&payload);
    int got = zmq_msg_recv(&topic, f->sub, ZMQ_DONTWAIT) >= 0;
    if (got && zmq_msg_more(&topic) && zmq_msg_recv(&payload, f->sub, 0) >= 0)
        take(f, &topic, &payload);
    zmq_msg_close(&topic);
    zmq_msg_close(&payload);
    return got;
}

static void *feed_main(void *arg)
{
    feed *f = arg;
    while (!atomic_load(&f->stop)) {
        zmq_pollitem_t item = {f->sub, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, WAKE_MS) > 0)
            while (take_next(f) && !atomic_load(&f->stop))
                ;
    }
    return NULL;
}

int feed_start(feed **out, void *zctx, const char *const *endpoints, int n, char *err,
               size_t errlen)
{
    feed *f = calloc(1, sizeof *f);
    if (!f || !(f->m = metrics_new())) {
        free(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->heard, NULL);
    int hwm = RCVHWM, linger = 0;
    f->sub = zmq_socket(zctx, ZMQ_SUB);
    if (!f->sub) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        goto fail;
    }
    zmq_setsockopt(f->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(f->sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(f->sub, ZMQ_SUBSCRIBE, "", 0);
    for (int i = 0; i < n; i++) {
        if (zmq_connect(f->sub, endpoints[i]) != 0) {
            snprintf(err, errlen, "telemetry %s: %s", endpoints[i], zmq_strerror(errno));
            goto fail;
        }
    }
    if (pthread_create(&f->thread, NULL, feed_main, f) != 0) {
        snprintf(err, errlen, "cannot start the telemetry thread");
        goto fail;
    }
    *out = f;
    return 0;
fail:
    if (f->sub)
        zmq_close(f->sub);
    metrics_free(f->m);
    pthread_cond_destroy(&f->heard);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return -1;
}

void feed_stop(feed *f)
{
    if (!f)
        return;
    atomic_store(&f->stop, 1);
    pthread_join(f->thread, NULL);
    zmq_close(f->sub);
    metrics_free(f->m);
    pthread_cond_destroy(&f->heard);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

char *feed_metrics(feed *f, size_t *len)
{
    pthread_mutex_lock(&f->lock);
    char *text = metrics_render(f->m, clock_ms() / 1000.0, len);
    pthread_mutex_unlock(&f->lock);
    return text;
}

char *feed_slots(feed *f)
{
    static const char *const inputs[] = {"prompt", "tokens", "synthetic_tokens"};
    json_t *list = json_array();
    pthread_mutex_lock(&f->lock);
    double now = clock_ms();
    for (int i = 0; list && i < f->n_slots; i++) {
        const proto_req_msg *r = &f->slots[i].start;
        json_array_append_new(
            list, json_pack("{s:i,s:s,s:b,s:s,s:s,s:s,s:i,s:i,s:f}", "id", i, "id_task", r->req,
                            "is_processing", 1, "source", r->source, "session", r->session, "input",
                            inputs[r->input], "prompt_tokens", r->prompt_tokens, "max_tokens",
                            r->max_tokens, "t_ms", now - f->slots[i].t));
    }
    pthread_mutex_unlock(&f->lock);
    char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    return text;
}

int feed_status(feed *f, proto_status *out, int wait_ms)
{
    struct timespec until = clock_deadline(wait_ms);
    pthread_mutex_lock(&f->lock);
    while (!f->has_status && pthread_cond_timedwait(&f->heard, &f->lock, &until) == 0)
        ;
    int ok = f->has_status;
    if (ok)
        *out = f->status;
    pthread_mutex_unlock(&f->lock);
    return ok ? 0 : -1;
}
