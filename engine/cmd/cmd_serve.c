/* cmd_serve.c: `inferd serve`'s command line; the node itself is
 * engine/node/serve.c. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "engine/http/http.h"
#include "engine/node/serve.h"
#include "engine/proto/protocol.h"

#define DEFAULT_CONTROL "tcp://127.0.0.1:5555"
#define DEFAULT_TELEMETRY "tcp://127.0.0.1:5556"

/* ---- options ---------------------------------------------------------- */

enum {
    OPT_NAME = 256,
    OPT_MODEL,
    OPT_TOKENIZER,
    OPT_LAYERS,
    OPT_CONTROL,
    OPT_TELEMETRY,
    OPT_LISTEN,
    OPT_NEXT,
    OPT_MEM_LIMIT,
    OPT_MAX_CTX,
    OPT_THREADS,
    OPT_PREFILL_STEP,
    OPT_KV_BITS,
    OPT_STEP_TIMEOUT,
    OPT_STEP_TARGET,
    OPT_QUEUE_TIMEOUT,
    OPT_MAX_SEQS,
    OPT_PIPELINE_DEPTH,
    OPT_LOG,
    OPT_PIDFILE,
    OPT_CURVE_SECRET,
    OPT_CURVE_CLIENTS,
    OPT_HTTP,
    OPT_API_KEY,
    OPT_FLAGS,
    OPT_NEXT_KEY,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"name", required_argument, NULL, OPT_NAME},
    {"model", required_argument, NULL, OPT_MODEL},
    {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"control", required_argument, NULL, OPT_CONTROL},
    {"telemetry", required_argument, NULL, OPT_TELEMETRY},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"next", required_argument, NULL, OPT_NEXT},
    {"mem-limit", required_argument, NULL, OPT_MEM_LIMIT},
    {"max-ctx", required_argument, NULL, OPT_MAX_CTX},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"prefill-step", required_argument, NULL, OPT_PREFILL_STEP},
    {"kv-bits", required_argument, NULL, OPT_KV_BITS},
    {"step-timeout", required_argument, NULL, OPT_STEP_TIMEOUT},
    {"step-target-ms", required_argument, NULL, OPT_STEP_TARGET},
    {"queue-timeout", required_argument, NULL, OPT_QUEUE_TIMEOUT},
    {"max-seqs", required_argument, NULL, OPT_MAX_SEQS},
    {"pipeline-depth", required_argument, NULL, OPT_PIPELINE_DEPTH},
    {"log", required_argument, NULL, OPT_LOG},
    {"pidfile", required_argument, NULL, OPT_PIDFILE},
    {"curve-secret", required_argument, NULL, OPT_CURVE_SECRET},
    {"curve-clients", required_argument, NULL, OPT_CURVE_CLIENTS},
    {"http", required_argument, NULL, OPT_HTTP},
    {"api-key", required_argument, NULL, OPT_API_KEY},
    {"flags", required_argument, NULL, OPT_FLAGS},
    {"next-key", required_argument, NULL, OPT_NEXT_KEY},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd serve [OPTIONS]\n"
                 "\n"
                 "Runs an inference node: requests and live config on a ZeroMQ ROUTER,\n"
                 "telemetry on a PUB (engine/PROTOCOL.md). With --layers A:B the node is\n"
                 "one stage of a pipeline ring: it PULLs on --listen and PUSHes to --next;\n"
                 "the stage holding layer 0 (the head) takes the requests.\n"
                 "\n"
                 "  --name NAME          node name in telemetry and errors (default: host name)\n"
                 "  --model SPEC         a GGUF or llama2.c checkpoint file, \"embedded\"\n"
                 "                       (default), synth:110m, synth:1b or\n"
                 "                       synth:dim=..,hidden=..,layers=..,...\n"
                 "  --tokenizer PATH     llama2.c tokenizer (default: a GGUF file's own, else\n"
                 "                       the embedded one)\n"
                 "  --layers A:B         hold layers [A, B) (default: all)\n"
                 "  --control EP         control ROUTER (default " DEFAULT_CONTROL ")\n"
                 "  --telemetry EP       telemetry PUB (default " DEFAULT_TELEMETRY ")\n"
                 "  --listen EP          ring input: hidden states (or, on the head, tokens)\n"
                 "  --next EP            ring output: the next stage's --listen (the tail's\n"
                 "                       --next is the head's --listen)\n"
                 "  --mem-limit N|auto   memory budget in bytes (K/M/G suffixes); the budget\n"
                 "                       is the least of this, the cgroup limit and RSS +\n"
                 "                       MemAvailable (default auto: the last two)\n"
                 "  --max-ctx N          refuse requests whose context would pass N (ctx_limit),\n"
                 "                       as soon as they come when their prompt and max_tokens\n"
                 "                       already do\n"
                 "  --threads N          compute threads (default: online CPUs)\n"
                 "  --prefill-step N|auto  positions per prefill chunk (default 512); auto: the\n"
                 "                       largest chunk predicted to stay under --step-target-ms\n"
                 "  --step-target-ms MS  target step time for prefill-step auto (default 2000)\n"
                 "  --kv-bits B          KV cache precision: 32, 16, 8 or 4 (default 16)\n"
                 "  --step-timeout SEC   longest wait for any stage (default 30)\n"
                 "  --queue-timeout SEC  a request queued this long behind others is refused\n"
                 "                       with busy (default 300; 0: no limit)\n"
                 "  --max-seqs N         requests running at once, each with its own KV cache,\n"
                 "                       their decode positions batched into one step (default\n"
                 "                       16, at most 64); 16 more wait in the queue\n"
                 "  --pipeline-depth N   steps out around a ring at once (default: one per\n"
                 "                       stage, which keeps every stage busy; at most 16)\n"
                 "  --log FILE           one line per step ([STEP n] ...) and lifecycle lines\n"
                 "  --pidfile FILE       write the process id here while running\n"
                 "  --http HOST:PORT     HTTP: the OpenAI-compatible API on the head\n"
                 "                       (/v1/models, /v1/completions, /v1/chat/completions)\n"
                 "                       and Prometheus /metrics on every node; loopback is\n"
                 "                       advised (127.0.0.1:8080)\n"
                 "  --api-key FILE       HTTP requests need 'Authorization: Bearer KEY', KEY\n"
                 "                       the file's first line (mode 0600)\n"
                 "  --flags FILE         more flags, read from FILE: whitespace-separated, '#'\n"
                 "                       comments, no quoting (systemd: /etc/inferd/NAME.conf)\n"
                 "  --curve-secret FILE  node key (inferd keygen): CURVE on control, telemetry\n"
                 "                       and the ring's links\n"
                 "  --curve-clients DIR  allowed client public keys (*.pub); in a ring, every\n"
                 "                       other stage's key too\n"
                 "  --next-key FILE      with CURVE in a ring: the public key of the --next stage\n"
                 "  --help               this text\n"
                 "\n"
                 "Memory guard: a request is refused (kv_oom) unless the KV bytes it will add\n"
                 "and the scratch of a step leave a reserve of max(32 MiB, budget/16) free;\n"
                 "prefill chunks are cut to what fits; idle sessions are evicted, least\n"
                 "recently used first, when that makes it fit. A request whose client\n"
                 "disconnects is cancelled. SIGTERM stops the node cleanly: requests in flight\n"
                 "get a `shutdown` error.\n");
}

