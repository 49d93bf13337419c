/* stress_http.c: the stress runner's side of an HTTP node, any engine that
 * speaks the OpenAI API. Each request is a streaming POST /v1/completions
 * on libcurl's multi interface, so that the run's thread keeps its
 * concurrency of them in flight and still checks its timers; the stream is
 * read as it comes (stress_sse.c): its content chunks time TTFT and the
 * inter-token gaps, its last chunks carry the engine's own counts. At the
 * start the engine is asked (a few small blocking calls) for its model,
 * its version and whether it tokenizes, which makes prompt lengths exact. */
#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stress_int.h"

#define PROBE_TIMEOUT_S 5L
#define ERRBODY_MAX 4096   /* kept of a failed answer's body */
#define PROMPT_WORD " the" /* one token in the tokenizers of common models */

struct st_http_call {
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    stress_run *run;
    long status;
    char errbody[ERRBODY_MAX];
    size_t n_errbody;
    char curl_err[CURL_ERROR_SIZE];
    stress_sse sse;
};

struct st_http {
    CURLM *multi;
    char model[256];
    int tokenizes;     /* POST /tokenize answers */
    char *prompt;      /* the last synthetic prompt made, */
    int prompt_tokens; /* for this many tokens */
    int prompt_exact;  /* and whether the tokenizer confirmed it */
};

/* ---- small blocking calls, at the start ---- */

typedef struct buf {
    char *p;
    size_t n;
} buf;

static size_t to_buf(char *data, size_t size, size_t nmemb, void *ud)
{
    buf *b = ud;
    size_t len = size * nmemb;
    char *grown = realloc(b->p, b->n + len + 1);
    if (!grown)
        return 0;
    memcpy(grown + b->n, data, len);
    b->p = grown;
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

static struct curl_slist *headers_of(const stress_http_node *n)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (h && n->api_key[0]) {
        char auth[STRESS_KEY_MAX + 32];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", n->api_key);
        struct curl_slist *more = curl_slist_append(h, auth);
        if (!more) {
            curl_slist_free_all(h);
            return NULL;
        }
        h = more;
    }
    return h;
}

static void url_of(const stress_http_node *n, const char *path, char *out, size_t len)
{
    snprintf(out, len, "%s%s", n->url, path);
}

json_t *st_http_json(const stress_run *r, const char *path, const char *post, long timeout_s,
                     char *err, size_t errlen)
{
    const stress_http_node *n = &r->target.http_node;
    char url[STRESS_EP_MAX + 64], cerr[CURL_ERROR_SIZE] = "";
    url_of(n, path, url, sizeof url);
    CURL *c = curl_easy_init();
    struct curl_slist *h = headers_of(n);
    buf b = {0};
    json_t *out = NULL;
    if (!c || !h) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (post)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK)
        snprintf(err, errlen, "%s %s: %s", post ? "POST" : "GET", url,
                 cerr[0] ? cerr : curl_easy_strerror(rc));
    else if (status != 200)
        snprintf(err, errlen, "%s %s: HTTP %ld: %.300s", post ? "POST" : "GET", url, status,
                 b.p ? b.p : "");
    else if (!(out = json_loads(b.p ? b.p : "", 0, NULL)))
        snprintf(err, errlen, "%s %s: the answer is not JSON", post ? "POST" : "GET", url);
done:
    free(b.p);
    curl_slist_free_all(h);
    if (c)
        curl_easy_cleanup(c);
    return out;
}

/* Where each engine tells its version. */
static void ask_version(stress_run *r)
{
    static const struct {
        eng_kind kind;
        const char *path, *key;
    } where[] = {{ENG_LLAMACPP, "/props", "build_info"},
                 {ENG_VLLM, "/version", "version"},
                 {ENG_OLLAMA, "/api/version", "version"}};
    char err[256];
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        if (where[i].kind != r->target.http_node.engine)
            continue;
        json_t *o = st_http_json(r, where[i].path, NULL, PROBE_TIMEOUT_S, err, sizeof err);
        const char *v = json_string_value(json_object_get(o, where[i].key));
        snprintf(r->engine_version, sizeof r->engine_version, "%s", v ? v : "");
        json_decref(o);
    }
}

/* The tokens of text by the engine's tokenizer (llama.cpp's /tokenize
 * takes `content`, vLLM's `prompt`); -1 when it cannot tell. */
static int count_tokens(stress_run *r, const char *text)
{
    char err[256];
    json_t *req = json_pack("{ss ss ss}", "content", text, "prompt", text, "model", r->http->model);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    json_t *o = body ? st_http_json(r, "/tokenize", body, PROBE_TIMEOUT_S, err, sizeof err) : NULL;
    free(body);
    json_t *t = json_object_get(o, "tokens");
    int n = json_is_array(t) ? (int)json_array_size(t) : -1;
    json_decref(o);
    return n;
}

