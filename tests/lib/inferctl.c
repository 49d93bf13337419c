/* inferctl: a small protocol client for the end-to-end tests.
 *
 *   inferctl call EP OP [ARGS] [--id ID] [--timeout MS] [--curve KEY PUB]
 *       sends {"v":1,"id":ID,"op":OP, ...ARGS (a JSON object)} and prints
 *       every reply frame as one JSON line until the final one. Exit 0 when
 *       the final frame is ok, 1 when it is an error, 2 when no frame came
 *       for MS milliseconds (default 30000) or the transport failed. With
 *       --curve, talks CURVE with the key pair in KEY to the node whose
 *       public key is in PUB. Flow control, as a client that reads slowly:
 *       --hwm N keeps at most N messages in the client's queue (and 4 KB in
 *       the kernel's); --slow N MS waits MS ms before each of the first N
 *       frames; --stop N PATH reads nothing after the N-th frame until PATH
 *       exists (at most MS ms of --timeout), then goes on.
 *   inferctl raw EP TEXT [--timeout MS] [--curve KEY PUB] [--frames N] [--size BYTES]
 *       sends TEXT as one frame, as it is, and prints the reply (exit codes
 *       as above). --size repeats TEXT up to BYTES bytes; --frames sends
 *       the frame N times as one multipart message.
 *   inferctl listen EP SECONDS [--until-end REQ]
 *       subscribes to every telemetry topic and prints each message as one
 *       JSON line, the payload with "topic" added, for SECONDS, or until the
 *       end message of request REQ. A message the protocol module cannot
 *       decode prints as {"topic":..,"invalid":..}.
 *   inferctl frame EP KIND [JSON] [--op N] [--step N] [--pos N] [--n N] [--dim N]
 *                  [--curve KEY PUB]
 *       pushes one stage-to-stage frame of KIND (prepare, set, hidden, ...)
 *       to a stage's --listen EP, as any peer that reaches the port could:
 *       the header's fields as given (step -1, token -1, the rest 0 by
 *       default), then JSON, or for hidden n * dim zero floats. With
 *       --curve, as a CURVE client with the key pair in KEY to the stage
 *       whose public key is in PUB. Exit 0 once the frame is sent.
 *   inferctl subflood EP N BYTES SECONDS
 *       connects a subscriber to EP that subscribes to N random prefixes of
 *       BYTES upper-case letters each (none a topic's), as a careless or hostile
 *       subscriber could, and stays connected for SECONDS.
 *   inferctl ports N
 *       prints N distinct TCP ports free on 127.0.0.1, one per line, below
 *       (or above) the ephemeral range that inferd serve refuses.
 *   inferctl portrun N
 *       prints the first of N consecutive TCP ports free on 127.0.0.1 outside
 *       that range (a node of a cluster file's second form uses a port and
 *       the next two).
 *   inferctl kvblock HEAD_DIM BITS
 *       prints kv_block_bytes() of one layer and KV head with the default
 *       block: what the KV accounting of a node must follow.
 *   inferctl get PATH...
 *       reads JSON lines on stdin and prints, for each line that has the
 *       first PATH, the values of every PATH separated by tabs. A path is
 *       dotted keys and array indices (error.code, stages.1.kv_bits);
 *       strings print raw, objects and arrays as compact JSON, a missing
 *       value as "-". The scripts use it instead of depending on jq.
 *
 * It links the engine's protocol module and client, so a test that passes
 * through it checks the node against the same decoders every client uses.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <zmq.h>

#include "engine/compute/kvcache.h"
#include "engine/node/ring.h"
#include "engine/proto/client.h"
#include "engine/proto/protocol.h"
#include "engine/sys/clock.h"
#include "engine/sys/ports.h"

static int usage(void)
{
    fprintf(stderr, "usage: inferctl call EP OP [ARGS_JSON] [--id ID] [--timeout MS] "
                    "[--curve KEY PUB] [--hwm N] [--slow N MS] [--stop N PATH]\n"
                    "       inferctl raw EP TEXT [--timeout MS] [--curve KEY PUB] [--frames N] "
                    "[--size BYTES]\n"
                    "       inferctl listen EP SECONDS [--until-end REQ]\n"
                    "       inferctl frame EP KIND [JSON] [--op N] [--step N] [--pos N] [--n N] "
                    "[--dim N] [--curve KEY PUB]\n"
                    "       inferctl subflood EP N BYTES SECONDS\n"
                    "       inferctl ports N\n"
                    "       inferctl portrun N\n"
                    "       inferctl kvblock HEAD_DIM BITS\n"
                    "       inferctl get PATH...\n");
    return 2;
}

/* Trailing options of call and raw. */
typedef struct call_opts {
    const char *id;
    int timeout_ms;
    const char *curve_key, *curve_pub;
    int frames;                  /* raw: parts of the message */
    size_t size;                 /* raw: bytes of each part; 0: TEXT as it is */
    int hwm;                     /* call: the DEALER's receive high-water mark; 0: ZeroMQ's */
    int slow_n, slow_ms, stop_n; /* call: how slowly frames are read */
    const char *stop_path;       /* call: --stop's file */
} call_opts;

