/* opt_rows_wire.h: the rows of the fields of requests on the wire (control
 * requests, ring frames, HTTP bodies) and of the cluster file's keys, a
 * part of opt_defs' initializer: opt_table.c includes it there, and nothing
 * else may (it has no include guard on purpose). Formatted as the
 * initializer's body, which clang-format cannot see from here. */
// clang-format off
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
    /* Sampling past temperature and top_p (engine/compute/sampler.h):
     * llama.cpp's top_k, min_p and repeat_penalty, OpenAI's penalties (and
     * their range) and logit_bias; every one off at its default. */
    [OPT_REQ_TOP_K] = {.wire = "top_k",
                       .type = OPT_T_INT,
                       .lo = 0,
                       .hi = PROTO_TOKEN_ID_MAX,
                       .def = "0",
                       .help = "draw from the K most probable tokens only; 0: all"},
    [OPT_REQ_MIN_P] = {.wire = "min_p",
                       .type = OPT_T_NUM,
                       .dlo = 0.0,
                       .dhi = 1.0,
                       .def = "0",
                       .help = "drop tokens less probable than min_p times the most probable"},
    [OPT_REQ_REPEAT_PENALTY] = {.wire = "repeat_penalty",
                                .type = OPT_T_NUM,
                                .dlo = 0.0,
                                .dhi = 10.0,
                                .def = "1",
                                .help = "divide the logits of the last 64 generated tokens by it "
                                        "(multiply when negative); 1: off"},
    [OPT_REQ_PRESENCE_PENALTY] = {.wire = "presence_penalty",
                                  .type = OPT_T_NUM,
                                  .dlo = -2.0,
                                  .dhi = 2.0,
                                  .def = "0",
                                  .help = "subtracted from the logit of every token generated so "
                                          "far"},
    [OPT_REQ_FREQUENCY_PENALTY] = {.wire = "frequency_penalty",
                                   .type = OPT_T_NUM,
                                   .dlo = -2.0,
                                   .dhi = 2.0,
                                   .def = "0",
                                   .help = "subtracted from a token's logit per time it was "
                                           "generated so far"},
    /* A value of the map {"TOKEN_ID": bias}, up to PROTO_BIAS_MAX entries. */
    [OPT_REQ_LOGIT_BIAS] = {.wire = "logit_bias",
                            .type = OPT_T_NUM,
                            .dlo = -100.0,
                            .dhi = 100.0,
                            .help = "added to the logits of the tokens named; -100 bans one"},
    /* Absent: none; 0: the chosen token's alone. */
    [OPT_REQ_LOGPROBS] = {.wire = "logprobs",
                          .type = OPT_T_INT,
                          .lo = 0,
                          .hi = PROTO_LOGPROBS_MAX,
                          .help = "with each token, its log-probability and those of the N most "
                                  "probable tokens"},
    [OPT_REQ_SPECIAL] = {.wire = "special",
                         .type = OPT_T_SWITCH,
                         .help = "control tokens' texts in the prompt become those tokens"},
    [OPT_REQ_LOGITS] = {.wire = "logits", .type = OPT_T_SWITCH, .help = "an eval's raw logits too"},
    [OPT_REQ_CANCEL_STALLED] = {.wire = "stalled",
                                .type = OPT_T_SWITCH,
                                .help = "a cancel because the client stopped reading: the request "
                                        "ends with code stalled"},

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
    /* Up to the node's --max-seqs, which openai.c checks: the choices run
     * as one batch. */
    [OPT_OAI_N] = {.wire = "n",
                   .type = OPT_T_INT,
                   .lo = 1,
                   .hi = PROTO_SEQS_MAX,
                   .def = "1",
                   .help = "choices per request"},
    /* Logprobs in OpenAI's two shapes: a completion's `logprobs: N`, a
     * chat's `logprobs: true` with `top_logprobs: N`; N up to the
     * control protocol's bound (OpenAI's completions stop at 5). */
    [OPT_OAI_LOGPROBS] = {.wire = "logprobs",
                          .type = OPT_T_INT,
                          .lo = 0,
                          .hi = PROTO_LOGPROBS_MAX,
                          .help = "the N most probable tokens at each position, with the chosen "
                                  "one's log-probability"},
    [OPT_OAI_CHAT_LOGPROBS] = {.wire = "logprobs",
                               .type = OPT_T_SWITCH,
                               .help = "each generated token's log-probability"},
    [OPT_OAI_TOP_LOGPROBS] = {.wire = "top_logprobs",
                              .type = OPT_T_INT,
                              .lo = 0,
                              .hi = PROTO_LOGPROBS_MAX,
                              .help = "with logprobs: the N most probable tokens at each "
                                      "position"},
    /* /v1/embeddings' (engine/http/embed.h). */
    [OPT_OAI_ENCODING_FORMAT] = {.wire = "encoding_format",
                                 .type = OPT_T_CHOICE,
                                 .choices = "float|base64",
                                 .def = "float",
                                 .help = "embeddings as numbers, or base64 of little-endian "
                                         "float32s"},
    /* Taken only at the model's dim (embed.c): no truncation. */
    [OPT_OAI_DIMENSIONS] = {.wire = "dimensions",
                            .type = OPT_T_INT,
                            .lo = 1,
                            .hi = 65536,
                            .help = "the embeddings' length: the model's dim"},
    /* OpenAI's fields of features this server lacks: taken only at the
     * value that leaves the feature off, so that a client never silently
     * gets less than it asked. */
    [OPT_OAI_BEST_OF] = {.wire = "best_of",
                         .type = OPT_T_INT,
                         .lo = 1,
                         .hi = 1,
                         .def = "1",
                         .help = "completions to choose the best of"},

