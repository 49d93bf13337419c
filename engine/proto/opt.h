/* opt.h: the one table of every setting and flag of inferd and infertop.
 *
 * Like tmux's options-table.c, one row per setting says everything there is
 * to know about it: its command-line flag and the verbs that take it, its
 * name on the wire (control requests, ring frames, HTTP bodies) and in the
 * cluster file, its type, range or choices, default and help. Everything
 * else is derived from the rows (opt_table.c, which includes them from
 * opt_rows_inferd.h, opt_rows_wire.h and opt_rows_infertop.h): each verb's
 * option parsing (opt_parse), its --help (opt_usage), the man pages' option
 * lists and the shell completions (engine/proto/gen/optdoc.c, at build
 * time), and the validation of untrusted values (opt_check_text, opt_check_json). So
 * adding a flag is one row plus the code that uses its value; README
 * "Adding a flag".
 *
 * The same flag may have two rows when two verbs mean different things by
 * it (inferd serve --name is the node's name, infertop stress --name the
 * run's); a verb never takes two rows of one flag (a unit test checks). */
#ifndef OPT_H
#define OPT_H

#include <stddef.h>
#include <stdio.h>

/* ---- verbs ----------------------------------------------------------- */

typedef enum opt_prog { OPT_INFERD, OPT_INFERTOP } opt_prog;

/* One verb, or one mode of a verb that takes its own flags ("stress
 * growth"). Listed in opt_verbs[] (opt_verbs.c) in this order. */
typedef enum opt_verb {
    OPT_V_GENERATE,
    OPT_V_SERVE,
    OPT_V_EVAL,
    OPT_V_TOKENIZE,
    OPT_V_QUANTIZE,
    OPT_V_KEYGEN,
    OPT_V_QUALITY,
    /* infertop's verbs */
    OPT_V_CONSOLE, /* infertop without a verb: the dashboard */
    OPT_V_DEMO,
    OPT_V_STATUS,
    OPT_V_SET,
    OPT_V_NODES,
    OPT_V_NODES_START,
    OPT_V_NODES_STOP,
    OPT_V_NODES_RESTART,
    OPT_V_NODES_STATUS,
    OPT_V_NODES_LOGS,
    OPT_V_NODES_FACTS,
    OPT_V_NODES_EXEC,
    OPT_V_NODES_COMMAND,
    OPT_V_STRESS,
    OPT_V_STRESS_GROWTH,
    OPT_V_STRESS_FIXED,
    OPT_V_STRESS_SOAK,
    OPT_V_STRESS_SWEEP,
    OPT_V_STRESS_QUALITY,
    OPT_V_HISTORY,
    OPT_V_HISTORY_LIST,
    OPT_V_HISTORY_SHOW,
    OPT_V_HISTORY_COMPARE,
    OPT_V_HISTORY_BEST,
    OPT_V_HISTORY_EXPORT,
    OPT_V_HISTORY_PRUNE,
    OPT_V_METRICS,
    OPT_V_PLAN,
    OPT_V_COUNT
} opt_verb;

typedef struct opt_verb_def {
    opt_prog prog;
    const char *name;     /* "serve", "stress growth" */
    const char *synopsis; /* after the verb: "--prompt TEXT [OPTIONS]" */
    const char *summary;  /* one line, for the program's verb list */
    const char *about;    /* the paragraph under the usage line */
    const char *notes;    /* text after the options, or NULL */
    int nargs_max;        /* words that are not options it takes */
} opt_verb_def;

extern const opt_verb_def opt_verbs[OPT_V_COUNT];

#define OPT_VB(v) (1ull << (v))

/* ---- settings -------------------------------------------------------- */

