/* curve.c: CURVE key files, the client allow-list and the ZAP handler.
 *
 * CURVE (CurveZMQ) encrypts a connection and proves the server's identity
 * to clients that know its public key. Who may connect is decided by ZAP:
 * libzmq asks the handler bound at inproc://zeromq.zap.01 about every new
 * connection to a CURVE server socket, passing the client's public key.
 * Without a handler libzmq admits every client, so a node must start the
 * handler before it binds (curve.h says so).
 */
#include "curve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"

int curve_keypair_new(curve_keypair *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (zmq_curve_keypair(out->public_key, out->secret_key) != 0) {
        snprintf(err, errlen, "cannot make a CURVE key pair: %s (is libzmq built with CURVE?)",
                 zmq_strerror(errno));
        return -1;
    }
    return 0;
}

/* Creates path exclusively with mode and writes text; removes it again if
 * the write fails, so no half-written key is left behind. */
static int write_new(const char *path, mode_t mode, const char *text, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
                 errno == EEXIST ? " (refusing to overwrite a key)" : "");
        return -1;
    }
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int saved = errno;
    if (close(fd) != 0 && n == (ssize_t)len) {
        n = -1;
        saved = errno;
    }
    if (n != (ssize_t)len) {
        unlink(path);
        snprintf(err, errlen, "%s: %s", path, n < 0 ? strerror(saved) : "short write");
        return -1;
    }
    return 0;
}

int curve_keypair_write(const curve_keypair *kp, const char *prefix, char *err, size_t errlen)
{
    char key_path[4096], pub_path[4096], text[256];

    if (snprintf(key_path, sizeof key_path, "%s.key", prefix) >= (int)sizeof key_path ||
        snprintf(pub_path, sizeof pub_path, "%s.pub", prefix) >= (int)sizeof pub_path) {
        snprintf(err, errlen, "key file prefix is too long");
        return -1;
    }
    /* Both must be new: checking first means a failure leaves nothing half
     * done in the common case (an existing .pub). */
    if (access(pub_path, F_OK) == 0) {
        snprintf(err, errlen, "%s: already exists (refusing to overwrite a key)", pub_path);
        return -1;
    }
    snprintf(text, sizeof text,
             "# inferd CURVE key pair: keep secret (mode 0600)\n"
             "public-key = %s\nsecret-key = %s\n",
             kp->public_key, kp->secret_key);
    if (write_new(key_path, 0600, text, err, errlen))
        return -1;
    snprintf(text, sizeof text, "# inferd CURVE public key\npublic-key = %s\n", kp->public_key);
    if (write_new(pub_path, 0644, text, err, errlen)) {
        unlink(key_path);
        return -1;
    }
    return 0;
}

/* s without leading and trailing blanks (in place). */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Checks a Z85 key and copies it into out (CURVE_Z85_LEN + 1 bytes). */
static int z85_key(const char *value, char *out, const char *path, int line, char *err,
                   size_t errlen)
{
    uint8_t bin[32];
    if (strlen(value) != CURVE_Z85_LEN || !zmq_z85_decode(bin, value)) {
        snprintf(err, errlen, "%s:%d: expected a %d-character Z85 key", path, line, CURVE_Z85_LEN);
        return -1;
    }
    memcpy(out, value, CURVE_Z85_LEN + 1);
    return 0;
}

static int parse_keys(FILE *f, const char *path, curve_keypair *out, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t cap = 0;
    int line = 0, rc = 0;

    while (rc == 0 && getline(&buf, &cap, f) >= 0) {
        line++;
        char *s = trim(buf);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'public-key = ...' or 'secret-key = ...'", path,
                     line);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *name = trim(s), *value = trim(eq + 1);
        if (!strcmp(name, "public-key")) {
            rc = z85_key(value, out->public_key, path, line, err, errlen);
        } else if (!strcmp(name, "secret-key")) {
            rc = z85_key(value, out->secret_key, path, line, err, errlen);
        } else {
            snprintf(err, errlen, "%s:%d: unknown name '%.32s' (expected public-key or secret-key)",
                     path, line, name);
            rc = -1;
        }
    }
    free(buf);
    return rc;
}

int curve_keypair_load(const char *path, int need_secret, curve_keypair *out, char *err,
                       size_t errlen)
{
    struct stat st;

    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = fstat(fileno(f), &st) ? -1 : parse_keys(f, path, out, err, errlen);
    fclose(f);
    if (rc)
        return -1;
    if (out->secret_key[0] && (st.st_mode & 077)) {
        snprintf(err, errlen, "%s: holds a secret key but is readable by others (chmod 600 it)",
                 path);
        return -1;
    }
    if (need_secret && !out->secret_key[0]) {
        snprintf(err, errlen, "%s: no secret-key line (a .key file from `inferd keygen` is needed)",
                 path);
        return -1;
    }
    if (!out->public_key[0] && out->secret_key[0] &&
        zmq_curve_public(out->public_key, out->secret_key) != 0) {
        snprintf(err, errlen, "%s: cannot derive the public key: %s", path, zmq_strerror(errno));
        return -1;
    }
    if (!out->public_key[0]) {
        snprintf(err, errlen, "%s: no public-key line", path);
        return -1;
    }
    return 0;
}

