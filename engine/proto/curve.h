/* curve.h: CURVE encryption and the client allow-list for a node's sockets.
 *
 * Key files are Z85 text (40 characters per 32-byte key), as zmq_curve_keypair
 * makes them, one `name = value` line each; '#' starts a comment line:
 *
 *   PREFIX.key  (mode 0600)        PREFIX.pub
 *     public-key = <40 chars>        public-key = <40 chars>
 *     secret-key = <40 chars>
 *
 * An allow-list is a directory of *.pub files, one client each. A node
 * started with --curve-secret FILE --curve-clients DIR makes both sockets
 * CURVE servers and runs a ZAP handler that admits only the listed keys.
 */
#ifndef CURVE_H
#define CURVE_H

#include <stddef.h>

#define CURVE_Z85_LEN 40
#define CURVE_ZAP_DOMAIN "inferd"

typedef struct curve_keypair {
    char public_key[CURVE_Z85_LEN + 1];
    char secret_key[CURVE_Z85_LEN + 1]; /* "" for a public-only key */
} curve_keypair;

int curve_keypair_new(curve_keypair *out, char *err, size_t errlen);

/* Writes PREFIX.key (both keys, mode 0600, created exclusively so an
 * existing key is never overwritten) and PREFIX.pub (the public key). */
int curve_keypair_write(const curve_keypair *kp, const char *prefix, char *err, size_t errlen);

/* Reads a key file. A .key file fills both keys; a .pub file only the
 * public key (secret_key ""). need_secret: fail when there is no secret.
 * A secret key file readable by group or others is refused. */
int curve_keypair_load(const char *path, int need_secret, curve_keypair *out, char *err,
                       size_t errlen);

/* The allowed client public keys. */
typedef struct curve_allow curve_allow;

/* Loads every *.pub file of dir (at least one). */
int curve_allow_load(curve_allow **out, const char *dir, char *err, size_t errlen);
int curve_allow_count(const curve_allow *a);
void curve_allow_free(curve_allow *a);

/* The ZAP handler of one zmq context: a REP socket on inproc://zeromq.zap.01
 * serviced by its own thread. It admits CURVE clients whose key is on the
 * list and denies everything else. Start it before binding the sockets it
 * guards. It borrows `allow`, which must outlive it. */
typedef struct curve_zap curve_zap;

int curve_zap_start(curve_zap **out, void *zctx, const curve_allow *allow, char *err,
                    size_t errlen);
/* Stops the thread and closes its socket; call before zmq_ctx_term. */
void curve_zap_stop(curve_zap *z);

/* Makes sock a CURVE server with kp's secret key, authenticated through
 * the ZAP domain. Before bind. */
int curve_server_apply(void *sock, const curve_keypair *kp, char *err, size_t errlen);

/* Makes sock a CURVE client with its own key pair, talking to the server
 * whose public key is server_public (Z85). Before connect. */
int curve_client_apply(void *sock, const curve_keypair *kp, const char *server_public, char *err,
                       size_t errlen);

#endif
