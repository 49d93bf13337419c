/* openai.h: the JSON of the OpenAI-compatible API, without any I/O.
 *
 * In: a /v1/completions or /v1/chat/completions body, validated in full
 * (types, ranges, unknown fields, features this server does not have) and
 * turned into the fields of one protocol `generate` request; chat messages
 * are rendered with the model's chat format (engine/model/chat.h). Out:
 * responses, server-sent-event chunks, and errors in OpenAI's shape
 * {"error":{"message","type","param","code"}} with their HTTP status.
 * engine/http/README.md documents what is accepted and every status.
 */
#ifndef OPENAI_H
#define OPENAI_H

#include <stddef.h>

#include <jansson.h>

#include "engine/model/chat.h"
#include "engine/proto/protocol.h"
#include "sbuf.h"
#include "stopseq.h"

typedef enum oai_kind { OAI_COMPLETION, OAI_CHAT } oai_kind;

/* Largest request body: a prompt must fit one protocol frame anyway. */
#define OAI_BODY_MAX PROTO_MAX_FRAME
/* max_tokens when a request gives none: OpenAI's for completions; the
 * node's default for chat (OpenAI's is the rest of the context). */
#define OAI_COMPLETION_MAX_TOKENS 16

typedef struct oai_error {
    int status;                  /* HTTP status */
    char code[PROTO_CODE_MAX];   /* "" for null */
    char param[PROTO_FIELD_MAX]; /* "" for null */
    char message[PROTO_MESSAGE_MAX];
} oai_error;

/* Fills e; the type follows from the status (400s invalid_request_error,
 * 401 authentication_error, 429 rate_limit_error, 500s server_error).
 * Returns -1, for `return oai_fail(...)`. */
int oai_fail(oai_error *e, int status, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The HTTP error for a node's error reply (code, message): kv_oom and
 * ctx_limit 400, busy 429, stage_timeout and ring_down 503, too_large 413, ... */
void oai_from_node(const char *code, const char *message, oai_error *e);

/* {"error":{...}} as text (free()); NULL when out of memory. */
char *oai_error_json(const oai_error *e);

typedef struct oai_req {
    oai_kind kind;
    int stream;
    int include_usage; /* stream_options.include_usage */
    int max_tokens;    /* the limit in effect: finish_reason "length" when reached */
    stopseq stop;      /* strings owned here */
    json_t *generate;  /* the generate request's fields, "source":"http" included */
    const char *model; /* the name the request used (one of oai_model's) */
    int n;             /* choices: n requests run at once */
    int logprobs;      /* alternatives asked with each token's logprobs; -1: none */
} oai_req;

/* What the node serves: the model names accepted (--alias, else the
 * model's own; the first is the one errors name), and its chat format. */
#define OAI_NAMES_MAX 16
typedef struct oai_model {
    const char *names[OAI_NAMES_MAX];
    int n_names;
    chat_format chat;
    int max_seqs; /* the node's --max-seqs: n's bound */
} oai_model;

/* Returns 0 with *out filled (oai_req_free it), or -1 with e filled. */
int oai_parse(oai_kind kind, const char *body, size_t len, const oai_model *model, oai_req *out,
              oai_error *e);
void oai_req_free(oai_req *r);

/* The identity every response and chunk of one request carries. */
typedef struct oai_reply {
    oai_kind kind;
    const char *id; /* "cmpl-..." or "chatcmpl-..." */
    const char *model;
    long long created; /* unix seconds */
} oai_reply;

/* One choice of a response: its text and why it ended. */
typedef struct oai_choice {
    const char *text;
    size_t len;
    const char *finish;   /* "stop" or "length" */
    const char *logprobs; /* its logprobs object (logprobs.h) as JSON text, or NULL */
} oai_choice;

/* The whole response of a request that does not stream: its n choices,
 * index 0 first. */
char *oai_response(const oai_reply *r, const oai_choice *c, int n, int prompt_tokens,
                   int completion_tokens);

/* Server-sent events, appended to out. A chunk of choice `index`'s text
 * and its tokens' logprobs (JSON text, or NULL); text NULL for its last
 * one, which carries finish ("stop" or "length"). */
void oai_chunk(sbuf *out, const oai_reply *r, int index, const char *text, size_t len,
               const char *logprobs, const char *finish);
/* A chat stream's first chunk of a choice: the assistant's role. */
void oai_chunk_role(sbuf *out, const oai_reply *r, int index);
/* stream_options.include_usage: the usage after the last chunk. */
void oai_chunk_usage(sbuf *out, const oai_reply *r, int prompt_tokens, int completion_tokens);
/* An error once the stream has begun (the status went out already). */
void oai_chunk_error(sbuf *out, const oai_error *e);
void oai_chunk_done(sbuf *out); /* data: [DONE] */

/* GET /v1/models: the model under each of its names, with its context
 * (vLLM's max_model_len). */
char *oai_models(const oai_model *m, long long created, int ctx);
/* GET /v1/models/{name}: one of them. */
char *oai_model_info(const char *name, long long created, int ctx);
/* GET /props, llama.cpp's: the model, its names, the context, places
 * (total_slots: --max-seqs), chat format, version, a request's defaults. */
char *oai_props(const oai_model *m, const proto_status *st, int ctx);

#endif
