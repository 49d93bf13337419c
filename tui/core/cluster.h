/* cluster.h: the cluster file, the operator's description of the nodes.
 *
 * An INI file (parsed with inih). A node section says what the node is,
 * once, and infertop derives the rest (contrib/cluster.example.conf):
 *
 *   [cluster]
 *   name = ring                      ; optional, default "cluster"
 *   base_port = 5555                 ; ports of nodes without `port` (below)
 *   model = synth:1b                 ; defaults for every node: model, inferd,
 *   inferd = /usr/local/bin/inferd   ;   threads, mem_limit, kv_bits,
 *                                    ;   prefill_step, flags
 *   identity = ~/.ssh/id_ed25519     ; defaults for every node's SSH session
 *   known_hosts = ~/.ssh/known_hosts
 *   accept_new = no
 *   connect_timeout = 5              ; seconds an SSH connect may take, 1..600
 *
 *   [node a]                         ; one section per node, in ring order
 *   host = 10.0.0.11                 ; where its sockets are
 *   port = 5555                      ; control, telemetry = port + 1, ring input = port + 2
 *   ssh = ops@10.0.0.11              ; optional; `ops@` alone: that user on `host`
 *   model = /models/7b.bin           ; `inferd serve --model` on that node
 *   layers = 0:8                     ; layers [first, last)
 *   threads = 8
 *   mem_limit = 24G                  ; bytes, K/M/G/T suffixes (powers of 1024)
 *   kv_bits = 8                      ; prefill_step too: `inferd serve`'s values
 *   flags = --kv-bits 8              ; more `inferd serve` arguments; may continue
 *   log = /var/log/inferd.log        ; optional
 *   pidfile = /run/inferd.pid        ; optional
 *   identity / known_hosts / accept_new   ; optional, override [cluster]
 *   local = yes                      ; on this machine: no SSH to start, stop,
 *                                    ;   read its log (default: yes for a
 *                                    ;   loopback `host` without `ssh`)
 *
 * Without `port`, a node takes [cluster] base_port + 3 x (the number of
 * nodes before it on the same host). Its `inferd serve` command line is
 * derived from these keys, with the ring wired in section order: each
 * node's --next is the following node's ring input, the last one's the
 * first's (cluster_node_command).
 *
 * The first form of the file is read as before: `control` and `telemetry`
 * endpoints given whole, and `start`, the command line run over SSH
 * (indented lines continue it). Either may also override what the second
 * form derives. `ssh` is optional in both: a node without it is watched and
 * configured; a local node is started, stopped and its log read on this
 * machine, and on any other those operations say "no ssh configured".
 *
 * A node's ports (and the endpoints given whole) must lie outside the
 * kernel's ephemeral range (engine/sys/ports.h says why).
 *
 * A node may run another engine than inferd (`engine = llama.cpp`, vllm,
 * ollama or openai) and is then an HTTP server at `url` (required), with an
 * optional `api_key_file`; `ssh`, `start`, `model`, `mem_limit`, `kv_bits`,
 * `prefill_step`, `log` and `pidfile` keep their meaning, and the keys that
 * only mean something to inferd (`layers`, `port`, `control`, ...) are
 * refused on it. The ring is the inferd nodes, in file order.
 *
 * Each key's value is checked by its row of the settings table
 * (engine/proto/opt.h), which also gives the flag a derived command line
 * passes it with.
 *
 * Loading is all or nothing: the first problem is reported as
 * "FILE:LINE: [section] key `k`: what was expected" and nothing is returned.
 * Unknown sections and keys are errors, so a typo is never silently ignored.
 */
#ifndef CLUSTER_H
#define CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "alerts.h"
#include "cluster_ep.h" /* CLUSTER_HOST_MAX */
#include "tui/engine/engine.h"

#define CLUSTER_NAME_MAX 64
#define CLUSTER_ENDPOINT_MAX 300
#define CLUSTER_PATH_MAX 1024
#define CLUSTER_START_MAX 4096
#define CLUSTER_URL_MAX 256

/* accept_new and the layer range are optional: these mark "not given". */
#define CLUSTER_UNSET (-1)