typedef enum opt_id {
    OPT_MODEL,
    OPT_TOKENIZER,
    OPT_THREADS,
    OPT_KV_BITS,
    OPT_PREFILL_STEP,
    OPT_PREFILL_CHUNK,
    OPT_PROMPT,
    OPT_STEPS,
    OPT_TEMPERATURE,
    OPT_TOP_P,
    OPT_SEED,
    OPT_TOKENS,
    OPT_LOGITS,
    OPT_EVAL_CONTROL,
    OPT_EVAL_TIMEOUT,
    OPT_CURVE_KEY,
    OPT_CURVE_SERVER_KEY,
    OPT_FILE,
    OPT_NO_BOS,
    OPT_SPECIAL,
    OPT_TOKENS_JSON,
    OPT_TYPE,
    OPT_QUANT_OUT,
    OPT_QUANT_TOKENIZER,
    OPT_KEY_OUT,
    OPT_NAME,
    OPT_LAYERS,
    OPT_CONTROL,
    OPT_TELEMETRY,
    OPT_LISTEN,
    OPT_NEXT,
    OPT_MEM_LIMIT,
    OPT_MAX_CTX,
    OPT_MAX_BODY,
    OPT_STEP_TARGET,
    OPT_STEP_TIMEOUT,
    OPT_QUEUE_TIMEOUT,
    OPT_STALL_LIMIT,
    OPT_MAX_SEQS,
    OPT_PIPELINE_DEPTH,
    OPT_LOG,
    OPT_PIDFILE,
    OPT_HTTP,
    OPT_API_KEY,
    OPT_ALIAS,
    OPT_CORS,
    OPT_HTTP_HEADER_TIMEOUT,
    OPT_HTTP_PER_CLIENT,
    OPT_FLAGS,
    OPT_CURVE_SECRET,
    OPT_CURVE_CLIENTS,
    OPT_NEXT_KEY,
    OPT_ALLOW_EPHEMERAL,
    OPT_HELP,
    /* fields of requests on the wire (control, ring, HTTP) */
    OPT_REQ_ID,
    OPT_REQ_SESSION,
    OPT_REQ_SOURCE,
    OPT_REQ_TARGET,
    OPT_REQ_SYNTHETIC,
    OPT_REQ_MAX_TOKENS,
    OPT_REQ_TEMPERATURE,
    OPT_REQ_TOP_P,
    OPT_REQ_SEED,
    OPT_REQ_TOP_K,
    OPT_REQ_MIN_P,
    OPT_REQ_REPEAT_PENALTY,
    OPT_REQ_PRESENCE_PENALTY,
    OPT_REQ_FREQUENCY_PENALTY,
    OPT_REQ_LOGIT_BIAS,
    OPT_REQ_LOGPROBS,
    OPT_REQ_SPECIAL,
    OPT_REQ_LOGITS,
    OPT_REQ_CANCEL_STALLED,
    OPT_QUALITY_TEXT,
    OPT_QUALITY_CTX,
    OPT_QUALITY_SCORE_FROM,
    OPT_QUALITY_BUCKET,
    OPT_OAI_MAX_TOKENS,
    OPT_OAI_TEMPERATURE,
    OPT_OAI_TOP_P,
    OPT_OAI_STREAM,
    OPT_OAI_N,
    OPT_OAI_BEST_OF,
    OPT_OAI_LOGPROBS,
    OPT_OAI_CHAT_LOGPROBS,
    OPT_OAI_TOP_LOGPROBS,
    OPT_OAI_ENCODING_FORMAT,
    OPT_OAI_DIMENSIONS,
    /* keys of the cluster file */
    OPT_CF_SSH,
    OPT_CF_START,
    OPT_CF_IDENTITY,
    OPT_CF_KNOWN_HOSTS,
    OPT_CF_ACCEPT_NEW,
    OPT_CF_LOCAL,
    OPT_CF_CONNECT_TIMEOUT,
    OPT_CF_HOST,
    OPT_CF_PORT,
    OPT_CF_BASE_PORT,
    OPT_CF_INFERD,
    OPT_CF_FLAGS,
    OPT_CF_ENGINE,
    OPT_CF_URL,
    OPT_CF_API_KEY_FILE,
    /* infertop's flags */
    OPT_CONFIG,
    OPT_DB,
    OPT_JSON,
    OPT_VERSION,
    OPT_NO_COLOR,
    OPT_ASCII,
    OPT_READONLY,
    OPT_DELAY,
    OPT_ALERT_QUEUE_S,
    OPT_ALERT_TTFT_MS,
    OPT_ALERT_EVAL_RATIO,
    OPT_ALERT_EVAL_FLOOR_MS,
    OPT_ALERT_HOLD,
    OPT_ALERT_BUSY_PCT,
    OPT_ALERT_HEADROOM_PCT,
    OPT_STAGES,
    OPT_WRITE_CONFIG,
    OPT_STATUS_TIMEOUT,
    OPT_SET_TIMEOUT,
    OPT_DRY_RUN,
    OPT_ACCEPT_NEW,
    OPT_SSH_TIMEOUT,
    OPT_GRACE,
    OPT_LINES,
    OPT_FOLLOW,
    OPT_SYSTEMD,
    OPT_STRESS_CONTROL,
    OPT_STRESS_TELEMETRY,
    OPT_STRESS_NODE,
    OPT_STRESS_TIMEOUT,
    OPT_STOP_ON_FAILURE,
    OPT_RUN_NAME,
    OPT_RUN_NOTES,
    OPT_FROM,
    OPT_TO,
    OPT_FACTOR,
    OPT_STEP,
    OPT_GEN,
    OPT_REQUESTS,
    OPT_PROMPT_TOKENS,
    OPT_CONCURRENCY,
    OPT_RATE,
    OPT_STRESS_SEED,
    OPT_DURATION,
    OPT_LEG,
    OPT_STRESS_TEXT,
    OPT_SWEEP_QUALITY,
    OPT_KEEP_LAST,
    OPT_RUN_ID,
    OPT_RUN_MODE,
    OPT_RUN_STATUS,
    OPT_RUN_MODEL,
    OPT_RUN_CLUSTER,
    OPT_RUN_ENGINE,
    OPT_GREP,
    OPT_SINCE,
    OPT_UNTIL,
    OPT_LIMIT,
    OPT_PAGE,
    OPT_WHAT,
    OPT_FORMAT,
    OPT_EXPORT_OUT,
    OPT_OLDER_THAN,
    OPT_VACUUM,
    OPT_BY,
    OPT_FULL,
    OPT_MAX_KL,
    OPT_MIN_TOP1,
    OPT_METRICS_LISTEN,
    OPT_CTX,
    OPT_PLAN_KV_BITS,
    OPT_PLAN_MODEL,
    OPT_PLAN_TIMEOUT,
    OPT_PLAN_MARGIN,
    OPT_NO_SSH,
    OPT_WRITE,
    OPT_APPLY,
    OPT_WAIT,
    OPT_COUNT
} opt_id;

