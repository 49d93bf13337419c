/* opt_table.c: every setting and flag of inferd and infertop, once (see
 * opt.h). A row's help is a phrase; its range or choices and its default
 * are appended from the row's fields wherever the help is shown, so they
 * are never typed twice. */
#include "opt.h"

#include <float.h>

#include "protocol.h"

#define ALL_INFERD                                                                                 \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE) |  \
     OPT_VB(OPT_V_QUANTIZE) | OPT_VB(OPT_V_KEYGEN))
#define LOCAL_MODEL                                                                                \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE) |  \
     OPT_VB(OPT_V_QUANTIZE))
#define COMPUTE                                                                                    \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_QUANTIZE))

/* Seconds of the longest timeouts: a day. */
#define DAY_S 86400.0

/* A constant's value as typed, for a row's default. */
#define TYPED(c) TYPED_(c)
#define TYPED_(c) #c

/* Request ids, session names, cancel targets and sources. */
#define ID_TEXT .type = OPT_T_TEXT, .lo = 1, .hi = PROTO_ID_MAX, .no_ctl = 1

const opt_verb_def opt_verbs[OPT_V_COUNT] = {
    [OPT_V_GENERATE] = {OPT_INFERD, "generate", "--prompt TEXT [OPTIONS]",
                        "generate text from a prompt, locally",
                        "Runs a prompt through the model and prints it with its continuation,\n"
                        "then one line of statistics on stderr.",
                        NULL, 0},
    [OPT_V_SERVE] =
        {OPT_INFERD, "serve", "[OPTIONS]",
         "run a node: requests, pipeline stage, telemetry, live config",
         "Runs an inference node: requests and live config on a ZeroMQ ROUTER,\n"
         "telemetry on a PUB (engine/PROTOCOL.md). With --layers A:B the node is\n"
         "one stage of a pipeline ring: it PULLs on --listen and PUSHes to --next;\n"
         "the stage holding layer 0 (the head) takes the requests.",
         "Memory guard: a request is refused (kv_oom) unless the KV bytes it will add\n"
         "and the scratch of a step leave a reserve of max(32 MiB, budget/16) free;\n"
         "prefill chunks are cut to what fits; idle sessions are evicted, least\n"
         "recently used first, when that makes it fit. A request whose client\n"
         "disconnects is cancelled. SIGTERM stops the node cleanly: requests in flight\n"
         "get a `shutdown` error.",
         0},
    [OPT_V_EVAL] =
        {OPT_INFERD, "eval",
         "(--prompt TEXT | --tokens IDS) [OPTIONS]\n"
         "       inferd eval --control EP (--prompt TEXT | --tokens IDS) [--logits FILE]\n"
         "                   [--timeout MS] [--curve-key FILE --curve-server-key FILE]",
         "teacher-forced logits of a prompt, locally",
         "Runs a prompt through the model teacher-forced and prints, for every\n"
         "position, its token, the most likely next token and that token's\n"
         "log-probability. Locally, or on a running node with --control.",
         NULL, 0},
    [OPT_V_TOKENIZE] = {OPT_INFERD, "tokenize", "(--prompt TEXT | --file PATH) [OPTIONS]",
                        "the token ids of a text",
                        "Prints the token ids of a text on one line, separated by spaces.", NULL,
                        0},
    [OPT_V_QUANTIZE] =
        {OPT_INFERD, "quantize", "--type TYPE --out FILE.gguf [OPTIONS]",
         "write a model as a GGUF file of a llama.cpp file type",
         "Writes the model as a GGUF file of one of llama.cpp's file types, with\n"
         "the tensor types llama-quantize chooses for it (no importance matrix).",
         "Rows that a K type's 256-value blocks cannot hold fall back to Q8_0, then\n"
         "F16 (llama.cpp's Q5_0/Q5_1 fallbacks are not run by inferd); Q8_0 and\n"
         "Q4_0 refuse such rows, as llama.cpp does.",
         0},
    [OPT_V_KEYGEN] = {OPT_INFERD, "keygen", "[--out PREFIX]",
                      "write a CURVE key pair (PREFIX.key, PREFIX.pub)",
                      "Writes a CURVE key pair: PREFIX.key (public and secret key, mode 0600)\n"
                      "and PREFIX.pub (public key). Existing files are never overwritten.",
                      NULL, 0},
    /* ---- infertop ---- */
};