struct curve_allow {
    int n;
    uint8_t (*keys)[32];
};

static int allow_add(curve_allow *a, const char *path, char *err, size_t errlen)
{
    curve_keypair kp;
    if (curve_keypair_load(path, 0, &kp, err, errlen))
        return -1;
    uint8_t(*keys)[32] = realloc(a->keys, (size_t)(a->n + 1) * sizeof *keys);
    if (!keys) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return -1;
    }
    a->keys = keys;
    zmq_z85_decode(a->keys[a->n++], kp.public_key);
    return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

int curve_allow_load(curve_allow **out, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    struct dirent *e;
    int rc = 0;

    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    curve_allow *a = calloc(1, sizeof *a);
    if (!a) {
        closedir(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_suffix(e->d_name, ".pub"))
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) {
            snprintf(err, errlen, "%s/%s: path too long", dir, e->d_name);
            rc = -1;
        } else {
            rc = allow_add(a, path, err, errlen);
        }
    }
    closedir(d);
    if (rc == 0 && a->n == 0) {
        snprintf(err, errlen, "%s: no client keys (*.pub files) in the allow-list", dir);
        rc = -1;
    }
    if (rc) {
        curve_allow_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

int curve_allow_count(const curve_allow *a)
{
    return a->n;
}

/* 1 if the 32-byte binary key is on the list. */
static int curve_allow_has(const curve_allow *a, const unsigned char key[32])
{
    for (int i = 0; i < a->n; i++)
        if (!memcmp(a->keys[i], key, 32))
            return 1;
    return 0;
}

void curve_allow_free(curve_allow *a)
{
    if (!a)
        return;
    free(a->keys);
    free(a);
}

/* ---- ZAP handler ---- */

struct curve_zap {
    pthread_t thread;
    void *rep;     /* the handler thread's: ZAP requests */
    void *stop_rx; /* the handler thread's: a message here ends it */
    void *stop_tx; /* the owner's */
    const curve_allow *allow;
};

/* A ZAP request (RFC 27): version, request id, domain, address, routing
 * id, mechanism, then the mechanism's credentials (CURVE: one 32-byte
 * public key). Anything past the first 8 frames is read and dropped. */
#define ZAP_FRAMES 8

typedef struct zap_request {
    zmq_msg_t part[ZAP_FRAMES];
    int n;
} zap_request;

static int zap_read(void *rep, zap_request *r)
{
    int more = 1;
    r->n = 0;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, rep, 0) < 0) {
            zmq_msg_close(&m);
            return -1;
        }
        more = zmq_msg_more(&m);
        if (r->n < ZAP_FRAMES)
            r->part[r->n++] = m;
        else
            zmq_msg_close(&m);
    }
    return 0;
}

static int zap_is(zmq_msg_t *m, const char *s)
{
    size_t n = strlen(s);
    return zmq_msg_size(m) == n && !memcmp(zmq_msg_data(m), s, n);
}

/* The verdict on a request: "200" and the client's Z85 key as user id, or
 * "400" with a reason. */
static const char *zap_judge(const curve_zap *z, zap_request *r, char *user, const char **text)
{
    if (r->n < 7 || !zap_is(&r->part[0], "1.0")) {
        *text = "malformed ZAP request";
        return "500";
    }
    if (!zap_is(&r->part[2], CURVE_ZAP_DOMAIN) || !zap_is(&r->part[5], "CURVE")) {
        *text = "only CURVE clients of the inferd domain are admitted";
        return "400";
    }
    if (zmq_msg_size(&r->part[6]) != 32 || !curve_allow_has(z->allow, zmq_msg_data(&r->part[6]))) {
        *text = "client key not on the allow-list";
        return "400";
    }
    zmq_z85_encode(user, zmq_msg_data(&r->part[6]), 32);
    *text = "OK";
    return "200";
}