typedef enum opt_type {
    OPT_T_SWITCH,   /* a flag without a value: i = 1 when given */
    OPT_T_TEXT,     /* s: at most .hi bytes, at least .lo */
    OPT_T_PATH,     /* s: a file (completion offers files) */
    OPT_T_DIR,      /* s: a directory */
    OPT_T_INT,      /* i in [.lo, .hi]; K, M, G, T multiply by powers of 1024 */
    OPT_T_NUM,      /* d in [.dlo, .dhi] */
    OPT_T_CHOICE,   /* i: the index of the word in .choices */
    OPT_T_LAYERS,   /* "A:B", 0 <= A < B: i = A, i2 = B */
    OPT_T_DURATION, /* d: seconds, from 90, 90s, 15m or 2h, in [.dlo, .dhi] */
} opt_type;

typedef struct opt_def {
    const char *flag; /* "kv-bits" for --kv-bits; NULL: not a flag */
    char short_flag;  /* 'c' for -c, or 0 */
    const char *wire; /* its name in JSON (control, ring, HTTP), or NULL */
    const char *key;  /* its cluster-file key, or NULL */
    opt_type type;
    unsigned long long lo, hi;     /* INT range; TEXT length */
    double dlo, dhi;               /* NUM and DURATION range */
    const char *choices;           /* CHOICE: "growth|fixed" */
    const int *ints;               /* INT: the only values allowed, if listed ... */
    int n_ints;                    /* ... this many of them */
    const char *word;              /* INT: a word accepted too ("auto") ... */
    unsigned long long word_value; /* ... standing for this value */
    int list;                      /* a comma-separated list of such values */
    unsigned long long list_verbs; /* OPT_VB() of verbs taking such a list (else one value) */
    const char *def;               /* the default, as typed; NULL: none */
    const char *def_doc;           /* a default computed at run time, for help */
    const char *arg;               /* the value's name in help: "N", "FILE" */
    const char *help;              /* one sentence or two; ranges and the
                                    * default are appended from the fields */
    unsigned long long verbs;      /* OPT_VB() of the verbs taking the flag */
    unsigned long long required;   /* ... and of those that require it (help then
                                    * shows no default) */
    int no_ctl;                    /* TEXT: no control characters (names, ids) */
    int repeat;                    /* TEXT: may be given more than once (opt_texts) */
    int dlo_open;                  /* NUM: dlo itself is excluded (top_p > 0) */
    int live;                      /* changed on running nodes: infertop set,
                                    * the Config view, a sweep's legs */
} opt_def;

