/* plan_file.c: rewriting a cluster file's layer ranges (plan_file.h). The
 * lines are recognised as the loader reads them (tui/core/cluster.c): a
 * section header in brackets, `key = value` (or `key: value`) at the start
 * of a line, indented lines continuing the key above. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/proto/opt.h"
#include "plan_file.h"
#include "plan_int.h"
#include "tui/core/shellword.h"

enum { NOT_A_KEY = 0, KEY_LAYERS, KEY_START, KEY_OTHER };

/* The key a line starts, NOT_A_KEY for an indented (continuation), blank
 * or comment line. */
static int key_of(const char *line)
{
    if (isspace((unsigned char)*line))
        return NOT_A_KEY;
    size_t n = strspn(line, "abcdefghijklmnopqrstuvwxyz_");
    const char *p = line + n;
    while (*p == ' ' || *p == '\t')
        p++;
    if (n == 0 || (*p != '=' && *p != ':'))
        return NOT_A_KEY;
    if (n == 6 && strncmp(line, "layers", 6) == 0)
        return KEY_LAYERS;
    if (n == 5 && strncmp(line, "start", 5) == 0)
        return KEY_START;
    return KEY_OTHER;
}

/* The node a "[node NAME]" line opens, -1 for another section, -2 when
 * the line is no header. */
static int header_of(const struct cluster *c, const char *line)
{
    const char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '[')
        return -2;
    const char *end = strchr(p, ']');
    if (!end || strncmp(p + 1, "node", 4) != 0 || !isspace((unsigned char)p[5]))
        return -1;
    const char *name = p + 5;
    while (isspace((unsigned char)*name))
        name++;
    size_t len = (size_t)(end - name);
    while (len && isspace((unsigned char)name[len - 1]))
        len--;
    for (int i = 0; i < c->n_nodes; i++)
        if (strlen(c->nodes[i].name) == len && strncmp(c->nodes[i].name, name, len) == 0)
            return i;
    return -1;
}

int plan_flag_next(const char **p, const char *flag_name, const char **from, const char **to,
                   char *value, size_t len)
{
    char flag[64], word[CLUSTER_START_MAX];
    size_t flen = (size_t)snprintf(flag, sizeof flag, "--%s", flag_name);
    const char *start;
    int value_next = 0;
    while (shellword_next(p, word, sizeof word, &start) == 1) {
        int joined = strncmp(word, flag, flen) == 0 && word[flen] == '=';
        if (value_next || joined) {
            *from = start;
            *to = *p;
            snprintf(value, len, "%s", word + (joined ? flen + 1 : 0));
            return joined ? 2 : 1;
        }
        value_next = strcmp(word, flag) == 0;
    }
    return 0;
}

/* The next value of --layers (the table's flag of OPT_LAYERS). */
static int next_layers(const char **p, const char **from, const char **to, char *value, size_t len)
{
    return plan_flag_next(p, opt_defs[OPT_LAYERS].flag, from, to, value, len);
}

/* A start line (or a line continuing it) with each --layers set to the
 * new range. */
static void put_start_line(FILE *out, const char *line, int first, int last)
{
    char value[CLUSTER_START_MAX];
    const char *p = line, *copied = line, *from, *to;
    int form;
    while ((form = next_layers(&p, &from, &to, value, sizeof value)) != 0) {
        fwrite(copied, 1, (size_t)(from - copied), out);
        if (form == 2)
            fprintf(out, "--%s=", opt_defs[OPT_LAYERS].flag);
        fprintf(out, "%d:%d", first, last);
        copied = to;
    }
    fputs(copied, out);
}

