/* memstat.h: this process's memory use and the memory it may still get.
 *
 * All values are bytes; 0 means unknown (or, for the cgroup, no limit).
 * They read /proc and /sys on every call: cheap enough for once a step.
 */
#ifndef MEMSTAT_H
#define MEMSTAT_H

#include <stddef.h>

size_t mem_rss(void);       /* VmRSS of this process */
size_t mem_peak_rss(void);  /* VmHWM: the largest RSS so far */
size_t mem_available(void); /* MemAvailable of /proc/meminfo */

/* The tightest memory limit of this process's cgroup and its ancestors:
 * cgroup v2 memory.max, else v1 memory.limit_in_bytes. */
size_t mem_cgroup_limit(void);

/* The running kernel's boot id (/proc/sys/kernel/random/boot_id): equal
 * for every process that shares this machine's memory, containers
 * included. 0 with the id in out, -1 when it cannot be read. */
int mem_host_id(char *out, size_t len);

#endif
