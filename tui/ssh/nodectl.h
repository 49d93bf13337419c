/* nodectl.h: what infertop does to a node over SSH: start, stop, restart,
 * status, logs, facts, exec. Each operation is one POSIX sh script run by
 * the node's login shell; every value from the cluster file is quoted
 * with nodectl_shquote, and the script answers in `key=value` lines that
 * the parsers below read. No curses, no threads: nodepool.h runs these
 * off the UI loop.
 *
 * Where the node's files are: the cluster file's `log` and `pidfile`, or
 * by default ~/.infertop/NAME.log and ~/.infertop/NAME.pid on the node
 * ("~/" in either means the remote $HOME).
 *
 *   start    refuses when the pidfile's process is alive; runs the `start`
 *            line detached (setsid, stdin from /dev/null, stdout and
 *            stderr appended to the log), writes the pidfile, and checks
 *            the process is still alive a second later. A node of an HTTP
 *            engine has started when its URL answers as ready (ewatch.h):
 *            until then, up to NODECTL_READY_S, the start waits, and fails
 *            at once with the log's end if the process exits meanwhile
 *   stop     SIGTERM to the process group the start made (an engine's
 *            workers with it: vLLM's engine core), up to `grace_s` seconds
 *            for the process to exit, then SIGKILL; verifies the process
 *            is gone and removes the pidfile. A node that is not running
 *            is stopped already: not an error.
 *   restart  stop, then start
 *   status   running or not, pid, uptime, the running binary's version
 *   logs     the last `lines` lines of the log; `follow` streams new ones
 *            until cancelled
 *   facts    cores, MemTotal, MemAvailable, load, OS, kernel, the inferd
 *            on the PATH and its version
 *   exec     any shell command; output streamed, exit status returned */
#ifndef NODECTL_H
#define NODECTL_H

#include <stdio.h>

#include "sshconn.h"
#include "tui/core/cluster.h"

/* How long a start waits for an HTTP engine's URL to answer: loading a
 * model (vLLM's compile and CUDA graphs too) may take minutes. */
#define NODECTL_READY_S 600

typedef enum nodectl_op {
    NODECTL_START,
    NODECTL_STOP,
    NODECTL_RESTART,
    NODECTL_STATUS,
    NODECTL_LOGS,
    NODECTL_FACTS,
    NODECTL_EXEC,
} nodectl_op;

typedef struct nodectl_req {
    nodectl_op op;
    int lines;           /* logs: how many lines; <= 0: nodes logs --lines' default */
    int follow;          /* logs: keep streaming until cancelled */
    int grace_s;         /* stop, restart: <= 0: nodes stop --grace's default */
    const char *command; /* exec: the shell command line */
    const char *start;   /* start, restart: this line instead of the node's `start`
                            (a set applied by restart, knobs.h); NULL: the node's */
} nodectl_req;

typedef struct nodectl_status {
    int running;
    long pid;          /* 0 when not running */
    long uptime_s;     /* -1 when unknown */
    char version[128]; /* `inferd --version` of the running binary, "" if unknown
                          or another engine (its watcher asks the engine) */
} nodectl_status;

typedef struct nodectl_facts {
    int cores;
    long long mem_total_kb, mem_available_kb;
    double load[3]; /* 1, 5 and 15 minutes */
    char os[128];   /* PRETTY_NAME of /etc/os-release */
    char kernel[128];
    char inferd_path[256]; /* "" when inferd is not on the PATH */
    char inferd_version[128];
} nodectl_facts;

typedef struct nodectl_result {
    int ok;
    int cancelled;         /* ended by the caller (logs -f, exec): ok stays 1 */
    char error[1024];      /* when !ok: what failed, in words */
    char detail[256];      /* when ok: what happened ("stopped pid 12 with SIGTERM"),
                              "" when the fields below say it all (status, facts) */
    int exit_status;       /* exec: the command's exit status; -1 otherwise */
    double took_s;         /* how long the operation took, waits for readiness included */
    nodectl_status status; /* start, restart, status */
    nodectl_facts facts;   /* facts */
} nodectl_result;

/* How infertop reaches a node to start, stop, or read its log: on this
 * machine (`local`, or a loopback `host`: no SSH), over SSH (its `ssh`
 * key), or not at all. */
enum { NODECTL_NONE, NODECTL_LOCAL, NODECTL_SSH };
int nodectl_reach(const struct cluster_node *n);
/* Why a node with neither cannot be: "node NAME: no ssh configured: ...". */
void nodectl_no_reach(const struct cluster_node *n, char *err, size_t errlen);
/* "on this machine" or "over SSH (user@host:port)", for the events pane. */
void nodectl_describe_reach(const struct cluster_node *n, char *buf, size_t len);

/* Opens an SSH connection to node n (its `ssh` target and trust
 * settings; ssh_config NULL: ~/.ssh/config; accept_new also when the node
 * says so). 0 with *out NULL for a local node, which needs none. -1 with
 * err naming the node when it has no `ssh` key, or what failed. */
int nodectl_connect(const struct cluster_node *n, const char *ssh_config, int accept_new,
                    int timeout_ms, sshconn **out, char *err, size_t errlen);

/* NODECTL_NOT_RUN: nothing was run because the connection is unusable;
 * the caller may reconnect and run the request again. */
enum { NODECTL_NOT_RUN = -2 };

/* Runs `req` on node `n` over `c` (NULL: on this machine, localexec.h). Output of logs and exec
 * goes to io as it arrives (io may be NULL for the other operations); io's `cancelled` ends a logs
 * or exec job, and a start's wait for readiness (the start itself stays done: ok, with `cancelled`
 * set). Returns 0 when the operation succeeded, -1 when it failed (r->error says why), or
 * NODECTL_NOT_RUN. */
int nodectl_run(sshconn *c, const struct cluster_node *n, const nodectl_req *req,
                const sshconn_io *io, nodectl_result *r);

const char *nodectl_op_name(nodectl_op op);
/* -1 when `name` is not an operation. */
int nodectl_op_parse(const char *name, nodectl_op *op);

/* Writes s as one POSIX sh word: single-quoted, each ' as '\''. */
int nodectl_shquote(FILE *out, const char *s);

/* The script run on the node for `req` (not for restart, which is a stop
 * and a start). Caller frees; NULL when out of memory. */
char *nodectl_script(const struct cluster_node *n, const nodectl_req *req);

/* Read the `key=value` answers of the status and facts scripts. Missing
 * keys keep their "unknown" values; -1 when the text has no answer at
 * all (no `running=` line, no `cores=` line). */
int nodectl_parse_status(const char *text, nodectl_status *st);
int nodectl_parse_facts(const char *text, nodectl_facts *f);

#endif
