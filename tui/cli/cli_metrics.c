/* cli_metrics.c: `infertop metrics`, the cluster's Prometheus exporter.
 *
 * For clusters whose nodes cannot be scraped directly (no --http on them,
 * or a network Prometheus does not reach): subscribes to the telemetry of
 * every node of the cluster file and serves the merged metrics, one
 * series per node (`node` label), with the same module and the same names
 * as a node's own /metrics (engine/http).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/http/http.h"
#include "tui/core/cluster.h"

static void cli_metrics_usage(FILE *out)
{
    fputs("usage: infertop metrics [-c FILE] --listen HOST:PORT [--api-key FILE]\n"
          "\n"
          "Serves the Prometheus metrics of every node of the cluster file on\n"
          "http://HOST:PORT/metrics, computed from the telemetry each node publishes\n"
          "(one series per node, `node` label; the names are those of a node's own\n"
          "/metrics, engine/http/README.md). Runs until SIGINT or SIGTERM.\n"
          "\n"
          "  -c, --config FILE  the cluster file (default ./infertop.conf, then\n"
          "                     $XDG_CONFIG_HOME/infertop/cluster.conf)\n"
          "  --listen HOST:PORT where to serve (127.0.0.1:9464; [::1]:9464)\n"
          "  --api-key FILE     scrapes need 'Authorization: Bearer KEY', KEY the file's\n"
          "                     first line (mode 0600)\n"
          "\n"
          "exit codes: 0 stopped by a signal, 1 the cluster file is bad or the address\n"
          "cannot be served, 2 bad command line\n",
          out);
}

struct metrics_cmd {
    const char *config, *listen, *api_key;
};

/* Returns -1 to go on, else the exit code (--help, a bad option). */
static int parse(int argc, char **argv, struct metrics_cmd *cmd)
{
    enum { O_LISTEN = 256, O_API_KEY, O_HELP };
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, O_LISTEN},
        {"api-key", required_argument, NULL, O_API_KEY},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":c:h", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            cmd->config = optarg;
            break;
        case O_LISTEN:
            cmd->listen = optarg;
            break;
        case O_API_KEY:
            cmd->api_key = optarg;
            break;
        case 'h':
        case O_HELP:
            cli_metrics_usage(stdout);
            return CLI_OK;
        case ':':
            return cli_usage_error("metrics", "%s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error("metrics", "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("metrics", "unexpected argument \"%s\"", argv[optind]);
    if (!cmd->listen)
        return cli_usage_error("metrics", "%s", "--listen HOST:PORT is required");
    return -1;
}

int cli_metrics(int argc, char **argv)
{
    struct metrics_cmd cmd = {0};
    int rc = parse(argc, argv, &cmd);
    if (rc >= 0)
        return rc;
    char path[CLUSTER_PATH_MAX], err[1024], warning[512];
    struct cluster *c = NULL;
    if (cluster_locate(cmd.config, path, sizeof path, err, sizeof err) != 0 ||
        cluster_load(path, &c, err, sizeof err) != 0) {
        fprintf(stderr, "infertop metrics: %s\n", err);
        return CLI_ERROR;
    }
    const char **endpoints = calloc((size_t)c->n_nodes + 1, sizeof *endpoints);
    if (!endpoints) {
        fprintf(stderr, "infertop metrics: out of memory\n");
        cluster_free(c);
        return CLI_ERROR;
    }
    for (int i = 0; i < c->n_nodes; i++)
        endpoints[i] = c->nodes[i].telemetry;
    /* The signals are taken by sigwait below; blocked before the server's
     * threads start, so that none of them is interrupted instead. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    http_opts o = {.listen = cmd.listen,
                   .api_key_file = cmd.api_key,
                   .telemetry = endpoints,
                   .n_telemetry = c->n_nodes};
    http *h = NULL;
    rc = CLI_OK;
    if (http_start(&h, &o, warning, sizeof warning, err, sizeof err) != 0) {
        fprintf(stderr, "infertop metrics: --listen %s\n", err);
        rc = CLI_ERROR;
    } else {
        if (warning[0])
            fprintf(stderr, "\n*** WARNING: %s ***\n\n", warning);
        fprintf(stderr, "infertop metrics: %d node%s of %s on http://%s/metrics\n", c->n_nodes,
                c->n_nodes == 1 ? "" : "s", c->name, cmd.listen);
        int sig;
        sigwait(&stop, &sig);
        http_stop(h);
    }
    free(endpoints);
    cluster_free(c);
    return rc;
}
