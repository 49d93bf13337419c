/* opt_table.c: every setting and flag of inferd and infertop, once (see
 * opt.h). A row's help is a phrase; its range or choices and its default
 * are appended from the row's fields wherever the help is shown, so they
 * are never typed twice. */
#include "opt.h"

#include <float.h>
#include <stdint.h>

#include "engine/sys/kvbits.h"
#include "protocol.h"

#define ALL_INFERD                                                                                 \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE) |  \
     OPT_VB(OPT_V_QUANTIZE) | OPT_VB(OPT_V_KEYGEN))
#define LOCAL_MODEL                                                                                \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE) |  \
     OPT_VB(OPT_V_QUANTIZE))
#define COMPUTE                                                                                    \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_QUANTIZE))

/* infertop's verbs; a verb with modes takes the flags of every mode
 * (opt.h), so that they parse before the mode is known. */
#define NODES_OPS                                                                                  \
    (OPT_VB(OPT_V_NODES_START) | OPT_VB(OPT_V_NODES_STOP) | OPT_VB(OPT_V_NODES_RESTART) |          \
     OPT_VB(OPT_V_NODES_STATUS) | OPT_VB(OPT_V_NODES_LOGS) | OPT_VB(OPT_V_NODES_FACTS) |           \
     OPT_VB(OPT_V_NODES_EXEC))
#define NODES_SSH (OPT_VB(OPT_V_NODES) | NODES_OPS)
#define NODES_ALL (NODES_SSH | OPT_VB(OPT_V_NODES_COMMAND))
#define GROWTH (OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_GROWTH) | OPT_VB(OPT_V_STRESS_SWEEP))
#define FIXED (OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_FIXED) | OPT_VB(OPT_V_STRESS_SWEEP))
#define ARRIVALS (FIXED | OPT_VB(OPT_V_STRESS_SOAK))
#define STRESS_ALL (GROWTH | ARRIVALS)
#define HISTORY_ALL                                                                                \
    (OPT_VB(OPT_V_HISTORY) | OPT_VB(OPT_V_HISTORY_LIST) | OPT_VB(OPT_V_HISTORY_SHOW) |             \
     OPT_VB(OPT_V_HISTORY_COMPARE) | OPT_VB(OPT_V_HISTORY_BEST) | OPT_VB(OPT_V_HISTORY_EXPORT) |   \
     OPT_VB(OPT_V_HISTORY_PRUNE))
#define DASHBOARD (OPT_VB(OPT_V_CONSOLE) | OPT_VB(OPT_V_DEMO))
#define ALL_INFERTOP                                                                               \
    (DASHBOARD | OPT_VB(OPT_V_STATUS) | OPT_VB(OPT_V_SET) | NODES_ALL | STRESS_ALL | HISTORY_ALL | \
     OPT_VB(OPT_V_METRICS) | OPT_VB(OPT_V_PLAN))
