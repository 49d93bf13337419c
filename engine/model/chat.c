/* chat.c: chat formats of the common model families (see chat.h). */
#include "chat.h"

#include <string.h>

/* How one family writes a chat. Every message is role.open, its content,
 * role.close; the prompt ends with gen, the start of the assistant's turn.
 * A family without a system role (merge_system) writes each system text,
 * between sys_open and sys_close, at the start of the next user message.
 * A string left out writes nothing. */
typedef struct family {
    const char *name;
    struct {
        const char *open, *close;
    } role[3]; /* indexed by chat_role */
    const char *gen;
    int merge_system;
    const char *sys_open, *sys_close;
    const char *later_user; /* before every user message but one that starts the prompt */
    int trim;               /* contents lose leading and trailing whitespace */
} family;

static const family families[CHAT_FORMAT_COUNT] = {
    [CHAT_PLAIN] = {.name = "plain",
                    .role = {{"System: ", "\n"}, {"User: ", "\n"}, {"Assistant: ", "\n"}},
                    .gen = "Assistant:"},
    [CHAT_LLAMA2] =
        {.name = "llama2",
         .role = {[CHAT_USER] = {"[INST] ", " [/INST]"}, [CHAT_ASSISTANT] = {" ", " </s>"}},
         .merge_system = 1,
         .sys_open = "<<SYS>>\n",
         .sys_close = "\n<</SYS>>\n\n",
         .later_user = "<s>",
         .trim = 1},
    [CHAT_LLAMA3] = {.name = "llama3",
                     .role = {{"<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>"},
                              {"<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>"},
                              {"<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"}},
                     .gen = "<|start_header_id|>assistant<|end_header_id|>\n\n",
                     .trim = 1},
    [CHAT_CHATML] = {.name = "chatml",
                     .role = {{"<|im_start|>system\n", "<|im_end|>\n"},
                              {"<|im_start|>user\n", "<|im_end|>\n"},
                              {"<|im_start|>assistant\n", "<|im_end|>\n"}},
                     .gen = "<|im_start|>assistant\n"},
    [CHAT_MISTRAL] =
        {.name = "mistral",
         .role = {[CHAT_USER] = {"[INST] ", " [/INST]"}, [CHAT_ASSISTANT] = {"", "</s>"}},
         .merge_system = 1,
         .sys_close = "\n\n"},
    [CHAT_ZEPHYR] = {.name = "zephyr",
                     .role = {{"<|system|>\n", "</s>\n"},
                              {"<|user|>\n", "</s>\n"},
                              {"<|assistant|>\n", "</s>\n"}},
                     .gen = "<|assistant|>\n"},
    [CHAT_GEMMA] = {.name = "gemma",
                    .role = {[CHAT_USER] = {"<start_of_turn>user\n", "<end_of_turn>\n"},
                             [CHAT_ASSISTANT] = {"<start_of_turn>model\n", "<end_of_turn>\n"}},
                    .gen = "<start_of_turn>model\n",
                    .merge_system = 1,
                    .sys_close = "\n\n",
                    .trim = 1},
};

static int has(const char *text, size_t len, const char *marker)
{
    return memmem(text, len, marker, strlen(marker)) != NULL;
}

chat_format chat_recognise(const char *text, size_t len)
{
    if (!text || len == 0)
        return CHAT_PLAIN;
    /* Most specific markers first: a Llama 3 or ChatML template may quote
     * [INST] in a comment, never the other way round. */
    if (has(text, len, "<|start_header_id|>"))
        return CHAT_LLAMA3;
    if (has(text, len, "<|im_start|>"))
        return CHAT_CHATML;
    if (has(text, len, "<start_of_turn>"))
        return CHAT_GEMMA;
    /* Zephyr ends each turn with the EOS token; Phi-3 and GLM, which share
     * its role tags, do not, and fall back to plain. */
    if (has(text, len, "<|user|>") && has(text, len, "eos_token") && !has(text, len, "<|end|>"))
        return CHAT_ZEPHYR;
    if (has(text, len, "[INST]"))
        return has(text, len, "<<SYS>>") ? CHAT_LLAMA2 : CHAT_MISTRAL;
    return CHAT_PLAIN;
}

const char *chat_format_name(chat_format f)
{
    return f >= 0 && f < CHAT_FORMAT_COUNT ? families[f].name : "plain";
}

int chat_format_parse(const char *name, chat_format *out)
{
    for (int f = 0; f < CHAT_FORMAT_COUNT; f++) {
        if (strcmp(name, families[f].name) == 0) {
            *out = (chat_format)f;
            return 0;
        }
    }
    return -1;
}

/* An snprintf-like writer: counts everything, stores what fits. */
typedef struct writer {
    char *out;
    size_t cap, len;
} writer;

static void put_n(writer *w, const char *s, size_t n)
{
    if (w->len < w->cap) {
        size_t room = w->cap - w->len;
        memcpy(w->out + w->len, s, n < room ? n : room);
    }
    w->len += n;
}

static void put(writer *w, const char *s)
{
    if (s)
        put_n(w, s, strlen(s));
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void put_content(writer *w, const family *fm, const char *s)
{
    size_t n = strlen(s);
    if (fm->trim) {
        while (n > 0 && is_space(*s))
            s++, n--;
        while (n > 0 && is_space(s[n - 1]))
            n--;
    }
    put_n(w, s, n);
}

/* A user message (content NULL: none) with the system texts m[sys..upto)
 * that wait for one in front of it. */
static void put_user(writer *w, const family *fm, const chat_msg *m, int sys, int upto,
                     const char *content)
{
    if (w->len > 0)
        put(w, fm->later_user);
    put(w, fm->role[CHAT_USER].open);
    for (int i = sys; i < upto; i++) {
        if (m[i].role != CHAT_SYSTEM)
            continue;
        put(w, fm->sys_open);
        put_content(w, fm, m[i].content);
        put(w, fm->sys_close);
    }
    if (content)
        put_content(w, fm, content);
    put(w, fm->role[CHAT_USER].close);
}

size_t chat_render(chat_format f, const chat_msg *m, int n, char *out, size_t cap)
{
    const family *fm = &families[f >= 0 && f < CHAT_FORMAT_COUNT ? f : CHAT_PLAIN];
    writer w = {out, cap > 0 ? cap - 1 : 0, 0};
    int pending = -1; /* first system message waiting for a user message */
    for (int i = 0; i < n; i++) {
        chat_role r = m[i].role;
        if (fm->merge_system && r == CHAT_SYSTEM) {
            if (pending < 0)
                pending = i;
            continue;
        }
        if (r == CHAT_USER) {
            put_user(&w, fm, m, pending < 0 ? i : pending, i, m[i].content);
            pending = -1;
            continue;
        }
        if (pending >= 0) {
            /* System text followed by no user message: it is the user's turn. */
            put_user(&w, fm, m, pending, i, NULL);
            pending = -1;
        }
        put(&w, fm->role[r].open);
        put_content(&w, fm, m[i].content);
        put(&w, fm->role[r].close);
    }
    if (pending >= 0)
        put_user(&w, fm, m, pending, n, NULL);
    put(&w, fm->gen);
    if (cap > 0)
        out[w.len < w.cap ? w.len : w.cap] = '\0';
    return w.len;
}
