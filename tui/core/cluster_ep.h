/* cluster_ep.h: the cluster file's addresses: host[:port], the endpoints
 * the console connects to, the URLs of HTTP nodes, and the rules on their
 * ports (cluster.c gives them their keys).
 *
 * Each check returns 0, or -1 with *why saying what was expected; `why`
 * may point into buf (len bytes) for a message with figures in it. */
#ifndef CLUSTER_EP_H
#define CLUSTER_EP_H

#include <stddef.h>

/* A host name or address, with its NUL. */
#define CLUSTER_HOST_MAX 256

/* A port, 1..65535, the whole of s. */
int cluster_ep_port(const char *s, int *port);

/* "host", "host:port", "[v6]" or "[v6]:port"; *port 0 when none. A bare
 * IPv6 address would make the port ambiguous, hence the brackets. */
int cluster_ep_host_port(const char *s, char *host, size_t hostlen, int *port, const char **why);

/* tcp://host:port that the console connects to: a real host, a port, and
 * not one of the kernel's ephemeral range (engine/sys/ports.h). */
int cluster_ep_check(const char *v, char *buf, size_t len, const char **why);

/* A node port (and the two after it) outside the ephemeral range. */
int cluster_ep_check_port(int port, int count, char *buf, size_t len, const char **why);

/* http[s]://host[:port][/path], without a query, fragment or trailing '/'. */
int cluster_ep_check_url(const char *v, const char **why);

/* 1 when host names this machine: localhost, 127.0.0.0/8 or ::1. */
int cluster_ep_host_is_local(const char *host);

#endif
