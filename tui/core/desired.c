/* desired.c: the state file of desired settings (desired.h). */
#include "desired.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SECTION_PREFIX "node "

int desired_path(const char *cluster_path, char *out, size_t len)
{
    int n = snprintf(out, len, "%s.state", cluster_path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

void desired_free(struct desired *d)
{
    free(d->nodes);
    d->nodes = NULL;
    d->n = 0;
}

int desired_copy(struct desired *dst, const struct desired *src)
{
    *dst = *src;
    dst->nodes = NULL;
    dst->n = 0;
    if (src->n == 0)
        return 0;
    if (!(dst->nodes = malloc((size_t)src->n * sizeof *dst->nodes)))
        return -1;
    memcpy(dst->nodes, src->nodes, (size_t)src->n * sizeof *dst->nodes);
    dst->n = src->n;
    return 0;
}

static struct desired_node *find(const struct desired *d, const char *node)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->nodes[i].name, node) == 0)
            return &d->nodes[i];
    return NULL;
}

static struct desired_node *find_or_add(struct desired *d, const char *node)
{
    struct desired_node *e = find(d, node);
    if (e)
        return e;
    e = realloc(d->nodes, (size_t)(d->n + 1) * sizeof *e);
    if (!e)
        return NULL;
    d->nodes = e;
    e = &d->nodes[d->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", node);
    return e;
}

int desired_setting(opt_id id, const char *value, proto_set_args *a, char *err, size_t errlen)
{
    int prefill = id == OPT_PREFILL_STEP;
    int *has = prefill ? &a->has_prefill_step : &a->has_kv_bits;
    opt_value got = {0};
    char why[320];
    if (*has) {
        snprintf(err, errlen, "%s is given twice", opt_defs[id].wire);
        return -1;
    }
    if (opt_check_text(id, value, &got, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s \"%s\": %s", opt_defs[id].wire, value, why);
        return -1;
    }
    *(prefill ? &a->prefill_step : &a->kv_bits) = (int)got.i;
    *has = 1;
    return 0;
}

/* inih's handler: the first problem goes to why and stops the parse. */
struct load {
    struct desired *d;
    char why[512];
};

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    struct load *ld = user;
    size_t plen = strlen(SECTION_PREFIX);
    if (strncmp(section, SECTION_PREFIX, plen) != 0 || !section[plen]) {
        snprintf(ld->why, sizeof ld->why, "[%s]: expected a [node NAME] section", section);
        return 0;
    }
    const char *node = section + plen;
    if (strlen(node) >= CLUSTER_NAME_MAX) {
        snprintf(ld->why, sizeof ld->why, "[%s]: node name longer than %d bytes", section,
                 CLUSTER_NAME_MAX - 1);
        return 0;
    }
    for (int id = 0; id < OPT_COUNT; id++) {
        if (!opt_defs[id].live || strcmp(opt_defs[id].wire, name) != 0)
            continue;
        struct desired_node *e = find_or_add(ld->d, node);
        char why[400];
        if (!e) {
            snprintf(ld->why, sizeof ld->why, "out of memory");
            return 0;
        }
        if (desired_setting((opt_id)id, value, &e->set, why, sizeof why) != 0) {
            snprintf(ld->why, sizeof ld->why, "[%s] %s", section, why);
            return 0;
        }
        return 1;
    }
    snprintf(ld->why, sizeof ld->why, "[%s]: unknown key `%s`", section, name);
    return 0;
}

int desired_load(const char *path, struct desired *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct load ld = {.d = d};
    int line = ini_parse_file(f, on_key, &ld);
    fclose(f);
    if (line == 0)
        return 0;
    snprintf(err, errlen, "%s:%d: %s", path, line,
             ld.why[0] ? ld.why : "not a line of an INI file (a [node NAME] or a key = value)");
    desired_free(d);
    return -1;
}

void desired_describe(const proto_set_args *set, char *buf, size_t len)
{
    int n = 0;
    buf[0] = '\0';
    if (set->has_prefill_step) {
        if (set->prefill_step == PROTO_PREFILL_AUTO)
            n = snprintf(buf, len, "prefill_step=auto");
        else
            n = snprintf(buf, len, "prefill_step=%d", set->prefill_step);
    }
    if (set->has_kv_bits && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%skv_bits=%d", n ? " " : "", set->kv_bits);
}

static int write_all(FILE *f, const struct desired *d)
{
    int rc = fprintf(f, "; infertop's desired settings, written by `infertop set`\n") < 0;
    for (int i = 0; i < d->n; i++) {
        const proto_set_args *s = &d->nodes[i].set;
        rc |= fprintf(f, "\n[" SECTION_PREFIX "%s]\n", d->nodes[i].name) < 0;
        if (s->has_kv_bits)
            rc |= fprintf(f, "%s = %d\n", opt_defs[OPT_KV_BITS].wire, s->kv_bits) < 0;
        if (s->has_prefill_step) {
            char v[32];
            opt_format(OPT_PREFILL_STEP, &(opt_value){.i = (unsigned long long)s->prefill_step}, v,
                       sizeof v);
            rc |= fprintf(f, "%s = %s\n", opt_defs[OPT_PREFILL_STEP].wire, v) < 0;
        }
    }
    return rc ? -1 : 0;
}

/* The folder's entry of the rename reaches the disk too. */
static int sync_dir(const char *path)
{
    char copy[sizeof((struct desired *)0)->path];
    snprintf(copy, sizeof copy, "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int desired_save(const struct desired *d, char *err, size_t errlen)
{
    char tmp[sizeof d->path + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", d->path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    const char *step = "write";
    int rc = write_all(f, d) != 0 || fflush(f) != 0 ? -1 : 0;
    if (rc == 0 && fsync(fileno(f)) != 0) {
        step = "fsync";
        rc = -1;
    }
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        saved = errno;
        rc = -1;
    }
    if (rc == 0 && rename(tmp, d->path) != 0) {
        step = "rename";
        saved = errno;
        rc = -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s: %s (the file is unchanged)", d->path, step, strerror(saved));
        unlink(tmp);
        return -1;
    }
    if (sync_dir(d->path) != 0) {
        snprintf(err, errlen, "%s: fsync of its folder: %s", d->path, strerror(errno));
        return -1;
    }
    return 0;
}

int desired_record(struct desired *d, const char *node, const proto_set_args *set)
{
    struct desired_node *e = find_or_add(d, node);
    if (!e)
        return -1;
    if (set->has_kv_bits) {
        e->set.has_kv_bits = 1;
        e->set.kv_bits = set->kv_bits;
    }
    if (set->has_prefill_step) {
        e->set.has_prefill_step = 1;
        e->set.prefill_step = set->prefill_step;
    }
    return 0;
}

const proto_set_args *desired_get(const struct desired *d, const char *node)
{
    const struct desired_node *e = find(d, node);
    return e ? &e->set : NULL;
}

int desired_drift(const proto_set_args *want, int kv_bits, int prefill_step, proto_set_args *drift)
{
    memset(drift, 0, sizeof *drift);
    if (!want)
        return 0;
    if (want->has_kv_bits && kv_bits > 0 && kv_bits != want->kv_bits) {
        drift->has_kv_bits = 1;
        drift->kv_bits = want->kv_bits;
    }
    if (want->has_prefill_step && prefill_step >= 0 && prefill_step != want->prefill_step) {
        drift->has_prefill_step = 1;
        drift->prefill_step = want->prefill_step;
    }
    return drift->has_kv_bits || drift->has_prefill_step;
}
