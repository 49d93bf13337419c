/* fuzz_stage.c: libFuzzer target for the stage-frame decoder, which reads
 * what any peer that reaches a stage's --listen sends. Whatever the bytes,
 * the decoder must return a frame whose fields are all in range, or a
 * message, without crashing or leaking. */
#include <stdint.h>
#include <stdlib.h>

#include "engine/node/ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ring_frame f;
    char err[512] = "";
    if (ring_frame_decode(data, size, &f, err, sizeof err) != 0) {
        if (!err[0])
            abort();
        return 0;
    }
    /* An accepted frame's payload is exactly what its header claims: floats
     * (hidden states, an eval's logits), a token, or JSON. */
    int floats = f.h.kind == RING_HIDDEN || f.h.kind == RING_LOGITS;
    int json_kind = !floats && f.h.kind != RING_TOKEN;
    if (json_kind != (f.json != NULL))
        abort();
    if (floats &&
        (size_t)f.h.n * (size_t)f.h.dim * sizeof(float) + RING_HDR_BYTES != size)
        abort();
    ring_frame_free(&f);
    return 0;
}