#define HISTORY_MODE(v) (OPT_VB(OPT_V_HISTORY) | OPT_VB(v))
#define SWEEP (OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_SWEEP))
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
         "get a `shutdown` error.\n"
         "\n"
         "HTTP requests go to the node as ordinary requests (source \"http\"); a full\n"
         "queue answers 429 with Retry-After (engine/http/README.md lists every status\n"
         "and metric). A control endpoint that is not loopback without --curve-secret,\n"
         "and --http not on loopback without --api-key, make the node print a loud\n"
         "warning and report it in `status`. Every stage of a ring takes the head's\n"
         "--max-seqs.",
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
         "With --control the node runs it with its own model and settings: the same\n"
         "lines and, with --logits, the same file as a local run of that model and\n"
         "those settings. --model, --tokenizer, --kv-bits, --prefill-step and\n"
         "--threads are for a local run only.",
         0},
    [OPT_V_TOKENIZE] = {OPT_INFERD, "tokenize", "(--prompt TEXT | --file PATH) [OPTIONS]",
                        "the token ids of a text",
                        "Prints the token ids of a text on one line, separated by spaces.\n"
                        "Only the vocabulary is read, never the weights.",
                        NULL, 0},
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
    [OPT_V_CONSOLE] =
        {OPT_INFERTOP, "",
         "[-c FILE] [--db PATH] [--no-color] [--ascii] [--readonly]   (the dashboard)\n"
         "       infertop [--help] [--version] [OPTIONS] VERB [ARGS...]",
         "the dashboard",
         "Opens the dashboard on the cluster described by FILE, else ./infertop.conf,\n"
         "else $XDG_CONFIG_HOME/infertop/cluster.conf (see contrib/cluster.example.conf).\n"
         "OPTIONS before a verb (-c FILE, --db PATH, ...) are the verb's own, as if\n"
         "given after its arguments.",
         "`infertop VERB --help` describes a verb; `infertop demo` starts a local ring\n"
         "and opens the dashboard on it.\n"
         "\n"
         "exit codes: 0 ok, 1 failed (a node, the database or output), 2 bad command\n"
         "line (unknown verb or option, bad date or number), 3 no such run or node,\n"
         "4 database cannot be opened (unwritable path, not a database, newer schema),\n"
         "5 a stress run recorded a failed request or leg, 130 interrupted (Ctrl-C)",
         0},
    [OPT_V_DEMO] = {OPT_INFERTOP, "demo",
                    "[--stages N] [--write-config PATH] [--db PATH] [--no-color]\n"
                    "                     [--ascii] [--readonly]",
                    "start a local ring of inferd stages with a load and watch it",
                    "Starts a ring of N `inferd serve` stages on loopback with the embedded\n"
                    "model, sends it a light continuous load, and opens the dashboard on it.\n"
                    "Every stage is stopped when the dashboard exits (q, Ctrl-C, SIGTERM), and\n"
                    "with the console if it dies.",
                    "The demo's ring is described by a cluster file, written to\n"
                    "$XDG_RUNTIME_DIR/infertop-demo-PID.conf (/tmp without XDG_RUNTIME_DIR) or to\n"
                    "PATH, and removed at exit. Scripts use it while the demo runs:\n"
                    "    infertop status -c PATH --json\n"
                    "    infertop set -c PATH all kv_bits=4\n"
                    "It names each stage's pidfile (`pidfile =`).",
                    0},
    [OPT_V_STATUS] =
        {OPT_INFERTOP, "status", "[-c FILE] [--json] [--timeout SEC]",
         "one snapshot of every node of the cluster",
         "Asks every node of the cluster file for its status (one `status` request\n"
         "each) and prints one row per node; a node that does not answer within SEC\n"
         "seconds is down. --json prints one JSON object:\n"
         "  {\"cluster\":NAME,\"nodes\":[{\"name\":..,\"state\":\"up\"|\"down\"|\"error\",\n"
         "    ...the status reply's fields (config, memory, model, ...)...}]}\n"
         "with \"error\":{\"code\",\"message\"} for a node that is not up.",
         "A running `infertop demo` writes a cluster file (see infertop demo --help).\n"
         "\n"
         "exit codes: 0 every node up, 1 a node is down or the cluster file is bad,\n"
         "2 bad command line",
         0},
    [OPT_V_SET] = {OPT_INFERTOP, "set", "[-c FILE] [--json] [--timeout SEC] NODE|all SETTING...",
                   "change prefill_step / kv_bits live, wait until applied",
                   "Changes live configuration and waits until the node says it is applied.\n"
                   "SETTING is prefill_step=N|auto or kv_bits=B, with the values inferd serve\n"
                   "takes for them. `all` sends the set to every node; a set sent to the head\n"
                   "of a ring also applies to the ring's other stages. Prints what each node\n"
                   "applied; a node that refuses (kv_oom, busy, ...) or does not answer within\n"
                   "SEC seconds did not apply it.",
                   "exit codes: 0 applied everywhere, 1 a node did not apply it or the cluster\n"
                   "file is bad, 2 bad command line (unknown node, bad setting)",
                   OPT_ARGS_MAX},
    [OPT_V_NODES] = {OPT_INFERTOP, "nodes", "OPERATION NODE|all [OPTIONS] [-- COMMAND...]",
                     "start, stop, restart, status, logs, facts, exec over SSH; command lines",
                     "Drives the nodes of the cluster file over SSH (~/.ssh/config, the agent and\n"
                     "keys; known_hosts is checked and a changed host key is always refused).\n"
                     "With `all`, every node runs the operation in parallel.",
                     "With several nodes, logs and exec prefix each line with \"NODE: \".\n"
                     "`infertop nodes OPERATION --help` describes an operation.\n"
                     "\n"
                     "exit codes: 0 every node succeeded, 1 a node failed (unreachable, refused\n"
                     "host key or authentication, operation failed, command exited non-zero) or\n"
                     "the cluster file is bad, 2 bad command line, 3 no such node",
                     0},
    [OPT_V_NODES_START] = {OPT_INFERTOP, "nodes start", "NODE|all [OPTIONS]",
                           "run the node's `start` line detached (refused if running)",
                           "Runs the node's `start` line detached; refused if it runs already.",
                           NULL, 1},
    [OPT_V_NODES_STOP] = {OPT_INFERTOP, "nodes stop", "NODE|all [OPTIONS]",
                          "SIGTERM, SIGKILL after the grace period, verify it is gone",
                          "Sends the node SIGTERM, SIGKILL after the grace period, and verifies\n"
                          "it is gone.",
                          NULL, 1},
    [OPT_V_NODES_RESTART] = {OPT_INFERTOP, "nodes restart", "NODE|all [OPTIONS]",
                             "stop, then start", "Stops the node, then starts it.", NULL, 1},
    [OPT_V_NODES_STATUS] = {OPT_INFERTOP, "nodes status", "NODE|all [OPTIONS]",
                            "running or not, pid, uptime, inferd version",
                            "Says whether the node runs, its pid, uptime and inferd version.", NULL,
                            1},
    [OPT_V_NODES_LOGS] = {OPT_INFERTOP, "nodes logs", "NODE|all [-n N] [-f] [OPTIONS]",
                          "the last lines of the node's log; -f follows",
                          "Prints the last N lines of the node's log; -f follows it until\n"
                          "interrupted.",
                          NULL, 1},
    [OPT_V_NODES_FACTS] = {OPT_INFERTOP, "nodes facts", "NODE|all [OPTIONS]",
                           "cores, memory, load, OS, kernel, the inferd on the PATH",
                           "Prints the node's cores, memory, load, OS, kernel and the inferd on\n"
                           "its PATH.",
                           NULL, 1},
    [OPT_V_NODES_EXEC] = {OPT_INFERTOP, "nodes exec", "NODE|all [OPTIONS] -- COMMAND...",
                          "run COMMAND with the node's shell; output streamed",
                          "Runs COMMAND with the node's shell; its output is streamed.", NULL, 1},
    [OPT_V_NODES_COMMAND] =
        {OPT_INFERTOP, "nodes command", "NODE|all [-c FILE] [--json] [--systemd]",
         "print the `inferd serve` command line start runs (no SSH)",
         "Prints the `inferd serve` command line start runs: the node's `start`, or\n"
         "the one derived from host, port, model, layers, threads, mem_limit and flags\n"
         "(no SSH).",
         "The flag file of --systemd holds an option a line, without the verb, the\n"
         "node's name, log and pidfile, which the unit gives itself.",
         1},
    [OPT_V_STRESS] =
        {OPT_INFERTOP, "stress", "MODE [OPTIONS]",
         "stress runs (growth, fixed, soak, sweep) recorded to the history",
         "Drives the head of a ring with synthetic requests and records every request,\n"
         "every step of every node and every event to the history database. The\n"
         "target is a cluster file (-c), or the endpoints of every node of a local\n"
         "ring (--control and --telemetry).",
         "`infertop stress MODE --help` describes a mode and its options.\n"
         "\n"
         "A node without a heartbeat for 3 s is down: the request in flight fails as\n"
         "`node_down`. Ctrl-C stops the run cleanly; it is recorded as aborted.\n"
         "\n"
         "Each leg records its concurrency and its aggregate tok/s (the tokens of all\n"
         "its requests over its wall time). The head runs its max_seqs requests at\n"
         "once and queues 16 more: a concurrency above that gets `busy` refusals,\n"
         "recorded as failed requests.\n"
         "\n"
         "A write to the database that fails (a full disk) stops the run at once: the\n"
         "error is printed and the run is marked failed if the disk allows.\n"
         "\n"
         "exit codes: 0 the run completed, 1 it failed before any request (node\n"
         "unreachable, incomplete ring) or an output error, 2 bad command line,\n"
         "4 database cannot be opened or written, 5 a request or leg failed\n"
         "(recorded), 130 interrupted (recorded as aborted)",
         0},
    [OPT_V_STRESS_GROWTH] = {OPT_INFERTOP, "stress growth",
                             "--to N [--from N] [--factor F | --step N] [--gen N] [OPTIONS]",
                             "one session whose context grows to --to",
                             "One session; the context grows from --from to --to (by --factor,\n"
                             "or by --step tokens), each request generating --gen tokens; stops\n"
                             "at --to or at the first failure (kv_oom, ctx_limit, timeout, ...).",
                             NULL, 0},
    [OPT_V_STRESS_FIXED] = {OPT_INFERTOP, "stress fixed",
                            "[--requests N] [--prompt-tokens N] [--gen N] [--concurrency C]\n"
                            "                     [--rate R] [--seed S] [OPTIONS]",
                            "fixed-shape requests; requests/s and tokens/s",
                            "--requests requests of --prompt-tokens + --gen tokens, keeping\n"
                            "--concurrency in flight at once, optionally at Poisson arrivals of\n"
                            "--rate per second; reports requests/s and tokens/s.",
                            NULL, 0},
    [OPT_V_STRESS_SOAK] = {OPT_INFERTOP, "stress soak", "--duration D [OPTIONS]",
                           "fixed-shape requests for a while; drift",
                           "Fixed-shape requests for --duration; reports drift: the first\n"
                           "against the last decile of requests.",
                           NULL, 0},
    [OPT_V_STRESS_SWEEP] =
        {OPT_INFERTOP, "stress sweep",
         "--kv-bits LIST --prefill-step LIST [--leg growth|fixed] [OPTIONS]",
         "one leg per kv_bits x prefill_step (x concurrency), set live",
         "One leg per pair of --kv-bits and --prefill-step, applied live with `set`\n"
         "and checked in every node's telemetry before the leg; the legs are runs of\n"
         "the --leg mode and take its options; fixed legs take --concurrency LIST\n"
         "as a third axis.",
         NULL, 0},
    [OPT_V_HISTORY] =
        {OPT_INFERTOP, "history", "[--db PATH] [--json] MODE ...",
         "query the run history: list, show, compare, best, export, prune",
         "Queries the run history: tables for people, --json (and CSV exports) for\n"
         "scripts.",
         "`infertop history MODE --help` describes a mode and its options.\n"
         "\n"
         "exit codes: 0 ok, 1 failed (database or output error), 2 bad command line\n"
         "(unknown verb or option, bad date or number), 3 no such run, 4 database cannot\n"
         "be opened (unwritable path, not a database, newer schema)",
         0},
    [OPT_V_HISTORY_LIST] = {OPT_INFERTOP, "history list",
                            "[--mode M] [--status S] [--model NAME] [--grep TEXT]\n"
                            "       [--since DATE] [--until DATE] [--limit N] [--page N]",
                            "runs, newest first", "Lists the runs, newest first, a page at a time.",
                            "DATE: YYYY-MM-DD or YYYY-MM-DD HH:MM[:SS], local time; --until is "
                            "exclusive.",
                            0},
    [OPT_V_HISTORY_SHOW] = {OPT_INFERTOP, "history show", "RUN",
                            "one run: legs, request and step percentiles, failure",
                            "Shows one run: its legs, request and step percentiles, and its\n"
                            "failure. Percentiles are nearest-rank (pN: the ceil(N% x count)-th\n"
                            "smallest value).",
                            NULL, 1},
    [OPT_V_HISTORY_COMPARE] = {OPT_INFERTOP, "history compare", "RUN RUN",
                               "two runs side by side: A, B, B-A and B/A",
                               "Shows two runs side by side: A, B, B-A and B/A.", NULL, 2},
    [OPT_V_HISTORY_BEST] =
        {OPT_INFERTOP, "history best", "[--model NAME] [--cluster NAME] [--by context|agg-tps]",
         "the best figures per (kv_bits, prefill_step)",
         "Per (kv_bits, prefill_step): the max context reached and decode tok/s there;\n"
         "--by agg-tps: per (kv_bits, prefill_step, concurrency), the best leg's\n"
         "aggregate tok/s (every request's tokens / the leg's wall time).",
         NULL, 0},
    [OPT_V_HISTORY_EXPORT] = {OPT_INFERTOP, "history export",
                              "RUN [--what requests|steps|summary] [--format table|csv|json]\n"
                              "       [--out FILE]",
                              "a run's rows as a table, CSV or JSON",
                              "Writes a run's rows: requests, steps or its summary.", NULL, 1},
    [OPT_V_HISTORY_PRUNE] = {OPT_INFERTOP, "history prune", "--older-than DAYS [--vacuum]",
                             "delete finished runs started more than DAYS ago",
                             "Deletes the finished runs started more than DAYS ago.", NULL, 0},
    [OPT_V_METRICS] = {OPT_INFERTOP, "metrics", "[-c FILE] --listen HOST:PORT [--api-key FILE]",
                       "serve the cluster's merged Prometheus metrics over HTTP",
                       "Serves the Prometheus metrics of every node of the cluster file on\n"
                       "http://HOST:PORT/metrics, computed from the telemetry each node publishes\n"
                       "(one series per node, `node` label; the names are those of a node's own\n"
                       "/metrics, engine/http/README.md). Runs until SIGINT or SIGTERM.",
                       "exit codes: 0 stopped by a signal, 1 the cluster file is bad or the "
                       "address\ncannot be served, 2 bad command line",
                       0},
    [OPT_V_PLAN] =
        {OPT_INFERTOP, "plan",
         "--ctx N [--kv-bits B] [--model SPEC] [-c FILE] [--json]\n"
         "                     [--timeout SEC] [--no-ssh] [--accept-new]\n"
         "                     [--write FILE | --apply [--wait SEC]]",
         "place layers so a target context fits every node's memory; apply it",
         "Places the model's layers on the nodes of the cluster file, in ring order, so\n"
         "that on every node the weights, the KV cache at context N, the scratch of a\n"
         "prefill chunk, the memory guard's reserve (max(32 MiB, budget/16)) and the\n"
         "process's own memory fit its budget. Among the layouts that fit it takes the\n"
         "one whose slowest stage is fastest (with equal speeds: balanced layers), then\n"
         "the one leaving the most free on its tightest node. It prints that layout and\n"
         "the current one: per node its budget and where it came from, layers, bytes,\n"
         "headroom and the largest context the layout supports at kv_bits 16, 8 and 4.\n"
         "When no layout fits, it says which node falls short by how much, and the\n"
         "largest context any layout fits.",
         "Budgets: a running node's own (status), else MemAvailable over SSH capped by\n"
         "the file's mem_limit, else mem_limit.\n"
         "\n"
         "exit codes: 0 the plan fits (and was written or applied when asked), 1 no\n"
         "layout fits, a budget or the model is unknown, or the apply failed, 2 bad\n"
         "command line",
         0},
};

