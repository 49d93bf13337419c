/* tokwork.h: text prompts tokenized on a thread of their own, so that the
 * node's loop answers status, cancel and SIGTERM however long a prompt
 * takes to tokenize.
 *
 * One prompt at a time: requests that start together wait their turn
 * here (tokenizing is short next to running a request). The head
 * submits a prompt under a tag (its request's ring operation), polls the
 * descriptor, and takes the ids when they are ready. A prompt whose
 * request ended meanwhile is cancelled: the thread finishes it and throws
 * the ids away. The tokenizer is only read (tok_tokenize and tok_decode on
 * the loop's thread may run at once).
 */
#ifndef TOKWORK_H
#define TOKWORK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model/tokenizer.h"

typedef struct tokwork tokwork;

/* Starts the thread; tok must outlive it (see tokwork_stop). */
int tokwork_start(tokwork **out, const tokenizer *tok, char *err, size_t errlen);

/* Stops the thread. Returns 0 when it has stopped, -1 when it is still
 * encoding a prompt: it is then left to end with the process (a node never
 * waits for a tokenizer to stop), and the tokenizer must not be freed. */
int tokwork_stop(tokwork *w);

/* Readable (poll) when a result is ready or the thread became free. */
int tokwork_fd(const tokwork *w);

/* Hands text (copied) to the thread, to be encoded with tok_tokenize's
 * flags (TOK_ADD_BOS, TOK_PARSE_SPECIAL). 0, or 1
 * when the thread is still busy with another prompt (a cancelled one),
 * or -1 out of memory. */
int tokwork_submit(tokwork *w, uint64_t tag, const char *text, size_t len, int flags);

/* 1 while a prompt is with the thread (submitted and not yet taken, or
 * cancelled and not yet finished): tokwork_submit would return 1. */
int tokwork_busy(tokwork *w);

/* The ids of tag's prompt: 1 with *ids (malloc'd, the caller frees them)
 * and *n (-1 when encoding ran out of memory), 0 when not ready yet. */
int tokwork_take(tokwork *w, uint64_t tag, int **ids, int *n);

/* Forgets tag's prompt, encoding or encoded. */
void tokwork_cancel(tokwork *w, uint64_t tag);

#endif
