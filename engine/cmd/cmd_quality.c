/* cmd_quality.c: `inferd quality`, what kv_bits settings cost in answers
 * on a text, without a server: the measurement of the control op
 * `quality` (PROTOCOL.md), by the same arithmetic (engine/compute/kldiv.h)
 * and into the same `quality` object (engine/node/quality.h).
 *
 * Per window and chunk the reference pass (kv_bits 32) runs once and each
 * setting's test pass follows it over the same positions, each in its own
 * cache: a setting's figures are those of the op run alone at that
 * setting, and memory holds two chunks of logits, not the text's. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "engine/compute/kldiv.h"
#include "engine/node/quality.h"
#include "local.h"

typedef struct quality_options {
    const char *model, *tokenizer, *text, *prompt;
    int bits[OPT_LIST_MAX], n_bits;
    int ctx, score_from, bucket, prefill_step, threads, json;
} quality_options;

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, quality_options *o)
{
    opt_vals v;
    int rc = args_parse(OPT_V_QUALITY, argc, argv, &v);
    if (rc != 0)
        return rc;
    if (opt_given(&v, OPT_PROMPT) == opt_given(&v, OPT_QUALITY_TEXT)) {
        fprintf(stderr, "inferd quality: give one of --text FILE and --prompt TEXT (see --help)\n");
        return -1;
    }
    *o = (quality_options){
        .model = opt_str(&v, OPT_MODEL),
        .tokenizer = opt_str(&v, OPT_TOKENIZER),
        .text = opt_str(&v, OPT_QUALITY_TEXT),
        .prompt = opt_str(&v, OPT_PROMPT),
        .ctx = opt_given(&v, OPT_QUALITY_CTX) ? (int)opt_int(&v, OPT_QUALITY_CTX) : 0,
        .score_from =
            opt_given(&v, OPT_QUALITY_SCORE_FROM) ? (int)opt_int(&v, OPT_QUALITY_SCORE_FROM) : -1,
        .bucket = (int)opt_int(&v, OPT_QUALITY_BUCKET),
        .prefill_step = (int)opt_int(&v, OPT_PREFILL_CHUNK),
        .threads = args_threads(&v),
        .json = (int)opt_int(&v, OPT_JSON),
    };
    const opt_value *b = &v.v[OPT_KV_BITS];
    o->n_bits = b->n;
    for (int i = 0; i < b->n; i++)
        o->bits[i] = (int)b->v[i];
    return 0;
}

/* The text's ids, BOS first, as a node tokenizes a prompt. */
static int text_ids(const local *l, const quality_options *o, int **ids, int *n, char *err,
                    size_t errlen)
{
    char *text = NULL;
    size_t len = o->prompt ? strlen(o->prompt) : 0;
    if (o->text && local_read_text("text", o->text, &text, &len, err, errlen) != 0)
        return -1;
    *n = tok_tokenize(l->tok, o->text ? text : o->prompt, len, TOK_ADD_BOS, ids, err, errlen);
    free(text);
    return *n < 0 ? -1 : 0;
}

/* One setting's figures: a table, or the op's object on one line. */
static int print_setting(const kld_plan *p, const kld_acc *a, int bits, int json, char *err,
                         size_t errlen)
{
    json_t *q = quality_json(p, a, bits, err, errlen);
    if (!q)
        return -1;
    if (json) {
        int rc = json_dumpf(q, stdout, JSON_COMPACT);
        json_decref(q);
        return rc != 0 || putchar('\n') == EOF ? -1 : 0;
    }
    printf("kv_bits %d against 32: %d window%s of %d tokens, positions %d..%d scored\n", bits,
           p->windows, p->windows == 1 ? "" : "s", p->len, p->score_from, p->len - 2);
    printf("  %-13s %9s %11s %11s %11s %8s %10s %10s\n", "depth", "positions", "kl_mean", "kl_p99",
           "kl_max", "top1", "ppl_ref", "ppl_test");
    json_t *buckets = json_object_get(q, "buckets");
    for (size_t i = 0; i <= json_array_size(buckets); i++) {
        /* The whole run first, then each bucket. */
        const json_t *e = i == 0 ? q : json_array_get(buckets, i - 1);
        char depth[32];
        if (i == 0)
            snprintf(depth, sizeof depth, "all");
        else
            snprintf(depth, sizeof depth, "%lld-%lld",
                     (long long)json_integer_value(json_object_get(e, "from")),
                     (long long)json_integer_value(json_object_get(e, "to")));
        long long n = json_integer_value(json_object_get(e, "positions"));
        if (n == 0) {
            printf("  %-13s %9d\n", depth, 0);
            continue;
        }
        printf("  %-13s %9lld %11.3e %11.3e %11.3e %8.4f %10.4f %10.4f\n", depth, n,
               json_number_value(json_object_get(e, "kl_mean")),
               json_number_value(json_object_get(e, "kl_p99")),
               json_number_value(json_object_get(e, "kl_max")),
               json_number_value(json_object_get(e, "top1")),
               json_number_value(json_object_get(e, "ppl_ref")),
               json_number_value(json_object_get(e, "ppl_test")));
    }
    json_decref(q);
    return fflush(stdout) == 0 ? 0 : -1;
}