const opt_def opt_defs[OPT_COUNT] = {
    /* ---- what runs: the model ---- */
    [OPT_MODEL] = {.flag = "model",
                   .key = "model",
                   .type = OPT_T_PATH,
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
                       .verbs = LOCAL_MODEL & ~OPT_VB(OPT_V_QUANTIZE)},
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
                     .live = 1,
                     .wire = "kv_bits",
                     .key = "kv_bits",
                     .type = OPT_T_INT,
                     .ints = kv_bits_all,
                     .n_ints = KV_BITS_N,
                     .def = "16",
                     .arg = "B",
                     .help = "KV cache precision in bits per value",
                     .verbs =
                         OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | SWEEP,
                     .list_verbs = OPT_VB(OPT_V_STRESS_SWEEP),
                     .required = OPT_VB(OPT_V_STRESS_SWEEP)},
    [OPT_PREFILL_STEP] = {.flag = "prefill-step",
                          .live = 1,
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
                                  "to stay under the node's step target",
                          .verbs = OPT_VB(OPT_V_SERVE) | SWEEP,
                          .list_verbs = OPT_VB(OPT_V_STRESS_SWEEP),
                          .required = OPT_VB(OPT_V_STRESS_SWEEP)},
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
    /* quantize reads a tokenizer only to write it into a file whose source
     * has none: a llama2.c file, never a GGUF one. */
    [OPT_QUANT_TOKENIZER] = {.flag = "tokenizer",
                             .type = OPT_T_PATH,
                             .arg = "PATH",
                             .def_doc = "the embedded one",
                             .help = "for a llama2.c checkpoint or synthetic model: the llama2.c "
                                     "tokenizer to write",
                             .verbs = OPT_VB(OPT_V_QUANTIZE)},
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
                     .verbs = OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_METRICS)},
    [OPT_FLAGS] = {.flag = "flags",
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
                  .verbs = ALL_INFERD | ALL_INFERTOP},

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

    /* ---- infertop's flags ---- */
    /* Every verb that reads the cluster file. */
    [OPT_CONFIG] = {.flag = "config",
                    .short_flag = 'c',
                    .type = OPT_T_PATH,
                    .arg = "FILE",
                    .def_doc = "./infertop.conf, then $XDG_CONFIG_HOME/infertop/cluster.conf",
                    .help = "the cluster file",
                    .verbs = OPT_VB(OPT_V_CONSOLE) | OPT_VB(OPT_V_STATUS) | OPT_VB(OPT_V_SET) |
                             NODES_ALL | STRESS_ALL | OPT_VB(OPT_V_METRICS) | OPT_VB(OPT_V_PLAN)},
    [OPT_DB] = {.flag = "db",
                .type = OPT_T_PATH,
                .arg = "PATH",
                .def_doc = "$XDG_DATA_HOME/infertop/history.db, else "
                           "~/.local/share/infertop/history.db",
                .help = "the run history database (the Stress and History views' too)",
                .verbs = DASHBOARD | STRESS_ALL | HISTORY_ALL},
    [OPT_JSON] = {.flag = "json",
                  .type = OPT_T_SWITCH,
                  .help = "JSON on stdout instead of a table",
                  .verbs = OPT_VB(OPT_V_STATUS) | OPT_VB(OPT_V_SET) | NODES_ALL | STRESS_ALL |
                           HISTORY_ALL | OPT_VB(OPT_V_PLAN)},

    /* ---- the dashboard ---- */
    [OPT_VERSION] = {.flag = "version",
                     .type = OPT_T_SWITCH,
                     .help = "print the version",
                     .verbs = OPT_VB(OPT_V_CONSOLE)},
    [OPT_NO_COLOR] = {.flag = "no-color",
                      .type = OPT_T_SWITCH,
                      .help = "no colours (also when NO_COLOR is set)",
                      .verbs = DASHBOARD},
    [OPT_ASCII] = {.flag = "ascii",
                   .type = OPT_T_SWITCH,
                   .help = "ASCII only, no UTF-8 line drawing or blocks",
                   .verbs = DASHBOARD},
    [OPT_READONLY] = {.flag = "readonly",
                      .type = OPT_T_SWITCH,
                      .help = "refuse config changes and node actions",
                      .verbs = DASHBOARD},
    [OPT_STAGES] = {.flag = "stages",
                    .type = OPT_T_INT,
                    .lo = 1,
                    .hi = OPT_DEMO_STAGES_MAX,
                    .def = "2",
                    .arg = "N",
                    .help = "stages of the ring, a layer of the embedded model each at least",
                    .verbs = OPT_VB(OPT_V_DEMO)},
    [OPT_WRITE_CONFIG] = {.flag = "write-config",
                          .type = OPT_T_PATH,
                          .arg = "PATH",
                          .help = "where to write the cluster file",
                          .verbs = OPT_VB(OPT_V_DEMO)},

    /* ---- status, set ---- */
    [OPT_STATUS_TIMEOUT] = {.flag = "timeout",
                            .type = OPT_T_NUM,
                            .dlo = 0.001,
                            .dhi = 3600.0,
                            .def = "5",
                            .arg = "SEC",
                            .help = "a node that does not answer this long is down",
                            .verbs = OPT_VB(OPT_V_STATUS)},
    /* A set sent to a ring's head waits for every stage to convert its KV. */
    [OPT_SET_TIMEOUT] = {.flag = "timeout",
                         .type = OPT_T_NUM,
                         .dlo = 0.001,
                         .dhi = 3600.0,
                         .def = "15",
                         .arg = "SEC",
                         .help = "a node that does not answer this long did not apply the set",
                         .verbs = OPT_VB(OPT_V_SET)},

    /* ---- nodes ---- */
    [OPT_ACCEPT_NEW] = {.flag = "accept-new",
                        .type = OPT_T_SWITCH,
                        .help = "record the host key of a node seen for the first time",
                        .verbs = NODES_SSH | OPT_VB(OPT_V_PLAN)},
    [OPT_SSH_TIMEOUT] = {.flag = "timeout",
                         .type = OPT_T_INT,
                         .lo = 1,
                         .hi = 600,
                         .arg = "SEC",
                         .def_doc = "the cluster file's connect_timeout, else 5",
                         .help = "SSH connect timeout",
                         .verbs = NODES_SSH},
    [OPT_GRACE] = {.flag = "grace",
                   .type = OPT_T_INT,
                   .lo = 1,
                   .hi = 3600,
                   .def = "10",
                   .arg = "SEC",
                   .help = "wait this long after SIGTERM before SIGKILL",
                   .verbs = OPT_VB(OPT_V_NODES) | OPT_VB(OPT_V_NODES_STOP) |
                            OPT_VB(OPT_V_NODES_RESTART)},
    [OPT_LINES] = {.flag = "lines",
                   .short_flag = 'n',
                   .type = OPT_T_INT,
                   .lo = 1,
                   .hi = 1000000,
                   .def = "50",
                   .arg = "N",
                   .help = "the last N lines of the log",
                   .verbs = OPT_VB(OPT_V_NODES) | OPT_VB(OPT_V_NODES_LOGS)},
    [OPT_FOLLOW] = {.flag = "follow",
                    .short_flag = 'f',
                    .type = OPT_T_SWITCH,
                    .help = "follow the log until interrupted (not with --json)",
                    .verbs = OPT_VB(OPT_V_NODES) | OPT_VB(OPT_V_NODES_LOGS)},
    [OPT_SYSTEMD] = {.flag = "systemd",
                     .type = OPT_T_SWITCH,
                     .help = "the flag file /etc/inferd/NODE.conf of the unit "
                             "inferd@NODE.service instead",
                     .verbs = OPT_VB(OPT_V_NODES) | OPT_VB(OPT_V_NODES_COMMAND)},

    /* ---- stress: every mode ---- */
    [OPT_STRESS_CONTROL] = {.flag = "control",
                            .type = OPT_T_TEXT,
                            .arg = "EP,...",
                            .help = "every node's control endpoint, instead of -c",
                            .verbs = STRESS_ALL},
    [OPT_STRESS_TELEMETRY] = {.flag = "telemetry",
                              .type = OPT_T_TEXT,
                              .arg = "EP,...",
                              .help = "their telemetry endpoints, in the same order",
                              .verbs = STRESS_ALL},
    [OPT_STRESS_TIMEOUT] = {.flag = "timeout",
                            .type = OPT_T_NUM,
                            .dlo = 0.001,
                            .dhi = DAY_S,
                            .def = "60",
                            .arg = "SEC",
                            .help = "a request that hears nothing (no token, no step) this long "
                                    "fails as `timeout`",
                            .verbs = STRESS_ALL},
    [OPT_STOP_ON_FAILURE] = {.flag = "stop-on-failure",
                             .type = OPT_T_SWITCH,
                             .help = "stop the run at the first failed request",
                             .verbs = STRESS_ALL},
    [OPT_RUN_NAME] = {.flag = "name",
                      .type = OPT_T_TEXT,
                      .hi = OPT_RUN_TEXT_MAX - 1,
                      .arg = "TEXT",
                      .help = "recorded with the run",
                      .verbs = STRESS_ALL},
    [OPT_RUN_NOTES] = {.flag = "notes",
                       .type = OPT_T_TEXT,
                       .hi = OPT_RUN_TEXT_MAX - 1,
                       .arg = "TEXT",
                       .help = "recorded with the run",
                       .verbs = STRESS_ALL},

    /* ---- stress: the modes (sweep: its legs') ---- */
    [OPT_FROM] = {.flag = "from",
                  .type = OPT_T_INT,
                  .lo = 1,
                  .hi = PROTO_SYNTHETIC_MAX,
                  .def = "64",
                  .arg = "N",
                  .help = "the first context",
                  .verbs = GROWTH},
    [OPT_TO] = {.flag = "to",
                .type = OPT_T_INT,
                .lo = 1,
                .hi = PROTO_SYNTHETIC_MAX,
                .arg = "N",
                .help = "the target context",
                .verbs = GROWTH,
                .required = OPT_VB(OPT_V_STRESS_GROWTH)},
    [OPT_FACTOR] = {.flag = "factor",
                    .type = OPT_T_NUM,
                    .dlo = 1.0,
                    .dhi = 1000.0,
                    .def = "2",
                    .arg = "F",
                    .help = "the context grows by this factor (above 1)",
                    .verbs = GROWTH},
    [OPT_STEP] = {.flag = "step",
                  .type = OPT_T_INT,
                  .lo = 1,
                  .hi = PROTO_SYNTHETIC_MAX,
                  .arg = "N",
                  .help = "or by N tokens, instead of --factor",
                  .verbs = GROWTH},
    [OPT_GEN] = {.flag = "gen",
                 .type = OPT_T_INT,
                 .lo = 0,
                 .hi = PROTO_MAX_TOKENS_MAX,
                 .def = "8",
                 .arg = "N",
                 .help = "tokens each request generates",
                 .verbs = STRESS_ALL},
    [OPT_REQUESTS] = {.flag = "requests",
                      .type = OPT_T_INT,
                      .lo = 1,
                      .hi = INT32_MAX,
                      .def = "16",
                      .arg = "N",
                      .help = "requests of the run",
                      .verbs = FIXED},
    [OPT_PROMPT_TOKENS] = {.flag = "prompt-tokens",
                           .type = OPT_T_INT,
                           .lo = 1,
                           .hi = PROTO_SYNTHETIC_MAX,
                           .def = "128",
                           .arg = "N",
                           .help = "prompt tokens of each request",
                           .verbs = ARRIVALS},
    [OPT_CONCURRENCY] = {.flag = "concurrency",
                         .type = OPT_T_INT,
                         .lo = 1,
                         .hi = OPT_CONCURRENCY_MAX,
                         .def = "1",
                         .arg = "C",
                         .help = "requests in flight at once (a sweep's fixed legs: a list, "
                                 "its third axis)",
                         .verbs = ARRIVALS,
                         .list_verbs = OPT_VB(OPT_V_STRESS_SWEEP)},
    [OPT_RATE] = {.flag = "rate",
                  .type = OPT_T_NUM,
                  .dlo = 0.0,
                  .dhi = 1e6,
                  .def = "0",
                  .arg = "R",
                  .help = "Poisson arrivals per second; 0: as fast as --concurrency allows",
                  .verbs = ARRIVALS},
    [OPT_STRESS_SEED] = {.flag = "seed",
                         .type = OPT_T_INT,
                         .lo = 0,
                         .hi = INT64_MAX,
                         .def = "1",
                         .arg = "S",
                         .help = "seed of the arrivals",
                         .verbs = ARRIVALS},
    [OPT_DURATION] = {.flag = "duration",
                      .type = OPT_T_DURATION,
                      .dlo = 0.001,
                      .dhi = 30 * DAY_S,
                      .arg = "D",
                      .help = "how long the soak runs",
                      .verbs = OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_SOAK),
                      .required = OPT_VB(OPT_V_STRESS_SOAK)},
    [OPT_LEG] = {.flag = "leg",
                 .type = OPT_T_CHOICE,
                 .choices = "growth|fixed",
                 .def = "growth",
                 .arg = "MODE",
                 .help = "the mode of every leg, whose options the sweep takes",
                 .verbs = SWEEP},

    /* ---- history ---- */
    /* Not a flag: the run ids history takes after its mode; "run" in the
     * JSON of stress and history. */
    [OPT_RUN_ID] = {.wire = "run",
                    .type = OPT_T_INT,
                    .lo = 1,
                    .hi = INT32_MAX,
                    .arg = "RUN",
                    .help = "a run id"},
    [OPT_RUN_MODE] = {.flag = "mode",
                      .type = OPT_T_CHOICE,
                      .choices = "growth|fixed|soak|sweep",
                      .arg = "M",
                      .help = "runs of this mode",
                      .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_RUN_STATUS] = {.flag = "status",
                        .type = OPT_T_CHOICE,
                        .choices = "running|completed|failed|aborted",
                        .arg = "S",
                        .help = "runs in this state",
                        .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_RUN_MODEL] = {.flag = "model",
                       .type = OPT_T_TEXT,
                       .arg = "NAME",
                       .help = "runs of this model",
                       .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST) | OPT_VB(OPT_V_HISTORY_BEST)},
    [OPT_RUN_CLUSTER] = {.flag = "cluster",
                         .type = OPT_T_TEXT,
                         .arg = "NAME",
                         .help = "runs on this cluster",
                         .verbs = HISTORY_MODE(OPT_V_HISTORY_BEST)},
    [OPT_GREP] = {.flag = "grep",
                  .type = OPT_T_TEXT,
                  .arg = "TEXT",
                  .help = "runs whose name or notes hold TEXT",
                  .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_SINCE] = {.flag = "since",
                   .type = OPT_T_TEXT,
                   .arg = "DATE",
                   .help = "runs started at DATE or later",
                   .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_UNTIL] = {.flag = "until",
                   .type = OPT_T_TEXT,
                   .arg = "DATE",
                   .help = "runs started before DATE",
                   .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_LIMIT] = {.flag = "limit",
                   .type = OPT_T_INT,
                   .lo = 1,
                   .hi = 100000,
                   .def = "20",
                   .arg = "N",
                   .help = "runs per page",
                   .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_PAGE] = {.flag = "page",
                  .type = OPT_T_INT,
                  .lo = 1,
                  .hi = 1000000,
                  .def = "1",
                  .arg = "N",
                  .help = "the page to show",
                  .verbs = HISTORY_MODE(OPT_V_HISTORY_LIST)},
    [OPT_WHAT] = {.flag = "what",
                  .type = OPT_T_CHOICE,
                  .choices = "requests|steps|summary",
                  .def = "requests",
                  .arg = "WHAT",
                  .help = "the rows to export",
                  .verbs = HISTORY_MODE(OPT_V_HISTORY_EXPORT)},
    [OPT_FORMAT] = {.flag = "format",
                    .type = OPT_T_CHOICE,
                    .choices = "table|csv|json",
                    .def = "table",
                    .arg = "FORMAT",
                    .help = "how to write them (--json: json)",
                    .verbs = HISTORY_MODE(OPT_V_HISTORY_EXPORT)},
    [OPT_EXPORT_OUT] = {.flag = "out",
                        .type = OPT_T_PATH,
                        .arg = "FILE",
                        .help = "csv or json to FILE instead of stdout; it appears only when "
                                "complete",
                        .verbs = HISTORY_MODE(OPT_V_HISTORY_EXPORT)},
    [OPT_OLDER_THAN] = {.flag = "older-than",
                        .type = OPT_T_NUM,
                        .dlo = 0.0,
                        .dhi = 1e6,
                        .arg = "DAYS",
                        .help = "delete the runs started more than DAYS ago",
                        .verbs = HISTORY_MODE(OPT_V_HISTORY_PRUNE),
                        .required = OPT_VB(OPT_V_HISTORY_PRUNE)},
    [OPT_VACUUM] = {.flag = "vacuum",
                    .type = OPT_T_SWITCH,
                    .help = "then give the space back to the file system",
                    .verbs = HISTORY_MODE(OPT_V_HISTORY_PRUNE)},
    [OPT_BY] = {.flag = "by",
                .type = OPT_T_CHOICE,
                .choices = "context|agg-tps",
                .def = "context",
                .arg = "FIGURE",
                .help = "the figure that ranks",
                .verbs = HISTORY_MODE(OPT_V_HISTORY_BEST)},

    /* ---- metrics ---- */
    [OPT_METRICS_LISTEN] = {.flag = "listen",
                            .type = OPT_T_TEXT,
                            .arg = "HOST:PORT",
                            .help = "where to serve (127.0.0.1:9464; [::1]:9464)",
                            .verbs = OPT_VB(OPT_V_METRICS),
                            .required = OPT_VB(OPT_V_METRICS)},

    /* ---- plan ---- */
    [OPT_CTX] = {.flag = "ctx",
                 .type = OPT_T_INT,
                 .lo = 1,
                 .hi = OPT_PLAN_CTX_MAX,
                 .arg = "N",
                 .help = "the target context (positions)",
                 .verbs = OPT_VB(OPT_V_PLAN),
                 .required = OPT_VB(OPT_V_PLAN)},
    [OPT_PLAN_KV_BITS] = {.flag = "kv-bits",
                          .type = OPT_T_INT,
                          .ints = kv_bits_all,
                          .n_ints = KV_BITS_N,
                          .arg = "B",
                          .def_doc = "the running nodes', else 16",
                          .help = "KV cache precision in bits per value",
                          .verbs = OPT_VB(OPT_V_PLAN)},
    [OPT_PLAN_MODEL] = {.flag = "model",
                        .type = OPT_T_TEXT,
                        .arg = "SPEC",
                        .def_doc = "the file's `model`, else what the running nodes report",
                        .help = "the model: a copy of its file on this machine, embedded or "
                                "synth:...",
                        .verbs = OPT_VB(OPT_V_PLAN)},
    [OPT_PLAN_TIMEOUT] = {.flag = "timeout",
                          .type = OPT_T_INT,
                          .lo = 1,
                          .hi = 600,
                          .def = "3",
                          .arg = "SEC",
                          .help = "how long to wait for the nodes' status",
                          .verbs = OPT_VB(OPT_V_PLAN)},
    [OPT_NO_SSH] = {.flag = "no-ssh",
                    .type = OPT_T_SWITCH,
                    .help = "do not ask nodes that are down for their memory over SSH",
                    .verbs = OPT_VB(OPT_V_PLAN)},
    [OPT_WRITE] = {.flag = "write",
                   .type = OPT_T_PATH,
                   .arg = "FILE",
                   .help = "write the cluster file with the planned `layers` to FILE (FILE may "
                           "be the cluster file itself)",
                   .verbs = OPT_VB(OPT_V_PLAN)},
    [OPT_APPLY] = {.flag = "apply",
                   .type = OPT_T_SWITCH,
                   .help = "restart the ring on the planned layout over SSH: stop every node, "
                           "start them tail to head, wait until each reports its new layers and "
                           "one model fingerprint, then update the cluster file; a failure says "
                           "where each node is and leaves the file as it was",
                   .verbs = OPT_VB(OPT_V_PLAN)},
    [OPT_WAIT] = {.flag = "wait",
                  .type = OPT_T_INT,
                  .lo = 1,
                  .hi = 3600,
                  .def = "120",
                  .arg = "SEC",
                  .help = "--apply: how long the nodes may take to come up",
                  .verbs = OPT_VB(OPT_V_PLAN)},
};
