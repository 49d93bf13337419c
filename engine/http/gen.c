/* gen.c: one completion request against the node (see gen.h). */
#include "gen.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <zmq.h>

#include "engine/sys/clock.h"
#include "logprobs.h"

/* How often a wait looks at the stop flag. */
#define WAKE_MS 100
/* How long gen_free waits for the node to confirm a cancel: one step. */
#define CANCEL_WAIT_MS 5000
/* The longest the node may stay silent on a request: past its queue
 * timeout (a queued request is refused busy by then) and a step's. */
#define NODE_SILENCE_MS 600000
/* Reply frames the DEALER holds: past them (and the node's side of the
 * pipe, COMPANION_SNDHWM in engine/node/serve.c) the node keeps the rest in
 * the request's outbox and pauses the sequence (backpressure). Few, for
 * ZeroMQ tells the node the DEALER took frames only at each half of the
 * pipe: the node's stall clock sees a slow client's pace in small steps. */
#define REPLY_HWM 16
/* The longest a frame to the node may wait to be queued (ZeroMQ blocks a
 * send past the DEALER's own mark): a node that takes none fails the
 * request rather than holding its worker. */
#define SEND_WAIT_MS 5000

/* One choice: one protocol request of its own. */
typedef struct choice {
    char rid[PROTO_ID_MAX + 1]; /* the protocol request id */
    sbuf text;                  /* everything generated so far */
    size_t sent;                /* text[0..sent) is out (or, not streaming, kept) */
    int begun;                  /* a frame came */
    int done;                   /* the final frame came */
    int stopped;                /* a stop sequence ended the text; the request was cancelled */
    int finished;               /* streaming: its last chunk is written */
    int prompt_tokens, gen_tokens;
    lp_list lp; /* the tokens' logprobs, when asked */
} choice;

struct gen {
    gen_env env;
    void *sock; /* one DEALER for every choice: replies carry their id */
    int fd;     /* the client's socket; -1 once it is not watched */
    oai_req req;
    char id[PROTO_ID_MAX + 16], model[PROTO_TEXT_MAX];
    oai_reply reply;
    int n;
    choice *c; /* [n] */
    sbuf out;  /* server-sent events not yet copied out */
    int ended; /* streaming: the last event is written */
};

/* A request ids unique in the process: the node cancels by id. */
static void make_rid(char *out, size_t cap)
{
    static atomic_uint next;
    snprintf(out, cap, "http-%lx-%u", (unsigned long)time(NULL), atomic_fetch_add(&next, 1) + 1);
}

static int send_json(gen *g, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    if (!text)
        return -1;
    int rc = zmq_send(g->sock, text, strlen(text), 0) < 0 ? -1 : 0;
    free(text);
    return rc;
}

/* stalled: the client stopped reading, so the node ends the request with
 * code stalled (counted as such) rather than cancelled. Returns 0, or -1
 * when it could not go out (the node's own limits end the request then). */
static int send_cancel(gen *g, const choice *c, int stalled)
{
    char cid[PROTO_ID_MAX + 1];
    snprintf(cid, sizeof cid, "%.60s-c", c->rid);
    json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:b}", "v", PROTO_VERSION, "id", cid, "op", "cancel",
                          "target", c->rid, "stalled", stalled);
    int rc = o ? send_json(g, o) : -1;
    json_decref(o);
    return rc;
}

/* The client closed its end (a read would say end of file or reset). */
static int client_gone(gen *g)
{
    char c;
    ssize_t n = recv(g->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) {
        /* It sent more (a pipelined request): nothing to learn from the
         * socket until this response is out, so stop watching it. */
        g->fd = -1;
        return 0;
    }
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* The choice a reply is for, or NULL (a cancel's own reply). */
static choice *choice_of(gen *g, const char *rid)
{
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->c[i].rid, rid) == 0)
            return &g->c[i];
    return NULL;
}

/* Waits for the next reply frame of a choice, at most wait_ms. Returns 1
 * with *r and *c filled, 0 when the client went away, -1 with e filled
 * (the server stops, a socket failed, timeout). */
