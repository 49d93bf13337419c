/* cluster.c: loading and validating the cluster file.
 *
 * inih does the INI syntax; this file gives each key its meaning. inih's
 * handler does not receive line numbers, so the loader reads the file
 * through its own line reader (ini_parse_stream), which counts lines, opens
 * sections as their header goes by, and knows whether a line is indented
 * (inih treats an indented line as the continuation of the previous key).
 */
#include "cluster.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cluster_ep.h"
#include "engine/proto/opt.h"
#include "shellword.h"

/* How the loader stores a key's value once the table's row has checked it. */
enum dest {
    D_TEXT,     /* a text member */
    D_INT,      /* an integer member (int or uint64_t, by its size) */
    D_SSH,      /* [user@]host[:port] */
    D_ENDPOINT, /* tcp://host:port the console connects to */
    D_LAYERS,
    D_BOOL,
    D_SECONDS, /* the cluster's connect_timeout */
    D_HOST,
    D_URL,   /* http://host[:port][/path] of an HTTP node */
    D_ALERT, /* a threshold of the console's alerts (alerts.h) */
    D_RING   /* not a key: derived from the ring (--listen, --next) */
};

/* Where a key may appear. */
#define IN_CLUSTER 1u
#define IN_NODE 2u

/* What the cluster file adds to a row of the settings table (opt.h),
 * whose key names it, whose type and range check its value and whose flag
 * the derived command line passes it with. */
struct key {
    opt_id id;
    unsigned where;
    int continues; /* indented lines continue its value */
    enum dest dest;
    size_t off, size; /* its member of struct cluster_node, or 0 */
    int unit_adds;    /* the systemd unit passes this flag itself */
};

#define FIELD(f) offsetof(struct cluster_node, f), sizeof(((struct cluster_node *)0)->f)

/* In the order of the derived command line. [cluster] is read into a node
 * record too: its `name` is the cluster's name and its other keys become
 * every node's defaults. */
