/* test_curve.c: key files, and a real CURVE ROUTER on tcp loopback with a
 * ZAP allow-list: an allowed client gets its reply, an unknown key and a
 * plain client get nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "engine/proto/client.h"
#include "engine/proto/curve.h"
#include "engine/proto/protocol.h"

/* Long enough for a loopback handshake on a loaded machine; the negative
 * cases wait this long for nothing to arrive. */
#define WAIT_MS 5000
#define SILENCE_MS 500

static char dir[] = "/tmp/infertop-curve-XXXXXX";

static void make_dir(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(curve, .init = make_dir, .fini = remove_dir);

static curve_keypair new_keys(void)
{
    curve_keypair kp;
    char err[256];
    cr_assert_eq(curve_keypair_new(&kp, err, sizeof err), 0, "%s", err);
    return kp;
}

Test(curve, key_files)
{
    char prefix[256], path[300], err[256];
    curve_keypair kp = new_keys(), back;
    struct stat st;

    snprintf(prefix, sizeof prefix, "%s/node", dir);
    cr_assert_eq(curve_keypair_write(&kp, prefix, err, sizeof err), 0, "%s", err);
    snprintf(path, sizeof path, "%s.key", prefix);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    cr_assert_eq(curve_keypair_load(path, 1, &back, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(back.public_key, kp.public_key);
    cr_assert_str_eq(back.secret_key, kp.secret_key);

    /* Never overwritten. */
    cr_assert_eq(curve_keypair_write(&kp, prefix, err, sizeof err), -1);
    cr_assert(strstr(err, "overwrite") != NULL, "%s", err);

    /* A secret key others can read is refused. */
    cr_assert_eq(chmod(path, 0644), 0);
    cr_assert_eq(curve_keypair_load(path, 1, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "chmod 600") != NULL, "%s", err);

    /* A .pub has no secret: fine for an allow-list, not for a node. */
    snprintf(path, sizeof path, "%s.pub", prefix);
    cr_assert_eq(curve_keypair_load(path, 0, &back, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(back.public_key, kp.public_key);
    cr_assert_str_eq(back.secret_key, "");
    cr_assert_eq(curve_keypair_load(path, 1, &back, err, sizeof err), -1);

    /* A damaged key names the file and line. */
    snprintf(path, sizeof path, "%s/bad.pub", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "# comment\npublic-key = tooshort\n");
    fclose(f);
    cr_assert_eq(curve_keypair_load(path, 0, &back, err, sizeof err), -1);
    cr_assert(strstr(err, "bad.pub:2") != NULL, "%s", err);
}

/* Serves one request if one arrives within ms: replies ok with its id. */
static int serve_one(void *router, int ms)
{
    zmq_pollitem_t item = {router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, ms) <= 0)
        return 0;
    char ident[256], frame[1024];
    int ni = zmq_recv(router, ident, sizeof ident, 0);
    int nf = zmq_recv(router, frame, sizeof frame, 0);
    cr_assert(ni > 0 && nf > 0);
    proto_request req;
    proto_error err;
    cr_assert_eq(proto_request_decode(frame, (size_t)nf, &req, &err), 0, "%s", err.message);
    char *reply = proto_reply_ok(req.id, NULL);
    cr_assert_not_null(reply);
    zmq_send(router, ident, (size_t)ni, ZMQ_SNDMORE);
    zmq_send(router, reply, strlen(reply), 0);
    free(reply);
    proto_request_free(&req);
    return 1;
}

/* Sends a status request from a client with these keys (NULL: plain) and
 * returns 1 if the node answered it. */
static int try_client(void *router, const char *ep, const curve_keypair *keys,
                      const char *server_public, int wait_ms)
{
    client_curve cc;
    client *c;
    char err[256], id[PROTO_ID_MAX + 1];
    proto_reply r;

    if (keys) {
        cc.keys = *keys;
        snprintf(cc.server_public, sizeof cc.server_public, "%s", server_public);
    }
    cr_assert_eq(client_open(&c, NULL, ep, keys ? &cc : NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(client_send(c, "status", NULL, id, sizeof id, err, sizeof err), 0, "%s", err);
    serve_one(router, wait_ms);
    int got = client_recv(c, &r, keys ? wait_ms : SILENCE_MS, err, sizeof err);
    cr_assert_neq(got, -1, "%s", err);
    if (got == 1) {
        cr_assert_str_eq(r.id, id);
        cr_assert(r.done && r.ok);
        proto_reply_free(&r);
    }
    client_close(c);
    return got == 1;
}

Test(curve, allow_list_on_a_real_router)
{
    char err[256], prefix[300], ep[256];
    size_t eplen = sizeof ep;
    curve_keypair server = new_keys(), alice = new_keys(), mallory = new_keys();
    curve_allow *allow;
    curve_zap *zap;

    snprintf(prefix, sizeof prefix, "%s/alice", dir);
    cr_assert_eq(curve_keypair_write(&alice, prefix, err, sizeof err), 0, "%s", err);
    cr_assert_eq(curve_allow_load(&allow, dir, err, sizeof err), 0, "%s", err);
    cr_assert_eq(curve_allow_count(allow), 1, "only *.pub files count");

    void *ctx = zmq_ctx_new();
    cr_assert_eq(curve_zap_start(&zap, ctx, allow, err, sizeof err), 0, "%s", err);
    void *router = zmq_socket(ctx, ZMQ_ROUTER);
    int linger = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(curve_server_apply(router, &server, err, sizeof err), 0, "%s", err);
    cr_assert_eq(zmq_bind(router, "tcp://127.0.0.1:*"), 0);
    cr_assert_eq(zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, ep, &eplen), 0);

    cr_expect(try_client(router, ep, &alice, server.public_key, WAIT_MS),
              "the allowed key got no reply");
    cr_expect(!try_client(router, ep, &mallory, server.public_key, SILENCE_MS),
              "an unknown key was served");
    cr_expect(!try_client(router, ep, NULL, NULL, SILENCE_MS), "a plain client was served");
    /* The allowed key still works after the refusals. */
    cr_expect(try_client(router, ep, &alice, server.public_key, WAIT_MS),
              "the allowed key got no reply after the refusals");

    zmq_close(router);
    curve_zap_stop(zap);
    cr_assert_eq(zmq_ctx_term(ctx), 0);
    curve_allow_free(allow);
}

Test(curve, empty_allow_list_is_an_error)
{
    curve_allow *allow;
    char err[256];
    cr_assert_eq(curve_allow_load(&allow, dir, err, sizeof err), -1);
    cr_assert(strstr(err, "no client keys") != NULL, "%s", err);
    cr_assert_eq(curve_allow_load(&allow, "/nonexistent-infertop", err, sizeof err), -1);
}
