/* sshconn.c: connect, verify the host key, authenticate, run commands.
 * See sshconn.h for the rules; the comments here say why each step is
 * done the way it is. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include "sshconn.h"

#define DEFAULT_TIMEOUT_MS 5000
#define POLL_MS 100

struct sshconn {
    ssh_session s;
    char label[400];
};

/* "~/x" with the local $HOME (libssh leaves "~" in a path as it is);
 * other paths as they are. -1 when too long. */
static int expand_home(const char *path, char *out, size_t outlen)
{
    const char *home = getenv("HOME");
    int n;
    if (strncmp(path, "~/", 2) == 0 && home && *home)
        n = snprintf(out, outlen, "%s/%s", home, path + 2);
    else
        n = snprintf(out, outlen, "%s", path);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* "SHA256:base64", as ssh-keygen -l and OpenSSH's messages print it. */
static void key_fingerprint(ssh_key key, char *out, size_t outlen)
{
    unsigned char *hash = NULL;
    size_t hlen = 0;
    char *fp = NULL;
    if (key && ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) == 0)
        fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
    snprintf(out, outlen, "%s", fp ? fp : "(no fingerprint)");
    ssh_string_free_char(fp);
    ssh_clean_pubkey_hash(&hash);
}

/* ---- options ------------------------------------------------------------ */

/* The cluster file's values are set after ~/.ssh/config is read, so that
 * they win over it, as ssh(1)'s command-line options do. */
static int apply_options(ssh_session s, const sshconn_target *t, char *err, size_t errlen)
{
    char path[4096];
    if (ssh_options_set(s, SSH_OPTIONS_HOST, t->host) != 0) {
        snprintf(err, errlen, "host '%s': %s", t->host, ssh_get_error(s));
        return -1;
    }
    if (ssh_options_parse_config(s, t->ssh_config) != 0) {
        snprintf(err, errlen, "reading %s: %s", t->ssh_config ? t->ssh_config : "~/.ssh/config",
                 ssh_get_error(s));
        return -1;
    }
    if (t->user && *t->user && ssh_options_set(s, SSH_OPTIONS_USER, t->user) != 0) {
        snprintf(err, errlen, "user '%s': %s", t->user, ssh_get_error(s));
        return -1;
    }
    if (t->port > 0) {
        unsigned int port = (unsigned int)t->port;
        ssh_options_set(s, SSH_OPTIONS_PORT, &port);
    }
    if (t->known_hosts && *t->known_hosts) {
        if (expand_home(t->known_hosts, path, sizeof path) != 0 ||
            ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, path) != 0) {
            snprintf(err, errlen, "known_hosts '%s': path too long or invalid", t->known_hosts);
            return -1;
        }
    }
    /* The timeout bounds the TCP connect and every blocking wait of the
     * handshake (banner, key exchange), so a host that accepts and never
     * answers fails like one that does not accept. */
    int ms = t->timeout_ms > 0 ? t->timeout_ms : DEFAULT_TIMEOUT_MS;
    long sec = ms / 1000, usec = (long)(ms % 1000) * 1000;
    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &sec);
    ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &usec);
    /* Never prompt: no password or keyboard-interactive, even if
     * ~/.ssh/config enables them. */
    int no = 0;
    ssh_options_set(s, SSH_OPTIONS_PASSWORD_AUTH, &no);
    ssh_options_set(s, SSH_OPTIONS_KBDINT_AUTH, &no);
    return 0;
}

static void make_label(sshconn *c)
{
    char *user = NULL, *host = NULL;
    unsigned int port = 0;
    ssh_options_get(c->s, SSH_OPTIONS_USER, &user);
    ssh_options_get(c->s, SSH_OPTIONS_HOST, &host);
    ssh_options_get_port(c->s, &port);
    snprintf(c->label, sizeof c->label, "%s@%s:%u", user ? user : "?", host ? host : "?", port);
    ssh_string_free_char(user);
    ssh_string_free_char(host);
}

/* ---- host key ----------------------------------------------------------- */

static const char *known_hosts_path(ssh_session s, char *buf, size_t buflen)
{
    char *p = NULL;
    if (ssh_options_get(s, SSH_OPTIONS_KNOWNHOSTS, &p) == 0 && p) {
        snprintf(buf, buflen, "%s", p);
        ssh_string_free_char(p);
    } else {
        snprintf(buf, buflen, "~/.ssh/known_hosts");
    }
    return buf;
}

