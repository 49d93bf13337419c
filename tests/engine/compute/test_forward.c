/* test_forward.c: the forward pass beyond the reference continuation:
 * long contexts, pipeline stages, live KV conversion, batches of
 * sequences, bad input. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwd_harness.h"
#include "paths.h"

#define SMALL "synth:dim=64,hidden=172,layers=4,heads=4,kv_heads=2,vocab=512"
/* Few heads and layers: 8K positions of attention must stay cheap. */
#define LONG "synth:dim=64,hidden=172,layers=2,heads=2,kv_heads=1,vocab=512"
#define VOCAB 512

/* Under ASan + UBSan at -O1 the attention loops run ~200x slower: there
 * the long-context test checks memory safety over a shorter context. */
#ifdef __SANITIZE_ADDRESS__
#define LONG_CTX 2048
#else
#define LONG_CTX 8192
#endif

static void fill_tokens(int *ids, int n, int salt)
{
    for (int i = 0; i < n; i++)
        ids[i] = (i * 7919 + salt * 104729 + 13) % VOCAB;
}

static void assert_finite(const float *x, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        cr_assert(isfinite(x[i]), "%s[%d] = %f", what, i, x[i]);
}

/* Synthetic weights keep hidden states O(1) far past seq_len; the scratch
 * does not grow with the context, only with the chunk. */
Test(forward, finite_at_8k_context)
{
    enum { CTX = LONG_CTX, CHUNK = 512 };
    harness h;
    harness_open(&h, LONG, 16);
    int *ids = malloc(CTX * sizeof *ids);
    cr_assert_not_null(ids);
    fill_tokens(ids, CTX, 1);
    char err[256];
    size_t scratch = 0;
    for (int start = 0; start < CTX; start += CHUNK) {
        fwd_stats st;
        cr_assert_eq(
            fwd_step(h.fwd, h.kv, ids + start, NULL, CHUNK, NULL, h.logits, &st, err, sizeof err),
            0, "%s", err);
        cr_assert_eq(st.nonfinite, 0, "at position %d", start);
        cr_assert(st.act_max > 0.0f && st.act_max < 100.0f, "act_max %f at %d", st.act_max, start);
        cr_assert(st.model_ms >= 0.0);
        if (start == 0)
            scratch = fwd_scratch_bytes(h.fwd);
        cr_assert_eq(fwd_scratch_bytes(h.fwd), scratch);
    }
    cr_assert_eq(kv_len(h.kv), CTX);
    assert_finite(h.logits, VOCAB, "logits");
    int next[4];
    harness_greedy(&h, next, 4);
    assert_finite(h.logits, VOCAB, "decode logits");
    cr_assert_eq(kv_len(h.kv), CTX + 4);
    free(ids);
    harness_close(&h);
}

/* Stages [0,2) + [2,4) chained through x_out / x_in compute what one
 * stage [0,4) does. */
