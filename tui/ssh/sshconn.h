/* sshconn.h: one SSH connection to one node, over libssh, with OpenSSH's
 * rules of trust and no prompts.
 *
 *   - The target is [user@]host[:port] from the cluster file, resolved
 *     through ~/.ssh/config (Host aliases, HostName, User, Port,
 *     IdentityFile, UserKnownHostsFile); values given in the cluster file
 *     win over the config file, as command-line options do for ssh(1).
 *   - Host keys are checked as `StrictHostKeyChecking yes` does: a known,
 *     matching key passes; an unknown host is refused unless accept_new,
 *     then its key is recorded; a changed key is always refused, with the
 *     expected and the offered SHA256 fingerprints.
 *   - Authentication is by public key only: the SSH agent, the configured
 *     identity, then the default keys. Passwords are never asked for; a
 *     server that offers nothing but passwords gets an error saying so.
 *   - Every wait is bounded: the TCP connect, the banner and the key
 *     exchange by the connect timeout, a command by its own deadline.
 *
 * A connection is used by one thread at a time (the node's worker). */
#ifndef SSHCONN_H
#define SSHCONN_H

#include <stddef.h>

typedef struct sshconn sshconn;

typedef struct sshconn_target {
    const char *host;     /* host name, address or ~/.ssh/config alias */
    const char *user;     /* "" or NULL: from ~/.ssh/config, else the local user */
    int port;             /* 0: from ~/.ssh/config, else 22 */
    const char *identity; /* private key file ("~/" allowed); "" or NULL: defaults */
    const char
        *known_hosts;       /* "~/" allowed; "" or NULL: ~/.ssh/config's, else ~/.ssh/known_hosts */
    const char *ssh_config; /* NULL: ~/.ssh/config and /etc/ssh/ssh_config */
    int accept_new;         /* 1: record the key of a host seen for the first time */
    int timeout_ms;         /* connect + handshake bound; <= 0 means 5000 */
} sshconn_target;

/* Connects, verifies the host key and authenticates. On success *out owns
 * a new connection; on failure err says which stage failed and why. */
int sshconn_open(const sshconn_target *t, sshconn **out, char *err, size_t errlen);

void sshconn_close(sshconn *c);

/* 1 while the transport is up; 0 after the peer closed it or an error. */
int sshconn_alive(const sshconn *c);

/* Where a command's output goes while it runs. */
typedef struct sshconn_io {
    /* Called with each chunk of output; fd is 1 (stdout) or 2 (stderr).
     * Returning non-zero stops the command. */
    int (*output)(void *ctx, int fd, const char *data, size_t n);
    /* Polled about every 100 ms and between chunks (may be NULL): non-zero
     * stops the command, e.g. the operator ended a `logs -f`. */
    int (*cancelled)(void *ctx);
    void *ctx;
} sshconn_io;

enum {
    SSHCONN_STOPPED = -2,     /* io said stop: not an error of the node */
    SSHCONN_NOT_STARTED = -3, /* the command never ran: the connection is unusable */
};

/* Runs `command` with the remote user's login shell, streaming its output
 * to io, until it exits, io stops it, or deadline_ms passes (0: no
 * deadline). Returns 0 with *exit_status set (the remote exit code, or
 * 128 + signal number when a signal ended it), SSHCONN_STOPPED, -1 with
 * err filled (the deadline passed, or the connection failed while the
 * command ran), or SSHCONN_NOT_STARTED with err filled (the channel could
 * not be opened: the caller may reconnect and try again). */
int sshconn_exec(sshconn *c, const char *command, int deadline_ms, const sshconn_io *io,
                 int *exit_status, char *err, size_t errlen);

#endif
