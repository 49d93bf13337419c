/* gen.c: one completion request against the node (see gen.h). */
#include "gen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <zmq.h>

/* How often a wait looks at the stop flag. */
#define WAKE_MS 100
/* How long gen_free waits for the node to confirm a cancel: one step. */
#define CANCEL_WAIT_MS 5000

struct gen {
    gen_env env;
    void *sock;
    int fd; /* the client's socket; -1 once it is not watched */
    oai_req req;
    char rid[PROTO_ID_MAX + 1]; /* the protocol request id */
    char id[PROTO_ID_MAX + 16], model[PROTO_TEXT_MAX];
    oai_reply reply;
    sbuf text;   /* everything generated so far */
    size_t sent; /* text[0..sent) is out (or, not streaming, kept) */
    sbuf out;    /* server-sent events not yet copied out */
    int done;    /* the final frame came */
    int stopped; /* a stop sequence ended the text; the request was cancelled */
    int ended;   /* streaming: the last event is written */
    int prompt_tokens, gen_tokens;
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

static void send_cancel(gen *g)
{
    char cid[PROTO_ID_MAX + 1];
    snprintf(cid, sizeof cid, "%.60s-c", g->rid);
    json_t *o = json_pack("{s:i,s:s,s:s,s:s}", "v", PROTO_VERSION, "id", cid, "op", "cancel",
                          "target", g->rid);
    if (o)
        send_json(g, o);
    json_decref(o);
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

/* Waits for the next reply frame of the request, at most wait_ms (-1:
 * until one comes). Returns 1 with *r filled, 0 when the client went away,
 * -1 with e filled (the server stops, a socket failed, timeout). */
static int next_frame(gen *g, proto_reply *r, int wait_ms, oai_error *e)
{
    for (int waited = 0; wait_ms < 0 || waited < wait_ms; waited += WAKE_MS) {
        zmq_pollitem_t items[2] = {{g->sock, 0, ZMQ_POLLIN, 0}, {NULL, g->fd, ZMQ_POLLIN, 0}};
        int n = zmq_poll(items, g->fd >= 0 ? 2 : 1, WAKE_MS);
        if (n < 0 && errno != EINTR)
            return oai_fail(e, 500, "internal", NULL, "zmq_poll: %s", zmq_strerror(errno));
        if (atomic_load(g->env.stopping))
            return oai_fail(e, 503, "shutdown", NULL, "the node is shutting down");
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
        if (strcmp(r->id, g->rid) == 0)
            return 1;
        proto_reply_free(r); /* the cancel's own reply */
    }
    return oai_fail(e, 504, "timeout", NULL, "the node did not answer within %d ms", wait_ms);
}

/* Lets out what the stop sequences allow of the text so far (all of it
 * when final): as a chunk when streaming. A stop sequence found ends the
 * text there and cancels the request. */
static void release(gen *g, int final)
{
    size_t emit = g->text.len;
    if (g->req.stop.n > 0 &&
        stopseq_scan(&g->req.stop, g->text.data, g->text.len, g->sent, &emit)) {
        g->stopped = 1;
        send_cancel(g);
    } else if (final) {
        emit = g->text.len;
    }
    if (emit <= g->sent)
        return;
    if (g->req.stream)
        oai_chunk(&g->out, &g->reply, g->text.data + g->sent, emit - g->sent, NULL);
    g->sent = emit;
}

static const char *finish_reason(const gen *g)
{
    return !g->stopped && g->gen_tokens >= g->req.max_tokens ? "length" : "stop";
}

/* Takes one reply frame in. Returns 0, or -1 with e filled when the
 * request failed. */
static int take(gen *g, const proto_reply *r, oai_error *e)
{
    if (!r->done) {
        if (!g->stopped) {
            sbuf_puts(&g->text, r->text);
            release(g, 0);
        }
        return 0;
    }
    g->done = 1;
    proto_stats st;
    char err[128];
    if (proto_stats_from_json(json_object_get(r->json, "stats"), &st, err, sizeof err) == 0) {
        g->prompt_tokens = st.prompt_tokens;
        g->gen_tokens = st.gen_tokens;
    }
    if (!r->ok && !(g->stopped && strcmp(r->code, "cancelled") == 0)) {
        oai_from_node(r->code, r->message, e);
        return -1;
    }
    if (!g->stopped)
        release(g, 1);
    return 0;
}

/* Waits for a frame and takes it in. 1 taken, 0 client gone, -1 failed. */
static int step(gen *g, oai_error *e)
{
    proto_reply r;
    int got = next_frame(g, &r, -1, e);
    if (got <= 0)
        return got;
    int rc = take(g, &r, e);
    proto_reply_free(&r);
    return rc == 0 ? 1 : -1;
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
    make_rid(g->rid, sizeof g->rid);
    snprintf(g->id, sizeof g->id, "%s%s", r->id, g->rid);
    snprintf(g->model, sizeof g->model, "%s", r->model);
    g->reply = (oai_reply){r->kind, g->id, g->model, r->created};
    *out = g;

    int linger = 0;
    g->sock = zmq_socket(env->zctx, ZMQ_DEALER);
    if (!g->sock || zmq_setsockopt(g->sock, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_connect(g->sock, env->control) != 0)
        return oai_fail(e, 500, "internal", NULL, "cannot reach the node at %s: %s", env->control,
                        zmq_strerror(errno));
    /* The request's own fields, not a copy: a prompt may be megabytes. A
     * frame over the node's limit comes back too_large (413). */
    json_t *o = g->req.generate;
    if (json_object_set_new(o, "v", json_integer(PROTO_VERSION)) ||
        json_object_set_new(o, "id", json_string(g->rid)) ||
        json_object_set_new(o, "op", json_string("generate")))
        return oai_fail(e, 500, "internal", NULL, "out of memory");
    if (send_json(g, o) != 0)
        return oai_fail(e, 500, "internal", NULL, "sending to the node: %s", zmq_strerror(errno));
    if (g->req.stream && g->req.kind == OAI_CHAT)
        oai_chunk_role(&g->out, &g->reply);
    int got = step(g, e);
    if (got == 0)
        oai_fail(e, 0, NULL, NULL, "the client went away");
    return got == 1 ? 0 : -1;
}

char *gen_complete(gen *g, oai_error *e)
{
    while (!g->done) {
        int got = step(g, e);
        if (got == 0)
            oai_fail(e, 0, NULL, NULL, "the client went away");
        if (got != 1)
            return NULL;
    }
    char *body = oai_response(&g->reply, g->text.data ? g->text.data : "", g->sent,
                              finish_reason(g), g->prompt_tokens, g->gen_tokens);
    if (!body)
        oai_fail(e, 500, "internal", NULL, "out of memory");
    return body;
}

/* The events after the last token: finish, usage, [DONE]. */
static void stream_end(gen *g)
{
    oai_chunk(&g->out, &g->reply, NULL, 0, finish_reason(g));
    if (g->req.include_usage)
        oai_chunk_usage(&g->out, &g->reply, g->prompt_tokens, g->gen_tokens);
    oai_chunk_done(&g->out);
    g->ended = 1;
}

ssize_t gen_stream(gen *g, char *buf, size_t max)
{
    while (g->out.len == 0) {
        if (g->ended || g->out.failed)
            return g->out.failed ? GEN_ABORT : GEN_END;
        if (g->done) {
            stream_end(g);
            continue;
        }
        oai_error e;
        int got = step(g, &e);
        if (got == 0 || (got < 0 && e.status == 503 && atomic_load(g->env.stopping)))
            return GEN_ABORT;
        if (got < 0) {
            /* The status went out with the first token: the error is an event. */
            oai_chunk_error(&g->out, &e);
            g->ended = 1;
        }
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
    if (g->sock && !g->done && !atomic_load(g->env.stopping)) {
        /* Cancel and wait for the request's end, so that its KV is free
         * by the time the connection closes. */
        if (!g->stopped)
            send_cancel(g);
        g->fd = -1;
        oai_error e;
        proto_reply r;
        while (!g->done && next_frame(g, &r, CANCEL_WAIT_MS, &e) == 1) {
            g->done = r.done;
            proto_reply_free(&r);
        }
    }
    if (g->sock)
        zmq_close(g->sock);
    oai_req_free(&g->req);
    sbuf_free(&g->text);
    sbuf_free(&g->out);
    free(g);
}
