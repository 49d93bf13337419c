/* bench_quality.c: what the quality measurement costs against a plain
 * eval of the same text (issue #30: at most 2.2 times, the two passes plus
 * the KL).
 *
 * Starts one `inferd serve` (found on $PATH) of synth:110m, stories110M's
 * shape (dim 768, 12 layers, vocabulary 32000: the KL's share grows with
 * the vocabulary against the layers), and for kv_bits 16, 8 and 4 sets the
 * node to that setting and sends it the same 512 token ids as an `eval`
 * (one pass at the setting) and as a `quality` at that setting (the
 * reference at 32, then the test). The figure is the CPU time the node's
 * process spent on each request (from /proc: on a machine shared with
 * other work, wall time measures the neighbours), the best of RUNS after a
 * warm-up (noise only ever adds time); the wall times are shown beside. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <zmq.h>

#include "benchlib.h"

#define MODEL "synth:110m"
#define N_TOKENS 512
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

/* CPU seconds (user + system) process pid has used, NaN when unreadable. */
static double cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* Fields 14 and 15, counted after the command's closing parenthesis. */
    const char *p = strrchr(buf, ')');
    unsigned long utime, stime;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return NAN;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static pid_t node_pid;

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

/* The best CPU and e2e times of RUNS requests: an eval (bits 0) or a
 * quality at bits. */
static int best_of(client *c, int bits, double *cpu, double *wall)
{
    *cpu = *wall = INFINITY;
    for (int i = 0; i < RUNS; i++) {
        json_t *args = json_pack("{so}", "tokens", tokens_json());
        if (args && bits)
            json_object_set_new(args, "kv_bits", json_integer(bits));
        double ms, t0 = cpu_s(node_pid);
        if (timed(c, bits ? "quality" : "eval", args, &ms) != 0)
            return -1;
        double used = cpu_s(node_pid) - t0;
        if (used < *cpu)
            *cpu = used;
        if (ms < *wall)
            *wall = ms;
    }
    return 0;
}

int main(void)
{
    bench *b = bench_open("quality");
    static const char *const opts[] = {"--prefill-step", "256", NULL};
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
    double warm, warm_wall;
    node_pid = r.pid[0];
    /* Pages in the weights and sizes the scratch; not kept. */
    if (!failed)
        failed = best_of(c, 0, &warm, &warm_wall) != 0;
    for (int i = 0; !failed && i < N_BITS; i++) {
        double eval_s, eval_ms, q_s, q_ms;
        char name[96];
        json_t *set = json_pack("{si}", "kv_bits", BITS[i]);
        if (timed(c, "set", set, &warm) != 0 || best_of(c, 0, &eval_s, &eval_ms) != 0 ||
            best_of(c, BITS[i], &q_s, &q_ms) != 0) {
            failed = 1;
            break;
        }
        snprintf(name, sizeof name, "eval, 110m, %d tokens, kv_bits %d, CPU", N_TOKENS, BITS[i]);
        bench_add(b, name, eval_s, "s", NULL, -1);
        snprintf(name, sizeof name, "eval, 110m, %d tokens, kv_bits %d, wall", N_TOKENS, BITS[i]);
        bench_add(b, name, eval_ms / 1000.0, "s", NULL, -1);
        snprintf(name, sizeof name, "quality, kv_bits %d vs 32, CPU", BITS[i]);
        bench_add(b, name, q_s, "s", NULL, -1);
        snprintf(name, sizeof name, "quality, kv_bits %d vs 32, wall", BITS[i]);
        bench_add(b, name, q_ms / 1000.0, "s", NULL, -1);
        snprintf(name, sizeof name, "quality / eval CPU time, kv_bits %d", BITS[i]);
        bench_add(b, name, q_s / eval_s, "x", "<= 2.2 x", q_s / eval_s <= 2.2);
    }
    bench_note(b, "one node, --threads: online CPUs; the KL is computed on the node's head, "
                  "in double, two exps per vocabulary entry per position");
    client_close(c);
    if (zctx)
        zmq_ctx_term(zctx);
    bench_ring_stop(&r);
    return bench_close(b) == 0 && !failed ? 0 : 1;
}
