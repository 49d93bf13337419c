/* client.c: a DEALER connected to one node's control socket (client.h).
 *
 * Every receive is bounded by zmq_poll with a timeout: a console or a
 * stress runner talking to a node that died must notice, not hang.
 */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "jsonw.h"

/* Heartbeats sent as often as the node's, and never awaited (timeout 0):
 * with its queue full the client could not read the node's answers, and
 * its own waits have limits (client_recv). */
#define CLIENT_HEARTBEAT_MS 5000

struct client {
    void *ctx; /* owned only when own_ctx */
    int own_ctx;
    void *sock;
    unsigned long next; /* request counter, for ids */
};

int client_open(client **out, void *zctx, const char *endpoint, const client_curve *curve,
                char *err, size_t errlen)
{
    int linger = 0, ivl = CLIENT_HEARTBEAT_MS, ttl = 0;

    *out = NULL;
    client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->own_ctx = zctx == NULL;
    c->ctx = zctx ? zctx : zmq_ctx_new();
    if (!c->ctx || !(c->sock = zmq_socket(c->ctx, ZMQ_DEALER))) {
        snprintf(err, errlen, "zmq: %s", zmq_strerror(errno));
        client_close(c);
        return -1;
    }
    /* Requests queued for a node that is gone are not worth a hang at exit. */
    zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger);
    /* The client's own heartbeats keep its connection while it reads
     * slowly: with its receive queue full ZeroMQ reads nothing from the
     * node, the node's heartbeats included, and the node would take its
     * silence for a vanished host; a paused request waits for it up to
     * the node's --stall-limit instead. */
    zmq_setsockopt(c->sock, ZMQ_HEARTBEAT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(c->sock, ZMQ_HEARTBEAT_TIMEOUT, &ttl, sizeof ttl);
    if (curve && curve_client_apply(c->sock, &curve->keys, curve->server_public, err, errlen)) {
        client_close(c);
        return -1;
    }
    if (endpoint && client_connect(c, endpoint, err, errlen) != 0) {
        client_close(c);
        return -1;
    }
    *out = c;
    return 0;
}

int client_connect(client *c, const char *endpoint, char *err, size_t errlen)
{
    if (zmq_connect(c->sock, endpoint)) {
        snprintf(err, errlen, "%s: %s", endpoint, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

void client_close(client *c)
{
    if (!c)
        return;
    if (c->sock)
        zmq_close(c->sock);
    if (c->own_ctx && c->ctx)
        zmq_ctx_term(c->ctx);
    free(c);
}

void *client_socket(client *c)
{
    return c->sock;
}

int client_send_raw(client *c, const void *buf, size_t len, char *err, size_t errlen)
{
    /* DONTWAIT: a DEALER with no live peer would otherwise block here. */
    if (zmq_send(c->sock, buf, len, ZMQ_DONTWAIT) < 0) {
        snprintf(err, errlen, "send: %s%s", zmq_strerror(errno),
                 errno == EAGAIN ? " (node not connected)" : "");
        return -1;
    }
    return 0;
}

int client_send(client *c, const char *op, const json_t *args, char *id_out, size_t idlen,
                char *err, size_t errlen)
{
    char id[PROTO_ID_MAX + 1];

    /* pid and pointer keep ids apart across clients of one node, which
     * matters for cancel (it names a request by id). */
    snprintf(id, sizeof id, "c%ld-%lx-%lu", (long)getpid(), (unsigned long)(uintptr_t)c, ++c->next);
    json_t *o = json_pack("{s:i,s:s,s:s}", "v", PROTO_VERSION, "id", id, "op", op);
    /* update only reads args; jansson's signature is not const. */
    if (!o || (args && json_object_update_missing(o, (json_t *)args))) {
        json_decref(o);
        snprintf(err, errlen, "cannot build the '%s' request", op);
        return -1;
    }
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = client_send_raw(c, text, strlen(text), err, errlen);
    free(text);
    if (rc == 0 && id_out)
        snprintf(id_out, idlen, "%s", id);
    return rc;
}

/* The second frame of a reply (an eval chunk's logits) into out->data;
 * out NULL: read and dropped. A third frame is an error, read and dropped. */
static int client_recv_data(client *c, proto_reply *out, char *err, size_t errlen)
{
    zmq_msg_t msg;
    int parts = 1, rc = 0;
    for (int more = 1; more; parts++) {
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, c->sock, ZMQ_DONTWAIT) < 0) {
            snprintf(err, errlen, "recv: %s", zmq_strerror(errno));
            zmq_msg_close(&msg);
            return -1;
        }
        more = zmq_msg_more(&msg);
        if (out && parts == 1) {
            out->data_len = zmq_msg_size(&msg);
            out->data = malloc(out->data_len ? out->data_len : 1);
            if (out->data) {
                memcpy(out->data, zmq_msg_data(&msg), out->data_len);
            } else {
                snprintf(err, errlen, "out of memory for a %zu-byte reply frame", out->data_len);
                out->data_len = 0;
                rc = -1;
            }
        }
        zmq_msg_close(&msg);
    }
    if (rc == 0 && parts > 2) {
        snprintf(err, errlen, "reply of %d frames (expected at most 2)", parts);
        rc = -1;
    }
    return rc;
}

int client_recv(client *c, proto_reply *out, int timeout_ms, char *err, size_t errlen)
{
    zmq_pollitem_t item = {c->sock, 0, ZMQ_POLLIN, 0};
    zmq_msg_t msg;

    memset(out, 0, sizeof *out);
    int n = zmq_poll(&item, 1, timeout_ms);
    if (n < 0) {
        snprintf(err, errlen, "poll: %s", zmq_strerror(errno));
        return -1;
    }
    if (n == 0)
        return 0;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, c->sock, ZMQ_DONTWAIT) < 0) {
        snprintf(err, errlen, "recv: %s", zmq_strerror(errno));
        zmq_msg_close(&msg);
        return -1;
    }
    int more = zmq_msg_more(&msg);
    int rc = proto_reply_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), out, err, errlen);
    zmq_msg_close(&msg);
    /* The parts of a message arrive together: reading them never waits. */
    if (more && client_recv_data(c, rc == 0 ? out : NULL, err, errlen) != 0)
        rc = -1;
    if (rc)
        proto_reply_free(out);
    return rc ? -1 : 1;
}

int client_call(client *c, const char *op, const json_t *args, proto_reply *out, int timeout_ms,
                char *err, size_t errlen)
{
    char id[PROTO_ID_MAX + 1];

    if (client_send(c, op, args, id, sizeof id, err, errlen))
        return -1;
    for (;;) {
        int rc = client_recv(c, out, timeout_ms, err, errlen);
        if (rc <= 0)
            return rc;
        /* Frames of other requests (an earlier one that timed out) and
         * token frames are not the answer. */
        if (out->done && !strcmp(out->id, id))
            return 1;
        proto_reply_free(out);
    }
}