extern const opt_def opt_defs[OPT_COUNT];

/* ---- values ---------------------------------------------------------- */

/* Limits of rows that other parts also size arrays or searches by: each
 * written here once, for its row and for that code. */
/* infertop demo --stages: the demo ring's stages at most (fewer when the
 * model has fewer layers: a stage holds one at least). */
#define OPT_DEMO_STAGES_MAX 8
/* stress --name and --notes, with the NUL. */
#define OPT_RUN_TEXT_MAX 256
/* stress --concurrency: requests in flight at once. The head runs
 * max_seqs of them and queues 16 more (engine/node NODE_QUEUE_MAX);
 * beyond that it refuses them as `busy`, recorded as failed requests. */
#define OPT_CONCURRENCY_MAX 64
/* plan --ctx: the context the planner searches up to, far past any
 * model's. */
#define OPT_PLAN_CTX_MAX (1 << 30)

#define OPT_LIST_MAX 16
#define OPT_ARGS_MAX 64

typedef struct opt_value {
    int given; /* on the command line (else the default, if any) */
    unsigned long long i, i2;
    double d;
    const char *s; /* TEXT, PATH, DIR: points into argv or the table */
    int n;         /* list: values in v[] */
    double v[OPT_LIST_MAX];
} opt_value;

/* What a verb's command line said: a value per setting (the default where
 * not given) and the words that are not options. */
typedef struct opt_vals {
    opt_verb verb;
    opt_value v[OPT_COUNT];
    int nargs;
    char *args[OPT_ARGS_MAX];
    /* Every value of the repeatable rows, in order (v[] holds the last). */
    int n_repeated;
    struct {
        opt_id id;
        const char *s;
    } repeated[OPT_LIST_MAX];
} opt_vals;

/* The values a repeatable row was given, in order, into out[0..max);
 * returns how many. */
int opt_texts(const opt_vals *v, opt_id id, const char **out, int max);

/* Parses argv (argv[0] is the verb) for verb. Returns 0 to go on, 1 when
 * --help was asked (the caller prints opt_usage), -1 with err naming the
 * problem: "--kv-bits: '7' is not valid, expected 32, 16, 8 or 4". */
int opt_parse(opt_verb verb, int argc, char **argv, opt_vals *out, char *err, size_t errlen);

/* Verbs with modes ("stress growth"; the verb named "" has every other verb
 * of its program as its modes, "stress" those named "stress WORD"). A
 * verb's row bits include those of every flag of its modes, so that it
 * parses any of them before its mode is known. */

/* The index of the first word of argv[1..] that is neither an option nor
 * the value of one (by the flags of the verbs in mask), or argc when none
 * comes before the end or a "--". */
int opt_first_word(unsigned long long mask, int argc, char **argv);

/* The verbs of a program, as a mask of OPT_VB(). */
unsigned long long opt_prog_verbs(opt_prog prog);

/* Whether verb has modes. */
int opt_has_modes(opt_verb verb);

/* The mode of verb that argv names (its first word, opt_first_word): the
 * word is taken out of argv (*argc drops by one) for opt_parse. Returns
 * verb itself when argv names none, OPT_V_COUNT with err when the word is
 * no mode of verb. */
opt_verb opt_mode(opt_verb verb, int *argc, char **argv, char *err, size_t errlen);

/* The word naming mode among verb's modes ("growth" of "stress growth"),
 * or NULL when mode is none of verb's. */
const char *opt_mode_word(opt_verb verb, opt_verb mode);

/* "growth, fixed, soak or sweep": the words of verb's modes. */
void opt_mode_words(opt_verb verb, char *buf, size_t len);

/* Checks one value of setting id as typed and fills *out; -1 with err
 * saying what was expected (without the flag's name). */
int opt_check_text(opt_id id, const char *text, opt_value *out, char *err, size_t errlen);

/* The same for a JSON value (a number, or a string for TEXT, CHOICE and
 * an INT's word). */
struct json_t; /* jansson's; the views, which may not include it, need none */
int opt_check_json(opt_id id, const struct json_t *value, opt_value *out, char *err, size_t errlen);

/* Writes a value of setting id the way opt_check_text reads it back: an
 * INT's word for its word_value ("auto"), "A:B" for layers, a choice's
 * word, the text of TEXT, PATH and DIR. */