/* The fingerprint recorded for this host and key type, for the "changed"
 * message. libssh reports CHANGED without the entry, so the file is read
 * again here, line by line, with libssh's own matcher (which knows hashed
 * names and the [host]:port form). */
static void expected_fingerprint(ssh_session s, const char *kh, enum ssh_keytypes_e type, char *out,
                                 size_t outlen)
{
    char *host = NULL, hostport[300], *line = NULL;
    unsigned int port = 22;
    size_t cap = 0;
    snprintf(out, outlen, "(no readable entry)");
    ssh_options_get(s, SSH_OPTIONS_HOST, &host);
    ssh_options_get_port(s, &port);
    if (port == 22)
        snprintf(hostport, sizeof hostport, "%s", host ? host : "");
    else
        snprintf(hostport, sizeof hostport, "[%s]:%u", host ? host : "", port);
    ssh_string_free_char(host);
    FILE *f = fopen(kh, "r");
    while (f && getline(&line, &cap, f) > 0) {
        struct ssh_knownhosts_entry *e = NULL;
        line[strcspn(line, "\r\n")] = '\0';
        int found = ssh_known_hosts_parse_line(hostport, line, &e) == SSH_OK && e && e->publickey &&
                    ssh_key_type(e->publickey) == type;
        if (found)
            key_fingerprint(e->publickey, out, outlen);
        ssh_knownhosts_entry_free(e);
        if (found)
            break;
    }
    free(line);
    if (f)
        fclose(f);
}

static int verify_host(sshconn *c, int accept_new, char *err, size_t errlen)
{
    ssh_key key = NULL;
    char offered[128], expected[128], kh[2048];
    if (ssh_get_server_publickey(c->s, &key) != SSH_OK) {
        snprintf(err, errlen, "%s: no host key: %s", c->label, ssh_get_error(c->s));
        return -1;
    }
    key_fingerprint(key, offered, sizeof offered);
    enum ssh_keytypes_e ktype = ssh_key_type(key);
    const char *type = ssh_key_type_to_char(ktype);
    ssh_key_free(key);
    known_hosts_path(c->s, kh, sizeof kh);

    switch (ssh_session_is_known_server(c->s)) {
    case SSH_KNOWN_HOSTS_OK:
        return 0;
    case SSH_KNOWN_HOSTS_CHANGED:
        expected_fingerprint(c->s, kh, ktype, expected, sizeof expected);
        snprintf(err, errlen,
                 "%s: HOST KEY CHANGED, refusing to connect: %s records %s, the server offers "
                 "%s %s (someone may be intercepting the connection, or the host was "
                 "reinstalled: check, then remove the old line from %s)",
                 c->label, kh, expected, type, offered, kh);
        return -1;
    case SSH_KNOWN_HOSTS_OTHER:
        snprintf(err, errlen,
                 "%s: refusing to connect: %s records a key of another type for this host, "
                 "the server offers %s %s (check the host, then update %s)",
                 c->label, kh, type, offered, kh);
        return -1;
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
        if (!accept_new) {
            snprintf(err, errlen,
                     "%s: unknown host key %s %s, not in %s: refusing to connect (check the "
                     "fingerprint, then use --accept-new or accept_new = yes to record it)",
                     c->label, type, offered, kh);
            return -1;
        }
        if (ssh_session_update_known_hosts(c->s) != SSH_OK) {
            snprintf(err, errlen, "%s: cannot record the host key in %s: %s", c->label, kh,
                     ssh_get_error(c->s));
            return -1;
        }
        return 0;
    case SSH_KNOWN_HOSTS_ERROR:
    default:
        snprintf(err, errlen, "%s: cannot check the host key against %s: %s", c->label, kh,
                 ssh_get_error(c->s));
        return -1;
    }
}

/* ---- authentication ----------------------------------------------------- */

static void methods_text(int m, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s%s%s%s", m & SSH_AUTH_METHOD_PUBLICKEY ? " publickey" : "",
             m & SSH_AUTH_METHOD_PASSWORD ? " password" : "",
             m & SSH_AUTH_METHOD_INTERACTIVE ? " keyboard-interactive" : "",
             m & SSH_AUTH_METHOD_HOSTBASED ? " hostbased" : "",
             m & SSH_AUTH_METHOD_GSSAPI_MIC ? " gssapi-with-mic" : "");
    if (!*out)
        snprintf(out, outlen, " none");
}