/* Prints reply frames of request `id` until the final one, read at the
 * pace o asks. */
static int print_replies(client *c, const char *id, const call_opts *o)
{
    char err[512];
    for (int n = 0;; n++) {
        if (n < o->slow_n)
            usleep((useconds_t)o->slow_ms * 1000u);
        for (int t = 0; n == o->stop_n && o->stop_path && access(o->stop_path, F_OK) != 0;
             t += 20) {
            if (t >= o->timeout_ms) {
                fprintf(stderr, "inferctl: %s did not appear in %d ms\n", o->stop_path,
                        o->timeout_ms);
                return 2;
            }
            usleep(20000);
        }
        proto_reply r;
        int got = client_recv(c, &r, o->timeout_ms, err, sizeof err);
        if (got == 0) {
            fprintf(stderr, "inferctl: no reply for %d ms\n", o->timeout_ms);
            return 2;
        }
        if (got < 0) {
            fprintf(stderr, "inferctl: %s\n", err);
            return 2;
        }
        if (id && strcmp(r.id, id) != 0) {
            proto_reply_free(&r);
            continue;
        }
        char *line = json_dumps(r.json, JSON_COMPACT);
        if (line) {
            puts(line);
            fflush(stdout);
            free(line);
        }
        int done = r.done, ok = r.ok;
        proto_reply_free(&r);
        if (done)
            return ok ? 0 : 1;
    }
}

static int parse_tail(int argc, char **argv, int from, call_opts *o)
{
    for (int i = from; i < argc; i++) {
        if (strcmp(argv[i], "--id") == 0 && i + 1 < argc) {
            o->id = argv[++i];
        } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            o->timeout_ms = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--curve") == 0 && i + 2 < argc) {
            o->curve_key = argv[++i];
            o->curve_pub = argv[++i];
        } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
            o->frames = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            o->size = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--hwm") == 0 && i + 1 < argc) {
            o->hwm = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--slow") == 0 && i + 2 < argc) {
            o->slow_n = atoi(argv[++i]);
            o->slow_ms = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--stop") == 0 && i + 2 < argc) {
            o->stop_n = atoi(argv[++i]);
            o->stop_path = argv[++i];
        } else {
            fprintf(stderr, "inferctl: unexpected argument '%s'\n", argv[i]);
            return -1;
        }
    }
    return 0;
}

/* A receive queue of o->hwm messages and a small kernel buffer, so that
 * a slow reader fills them in a few hundred frames. The client connects
 * as it opens; queue limits apply to a connection made after they are
 * set, so it connects again. */
static int limit_queue(client *c, const char *ep, const call_opts *o, char *err, size_t errlen)
{
    void *s = client_socket(c);
    int buf = 4096;
    if (o->hwm <= 0)
        return 0;
    if (zmq_disconnect(s, ep) != 0 || zmq_setsockopt(s, ZMQ_RCVHWM, &o->hwm, sizeof o->hwm) != 0 ||
        zmq_setsockopt(s, ZMQ_RCVBUF, &buf, sizeof buf) != 0 || zmq_connect(s, ep) != 0) {
        snprintf(err, errlen, "--hwm %d: %s", o->hwm, zmq_strerror(errno));
        client_close(c);
        return -1;
    }
    return 0;
}

/* Connects to EP, with CURVE when asked. */
static int open_client(client **c, const char *ep, const call_opts *o, char *err, size_t errlen)
{
    if (!o->curve_key)
        return client_open(c, NULL, ep, NULL, err, errlen) != 0
                   ? -1
                   : limit_queue(*c, ep, o, err, errlen);
    client_curve cc;
    curve_keypair server;
    if (curve_keypair_load(o->curve_key, 1, &cc.keys, err, errlen) != 0 ||
        curve_keypair_load(o->curve_pub, 0, &server, err, errlen) != 0)
        return -1;
    snprintf(cc.server_public, sizeof cc.server_public, "%s", server.public_key);
    return client_open(c, NULL, ep, &cc, err, errlen) != 0 ? -1
                                                           : limit_queue(*c, ep, o, err, errlen);
}

