/* fuzz_telemetry.c: libFuzzer target for the subscriber's telemetry
 * decoder, which reads bytes from every node a console watches.
 *
 * Each input is a step payload. The fast scanner (proto_step_scan.c) must
 * never accept what the jansson decoder, its reference, refuses, and must
 * fill bit-identical structs when both accept; the public decoder must
 * return a message or a worded error without crashing or leaking. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/proto/proto_step_scan.h"
#include "engine/proto/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    proto_head h;
    proto_step s;
    proto_tel ref, t;
    char err[PROTO_MESSAGE_MAX];

    int fast = proto_step_scan(data, size, &h, &s);
    int rc = proto_tel_decode_json("step", 4, data, size, &ref, err, sizeof err);
    if (rc != 0 && err[0] == '\0')
        abort();
    /* Both decoders start from zeroed structs and store members only, so
     * equal values mean equal bytes (doubles compared bit for bit). */
    if (fast &&
        (rc != 0 || memcmp(&h, &ref.head, sizeof h) != 0 || memcmp(&s, &ref.step, sizeof s) != 0))
        abort();
    proto_tel_free(&ref);

    if (proto_tel_decode("step", 4, data, size, &t, err, sizeof err) == 0)
        proto_tel_free(&t);
    else if (err[0] == '\0')
        abort();
    return 0;
}