struct cluster_node {
    char name[CLUSTER_NAME_MAX];
    char ssh_user[CLUSTER_NAME_MAX];      /* "" = the user ~/.ssh/config or libssh picks */
    char ssh_host[CLUSTER_HOST_MAX];      /* without IPv6 brackets; "" = no SSH target */
    int ssh_port;                         /* 0 = from ~/.ssh/config, else 22 */
    char control[CLUSTER_ENDPOINT_MAX];   /* given, else tcp://host:port */
    char telemetry[CLUSTER_ENDPOINT_MAX]; /* given, else tcp://host:(port + 1) */
    char listen[CLUSTER_ENDPOINT_MAX];    /* tcp://host:(port + 2); "" without host and port */
    /* The command line `nodes start` runs: `start` when given, else the
     * derived one, else "" (cluster_node_command says what is missing). */
    char start[CLUSTER_START_MAX];
    int start_given;               /* 1: from `start`, 0: derived (or none) */
    char host[CLUSTER_HOST_MAX];   /* without IPv6 brackets; "" when not given */
    int port;                      /* given, else from base_port; 0 when neither */
    char model[CLUSTER_PATH_MAX];  /* the node's, else [cluster]'s; "" = inferd's default */
    char inferd[CLUSTER_PATH_MAX]; /* the inferd binary on the node, default "inferd" */
    int threads;                   /* 0 = inferd's default */
    uint64_t mem_limit;            /* bytes; 0 = none (or auto) */
    int kv_bits, prefill_step;     /* when given (`given`): for --kv-bits, --prefill-step */
    char flags[CLUSTER_START_MAX]; /* [cluster]'s flags, then the node's */
    int layer_first, layer_last;   /* [first, last), CLUSTER_UNSET when not given */
    char log[CLUSTER_PATH_MAX];
    char pidfile[CLUSTER_PATH_MAX];
    /* SSH trust settings: the node's own, else the [cluster] default, else "". */
    char identity[CLUSTER_PATH_MAX];
    char known_hosts[CLUSTER_PATH_MAX];
    int accept_new; /* 0/1, CLUSTER_UNSET = neither node nor [cluster] said */
    /* 1: on this machine: started, stopped and its log read without SSH
     * (`local`, else a loopback `host` and no `ssh`). */
    int local;
    /* What it runs (`engine`, default inferd). Another engine is an HTTP
     * server at `url`: it has no control or telemetry endpoint, takes no
     * part in the ring, and starts only by its `start` line. */
    int engine;                /* eng_kind */
    char url[CLUSTER_URL_MAX]; /* base URL, "" when not given (an inferd node may give it) */
    char api_key_file[CLUSTER_PATH_MAX]; /* "" = no bearer token */
    int line;                            /* line of the [node NAME] header, for later messages */
    uint64_t given; /* a bit per key of cluster.c's table: given here or by [cluster] */
};

struct cluster {
    char path[CLUSTER_PATH_MAX];
    char name[CLUSTER_NAME_MAX];
    int connect_timeout_s;        /* [cluster] connect_timeout; 0 when not given */
    int base_port;                /* [cluster] base_port; 0 when not given */
    struct alert_settings alerts; /* [cluster] alert_*, else their defaults */
    int n_nodes;
    struct cluster_node *nodes; /* in file order */
};

/* Picks the cluster file: `given` (from -c) when not NULL, else
 * ./infertop.conf, else $XDG_CONFIG_HOME/infertop/cluster.conf (with
 * ~/.config when XDG_CONFIG_HOME is unset or not absolute). The chosen
 * path goes to `path`. -1 when nothing is found; err lists where it looked. */
int cluster_locate(const char *given, char *path, size_t pathlen, char *err, size_t errlen);
/* The user's cluster file, $XDG_CONFIG_HOME/infertop/cluster.conf (or
 * ~/.config/...), whether or not it exists; -1 without a home. */
int cluster_home_path(char *out, size_t outlen);

/* Parses and validates `path`. On success *out owns a new cluster. */
int cluster_load(const char *path, struct cluster **out, char *err, size_t errlen);

void cluster_free(struct cluster *c);

/* 1 when node i runs inferd (watched over ZeroMQ, part of the ring). */
int cluster_node_is_inferd(const struct cluster *c, int i);
/* The inferd nodes: the ring's size. */
int cluster_ring_size(const struct cluster *c);

/* The node named `name`, or NULL. */
const struct cluster_node *cluster_node_find(const struct cluster *c, const char *name);

/* The `inferd serve` command line of node index i, derived from its keys
 * (the form of cluster.h's top comment): binds on its own address when
 * `host` is numeric, else on every interface (`*`). -1 with err naming
 * the missing key when it cannot be derived (no host or port, no layers in
 * a ring of several nodes, a neighbour without a ring input). */
/* The unit form is the flag file of contrib/systemd/inferd@.service for
 * the node (/etc/inferd/NAME.conf): an option a line, without what the
 * unit adds itself (serve, --name, --log, --pidfile); -1 for a node with a
 * `start` line, or a value a flag file cannot hold (it has no quoting). */
typedef enum cluster_command_form {
    CLUSTER_COMMAND_LINE, /* a shell command line */
    CLUSTER_COMMAND_UNIT  /* the systemd unit's flag file */
} cluster_command_form;
int cluster_node_command(const struct cluster *c, int i, cluster_command_form form, char *buf,
                         size_t len, char *err, size_t errlen);

/* Where a node's log goes when the file names none: nodectl.h's default. */
#define CLUSTER_LOG_DEFAULT_DIR "~/.infertop"

#endif