static void zap_reply(void *rep, zap_request *r, const char *status, const char *text,
                      const char *user)
{
    const void *id = r->n > 1 ? zmq_msg_data(&r->part[1]) : "";
    size_t id_len = r->n > 1 ? zmq_msg_size(&r->part[1]) : 0;
    zmq_send(rep, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(rep, id, id_len, ZMQ_SNDMORE);
    zmq_send(rep, status, strlen(status), ZMQ_SNDMORE);
    zmq_send(rep, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(rep, user, strlen(user), ZMQ_SNDMORE);
    zmq_send(rep, "", 0, 0); /* metadata: none */
}

static void *zap_main(void *arg)
{
    curve_zap *z = arg;
    zmq_pollitem_t items[] = {{z->rep, 0, ZMQ_POLLIN, 0}, {z->stop_rx, 0, ZMQ_POLLIN, 0}};

    for (;;) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (items[1].revents & ZMQ_POLLIN)
            break;
        if (!(items[0].revents & ZMQ_POLLIN))
            continue;
        zap_request r;
        if (zap_read(z->rep, &r))
            break;
        char user[CURVE_Z85_LEN + 1] = "";
        const char *text;
        const char *status = zap_judge(z, &r, user, &text);
        zap_reply(z->rep, &r, status, text, user);
        for (int i = 0; i < r.n; i++)
            zmq_msg_close(&r.part[i]);
    }
    zmq_close(z->rep);
    zmq_close(z->stop_rx);
    return NULL;
}

/* Closes whatever start got to open. */
static void zap_close_sockets(curve_zap *z)
{
    if (z->rep)
        zmq_close(z->rep);
    if (z->stop_rx)
        zmq_close(z->stop_rx);
    if (z->stop_tx)
        zmq_close(z->stop_tx);
}

int curve_zap_start(curve_zap **out, void *zctx, const curve_allow *allow, char *err, size_t errlen)
{
    char stop_ep[64];
    int linger = 0;

    *out = NULL;
    curve_zap *z = calloc(1, sizeof *z);
    if (!z) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    z->allow = allow;
    snprintf(stop_ep, sizeof stop_ep, "inproc://curve-zap-stop-%p", (void *)z);
    /* Bound here, not in the thread: once start returns the handler exists
     * and a CURVE socket bound next can never meet a context without one. */
    if (!(z->rep = zmq_socket(zctx, ZMQ_REP)) || zmq_bind(z->rep, ZAP_ENDPOINT) ||
        !(z->stop_tx = zmq_socket(zctx, ZMQ_PAIR)) || zmq_bind(z->stop_tx, stop_ep) ||
        !(z->stop_rx = zmq_socket(zctx, ZMQ_PAIR)) || zmq_connect(z->stop_rx, stop_ep)) {
        snprintf(err, errlen, "ZAP handler: %s%s", zmq_strerror(errno),
                 errno == EADDRINUSE ? " (one handler per zmq context)" : "");
        zap_close_sockets(z);
        free(z);
        return -1;
    }
    /* Nothing they hold is worth keeping zmq_ctx_term waiting. */
    zmq_setsockopt(z->rep, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(z->stop_tx, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(z->stop_rx, ZMQ_LINGER, &linger, sizeof linger);
    int rc = pthread_create(&z->thread, NULL, zap_main, z);
    if (rc) {
        snprintf(err, errlen, "ZAP handler thread: %s", strerror(rc));
        zap_close_sockets(z);
        free(z);
        return -1;
    }
    *out = z;
    return 0;
}

void curve_zap_stop(curve_zap *z)
{
    if (!z)
        return;
    zmq_send(z->stop_tx, "", 0, 0);
    pthread_join(z->thread, NULL);
    zmq_close(z->stop_tx);
    free(z);
}

static int set_key(void *sock, int opt, const char *z85, const char *what, char *err, size_t errlen)
{
    if (strlen(z85) != CURVE_Z85_LEN) {
        snprintf(err, errlen, "CURVE %s: expected %d Z85 characters, got %zu", what, CURVE_Z85_LEN,
                 strlen(z85));
        return -1;
    }
    if (zmq_setsockopt(sock, opt, z85, CURVE_Z85_LEN + 1)) {
        snprintf(err, errlen, "CURVE %s: %s", what, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

int curve_server_apply(void *sock, const curve_keypair *kp, char *err, size_t errlen)
{
    int one = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, CURVE_ZAP_DOMAIN, strlen(CURVE_ZAP_DOMAIN))) {
        snprintf(err, errlen, "CURVE server: %s", zmq_strerror(errno));
        return -1;
    }
    return set_key(sock, ZMQ_CURVE_SECRETKEY, kp->secret_key, "secret key", err, errlen);
}

int curve_client_apply(void *sock, const curve_keypair *kp, const char *server_public, char *err,
                       size_t errlen)
{
    return set_key(sock, ZMQ_CURVE_SERVERKEY, server_public, "server key", err, errlen) ||
                   set_key(sock, ZMQ_CURVE_PUBLICKEY, kp->public_key, "public key", err, errlen) ||
                   set_key(sock, ZMQ_CURVE_SECRETKEY, kp->secret_key, "secret key", err, errlen)
               ? -1
               : 0;
}
