/* tokens.h: POST /tokenize and /detokenize, in llama.cpp's shapes (and
 * vLLM's field names), with the node's tokenizer; no I/O.
 *
 *   {"content": "text"}      -> {"tokens": [ids], "count": n}
 *   {"tokens": [ids]}        -> {"content": "text"}
 *
 * engine/http/README.md lists every field.
 */
#ifndef TOKENS_H
#define TOKENS_H

#include <stddef.h>

#include "engine/model/tokenizer.h"
#include "openai.h"

/* The response body (free()), or NULL with e filled. */
char *tokens_tokenize(const tokenizer *t, const oai_model *m, const char *body, size_t len,
                      oai_error *e);
char *tokens_detokenize(const tokenizer *t, const oai_model *m, const char *body, size_t len,
                        oai_error *e);

#endif