static char *words(int n)
{
    size_t w = strlen(PROMPT_WORD);
    char *s = malloc((size_t)n * w + 1);
    for (int i = 0; s && i < n; i++)
        memcpy(s + (size_t)i * w, PROMPT_WORD, w);
    if (s)
        s[(size_t)n * w] = '\0';
    return s;
}

/* A prompt of `tokens` tokens: counted by the engine's tokenizer where it
 * has one (a few tries converge, the word being about a token), else
 * assumed a token a word; the engine's usage says what it was. Kept for
 * the next request of the same length. */
static const char *prompt_of(stress_run *r, int tokens)
{
    struct st_http *h = r->http;
    if (h->prompt && h->prompt_tokens == tokens)
        return h->prompt;
    free(h->prompt);
    int n = tokens;
    h->prompt = words(n);
    h->prompt_tokens = tokens;
    h->prompt_exact = 0;
    for (int tries = 0; h->prompt && h->tokenizes && tries < 4; tries++) {
        int got = count_tokens(r, h->prompt);
        if (got < 0 || got == tokens) {
            h->prompt_exact = got == tokens;
            break;
        }
        n = n + (tokens - got) > 1 ? n + (tokens - got) : 1;
        free(h->prompt);
        h->prompt = words(n);
    }
    return h->prompt;
}

int st_http_connect(stress_run *r, char *err, size_t errlen)
{
    const stress_http_node *n = &r->target.http_node;
    r->http = calloc(1, sizeof *r->http);
    if (!r->http || !(r->http->multi = curl_multi_init())) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->n_nodes = 1;
    st_node *node = &r->nodes[0];
    snprintf(node->name, sizeof node->name, "%s", n->name);
    node->kv_bits = n->kv_bits;
    node->prefill_step = n->prefill_step;
    char why[512];
    json_t *models = st_http_json(r, "/v1/models", NULL, PROBE_TIMEOUT_S, why, sizeof why);
    const char *id = json_string_value(
        json_object_get(json_array_get(json_object_get(models, "data"), 0), "id"));
    if (!id) {
        snprintf(err, errlen, "node '%s' (%s at %s): %s", n->name, eng_name(n->engine), n->url,
                 models ? "/v1/models lists no model" : why);
        json_decref(models);
        return -1;
    }
    snprintf(r->http->model, sizeof r->http->model, "%s", id);
    json_decref(models);
    ask_version(r);
    r->http->tokenizes = count_tokens(r, "hello") > 0;
    return 0;
}

const char *st_http_model(const stress_run *r)
{
    return r->http->model;
}

void st_http_disconnect(stress_run *r)
{
    if (!r->http)
        return;
    st_http_end_all(r, "aborted", "the run ended");
    curl_multi_cleanup(r->http->multi);
    free(r->http->prompt);
    free(r->http);
    r->http = NULL;
}

char *st_http_cluster_json(const stress_run *r)
{
    const stress_http_node *n = &r->target.http_node;
    json_t *o = json_pack("{ss ss ss s[{ss ss ss}]}", "name",
                          r->target.cluster[0] ? r->target.cluster : "local", "model",
                          r->http->model, "engine", r->engine_version, "nodes", "name", n->name,
                          "url", n->url, "engine", eng_name(n->engine));
    if (o)
        json_object_set_new(o, "exact_prompts", json_boolean(r->http->tokenizes));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* ---- requests ---- */

static int index_of(const stress_run *r, const struct st_http_call *call)
{
    for (int i = 0; i < r->n_inflight; i++)
        if (r->inflight[i].call == call)
            return i;
    return -1;
}

/* The stream as it comes: each content chunk is a token's time. A failed
 * answer's body is kept (its start) to say why. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    struct st_http_call *call = ud;
    size_t len = size * nmemb;
    stress_run *r = call->run;
    int i = index_of(r, call);
    if (i < 0)
        return len;
    st_req *q = &r->inflight[i];
    double now = clock_ms();
    q->t_activity = now;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &call->status);
    if (call->status != 200) {
        size_t room = sizeof call->errbody - 1 - call->n_errbody;
        size_t take = len < room ? len : room;
        memcpy(call->errbody + call->n_errbody, data, take);
        call->n_errbody += take;
        call->errbody[call->n_errbody] = '\0';
        return len;
    }
    for (int k = stress_sse_feed(&call->sse, data, len); k > 0; k--) {
        if (q->n_tokens >= q->gen)
            break; /* more chunks than tokens: the timing has them all */
        st_token(q, now);
    }
    return len;
}

static void call_free(stress_run *r, struct st_http_call *call)
{
    if (!call)
        return;
    if (call->easy) {
        curl_multi_remove_handle(r->http->multi, call->easy);
        curl_easy_cleanup(call->easy);
    }
    curl_slist_free_all(call->headers);
    free(call->body);
    free(call);
}