static int cmd_call(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    const char *ep = argv[2], *op = argv[3];
    int from = 4;
    json_t *req = NULL;
    if (argc > 4 && argv[4][0] == '{') {
        json_error_t je;
        req = json_loads(argv[4], 0, &je);
        if (!json_is_object(req)) {
            fprintf(stderr, "inferctl: ARGS is not a JSON object: %s\n", je.text);
            json_decref(req);
            return 2;
        }
        from = 5;
    } else {
        req = json_object();
    }
    char default_id[32];
    snprintf(default_id, sizeof default_id, "ctl-%ld", (long)getpid());
    call_opts o = {.id = default_id, .timeout_ms = 30000};
    if (parse_tail(argc, argv, from, &o) != 0) {
        json_decref(req);
        return 2;
    }
    const char *id = o.id;
    json_object_set_new(req, "v", json_integer(PROTO_VERSION));
    json_object_set_new(req, "id", json_string(id));
    json_object_set_new(req, "op", json_string(op));
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char err[512];
    client *c;
    if (!text || open_client(&c, ep, &o, err, sizeof err) != 0) {
        fprintf(stderr, "inferctl: %s\n", text ? err : "out of memory");
        free(text);
        return 2;
    }
    int rc = client_send_raw(c, text, strlen(text), err, sizeof err);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "inferctl: %s\n", err);
        client_close(c);
        return 2;
    }
    rc = print_replies(c, id, &o);
    client_close(c);
    return rc;
}

/* TEXT repeated up to size bytes (size 0: TEXT itself). */
static char *raw_payload(const char *text, size_t size, size_t *len)
{
    size_t n = strlen(text);
    *len = size ? size : n;
    char *buf = malloc(*len + 1);
    for (size_t i = 0; buf && i < *len; i++)
        buf[i] = n ? text[i % n] : ' ';
    return buf;
}

static int cmd_raw(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    call_opts o = {.timeout_ms = 30000, .frames = 1};
    if (parse_tail(argc, argv, 4, &o) != 0 || o.frames < 1)
        return 2;
    char err[512];
    size_t len;
    char *buf = raw_payload(argv[3], o.size, &len);
    client *c;
    if (!buf || open_client(&c, argv[2], &o, err, sizeof err) != 0) {
        fprintf(stderr, "inferctl: %s\n", buf ? err : "out of memory");
        free(buf);
        return 2;
    }
    for (int i = 0; i < o.frames; i++) {
        if (zmq_send(client_socket(c), buf, len, i < o.frames - 1 ? ZMQ_SNDMORE : 0) < 0) {
            fprintf(stderr, "inferctl: sending: %s\n", zmq_strerror(errno));
            free(buf);
            client_close(c);
            return 2;
        }
    }
    free(buf);
    int rc = print_replies(c, NULL, &o);
    client_close(c);
    return rc;
}

/* One telemetry message as a JSON line. Returns 1 when it is the end
 * message of request `until` (may be NULL). */
static int print_tel(zmq_msg_t *topic, zmq_msg_t *payload, const char *until)
{
    int end = 0;
    proto_tel t;
    char err[512];
    json_t *line;
    char name[32];
    size_t tl = zmq_msg_size(topic) < sizeof name - 1 ? zmq_msg_size(topic) : sizeof name - 1;
    memcpy(name, zmq_msg_data(topic), tl);
    name[tl] = '\0';
    if (proto_tel_decode(zmq_msg_data(topic), zmq_msg_size(topic), zmq_msg_data(payload),
                         zmq_msg_size(payload), &t, err, sizeof err) != 0) {
        line = json_pack("{ss ss}", "topic", name, "invalid", err);
    } else {
        /* Print what was on the wire: the decoder's own tree is not kept
         * for step messages (proto_step_scan.c). */
        line = json_loadb(zmq_msg_data(payload), zmq_msg_size(payload), 0, NULL);
        json_object_set_new(line, "topic", json_string(name));
        end = until && t.topic == PROTO_TOPIC_REQ && t.req.end && strcmp(t.req.req, until) == 0;
        proto_tel_free(&t);
    }
    char *text = json_dumps(line, JSON_COMPACT);
    if (text) {
        puts(text);
        fflush(stdout);
        free(text);
    }
    json_decref(line);
    return end;
}