/* What the command line fills in: the node's options, and those of the
 * HTTP server that runs beside it (a serve_companion). */
typedef struct serve_cmd {
    serve_opts o;
    http_opts http; /* listen NULL: no HTTP server */
    http *server;
    const char *telemetry[1];
    serve_companion companion;
} serve_cmd;

static const args_spec spec;

static int parse_layers(const char *text, serve_opts *o)
{
    int a, b, n;
    if (sscanf(text, "%d:%d%n", &a, &b, &n) != 2 || text[n] != '\0' || a < 0 || b <= a)
        return args_bad(&spec, OPT_LAYERS, text, "A:B with 0 <= A < B");
    o->first = a;
    o->last = b;
    return 0;
}

static int take_option(void *ctx, int opt, const char *arg)
{
    serve_cmd *cmd = ctx;
    serve_opts *o = &cmd->o;
    unsigned long long v;
    switch (opt) {
    case OPT_HTTP:
        cmd->http.listen = arg;
        return 0;
    case OPT_API_KEY:
        cmd->http.api_key_file = arg;
        return 0;
    case OPT_FLAGS: /* a --flags left after args_expand_flags */
        return args_bad(&spec, opt, arg,
                        "--flags FILE on the command line (flag files do not nest)");
    case OPT_NAME:
        if (!arg[0] || strlen(arg) > PROTO_NAME_MAX)
            return args_bad(&spec, opt, arg, "1..64 bytes");
        o->name = arg;
        return 0;
    case OPT_MODEL:
        o->model = arg;
        return 0;
    case OPT_TOKENIZER:
        o->tokenizer = arg;
        return 0;
    case OPT_LAYERS:
        return parse_layers(arg, o);
    case OPT_CONTROL:
        o->control = arg;
        return 0;
    case OPT_TELEMETRY:
        o->telemetry = arg;
        return 0;
    case OPT_LISTEN:
    case OPT_NEXT:
        /* Stages tell each other their endpoints in ring frames, which
         * bound them (PROTOCOL.md section 6). */
        if (strlen(arg) >= PROTO_TEXT_MAX)
            return args_bad(&spec, opt, arg, "an endpoint of at most 127 bytes");
        *(opt == OPT_LISTEN ? &o->listen : &o->next) = arg;
        return 0;
    case OPT_LOG:
        o->log = arg;
        return 0;
    case OPT_PIDFILE:
        o->pidfile = arg;
        return 0;
    case OPT_CURVE_SECRET:
        o->curve_secret = arg;
        return 0;
    case OPT_CURVE_CLIENTS:
        o->curve_clients = arg;
        return 0;
    case OPT_NEXT_KEY:
        o->next_key = arg;
        return 0;
    case OPT_MEM_LIMIT:
        if (strcmp(arg, "auto") == 0) {
            o->mem_limit = 0;
            return 0;
        }
        if (args_size(&spec, opt, arg, 1ull << 20, 1ull << 50, &v) != 0)
            return -1;
        o->mem_limit = (size_t)v;
        return 0;
    case OPT_MAX_CTX:
        return args_int(&spec, opt, arg, 1, 1 << 30, &o->max_ctx);
    case OPT_THREADS:
        return args_int(&spec, opt, arg, 1, 1024, &o->threads);
    case OPT_PREFILL_STEP:
        if (strcmp(arg, "auto") == 0) {
            o->prefill_step = PROTO_PREFILL_AUTO;
            return 0;
        }
        return args_int(&spec, opt, arg, 1, PROTO_PREFILL_STEP_MAX, &o->prefill_step);
    case OPT_KV_BITS:
        return args_kv_bits(&spec, opt, arg, &o->kv_bits);
    case OPT_STEP_TIMEOUT:
        if (args_double(&spec, opt, arg, 0.1, 86400.0, &o->step_timeout_ms) != 0)
            return -1;
        o->step_timeout_ms *= 1000.0;
        return 0;
    case OPT_STEP_TARGET:
        return args_double(&spec, opt, arg, 1.0, 86400000.0, &o->step_target_ms);
    case OPT_MAX_SEQS:
        return args_int(&spec, opt, arg, 1, SERVE_SEQS_MAX, &o->max_seqs);
    case OPT_PIPELINE_DEPTH:
        return args_int(&spec, opt, arg, 1, SERVE_DEPTH_MAX, &o->pipeline_depth);
    case OPT_QUEUE_TIMEOUT:
        if (args_double(&spec, opt, arg, 0.0, 86400.0, &o->queue_timeout_ms) != 0)
            return -1;
        o->queue_timeout_ms *= 1000.0;
        return 0;
    }
    return -1;
}