static const struct key keys[] = {
    {OPT_NAME, IN_CLUSTER, 0, D_TEXT, FIELD(name), 1},
    {OPT_MODEL, IN_CLUSTER | IN_NODE, 0, D_TEXT, FIELD(model), 0},
    {OPT_LAYERS, IN_NODE, 0, D_LAYERS, 0, 0, 0},
    {OPT_CONTROL, IN_NODE, 0, D_ENDPOINT, FIELD(control), 0},
    {OPT_TELEMETRY, IN_NODE, 0, D_ENDPOINT, FIELD(telemetry), 0},
    {OPT_LISTEN, 0, 0, D_RING, FIELD(listen), 0},
    {OPT_NEXT, 0, 0, D_RING, 0, 0, 0},
    {OPT_THREADS, IN_CLUSTER | IN_NODE, 0, D_INT, FIELD(threads), 0},
    {OPT_MEM_LIMIT, IN_CLUSTER | IN_NODE, 0, D_INT, FIELD(mem_limit), 0},
    {OPT_KV_BITS, IN_CLUSTER | IN_NODE, 0, D_INT, FIELD(kv_bits), 0},
    {OPT_PREFILL_STEP, IN_CLUSTER | IN_NODE, 0, D_INT, FIELD(prefill_step), 0},
    {OPT_LOG, IN_NODE, 0, D_TEXT, FIELD(log), 1},
    {OPT_PIDFILE, IN_NODE, 0, D_TEXT, FIELD(pidfile), 1},
    {OPT_CF_FLAGS, IN_CLUSTER | IN_NODE, 1, D_TEXT, FIELD(flags), 0},
    {OPT_CF_SSH, IN_NODE, 0, D_SSH, 0, 0, 0},
    {OPT_CF_START, IN_NODE, 1, D_TEXT, FIELD(start), 0},
    {OPT_CF_IDENTITY, IN_CLUSTER | IN_NODE, 0, D_TEXT, FIELD(identity), 0},
    {OPT_CF_KNOWN_HOSTS, IN_CLUSTER | IN_NODE, 0, D_TEXT, FIELD(known_hosts), 0},
    {OPT_CF_ACCEPT_NEW, IN_CLUSTER | IN_NODE, 0, D_BOOL, FIELD(accept_new), 0},
    {OPT_CF_LOCAL, IN_NODE, 0, D_BOOL, FIELD(local), 0},
    {OPT_CF_CONNECT_TIMEOUT, IN_CLUSTER, 0, D_SECONDS, 0, 0, 0},
    {OPT_CF_HOST, IN_NODE, 0, D_HOST, FIELD(host), 0},
    {OPT_CF_PORT, IN_NODE, 0, D_INT, FIELD(port), 0},
    {OPT_CF_BASE_PORT, IN_CLUSTER, 0, D_INT, FIELD(port), 0},
    {OPT_CF_INFERD, IN_CLUSTER | IN_NODE, 0, D_TEXT, FIELD(inferd), 0},
    {OPT_CF_ENGINE, IN_CLUSTER | IN_NODE, 0, D_INT, FIELD(engine), 0},
    {OPT_CF_URL, IN_NODE, 0, D_URL, FIELD(url), 0},
    {OPT_CF_API_KEY_FILE, IN_CLUSTER | IN_NODE, 0, D_TEXT, FIELD(api_key_file), 0},
    {OPT_ALERT_QUEUE_S, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
    {OPT_ALERT_TTFT_MS, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
    {OPT_ALERT_EVAL_RATIO, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
    {OPT_ALERT_EVAL_FLOOR_MS, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
    {OPT_ALERT_HOLD, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
    {OPT_ALERT_BUSY_PCT, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
    {OPT_ALERT_HEADROOM_PCT, IN_CLUSTER, 0, D_ALERT, 0, 0, 0},
};
#define N_KEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(sizeof keys / sizeof keys[0] <= 64, "struct cluster_node's given has a bit per key");

/* Key ki's bit of struct cluster_node's given. */
static uint64_t key_bit(int ki)
{
    return (uint64_t)1 << ki;
}

static int command_missing(const struct cluster *c, int i, char *err, size_t errlen);

enum section { SEC_NONE, SEC_CLUSTER, SEC_NODE };

struct loader {
    FILE *fp;
    const char *path;
    int lineno;
    int indented; /* the line being parsed starts with white space */
    enum section sec;
    int sec_line;
    int last_key;     /* keys[] index of the previous key, for continuations */
    int cluster_seen; /* a [cluster] section was already read */
    struct cluster_node defaults;
    int connect_timeout_s;
    struct alert_settings alerts;
    struct cluster *c;
    int cap;
    int failed;
    char why[512]; /* a value's problem when it has figures in it */
    char *err;
    size_t errlen;
};

/* Records the first error only: later ones are usually its consequences. */
static void fail(struct loader *ld, int line, const char *fmt, ...)
{
    if (ld->failed)
        return;
    ld->failed = 1;
    int n = line > 0 ? snprintf(ld->err, ld->errlen, "%s:%d: ", ld->path, line)
                     : snprintf(ld->err, ld->errlen, "%s: ", ld->path);
    if (n < 0 || (size_t)n >= ld->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ld->err + n, ld->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static struct cluster_node *current_record(struct loader *ld)
{
    if (ld->sec == SEC_CLUSTER)
        return &ld->defaults;
    return &ld->c->nodes[ld->c->n_nodes - 1];
}

static const char *section_label(struct loader *ld, char *buf, size_t len)
{
    if (ld->sec == SEC_CLUSTER)
        snprintf(buf, len, "[cluster]");
    else
        snprintf(buf, len, "[node %s]", current_record(ld)->name);
    return buf;
}

/* ---- values ---------------------------------------------------------- */

static int bad(const char **why, const char *what)
{
    *why = what;
    return -1;
}

/* "[user@]host[:port]", or "user@" / "user@:port" for that user on the
 * node's `host` (filled in by resolve_node once every key is read). */
static int set_ssh(struct cluster_node *n, const char *v, const char **why)
{
    const char *at = strchr(v, '@');
    const char *hostpart = v;
    n->ssh_user[0] = '\0';
    if (at) {
        size_t len = (size_t)(at - v);
        if (len == 0)
            return bad(why, "the user before '@' is empty");
        if (len >= sizeof n->ssh_user)
            return bad(why, "the user name is too long");
        memcpy(n->ssh_user, v, len);
        n->ssh_user[len] = '\0';
        hostpart = at + 1;
    }
    if (at && (*hostpart == '\0' || *hostpart == ':')) {
        n->ssh_host[0] = '\0';
        n->ssh_port = 0;
        if (*hostpart == ':' && cluster_ep_port(hostpart + 1, &n->ssh_port) < 0)
            return bad(why, "the port must be a number from 1 to 65535");
        return 0;
    }
    return cluster_ep_host_port(hostpart, n->ssh_host, sizeof n->ssh_host, &n->ssh_port, why);
}

/* A host without a port: a name, an address, or an IPv6 address with or
 * without brackets. */
static int set_host(struct cluster_node *n, const char *v, const char **why)
{
    size_t len = strlen(v);
    const char *h = v;
    if (*v == '[') {
        if (len < 3 || v[len - 1] != ']')
            return bad(why, "an IPv6 address needs its closing ']'");
        h = v + 1;
        len -= 2;
    }
    if (len >= sizeof n->host)
        return bad(why, "the host name is too long");
    int colons = 0;
    for (size_t i = 0; i < len; i++) {
        colons += h[i] == ':';
        if (isspace((unsigned char)h[i]) || strchr("[]/@", h[i]))
            return bad(why, "expected a host name or address, without a port or a user");
    }
    if (colons == 1) /* host:port; an IPv6 address has at least two */
        return bad(why, "expected a host name or address, without a port or a user");
    memcpy(n->host, h, len);
    n->host[len] = '\0';
    return 0;
}

static int set_text(char *field, size_t size, const char *v, const char **why)
{
    if (*v == '\0')
        return bad(why, "the value is empty");
    if (strlen(v) >= size)
        return bad(why, "the value is too long");
    strcpy(field, v);
    return 0;
}

/* Two nodes on one endpoint would read each other's telemetry. */
static int endpoint_taken(struct loader *ld, const char *v)
{
    for (int i = 0; i < ld->c->n_nodes - 1; i++) {
        const struct cluster_node *o = &ld->c->nodes[i];
        if (strcmp(o->control, v) == 0 || strcmp(o->telemetry, v) == 0)
            return 1;
    }
    return 0;
}

static void store_int(void *member, size_t size, unsigned long long v)
{
    if (size == sizeof(uint64_t)) {
        uint64_t x = v;
        memcpy(member, &x, size);
    } else {
        int x = (int)v;
        memcpy(member, &x, size);
    }
}

static unsigned long long load_int(const void *member, size_t size)
{
    if (size == sizeof(uint64_t)) {
        uint64_t x;
        memcpy(&x, member, size);
        return x;
    }
    int x;
    memcpy(&x, member, size);
    return (unsigned long long)x;
}

/* Stores v, which k's row has checked (as val), where k's destination
 * wants it, after the checks only the console needs. */
static int set_value(struct loader *ld, const struct key *k, struct cluster_node *n, const char *v,
                     const opt_value *val, const char **why)
{
    char *member = (char *)n + k->off;
    switch (k->dest) {
    case D_SSH:
        return set_ssh(n, v, why);
    case D_HOST:
        return set_host(n, v, why);
    case D_LAYERS:
        n->layer_first = (int)val->i;
        n->layer_last = (int)val->i2;
        return 0;
    case D_BOOL: /* yes|no|true|false|on|off|1|0: the even ones say yes */
        store_int(member, k->size, val->i % 2 == 0);
        return 0;
    case D_SECONDS:
        ld->connect_timeout_s = (int)val->i;
        return 0;
    case D_ALERT:
        return alerts_set(&ld->alerts, k->id, val);
    case D_INT:
        store_int(member, k->size, val->i);
        return 0;
    case D_ENDPOINT:
        if (cluster_ep_check(v, ld->why, sizeof ld->why, why) < 0)
            return -1;
        if (endpoint_taken(ld, v))
            return bad(why, "another node already uses it");
        break;
    case D_URL:
        if (cluster_ep_check_url(v, why) < 0)
            return -1;
        break;
    case D_TEXT:
    case D_RING:
        break;
    }
    if (k->id == OPT_CF_START)
        n->start_given = 1;
    return set_text(member, k->size, v, why);
}

/* inih calls this again for each indented line after a key: only command
 * lines (`start`, `flags`) may grow that way, so that they stay readable. */
static int continue_value(const struct key *k, struct cluster_node *n, const char *v,
                          const char **why)
{
    if (!k->continues)
        return bad(why, "an indented line continues the key above it, and only `start` and "
                        "`flags` may continue (remove the indentation)");
    char *field = (char *)n + k->off;
    size_t have = strlen(field);
    if (have + 1 + strlen(v) >= k->size)
        return bad(why, "the command is too long");
    field[have] = ' ';
    strcpy(field + have + 1, v);
    return 0;
}

static int find_key(const char *name)
{
    for (int i = 0; i < N_KEYS; i++)
        if (keys[i].where && strcmp(opt_defs[keys[i].id].key, name) == 0)
            return i;
    return -1;
}

/* Checks v by k's row, then stores it. Words of a choice (yes, no) are
 * read in any case. */
static int check_and_set(struct loader *ld, const struct key *k, struct cluster_node *n,
                         const char *v, char *why_buf, size_t why_len, const char **why)
{
    char folded[16];
    const char *text = v;
    if (opt_defs[k->id].type == OPT_T_CHOICE && strlen(v) < sizeof folded) {
        for (size_t i = 0; i <= strlen(v); i++)
            folded[i] = (char)tolower((unsigned char)v[i]);
        text = folded;
    }
    opt_value val = {0};
    if (opt_check_text(k->id, text, &val, why_buf, why_len) != 0) {
        *why = why_buf;
        return -1;
    }
    return set_value(ld, k, n, v, &val, why);
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    struct loader *ld = user;
    char label[CLUSTER_NAME_MAX + 16], why_buf[256];
    const char *why = NULL;
    (void)section; /* the reader opened it already, with its line number */
    if (ld->failed)
        return 0;
    if (ld->sec == SEC_NONE) {
        fail(ld, ld->lineno, "key `%s` outside any section: start with [cluster] or [node NAME]",
             name);
        return 0;
    }
    section_label(ld, label, sizeof label);
    int ki = find_key(name);
    unsigned where = ld->sec == SEC_CLUSTER ? IN_CLUSTER : IN_NODE;
    if (ki < 0 || !(keys[ki].where & where)) {
        char known[512] = "";
        for (int i = 0; i < N_KEYS; i++)
            if (keys[i].where & where)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         known[0] ? ", " : "", opt_defs[keys[i].id].key);
        fail(ld, ld->lineno, "%s key `%s`: unknown key (expected one of: %s)", label, name, known);
        return 0;
    }
    struct cluster_node *n = current_record(ld);
    int rc;
    if (ld->indented && ki == ld->last_key) {
        rc = continue_value(&keys[ki], n, value, &why);
    } else if (n->given & key_bit(ki)) {
        fail(ld, ld->lineno, "%s key `%s`: given twice in this section", label, name);
        return 0;
    } else {
        rc = check_and_set(ld, &keys[ki], n, value, why_buf, sizeof why_buf, &why);
    }
    if (rc < 0) {
        fail(ld, ld->lineno, "%s key `%s`: %s (got `%s`)", label, name, why, value);
        return 0;
    }
    n->given |= key_bit(ki);
    ld->last_key = ki;
    return 1;
}

/* ---- sections ---------------------------------------------------------- */

static int valid_node_name(const char *s)
{
    if (*s == '\0' || strlen(s) >= CLUSTER_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
            return 0;
    return 1;
}

static void open_node(struct loader *ld, const char *name)
{
    for (int i = 0; i < ld->c->n_nodes; i++)
        if (strcmp(ld->c->nodes[i].name, name) == 0) {
            fail(ld, ld->lineno, "[node %s]: node name already used at line %d", name,
                 ld->c->nodes[i].line);
            return;
        }
    if (ld->c->n_nodes == ld->cap) {
        int cap = ld->cap ? ld->cap * 2 : 8;
        struct cluster_node *nodes = realloc(ld->c->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            fail(ld, ld->lineno, "out of memory");
            return;
        }
        ld->c->nodes = nodes;
        ld->cap = cap;
    }
    struct cluster_node *n = &ld->c->nodes[ld->c->n_nodes++];
    memset(n, 0, sizeof *n);
    strcpy(n->name, name);
    n->layer_first = n->layer_last = CLUSTER_UNSET;
    n->accept_new = CLUSTER_UNSET;
    n->line = ld->lineno;
    ld->sec = SEC_NODE;
}

/* `header` is what sits between the brackets, as inih will see it. */
static void open_section(struct loader *ld, const char *header)
{
    char name[CLUSTER_NAME_MAX + 1];
    ld->last_key = -1;
    ld->sec_line = ld->lineno;
    if (strcmp(header, "cluster") == 0) {
        if (ld->cluster_seen) {
            fail(ld, ld->lineno, "[cluster] appears twice");
            return;
        }
        ld->cluster_seen = 1;
        ld->sec = SEC_CLUSTER;
        return;
    }
    if (strncmp(header, "node", 4) == 0 && isspace((unsigned char)header[4])) {
        const char *p = header + 4;
        while (isspace((unsigned char)*p))
            p++;
        size_t len = strlen(p);
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (len < sizeof name) {
            memcpy(name, p, len);
            name[len] = '\0';
            if (valid_node_name(name)) {
                open_node(ld, name);
                return;
            }
        }
        fail(ld, ld->lineno, "[%s]: a node name is 1 to %d letters, digits, '.', '_' or '-'",
             header, CLUSTER_NAME_MAX - 1);
        return;
    }
    fail(ld, ld->lineno, "[%s]: unknown section (expected [cluster] or [node NAME])", header);
}

/* Watches for "[...]" lines the way inih recognizes them. */
static void watch_line(struct loader *ld, const char *line)
{
    char header[CLUSTER_NAME_MAX + 16];
    const char *p = line;
    ld->indented = (*p == ' ' || *p == '\t');
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '[')
        return;
    const char *end = strchr(p + 1, ']');
    if (!end) { /* inih would report it at the next line */
        int len = (int)strcspn(p, "\r\n");
        fail(ld, ld->lineno, "section header `%.*s` has no closing ']'", len > 40 ? 40 : len, p);
        return;
    }
    size_t len = (size_t)(end - p - 1);
    if (len >= sizeof header) {
        fail(ld, ld->lineno, "section header too long");
        return;
    }
    memcpy(header, p + 1, len);
    header[len] = '\0';
    open_section(ld, header);
}

/* The ini_reader: one physical line per call, or NULL to stop parsing. */
static char *read_line(char *str, int num, void *stream)
{
    struct loader *ld = stream;
    if (ld->failed || !fgets(str, num, ld->fp))
        return NULL;
    ld->lineno++;
    size_t len = strlen(str);
    if (len && str[len - 1] != '\n') {
        int c = getc(ld->fp);
        if (c != EOF) {
            fail(ld, ld->lineno,
                 "line longer than %d characters (continue `start` on indented lines)", num - 3);
            return NULL;
        }
    }
    watch_line(ld, str);
    return ld->failed ? NULL : str;
}

/* ---- whole file ---------------------------------------------------------- */

/* [cluster]'s values of the keys a node may give too, where the node
 * gives none; flags join, [cluster]'s first. */
static void apply_defaults(struct loader *ld, const struct cluster_node *d)
{
    for (int i = 0; i < ld->c->n_nodes; i++) {
        struct cluster_node *n = &ld->c->nodes[i];
        for (int ki = 0; ki < N_KEYS; ki++) {
            const struct key *k = &keys[ki];
            uint64_t bit = key_bit(ki);
            if (k->where != (IN_CLUSTER | IN_NODE) || !(d->given & bit))
                continue;
            if (k->id == OPT_CF_FLAGS && (n->given & bit)) {
                char own[sizeof n->flags];
                strcpy(own, n->flags);
                if (snprintf(n->flags, sizeof n->flags, "%s %s", d->flags, own) >=
                    (int)sizeof n->flags)
                    fail(ld, n->line, "[node %s] key `flags`: with [cluster]'s, too long", n->name);
            } else if (!(n->given & bit)) {
                memcpy((char *)n + k->off, (const char *)d + k->off, k->size);
            }
            n->given |= bit;
        }
        if (!n->inferd[0])
            strcpy(n->inferd, opt_defs[OPT_CF_INFERD].def);
    }
}

/* ---- what the second form derives ----------------------------------------- */

static void endpoint(char *out, const char *host, int port)
{
    snprintf(out, CLUSTER_ENDPOINT_MAX, strchr(host, ':') ? "tcp://[%s]:%d" : "tcp://%s:%d", host,
             port);
}

/* Keys only inferd has a use for; refused on another engine's node rather
 * than ignored, so that a file never says what it does not do. */
static const opt_id inferd_only[] = {OPT_LAYERS,  OPT_CONTROL,  OPT_TELEMETRY, OPT_CF_PORT,
                                     OPT_THREADS, OPT_CF_FLAGS, OPT_CF_INFERD};

/* Before [cluster]'s defaults are merged, which may hold inferd's keys for
 * the inferd nodes of a mixed file. */
static void check_engine_keys(struct loader *ld, const struct cluster_node *d)
{
    for (int i = 0; i < ld->c->n_nodes && !ld->failed; i++) {
        struct cluster_node *n = &ld->c->nodes[i];
        uint64_t engine_bit = key_bit(find_key(opt_defs[OPT_CF_ENGINE].key));
        if (!(n->given & engine_bit))
            n->engine = d->engine;
        if (n->engine == ENG_INFERD)
            continue;
        for (size_t j = 0; j < sizeof inferd_only / sizeof inferd_only[0]; j++)
            if (n->given & key_bit(find_key(opt_defs[inferd_only[j]].key)))
                fail(ld, n->line,
                     "[node %s] key `%s`: only an inferd node takes it (this one is "
                     "engine = %s)",
                     n->name, opt_defs[inferd_only[j]].key, eng_name(n->engine));
        if (!n->url[0] && !ld->failed)
            fail(ld, n->line, "[node %s]: engine = %s needs `url`, its HTTP base URL", n->name,
                 eng_name(n->engine));
    }
}

/* An HTTP node: no endpoints; `ssh = user@` takes the host from `host`,
 * else from `url`. */
static void resolve_http_node(struct loader *ld, struct cluster_node *n)
{
    if (!n->ssh_user[0] || n->ssh_host[0])
        return;
    if (n->host[0]) {
        strcpy(n->ssh_host, n->host);
        return;
    }
    const char *h = strstr(n->url, "://") + 3;
    int port;
    const char *why;
    char hp[CLUSTER_HOST_MAX + 8];
    size_t len = strcspn(h, "/");
    if (len >= sizeof hp ||
        (memcpy(hp, h, len), hp[len] = '\0',
         cluster_ep_host_port(hp, n->ssh_host, sizeof n->ssh_host, &port, &why)) != 0)
        fail(ld, n->line, "[node %s] key `ssh`: cannot take the host from `url`", n->name);
}

/* Ports, endpoints and the SSH host that node i's keys imply; every inferd
 * node must end up with endpoints to connect to. */
static void resolve_node(struct loader *ld, int i, int base_port)
{
    struct cluster_node *n = &ld->c->nodes[i];
    if (!cluster_node_is_inferd(ld->c, i)) {
        resolve_http_node(ld, n);
        return;
    }
    if (n->host[0] && !n->port && base_port) {
        int before = 0;
        for (int j = 0; j < i; j++)
            before +=
                cluster_node_is_inferd(ld->c, j) && strcmp(ld->c->nodes[j].host, n->host) == 0;
        n->port = base_port + 3 * before;
        if (n->port > 65533) {
            fail(ld, n->line,
                 "[node %s]: base_port %d leaves no ports for it (%d and the next two)", n->name,
                 base_port, n->port);
            return;
        }
    }
    int derive = n->host[0] && n->port;
    const char *why;
    if (derive && cluster_ep_check_port(n->port, 3, ld->why, sizeof ld->why, &why) < 0) {
        fail(ld, n->line, "[node %s]: ports %d..%d (control, telemetry, ring input): %s", n->name,
             n->port, n->port + 2, why);
        return;
    }
    if (!n->control[0] && derive)
        endpoint(n->control, n->host, n->port);
    if (!n->telemetry[0] && derive)
        endpoint(n->telemetry, n->host, n->port + 1);
    if (derive)
        endpoint(n->listen, n->host, n->port + 2);
    if (!n->control[0] || !n->telemetry[0])
        fail(ld, n->line,
             "[node %s]: no %s endpoint: give `host` and `port` (or [cluster] base_port), or `%s`",
             n->name, n->control[0] ? "telemetry" : "control",
             n->control[0] ? "telemetry" : "control");
    if (!(n->given & key_bit(find_key(opt_defs[OPT_CF_LOCAL].key))))
        n->local =
            n->host[0] && cluster_ep_host_is_local(n->host) && !n->ssh_user[0] && !n->ssh_host[0];
    if (n->ssh_user[0] && !n->ssh_host[0]) {
        if (n->host[0])
            strcpy(n->ssh_host, n->host);
        else
            fail(ld, n->line,
                 "[node %s] key `ssh`: `%s@` takes the host from `host`, which is not given",
                 n->name, n->ssh_user);
    }
}

/* Two nodes on one endpoint would read each other's telemetry or hidden
 * states; explicit endpoints are checked as they are read, this catches
 * derived ones. */
static void check_distinct(struct loader *ld)
{
    const struct cluster *c = ld->c;
    for (int i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *a = &c->nodes[i];
        const char *mine[] = {a->control, a->telemetry, a->listen};
        for (int j = 0; j <= i; j++) {
            const struct cluster_node *b = &c->nodes[j];
            const char *theirs[] = {b->control, b->telemetry, b->listen};
            for (int x = 0; x < 3; x++)
                for (int y = 0; y < 3; y++)
                    if ((j < i || x < y) && mine[x][0] && strcmp(mine[x], theirs[y]) == 0) {
                        fail(ld, a->line, "[node %s]: endpoint %s is also node %s's", a->name,
                             mine[x], b->name);
                        return;
                    }
        }
    }
}

int cluster_load(const char *path, struct cluster **out, char *err, size_t errlen)
{
    struct loader ld = {.path = path, .err = err, .errlen = errlen, .last_key = -1};
    alerts_defaults(&ld.alerts);
    ld.defaults.accept_new = CLUSTER_UNSET;
    if (strlen(path) >= CLUSTER_PATH_MAX) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    ld.fp = fopen(path, "r");
    if (!ld.fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    ld.c = calloc(1, sizeof *ld.c);
    if (!ld.c) {
        fclose(ld.fp);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = ini_parse_stream(read_line, &ld, on_key, &ld);
    if (!ld.failed && ferror(ld.fp))
        fail(&ld, 0, "read error: %s", strerror(errno));
    fclose(ld.fp);
    if (rc > 0)
        fail(&ld, rc, "expected `[section]`, `key = value` or a comment");
    if (rc < 0)
        fail(&ld, 0, "out of memory");
    if (ld.c->n_nodes == 0)
        fail(&ld, 0, "no [node NAME] section: the cluster has no nodes");
    if (!ld.failed)
        check_engine_keys(&ld, &ld.defaults);
    if (!ld.failed)
        apply_defaults(&ld, &ld.defaults);
    for (int i = 0; i < ld.c->n_nodes && !ld.failed; i++)
        resolve_node(&ld, i, ld.defaults.port);
    if (!ld.failed)
        check_distinct(&ld);
    /* A node with what its command line needs gets it now, or the file is
     * refused; one without (no host, no layers yet) says what it lacks
     * when asked (`nodes command`). */
    for (int i = 0; i < ld.c->n_nodes && !ld.failed; i++) {
        struct cluster_node *n = &ld.c->nodes[i];
        char why[512];
        if (!n->start_given && command_missing(ld.c, i, NULL, 0) == 0 &&
            cluster_node_command(ld.c, i, CLUSTER_COMMAND_LINE, n->start, sizeof n->start, why,
                                 sizeof why) != 0)
            fail(&ld, n->line, "%s", why);
    }
    if (ld.failed) {
        cluster_free(ld.c);
        return -1;
    }
    strcpy(ld.c->path, path);
    strcpy(ld.c->name, ld.defaults.name[0] ? ld.defaults.name : "cluster");
    ld.c->connect_timeout_s = ld.connect_timeout_s;
    ld.c->alerts = ld.alerts;
    ld.c->base_port = ld.defaults.port;
    *out = ld.c;
    return 0;
}

void cluster_free(struct cluster *c)
{
    if (!c)
        return;
    free(c->nodes);
    free(c);
}

const struct cluster_node *cluster_node_find(const struct cluster *c, const char *name)
{
    for (int i = 0; i < c->n_nodes; i++)
        if (strcmp(c->nodes[i].name, name) == 0)
            return &c->nodes[i];
    return NULL;
}

int cluster_node_is_inferd(const struct cluster *c, int i)
{
    return c->nodes[i].engine == ENG_INFERD;
}

int cluster_ring_size(const struct cluster *c)
{
    int n = 0;
    for (int i = 0; i < c->n_nodes; i++)
        n += cluster_node_is_inferd(c, i);
    return n;
}

/* The inferd node after node i in the ring (i itself when alone). */
static const struct cluster_node *ring_next(const struct cluster *c, int i)
{
    int j = i;
    do
        j = (j + 1) % c->n_nodes;
    while (!cluster_node_is_inferd(c, j));
    return &c->nodes[j];
}

/* ---- the derived command line -------------------------------------------- */

/* A command line being built; `over` once it no longer fits. */
struct line {
    char *buf;
    size_t len, cap;
    int over;
    cluster_command_form form;
    int unplain; /* unit form: a value a flag file cannot hold, the first: */
    char unplain_word[CLUSTER_PATH_MAX];
};

static void put(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct line *l, const char *fmt, ...)
{
    if (l->over)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->len, l->cap - l->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= l->cap - l->len)
        l->over = 1;
    else
        l->len += (size_t)n;
}

/* One shell word: as it is when every character is plain, else in single
 * quotes; a leading "~/" stays outside them so that the node's shell
 * expands it. A flag file has no quoting and no shell: there a word must
 * be plain, and the first that is not is kept for the error. */
static void put_word(struct line *l, const char *w)
{
    put(l, " ");
    if (l->form == CLUSTER_COMMAND_UNIT) {
        if ((!*w || w[strcspn(w, " \t\n#")] || strncmp(w, "~/", 2) == 0) && !l->unplain)
            l->unplain = snprintf(l->unplain_word, sizeof l->unplain_word, "%s", w) >= 0;
        put(l, "%s", w);
        return;
    }
    if (l->over)
        return;
    size_t need = shellword_quote(w, l->buf + l->len, l->cap - l->len);
    if (need >= l->cap - l->len)
        l->over = 1;
    else
        l->len += need;
}

/* An option, "--FLAG": a word of the line, or a line of the flag file. */
static void put_option(struct line *l, const char *flag)
{
    put(l, l->form == CLUSTER_COMMAND_UNIT ? "\n--%s" : " --%s", flag);
}

/* What the node binds for an endpoint the console connects to: the same
 * when its host is a numeric address, else every interface (ZeroMQ binds
 * addresses and interfaces, not names). */
static void bind_of(const char *ep, char *buf, size_t len)
{
    char host[CLUSTER_HOST_MAX], v6[sizeof(struct in6_addr)];
    int port;
    const char *why;
    if (cluster_ep_host_port(ep + strlen("tcp://"), host, sizeof host, &port, &why) == 0 &&
        (inet_pton(AF_INET, host, v6) == 1 || inet_pton(AF_INET6, host, v6) == 1))
        snprintf(buf, len, "%s", ep);
    else
        snprintf(buf, len, "tcp://*:%d", port);
}

/* Node i's value of key ki for its command line, as its row types it; 0
 * when the node has none. */
static int node_value(const struct cluster *c, int i, int ki, char *buf, size_t len)
{
    const struct key *k = &keys[ki];
    const struct cluster_node *n = &c->nodes[i];
    const char *member = (const char *)n + k->off;
    opt_value v = {0};
    switch (k->dest) {
    case D_ENDPOINT:
        bind_of(member, buf, len);
        return 1;
    case D_RING: /* --listen binds the node's ring input, --next is the next node's */
        if (cluster_ring_size(c) < 2)
            return 0;
        if (k->id == OPT_LISTEN)
            bind_of(member, buf, len);
        else
            snprintf(buf, len, "%s", ring_next(c, i)->listen);
        return 1;
    case D_LAYERS:
        if (n->layer_first == CLUSTER_UNSET)
            return 0;
        v.i = (unsigned long long)n->layer_first;
        v.i2 = (unsigned long long)n->layer_last;
        break;
    case D_INT:
        if (!(n->given & key_bit(ki)))
            return 0;
        v.i = load_int(member, k->size);
        break;
    case D_TEXT:
        if (!*member)
            return 0;
        v.s = member;
        break;
    default:
        return 0;
    }
    opt_format(k->id, &v, buf, len);
    return 1;
}

/* What node i lacks for a derived command line; 0 when nothing. err may
 * be NULL (errlen 0) when only the answer matters. */
static int command_missing(const struct cluster *c, int i, char *err, size_t errlen)
{
    const struct cluster_node *n = &c->nodes[i];
    if (!cluster_node_is_inferd(c, i)) {
        snprintf(err, errlen, "[node %s]: no command line: engine = %s starts by its `start` line",
                 n->name, eng_name(n->engine));
        return -1;
    }
    const struct cluster_node *next = ring_next(c, i);
    int ring = cluster_ring_size(c) > 1;
    if (!n->host[0] || !n->port) {
        snprintf(err, errlen,
                 "[node %s]: no command line: give `start`, or `host` and `port` (or [cluster] "
                 "base_port) so that infertop derives it",
                 n->name);
        return -1;
    }
    if (ring && n->layer_first == CLUSTER_UNSET) {
        snprintf(err, errlen,
                 "[node %s]: no `layers`: each node of a ring of %d needs its range "
                 "(`infertop plan --write` sets them)",
                 n->name, cluster_ring_size(c));
        return -1;
    }
    if (ring && !next->listen[0]) {
        snprintf(err, errlen,
                 "[node %s]: its --next is node %s's ring input, which needs that node's `host` "
                 "and `port`",
                 n->name, next->name);
        return -1;
    }
    return 0;
}

int cluster_node_command(const struct cluster *c, int i, cluster_command_form form, char *buf,
                         size_t len, char *err, size_t errlen)
{
    const struct cluster_node *n = &c->nodes[i];
    if (n->start_given && form == CLUSTER_COMMAND_UNIT) {
        snprintf(err, errlen,
                 "[node %s]: its `start` line is a shell command, not flags a unit can take: "
                 "give `host` and `port` (or [cluster] base_port) instead so that infertop "
                 "derives them",
                 n->name);
        return -1;
    }
    if (n->start_given) {
        if (strlen(n->start) >= len) {
            snprintf(err, errlen, "[node %s]: the start line is too long", n->name);
            return -1;
        }
        strcpy(buf, n->start);
        return 0;
    }
    if (command_missing(c, i, err, errlen) != 0)
        return -1;
    struct line l = {.buf = buf, .cap = len, .form = form};
    buf[0] = '\0';
    /* The unit runs `inferd serve --name %i` with its own log and pidfile:
     * the file holds the rest. */
    if (form == CLUSTER_COMMAND_UNIT) {
        put(&l, "\n# /etc/inferd/%s.conf: the flags of inferd@%s.service", n->name, n->name);
    } else {
        put_word(&l, n->inferd);
        put(&l, " serve");
    }
    /* Every setting of inferd serve the cluster file has a key for (or
     * derives from the ring), with its flag; then the file's own flags. */
    for (int ki = 0; ki < N_KEYS; ki++) {
        const opt_def *d = &opt_defs[keys[ki].id];
        char value[CLUSTER_START_MAX];
        if (!(d->verbs & OPT_VB(OPT_V_SERVE)) ||
            (form == CLUSTER_COMMAND_UNIT && keys[ki].unit_adds))
            continue;
        if (!node_value(c, i, ki, value, sizeof value)) {
            if (keys[ki].id != OPT_LOG)
                continue;
            /* Where nodectl looks for the log when the file names none. */
            snprintf(value, sizeof value, CLUSTER_LOG_DEFAULT_DIR "/%s.log", n->name);
        }
        put_option(&l, d->flag);
        put_word(&l, value);
    }
    if (n->flags[0])
        put(&l, l.form == CLUSTER_COMMAND_UNIT ? "\n%s" : " %s", n->flags);
    if (l.over) {
        snprintf(err, errlen, "[node %s]: the derived command line is longer than %zu bytes",
                 n->name, len - 1);
        return -1;
    }
    if (l.unplain) {
        snprintf(err, errlen,
                 "[node %s]: '%s' cannot go in a unit's flag file, which has no quoting and no "
                 "shell (no spaces, '#' or '~/')",
                 n->name, l.unplain_word);
        return -1;
    }
    if (form == CLUSTER_COMMAND_UNIT)
        put(&l, "\n");
    memmove(buf, buf + 1, strlen(buf)); /* the separator before the first word */
    return 0;
}

/* ---- where the file is ---------------------------------------------------- */

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* XDG: an unset, empty or relative XDG_CONFIG_HOME means ~/.config. */
int cluster_home_path(char *out, size_t outlen)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    int n;
    if (xdg && xdg[0] == '/') {
        n = snprintf(out, outlen, "%s/infertop/cluster.conf", xdg);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home)
            return -1;
        n = snprintf(out, outlen, "%s/.config/infertop/cluster.conf", home);
    }
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int cluster_locate(const char *given, char *path, size_t pathlen, char *err, size_t errlen)
{
    static const char local[] = "./infertop.conf";
    char conf[CLUSTER_PATH_MAX];
    const char *pick = NULL;
    int have_conf = cluster_home_path(conf, sizeof conf) == 0;
    if (given)
        pick = given;
    else if (is_file(local))
        pick = local;
    else if (have_conf && is_file(conf))
        pick = conf;
    if (!pick) {
        snprintf(err, errlen, "no cluster file: give -c FILE, or create %s or %s", local,
                 have_conf ? conf : "$XDG_CONFIG_HOME/infertop/cluster.conf");
        return -1;
    }
    if (strlen(pick) >= pathlen) {
        snprintf(err, errlen, "%s: path too long", pick);
        return -1;
    }
    strcpy(path, pick);
    return 0;
}