static int cmd_listen(int argc, char **argv)
{
    const char *until = NULL;
    if (argc == 6 && strcmp(argv[4], "--until-end") == 0)
        until = argv[5];
    else if (argc != 4)
        return usage();
    double seconds = atof(argv[3]);
    void *ctx = zmq_ctx_new();
    void *sub = zmq_socket(ctx, ZMQ_SUB);
    int linger = 0;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_connect(sub, argv[2]) != 0) {
        fprintf(stderr, "inferctl: %s: %s\n", argv[2], zmq_strerror(errno));
        zmq_close(sub);
        zmq_ctx_term(ctx);
        return 2;
    }
    double end = clock_ms() + seconds * 1000.0;
    int done = 0;
    for (double now = clock_ms(); now < end && !done; now = clock_ms()) {
        zmq_pollitem_t item = {.socket = sub, .events = ZMQ_POLLIN};
        if (zmq_poll(&item, 1, (long)(end - now) + 1) <= 0)
            continue;
        zmq_msg_t topic, payload;
        zmq_msg_init(&topic);
        zmq_msg_init(&payload);
        if (zmq_msg_recv(&topic, sub, 0) >= 0 && zmq_msg_more(&topic) &&
            zmq_msg_recv(&payload, sub, 0) >= 0)
            done = print_tel(&topic, &payload, until);
        zmq_msg_close(&topic);
        zmq_msg_close(&payload);
    }
    zmq_close(sub);
    zmq_ctx_term(ctx);
    return 0;
}

static ring_kind kind_named(const char *name)
{
    for (int k = 1; k < RING_KIND_COUNT; k++)
        if (strcmp(name, ring_kind_name((ring_kind)k)) == 0)
            return (ring_kind)k;
    return RING_KIND_COUNT;
}

/* Header options of `frame`; the JSON payload, if any, stays in *json. */
static int frame_args(int argc, char **argv, ring_hdr *h, const char **json, call_opts *o)
{
    for (int i = 4; i < argc; i++) {
        if (argv[i][0] == '{') {
            *json = argv[i];
        } else if (strcmp(argv[i], "--curve") == 0 && i + 2 < argc) {
            o->curve_key = argv[++i];
            o->curve_pub = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--op") == 0) {
            h->op = strtoull(argv[++i], NULL, 10);
        } else if (i + 1 < argc && strcmp(argv[i], "--step") == 0) {
            h->step = strtoll(argv[++i], NULL, 10);
        } else if (i + 1 < argc && strcmp(argv[i], "--pos") == 0) {
            h->pos = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--n") == 0) {
            h->n = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--dim") == 0) {
            h->dim = atoi(argv[++i]);
        } else {
            fprintf(stderr, "inferctl: unexpected argument '%s'\n", argv[i]);
            return -1;
        }
    }
    return 0;
}

static int cmd_frame(int argc, char **argv)
{
    if (argc < 4 || kind_named(argv[3]) == RING_KIND_COUNT)
        return usage();
    ring_hdr h = {.kind = kind_named(argv[3]), .op = 1, .step = -1, .token = -1};
    const char *json = "";
    call_opts o = {0};
    if (frame_args(argc, argv, &h, &json, &o) != 0)
        return 2;
    size_t payload =
        h.kind == RING_HIDDEN ? (size_t)h.n * (size_t)h.dim * sizeof(float) : strlen(json);
    unsigned char *buf = calloc(1, RING_HDR_BYTES + payload);
    if (!buf)
        return 2;
    ring_hdr_encode(&h, buf);
    if (h.kind != RING_HIDDEN)
        memcpy(buf + RING_HDR_BYTES, json, payload);
    void *ctx = zmq_ctx_new();
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    int linger = 2000, rc = 0;
    char err[512] = "";
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    curve_keypair me, server;
    if (o.curve_key && (curve_keypair_load(o.curve_key, 1, &me, err, sizeof err) != 0 ||
                        curve_keypair_load(o.curve_pub, 0, &server, err, sizeof err) != 0 ||
                        curve_client_apply(push, &me, server.public_key, err, sizeof err) != 0))
        rc = 2;
    if (rc == 0 &&
        (zmq_connect(push, argv[2]) != 0 || zmq_send(push, buf, RING_HDR_BYTES + payload, 0) < 0)) {
        snprintf(err, sizeof err, "%s: %s", argv[2], zmq_strerror(errno));
        rc = 2;
    }
    if (rc != 0)
        fprintf(stderr, "inferctl: %s\n", err);
    free(buf);
    zmq_close(push);
    zmq_ctx_term(ctx);
    return rc;
}