static int next_frame(gen *g, proto_reply *r, choice **c, int wait_ms, oai_error *e)
{
    for (int waited = 0; waited < wait_ms; waited += WAKE_MS) {
        zmq_pollitem_t items[2] = {{g->sock, 0, ZMQ_POLLIN, 0}, {NULL, g->fd, ZMQ_POLLIN, 0}};
        int n = zmq_poll(items, g->fd >= 0 ? 2 : 1, WAKE_MS);
        if (n < 0 && errno != EINTR)
            return oai_fail(e, 500, "internal", NULL, "zmq_poll: %s", zmq_strerror(errno));
        if (atomic_load(g->env.stopping))
            return oai_fail(e, 503, "shutdown", NULL, "the node is shutting down");
        if (g->env.gone && atomic_load(g->env.gone))
            return 0;
        if (n > 0 && g->fd >= 0 && (items[1].revents & ZMQ_POLLIN) && client_gone(g))
            return 0;
        if (n <= 0 || !(items[0].revents & ZMQ_POLLIN))
            continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, g->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        char err[256];
        int rc = proto_reply_decode(zmq_msg_data(&m), zmq_msg_size(&m), r, err, sizeof err);
        zmq_msg_close(&m);
        if (rc != 0)
            return oai_fail(e, 500, "internal", NULL, "the node's reply: %s", err);
        if ((*c = choice_of(g, r->id)))
            return 1;
        proto_reply_free(r); /* the cancel's own reply */
    }
    return oai_fail(e, 504, "timeout", NULL, "the node did not answer within %d ms", wait_ms);
}

/* Lets out what the stop sequences allow of the text so far (all of it
 * when final): as a chunk when streaming. A stop sequence found ends the
 * text there and cancels the request. */
static int index_of(const gen *g, const choice *c)
{
    return (int)(c - g->c);
}

/* The logprobs of c's tokens from `from` on, up to `to`, or NULL when the
 * request asked none (out of memory fails the output). */
static char *logprobs_of(gen *g, choice *c, int from, int to)
{
    if (g->req.logprobs < 0)
        return NULL;
    char *s = lp_render(g->req.kind, g->env.tok, c->lp.v, from, to, c->text.data);
    if (!s)
        g->out.failed = 1;
    return s;
}

static void release(gen *g, choice *c, int final)
{
    size_t emit = c->text.len;
    if (g->req.stop.n > 0 &&
        stopseq_scan(&g->req.stop, c->text.data, c->text.len, c->sent, &emit)) {
        c->stopped = 1;
        (void)send_cancel(g, c, 0); /* its frames are ignored from here on anyway */
    } else if (final) {
        emit = c->text.len;
    }
    /* The tokens whose text starts in what goes out; at the end, every
     * one (a last token may have no text of its own). */
    int to = c->lp.sent;
    while (to < c->lp.n && (c->lp.v[to].offset < emit || (final && !c->stopped)))
        to++;
    if (emit <= c->sent && to == c->lp.sent)
        return;
    if (g->req.stream) {
        char *lp = logprobs_of(g, c, c->lp.sent, to);
        const char *text = c->text.data ? c->text.data + c->sent : "";
        oai_chunk(&g->out, &g->reply, index_of(g, c), text, emit - c->sent, lp, NULL);
        free(lp);
    }
    c->sent = emit > c->sent ? emit : c->sent;
    c->lp.sent = to;
}

static const char *finish_reason(const gen *g, const choice *c)
{
    return !c->stopped && c->gen_tokens >= g->req.max_tokens ? "length" : "stop";
}

/* Takes one reply frame of choice c in. Returns 0, or -1 with e filled
 * when the request failed. */
static int take(gen *g, choice *c, const proto_reply *r, oai_error *e)
{
    c->begun = 1;
    if (!r->done) {
        if (c->stopped)
            return 0;
        char why[PROTO_MESSAGE_MAX - 64] = "out of memory";
        if (g->req.logprobs >= 0 && r->has_token &&
            (proto_logprobs_check(&r->lp, g->req.logprobs, PROTO_TOKEN_ID_MAX + 1, why,
                                  sizeof why) != 0 ||
             lp_add(&c->lp, c->text.len, r->token, &r->lp) != 0))
            return oai_fail(e, 500, "internal", NULL, "the node's token: %s", why);
        sbuf_puts(&c->text, r->text);
        release(g, c, 0);
        return 0;
    }
    c->done = 1;
    proto_stats st;
    char err[128];
    if (proto_stats_from_json(json_object_get(r->json, "stats"), &st, err, sizeof err) == 0) {
        c->prompt_tokens = st.prompt_tokens;
        c->gen_tokens = st.gen_tokens;
    }
    if (!r->ok && !(c->stopped && strcmp(r->code, "cancelled") == 0)) {
        oai_from_node(r->code, r->message, e);
        return -1;
    }
    if (!c->stopped)
        release(g, c, 1);
    /* A stream ends each choice as it ends. */
    if (g->req.stream) {
        oai_chunk(&g->out, &g->reply, index_of(g, c), NULL, 0, NULL, finish_reason(g, c));
        c->finished = 1;
    }
    return 0;
}

