/* cmd_eval.c: `inferd eval`, a teacher-forced pass over a prompt: the
 * logits of every position, as llama.cpp's tools compute them, so that a
 * model file can be checked against another implementation's output.
 *
 * The prompt goes through in chunks of --prefill-step positions, the same
 * path `generate` and `serve` prefill with; each chunk's logits are
 * written out before the next, so memory holds one chunk's, not the
 * prompt's. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "local.h"

typedef struct eval_options {
    const char *model;
    const char *tokenizer;
    const char *prompt;
    const char *tokens;
    const char *logits; /* output file, or NULL */
    int kv_bits;
    int prefill_step;
    int threads;
} eval_options;

enum {
    OPT_MODEL = 256,
    OPT_TOKENIZER,
    OPT_PROMPT,
    OPT_TOKENS,
    OPT_LOGITS,
    OPT_KV_BITS,
    OPT_PREFILL_STEP,
    OPT_THREADS,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"model", required_argument, NULL, OPT_MODEL},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"prompt", required_argument, NULL, OPT_PROMPT},
    {"tokens", required_argument, NULL, OPT_TOKENS},
    {"logits", required_argument, NULL, OPT_LOGITS},
    {"kv-bits", required_argument, NULL, OPT_KV_BITS},
    {"prefill-step", required_argument, NULL, OPT_PREFILL_STEP},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd eval (--prompt TEXT | --tokens IDS) [OPTIONS]\n"
                 "\n"
                 "Runs a prompt through the model teacher-forced and prints, for every\n"
                 "position, its token, the most likely next token and that token's\n"
                 "log-probability.\n"
                 "\n"
                 "  --prompt TEXT        the text, tokenized with BOS first\n"
                 "  --tokens IDS         token ids instead, separated by spaces or commas\n"
                 "  --logits FILE        write every position's logits: float32 little\n"
                 "                       endian, [n_tokens][n_vocab]\n"
                 "  --model SPEC         a GGUF file, a llama2.c checkpoint, \"embedded\"\n"
                 "                       (the default) or synth:...\n"
                 "  --tokenizer PATH     a llama2.c tokenizer file (default: the model's own,\n"
                 "                       else the embedded one)\n"
                 "  --kv-bits B          KV cache precision: 32, 16, 8 or 4 (default 16)\n"
                 "  --prefill-step N     positions per chunk (default 512)\n"
                 "  --threads N          compute threads (default: online CPUs)\n"
                 "  --help               this text\n");
}

static const args_spec spec;

static int take_option(void *ctx, int opt, const char *arg)
{
    eval_options *o = ctx;
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
    case OPT_TOKENS:
        o->tokens = arg;
        return 0;
    case OPT_LOGITS:
        o->logits = arg;
        return 0;
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
    .verb = "eval",
    .options = long_options,
    .help = OPT_HELP,
    .usage = usage,
    .take = take_option,
};

static int parse_options(int argc, char **argv, eval_options *o)
{
    *o = (eval_options){.kv_bits = 16, .prefill_step = 512, .threads = args_default_threads()};
    int rc = args_parse(&spec, argc, argv, o);
    if (rc != 0)
        return rc;
    if (!o->prompt == !o->tokens) {
        fprintf(stderr, "inferd eval: give one of --prompt TEXT and --tokens IDS (see --help)\n");
        return -1;
    }
    return 0;
}

/* "1 403, 407": ids separated by spaces or commas, each in [0, vocab). */
static int parse_ids(const char *text, int vocab, int **ids, int *n, char *err, size_t errlen)
{
    size_t cap = strlen(text) / 2 + 1;
    *ids = malloc(cap * sizeof **ids);
    if (!*ids) {
        snprintf(err, errlen, "out of memory for --tokens");
        return -1;
    }
    *n = 0;
    for (const char *p = text;;) {
        p += strspn(p, " ,\t\n");
        if (!*p)
            break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && !strchr(" ,\t\n", *end)) || v < 0 || v >= vocab) {
            snprintf(err, errlen, "--tokens: '%.*s' is not a token id in 0..%d",
                     (int)strcspn(p, " ,\t\n"), p, vocab - 1);
            return -1;
        }
        (*ids)[(*n)++] = (int)v;
        p = end;
    }
    if (*n == 0) {
        snprintf(err, errlen, "--tokens: no token ids");
        return -1;
    }
    return 0;
}

/* The most likely token of one position's logits and its log-probability. */
static void top1(const float *logits, int vocab, int *id, double *logprob)
{
    int best = 0;
    double max = logits[0];
    for (int v = 1; v < vocab; v++)
        if (logits[v] > max)
            max = logits[best = v];
    double sum = 0.0;
    for (int v = 0; v < vocab; v++)
        sum += exp((double)logits[v] - max);
    *id = best;
    *logprob = -log(sum);
}

static int run(local *l, const eval_options *o, const int *ids, int n, char *err, size_t errlen)
{
    int vocab = model_config_of(l->m)->vocab_size;
    int chunk = n < o->prefill_step ? n : o->prefill_step;
    float *logits = malloc((size_t)chunk * vocab * sizeof *logits);
    FILE *out = o->logits ? fopen(o->logits, "wb") : NULL;
    int rc = -1;
    if (!logits) {
        snprintf(err, errlen, "out of memory for %d positions of logits", chunk);
        goto done;
    }
    if (o->logits && !out) {
        snprintf(err, errlen, "--logits %s: cannot create the file", o->logits);
        goto done;
    }
    printf("pos token top1 logprob\n");
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        if (fwd_step_logits(l->fwd, l->kv, ids + start, NULL, len, logits, NULL, err, errlen) != 0)
            goto done;
        for (int i = 0; i < len; i++) {
            int best;
            double lp;
            top1(logits + (size_t)i * vocab, vocab, &best, &lp);
            printf("%d %d %d %.6f\n", start + i, ids[start + i], best, lp);
        }
        if (out && fwrite(logits, sizeof *logits, (size_t)len * vocab, out) != (size_t)len * vocab) {
            snprintf(err, errlen, "--logits %s: write failed", o->logits);
            goto done;
        }
    }
    rc = 0;
done:
    if (out && fclose(out) != 0 && rc == 0) {
        snprintf(err, errlen, "--logits %s: write failed", o->logits);
        rc = -1;
    }
    free(logits);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    eval_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char err[512];
    local l = {0};
    int *ids = NULL, n = 0;
    rc = local_open(&l, o.model, o.tokenizer, o.threads, o.kv_bits, err, sizeof err);
    if (rc == 0 && o.tokens) {
        rc = parse_ids(o.tokens, model_config_of(l.m)->vocab_size, &ids, &n, err, sizeof err);
    } else if (rc == 0) {
        ids = malloc(tok_max_tokens(strlen(o.prompt)) * sizeof *ids);
        n = ids ? tok_encode(l.tok, o.prompt, 1, ids) : -1;
        if (n < 0) {
            snprintf(err, sizeof err, "out of memory encoding the prompt");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = run(&l, &o, ids, n, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "inferd eval: %s\n", err);
    free(ids);
    local_close(&l);
    return rc == 0 ? 0 : 1;
}