static int cmd_subflood(int argc, char **argv)
{
    if (argc != 6)
        return usage();
    int n = atoi(argv[3]), bytes = atoi(argv[4]);
    if (n < 1 || bytes < 1 || bytes > 4096)
        return usage();
    void *ctx = zmq_ctx_new();
    void *sub = zmq_socket(ctx, ZMQ_SUB);
    int linger = 0, unbounded = 0;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof linger);
    /* Every subscription reaches the node, none dropped on the way out. */
    zmq_setsockopt(sub, ZMQ_SNDHWM, &unbounded, sizeof unbounded);
    if (zmq_connect(sub, argv[2]) != 0) {
        fprintf(stderr, "inferctl: %s: %s\n", argv[2], zmq_strerror(errno));
        zmq_close(sub);
        zmq_ctx_term(ctx);
        return 2;
    }
    /* Pseudo-random letters: strings that share no prefix cost the
     * publisher's prefix tree the most. */
    char *buf = malloc((size_t)bytes);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; buf && i < n; i++) {
        for (int k = 0; k < bytes; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[k] = (char)('A' + x % 26);
        }
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, buf, (size_t)bytes);
    }
    free(buf);
    double end = clock_ms() + atof(argv[5]) * 1000.0;
    for (double now = clock_ms(); now < end; now = clock_ms()) {
        zmq_pollitem_t item = {.socket = sub, .events = ZMQ_POLLIN};
        zmq_poll(&item, 1, (long)(end - now) + 1);
    }
    zmq_close(sub);
    zmq_ctx_term(ctx);
    return 0;
}

/* Node ports stay out of the ephemeral range, which inferd serve and the
 * cluster file refuse (engine/sys/ports.h): ports hands out a run too. */
static int cmd_ports(int argc, char **argv, int run)
{
    int n = argc == 3 ? atoi(argv[2]) : 0;
    if (n < 1 || n > 64)
        return usage();
    int first;
    char err[256];
    if (ports_free_run(n, &first, err, sizeof err) != 0) {
        fprintf(stderr, "inferctl: %s\n", err);
        return 2;
    }
    for (int i = 0; i < (run ? 1 : n); i++)
        printf("%d\n", first + i);
    return 0;
}

static int cmd_kvblock(int argc, char **argv)
{
    if (argc != 4)
        return usage();
    kv_shape shape = {
        .n_layers = 1, .n_kv_heads = 1, .head_dim = atoi(argv[2]), .block = KV_BLOCK_DEFAULT};
    printf("%zu\n", kv_block_bytes(shape, atoi(argv[3])));
    return 0;
}

/* The value at a dotted path, or NULL. */
static json_t *json_path(json_t *v, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *key = strtok_r(buf, ".", &save); key && v; key = strtok_r(NULL, ".", &save)) {
        if (json_is_array(v)) {
            char *end;
            long i = strtol(key, &end, 10);
            v = *end == '\0' && i >= 0 ? json_array_get(v, (size_t)i) : NULL;
        } else {
            v = json_object_get(v, key);
        }
    }
    return v;
}

static void print_value(json_t *v)
{
    if (!v) {
        fputs("-", stdout);
    } else if (json_is_string(v)) {
        fputs(json_string_value(v), stdout);
    } else if (json_is_integer(v)) {
        printf("%lld", (long long)json_integer_value(v));
    } else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        fputs(text ? text : "?", stdout);
        free(text);
    }
}

static int cmd_get(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (o && json_path(o, argv[2])) {
            for (int i = 2; i < argc; i++) {
                if (i > 2)
                    fputc('\t', stdout);
                print_value(json_path(o, argv[i]));
            }
            fputc('\n', stdout);
        }
        json_decref(o);
    }
    free(line);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    if (strcmp(argv[1], "call") == 0)
        return cmd_call(argc, argv);
    if (strcmp(argv[1], "raw") == 0)
        return cmd_raw(argc, argv);
    if (strcmp(argv[1], "listen") == 0)
        return cmd_listen(argc, argv);
    if (strcmp(argv[1], "frame") == 0)
        return cmd_frame(argc, argv);
    if (strcmp(argv[1], "subflood") == 0)
        return cmd_subflood(argc, argv);
    if (strcmp(argv[1], "ports") == 0)
        return cmd_ports(argc, argv, 0);
    if (strcmp(argv[1], "portrun") == 0)
        return cmd_ports(argc, argv, 1);
    if (strcmp(argv[1], "get") == 0)
        return cmd_get(argc, argv);
    if (strcmp(argv[1], "kvblock") == 0)
        return cmd_kvblock(argc, argv);
    return usage();
}