static char *request_body(stress_run *r, const char *prompt, int gen)
{
    json_t *o =
        json_pack("{ss ss si si sb s{sb}}", "model", r->http->model, "prompt", prompt, "max_tokens",
                  gen, "temperature", 0, "stream", 1, "stream_options", "include_usage", 1);
    eng_kind k = r->target.http_node.engine;
    /* A stress request must generate its gen tokens and prefill its whole
     * prompt: where the engine has the switches (inferd refuses unknown
     * fields, so only there). */
    if (o && (k == ENG_LLAMACPP || k == ENG_VLLM))
        json_object_set_new(o, "ignore_eos", json_true());
    if (o && k == ENG_LLAMACPP)
        json_object_set_new(o, "cache_prompt", json_false());
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

int st_http_send(stress_run *r, int64_t ctx_before, int64_t ctx_target, int prompt_tokens, int gen,
                 char *err, size_t errlen)
{
    if (r->n_inflight == ST_INFLIGHT_MAX) {
        snprintf(err, errlen, "%d requests already in flight", ST_INFLIGHT_MAX);
        return -1;
    }
    const char *prompt = prompt_of(r, prompt_tokens);
    struct st_http_call *call = calloc(1, sizeof *call);
    st_req *q = &r->inflight[r->n_inflight];
    memset(q, 0, sizeof *q);
    q->itl = malloc((size_t)(gen > 0 ? gen : 1) * sizeof *q->itl);
    if (call) {
        call->run = r;
        stress_sse_init(&call->sse);
        call->body = prompt ? request_body(r, prompt, gen) : NULL;
        call->headers = headers_of(&r->target.http_node);
        call->easy = curl_easy_init();
    }
    if (!call || !q->itl || !call->body || !call->headers || !call->easy) {
        call_free(r, call);
        free(q->itl);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char url[STRESS_EP_MAX + 64];
    url_of(&r->target.http_node, "/v1/completions", url, sizeof url);
    CURL *c = call->easy;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, call->headers);
    curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, call->body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(r->o.timeout_s * 1000.0) + 1);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, call->curl_err);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, call);
    curl_easy_setopt(c, CURLOPT_PRIVATE, call);
    if (curl_multi_add_handle(r->http->multi, c) != CURLM_OK) {
        call_free(r, call);
        free(q->itl);
        snprintf(err, errlen, "cannot add a transfer");
        return -1;
    }
    q->call = call;
    q->idx = r->next_idx++;
    q->leg = r->leg;
    q->ctx_before = ctx_before;
    q->ctx_target = ctx_target;
    q->prompt_tokens = prompt_tokens;
    q->gen = gen;
    q->t_sent = q->t_activity = clock_ms();
    if (r->t_first_sent == 0)
        r->t_first_sent = q->t_sent;
    if (r->leg_t_first == 0)
        r->leg_t_first = q->t_sent;
    r->n_inflight++;
    return 0;
}

/* Ends inflight[i]: its transfer goes, its row is recorded. */
static void finish(stress_run *r, int i, int ok, const json_t *stats, const char *code,
                   const char *message)
{
    call_free(r, r->inflight[i].call);
    r->inflight[i].call = NULL;
    st_finish(r, i, ok, stats, code, message);
}

void st_http_end_all(stress_run *r, const char *code, const char *message)
{
    while (r->n_inflight > 0)
        finish(r, 0, 0, NULL, code, message);
}

/* What the engine said of a completed request, in the names st_finish
 * reads from a node's stats; the client's own timing where the engine
 * tells nothing (llama.cpp's `timings` are the only per-request rates). */
static json_t *stats_of(const st_req *q, const stress_sse *s)
{
    int64_t prompt = s->prompt_tokens >= 0 ? s->prompt_tokens : q->prompt_tokens;
    int64_t gen = s->completion_tokens >= 0 ? s->completion_tokens : q->n_tokens;
    double ttft_s = (q->t_first - q->t_sent) / 1000.0;
    double decode_s = (q->t_prev - q->t_first) / 1000.0;
    double decode = s->decode_tps >= 0        ? s->decode_tps
                    : gen > 1 && decode_s > 0 ? (double)(gen - 1) / decode_s
                                              : -1.0;
    double prefill = s->prompt_tps >= 0 ? s->prompt_tps
                     : ttft_s > 0       ? (double)prompt / ttft_s
                                        : -1.0;
    json_t *o = json_pack("{sI sI sI}", "ctx", (json_int_t)(prompt + gen), "prompt_tokens",
                          (json_int_t)prompt, "gen_tokens", (json_int_t)gen);
    if (o && decode >= 0)
        json_object_set_new(o, "decode_tps", json_real(decode));
    if (o && prefill >= 0)
        json_object_set_new(o, "prefill_tps", json_real(prefill));
    if (o && q->t_first > 0)
        json_object_set_new(o, "prefill_ms",
                            json_real(s->prompt_ms >= 0 ? s->prompt_ms : ttft_s * 1000.0));
    return o;
}

