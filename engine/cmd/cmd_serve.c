/* cmd_serve.c: `inferd serve`'s command line; the node itself is
 * engine/node/serve.c. */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "engine/http/http.h"
#include "engine/node/serve.h"
#include "engine/proto/protocol.h"
#include "engine/sys/ports.h"

/* ---- options ---------------------------------------------------------- */

/* What the command line fills in: the node's options, and those of the
 * HTTP server that runs beside it (a serve_companion). */
typedef struct serve_cmd {
    serve_opts o;
    http_opts http; /* listen NULL: no HTTP server */
    http *server;
    const char *telemetry[1];
    const char *aliases[OPT_LIST_MAX];
    serve_companion companion;
} serve_cmd;

/* The rules between flags, which no single row of the table can say.
 * Returns 0, or -1 after printing the one broken. */
static int check_flags(const opt_vals *v)
{
    const char *why = NULL;
    if (opt_given(v, OPT_FLAGS)) /* one left after args_expand_flags */
        why = "--flags FILE goes on the command line (flag files do not nest)";
    else if (opt_given(v, OPT_CURVE_SECRET) != opt_given(v, OPT_CURVE_CLIENTS))
        why = "--curve-secret and --curve-clients go together";
    else if ((opt_given(v, OPT_API_KEY) || opt_given(v, OPT_ALIAS) || opt_given(v, OPT_CORS)) &&
             !opt_given(v, OPT_HTTP))
        why = "--api-key, --alias and --cors are for the HTTP server: give --http too";
    else if (opt_given(v, OPT_NEXT_KEY) && !opt_given(v, OPT_CURVE_SECRET))
        why = "--next-key is for CURVE (--curve-secret)";
    if (why)
        fprintf(stderr, "inferd serve: %s\n", why);
    return why ? -1 : 0;
}

/* A tcp:// endpoint's port, or 0 for none to check (ipc://, inproc://, a
 * wildcard port "*" that the kernel picks). */
static int endpoint_port(const char *ep)
{
    const char *colon = strncmp(ep, "tcp://", 6) == 0 ? strrchr(ep, ':') : NULL;
    if (!colon || !isdigit((unsigned char)colon[1]))
        return 0;
    return atoi(colon + 1);
}

/* The node's bound ports stay out of the ephemeral range unless the
 * operator says otherwise (ports.h says why). -1 after printing which. */
static int check_ports(const opt_vals *v)
{
    static const opt_id bound[] = {OPT_CONTROL, OPT_TELEMETRY, OPT_LISTEN};
    if (opt_given(v, OPT_ALLOW_EPHEMERAL))
        return 0;
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++) {
        const char *ep = opt_str(v, bound[i]);
        char why[512];
        if (ep && ports_is_ephemeral(endpoint_port(ep), why, sizeof why)) {
            fprintf(stderr, "inferd serve: --%s %s: %s (or give --%s)\n", opt_defs[bound[i]].flag,
                    ep, why, opt_defs[OPT_ALLOW_EPHEMERAL].flag);
            return -1;
        }
    }
    return 0;
}

/* Returns 0 to run, 1 when --help was printed, -1 on bad usage. The
 * timeouts are typed in seconds; the node counts milliseconds. */
static int parse_options(int argc, char **argv, serve_cmd *cmd)
{
    opt_vals v;
    int rc = args_parse(OPT_V_SERVE, argc, argv, &v);
    if (rc != 0 || check_flags(&v) != 0 || check_ports(&v) != 0)
        return rc != 0 ? rc : -1;
    *cmd = (serve_cmd){
        .o = {.name = opt_str(&v, OPT_NAME),
              .model = opt_str(&v, OPT_MODEL),
              .tokenizer = opt_str(&v, OPT_TOKENIZER),
              .control = opt_str(&v, OPT_CONTROL),
              .telemetry = opt_str(&v, OPT_TELEMETRY),
              .listen = opt_str(&v, OPT_LISTEN),
              .next = opt_str(&v, OPT_NEXT),
              .log = opt_str(&v, OPT_LOG),
              .pidfile = opt_str(&v, OPT_PIDFILE),
              .curve_secret = opt_str(&v, OPT_CURVE_SECRET),
              .curve_clients = opt_str(&v, OPT_CURVE_CLIENTS),
              .next_key = opt_str(&v, OPT_NEXT_KEY),
              .first = (int)opt_int(&v, OPT_LAYERS),
              .last = opt_given(&v, OPT_LAYERS) ? (int)v.v[OPT_LAYERS].i2 : -1,
              .mem_limit = (size_t)opt_int(&v, OPT_MEM_LIMIT),
              .max_ctx = (int)opt_int(&v, OPT_MAX_CTX),
              .max_body = (size_t)opt_int(&v, OPT_MAX_BODY),
              .threads = args_threads(&v),
              .prefill_step = (int)opt_int(&v, OPT_PREFILL_STEP),
              .kv_bits = (int)opt_int(&v, OPT_KV_BITS),
              .max_seqs = (int)opt_int(&v, OPT_MAX_SEQS),
              .pipeline_depth = (int)opt_int(&v, OPT_PIPELINE_DEPTH),
              .step_timeout_ms = opt_num(&v, OPT_STEP_TIMEOUT) * 1000.0,
              .step_target_ms = opt_num(&v, OPT_STEP_TARGET),
              .queue_timeout_ms = opt_num(&v, OPT_QUEUE_TIMEOUT) * 1000.0,
              .stall_limit_ms = opt_num(&v, OPT_STALL_LIMIT) * 1000.0},
        .http = {.listen = opt_str(&v, OPT_HTTP),
                 .api_key_file = opt_str(&v, OPT_API_KEY),
                 .max_body = (size_t)opt_int(&v, OPT_MAX_BODY),
                 .cors = opt_str(&v, OPT_CORS),
                 .header_timeout_s = opt_num(&v, OPT_HTTP_HEADER_TIMEOUT),
                 .per_client = (int)opt_int(&v, OPT_HTTP_PER_CLIENT),
                 .stall_limit_s = opt_num(&v, OPT_STALL_LIMIT)},
    };
    cmd->http.n_aliases = opt_texts(&v, OPT_ALIAS, cmd->aliases, OPT_LIST_MAX);
    cmd->http.aliases = cmd->aliases;
    return 0;
}

/* ---- the HTTP server beside the node ---------------------------------- */

static int http_companion_start(void *arg, void *zctx, const char *control, const char *telemetry,
                                const struct tokenizer *tok, char *warning, size_t warnlen,
                                char *err, size_t errlen)
{
    serve_cmd *cmd = arg;
    cmd->http.tok = tok;
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
    if (args_expand_flags(OPT_V_SERVE, argc, argv, &all) != 0)
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
