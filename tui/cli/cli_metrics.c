/* cli_metrics.c: `infertop metrics`, the cluster's Prometheus exporter.
 *
 * For clusters whose nodes cannot be scraped directly (no --http on them,
 * or a network Prometheus does not reach): subscribes to the telemetry of
 * every node of the cluster file and serves the merged metrics, one
 * series per node (`node` label), with the same module and the same names
 * as a node's own /metrics (engine/http).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/http/http.h"
#include "tui/core/cluster.h"

int cli_metrics(int argc, char **argv)
{
    opt_vals v;
    int rc = cli_parse(OPT_V_METRICS, argc, argv, &v);
    if (rc >= 0)
        return rc;
    const char *listen = opt_str(&v, OPT_METRICS_LISTEN);
    char path[CLUSTER_PATH_MAX], err[1024], warning[512];
    struct cluster *c = NULL;
    if (cluster_locate(opt_str(&v, OPT_CONFIG), path, sizeof path, err, sizeof err) != 0 ||
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
    http_opts o = {.listen = listen,
                   .api_key_file = opt_str(&v, OPT_API_KEY),
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
                c->n_nodes == 1 ? "" : "s", c->name, listen);
        int sig;
        sigwait(&stop, &sig);
        http_stop(h);
    }
    free(endpoints);
    cluster_free(c);
    return rc;
}