/* The configured identity file; 1 = accepted, 0 = refused, -1 = error. */
static int auth_identity(sshconn *c, const char *identity, char *tried, size_t triedlen, char *err,
                         size_t errlen)
{
    char path[4096], fp[128];
    ssh_key key = NULL;
    if (expand_home(identity, path, sizeof path) != 0) {
        snprintf(err, errlen, "identity '%s': path too long", identity);
        return -1;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, errlen, "identity %s: %s", path, strerror(errno));
        return -1;
    }
    /* No passphrase and no callback: an encrypted key is refused here
     * rather than prompted for; it belongs in ssh-agent. */
    if (ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key) != SSH_OK) {
        snprintf(err, errlen,
                 "identity %s: cannot load it (not a private key, or protected by a "
                 "passphrase: add it to ssh-agent instead)",
                 path);
        return -1;
    }
    key_fingerprint(key, fp, sizeof fp);
    int rc = ssh_userauth_publickey(c->s, NULL, key);
    ssh_key_free(key);
    snprintf(tried, triedlen, "identity %s (%s), ", path, fp);
    if (rc == SSH_AUTH_ERROR) {
        snprintf(err, errlen, "%s: authentication error: %s", c->label, ssh_get_error(c->s));
        return -1;
    }
    return rc == SSH_AUTH_SUCCESS;
}

static int authenticate(sshconn *c, const char *identity, char *err, size_t errlen)
{
    char offered[128], tried[4400] = "";
    int rc = ssh_userauth_none(c->s, NULL);
    if (rc == SSH_AUTH_SUCCESS)
        return 0;
    if (rc == SSH_AUTH_ERROR) {
        snprintf(err, errlen, "%s: authentication error: %s", c->label, ssh_get_error(c->s));
        return -1;
    }
    int methods = ssh_userauth_list(c->s, NULL);
    methods_text(methods, offered, sizeof offered);
    if (!(methods & SSH_AUTH_METHOD_PUBLICKEY)) {
        snprintf(err, errlen,
                 "%s: authentication failed: the server offers only%s; infertop never asks for "
                 "or stores passwords: authorize a key (ssh-copy-id) and use the agent or "
                 "identity",
                 c->label, offered);
        return -1;
    }
    if (identity && *identity) {
        rc = auth_identity(c, identity, tried, sizeof tried, err, errlen);
        if (rc != 0)
            return rc > 0 ? 0 : -1;
    }
    /* The agent (when SSH_AUTH_SOCK is set), then ~/.ssh/config's
     * IdentityFile and the default ~/.ssh/id_* keys. */
    rc = ssh_userauth_publickey_auto(c->s, NULL, NULL);
    if (rc == SSH_AUTH_SUCCESS)
        return 0;
    if (rc == SSH_AUTH_PARTIAL) {
        methods_text(ssh_userauth_list(c->s, NULL), offered, sizeof offered);
        snprintf(err, errlen,
                 "%s: authentication failed: the key was accepted but the server also "
                 "requires%s, which infertop does not use",
                 c->label, offered);
        return -1;
    }
    snprintf(err, errlen,
             "%s: authentication failed: the server refused %sthe agent's keys and the default "
             "keys (methods offered:%s)",
             c->label, tried, offered);
    return -1;
}

/* ---- connection --------------------------------------------------------- */

int sshconn_open(const sshconn_target *t, sshconn **out, char *err, size_t errlen)
{
    *out = NULL;
    sshconn *c = calloc(1, sizeof *c);
    if (!c || !(c->s = ssh_new())) {
        snprintf(err, errlen, "out of memory for an SSH session");
        free(c);
        return -1;
    }
    if (apply_options(c->s, t, err, errlen) != 0) {
        sshconn_close(c);
        return -1;
    }
    make_label(c);
    if (ssh_connect(c->s) != SSH_OK) {
        const char *why = ssh_get_error(c->s);
        snprintf(err, errlen, "%s: cannot connect: %s", c->label, *why ? why : "timed out");
        sshconn_close(c);
        return -1;
    }
    if (verify_host(c, t->accept_new, err, errlen) != 0 ||
        authenticate(c, t->identity, err, errlen) != 0) {
        sshconn_close(c);
        return -1;
    }
    *out = c;
    return 0;
}

void sshconn_close(sshconn *c)
{
    if (!c)
        return;
    if (ssh_is_connected(c->s))
        ssh_disconnect(c->s);
    ssh_free(c->s);
    free(c);
}

int sshconn_alive(const sshconn *c)
{
    return c && ssh_is_connected(c->s);
}

/* ---- commands ----------------------------------------------------------- */