void opt_format(opt_id id, const opt_value *v, char *buf, size_t len);

/* The row's default (.def) as a number: what a verb takes when the flag
 * is not given, for code that needs it without a command line (the
 * console's own requests). The table's test checks every default. */
unsigned long long opt_default_int(opt_id id);
double opt_default_num(opt_id id);

/* What a value must be, in words: "an integer in 1..65536 or auto". */
void opt_expected(opt_id id, char *buf, size_t len);
/* The same in verb, where the row may take a list (list_verbs). */
void opt_expected_for(opt_id id, opt_verb verb, char *buf, size_t len);

/* The same, short, as help shows it: "1..64K or auto", "32, 16, 8 or 4";
 * "" for a type without a range (a path). */
void opt_range(opt_id id, char *buf, size_t len);

/* The values an INT row allows when it lists them (.ints), in the
 * row's order, at most max: their count (0 for a row without). */
int opt_choices(opt_id id, unsigned long long *out, int max);

/* ---- fields of requests ---------------------------------------------- */

/* What is wrong with a JSON value: its type (a string for a number: the
 * protocols' bad_type) or, of the right type, its value (bad_value). */
typedef enum opt_json_rc { OPT_JSON_OK, OPT_JSON_BAD_TYPE, OPT_JSON_BAD_VALUE } opt_json_rc;

/* opt_check_json telling the two apart; err says what was expected, as
 * JSON ("an integer in 1..65536 or \"auto\""), and what came. */
opt_json_rc opt_read_json(opt_id id, const struct json_t *value, opt_value *out, char *err,
                          size_t errlen);

/* How a request's field is stored in the struct it is decoded into. */
typedef enum opt_store {
    OPT_ST_INT,   /* int: INT, CHOICE, SWITCH */
    OPT_ST_U64,   /* uint64_t: INT */
    OPT_ST_FLOAT, /* float: NUM */
    OPT_ST_TEXT,  /* char[]: TEXT, cut to the member's size (rows bound it below) */
} opt_store;

#define OPT_NO_GIVEN ((size_t)-1)

/* A JSON field of a request decoded into a struct: its row (whose wire
 * name is the field's name), and the member it goes to, by offset. */
typedef struct opt_field {
    opt_id id;
    opt_store store;
    size_t at;    /* offsetof the member */
    size_t given; /* offsetof an int set to 1 when the field came, or OPT_NO_GIVEN */
    size_t size;  /* sizeof the member */
} opt_field;

#define OPT_FIELD(id, store, type, member)                                                         \
    {                                                                                              \
        (id), (store), offsetof(type, member), OPT_NO_GIVEN, sizeof(((type *)0)->member)           \
    }
#define OPT_FIELD_GIVEN(id, store, type, member, given)                                            \
    {                                                                                              \
        (id), (store), offsetof(type, member), offsetof(type, given), sizeof(((type *)0)->member)  \
    }

/* The field of fields[0..n) whose row's wire name is name, or NULL. */
const opt_field *opt_field_find(const opt_field *fields, size_t n, const char *name);

/* Checks value by f's row and stores it into dst's member (and its given
 * flag): opt_read_json's answer. */
opt_json_rc opt_field_take(const opt_field *f, const struct json_t *value, void *dst, char *err,
                           size_t errlen);

/* Stores the row's default of each of fields[0..n) that has one into dst. */
void opt_field_defaults(const opt_field *fields, size_t n, void *dst);

static inline unsigned long long opt_int(const opt_vals *v, opt_id id)
{
    return v->v[id].i;
}
static inline double opt_num(const opt_vals *v, opt_id id)
{
    return v->v[id].d;
}
static inline const char *opt_str(const opt_vals *v, opt_id id)
{
    return v->v[id].s;
}
static inline int opt_given(const opt_vals *v, opt_id id)
{
    return v->v[id].given;
}

/* ---- help ------------------------------------------------------------ */

/* "usage: inferd VERB SYNOPSIS", the verb's paragraph, its modes (or, for
 * the verb named "", the program's verbs) with their summaries, its
 * options with their ranges and defaults, and its notes. */
void opt_usage(opt_verb verb, FILE *out);

/* One option's help as verb's usage shows it, without the flag column:
 * the help, then in parentheses whether it is required, its range or
 * choices and its default. */
void opt_help_text(opt_id id, opt_verb verb, char *buf, size_t len);

#endif
