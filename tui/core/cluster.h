/* cluster.h: the cluster file, the operator's description of the nodes.
 *
 * An INI file (parsed with inih):
 *
 *   [cluster]
 *   name = ring                      ; optional, default "cluster"
 *   identity = ~/.ssh/id_ed25519     ; defaults for every node's SSH session
 *   known_hosts = ~/.ssh/known_hosts
 *   accept_new = no
 *   connect_timeout = 5              ; seconds an SSH connect may take, 1..600
 *
 *   [node a]
 *   ssh = [user@]host[:port]         ; required
 *   control = tcp://host:port        ; required
 *   telemetry = tcp://host:port      ; required
 *   start = inferd serve ...         ; required; indented lines continue it
 *   layers = 0:8                     ; optional, layers [first, last)
 *   log = /var/log/inferd.log        ; optional
 *   pidfile = /run/inferd.pid        ; optional
 *   identity / known_hosts / accept_new   ; optional, override [cluster]
 *
 * Loading is all or nothing: the first problem is reported as
 * "FILE:LINE: [section] key `k`: what was expected" and nothing is returned.
 * Unknown sections and keys are errors, so a typo is never silently ignored.
 */
#ifndef CLUSTER_H
#define CLUSTER_H

#include <stddef.h>

#define CLUSTER_NAME_MAX 64
#define CLUSTER_HOST_MAX 256
#define CLUSTER_ENDPOINT_MAX 300
#define CLUSTER_PATH_MAX 1024
#define CLUSTER_START_MAX 4096

/* accept_new and the layer range are optional: these mark "not given". */
#define CLUSTER_UNSET (-1)

struct cluster_node {
    char name[CLUSTER_NAME_MAX];
    char ssh_user[CLUSTER_NAME_MAX]; /* "" = the user ~/.ssh/config or libssh picks */
    char ssh_host[CLUSTER_HOST_MAX]; /* without the brackets of an IPv6 literal */
    int ssh_port;                    /* 0 = from ~/.ssh/config, else 22 */
    char control[CLUSTER_ENDPOINT_MAX];
    char telemetry[CLUSTER_ENDPOINT_MAX];
    char start[CLUSTER_START_MAX];
    int layer_first, layer_last; /* [first, last), CLUSTER_UNSET when not given */
    char log[CLUSTER_PATH_MAX];
    char pidfile[CLUSTER_PATH_MAX];
    /* SSH trust settings: the node's own, else the [cluster] default, else "". */
    char identity[CLUSTER_PATH_MAX];
    char known_hosts[CLUSTER_PATH_MAX];
    int accept_new; /* 0/1, CLUSTER_UNSET = neither node nor [cluster] said */
    int line;       /* line of the [node NAME] header, for later messages */
};

struct cluster {
    char path[CLUSTER_PATH_MAX];
    char name[CLUSTER_NAME_MAX];
    int connect_timeout_s; /* [cluster] connect_timeout; 0 when not given */
    int n_nodes;
    struct cluster_node *nodes; /* in file order */
};

/* Picks the cluster file: `given` (from -c) when not NULL, else
 * ./infertop.conf, else $XDG_CONFIG_HOME/infertop/cluster.conf (with
 * ~/.config when XDG_CONFIG_HOME is unset or not absolute). The chosen
 * path goes to `path`. -1 when nothing is found; err lists where it looked. */
int cluster_locate(const char *given, char *path, size_t pathlen, char *err, size_t errlen);

/* Parses and validates `path`. On success *out owns a new cluster. */
int cluster_load(const char *path, struct cluster **out, char *err, size_t errlen);

void cluster_free(struct cluster *c);

/* The node named `name`, or NULL. */
const struct cluster_node *cluster_node_find(const struct cluster *c, const char *name);

#endif