/* How the remote command ended: the exit-signal message carries a name
 * ("TERM"), which becomes the shell's 128 + number. */
typedef struct exec_end {
    int signal;
} exec_end;

static void on_exit_signal(ssh_session s, ssh_channel ch, const char *name, int core,
                           const char *msg, const char *lang, void *userdata)
{
    (void)s, (void)ch, (void)core, (void)msg, (void)lang;
    exec_end *end = userdata;
    for (int sig = 1; sig < NSIG; sig++) {
        const char *abbrev = sigabbrev_np(sig);
        if (abbrev && strcmp(abbrev, name) == 0) {
            end->signal = sig;
            return;
        }
    }
    end->signal = SIGTERM;
}

/* Drains what is buffered on one stream; 1 when something was read, 0
 * when nothing, -1 on a channel error, SSHCONN_STOPPED when io said so. */
static int drain(ssh_channel ch, int is_stderr, const sshconn_io *io)
{
    char buf[16384];
    int got = 0;
    for (;;) {
        int n = ssh_channel_read_nonblocking(ch, buf, sizeof buf, is_stderr);
        if (n == SSH_ERROR)
            return -1;
        if (n <= 0)
            return got;
        got = 1;
        if (io && io->output && io->output(io->ctx, is_stderr ? 2 : 1, buf, (size_t)n) != 0)
            return SSHCONN_STOPPED;
    }
}

/* Ends a command early: TERM to the remote process, so a `tail -F` does
 * not outlive its reader. sshd refuses signals for some sessions (root
 * logins); the channel is closed right after anyway, and the command then
 * ends at its next write, as it would under ssh(1). */
static void abandon(ssh_channel ch)
{
    ssh_channel_request_send_signal(ch, "TERM");
}

static int pump(sshconn *c, ssh_channel ch, int deadline_ms, const sshconn_io *io, char *err,
                size_t errlen)
{
    double deadline = deadline_ms > 0 ? now_ms() + deadline_ms : 0;
    for (;;) {
        if (io && io->cancelled && io->cancelled(io->ctx)) {
            abandon(ch);
            return SSHCONN_STOPPED;
        }
        int a = drain(ch, 0, io), b = a < 0 ? a : drain(ch, 1, io);
        if (a == SSHCONN_STOPPED || b == SSHCONN_STOPPED) {
            abandon(ch);
            return SSHCONN_STOPPED;
        }
        if (a < 0 || b < 0) {
            snprintf(err, errlen, "%s: reading output: %s", c->label, ssh_get_error(c->s));
            return -1;
        }
        if (!a && !b && ssh_channel_is_eof(ch))
            return 0;
        if (deadline && now_ms() >= deadline) {
            abandon(ch);
            snprintf(err, errlen, "%s: the command did not finish within %d ms", c->label,
                     deadline_ms);
            return -1;
        }
        if (!a && !b && ssh_channel_poll_timeout(ch, POLL_MS, 0) == SSH_ERROR) {
            snprintf(err, errlen, "%s: connection lost: %s", c->label, ssh_get_error(c->s));
            return -1;
        }
    }
}

int sshconn_exec(sshconn *c, const char *command, int deadline_ms, const sshconn_io *io,
                 int *exit_status, char *err, size_t errlen)
{
    exec_end end = {0};
    struct ssh_channel_callbacks_struct cb = {
        .userdata = &end,
        .channel_exit_signal_function = on_exit_signal,
    };
    ssh_callbacks_init(&cb);
    ssh_channel ch = ssh_channel_new(c->s);
    if (!ch || ssh_channel_open_session(ch) != SSH_OK) {
        snprintf(err, errlen, "%s: cannot open a channel: %s", c->label, ssh_get_error(c->s));
        ssh_channel_free(ch);
        return SSHCONN_NOT_STARTED;
    }
    ssh_set_channel_callbacks(ch, &cb);
    if (ssh_channel_request_exec(ch, command) != SSH_OK) {
        snprintf(err, errlen, "%s: cannot run a command: %s", c->label, ssh_get_error(c->s));
        ssh_channel_free(ch);
        return SSHCONN_NOT_STARTED;
    }
    int rc = pump(c, ch, deadline_ms, io, err, errlen);
    if (rc == 0) {
        ssh_channel_send_eof(ch);
        int status = ssh_channel_get_exit_status(ch);
        *exit_status = status >= 0 ? status : end.signal ? 128 + end.signal : 255;
    }
    ssh_channel_close(ch);
    ssh_channel_free(ch);
    return rc;
}