/* A node that refuses connections is down: the legs stop sending to it. */
static void node_state(stress_run *r, int down, const char *why)
{
    st_node *n = &r->nodes[0];
    if (n->down == down)
        return;
    n->down = down;
    st_event(r, n->name, down ? "node_down" : "node_up",
             down ? json_pack("{ss ss}", "node", n->name, "error", why)
                  : json_pack("{ss}", "node", n->name));
}

static void on_done(stress_run *r, CURL *easy, CURLcode rc)
{
    struct st_http_call *call = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&call);
    int i = call ? index_of(r, call) : -1;
    if (i < 0)
        return;
    const st_req *q = &r->inflight[i];
    const stress_sse *s = &call->sse;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &call->status);
    if (rc == CURLE_OK && call->status == 200 && !s->error && (s->done || s->finished)) {
        node_state(r, 0, NULL);
        json_t *stats = stats_of(q, s);
        finish(r, i, 1, stats, NULL, NULL);
        json_decref(stats);
        return;
    }
    char code[64], msg[PROTO_MESSAGE_MAX];
    const char *transport = rc == CURLE_OK      ? ""
                            : call->curl_err[0] ? call->curl_err
                                                : curl_easy_strerror(rc);
    if (rc == CURLE_COULDNT_CONNECT)
        node_state(r, 1, transport);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(code, sizeof code, "timeout");
        snprintf(msg, sizeof msg, "%s", transport);
    } else if (s->error) {
        json_t *e = json_pack("{s{ss ss}}", "error", "code", s->code, "message", s->message);
        char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
        stress_http_classify(call->status, body, transport, code, sizeof code, msg, sizeof msg);
        free(body);
        json_decref(e);
    } else {
        stress_http_classify(call->status, call->status == 200 ? NULL : call->errbody, transport,
                             code, sizeof code, msg, sizeof msg);
    }
    finish(r, i, 0, NULL, code, msg);
}

/* Requests silent for the run's timeout (no byte, not even a chunk of
 * the prompt's processing) fail as `timeout`. */
static void check_timers(stress_run *r)
{
    double now = clock_ms(), limit = r->o.timeout_s * 1000.0;
    char msg[PROTO_MESSAGE_MAX];
    for (int i = 0; i < r->n_inflight;) {
        double silent = now - r->inflight[i].t_activity;
        if (silent < limit) {
            i++;
            continue;
        }
        snprintf(msg, sizeof msg, "nothing received for %.1f s (--timeout)", silent / 1000.0);
        finish(r, i, 0, NULL, "timeout", msg);
    }
}

int st_http_pump(stress_run *r, int timeout_ms, char *err, size_t errlen)
{
    CURLM *m = r->http->multi;
    int running;
    CURLMcode mc = curl_multi_poll(m, NULL, 0, timeout_ms, NULL);
    if (mc == CURLM_OK)
        mc = curl_multi_perform(m, &running);
    if (mc != CURLM_OK) {
        snprintf(err, errlen, "libcurl: %s", curl_multi_strerror(mc));
        return -1;
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)))
        if (msg->msg == CURLMSG_DONE)
            on_done(r, msg->easy_handle, msg->data.result);
    check_timers(r);
    if (st_store_failed(r)) {
        snprintf(err, errlen, "%s", r->failure);
        return -1;
    }
    return 0;
}

/* ---- settings, by the target's restart (the engines take theirs at
 * start) ---- */

int st_restart_with(stress_run *r, int kv_bits, int prefill_step)
{
    st_node *n = &r->nodes[0];
    if (n->kv_bits == kv_bits && n->prefill_step == prefill_step)
        return 0;
    char err[256] = "";
    double took = 0.0;
    int rc =
        r->target.apply_knobs(r->target.knobs_ctx, kv_bits, prefill_step, &took, err, sizeof err);
    json_t *d = json_pack("{si si sb sf}", "kv_bits", kv_bits, "prefill_step", prefill_step, "ok",
                          rc == 0, "took_s", took);
    if (rc != 0) {
        json_object_set_new(d, "error", json_string(err));
        st_note_failure(r, "leg %d: restarting node '%s' with kv_bits %d, prefill_step %d: %s",
                        r->leg, n->name, kv_bits, prefill_step, err);
    } else {
        n->kv_bits = kv_bits;
        n->prefill_step = prefill_step;
        n->down = 0;
    }
    st_event(r, n->name, "restart", d);
    return rc == 0 ? 0 : -1;
}
