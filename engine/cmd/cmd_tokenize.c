/* cmd_tokenize.c: `inferd tokenize`, a text's token ids as the model
 * would see them: the ids on one line, or with their pieces as JSON. Only
 * the vocabulary is read, never the weights. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "engine/model/model.h"
#include "engine/model/tokenizer.h"
#include "local.h"

typedef struct tokenize_options {
    const char *model;
    const char *tokenizer;
    const char *prompt;
    const char *file;
    int no_bos;
    int special;
    int json;
} tokenize_options;

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, tokenize_options *o)
{
    opt_vals v;
    int rc = args_parse(OPT_V_TOKENIZE, argc, argv, &v);
    if (rc != 0)
        return rc;
    if (opt_given(&v, OPT_PROMPT) == opt_given(&v, OPT_FILE)) {
        fprintf(stderr,
                "inferd tokenize: give one of --prompt TEXT and --file PATH (see --help)\n");
        return -1;
    }
    *o = (tokenize_options){
        .model = opt_str(&v, OPT_MODEL),
        .tokenizer = opt_str(&v, OPT_TOKENIZER),
        .prompt = opt_str(&v, OPT_PROMPT),
        .file = opt_str(&v, OPT_FILE),
        .no_bos = (int)opt_int(&v, OPT_NO_BOS),
        .special = (int)opt_int(&v, OPT_SPECIAL),
        .json = (int)opt_int(&v, OPT_TOKENS_JSON),
    };
    return 0;
}

static int print_ids(const tokenizer *t, const int *ids, int n, int json)
{
    if (!json) {
        for (int i = 0; i < n; i++)
            printf("%s%d", i ? " " : "", ids[i]);
        return putchar('\n') == EOF ? -1 : 0;
    }
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) {
        size_t len = 0;
        const char *piece = tok_piece(t, ids[i], 1, &len);
        if (json_array_append_new(a, json_pack("{s:i, s:s%}", "id", ids[i], "piece",
                                               piece ? piece : "", piece ? len : 0)) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    int rc = a ? json_dumpf(a, stdout, JSON_COMPACT | JSON_ENSURE_ASCII) : -1;
    json_decref(a);
    return rc != 0 || putchar('\n') == EOF ? -1 : 0;
}

int cmd_tokenize(int argc, char **argv)
{
    tokenize_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char err[512];
    const char *vocab = o.tokenizer ? o.tokenizer : model_is_gguf(o.model) ? o.model : NULL;
    tokenizer *t = NULL;
    char *text = NULL;
    size_t len = 0;
    int *ids = NULL, n = -1;
    rc = tok_load(&t, vocab, err, sizeof err);
    if (rc == 0 && o.file)
        rc = local_read_text("file", o.file, &text, &len, err, sizeof err);
    if (rc == 0) {
        int flags =
            (!o.no_bos && tok_add_bos(t) ? TOK_ADD_BOS : 0) | (o.special ? TOK_PARSE_SPECIAL : 0);
        n = tok_tokenize(t, o.file ? text : o.prompt, o.file ? len : strlen(o.prompt), flags, &ids,
                         err, sizeof err);
        rc = n < 0 ? -1 : 0;
    }
    if (rc == 0 && print_ids(t, ids, n, o.json) != 0) {
        snprintf(err, sizeof err, "cannot write the ids");
        rc = -1;
    }
    if (rc != 0)
        fprintf(stderr, "inferd tokenize: %s\n", err);
    free(ids);
    free(text);
    tok_free(t);
    return rc == 0 ? 0 : 1;
}
