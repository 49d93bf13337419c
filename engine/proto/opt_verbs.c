/* opt_verbs.c: the verbs of inferd and infertop, and the modes of a
 * verb that take their own flags (see opt.h): the words, synopses and
 * texts that --help, the man pages and the verb lists show. The flags
 * each takes are the settings table's (opt_table.c). */
#include "opt.h"

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
         "disconnects is cancelled. No reply frame is dropped: a request whose client\n"
         "reads slower than the node generates pauses (the others go on), and one\n"
         "whose client takes nothing for --stall-limit is ended with `stalled`.\n"
         "SIGTERM stops the node cleanly: requests in flight get a `shutdown` error.\n"
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
    [OPT_V_QUALITY] = {OPT_INFERD, "quality",
                       "--kv-bits B[,B...] (--text FILE | --prompt TEXT) [--ctx N] [OPTIONS]",
                       "what a kv_bits setting costs in answers, locally",
                       "Runs a text teacher-forced twice per kv_bits setting, the reference at\n"
                       "kv_bits 32 and the test at the setting, chunk by chunk, and prints the KL\n"
                       "divergence of the test's next-token distributions from the reference's\n"
                       "(mean, p99, max), top-1 agreement and both perplexities, over all scored\n"
                       "positions and by depth bucket.",
                       "The same measurement as the control op `quality` (engine/PROTOCOL.md),\n"
                       "without a server. With --json, one JSON object per setting per line, the\n"
                       "op's `quality` object.",
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
    [OPT_V_SET] = {OPT_INFERTOP, "set",
                   "[-c FILE] [--json] [--timeout SEC] [--dry-run] NODE|all SETTING...",
                   "change prefill_step / kv_bits, live or by restart, wait until applied",
                   "Changes live configuration and waits until the node says it is applied.\n"
                   "SETTING is prefill_step=N|auto or kv_bits=B, with the values inferd serve\n"
                   "takes for them. `all` sends the set to every node; a set sent to the head\n"
                   "of a ring also applies to the ring's other stages. Prints what each node\n"
                   "applied; a node that refuses (kv_oom, busy, ...) or does not answer within\n"
                   "SEC seconds did not apply it.\n"
                   "\n"
                   "A node of another engine (llama.cpp, vllm, ollama) takes them by restart\n"
                   "over SSH: its start line is rewritten (llama.cpp --cache-type-k/-v and\n"
                   "--ubatch-size, vLLM --kv-cache-dtype and --max-num-batched-tokens, Ollama\n"
                   "OLLAMA_KV_CACHE_TYPE), the node is stopped and started with it, and the set\n"
                   "is applied when its URL answers again. The cluster file is not changed: a\n"
                   "later `nodes restart` runs the file's line. A value the engine cannot\n"
                   "express is refused. --dry-run prints the new start lines.",
                   "exit codes: 0 applied everywhere, 1 a node did not apply it or the cluster\n"
                   "file is bad, 2 bad command line (bad setting), 3 no such node",
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
         "stress runs (growth, fixed, soak, sweep, quality) recorded to the history",
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
         "as a third axis. With --quality, each leg's speed is followed by a\n"
         "quality measurement at its kv_bits (as stress quality).",
         NULL, 0},
    [OPT_V_STRESS_QUALITY] =
        {OPT_INFERTOP, "stress quality",
         "--kv-bits LIST [--text FILE] [--ctx N] [--bucket N] [OPTIONS]",
         "what each kv_bits costs in quality: KL and top-1 against kv_bits 32",
         "One leg per --kv-bits value: the ring's head scores the text twice, at\n"
         "kv_bits 32 (the reference) and at the value, over the same tokens and\n"
         "chunks, and reports the KL divergence of the value's next-token\n"
         "distributions from the reference's (mean, p99, max, in nats), top-1\n"
         "agreement and both perplexities, overall and by depth bucket. Nothing is\n"
         "changed on the nodes.",
         "The built-in text is contrib/quality/text-en.txt, compiled into infertop\n"
         "(30.5K tokens of the embedded vocabulary). A text too short for one --ctx\n"
         "window is refused by the node, naming its token count.",
         0},
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
         "--ctx N [--kv-bits B] [--model SPEC] [--margin PCT] [-c FILE]\n"
         "                     [--json] [--timeout SEC] [--no-ssh] [--accept-new]\n"
         "                     [--write FILE | --apply [--wait SEC]]",
         "place layers so a target context fits every node's memory; apply it",
         "Places the model's layers on the nodes of the cluster file, in ring order, so\n"
         "that on every node the weights, the KV cache at context N, the scratch of a\n"
         "prefill chunk, the memory guard's reserve (max(32 MiB, budget/16)) and the\n"
         "process's own memory fit its budget. Among the layouts that fit it takes the\n"
         "one with the fewest layers on its busiest node (balanced layers), then the\n"
         "one leaving the most free on its tightest node. A current layout that fits\n"
         "is kept unless the new one raises the largest context by --margin percent.\n"
         "It prints that layout and\n"
         "the current one: per node its budget and where it came from, layers, bytes,\n"
         "headroom and the largest context the layout supports at kv_bits 16, 8 and 4.\n"
         "When no layout fits, it says which node falls short by how much, and the\n"
         "largest context any layout fits.",
         "Budgets: a running node's own (status), else MemAvailable over SSH capped by\n"
         "the file's mem_limit, else mem_limit. Nodes on one host (the same boot id in\n"
         "their status, else the same SSH host) split its memory evenly: MemAvailable\n"
         "plus what its running nodes hold, counted once. The model's shape comes from\n"
         "the running nodes' status; no copy of the file is needed.\n"
         "\n"
         "exit codes: 0 the plan fits (and was written or applied when asked), 1 no\n"
         "layout fits, a budget or the model is unknown, or the apply failed, 2 bad\n"
         "command line",
         0},
};
