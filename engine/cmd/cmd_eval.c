/* cmd_eval.c: `inferd eval`, a teacher-forced pass over a prompt: the
 * logits of every position, as llama.cpp's tools compute them, so that a
 * model file can be checked against another implementation's output.
 *
 * The prompt goes through in chunks of --prefill-step positions, the same
 * path `generate` and `serve` prefill with; each chunk's logits are
 * written out before the next, so memory holds one chunk's, not the
 * prompt's. With --control the pass runs on a node instead (a single node
 * or the head of a ring, PROTOCOL.md "eval"), which answers chunk by chunk;
 * both paths print and write through the same functions, so that the same
 * arithmetic gives the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "engine/compute/sampler.h"
#include "engine/proto/client.h"
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
    const char *control; /* a node's control endpoint: run there */
    int timeout_ms;
    const char *curve_key;        /* with CURVE: this client's key pair */
    const char *curve_server_key; /* and the node's public key */
} eval_options;

#define COUNT(a) (sizeof(a) / sizeof *(a))

/* The flag of the first of ids given, or NULL. */
static const char *first_given(const opt_vals *v, const opt_id *ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (opt_given(v, ids[i]))
            return opt_defs[ids[i]].flag;
    return NULL;
}

/* The flags of a run on a node and of a local run do not mix: the node
 * runs its own model with its own settings. Returns 0, or -1 after
 * printing why. */
