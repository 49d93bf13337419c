/* gen.h: one completion request carried out for one HTTP connection.
 *
 * The request goes to the node as an ordinary protocol `generate` (so it is
 * queued, admitted, logged and published like any other), on a DEALER of
 * its own connected to the node's control socket. Reply frames are turned
 * into the response text with the stop sequences applied, either whole or
 * as server-sent events. While it waits, the client's socket is watched
 * too: a client that goes away gets its request cancelled at once, and the
 * node frees its KV cache.
 *
 * Every function is called from the worker thread that owns the gen
 * (work.h); nothing here is shared between requests.
 */
#ifndef GEN_H
#define GEN_H

#include <stdatomic.h>
#include <sys/types.h>

#include "engine/model/tokenizer.h"
#include "openai.h"

/* What a gen needs of the server (borrowed). */
typedef struct gen_env {
    void *zctx;
    const char *control;        /* the node's control endpoint */
    const atomic_int *stopping; /* set when the server stops: every wait ends */
    const tokenizer *tok;       /* the node's, for logprobs' token strings (may be NULL) */
    const atomic_int *gone;     /* set when the connection is gone (NULL: none) */
} gen_env;

typedef struct gen gen;

/* Sends the request (req becomes the gen's, also on failure) and waits for
 * its first reply frame, so that a request the node refuses gets a proper
 * HTTP status before anything is sent. r: the response's identity (copied).
 * client_fd: the connection's socket, watched for the client going away
 * (only peeked at: once the connection is closed the number may name
 * another socket, whose state then says nothing wrong: ours is gone).
 * Returns 0, or -1 with e filled; e->status 0 means the client is gone and
 * nothing is to be answered. */
int gen_begin(gen **out, const gen_env *env, oai_req *req, const oai_reply *r, int client_fd,
              oai_error *e);

/* A request that does not stream: waits for the end. The response body
 * (free()), or NULL with e filled as gen_begin fills it. */
char *gen_complete(gen *g, oai_error *e);

/* A request that streams: copies the next server-sent-event bytes into
 * buf. Returns how many (> 0), GEN_END after the last, or GEN_ABORT when
 * the client went away or the server stops. */
#define GEN_END (-1)
#define GEN_ABORT (-2)
ssize_t gen_stream(gen *g, char *buf, size_t max);

/* A stream whose client stalled: cancels what runs and ends the events
 * with finish_reason "abort" and a `stalled` error (gen_stream gives them
 * out without waiting). */
void gen_stall(gen *g, double stall_s);

/* Cancels the request on the node when it has not ended (and waits,
 * briefly, for the node to confirm), then releases everything. */
void gen_free(gen *g);

#endif
