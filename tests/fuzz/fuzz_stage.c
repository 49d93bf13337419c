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
     * (hidden states, an eval's logits), a batch's segments and floats, a
     * batch's tokens, a token, or JSON. */
    int floats = f.h.kind == RING_HIDDEN || f.h.kind == RING_LOGITS;
    int batch = f.h.kind == RING_BATCH, tokens = f.h.kind == RING_TOKENS;
    int json_kind = !floats && !batch && !tokens && f.h.kind != RING_TOKEN;
    if (json_kind != (f.json != NULL) || batch != (f.segs != NULL) || tokens != (f.tokens != NULL))
        abort();
    size_t rows = (size_t)f.h.n * (size_t)f.h.dim * sizeof(float);
    if ((floats && rows + RING_HDR_BYTES != size) ||
        (batch && rows + (size_t)f.h.n * RING_SEG_BYTES + RING_HDR_BYTES != size) ||
        (tokens && (size_t)f.h.n * sizeof(int32_t) + RING_HDR_BYTES != size))
        abort();
    for (int i = 0; batch && i < f.h.n; i++)
        if (f.segs[i].op == 0 || f.segs[i].step < 0 || f.segs[i].pos < 0)
            abort();
    for (int i = 0; tokens && i < f.h.n; i++)
        if (f.tokens[i] < 0)
            abort();
    ring_frame_free(&f);
    return 0;
}