static int rewrite(const struct cluster *c, FILE *in, FILE *out, const int *first, const int *last)
{
    char *line = NULL;
    size_t cap = 0;
    int node = -1, in_start = 0;
    while (getline(&line, &cap, in) > 0) {
        int h = header_of(c, line);
        if (h != -2) {
            node = h;
            in_start = 0;
            fputs(line, out);
            if (node >= 0 && c->nodes[node].layer_first == CLUSTER_UNSET)
                fprintf(out, "layers = %d:%d\n", first[node], last[node]);
            continue;
        }
        int k = key_of(line);
        if (k != NOT_A_KEY)
            in_start = k == KEY_START;
        if (node >= 0 && k == KEY_LAYERS)
            fprintf(out, "layers = %d:%d\n", first[node], last[node]);
        else if (node >= 0 && in_start)
            put_start_line(out, line, first[node], last[node]);
        else
            fputs(line, out);
    }
    free(line);
    return ferror(in) ? -1 : 0;
}

/* The loaded result says what was asked: every range, every start line. */
static int check(const struct cluster *c, const struct cluster *n, const int *first,
                 const int *last, char *err, size_t errlen)
{
    if (n->n_nodes != c->n_nodes) {
        snprintf(err, errlen, "the rewritten file has %d nodes, not %d", n->n_nodes, c->n_nodes);
        return -1;
    }
    for (int i = 0; i < n->n_nodes; i++) {
        const struct cluster_node *x = &n->nodes[i];
        char want[32], value[CLUSTER_START_MAX] = "";
        const char *p = x->start, *from, *to;
        snprintf(want, sizeof want, "%d:%d", first[i], last[i]);
        while (x->start_given && next_layers(&p, &from, &to, value, sizeof value) != 0)
            ;
        if (x->layer_first != first[i] || x->layer_last != last[i]) {
            snprintf(err, errlen, "node %s: the rewritten file says layers %d:%d, not %d:%d",
                     x->name, x->layer_first, x->layer_last, first[i], last[i]);
            return -1;
        }
        if (x->start_given && strcmp(value, want) != 0) {
            snprintf(err, errlen,
                     "node %s: its `start` line has no `--%s %s` after the rewrite: give it "
                     "--%s, or remove `start` so that infertop derives the command line",
                     x->name, opt_defs[OPT_LAYERS].flag, want, opt_defs[OPT_LAYERS].flag);
            return -1;
        }
    }
    return 0;
}

int plan_file_commit(const char *from, const char *to, char *err, size_t errlen)
{
    if (rename(from, to) != 0) {
        snprintf(err, errlen, "%s: cannot replace: %s", to, strerror(errno));
        return -1;
    }
    /* The rename itself is on disk once the directory is. */
    char dir[CLUSTER_PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s", to);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s is replaced, but its folder %s cannot be synced: %s", to, dir,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int plan_file_write(const struct cluster *c, const int *first, const int *last, const char *dst,
                    struct cluster **out, char *err, size_t errlen)
{
    char tmp[CLUSTER_PATH_MAX + 16];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", dst) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", dst);
        return -1;
    }
    FILE *in = fopen(c->path, "r");
    struct stat st;
    if (!in || fstat(fileno(in), &st) != 0) {
        snprintf(err, errlen, "%s: cannot read: %s", c->path, strerror(errno));
        if (in)
            fclose(in);
        return -1;
    }
    /* The new file keeps the old one's permissions. */
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 && fchmod(fd, st.st_mode & 07777) == 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        fclose(in);
        return -1;
    }
    int rc = rewrite(c, in, f, first, last);
    fclose(in);
    /* On disk before it replaces anything: a crash leaves the old file or
     * the new one, whole. */
    if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = -1;
    if (fclose(f) != 0 || rc != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    struct cluster *n = NULL;
    char why[1024];
    if (cluster_load(tmp, &n, why, sizeof why) != 0) {
        snprintf(err, errlen, "the rewritten file does not load: %s", why);
        rc = -1;
    } else {
        rc = check(c, n, first, last, err, errlen);
    }
    if (rc == 0)
        rc = plan_file_commit(tmp, dst, err, errlen);
    if (rc != 0) {
        unlink(tmp);
        cluster_free(n);
        return -1;
    }
    snprintf(n->path, sizeof n->path, "%s", dst);
    if (out)
        *out = n;
    else
        cluster_free(n);
    return 0;
}