/* The measurement's state: a test cache and the figures per setting, the
 * two chunks of logits. */
typedef struct quality_run {
    kv_cache *test[OPT_LIST_MAX];
    kld_acc *acc[OPT_LIST_MAX];
    float *ref, *logits;
} quality_run;

static void run_free(quality_run *r, int n)
{
    for (int i = 0; i < n; i++) {
        kv_free(r->test[i]);
        kld_acc_free(r->acc[i]);
    }
    free(r->ref);
    free(r->logits);
}

/* The chunk [pos, pos + len) of window w: the reference into r->ref (on
 * l->kv, kv_bits 32), then each setting's test against it. */
static int run_chunk(local *l, quality_run *r, const quality_options *o, const kld_plan *p,
                     const int *ids, int *chunk, int w, int pos, int len, char *err, size_t errlen)
{
    int vocab = model_config_of(l->m)->vocab_size;
    for (int i = 0; i < len; i++)
        chunk[i] = kld_token(p, ids, w, pos + i);
    if (fwd_step_logits(l->fwd, l->kv, chunk, NULL, len, r->ref, NULL, err, errlen) != 0)
        return -1;
    for (int s = 0; s < o->n_bits; s++) {
        if (fwd_step_logits(l->fwd, r->test[s], chunk, NULL, len, r->logits, NULL, err, errlen) !=
            0)
            return -1;
        for (int i = 0; i < len; i++) {
            if (!kld_scored(p, pos + i))
                continue;
            kld_pos k;
            size_t at = (size_t)i * (size_t)vocab;
            kld_position(r->ref + at, r->logits + at, vocab, kld_token(p, ids, w, pos + i + 1), &k);
            kld_acc_add(r->acc[s], pos + i, &k);
        }
    }
    return 0;
}

static int measure(local *l, const quality_options *o, const int *ids, int n, char *err,
                   size_t errlen)
{
    kld_plan p;
    if (kld_plan_make(&p, n, o->ctx, o->score_from, o->bucket, 0, tok_bos(l->tok), err, errlen) !=
        0)
        return -1;
    int vocab = model_config_of(l->m)->vocab_size;
    int step = p.len < o->prefill_step ? p.len : o->prefill_step;
    quality_run r = {0};
    int *chunk = malloc((size_t)step * sizeof *chunk);
    r.ref = malloc((size_t)step * (size_t)vocab * sizeof *r.ref);
    r.logits = malloc((size_t)step * (size_t)vocab * sizeof *r.logits);
    int rc = chunk && r.ref && r.logits ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "out of memory for %d positions of logits", step);
    for (int s = 0; rc == 0 && s < o->n_bits; s++)
        rc = kv_create(&r.test[s], fwd_kv_shape(l->fwd), o->bits[s], err, errlen) != 0 ||
                     kld_acc_create(&r.acc[s], kld_positions(&p), err, errlen) != 0
                 ? -1
                 : 0;
    for (int w = 0; rc == 0 && w < p.windows; w++) {
        /* Each window is a context of its own. */
        kv_set_len(l->kv, 0);
        for (int s = 0; s < o->n_bits; s++)
            kv_set_len(r.test[s], 0);
        for (int pos = 0; rc == 0 && pos < p.len; pos += step) {
            int len = p.len - pos < step ? p.len - pos : step;
            rc = run_chunk(l, &r, o, &p, ids, chunk, w, pos, len, err, errlen);
        }
    }
    for (int s = 0; rc == 0 && s < o->n_bits; s++)
        rc = print_setting(&p, r.acc[s], o->bits[s], o->json, err, errlen);
    free(chunk);
    run_free(&r, o->n_bits);
    return rc;
}

int cmd_quality(int argc, char **argv)
{
    quality_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char err[512];
    local l = {0};
    int *ids = NULL, n = 0;
    rc = local_open(&l, o.model, o.tokenizer, o.threads, 32, err, sizeof err);
    if (rc == 0)
        rc = text_ids(&l, &o, &ids, &n, err, sizeof err);
    if (rc == 0)
        rc = measure(&l, &o, ids, n, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "inferd quality: %s\n", err);
    free(ids);
    local_close(&l);
    return rc == 0 ? 0 : 1;
}
