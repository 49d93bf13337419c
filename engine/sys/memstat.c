/* memstat.c: see memstat.h. */
#include "memstat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of a "Key:   123 kB" line of a /proc file, in bytes. */
static size_t proc_kb_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    size_t keylen = strlen(key), value = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, keylen) == 0 && line[keylen] == ':') {
            value = (size_t)strtoull(line + keylen + 1, NULL, 10) * 1024;
            break;
        }
    }
    fclose(f);
    return value;
}

size_t mem_rss(void)
{
    return proc_kb_field("/proc/self/status", "VmRSS");
}

size_t mem_peak_rss(void)
{
    return proc_kb_field("/proc/self/status", "VmHWM");
}

size_t mem_available(void)
{
    return proc_kb_field("/proc/meminfo", "MemAvailable");
}

/* A limit file's value; "max" and v1's "unlimited" (a huge number) are 0. */
static size_t read_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char buf[64] = "";
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok || strncmp(buf, "max", 3) == 0)
        return 0;
    unsigned long long v = strtoull(buf, NULL, 10);
    return v >= (1ull << 62) ? 0 : (size_t)v;
}

/* The smallest non-zero limit of `file` in dir and its ancestors up to
 * root (a parent's limit binds its children too). */
static size_t tightest_limit(const char *root, char *dir, const char *file)
{
    size_t best = 0;
    for (;;) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s/%s", root, dir, file);
        size_t v = read_limit(path);
        if (v && (!best || v < best))
            best = v;
        char *slash = strrchr(dir, '/');
        if (!slash)
            return best;
        *slash = '\0';
    }
}

size_t mem_cgroup_limit(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char line[4096];
    size_t limit = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *path = strchr(line, ':');
        char *ctrl = path ? path + 1 : NULL;
        path = ctrl ? strchr(ctrl, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        if (strcmp(path, "/") == 0)
            path[0] = '\0';
        /* v2: "0::/path"; v1: "N:...,memory,...:/path". */
        if (ctrl[0] == '\0')
            limit = tightest_limit("/sys/fs/cgroup", path, "memory.max");
        else if (strstr(ctrl, "memory"))
            limit = tightest_limit("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
        if (limit)
            break;
    }
    fclose(f);
    return limit;
}

int mem_host_id(char *out, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return -1;
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    return out[0] ? 0 : -1;
}
