/* bench_quality.c: what the quality measurement costs against a plain
 * eval of the same text (issue #30: at most 2.2 times, the two passes plus
 * the KL).
 *
 * Starts one `inferd serve` (found on $PATH) of synth:110m, stories110M's
 * shape (dim 768, 12 layers, vocabulary 32000: the KL's share grows with
 * the vocabulary against the layers), at kv_bits 16, and sends it the same
 * 1024 token ids as an `eval` and as a `quality` at kv_bits 16, 8 and 4
 * (the reference at 32 each time). The figure is the node's e2e_ms of each
 * request, the best of RUNS after a warm-up (noise only ever adds time). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "benchlib.h"

#define MODEL "synth:110m"
#define N_TOKENS 1024
#define RUNS 2

static const int BITS[] = {16, 8, 4};
#define N_BITS (int)(sizeof BITS / sizeof *BITS)

/* The text: BOS, then ids spread over the vocabulary. */
static json_t *tokens_json(void)
{
    json_t *a = json_array();
    for (int i = 0; a && i < N_TOKENS; i++)
        if (json_array_append_new(a, json_integer(i == 0 ? 1 : 3 + (i * 7919) % 31997))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Sends op with args (taken) and waits for its final frame: its e2e_ms to
 * *ms. Chunk frames are read and dropped, as a client would read them. */
static int timed(client *c, const char *op, json_t *args, double *ms)
{
    char id[PROTO_ID_MAX + 1], err[256];
    int rc = args ? client_send(c, op, args, id, sizeof id, err, sizeof err) : -1;
    json_decref(args);
    if (rc != 0) {
        fprintf(stderr, "bench_quality: cannot send %s: %s\n", op, args ? err : "out of memory");
        return -1;
    }
    for (;;) {
        proto_reply r;
        if (client_recv(c, &r, 300000, err, sizeof err) != 1) {
            fprintf(stderr, "bench_quality: no reply to %s: %s\n", op, err);
            return -1;
        }
        int done = r.done, ok = r.ok;
        if (done && ok)
            *ms = json_number_value(json_object_get(json_object_get(r.json, "stats"), "e2e_ms"));
        else if (done)
            fprintf(stderr, "bench_quality: %s failed: %s %s\n", op, r.code, r.message);
        proto_reply_free(&r);
        if (done)
            return ok ? 0 : -1;
    }
}

/* The best e2e_ms of RUNS requests: an eval (bits 0) or a quality at bits. */
static int best_of(client *c, int bits, double *best)
{
    *best = INFINITY;
    for (int i = 0; i < RUNS; i++) {
        json_t *args = json_pack("{so}", "tokens", tokens_json());
        if (args && bits)
            json_object_set_new(args, "kv_bits", json_integer(bits));
        double ms;
        if (timed(c, bits ? "quality" : "eval", args, &ms) != 0)
            return -1;
        if (ms < *best)
            *best = ms;
    }
    return 0;
}

int main(void)
{
    bench *b = bench_open("quality");
    static const char *const opts[] = {"--kv-bits", "16", "--prefill-step", "256", NULL};
    static const int bounds[] = {0, 12};
    bench_ring r;
    if (bench_ring_start(&r, 1, MODEL, bounds, opts) != 0)
        return 1;
    void *zctx = zmq_ctx_new();
    client *c = NULL;
    char err[256];
    int failed = !zctx || bench_ring_wait(&r, zctx, 120) != 0;
    if (!failed && client_open(&c, zctx, r.control[0], NULL, err, sizeof err) != 0) {
        fprintf(stderr, "bench_quality: %s: %s\n", r.control[0], err);
        failed = 1;
    }
    double eval_ms = NAN, warm;
    /* Pages in the weights and sizes the scratch; not kept. */
    if (!failed)
        failed = best_of(c, 0, &warm) != 0 || best_of(c, 0, &eval_ms) != 0;
    if (!failed)
        bench_add(b, "eval, 110m, 1024 tokens, kv_bits 16", eval_ms, "ms", NULL, -1);
    for (int i = 0; !failed && i < N_BITS; i++) {
        double ms;
        char name[96];
        if (best_of(c, BITS[i], &ms) != 0) {
            failed = 1;
            break;
        }
        snprintf(name, sizeof name, "quality, 110m, 1024 tokens, kv_bits %d vs 32", BITS[i]);
        bench_add(b, name, ms, "ms", NULL, -1);
        snprintf(name, sizeof name, "quality / eval, kv_bits %d", BITS[i]);
        bench_add(b, name, ms / eval_ms, "x", "<= 2.2 x", ms / eval_ms <= 2.2);
    }
    bench_note(b, "one node, --threads: online CPUs; the KL is computed on the node's head, "
                  "in double, two exps per vocabulary entry per position");
    client_close(c);
    if (zctx)
        zmq_ctx_term(zctx);
    bench_ring_stop(&r);
    return bench_close(b) == 0 && !failed ? 0 : 1;
}