static const args_spec spec = {
    .verb = "serve",
    .options = long_options,
    .help = OPT_HELP,
    .usage = usage,
    .take = take_option,
};

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. */
static int parse_options(int argc, char **argv, serve_cmd *cmd)
{
    *cmd = (serve_cmd){0};
    cmd->o = (serve_opts){
        .control = DEFAULT_CONTROL,
        .telemetry = DEFAULT_TELEMETRY,
        .first = 0,
        .last = -1,
        .threads = args_default_threads(),
        .prefill_step = 512,
        .kv_bits = 16,
        .step_timeout_ms = 30000.0,
        .step_target_ms = 2000.0,
        .queue_timeout_ms = 300000.0,
        .max_seqs = 16,
    };
    int rc = args_parse(&spec, argc, argv, cmd);
    if (rc != 0)
        return rc;
    if (!cmd->o.curve_secret != !cmd->o.curve_clients) {
        fprintf(stderr, "inferd serve: --curve-secret and --curve-clients go together\n");
        return -1;
    }
    if (cmd->http.api_key_file && !cmd->http.listen) {
        fprintf(stderr, "inferd serve: --api-key is for the HTTP server: give --http too\n");
        return -1;
    }
    if (cmd->o.next_key && !cmd->o.curve_secret) {
        fprintf(stderr, "inferd serve: --next-key is for CURVE (--curve-secret)\n");
        return -1;
    }
    return 0;
}

/* ---- the HTTP server beside the node ---------------------------------- */

static int http_companion_start(void *arg, void *zctx, const char *control, const char *telemetry,
                                char *warning, size_t warnlen, char *err, size_t errlen)
{
    serve_cmd *cmd = arg;
    cmd->telemetry[0] = telemetry;
    cmd->http.zctx = zctx;
    cmd->http.control = control;
    cmd->http.telemetry = cmd->telemetry;
    cmd->http.n_telemetry = 1;
    /* The server's threads (and the connection threads they start) leave
     * SIGTERM and SIGINT to the node's loop, which stops at once. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    char why[512];
    int rc = http_start(&cmd->server, &cmd->http, warning, warnlen, why, sizeof why);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "--http %s", why);
        return -1;
    }
    fprintf(stderr, "inferd serve: HTTP on %s (/v1 on the head, /metrics)%s\n", cmd->http.listen,
            cmd->http.api_key_file ? ", API key required" : "");
    return 0;
}

static void http_companion_stop(void *arg)
{
    serve_cmd *cmd = arg;
    http_stop(cmd->server);
    cmd->server = NULL;
}

int cmd_serve(int argc, char **argv)
{
    serve_cmd cmd;
    args_argv all;
    if (args_expand_flags(&spec, argc, argv, &all) != 0)
        return 2;
    int rc = parse_options(all.argc, all.argv, &cmd);
    if (rc != 0) {
        args_argv_free(&all);
        return rc > 0 ? 0 : 2;
    }
    char host[PROTO_NAME_MAX + 1] = "inferd";
    if (!cmd.o.name) {
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        cmd.o.name = host;
    }
    if (cmd.http.listen) {
        cmd.companion = (serve_companion){http_companion_start, http_companion_stop, &cmd};
        cmd.o.companion = &cmd.companion;
    }
    rc = serve_run(&cmd.o);
    args_argv_free(&all);
    return rc;
}