const opt_def opt_defs[OPT_COUNT] = {
    /* ---- what runs: the model ---- */
    [OPT_MODEL] = {.flag = "model",
                   .key = "model",
                   .type = OPT_T_TEXT,
                   .arg = "SPEC",
                   .def_doc = "embedded",
                   .help = "a GGUF file, a llama2.c checkpoint file, \"embedded\" (stories260K), "
                           "synth:110m, synth:1b or "
                           "synth:dim=D,hidden=H,layers=L,heads=N,kv_heads=K,vocab=V",
                   .verbs = LOCAL_MODEL},
    [OPT_TOKENIZER] = {.flag = "tokenizer",
                       .type = OPT_T_PATH,
                       .arg = "PATH",
                       .def_doc = "a GGUF file's own, else the embedded one",
                       .help = "a llama2.c tokenizer or GGUF file",
                       .verbs = LOCAL_MODEL},
    [OPT_THREADS] = {.flag = "threads",
                     .key = "threads",
                     .type = OPT_T_INT,
                     .lo = 1,
                     .hi = 1024,
                     .arg = "N",
                     .def_doc = "online CPUs",
                     .help = "compute threads",
                     .verbs = COMPUTE},

    /* ---- the live settings ---- */
    [OPT_KV_BITS] = {.flag = "kv-bits",
                     .wire = "kv_bits",
                     .key = "kv_bits",
                     .type = OPT_T_INT,
                     .choices = "32|16|8|4",
                     .def = "16",
                     .arg = "B",
                     .help = "KV cache precision in bits per value",
                     .verbs = OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL)},
    [OPT_PREFILL_STEP] = {.flag = "prefill-step",
                          .wire = "prefill_step",
                          .key = "prefill_step",
                          .type = OPT_T_INT,
                          .lo = 1,
                          .hi = PROTO_PREFILL_STEP_MAX,
                          .word = "auto",
                          .word_value = PROTO_PREFILL_AUTO,
                          .def = "512",
                          .arg = "N|auto",
                          .help = "positions per prefill chunk; auto: the largest chunk predicted "
                                  "to stay under --step-target-ms",
                          .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_PREFILL_CHUNK] = {.flag = "prefill-step",
                           .type = OPT_T_INT,
                           .lo = 1,
                           .hi = PROTO_PREFILL_STEP_MAX,
                           .def = "512",
                           .arg = "N",
                           .help = "prompt positions per prefill chunk",
                           .verbs = OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_EVAL)},

    /* ---- generate, eval, tokenize ---- */
    [OPT_PROMPT] = {.flag = "prompt",
                    .type = OPT_T_TEXT,
                    .arg = "TEXT",
                    .help = "the text to run (eval and tokenize: BOS first)",
                    .verbs = OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE),
                    .required = OPT_VB(OPT_V_GENERATE)},
    [OPT_STEPS] = {.flag = "steps",
                   .type = OPT_T_INT,
                   .lo = 1,
                   .hi = 1000000,
                   .def = "256",
                   .arg = "N",
                   .help = "tokens to generate",
                   .verbs = OPT_VB(OPT_V_GENERATE)},
    [OPT_TEMPERATURE] = {.flag = "temperature",
                         .type = OPT_T_NUM,
                         .dlo = 0.0,
                         .dhi = PROTO_TEMPERATURE_MAX,
                         .def = "0",
                         .arg = "T",
                         .help = "sampling temperature; 0 is greedy",
                         .verbs = OPT_VB(OPT_V_GENERATE)},
    [OPT_TOP_P] = {.flag = "top-p",
                   .type = OPT_T_NUM,
                   .dlo = 0.0,
                   .dhi = 1.0,
                   .def = "0.9",
                   .arg = "P",
                   .help = "nucleus sampling threshold",
                   .verbs = OPT_VB(OPT_V_GENERATE)},
    [OPT_SEED] = {.flag = "seed",
                  .type = OPT_T_INT,
                  .lo = 0,
                  .hi = ~0ull,
                  .arg = "S",
                  .def_doc = "from the clock",
                  .help = "random seed for sampling",
                  .verbs = OPT_VB(OPT_V_GENERATE)},
    [OPT_TOKENS] = {.flag = "tokens",
                    .type = OPT_T_TEXT,
                    .arg = "IDS",
                    .help = "token ids instead of a prompt, separated by spaces or commas",
                    .verbs = OPT_VB(OPT_V_EVAL)},
    [OPT_LOGITS] = {.flag = "logits",
                    .type = OPT_T_PATH,
                    .arg = "FILE",
                    .help = "write every position's logits: float32 little endian, "
                            "[n_tokens][n_vocab]",
                    .verbs = OPT_VB(OPT_V_EVAL)},
    [OPT_EVAL_CONTROL] = {.flag = "control",
                          .type = OPT_T_TEXT,
                          .hi = PROTO_TEXT_MAX - 1,
                          .arg = "EP",
                          .help = "run on the node at this control endpoint (a single node or "
                                  "a ring's head), with its model and settings",
                          .verbs = OPT_VB(OPT_V_EVAL)},
    [OPT_EVAL_TIMEOUT] = {.flag = "timeout",
                          .type = OPT_T_INT,
                          .lo = 1,
                          .hi = 86400000,
                          .def = "60000",
                          .arg = "MS",
                          .help = "with --control: the longest wait for the node's next reply",
                          .verbs = OPT_VB(OPT_V_EVAL)},
    [OPT_CURVE_KEY] = {.flag = "curve-key",
                       .type = OPT_T_PATH,
                       .arg = "FILE",
                       .help = "with --control: this client's key pair (inferd keygen's .key), "
                               "for a node with CURVE",
                       .verbs = OPT_VB(OPT_V_EVAL)},
    [OPT_CURVE_SERVER_KEY] = {.flag = "curve-server-key",
                              .type = OPT_T_PATH,
                              .arg = "FILE",
                              .help = "and the node's public key (its .pub)",
                              .verbs = OPT_VB(OPT_V_EVAL)},
    [OPT_FILE] = {.flag = "file",
                  .type = OPT_T_PATH,
                  .arg = "PATH",
                  .help = "the text is the file's bytes, as they are",
                  .verbs = OPT_VB(OPT_V_TOKENIZE)},
    [OPT_NO_BOS] = {.flag = "no-bos",
                    .type = OPT_T_SWITCH,
                    .help = "no BOS first (without it: BOS when the vocabulary wants one)",
                    .verbs = OPT_VB(OPT_V_TOKENIZE)},
    [OPT_SPECIAL] = {.flag = "special",
                     .type = OPT_T_SWITCH,
                     .help = "control tokens' texts (\"<s>\") become those tokens",
                     .verbs = OPT_VB(OPT_V_TOKENIZE)},
    [OPT_TOKENS_JSON] = {.flag = "json",
                         .type = OPT_T_SWITCH,
                         .help = "[{\"id\": N, \"piece\": TEXT}, ...] instead",
                         .verbs = OPT_VB(OPT_V_TOKENIZE)},

    /* ---- quantize, keygen ---- */
    [OPT_TYPE] = {.flag = "type",
                  .type = OPT_T_TEXT,
                  .arg = "TYPE",
                  .help = "F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M or Q6_K",
                  .verbs = OPT_VB(OPT_V_QUANTIZE),
                  .required = OPT_VB(OPT_V_QUANTIZE)},
    [OPT_QUANT_OUT] = {.flag = "out",
                       .type = OPT_T_PATH,
                       .arg = "FILE",
                       .help = "the GGUF file to write; it appears only when complete",
                       .verbs = OPT_VB(OPT_V_QUANTIZE),
                       .required = OPT_VB(OPT_V_QUANTIZE)},
    [OPT_KEY_OUT] = {.flag = "out",
                     .type = OPT_T_PATH,
                     .def = "inferd",
                     .arg = "PREFIX",
                     .help = "path prefix of the two files",
                     .verbs = OPT_VB(OPT_V_KEYGEN)},

    /* ---- serve: the node ---- */
    [OPT_NAME] = {.flag = "name",
                  .key = "name",
                  .type = OPT_T_TEXT,
                  .lo = 1,
                  .hi = PROTO_NAME_MAX,
                  .arg = "NAME",
                  .def_doc = "host name",
                  .help = "node name in telemetry and errors",
                  .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_LAYERS] = {.flag = "layers",
                    .key = "layers",
                    .type = OPT_T_LAYERS,
                    .arg = "A:B",
                    .def_doc = "all",
                    .help = "hold layers [A, B)",
                    .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_CONTROL] = {.flag = "control",
                     .key = "control",
                     .type = OPT_T_TEXT,
                     .hi = PROTO_TEXT_MAX - 1,
                     .def = "tcp://127.0.0.1:5555",
                     .arg = "EP",
                     .help = "control ROUTER",
                     .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_TELEMETRY] = {.flag = "telemetry",
                       .key = "telemetry",
                       .type = OPT_T_TEXT,
                       .hi = PROTO_TEXT_MAX - 1,
                       .def = "tcp://127.0.0.1:5556",
                       .arg = "EP",
                       .help = "telemetry PUB",
                       .verbs = OPT_VB(OPT_V_SERVE)},
    /* Stages tell each other their endpoints in ring frames, which bound
     * them (PROTOCOL.md section 6). */
    [OPT_LISTEN] = {.flag = "listen",
                    .type = OPT_T_TEXT,
                    .hi = PROTO_TEXT_MAX - 1,
                    .arg = "EP",
                    .help = "ring input: hidden states (or, on the head, tokens)",
                    .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_NEXT] = {.flag = "next",
                  .type = OPT_T_TEXT,
                  .hi = PROTO_TEXT_MAX - 1,
                  .arg = "EP",
                  .help = "ring output: the next stage's --listen (the tail's --next is the "
                          "head's --listen)",
                  .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_MEM_LIMIT] = {.flag = "mem-limit",
                       .key = "mem_limit",
                       .type = OPT_T_INT,
                       .lo = 1ull << 20,
                       .hi = 1ull << 50,
                       .word = "auto",
                       .word_value = 0,
                       .def = "auto",
                       .arg = "N|auto",
                       .help = "memory budget in bytes (K/M/G suffixes); the budget is the "
                               "least of this, the cgroup limit and RSS + MemAvailable (auto: "
                               "the last two)",
                       .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_MAX_CTX] = {.flag = "max-ctx",
                     .type = OPT_T_INT,
                     .lo = 1,
                     .hi = 1u << 30,
                     .arg = "N",
                     .def_doc = "no cap",
                     .help = "refuse requests whose context would pass N (ctx_limit), as soon "
                             "as they come when their prompt and max_tokens already do",
                     .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_STEP_TARGET] = {.flag = "step-target-ms",
                         .type = OPT_T_NUM,
                         .dlo = 1.0,
                         .dhi = DAY_S * 1000.0,
                         .def = "2000",
                         .arg = "MS",
                         .help = "target step time for prefill-step auto",
                         .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_STEP_TIMEOUT] = {.flag = "step-timeout",
                          .type = OPT_T_NUM,
                          .dlo = 0.1,
                          .dhi = DAY_S,
                          .def = "30",
                          .arg = "SEC",
                          .help = "longest wait for any stage",
                          .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_QUEUE_TIMEOUT] = {.flag = "queue-timeout",
                           .type = OPT_T_NUM,
                           .dlo = 0.0,
                           .dhi = DAY_S,
                           .def = "300",
                           .arg = "SEC",
                           .help = "a request queued this long behind others is refused with "
                                   "busy; 0: no limit",
                           .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_MAX_SEQS] = {.flag = "max-seqs",
                      .type = OPT_T_INT,
                      .lo = 1,
                      .hi = PROTO_SEQS_MAX,
                      .def = "16",
                      .arg = "N",
                      .help = "requests running at once, each with its own KV cache, their "
                              "decode positions batched into one step; 16 more wait in the queue",
                      .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_PIPELINE_DEPTH] = {.flag = "pipeline-depth",
                            .type = OPT_T_INT,
                            .lo = 1,
                            .hi = PROTO_DEPTH_MAX,
                            .arg = "N",
                            .def_doc = "one per stage, which keeps every stage busy",
                            .help = "steps out around a ring at once",
                            .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_LOG] = {.flag = "log",
                 .key = "log",
                 .type = OPT_T_PATH,
                 .arg = "FILE",
                 .help = "one line per step ([STEP n] ...) and lifecycle lines",
                 .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_PIDFILE] = {.flag = "pidfile",
                     .key = "pidfile",
                     .type = OPT_T_PATH,
                     .arg = "FILE",
                     .help = "write the process id here while running",
                     .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_HTTP] = {.flag = "http",
                  .type = OPT_T_TEXT,
                  .arg = "HOST:PORT",
                  .help = "HTTP: the OpenAI-compatible API on the head (/v1/models, "
                          "/v1/completions, /v1/chat/completions) and Prometheus /metrics on "
                          "every node; loopback is advised (127.0.0.1:8080)",
                  .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_API_KEY] = {.flag = "api-key",
                     .type = OPT_T_PATH,
                     .arg = "FILE",
                     .help = "HTTP requests need 'Authorization: Bearer KEY', KEY the file's "
                             "first line (mode 0600)",
                     .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_FLAGS] = {.flag = "flags",
                   .key = "flags",
                   .type = OPT_T_PATH,
                   .arg = "FILE",
                   .help = "more flags, read from FILE: whitespace-separated, '#' comments, no "
                           "quoting (systemd: /etc/inferd/NAME.conf)",
                   .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_CURVE_SECRET] = {.flag = "curve-secret",
                          .type = OPT_T_PATH,
                          .arg = "FILE",
                          .help = "node key (inferd keygen): CURVE on control, telemetry and the "
                                  "ring's links",
                          .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_CURVE_CLIENTS] = {.flag = "curve-clients",
                           .type = OPT_T_DIR,
                           .arg = "DIR",
                           .help = "allowed client public keys (*.pub); in a ring, every other "
                                   "stage's key too",
                           .verbs = OPT_VB(OPT_V_SERVE)},
    [OPT_NEXT_KEY] = {.flag = "next-key",
                      .type = OPT_T_PATH,
                      .arg = "FILE",
                      .help = "with CURVE in a ring: the public key of the --next stage",
                      .verbs = OPT_VB(OPT_V_SERVE)},

    [OPT_HELP] = {.flag = "help",
                  .short_flag = 'h',
                  .type = OPT_T_SWITCH,
                  .help = "this text",
                  .verbs = ALL_INFERD},

    /* ---- fields of requests on the wire (control, ring, HTTP) ---- */
    /* Control requests (PROTOCOL.md section 3); a ring's start frame
     * carries temperature and top_p on. */
    [OPT_REQ_ID] = {.wire = "id", ID_TEXT, .help = "the request's id, repeated in its replies"},
    [OPT_REQ_SESSION] = {.wire = "session",
                         ID_TEXT,
                         .help = "the session whose KV cache the request extends and keeps"},
    [OPT_REQ_SOURCE] = {.wire = "source", ID_TEXT, .help = "who sent the request (\"http\")"},
    [OPT_REQ_TARGET] = {.wire = "target", ID_TEXT, .help = "the id of the request to cancel"},
    [OPT_REQ_SYNTHETIC] = {.wire = "synthetic_tokens",
                           .type = OPT_T_INT,
                           .lo = 1,
                           .hi = PROTO_SYNTHETIC_MAX,
                           .help = "a prompt of this many deterministic token ids"},
    [OPT_REQ_MAX_TOKENS] = {.wire = "max_tokens",
                            .type = OPT_T_INT,
                            .lo = 0,
                            .hi = PROTO_MAX_TOKENS_MAX,
                            .def = TYPED(PROTO_DEFAULT_MAX_TOKENS),
                            .help = "tokens to generate; 0: prefill only"},
    /* generate --temperature's default is greedy; a request's is not. */
    [OPT_REQ_TEMPERATURE] = {.wire = "temperature",
                             .type = OPT_T_NUM,
                             .dlo = 0.0,
                             .dhi = PROTO_TEMPERATURE_MAX,
                             .def = TYPED(PROTO_DEFAULT_TEMPERATURE),
                             .help = "sampling temperature; 0 is greedy"},
    /* A threshold of 0 would keep no token. */
    [OPT_REQ_TOP_P] = {.wire = "top_p",
                       .type = OPT_T_NUM,
                       .dlo = 0.0,
                       .dlo_open = 1,
                       .dhi = 1.0,
                       .def = TYPED(PROTO_DEFAULT_TOP_P),
                       .help = "nucleus sampling threshold"},
    /* JSON integers stop at 2^63 - 1. */
    [OPT_REQ_SEED] = {.wire = "seed",
                      .type = OPT_T_INT,
                      .lo = 0,
                      .hi = INT64_MAX,
                      .def_doc = "the node picks one",
                      .help = "random seed for sampling"},
    [OPT_REQ_SPECIAL] = {.wire = "special",
                         .type = OPT_T_SWITCH,
                         .help = "control tokens' texts in the prompt become those tokens"},
    [OPT_REQ_LOGITS] = {.wire = "logits", .type = OPT_T_SWITCH, .help = "an eval's raw logits too"},

    /* OpenAI's fields (engine/http/openai.c), where their ranges or
     * defaults are OpenAI's rather than the control protocol's; seed is
     * the control protocol's. max_completion_tokens is max_tokens too. */
    /* No prefill-only request in OpenAI's API: at least one token. The
     * default is the endpoint's (openai.c). */
    [OPT_OAI_MAX_TOKENS] = {.wire = "max_tokens",
                            .type = OPT_T_INT,
                            .lo = 1,
                            .hi = PROTO_MAX_TOKENS_MAX,
                            .help = "tokens to generate"},
    /* OpenAI's range. */
    [OPT_OAI_TEMPERATURE] = {.wire = "temperature",
                             .type = OPT_T_NUM,
                             .dlo = 0.0,
                             .dhi = 2.0,
                             .def = "1",
                             .help = "sampling temperature; 0 is greedy"},
    /* OpenAI's default: no nucleus cut. */
    [OPT_OAI_TOP_P] = {.wire = "top_p",
                       .type = OPT_T_NUM,
                       .dlo = 0.0,
                       .dlo_open = 1,
                       .dhi = 1.0,
                       .def = "1",
                       .help = "nucleus sampling threshold"},
    [OPT_OAI_STREAM] = {.wire = "stream",
                        .type = OPT_T_SWITCH,
                        .help = "the reply as server-sent events"},
    /* OpenAI's fields of features this server lacks: taken only at the
     * value that leaves the feature off, so that a client never silently
     * gets less than it asked. */
    [OPT_OAI_N] = {.wire = "n",
                   .type = OPT_T_INT,
                   .lo = 1,
                   .hi = 1,
                   .def = "1",
                   .help = "choices per request"},
    [OPT_OAI_BEST_OF] = {.wire = "best_of",
                         .type = OPT_T_INT,
                         .lo = 1,
                         .hi = 1,
                         .def = "1",
                         .help = "completions to choose the best of"},
    [OPT_OAI_FREQUENCY_PENALTY] = {.wire = "frequency_penalty",
                                   .type = OPT_T_NUM,
                                   .def = "0",
                                   .help = "penalty of tokens by their count so far"},
    [OPT_OAI_PRESENCE_PENALTY] = {.wire = "presence_penalty",
                                  .type = OPT_T_NUM,
                                  .def = "0",
                                  .help = "penalty of tokens already present"},

    /* ---- keys of the cluster file ---- */

    /* ---- infertop's flags ---- */
};