/* ---- keys of the cluster file ---- */
/* The keys that are not inferd serve's flags. A node uses its port and
 * the next two (telemetry, ring input). */
#define PORT_LAST (65535 - 2)
    [OPT_CF_SSH] = {.key = "ssh",
                    .type = OPT_T_TEXT,
                    .lo = 1,
                    .arg = "[USER@]HOST[:PORT]",
                    .help = "the node's SSH target; `USER@` alone: that user on `host`"},
    [OPT_CF_START] = {.key = "start",
                      .type = OPT_T_TEXT,
                      .lo = 1,
                      .arg = "COMMAND",
                      .help = "the command line that starts the node, instead of the derived one"},
    [OPT_CF_IDENTITY] = {.key = "identity",
                         .type = OPT_T_PATH,
                         .lo = 1,
                         .arg = "FILE",
                         .help = "the SSH private key"},
    [OPT_CF_KNOWN_HOSTS] = {.key = "known_hosts",
                            .type = OPT_T_PATH,
                            .lo = 1,
                            .arg = "FILE",
                            .help = "the SSH known hosts file"},
    [OPT_CF_ACCEPT_NEW] = {.key = "accept_new",
                           .type = OPT_T_CHOICE,
                           .choices = "yes|no|true|false|on|off|1|0",
                           .arg = "yes|no",
                           .help = "trust a host key seen for the first time"},
    [OPT_CF_LOCAL] = {.key = "local",
                      .type = OPT_T_CHOICE,
                      .choices = "yes|no|true|false|on|off|1|0",
                      .arg = "yes|no",
                      .help = "the node runs on this machine: started, stopped and its log read "
                              "without SSH (default: yes when `host` is loopback and `ssh` is not given)"},
    [OPT_CF_CONNECT_TIMEOUT] = {.key = "connect_timeout",
                                .type = OPT_T_INT,
                                .lo = 1,
                                .hi = 600,
                                .arg = "SEC",
                                .help = "seconds an SSH connect may take"},
    [OPT_CF_HOST] = {.key = "host",
                     .type = OPT_T_TEXT,
                     .lo = 1,
                     .arg = "HOST",
                     .help = "where the node's sockets are: a name or an address, without a port"},
    [OPT_CF_PORT] = {.key = "port",
                     .type = OPT_T_INT,
                     .lo = 1,
                     .hi = PORT_LAST,
                     .arg = "PORT",
                     .help = "the node's control port; telemetry is the next, the ring input the "
                             "one after"},
    [OPT_CF_BASE_PORT] = {.key = "base_port",
                          .type = OPT_T_INT,
                          .lo = 1,
                          .hi = PORT_LAST,
                          .arg = "PORT",
                          .help = "the port of nodes without `port`, three more for each node "
                                  "before it on the same host"},
    [OPT_CF_INFERD] = {.key = "inferd",
                       .type = OPT_T_PATH,
                       .lo = 1,
                       .def = "inferd",
                       .arg = "PATH",
                       .help = "the inferd binary on the node"},
    [OPT_CF_FLAGS] = {.key = "flags",
                      .type = OPT_T_TEXT,
                      .lo = 1,
                      .arg = "ARGS",
                      .help = "more inferd serve arguments, after the derived ones"},
    /* The order of the choices is tui/engine/engine.h's eng_kind. */
    [OPT_CF_ENGINE] = {.key = "engine",
                       .type = OPT_T_CHOICE,
                       .choices = "inferd|llama.cpp|vllm|ollama|openai",
                       .def = "inferd",
                       .arg = "ENGINE",
                       .help = "what the node runs: inferd, or an HTTP server watched over its own "
                               "API (openai: any OpenAI-compatible one)"},
    [OPT_CF_URL] = {.key = "url",
                    .type = OPT_T_TEXT,
                    .lo = 8,
                    .hi = 255,
                    .arg = "http://HOST:PORT",
                    .help = "the node's HTTP base URL: required for an engine other than inferd, "
                            "and lets stress drive an inferd node over its --http API"},
    [OPT_CF_API_KEY_FILE] = {.key = "api_key_file",
                             .type = OPT_T_PATH,
                             .lo = 1,
                             .arg = "FILE",
                             .help = "a file holding the bearer token the node's HTTP API wants"},
    // clang-format on