/* Waits for a frame and takes it in. 1 taken, 0 client gone, -1 failed. */
static int step(gen *g, oai_error *e)
{
    proto_reply r;
    choice *c;
    int got = next_frame(g, &r, &c, NODE_SILENCE_MS, e);
    if (got <= 0)
        return got;
    int rc = take(g, c, &r, e);
    proto_reply_free(&r);
    return rc == 0 ? 1 : -1;
}

/* Every choice has begun (or, all: ended). */
static int all(const gen *g, int done)
{
    for (int i = 0; i < g->n; i++)
        if (!(done ? g->c[i].done : g->c[i].begun))
            return 0;
    return 1;
}

/* Sends choice i's generate: the request's fields under its own id; a
 * seed given (seed0 >= 0) moves by i, so that the choices differ but
 * repeat (wrapping within JSON's integers). */
static int send_choice(gen *g, int i, json_int_t seed0)
{
    json_t *o = g->req.generate;
    json_int_t seed = seed0 <= INT64_MAX - i ? seed0 + i : i - 1;
    if (json_object_set_new(o, "id", json_string(g->c[i].rid)) ||
        (seed0 >= 0 && json_object_set_new(o, "seed", json_integer(seed))))
        return -1;
    return send_json(g, o);
}

int gen_begin(gen **out, const gen_env *env, oai_req *req, const oai_reply *r, int client_fd,
              oai_error *e)
{
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        oai_req_free(req);
        return oai_fail(e, 500, "internal", NULL, "out of memory");
    }
    g->env = *env;
    g->req = *req;
    memset(req, 0, sizeof *req);
    g->fd = client_fd;
    g->n = g->req.n > 0 ? g->req.n : 1;
    char rid[PROTO_ID_MAX + 1];
    make_rid(rid, sizeof rid);
    if (!(g->c = calloc((size_t)g->n, sizeof *g->c))) {
        *out = g;
        return oai_fail(e, 500, "internal", NULL, "out of memory");
    }
    for (int i = 0; i < g->n; i++)
        snprintf(g->c[i].rid, sizeof g->c[i].rid, g->n > 1 ? "%.48s.%d" : "%.48s", rid, i);
    snprintf(g->id, sizeof g->id, "%s%s", r->id, rid);
    snprintf(g->model, sizeof g->model, "%s", r->model);
    g->reply = (oai_reply){r->kind, g->id, g->model, r->created};
    *out = g;

    int linger = 0, hwm = REPLY_HWM, send_wait = SEND_WAIT_MS;
    g->sock = zmq_socket(env->zctx, ZMQ_DEALER);
    if (!g->sock || zmq_setsockopt(g->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(g->sock, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(g->sock, ZMQ_SNDTIMEO, &send_wait, sizeof send_wait) != 0 ||
        zmq_connect(g->sock, env->control) != 0)
        return oai_fail(e, 500, "internal", NULL, "cannot reach the node at %s: %s", env->control,
                        zmq_strerror(errno));
    /* The request's own fields, not a copy: a prompt may be megabytes. A
     * frame over the node's limit comes back too_large (413). */
    json_t *o = g->req.generate;
    if (json_object_set_new(o, "v", json_integer(PROTO_VERSION)) ||
        json_object_set_new(o, "op", json_string("generate")))
        return oai_fail(e, 500, "internal", NULL, "out of memory");
    /* The n choices go out at once, so that the node batches them. */
    const json_t *seed = json_object_get(o, "seed");
    json_int_t seed0 = json_is_integer(seed) ? json_integer_value(seed) : -1;
    for (int i = 0; i < g->n; i++) {
        if (send_choice(g, i, seed0) != 0)
            return oai_fail(e, 500, "internal", NULL, "sending to the node: %s",
                            zmq_strerror(errno));
        if (g->req.stream && g->req.kind == OAI_CHAT)
            oai_chunk_role(&g->out, &g->reply, i);
    }
    while (!all(g, 0)) {
        int got = step(g, e);
        if (got == 0)
            oai_fail(e, 0, NULL, NULL, "the client went away");
        if (got != 1)
            return -1;
    }
    return 0;
}

/* The prompt's tokens (once: the choices share it) and the tokens of
 * every choice. */
static void usage(const gen *g, int *prompt_tokens, int *gen_tokens)
{
    *prompt_tokens = g->c[0].prompt_tokens;
    *gen_tokens = 0;
    for (int i = 0; i < g->n; i++)
        *gen_tokens += g->c[i].gen_tokens;
}

char *gen_complete(gen *g, oai_error *e)
{
    while (!all(g, 1)) {
        int got = step(g, e);
        if (got == 0)
            oai_fail(e, 0, NULL, NULL, "the client went away");
        if (got != 1)
            return NULL;
    }
    oai_choice *cs = calloc(g->n > 0 ? (size_t)g->n : 1, sizeof *cs);
    char *body = NULL;
    if (cs) {
        for (int i = 0; i < g->n; i++)
            cs[i] = (oai_choice){g->c[i].text.data ? g->c[i].text.data : "", g->c[i].sent,
                                 finish_reason(g, &g->c[i]),
                                 logprobs_of(g, &g->c[i], 0, g->c[i].lp.sent)};
        int pt, gt;
        usage(g, &pt, &gt);
        if (!g->out.failed)
            body = oai_response(&g->reply, cs, g->n, pt, gt);
        for (int i = 0; i < g->n; i++)
            free((char *)cs[i].logprobs);
        free(cs);
    }
    if (!body)
        oai_fail(e, 500, "internal", NULL, "out of memory");
    return body;
}

/* Ends every choice still open with finish_reason "abort" (vLLM's word
 * for a request ended before its end), then the error as an event. */
static void stream_fail(gen *g, const oai_error *e)
{
    for (int i = 0; i < g->n; i++)
        if (!g->c[i].finished) {
            oai_chunk(&g->out, &g->reply, i, NULL, 0, NULL, "abort");
            g->c[i].finished = 1;
        }
    oai_chunk_error(&g->out, e);
    g->ended = 1;
}

void gen_stall(gen *g, double stall_s)
{
    for (int i = 0; i < g->n; i++)
        if (!g->c[i].done && !g->c[i].stopped) {
            (void)send_cancel(g, &g->c[i], 1); /* the stream ends here anyway */
            g->c[i].stopped = 1;
        }
    oai_error e;
    oai_fail(&e, 503, "stalled", NULL,
             "the client took none of the stream for %g s (the stall limit): request ended",
             stall_s);
    stream_fail(g, &e);
}

/* The events after every choice's last chunk: usage, [DONE]. */
static void stream_end(gen *g)
{
    int pt, gt;
    usage(g, &pt, &gt);
    if (g->req.include_usage)
        oai_chunk_usage(&g->out, &g->reply, pt, gt);
    oai_chunk_done(&g->out);
    g->ended = 1;
}

ssize_t gen_stream(gen *g, char *buf, size_t max)
{
    while (g->out.len == 0) {
        if (g->ended || g->out.failed)
            return g->out.failed ? GEN_ABORT : GEN_END;
        if (all(g, 1)) {
            stream_end(g);
            continue;
        }
        oai_error e;
        int got = step(g, &e);
        if (got == 0 || (got < 0 && e.status == 503 && atomic_load(g->env.stopping)))
            return GEN_ABORT;
        if (got < 0) /* the status went out with the first token: the error is an event */
            stream_fail(g, &e);
    }
    size_t n = g->out.len < max ? g->out.len : max;
    memcpy(buf, g->out.data, n);
    sbuf_drop(&g->out, n);
    return (ssize_t)n;
}

void gen_free(gen *g)
{
    if (!g)
        return;
    if (g->sock && g->c && !all(g, 1) && !atomic_load(g->env.stopping)) {
        /* Cancel and wait for the requests' ends, so that their KV is
         * free by the time the connection closes: CANCEL_WAIT_MS in all
         * (frames the node held keep coming first), none when a cancel
         * could not go out. */
        int unsent = 0;
        for (int i = 0; i < g->n; i++)
            if (!g->c[i].done && !g->c[i].stopped)
                unsent |= send_cancel(g, &g->c[i], 0);
        g->fd = -1;
        oai_error e;
        proto_reply r;
        choice *c;
        double until = clock_ms() + CANCEL_WAIT_MS;
        while (!unsent && !all(g, 1) && clock_ms() < until &&
               next_frame(g, &r, &c, (int)(until - clock_ms()) + 1, &e) == 1) {
            c->done |= r.done;
            proto_reply_free(&r);
        }
    }
    if (g->sock)
        zmq_close(g->sock);
    oai_req_free(&g->req);
    for (int i = 0; g->c && i < g->n; i++) {
        sbuf_free(&g->c[i].text);
        lp_free(&g->c[i].lp);
    }
    free(g->c);
    sbuf_free(&g->out);
    free(g);
}
