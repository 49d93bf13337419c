/* protocol.h: the wire protocol between `inferd serve` nodes and their
 * clients (the console, the stress runner, third-party tools). Version 1.
 * engine/PROTOCOL.md is the reference; this header is its C binding.
 *
 * Control: a client's DEALER sends one JSON frame per request to the node's
 * ROUTER; the node answers with one or more JSON frames carrying the same
 * `id`, the last with "done":true. Telemetry: the node's PUB sends two
 * frames, a topic ("step", "node", "req", "event") and a JSON object that
 * always carries v, node, seq and t.
 *
 * Both sides link this module: the node decodes requests and encodes
 * replies and telemetry; clients encode requests (plain JSON) and decode
 * replies and telemetry. All decoders validate fully and never trust sizes
 * or types from the wire.
 */
#ifndef PROTOCOL_H
#define PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define PROTO_VERSION 1

/* Largest control frame a node accepts (requests). A prompt that does not
 * fit is sent as token ids or, for stress prompts, as synthetic_tokens. */
#define PROTO_MAX_FRAME (64 * 1024)

/* The largest request body a context of ctx positions calls for (a node's
 * --max-body auto, and its control frame limit): PROTO_BODY_PER_TOKEN bytes
 * a position, generously (English text is about 4 bytes a token, other
 * scripts' UTF-8 up to 3 bytes a character, a JSON escape 6 bytes a byte,
 * a token id in an array up to 7), plus PROTO_MAX_FRAME for the JSON
 * around the prompt; never less than PROTO_MAX_FRAME. */
#define PROTO_BODY_PER_TOKEN 16
size_t proto_max_body(int ctx);

/* Request ids, session names and cancel targets: 1..64 bytes, no control
 * characters. Node names: 1..64 bytes. */
#define PROTO_ID_MAX 64
#define PROTO_NAME_MAX 64
#define PROTO_CODE_MAX 32     /* error code strings, with the NUL */
#define PROTO_FIELD_MAX 32    /* field names in errors, with the NUL */
#define PROTO_MESSAGE_MAX 512 /* error and event messages, with the NUL */

/* Ranges the decoder enforces (the vocabulary check is the node's). */
#define PROTO_PREFILL_STEP_MAX 65536
/* A batch frame carries at most PROTO_SEQS_MAX requests (serve
 * --max-seqs); a ring has at most PROTO_DEPTH_MAX steps in flight
 * (--pipeline-depth). */
#define PROTO_SEQS_MAX 64
#define PROTO_DEPTH_MAX 16
#define PROTO_MAX_TOKENS_MAX (1 << 20)     /* generate.max_tokens */
#define PROTO_SYNTHETIC_MAX (1 << 24)      /* generate.synthetic_tokens */
#define PROTO_TOKEN_ID_MAX ((1 << 24) - 1) /* generate.tokens[i] */

/* Defaults of generate's optional fields (as typed: the settings table
 * reads them as text). */
#define PROTO_DEFAULT_MAX_TOKENS 256
#define PROTO_DEFAULT_TEMPERATURE 1.0
#define PROTO_DEFAULT_TOP_P 0.9
#define PROTO_TEMPERATURE_MAX 100.0

/* ---- Error codes ------------------------------------------------------ */

/* The first group is the request decoder's; the second is the node's.
 * proto_code_name() gives the wire string (in parentheses). */
typedef enum proto_code {
    PROTO_OK = 0,
    PROTO_E_TOO_LARGE,      /* "too_large": frame > PROTO_MAX_FRAME */
    PROTO_E_BAD_JSON,       /* "bad_json": not JSON text, or not valid UTF-8 */
    PROTO_E_NOT_OBJECT,     /* "not_object": JSON, but not an object */
    PROTO_E_BAD_VERSION,    /* "bad_version": v missing or not 1 */
    PROTO_E_BAD_ID,         /* "bad_id": id missing, not a string, empty, too long */
    PROTO_E_UNKNOWN_OP,     /* "unknown_op": op missing, not a string, unknown */
    PROTO_E_UNKNOWN_FIELD,  /* "unknown_field": a field the op does not take */
    PROTO_E_MISSING_FIELD,  /* "missing_field": a required field is absent */
    PROTO_E_BAD_TYPE,       /* "bad_type": a field has the wrong JSON type */
    PROTO_E_BAD_VALUE,      /* "bad_value": right type, out of range */
    PROTO_E_CONFLICT,       /* "conflict": fields that exclude each other */
    PROTO_E_BAD_TOKEN,      /* "bad_token": token id outside the vocabulary */
    PROTO_E_NOT_FOUND,      /* "not_found": cancel target / session unknown */
    PROTO_E_KV_OOM,         /* "kv_oom": KV would not fit the memory budget */
    PROTO_E_CTX_LIMIT,      /* "ctx_limit": context would pass --max-ctx */
    PROTO_E_STAGE_TIMEOUT,  /* "stage_timeout": a pipeline stage went silent */
    PROTO_E_MODEL_MISMATCH, /* "model_mismatch": stages hold different models */
    PROTO_E_CANCELLED,      /* "cancelled": ended by a cancel request */
    PROTO_E_BUSY,           /* "busy": the node cannot take the request now */
    PROTO_E_SHUTDOWN,       /* "shutdown": the node is shutting down */
    PROTO_E_INTERNAL,       /* "internal": a bug or resource failure */
    PROTO_E_RING_DOWN,      /* "ring_down": the head found the ring broken; names the stage */
    PROTO_E_STALLED,        /* "stalled": the client took no frame for --stall-limit */
    PROTO_CODE_COUNT
} proto_code;

