/* fuzz_request.c: libFuzzer target for the control-request decoder, the
 * one place a node parses bytes from the network. Whatever the input, the
 * decoder must return a request or a precise error without crashing or
 * leaking, and the error must still encode into a valid reply. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "engine/proto/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    proto_request req;
    proto_error err;

    if (proto_request_decode(data, size, &req, &err) == 0) {
        proto_request_free(&req);
        return 0;
    }
    if (err.code == PROTO_OK || err.message[0] == '\0')
        abort();
    char *reply = proto_reply_error(req.id, &err);
    if (!reply)
        abort();
    json_t *back = json_loads(reply, 0, NULL);
    if (!back)
        abort();
    json_decref(back);
    free(reply);
    return 0;
}
