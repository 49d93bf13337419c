/* cmd_generate.c: `inferd generate`, one prompt run locally, the way
 * llama2.c's run.c does it: the prompt and its continuation stream to
 * stdout, one line of statistics goes to stderr. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "engine/compute/sampler.h"
#include "engine/sys/clock.h"
#include "engine/sys/memstat.h"
#include "local.h"

typedef struct gen_options {
    const char *model;     /* NULL: embedded */
    const char *tokenizer; /* NULL: embedded */
    const char *prompt;
    int steps;
    double temperature;
    double top_p;
    unsigned long long seed;
    int kv_bits;
    int prefill_step;
    int threads;
} gen_options;

/* Everything one generation holds; released by gen_close(). */
typedef struct gen_run {
    local l;
    sampler *smp;
    int *ids;
    float *logits;
} gen_run;

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, gen_options *o)
{
    opt_vals v;
    int rc = args_parse(OPT_V_GENERATE, argc, argv, &v);
    if (rc != 0)
        return rc;
    *o = (gen_options){
        .model = opt_str(&v, OPT_MODEL),
        .tokenizer = opt_str(&v, OPT_TOKENIZER),
        .prompt = opt_str(&v, OPT_PROMPT),
        .steps = (int)opt_int(&v, OPT_STEPS),
        .temperature = opt_num(&v, OPT_TEMPERATURE),
        .top_p = opt_num(&v, OPT_TOP_P),
        .seed = opt_given(&v, OPT_SEED)
                    ? opt_int(&v, OPT_SEED)
                    : (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32),
        .kv_bits = (int)opt_int(&v, OPT_KV_BITS),
        .prefill_step = (int)opt_int(&v, OPT_PREFILL_CHUNK),
        .threads = args_threads(&v),
    };
    return 0;
}

static void gen_close(gen_run *r)
{
    free(r->logits);
    free(r->ids);
    sampler_free(r->smp);
    local_close(&r->l);
}

static int gen_open(gen_run *r, const gen_options *o, char *err, size_t errlen)
{
    if (local_open(&r->l, o->model, o->tokenizer, o->threads, o->kv_bits, err, errlen) != 0)
        return -1;
    const model_config *c = model_config_of(r->l.m);
    if (sampler_create(&r->smp, c->vocab_size, (float)o->temperature, (float)o->top_p, o->seed, err,
                       errlen) != 0)
        return -1;
    r->ids = malloc(tok_max_tokens(strlen(o->prompt)) * sizeof *r->ids);
    r->logits = malloc((size_t)c->vocab_size * sizeof *r->logits);
    if (!r->ids || !r->logits) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Prints a piece unless it is a lone control byte (byte tokens can be
 * any byte). Unlike llama2.c's safe_printf, bytes >= 0x80 pass: they are
 * the parts of UTF-8 characters the vocabulary lacks. */
static void emit(const tokenizer *tok, int prev, int token)
{
    char buf[TOK_DECODE_BUF];
    const char *piece = tok_decode(tok, prev, token, buf);
    unsigned char first = (unsigned char)piece[0];
    if (first == '\0')
        return;
    if (piece[1] == '\0' && first < 0x80 && !isprint(first) && !isspace(first))
        return;
    fputs(piece, stdout);
    fflush(stdout);
}

/* The prompt in chunks of prefill_step positions, one step each; leaves
 * the logits of its last position. */
static int prefill(gen_run *r, int n, long chunk, char *err, size_t errlen)
{
    for (int start = 0; start < n; start += (int)chunk) {
        int len = n - start < chunk ? n - start : (int)chunk;
        if (fwd_step(r->l.fwd, r->l.kv, r->ids + start, NULL, len, NULL, r->logits, NULL, err,
                     errlen) != 0)
            return -1;
    }
    return 0;
}

/* Samples, prints and feeds back one token at a time, until `steps`
 * tokens or the model's end of text (tok_end). Returns tokens generated. */
static int decode(gen_run *r, int last_prompt_id, long steps, char *err, size_t errlen)
{
    int prev = last_prompt_id, generated = 0;
    while (generated < steps) {
        int next = sampler_sample(r->smp, r->logits);
        if (next == tok_end(r->l.tok))
            break;
        emit(r->l.tok, prev, next);
        generated++;
        prev = next;
        if (generated < steps &&
            fwd_step(r->l.fwd, r->l.kv, &next, NULL, 1, NULL, r->logits, NULL, err, errlen) != 0)
            return -1;
    }
    return generated;
}

static double per_second(double count, double ms)
{
    return ms > 0.0 ? count * 1000.0 / ms : 0.0;
}

int cmd_generate(int argc, char **argv)
{
    gen_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;

    char err[512];
    gen_run r = {0};
    if (gen_open(&r, &o, err, sizeof err) != 0) {
        fprintf(stderr, "inferd generate: %s\n", err);
        gen_close(&r);
        return 1;
    }
    int n = tok_encode(r.l.tok, o.prompt, 1, r.ids);
    if (n < 0) {
        fprintf(stderr, "inferd generate: out of memory encoding the prompt\n");
        gen_close(&r);
        return 1;
    }
    for (int i = 1; i < n; i++)
        emit(r.l.tok, r.ids[i - 1], r.ids[i]);

    double t0 = clock_ms();
    if (prefill(&r, n, o.prefill_step, err, sizeof err) != 0) {
        fprintf(stderr, "inferd generate: %s\n", err);
        gen_close(&r);
        return 1;
    }
    double t1 = clock_ms();
    int generated = decode(&r, r.ids[n - 1], o.steps, err, sizeof err);
    double t2 = clock_ms();
    /* The text is done before the stats go to stderr: piped, stdout is
     * buffered and would otherwise come after them, glued to them. */
    printf("\n");
    fflush(stdout);
    if (generated < 0) {
        fprintf(stderr, "inferd generate: %s\n", err);
    } else {
        /* Every generated token but the last is fed back: one decode step each. */
        int forwards = generated > 1 ? generated - 1 : 0;
        fprintf(stderr,
                "stats prompt_tokens=%d generated_tokens=%d prefill_tok_s=%.1f "
                "decode_tok_s=%.1f peak_rss_mib=%.1f\n",
                n, generated, per_second(n, t1 - t0), per_second(forwards, t2 - t1),
                (double)mem_peak_rss() / (1024.0 * 1024.0));
    }
    gen_close(&r);
    return generated < 0 ? 1 : 0;
}