static int check_mode(const opt_vals *v)
{
    static const opt_id local_only[] = {OPT_MODEL, OPT_TOKENIZER, OPT_KV_BITS, OPT_PREFILL_CHUNK,
                                        OPT_THREADS};
    static const opt_id remote_only[] = {OPT_EVAL_TIMEOUT, OPT_CURVE_KEY, OPT_CURVE_SERVER_KEY};
    const char *local_flag = first_given(v, local_only, COUNT(local_only));
    const char *remote_flag = first_given(v, remote_only, COUNT(remote_only));
    if (opt_given(v, OPT_EVAL_CONTROL) && local_flag) {
        fprintf(stderr,
                "inferd eval: --%s is for a local run; with --control the node's model "
                "and settings are used\n",
                local_flag);
        return -1;
    }
    if (!opt_given(v, OPT_EVAL_CONTROL) && remote_flag) {
        fprintf(stderr, "inferd eval: --%s goes with --control EP\n", remote_flag);
        return -1;
    }
    if (opt_given(v, OPT_CURVE_KEY) != opt_given(v, OPT_CURVE_SERVER_KEY)) {
        fprintf(stderr, "inferd eval: --curve-key and --curve-server-key go together\n");
        return -1;
    }
    return 0;
}

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, eval_options *o)
{
    opt_vals v;
    int rc = args_parse(OPT_V_EVAL, argc, argv, &v);
    if (rc != 0)
        return rc;
    if (opt_given(&v, OPT_PROMPT) == opt_given(&v, OPT_TOKENS)) {
        fprintf(stderr, "inferd eval: give one of --prompt TEXT and --tokens IDS (see --help)\n");
        return -1;
    }
    *o = (eval_options){
        .model = opt_str(&v, OPT_MODEL),
        .tokenizer = opt_str(&v, OPT_TOKENIZER),
        .prompt = opt_str(&v, OPT_PROMPT),
        .tokens = opt_str(&v, OPT_TOKENS),
        .logits = opt_str(&v, OPT_LOGITS),
        .kv_bits = (int)opt_int(&v, OPT_KV_BITS),
        .prefill_step = (int)opt_int(&v, OPT_PREFILL_CHUNK),
        .threads = args_threads(&v),
        .control = opt_str(&v, OPT_EVAL_CONTROL),
        .timeout_ms = (int)opt_int(&v, OPT_EVAL_TIMEOUT),
        .curve_key = opt_str(&v, OPT_CURVE_KEY),
        .curve_server_key = opt_str(&v, OPT_CURVE_SERVER_KEY),
    };
    return check_mode(&v);
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

/* ---- output: the same lines and bytes from either path ------------------ */

/* Where results go: the lines on stdout, the logits to --logits. */
typedef struct eval_out {
    const char *path; /* --logits, or NULL */
    FILE *file;
} eval_out;

static int out_open(eval_out *out, const char *path, char *err, size_t errlen)
{
    *out = (eval_out){.path = path};
    if (path && !(out->file = fopen(path, "wb"))) {
        snprintf(err, errlen, "--logits %s: cannot create the file", path);
        return -1;
    }
    printf("pos token top1 logprob\n");
    return 0;
}

/* One chunk: a line per position from pos on, and its logits [n][vocab]
 * when a file wants them. */
static int out_chunk(eval_out *out, int pos, const proto_eval_row *rows, int n, const float *logits,
                     int vocab, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        printf("%d %d %d %.6f\n", pos + i, rows[i].token, rows[i].top1, rows[i].logprob);
    size_t count = (size_t)n * (size_t)vocab;
    if (out->file && fwrite(logits, sizeof *logits, count, out->file) != count) {
        snprintf(err, errlen, "--logits %s: write failed", out->path);
        return -1;
    }
    return 0;
}

/* rc: how the run went; returns it, or -1 when the file fails to close. */
static int out_close(eval_out *out, int rc, char *err, size_t errlen)
{
    if (out->file && fclose(out->file) != 0 && rc == 0) {
        snprintf(err, errlen, "--logits %s: write failed", out->path);
        rc = -1;
    }
    out->file = NULL;
    return rc;
}

/* ---- a local run -------------------------------------------------------- */

static int run_local(local *l, const eval_options *o, const int *ids, int n, char *err,
                     size_t errlen)
{
    int vocab = model_config_of(l->m)->vocab_size;
    int chunk = n < o->prefill_step ? n : o->prefill_step;
    float *logits = malloc((size_t)chunk * vocab * sizeof *logits);
    proto_eval_row *rows = malloc((size_t)chunk * sizeof *rows);
    eval_out out = {0};
    int rc = -1;
    if (!logits || !rows) {
        snprintf(err, errlen, "out of memory for %d positions of logits", chunk);
        goto done;
    }
    if (out_open(&out, o->logits, err, errlen) != 0)
        goto done;
    for (int start = 0; start < n; start += chunk) {
        int len = n - start < chunk ? n - start : chunk;
        if (fwd_step_logits(l->fwd, l->kv, ids + start, NULL, len, logits, NULL, err, errlen) != 0)
            goto done;
        for (int i = 0; i < len; i++) {
            rows[i].token = ids[start + i];
            sampler_top1(logits + (size_t)i * vocab, vocab, &rows[i].top1, &rows[i].logprob);
        }
        if (out_chunk(&out, start, rows, len, logits, vocab, err, errlen) != 0)
            goto done;
    }
    rc = 0;
done:
    rc = out_close(&out, rc, err, errlen);
    free(rows);
    free(logits);
    return rc;
}

static int eval_local(const eval_options *o, char *err, size_t errlen)
{
    local l = {0};
    int *ids = NULL, n = 0;
    int rc = local_open(&l, o->model, o->tokenizer, o->threads, o->kv_bits, err, errlen);
    if (rc == 0 && o->tokens) {
        rc = parse_ids(o->tokens, model_config_of(l.m)->vocab_size, &ids, &n, err, errlen);
    } else if (rc == 0) {
        ids = malloc(tok_max_tokens(strlen(o->prompt)) * sizeof *ids);
        n = ids ? tok_encode(l.tok, o->prompt, 1, ids) : -1;
        if (n < 0) {
            snprintf(err, errlen, "out of memory encoding the prompt");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = run_local(&l, o, ids, n, err, errlen);
    free(ids);
    local_close(&l);
    return rc;
}

/* ---- a run on a node ---------------------------------------------------- */

static int connect_node(client **c, const eval_options *o, char *err, size_t errlen)
{
    if (!o->curve_key)
        return client_open(c, NULL, o->control, NULL, err, errlen);
    client_curve cc;
    curve_keypair server;
    if (curve_keypair_load(o->curve_key, 1, &cc.keys, err, errlen) != 0 ||
        curve_keypair_load(o->curve_server_key, 0, &server, err, errlen) != 0)
        return -1;
    snprintf(cc.server_public, sizeof cc.server_public, "%s", server.public_key);
    return client_open(c, NULL, o->control, &cc, err, errlen);
}

/* The eval request's fields: the prompt input, and "logits" when a file
 * wants them. The node checks ids against its vocabulary. */
static json_t *eval_args(const eval_options *o, char *err, size_t errlen)
{
    json_t *args = json_object();
    if (o->logits)
        json_object_set_new(args, "logits", json_true());
    if (o->prompt) {
        json_object_set_new(args, "prompt", json_string(o->prompt));
        return args;
    }
    int *ids, n;
    if (parse_ids(o->tokens, PROTO_TOKEN_ID_MAX + 1, &ids, &n, err, errlen) != 0) {
        free(ids);
        json_decref(args);
        return NULL;
    }
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(ids[i]));
    json_object_set_new(args, "tokens", a);
    free(ids);
    return args;
}

/* One reply frame of the request: a chunk goes out, the final frame ends
 * the run (1), or says why it failed. Chunks come in order; a gap means
 * frames were lost. */
static int take_reply(eval_out *out, const proto_reply *r, int *next, char *err, size_t errlen)
{
    if (r->done && !r->ok) {
        snprintf(err, errlen, "%s: %.400s", r->code, r->message);
        return -1;
    }
    if (r->done)
        return 1;
    int pos, n, vocab;
    proto_eval_row *rows;
    int got = proto_eval_decode(r, &pos, &rows, &n, &vocab, err, errlen);
    if (got <= 0) {
        if (got == 0)
            snprintf(err, errlen, "the node sent a frame that is not an eval chunk");
        return -1;
    }
    int rc = 0;
    if (pos != *next || (out->file && vocab == 0)) {
        snprintf(err, errlen, "the node sent positions from %d%s, expected %d", pos,
                 vocab ? "" : " without logits", *next);
        rc = -1;
    }
    if (rc == 0)
        rc = out_chunk(out, pos, rows, n, r->data, vocab, err, errlen);
    *next += n;
    free(rows);
    return rc;
}

static int eval_remote(const eval_options *o, char *err, size_t errlen)
{
    client *c = NULL;
    char id[PROTO_ID_MAX + 1];
    eval_out out = {0};
    json_t *args = eval_args(o, err, errlen);
    int rc = args ? connect_node(&c, o, err, errlen) : -1;
    if (rc == 0)
        rc = client_send(c, "eval", args, id, sizeof id, err, errlen);
    json_decref(args);
    if (rc == 0)
        rc = out_open(&out, o->logits, err, errlen);
    for (int next = 0, state = 0; rc == 0 && state == 0;) {
        proto_reply r;
        int got = client_recv(c, &r, o->timeout_ms, err, errlen);
        if (got == 0)
            snprintf(err, errlen, "%s: no reply for %d ms", o->control, o->timeout_ms);
        if (got <= 0) {
            rc = -1;
            break;
        }
        if (strcmp(r.id, id) == 0) {
            state = take_reply(&out, &r, &next, err, errlen);
            rc = state < 0 ? -1 : 0;
        }
        proto_reply_free(&r);
    }
    rc = out_close(&out, rc, err, errlen);
    client_close(c);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    eval_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char err[512];
    rc = o.control ? eval_remote(&o, err, sizeof err) : eval_local(&o, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "inferd eval: %s\n", err);
    return rc == 0 ? 0 : 1;
}
