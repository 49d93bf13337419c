/* store_fill: writes three deterministic runs into a history database, for
 * the end-to-end tests of `infertop history`.
 *
 *   store_fill DB   prints the ids of the runs it wrote, one a line:
 *     1. growth, kv_bits 16: 4 ok requests up to 8192, completed
 *     2. growth, kv_bits 4: ok up to 4096, fails at 8192 (timeout), failed
 *     3. sweep of 4 legs (kv_bits 16/4 x prefill_step 256/512), completed
 */
#include <stdio.h>

#include "store/store.h"

static const char cluster[] = "{\"name\":\"lab\",\"model\":\"stories260K\",\"engine\":\"0.1.0\","
                              "\"nodes\":[{\"name\":\"n1\",\"layers\":[0,2]},"
                              "{\"name\":\"n2\",\"layers\":[3,5]}]}";

static void steps(store *s, int64_t run, int leg, int64_t req, int64_t from, int n, int kv)
{
    static const char *const nodes[2] = {"n1", "n2"};
    for (int k = 0; k < n; k++) {
        for (int node = 0; node < 2; node++) {
            store_step st = {.run = run,
                             .leg = leg,
                             .req = req,
                             .node = nodes[node],
                             .step = from + k,
                             .phase = k == 0 ? STORE_PHASE_PREFILL : STORE_PHASE_DECODE,
                             .tokens = 1,
                             .pos = from + k + 1,
                             .step_ms = 30 + (k * 7 + node * 3) % 10,
                             .model_ms = 7 + (k * 3) % 4,
                             .eval_ms = 23 + (k * 5 + node) % 6,
                             .wait_ms = 0.5,
                             .kv_bytes = (from + k) * 64 * kv,
                             .kv_bits = kv,
                             .prefill_step = 512,
                             .rss = 100 << 20,
                             .headroom = 1 << 30,
                             .t = 1.7e9 + from + k};
            store_step_add(s, &st);
        }
    }
}

static void request(store *s, int64_t run, int leg, int64_t idx, int64_t before, int64_t after,
                    int ok, double tps)
{
    store_request r = {.run = run,
                       .leg = leg,
                       .idx = idx,
                       .session = "stress-1",
                       .ctx_before = before,
                       .ctx_after = after,
                       .prompt_tokens = after - before - 32,
                       .gen_tokens = 32,
                       .ttft_ms = ok ? 100 + idx * 10 : -1,
                       .prefill_ms = ok ? 90 + idx * 10 : -1,
                       .prefill_tps = ok ? 2000 - idx * 100 : -1,
                       .decode_tps = ok ? tps : -1,
                       .tpot_ms = ok ? 1000 / tps : -1,
                       .itl_p50_ms = ok ? 1000 / tps : -1,
                       .itl_p99_ms = ok ? 1500 / tps : -1,
                       .prefill_step_ms = ok ? 20 + (double)after / 1000 : -1,
                       .decode_step_ms = ok ? 500 / tps : -1,
                       .e2e_ms = ok ? 500 + idx * 50 : -1,
                       .ok = ok,
                       .error_code = ok ? NULL : "timeout",
                       .error_message = ok ? NULL : "n2, did not answer in 30 s",
                       .t = 1.7e9 + idx};
    store_request_add(s, &r);
}

static int64_t begin(store *s, store_mode mode, const char *name, const char *notes)
{
    store_run_info info = {.name = name,
                           .notes = notes,
                           .mode = mode,
                           .params = "{\"target\":8192}",
                           .cluster = cluster};
    int64_t id;
    char err[512];
    if (store_run_begin(s, &info, &id, err, sizeof err) != 0) {
        fprintf(stderr, "store_fill: %s\n", err);
        return -1;
    }
    printf("%lld\n", (long long)id);
    return id;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: store_fill DB\n", stderr);
        return 2;
    }
    char err[512];
    store *s = store_open(argv[1], NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "store_fill: %s\n", err);
        return 1;
    }
    int64_t a = begin(s, STORE_MODE_GROWTH, "growth kv16", "baseline");
    int64_t b = begin(s, STORE_MODE_GROWTH, "growth kv4", "4-bit KV, \"quoted\" note");
    int64_t c = begin(s, STORE_MODE_SWEEP, "sweep", "");
    if (a < 0 || b < 0 || c < 0)
        return 1;

    store_leg_start(s, a, 0,
                    &(store_leg_info){.kv_bits = 16, .prefill_step = 512, .concurrency = 1});
    for (int i = 0; i < 4; i++) {
        steps(s, a, 0, i, 1024 << i, 20, 16);
        request(s, a, 0, i, i ? 1024 << (i - 1) : 0, 1024 << i, 1, 50 - i);
    }
    store_run_end(s, a, STORE_COMPLETED, NULL);

    store_leg_start(s, b, 0,
                    &(store_leg_info){.kv_bits = 4, .prefill_step = 512, .concurrency = 1});
    for (int i = 0; i < 4; i++) {
        steps(s, b, 0, i, 1024 << i, 20, 4);
        request(s, b, 0, i, i ? 1024 << (i - 1) : 0, 1024 << i, i < 3, 45 - i);
    }
    store_leg_end(s, b, 0, STORE_FAILED);
    store_run_end(s, b, STORE_FAILED, "node n2 timed out at context 8192");

    static const int kv[4] = {16, 16, 4, 4}, ps[4] = {256, 512, 256, 512};
    for (int leg = 0; leg < 4; leg++) {
        store_leg_start(
            s, c, leg,
            &(store_leg_info){.kv_bits = kv[leg], .prefill_step = ps[leg], .concurrency = 1});
        steps(s, c, leg, leg, 2048, 10, kv[leg]);
        request(s, c, leg, leg, 0, 2048, 1, 40 + leg);
        store_leg_end(s, c, leg, STORE_COMPLETED);
    }
    store_run_end(s, c, STORE_COMPLETED, NULL);

    int rc = store_flush(s, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "store_fill: %s\n", err);
    store_close(s);
    return rc != 0;
}