const char *proto_code_name(proto_code code);
/* The code of a wire string; PROTO_CODE_COUNT for one this build does not
 * know (clients keep the string itself, see proto_reply). */
proto_code proto_code_parse(const char *name);

/* What went wrong with a request: a code, the field concerned ("" when the
 * problem is the frame as a whole) and a message that names the field, the
 * expected and the received value. */
typedef struct proto_error {
    proto_code code;
    char field[PROTO_FIELD_MAX];
    char message[PROTO_MESSAGE_MAX];
} proto_error;

/* Fills err (printf-style message). Returns -1, for `return proto_fail(...)`. */
int proto_fail(proto_error *err, proto_code code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- Requests (client -> node) ---------------------------------------- */

typedef enum proto_op {
    PROTO_OP_STATUS,
    PROTO_OP_SET,
    PROTO_OP_GENERATE,
    PROTO_OP_CANCEL,
    PROTO_OP_DROP_SESSION,
    PROTO_OP_EVAL,
    PROTO_OP_QUALITY,
    PROTO_OP_EMBED,
    PROTO_OP_COUNT
} proto_op;

const char *proto_op_name(proto_op op);

typedef enum proto_input {
    PROTO_INPUT_PROMPT,   /* "prompt": text, tokenized by the node */
    PROTO_INPUT_TOKENS,   /* "tokens": token ids */
    PROTO_INPUT_SYNTHETIC /* "synthetic_tokens": N deterministic ids */
} proto_input;

#define PROTO_PREFILL_AUTO 0 /* set.prefill_step == "auto" */

typedef struct proto_set_args {
    int has_prefill_step;
    int prefill_step; /* 1..PROTO_PREFILL_STEP_MAX, or PROTO_PREFILL_AUTO */
    int has_kv_bits;
    int kv_bits; /* 32, 16, 8 or 4 */
} proto_set_args;

/* A quality request's own fields (PROTOCOL.md "quality"); its prompt
 * input is generate's. */
typedef struct proto_quality_args {
    int has_kv_bits;
    int kv_bits; /* the setting under test, against 32 */
    int ctx;     /* window length; 0: the whole text as one window */
    int has_score_from;
    int score_from; /* positions of a window before it are not scored */
    int has_prefill_step;
    int prefill_step; /* both passes' chunk; PROTO_PREFILL_AUTO: auto */
    int bucket;       /* depth-bucket width */
} proto_quality_args;

/* logit_bias: {"TOKEN_ID": bias, ...}, at most this many entries. */
#define PROTO_BIAS_MAX 1024
typedef struct proto_bias {
    int token;
    float bias;
} proto_bias;

/* Reads a logit_bias map (each value checked by OPT_REQ_LOGIT_BIAS) into
 * out[0..*n). Returns 0, or -1 with err filled, its code bad_type or
 * bad_value. */
int proto_bias_read(const json_t *v, proto_bias *out, int *n, proto_error *err);
/* The map back, for a frame (NULL when out of memory). */
json_t *proto_bias_json(const proto_bias *b, int n);

/* A generate's logprobs: with each token, its log-probability and those
 * of the N most probable tokens at its position (N 0..PROTO_LOGPROBS_MAX),
 * of the model's raw distribution (engine/compute/sampler.h). */
#define PROTO_LOGPROBS_MAX 20
typedef struct proto_logprobs {
    int n_top;      /* -1: not asked; else top[0..n_top), the most probable first */
    double logprob; /* the chosen token's, <= 0 */
    int top[PROTO_LOGPROBS_MAX];
    double top_lp[PROTO_LOGPROBS_MAX];
} proto_logprobs;

/* Checks what a frame carries against what was asked (n_top as the
 * request's N, at most vocab) and the values (<= 0, top_lp not
 * increasing, ids below vocab). Returns 0, or -1 with err filled. */
int proto_logprobs_check(const proto_logprobs *lp, int asked, int vocab, char *err, size_t errlen);

typedef struct proto_generate_args {
    proto_input input;
    char *prompt;      /* PROMPT: UTF-8, NUL-terminated, may be "" */
    size_t prompt_len; /* bytes, without the NUL */
    int *tokens;       /* TOKENS: n_tokens >= 1 ids in 0..PROTO_TOKEN_ID_MAX */
    int n_tokens;
    int synthetic_tokens; /* SYNTHETIC: 1..PROTO_SYNTHETIC_MAX */
    int max_tokens;       /* 0..PROTO_MAX_TOKENS_MAX; 0 = prefill only */
    float temperature;    /* >= 0; 0 = greedy */
    float top_p;          /* (0, 1] */
    int has_seed;         /* 0: the node picks one */
    uint64_t seed;
    /* Each off at 0 (engine/compute/sampler.h: sampler_opts). */
    int top_k;
    float min_p, repeat_penalty, presence_penalty, frequency_penalty;
    int n_bias;
    proto_bias *bias;               /* [n_bias], owned: proto_request_free */
    int has_logprobs, logprobs;     /* logprobs: N alternatives with each token */
    char session[PROTO_ID_MAX + 1]; /* "" = no session: KV freed at the end */
    char source[PROTO_ID_MAX + 1];  /* "" or who sent it ("http": the node's HTTP server) */
    int special;                    /* PROMPT: control tokens' texts become those tokens */
} proto_generate_args;

typedef struct proto_request {
    proto_op op;
    char id[PROTO_ID_MAX + 1]; /* set even on error when it was readable */
    proto_set_args set;
    /* generate; eval too: its prompt input, with max_tokens 0 and no
     * session (an eval is a prefill whose every position is reported). */
    proto_generate_args generate; /* prompt and tokens owned: proto_request_free */
    int eval_logits;              /* eval: raw logits asked for ("logits": true) */
    proto_quality_args quality;
    char target[PROTO_ID_MAX + 1];  /* cancel: the request id to cancel */
    int stalled;                    /* cancel: its client stopped reading ("stalled": true) */
    char session[PROTO_ID_MAX + 1]; /* drop_session */
} proto_request;

/* Decodes and validates one control frame. Returns 0 with *out filled, or
 * -1 with err filled and nothing left to free in *out (but out->id set when
 * the frame had a valid id, so the error reply can carry it). */
int proto_request_decode(const void *buf, size_t len, proto_request *out, proto_error *err);
/* The same with a frame limit other than PROTO_MAX_FRAME (a node's, from
 * its context: proto_max_body). */
int proto_request_decode_max(const void *buf, size_t len, size_t max, proto_request *out,
                             proto_error *err);
void proto_request_free(proto_request *req);

/* ---- Replies (node -> client) ----------------------------------------- */

/* Each encoder returns a malloc'd NUL-terminated JSON text (free()), or
 * NULL when out of memory. id may be "" (a frame whose id was unreadable). */

/* A streamed token: {"v":1,"id":..,"done":false,"token":N,"text":".."}.
 * text may hold invalid UTF-8 (a byte-fallback piece); each invalid byte
 * becomes U+FFFD, the token id stays exact. lp (NULL or n_top -1: none)
 * adds "logprob":X,"top_logprobs":[{"token":ID,"logprob":X},..]. */
char *proto_reply_token(const char *id, int token, const char *text, const proto_logprobs *lp);

/* The final success frame: {"v":1,"id":..,"done":true,"ok":true, ...} with
 * every field of `results` (an object, or NULL) added. Borrowed: neither
 * stolen nor changed. */
char *proto_reply_ok(const char *id, const json_t *results);

/* The final error frame: {"v":1,"id":..,"done":true,"ok":false,
 * "error":{"code":..,"message":..[,"field":..]}}. */
char *proto_reply_error(const char *id, const proto_error *err);
/* The same with every field of `results` (an object, or NULL; borrowed)
 * added: a failed generate's "stats". */
char *proto_reply_error_with(const char *id, const proto_error *err, const json_t *results);

/* One position of an eval: the token there, the most likely next token
 * and that token's log-probability. */
typedef struct proto_eval_row {
    int token;
    int top1;
    double logprob;
} proto_eval_row;

/* One eval chunk: {"v":1,"id":..,"done":false,"pos":P,"tokens":[..],
 * "top1":[..],"logprob":[..]} for positions P..P+n-1, plus "vocab":V when
 * the chunk's raw logits follow as a second frame of the same message
 * (float32 little-endian [n][V]); vocab 0: they do not. */
char *proto_reply_eval(const char *id, int pos, const proto_eval_row *rows, int n, int vocab);
/* A quality chunk (PROTOCOL.md "quality"): the KL and top-1 agreement of
 * the n scored positions of window `window` from pos on. */
char *proto_reply_quality(const char *id, int window, int pos, const double *kl, const int *agree,
                          int n);

/* An embed's result: the mean over n positions of sum [dim] (an array of
 * dim numbers; NULL when out of memory). */
json_t *proto_embedding_json(const double *sum, int dim, int n);

/* Statistics of one generate request (its final frame's "stats"). */
typedef struct proto_stats {
    int prompt_tokens;
    int gen_tokens;
    double ttft_ms; /* request received -> first token out */
    double prefill_ms;
    double prefill_tps; /* prompt tokens / prefill seconds */
    double decode_tps;  /* tokens after the first / their seconds */
    double e2e_ms;      /* request received -> final frame */
    int ctx;            /* context length at the end (session included) */
} proto_stats;

json_t *proto_stats_json(const proto_stats *s);
int proto_stats_from_json(const json_t *obj, proto_stats *out, char *err, size_t errlen);

/* A reply frame as a client sees it. */
typedef struct proto_reply {
    char id[PROTO_ID_MAX + 1];
    int done;
    int ok;                    /* meaningful when done */
    char code[PROTO_CODE_MAX]; /* done && !ok: the wire code string */
    char message[PROTO_MESSAGE_MAX];
    char field[PROTO_FIELD_MAX];
    int has_token; /* a token frame */
    int token;
    proto_logprobs lp; /* a token frame's logprobs: n_top -1 when it has none */
    const char *text;  /* token text, owned by json */
    json_t *json;      /* the whole frame: results live here */
    void *data;        /* a second frame's bytes (an eval chunk's logits), or NULL */
    size_t data_len;
} proto_reply;

/* Returns 0, or -1 with a message when the frame is not a v1 reply. */
int proto_reply_decode(const void *buf, size_t len, proto_reply *out, char *err, size_t errlen);
void proto_reply_free(proto_reply *r);

/* The rows of an eval chunk frame (proto_reply_eval): 1 with *rows a
 * malloc'd array of *n (free() it), *pos the first position and *vocab
 * the floats per row of r->data (0: no logits; data_len checked against
 * it); 0 when the frame is not an eval chunk; -1 with a message when it
 * is a malformed one. */
int proto_eval_decode(const proto_reply *r, int *pos, proto_eval_row **rows, int *n, int *vocab,
                      char *err, size_t errlen);

/* ---- Status (status reply and node heartbeat) ------------------------- */

/* Stages of a ring, at most: a frame of 256 entries is about 100 KB of
 * JSON, well inside the ring's frame limit; the head's report bits and
 * the decoded frames are sized by it. */
#define PROTO_RING_MAX 256
#define PROTO_TEXT_MAX 128
/* Layers whose bytes a status reports (the planner's limit too). */
#define PROTO_LAYERS_MAX 1024

typedef struct proto_status {
    char version[32];  /* inferd version */
    char cpu_path[16]; /* kernel path in use ("avx2"); "" from an older node */
    struct {
        char name[PROTO_TEXT_MAX];
        char fingerprint[65];
        char format[16];                   /* "gguf", "llama2.c", "synthetic" */
        char arch[16];                     /* "llama" */
        char weight_types[PROTO_TEXT_MAX]; /* "Q4_K_M: q4_K 25, q6_K 5, f32 9" */
        int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
        int layer_first, layer_last; /* layers held: [first, last) */
        char chat_template[32];      /* chat format of the HTTP API ("plain", "llama3", ...) */
        /* The whole model's bytes as the engine counts them (model.h's
         * model_probe_bytes), for a planner that has no copy of the file;
         * n_layer_bytes 0: an older node. */
        int head_dim, shared_classifier;
        uint64_t embed_bytes, out_bytes;
        int n_layer_bytes;
        uint64_t layer_bytes[PROTO_LAYERS_MAX];
    } model;
    struct {
        int prefill_step; /* PROTO_PREFILL_AUTO or a size */
        int kv_bits;
        int threads;
        int max_ctx;        /* 0 = no cap */
        int max_seqs;       /* requests running at once */
        int pipeline_depth; /* steps in flight around the ring; 0: one per stage */
    } config;
    struct {
        uint64_t budget, used;
        int64_t headroom; /* budget - used; negative when over */
        uint64_t weights_bytes, kv_bytes, rss;
        uint64_t unpaged;        /* mapped weights not resident yet (counted in used) */
        uint64_t limit;          /* min(--mem-limit, cgroup limit); 0: none */
        uint64_t host_available; /* the host's MemAvailable; 0: unknown */
    } memory;
    char host_id[40]; /* the host's boot id: equal on nodes sharing memory; "" unknown */
    int sessions;     /* sessions holding KV */
    int active;       /* requests running (admitted) */
    int queued;       /* requests waiting for a place */
    double busy;      /* model time / wall time over the last second */
    double uptime_s;
    int stage, n_stages; /* this node's place in the pipeline */
    int n_ring;
    char ring[PROTO_RING_MAX][PROTO_TEXT_MAX]; /* stage endpoints, in order */
    int curve;                                 /* 1: sockets use CURVE */
    char warning[PROTO_MESSAGE_MAX];           /* "" or the insecure-binding warning */
    /* The head of a ring says whether the ring answers (ring_health). */
    struct {
        int known;                       /* 0: not the head of a ring, or an older node */
        int state;                       /* PROTO_RING_LOADING, PROTO_RING_UP, PROTO_RING_DOWN */
        char stage[PROTO_NAME_MAX + 1];  /* down: the stage it could not reach */
        char message[PROTO_MESSAGE_MAX]; /* down: why */
    } ring_health;
} proto_status;

/* ring_health.state: not yet seen whole since the head started, whole,
 * broken at a stage (requests are refused with ring_down). */
enum { PROTO_RING_LOADING, PROTO_RING_UP, PROTO_RING_DOWN };
const char *proto_ring_state_name(int state);
/* A state's name; one this build does not know reads as loading. */
int proto_ring_state_parse(const char *name);

/* The status object (the status reply's results, the heartbeat's body). */
json_t *proto_status_json(const char *node, const proto_status *s);
/* Reads the fields of a status reply or heartbeat (missing ones stay 0). */
int proto_status_from_json(const json_t *obj, proto_status *out, char *err, size_t errlen);

/* ---- Telemetry (node PUB -> subscribers) ------------------------------ */

typedef enum proto_topic {
    PROTO_TOPIC_STEP,
    PROTO_TOPIC_NODE,
    PROTO_TOPIC_REQ,
    PROTO_TOPIC_EVENT,
    PROTO_TOPIC_UNKNOWN /* a newer node's topic: clients skip it */
} proto_topic;

const char *proto_topic_name(proto_topic t);

/* The envelope every telemetry payload carries. A publisher keeps one and
 * bumps seq for each message it sends (any topic): gaps count loss. */
typedef struct proto_head {
    char node[PROTO_NAME_MAX + 1];
    uint64_t seq;
    int64_t t_ms; /* unix time, milliseconds */
} proto_head;

typedef enum proto_phase { PROTO_PHASE_PREFILL, PROTO_PHASE_DECODE } proto_phase;

/* One step of one request on one node. */
typedef struct proto_step {
    char req[PROTO_ID_MAX + 1];
    int64_t step; /* step index within the request, from 0 */
    proto_phase phase;
    int tokens;      /* positions in this step */
    int pos;         /* context position after the step */
    double step_ms;  /* wall time of the step on this node */
    double model_ms; /* compute of this node's layers */
    double eval_ms;  /* step_ms - model_ms */
    double wait_ms;  /* before the step: idle, waiting for input */
    uint64_t kv_bytes;
    int kv_bits;
    int prefill_step; /* the chunk size in effect (auto resolved) */
    uint64_t rss, budget;
    int64_t headroom;
    double act_max;    /* largest |activation| out; NaN when non-finite */
    int64_t nonfinite; /* NaN/Inf count in this step's output */
    int seqs;          /* sequences the step carried (an older node: 1) */
    double busy;       /* model time / wall time over the last second; NaN: not said */
} proto_step;

/* Enough for any step message (node name and req id escaped at worst). */
#define PROTO_STEP_BUF 1536

/* The hot path: encodes a step payload into buf without allocating.
 * Returns its length (without the NUL), or -1 when cap is too small. */
int proto_step_encode(const proto_head *h, const proto_step *s, char *buf, size_t cap);

/* The node heartbeat: the status object plus the envelope. free(). */
char *proto_node_encode(const proto_head *h, const proto_status *s);

/* Request start and end. */
typedef struct proto_req_msg {
    char req[PROTO_ID_MAX + 1];
    int end; /* 0: "state":"start", 1: "state":"end" */
    char session[PROTO_ID_MAX + 1];
    char kind[PROTO_CODE_MAX];     /* the request's op: "generate", "eval", "quality"; "" unsaid */
    proto_input input;             /* start */
    char source[PROTO_ID_MAX + 1]; /* start: who sent it ("control", "http") */
    int prompt_tokens;             /* start: prompt length (synthetic included) */
    int max_tokens;                /* start */
    int ok;                        /* end */
    proto_stats stats;             /* end (also on error: what was done) */
    char code[PROTO_CODE_MAX];     /* end && !ok */
    char message[PROTO_MESSAGE_MAX];
} proto_req_msg;

char *proto_req_encode(const proto_head *h, const proto_req_msg *m);

typedef enum proto_event_kind {
    PROTO_EV_CONFIG_APPLIED, /* a set took effect: prefill_step, kv_bits */
    PROTO_EV_KV_CONVERTED,   /* KV converted: from_bits, to_bits, ms, bytes_before, bytes_after */
    PROTO_EV_REFUSED,        /* a request refused up front (kv_oom, ctx_limit, ...) */
    PROTO_EV_STAGE_TIMEOUT,  /* a pipeline stage went silent: stage */
    PROTO_EV_MODEL_MISMATCH, /* stages disagree on the model */
    PROTO_EV_NUMERIC,        /* non-finite activations seen */
    PROTO_EV_ERROR,          /* any other error */
    PROTO_EV_SHUTDOWN,       /* the node is going away */
    PROTO_EV_RING_DOWN,      /* the head found its ring broken: stage */
    PROTO_EV_RING_UP,        /* the ring answers again */
    PROTO_EV_UNKNOWN         /* a newer node's kind: see kind_name */
} proto_event_kind;

const char *proto_event_name(proto_event_kind k);

typedef struct proto_event {
    proto_event_kind kind;
    char kind_name[PROTO_CODE_MAX]; /* the wire string (decoder fills it) */
    char req[PROTO_ID_MAX + 1];     /* "" when not about one request */
    char code[PROTO_CODE_MAX];      /* "" or the error code involved */
    char message[PROTO_MESSAGE_MAX];
} proto_event;

/* detail: an object of kind-specific fields (see PROTOCOL.md), or NULL;
 * borrowed. Envelope fields win over detail fields of the same name. */
char *proto_event_encode(const proto_head *h, const proto_event *ev, const json_t *detail);

/* Sends a topic frame and a payload frame on a PUB socket, never blocking
 * (a PUB drops at its high-water mark). Returns 0 or -1 (errno from zmq). */
int proto_publish(void *pub, proto_topic topic, const char *payload, size_t len);

/* A telemetry message as a subscriber sees it. Only the struct of the
 * message's topic is filled; json holds the whole payload for the node,
 * req and event topics (the heartbeat's status and event details are read
 * from it). For step it is usually NULL: step messages are decoded
 * without building a tree (proto_step_scan.h), so read `step`. */
typedef struct proto_tel {
    proto_topic topic;
    proto_head head;
    proto_step step;
    proto_status status;
    proto_req_msg req;
    proto_event event;
    json_t *json;
} proto_tel;

/* Returns 0 (topic PROTO_TOPIC_UNKNOWN for a topic this build does not
 * know: skip it), or -1 with a message for a malformed message. Unknown
 * fields are ignored, as v1 allows additive fields. */
int proto_tel_decode(const void *topic, size_t topic_len, const void *payload, size_t len,
                     proto_tel *out, char *err, size_t errlen);
void proto_tel_free(proto_tel *t);

/* ---- Endpoints -------------------------------------------------------- */

/* 1 if a bind endpoint is reachable only from this host: tcp on 127.x.x.x,
 * ::1, localhost or the "lo" interface; ipc://; inproc://. 0 otherwise
 * (a wildcard "*" host, 0.0.0.0, another address or interface). */
int proto_endpoint_is_loopback(const char *endpoint);

#endif
