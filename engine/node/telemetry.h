/* telemetry.h: a node's PUB socket and the sequence number its messages
 * carry (a subscriber counts gaps in seq as lost messages).
 *
 * Publishing never blocks the node: a PUB socket drops messages for a
 * subscriber that does not keep up, which is what seq makes visible.
 */
#ifndef TELEMETRY_H
#define TELEMETRY_H

#include <stddef.h>

#include <jansson.h>

#include "curve.h"
#include "protocol.h"

typedef struct tel tel;

/* Binds a PUB socket on endpoint. curve: the node's key pair to make it a
 * CURVE server, or NULL. */
int tel_open(tel **out, void *zctx, const char *endpoint, const char *node,
             const curve_keypair *curve, char *err, size_t errlen);
void tel_close(tel *t);

/* Messages published so far (the next one's seq). */
unsigned long long tel_seq(const tel *t);

void tel_step(tel *t, const proto_step *s);
void tel_node(tel *t, const proto_status *s);
void tel_req(tel *t, const proto_req_msg *m);

/* An event: req and code may be "" (or NULL); detail: kind-specific
 * fields, or NULL. The message is printf-style. */
void tel_event(tel *t, proto_event_kind kind, const char *req, const char *code,
               const json_t *detail, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
