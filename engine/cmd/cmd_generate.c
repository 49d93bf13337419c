/* cmd_generate.c: `inferd generate`, one prompt run locally, the way
 * llama2.c's run.c does it: the prompt and its continuation stream to
 * stdout, one line of statistics goes to stderr. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

enum {
    OPT_MODEL = 256,
    OPT_TOKENIZER,
    OPT_PROMPT,
    OPT_STEPS,
    OPT_TEMPERATURE,
    OPT_TOP_P,
    OPT_SEED,
    OPT_KV_BITS,
    OPT_PREFILL_STEP,
    OPT_THREADS,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"model", required_argument, NULL, OPT_MODEL},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"prompt", required_argument, NULL, OPT_PROMPT},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"temperature", required_argument, NULL, OPT_TEMPERATURE},
    {"top-p", required_argument, NULL, OPT_TOP_P},
    {"seed", required_argument, NULL, OPT_SEED},
    {"kv-bits", required_argument, NULL, OPT_KV_BITS},
    {"prefill-step", required_argument, NULL, OPT_PREFILL_STEP},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd generate --prompt TEXT [OPTIONS]\n"
                 "\n"
                 "Runs a prompt through the model and prints it with its continuation,\n"
                 "then one line of statistics on stderr.\n"
                 "\n"
                 "  --prompt TEXT        the text to continue (required)\n"
                 "  --model SPEC         a GGUF file, a llama2.c checkpoint file, \"embedded\"\n"
                 "                       (stories260K, the default), synth:110m, synth:1b or\n"
                 "                       synth:dim=D,hidden=H,layers=L,heads=N,kv_heads=K,vocab=V\n"
                 "  --tokenizer PATH     a llama2.c tokenizer file (default: a GGUF file's own,\n"
                 "                       else the embedded one)\n"
                 "  --steps N            tokens to generate, 1..1000000 (default 256)\n"
                 "  --temperature T      0 is greedy (default 0)\n"
                 "  --top-p P            nucleus sampling threshold in [0, 1] (default 0.9)\n"
                 "  --seed S             random seed for sampling (default: from the clock)\n"
                 "  --kv-bits B          KV cache precision: 32, 16, 8 or 4 (default 16)\n"
                 "  --prefill-step N     prompt positions per prefill chunk (default 512)\n"
                 "  --threads N          compute threads (default: online CPUs)\n"
                 "  --help               this text\n");
}

static const args_spec spec;

static int take_option(void *ctx, int opt, const char *arg)
{
    gen_options *o = ctx;
    switch (opt) {
    case OPT_MODEL:
        o->model = arg;
        return 0;
    case OPT_TOKENIZER:
        o->tokenizer = arg;
        return 0;
    case OPT_PROMPT:
        o->prompt = arg;
        return 0;
    case OPT_STEPS:
        return args_int(&spec, opt, arg, 1, 1000000, &o->steps);
    case OPT_TEMPERATURE:
        return args_double(&spec, opt, arg, 0.0, 100.0, &o->temperature);
    case OPT_TOP_P:
        return args_double(&spec, opt, arg, 0.0, 1.0, &o->top_p);
    case OPT_SEED:
        return args_size(&spec, opt, arg, 0, ULLONG_MAX, &o->seed);
    case OPT_KV_BITS:
        return args_kv_bits(&spec, opt, arg, &o->kv_bits);
    case OPT_PREFILL_STEP:
        return args_int(&spec, opt, arg, 1, 1 << 20, &o->prefill_step);
    case OPT_THREADS:
        return args_int(&spec, opt, arg, 1, 1024, &o->threads);
    }
    return -1;
}

static const args_spec spec = {
    .verb = "generate",
    .options = long_options,
    .help = OPT_HELP,
    .usage = usage,
    .take = take_option,
};

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, gen_options *o)
{
    *o = (gen_options){
        .steps = 256,
        .temperature = 0.0,
        .top_p = 0.9,
        .seed = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32),
        .kv_bits = 16,
        .prefill_step = 512,
        .threads = args_default_threads(),
    };
    int rc = args_parse(&spec, argc, argv, o);
    if (rc != 0)
        return rc;
    if (!o->prompt) {
        fprintf(stderr, "inferd generate: missing --prompt TEXT (see --help)\n");
        return -1;
    }
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
    printf("\n");
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
