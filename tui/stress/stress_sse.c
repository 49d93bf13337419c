/* stress_sse.c: the OpenAI streaming answer as the stress runner reads it,
 * a line at a time as bytes come: content chunks (counted, for the caller
 * to time), the finish, [DONE], the engine's `usage` and llama.cpp's
 * `timings`, and an error event (inferd sends `data: {"error":...}`,
 * llama.cpp an `error: {...}` line). Also what a failed request was, from
 * its status and error body. Pure: the tests feed it real captures. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "stress.h"

void stress_sse_init(stress_sse *s)
{
    memset(s, 0, sizeof *s);
    s->prompt_tokens = s->completion_tokens = -1;
    s->prompt_ms = s->prompt_tps = s->decode_tps = -1.0;
}

static double num_or(const json_t *o, const char *key, double unknown)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : unknown;
}

/* The code of an OpenAI error object: its `code` (inferd: a string,
 * llama.cpp: the status number), else its `type`. */
static void error_of(stress_sse *s, const json_t *e)
{
    const json_t *code = json_object_get(e, "code");
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    s->error = 1;
    if (json_is_string(code))
        snprintf(s->code, sizeof s->code, "%s", json_string_value(code));
    else
        snprintf(s->code, sizeof s->code, "%s", type ? type : "");
    snprintf(s->message, sizeof s->message, "%s", msg ? msg : "");
}

/* Whether a chunk's first choice carries text: `text` (completions) or
 * `delta.content` (chat). A role-only or empty delta is not a token. */
static int has_content(const json_t *choice)
{
    const json_t *t = json_object_get(choice, "text");
    if (!t)
        t = json_object_get(json_object_get(choice, "delta"), "content");
    return json_is_string(t) && json_string_length(t) > 0;
}

/* One event's data: 1 when it was a content chunk. */
static int on_data(stress_sse *s, const char *data, int is_error)
{
    if (strcmp(data, "[DONE]") == 0) {
        s->done = 1;
        return 0;
    }
    json_t *o = json_loads(data, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return 0;
    }
    int content = 0;
    const json_t *err = json_object_get(o, "error");
    if (is_error || err) {
        error_of(s, err ? err : o);
    } else {
        const json_t *choice = json_array_get(json_object_get(o, "choices"), 0);
        content = has_content(choice);
        if (json_is_string(json_object_get(choice, "finish_reason")))
            s->finished = 1;
        const json_t *u = json_object_get(o, "usage");
        if (json_is_object(u)) {
            s->prompt_tokens = (int64_t)num_or(u, "prompt_tokens", -1);
            s->completion_tokens = (int64_t)num_or(u, "completion_tokens", -1);
        }
        const json_t *t = json_object_get(o, "timings");
        if (json_is_object(t)) {
            s->prompt_ms = num_or(t, "prompt_ms", -1);
            s->prompt_tps = num_or(t, "prompt_per_second", -1);
            s->decode_tps = num_or(t, "predicted_per_second", -1);
        }
    }
    json_decref(o);
    s->chunks += content;
    return content;
}

static int on_line(stress_sse *s, char *line)
{
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r')
        line[n - 1] = '\0';
    int is_error = strncmp(line, "error:", 6) == 0;
    const char *v = is_error ? line + 6 : strncmp(line, "data:", 5) == 0 ? line + 5 : NULL;
    if (!v)
        return 0; /* a blank line, a comment, event:/id:/retry: */
    return on_data(s, v + (*v == ' '), is_error);
}

int stress_sse_feed(stress_sse *s, const char *data, size_t len)
{
    int content = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n') {
            if (s->len + 1 < sizeof s->line)
                s->line[s->len++] = data[i];
            else
                s->overlong = 1;
            continue;
        }
        s->line[s->len] = '\0';
        if (!s->overlong)
            content += on_line(s, s->line);
        s->len = 0;
        s->overlong = 0;
    }
    return content;
}

/* The engines' ways of saying that a prompt does not fit its context. */
static int is_overflow(const char *code, const char *message)
{
    static const char *const codes[] = {"ctx_limit", "kv_oom", "exceed_context_size_error",
                                        "context_length_exceeded"};
    static const char *const phrases[] = {"exceeds the available context size",
                                          "maximum context length", "context length",
                                          "context window"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strcmp(code, codes[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof phrases / sizeof phrases[0]; i++)
        if (strstr(message, phrases[i]))
            return 1;
    return 0;
}

void stress_http_classify(long status, const char *body, const char *transport, char *code,
                          size_t codelen, char *message, size_t msglen)
{
    stress_sse e;
    stress_sse_init(&e);
    if (body && body[0])
        on_data(&e, body, 1);
    if (status >= 400 || e.error) {
        const char *msg = e.message[0] ? e.message : body && body[0] ? body : "no error body";
        int overflow = is_overflow(e.code, msg);
        snprintf(code, codelen, "%s",
                 overflow        ? "context_overflow"
                 : status >= 400 ? "http_status"
                                 : "error");
        if (status >= 400)
            snprintf(message, msglen, "HTTP %ld: %.400s", status, msg);
        else
            snprintf(message, msglen, "%.400s", msg);
        return;
    }
    snprintf(code, codelen, "disconnect");
    snprintf(message, msglen, "the stream ended before [DONE] or a finish%s%.200s",
             transport && transport[0] ? ": " : "", transport ? transport : "");
}