Test(forward, two_stages_match_one)
{
    char err[256];
    harness one;
    harness_open(&one, SMALL, 32);
    fwd_stage *head, *tail;
    kv_cache *kv_head, *kv_tail;
    cr_assert_eq(fwd_create(&head, one.m, 0, 2, one.pool, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fwd_create(&tail, one.m, 2, 4, one.pool, err, sizeof err), 0, "%s", err);
    cr_assert(fwd_is_head(head) && !fwd_is_tail(head));
    cr_assert(!fwd_is_head(tail) && fwd_is_tail(tail));
    cr_assert_eq(fwd_kv_shape(tail).n_layers, 2);
    cr_assert_eq(kv_create(&kv_head, fwd_kv_shape(head), 32, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_create(&kv_tail, fwd_kv_shape(tail), 32, err, sizeof err), 0, "%s", err);

    int ids[24];
    fill_tokens(ids, 24, 2);
    float x[16 * 64], logits[VOCAB];
    /* A chunk of 16, then single positions. */
    for (int start = 0; start < 24; start += start < 16 ? 16 : 1) {
        int n = start < 16 ? 16 : 1;
        cr_assert_eq(fwd_step(one.fwd, one.kv, ids + start, NULL, n, NULL, one.logits, NULL, err,
                              sizeof err),
                     0, "%s", err);
        cr_assert_eq(fwd_step(head, kv_head, ids + start, NULL, n, x, NULL, NULL, err, sizeof err),
                     0, "%s", err);
        cr_assert_eq(fwd_step(tail, kv_tail, NULL, x, n, NULL, logits, NULL, err, sizeof err), 0,
                     "%s", err);
        for (int i = 0; i < VOCAB; i++)
            cr_assert(fabsf(logits[i] - one.logits[i]) <= 1e-6f * (1.0f + fabsf(logits[i])),
                      "position %d logit %d: %.9g vs %.9g", start, i, logits[i], one.logits[i]);
    }
    cr_assert_eq(kv_len(kv_tail), 24);
    kv_free(kv_head);
    kv_free(kv_tail);
    fwd_free(head);
    fwd_free(tail);
    harness_close(&one);
}

static const int prompt_ids[] = {1, 403, 407, 261, 378};
static const int reference[32] = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
                                  338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
                                  265, 282, 295, 433, 426, 385, 328, 432, 358, 394};

/* Greedy decoding of the embedded model with the cache converted from
 * `from` to `to` bits after 12 tokens; returns how many of the 32 tokens
 * match the reference. */
static int matches_after_convert(int from, int to)
{
    char err[256];
    harness h;
    harness_open(&h, NULL, from);
    harness_prefill(&h, prompt_ids, 5, 5);
    int out[32];
    harness_greedy(&h, out, 12);
    int len = kv_len(h.kv);
    cr_assert_eq(kv_convert(h.kv, to, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_bits(h.kv), to);
    cr_assert_eq(kv_len(h.kv), len);
    harness_greedy(&h, out + 12, 20);
    harness_close(&h);
    int same = 0;
    for (int i = 0; i < 32; i++)
        same += out[i] == reference[i];
    return same;
}

Test(forward, live_kv_convert)
{
    cr_assert_eq(matches_after_convert(32, 16), 32);
    cr_assert_eq(matches_after_convert(16, 32), 32);
    int q8 = matches_after_convert(16, 8);
    cr_assert(q8 >= 24, "16->8: only %d of 32 tokens match", q8);
}

Test(forward, bad_steps_change_nothing)
{
    char err[256];
    harness h;
    harness_open(&h, SMALL, 16);
    int ids[3] = {1, 2, 3};
    harness_prefill(&h, ids, 3, 3);
    int bad[2] = {5, VOCAB};
    cr_assert_eq(fwd_step(h.fwd, h.kv, bad, NULL, 2, NULL, h.logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "token 512 at position 1 is out of range"), "%s", err);
    cr_assert_eq(fwd_step(h.fwd, h.kv, ids, NULL, 0, NULL, h.logits, NULL, err, sizeof err), -1);
    cr_assert_eq(kv_len(h.kv), 3);

    fwd_stage *s;
    cr_assert_eq(fwd_create(&s, h.m, 2, 5, h.pool, err, sizeof err), -1);
    cr_assert(strstr(err, "layers 2:5"), "%s", err);
    cr_assert_eq(fwd_create(&s, h.m, 0, 2, h.pool, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fwd_step(s, h.kv, ids, NULL, 1, NULL, NULL, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "non-tail stage needs an x_out"), "%s", err);
    float x[64];
    cr_assert_eq(fwd_step(s, h.kv, ids, NULL, 1, x, NULL, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "kv cache holds 4 layers"), "%s", err);
    cr_assert_eq(kv_len(h.kv), 3);
    fwd_free(s);
    harness_close(&h);
}

/* The memory guard admits chunks and batches by fwd_scratch_bytes_for:
 * the scratch held never exceeds it, reaches it once a chunk of n
 * positions and a batch of n sequences have run, and a release gives it
 * all back. */
Test(forward, scratch_is_predicted_and_released)
{
    enum { N = 40 };
    char err[256];
    harness h;
    harness_open(&h, SMALL, 16);
    int ids[N];
    fill_tokens(ids, N, 3);
    kv_shape shape = fwd_kv_shape(h.fwd);
    size_t most = fwd_scratch_bytes_for(h.fwd, shape, N);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), 0);
    harness_prefill(&h, ids, N, N);
    cr_assert_leq(fwd_scratch_bytes(h.fwd), most);
    kv_cache *kvs[N];
    for (int i = 0; i < N; i++)
        cr_assert_eq(kv_create(&kvs[i], shape, 16, err, sizeof err), 0, "%s", err);
    cr_assert_eq(fwd_step_batch(h.fwd, kvs, N, ids, NULL, NULL, NULL, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), most);
    cr_assert_gt(most, fwd_scratch_bytes_for(h.fwd, shape, N / 10));
    fwd_scratch_release(h.fwd);
    cr_assert_eq(fwd_scratch_bytes(h.fwd), 0);
    cr_assert_eq(fwd_step_batch(h.fwd, kvs, N, ids, NULL, NULL, NULL, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_assert_leq(fwd_scratch_bytes(h.fwd), most);
    fwd_scratch_release(h.fwd);
    int next[2];
    harness_greedy(&h, next, 2);
    cr_assert_leq(fwd_scratch_bytes(h.fwd), fwd_scratch_bytes_for(h.fwd, shape, 1));
    for (int i = 0; i < N; i++)
        kv_free(kvs[i]);
    harness_close(&h);
}

/* ---- batches of sequences ---- */

#define MAX_BATCH 16
#define BATCH_STEPS 3
static const int BATCHES[] = {1, 2, 3, 5, 16};
static const int KV_BITS[] = {32, 16, 8, 4};
#define N_BATCHES (int)(sizeof BATCHES / sizeof BATCHES[0])

/* Prompt lengths: several end just before a 64-position KV block, so that
 * the decode steps cross into the next one. */
static const int PROMPT_LEN[MAX_BATCH] = {62,  5,  63, 1,  30, 2,  17, 9,
                                          127, 45, 3,  64, 12, 20, 7,  126};

/* A model on one stage, or on two: layers [0, split) and [split, L). Two
 * threads, so that the products are split over the pool's tasks. */
typedef struct pipe {
    model *m;
    pool *pool;
    int n_stages;
    fwd_stage *st[2];
    int dim, vocab;
} pipe;

typedef struct seq {
    kv_cache *kv[2]; /* one per stage */
    int len;
} seq;

static void pipe_open(pipe *p, const char *spec, int split)
{
    char err[256];
    *p = (pipe){0};
    cr_assert_eq(model_load(&p->m, spec, err, sizeof err), 0, "%s: %s", spec, err);
    const model_config *c = model_config_of(p->m);
    p->dim = c->dim;
    p->vocab = c->vocab_size;
    cr_assert_eq(pool_create(&p->pool, 2, err, sizeof err), 0, "%s", err);
    int bounds[] = {0, split ? split : c->n_layers, c->n_layers};
    p->n_stages = split ? 2 : 1;
    for (int k = 0; k < p->n_stages; k++)
        cr_assert_eq(
            fwd_create(&p->st[k], p->m, bounds[k], bounds[k + 1], p->pool, err, sizeof err), 0,
            "%s", err);
}

static void pipe_close(pipe *p)
{
    for (int k = 0; k < p->n_stages; k++)
        fwd_free(p->st[k]);
    pool_free(p->pool);
    model_free(p->m);
}

static void seq_open(const pipe *p, seq *q, int bits)
{
    char err[256];
    q->len = 0;
    for (int k = 0; k < p->n_stages; k++)
        cr_assert_eq(kv_create(&q->kv[k], fwd_kv_shape(p->st[k]), bits, err, sizeof err), 0, "%s",
                     err);
}

static void seq_close(const pipe *p, seq *q)
{
    for (int k = 0; k < p->n_stages; k++)
        kv_free(q->kv[k]);
}

/* n tokens of one sequence through every stage: the head's hidden states
 * into x [n][dim] when split, the last position's logits into `logits`. */
static void run_alone(const pipe *p, seq *q, const int *ids, int n, float *x, float *logits,
                      fwd_stats *st)
{
    char err[256];
    if (p->n_stages == 1) {
        cr_assert_eq(fwd_step(p->st[0], q->kv[0], ids, NULL, n, NULL, logits, st, err, sizeof err),
                     0, "%s", err);
    } else {
        cr_assert_eq(fwd_step(p->st[0], q->kv[0], ids, NULL, n, x, NULL, NULL, err, sizeof err), 0,
                     "%s", err);
        cr_assert_eq(fwd_step(p->st[1], q->kv[1], NULL, x, n, NULL, logits, st, err, sizeof err), 0,
                     "%s", err);
    }
    q->len += n;
}

/* One token of each of b sequences through every stage in batches. */
static void run_batch(const pipe *p, seq *qs, int b, const int *tokens, float *x, float *logits,
                      fwd_stats *st)
{
    char err[256];
    kv_cache *kvs[2][MAX_BATCH];
    for (int i = 0; i < b; i++)
        for (int k = 0; k < p->n_stages; k++)
            kvs[k][i] = qs[i].kv[k];
    if (p->n_stages == 1) {
        cr_assert_eq(
            fwd_step_batch(p->st[0], kvs[0], b, tokens, NULL, NULL, logits, st, err, sizeof err), 0,
            "%s", err);
    } else {
        cr_assert_eq(
            fwd_step_batch(p->st[0], kvs[0], b, tokens, NULL, x, NULL, NULL, err, sizeof err), 0,
            "%s", err);
        cr_assert_eq(
            fwd_step_batch(p->st[1], kvs[1], b, NULL, x, NULL, logits, st, err, sizeof err), 0,
            "%s", err);
    }
    for (int i = 0; i < b; i++)
        qs[i].len++;
}

/* MAX_BATCH sequences, sequence i's caches in bits[i], prefilled to
 * different lengths twice over. Then for every batch size b, in turn,
 * BATCH_STEPS greedy decode steps of the first b in one batch and of
 * their copies alone: the head's hidden states (when split) and the
 * logits are the same bits, every cache grows by one a step, and the
 * batch's stats are those of its rows. */
static void check_batches(const pipe *p, const int *bits, const char *what)
{
    seq batch[MAX_BATCH], alone[MAX_BATCH];
    int tokens[MAX_BATCH], ids[128];
    float *xb = malloc((size_t)MAX_BATCH * p->dim * sizeof(float));
    float *lb = malloc((size_t)MAX_BATCH * p->vocab * sizeof(float));
    float *xa = malloc(128 * (size_t)p->dim * sizeof(float));
    float *la = malloc((size_t)p->vocab * sizeof(float));
    cr_assert(xb && lb && xa && la);
    for (int i = 0; i < MAX_BATCH; i++) {
        int n = PROMPT_LEN[i];
        for (int j = 0; j < n; j++)
            ids[j] = (j * 7919 + i * 104729 + 13) % p->vocab;
        seq_open(p, &batch[i], bits[i]);
        seq_open(p, &alone[i], bits[i]);
        run_alone(p, &batch[i], ids, n, xa, la, NULL);
        run_alone(p, &alone[i], ids, n, xa, la, NULL);
        tokens[i] = harness_argmax(la, p->vocab);
    }
    for (int bi = 0; bi < N_BATCHES; bi++) {
        int b = BATCHES[bi];
        for (int step = 0; step < BATCH_STEPS; step++) {
            fwd_stats st, st1;
            float act_max = 0;
            run_batch(p, batch, b, tokens, xb, lb, &st);
            for (int i = 0; i < b; i++) {
                run_alone(p, &alone[i], &tokens[i], 1, xa, la, &st1);
                act_max = st1.act_max > act_max ? st1.act_max : act_max;
                if (p->n_stages == 2)
                    cr_assert(memcmp(xb + (size_t)i * p->dim, xa, p->dim * sizeof(float)) == 0,
                              "%s, batch of %d: sequence %d's hidden state differs from "
                              "decoding it alone",
                              what, b, i);
                const float *row = lb + (size_t)i * p->vocab;
                for (int v = 0; v < p->vocab; v++)
                    cr_assert(memcmp(&row[v], &la[v], sizeof(float)) == 0,
                              "%s, batch of %d: sequence %d (kv%d, position %d) logit %d is "
                              "%.9g, alone %.9g",
                              what, b, i, bits[i], alone[i].len - 1, v, row[v], la[v]);
                for (int k = 0; k < p->n_stages; k++)
                    cr_assert_eq(kv_len(batch[i].kv[k]), batch[i].len);
                tokens[i] = harness_argmax(la, p->vocab);
            }
            cr_assert_eq(st.act_max, act_max, "%s, batch of %d: act_max", what, b);
            cr_assert_eq(st.nonfinite, 0);
            cr_assert(st.model_ms >= 0.0);
        }
    }
    for (int i = 0; i < MAX_BATCH; i++) {
        seq_close(p, &batch[i]);
        seq_close(p, &alone[i]);
    }
    free(xb), free(lb), free(xa), free(la);
}

/* Sequence i of a mixed batch: every cache precision, in turn. */
static void mixed_bits(int *bits)
{
    for (int i = 0; i < MAX_BATCH; i++)
        bits[i] = KV_BITS[(i + 1) % 4];
}

/* Every batch size, with all caches in one precision and all four mixed;
 * and with one KV head for four query heads, which a sequence alone
 * splits by rows over the pool's threads and a batch does not. */
Test(forward, batch_matches_alone_every_kv_bits)
{
    pipe p;
    pipe_open(&p, SMALL, 0);
    int bits[MAX_BATCH];
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < MAX_BATCH; i++)
            bits[i] = KV_BITS[k];
        check_batches(&p, bits, "synth f32");
    }
    mixed_bits(bits);
    check_batches(&p, bits, "synth f32, mixed kv");
    pipe_close(&p);
    pipe_open(&p, "synth:dim=64,hidden=172,layers=2,heads=4,kv_heads=1,vocab=512", 0);
    check_batches(&p, bits, "synth f32, one kv head");
    pipe_close(&p);
}

/* Every weight type (llama.cpp's files of a 256-wide model, whose rows
 * are whole groups of 256 values as in real models, and the synthetic
 * model's 64-wide f32 rows), on one stage and split in two. A test per
 * file: together they were one test of minutes on every path, the whole
 * binary's longest, which Criterion's jobs could not share out. */
static const char *const weight_files[] = {"r256-f32",  "r256-F16",    "r256-BF16",   "r256-Q8_0",
                                           "r256-Q4_0", "r256-Q4_K_M", "r256-Q5_K_M", "r256-Q6_K"};
#define N_WEIGHT_FILES (int)(sizeof weight_files / sizeof weight_files[0])
static int weight_case; /* the test's file (N_WEIGHT_FILES: the synthetic model) */

static void every_weight_type_on_path(void)
{
    int f = weight_case;
    int bits[MAX_BATCH];
    mixed_bits(bits);
    char spec[128];
    if (f < N_WEIGHT_FILES)
        snprintf(spec, sizeof spec, "tests/fixtures/gguf/%s.gguf", weight_files[f]);
    else
        snprintf(spec, sizeof spec, "%s", SMALL);
    for (int split = 0; split <= 1; split++) {
        pipe p;
        pipe_open(&p, spec, split ? 1 + f % 3 : 0);
        check_batches(&p, bits, spec);
        pipe_close(&p);
    }
}

ParameterizedTestParameters(forward, batch_matches_alone_every_weight_type)
{
    static int files[N_WEIGHT_FILES + 1];
    for (int f = 0; f <= N_WEIGHT_FILES; f++)
        files[f] = f;
    return cr_make_param_array(int, files, sizeof files / sizeof files[0]);
}

ParameterizedTest(int *f, forward, batch_matches_alone_every_weight_type)
{
    weight_case = *f;
    paths_each("forward::batch_matches_alone_every_weight_type", every_weight_type_on_path);
}

Test(forward, bad_batches_change_nothing)
{
    char err[256];
    pipe p;
    pipe_open(&p, SMALL, 0);
    fwd_stage *s = p.st[0];
    seq q[3];
    int ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float x[3 * 64], logits[3 * VOCAB];
    for (int i = 0; i < 3; i++) {
        seq_open(&p, &q[i], KV_BITS[i]);
        run_alone(&p, &q[i], ids, 3 + i, x, logits, NULL);
    }
    kv_cache *kvs[3] = {q[0].kv[0], q[1].kv[0], q[2].kv[0]};
    size_t bytes[3];
    for (int i = 0; i < 3; i++)
        bytes[i] = kv_bytes(kvs[i]);

    cr_assert_eq(fwd_step_batch(s, kvs, 0, ids, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "batch of 0 sequences"), "%s", err);
    cr_assert_eq(fwd_step_batch(s, kvs, -1, ids, NULL, NULL, logits, NULL, err, sizeof err), -1);

    int bad[3] = {5, VOCAB, 7};
    cr_assert_eq(fwd_step_batch(s, kvs, 3, bad, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "token 512 of sequence 1 is out of range"), "%s", err);
    bad[1] = -1;
    cr_assert_eq(fwd_step_batch(s, kvs, 3, bad, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert_eq(fwd_step_batch(s, kvs, 3, NULL, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "head stage needs token ids"), "%s", err);

    /* A cache of another stage's shape, one of another block size, one
     * cache for two sequences. */
    kv_cache *other, *blocks;
    fwd_stage *half;
    cr_assert_eq(fwd_create(&half, p.m, 0, 2, p.pool, err, sizeof err), 0, "%s", err);
    cr_assert_eq(kv_create(&other, fwd_kv_shape(half), 16, err, sizeof err), 0, "%s", err);
    kv_shape shape = fwd_kv_shape(s);
    shape.block = 32;
    cr_assert_eq(kv_create(&blocks, shape, 16, err, sizeof err), 0, "%s", err);
    kv_cache *wrong[3] = {kvs[0], kvs[1], other};
    cr_assert_eq(fwd_step_batch(s, wrong, 3, ids, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "sequence 2's kv cache holds 2 layers"), "%s", err);
    wrong[2] = blocks;
    cr_assert_eq(fwd_step_batch(s, wrong, 3, ids, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "sequence 2's kv cache has blocks of 32 positions"), "%s", err);
    wrong[2] = kvs[0];
    cr_assert_eq(fwd_step_batch(s, wrong, 3, ids, NULL, NULL, logits, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "sequences 0 and 2 share one kv cache"), "%s", err);
    /* The head of a split needs somewhere to put its hidden states. */
    kv_cache *halves[1] = {other};
    cr_assert_eq(fwd_step_batch(half, halves, 1, ids, NULL, NULL, NULL, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "non-tail stage needs an x_out"), "%s", err);

    for (int i = 0; i < 3; i++) {
        cr_assert_eq(kv_len(kvs[i]), q[i].len, "cache %d", i);
        cr_assert_eq(kv_bytes(kvs[i]), bytes[i], "cache %d", i);
    }
    cr_assert_eq(kv_len(other), 0);
    /* and a good batch still runs */
    cr_assert_eq(fwd_step_batch(s, kvs, 3, ids, NULL, NULL, logits, NULL, err, sizeof err), 0, "%s",
                 err);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(kv_len(kvs[i]), q[i].len + 1);
    kv_free(other);
    kv_free(blocks);
    fwd_free(half);
    for (int i = 0; i < 3; i++)
        seq_close(&p, &q[i]);
    pipe_close(&p);
}
