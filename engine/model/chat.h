/* chat.h: a chat's messages as one prompt text, in the format the model
 * was trained on.
 *
 * A GGUF file carries its chat format as a Jinja template
 * (tokenizer.chat_template). Rather than run Jinja, the template is
 * recognised as one of the common families by the markers it prints, and
 * that family's format is written here. A template of no known family, and
 * a model without one (llama2.c checkpoints, the embedded model), get the
 * plain format:
 *
 *   System: <content>\n      one line per message, in order
 *   User: <content>\n
 *   Assistant: <content>\n
 *   Assistant:               what the model continues
 *
 * The prompt never starts with BOS: the node's tokenizer adds it. Families
 * without a system role (Llama 2, Mistral, Gemma) get the system text at the
 * start of the next user message, as their official templates do.
 */
#ifndef CHAT_H
#define CHAT_H

#include <stddef.h>

typedef enum chat_format {
    CHAT_PLAIN,   /* "plain": the fallback above */
    CHAT_LLAMA2,  /* "llama2": [INST] <<SYS>> ... <</SYS>> ... [/INST] */
    CHAT_LLAMA3,  /* "llama3": <|start_header_id|>role<|end_header_id|> ... <|eot_id|> */
    CHAT_CHATML,  /* "chatml": <|im_start|>role ... <|im_end|> (Qwen, OpenHermes, ...) */
    CHAT_MISTRAL, /* "mistral": [INST] ... [/INST] answer</s> */
    CHAT_ZEPHYR,  /* "zephyr": <|user|> ... </s> */
    CHAT_GEMMA,   /* "gemma": <start_of_turn>user ... <end_of_turn> */
    CHAT_FORMAT_COUNT
} chat_format;

typedef enum chat_role { CHAT_SYSTEM, CHAT_USER, CHAT_ASSISTANT } chat_role;

typedef struct chat_msg {
    chat_role role;
    const char *content; /* UTF-8, NUL-terminated */
} chat_msg;

/* The family of a template text (len bytes, need not be NUL-terminated);
 * CHAT_PLAIN for NULL, empty or unrecognised text. */
chat_format chat_recognise(const char *text, size_t len);

/* "plain", "llama2", ... */
const char *chat_format_name(chat_format f);
/* The format of a name chat_format_name gives; -1 for any other. */
int chat_format_parse(const char *name, chat_format *out);

/* Writes the prompt for messages m[0..n) followed by the start of the
 * assistant's turn into out (cap bytes, NUL-terminated, cut when short)
 * and returns its whole length without the NUL, as snprintf does: call
 * with cap 0 to size the buffer. */
size_t chat_render(chat_format f, const chat_msg *m, int n, char *out, size_t cap);

#endif
