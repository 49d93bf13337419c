/* proto_step_scan.h: the fast decoder of `step` telemetry payloads and the
 * jansson decoder it must agree with (proto_tel_decode uses both; tests and
 * the telemetry fuzzer compare them). Everyone else calls proto_tel_decode.
 */
#ifndef PROTO_STEP_SCAN_H
#define PROTO_STEP_SCAN_H

#include <stddef.h>

#include "protocol.h"

/* Reads a step payload in one pass, without allocating. Returns 1 with *h
 * and *s filled exactly as the jansson decoder fills them; 0 when the
 * payload is outside the subset of JSON it reads, or is not a valid step
 * message: the caller then asks proto_tel_decode_json, which decides and
 * words the error. *h and *s are zeroed first either way. */
int proto_step_scan(const void *payload, size_t len, proto_head *h, proto_step *s);

/* proto_tel_decode through jansson only: the reference decoder, for every
 * topic. */
int proto_tel_decode_json(const void *topic, size_t topic_len, const void *payload, size_t len,
                          proto_tel *out, char *err, size_t errlen);

#endif
