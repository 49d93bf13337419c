/* cluster_ep.c: the cluster file's addresses and their checks
 * (cluster_ep.h). */
#include "cluster_ep.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sys/ports.h"

static int bad(const char **why, const char *what)
{
    *why = what;
    return -1;
}

int cluster_ep_port(const char *s, int *port)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!isdigit((unsigned char)*s) || *end || errno || v < 1 || v > 65535)
        return -1;
    *port = (int)v;
    return 0;
}

int cluster_ep_host_port(const char *s, char *host, size_t hostlen, int *port, const char **why)
{
    const char *h = s, *hend, *rest;
    if (*s == '[') {
        h = s + 1;
        hend = strchr(h, ']');
        if (!hend)
            return bad(why, "an IPv6 address needs its closing ']'");
        rest = hend + 1;
    } else {
        hend = s + strcspn(s, ":");
        rest = hend;
        if (*rest && strchr(rest + 1, ':'))
            return bad(why, "an IPv6 address must be written in brackets, e.g. [::1]:5555");
    }
    size_t n = (size_t)(hend - h);
    if (n == 0)
        return bad(why, "the host is empty");
    if (n >= hostlen)
        return bad(why, "the host name is too long");
    for (const char *p = h; p < hend; p++)
        if (isspace((unsigned char)*p))
            return bad(why, "the host contains white space");
    memcpy(host, h, n);
    host[n] = '\0';
    *port = 0;
    if (*rest == '\0')
        return 0;
    if (*rest != ':' || cluster_ep_port(rest + 1, port) < 0)
        return bad(why, "the port must be a number from 1 to 65535");
    return 0;
}

int cluster_ep_check_port(int port, int count, char *buf, size_t len, const char **why)
{
    for (int p = port; p < port + count; p++)
        if (ports_is_ephemeral(p, buf, len)) {
            *why = buf;
            return -1;
        }
    return 0;
}

int cluster_ep_check(const char *v, char *buf, size_t len, const char **why)
{
    char host[CLUSTER_HOST_MAX];
    int port;
    if (strncmp(v, "tcp://", 6) != 0)
        return bad(why, "expected tcp://host:port");
    if (cluster_ep_host_port(v + 6, host, sizeof host, &port, why) < 0)
        return -1;
    if (port == 0)
        return bad(why, "expected tcp://host:port (the port is missing)");
    if (strcmp(host, "*") == 0)
        return bad(why, "'*' binds; the console needs a host to connect to");
    return cluster_ep_check_port(port, 1, buf, len, why);
}

int cluster_ep_check_url(const char *v, const char **why)
{
    char host[CLUSTER_HOST_MAX];
    int port;
    size_t scheme = strncmp(v, "http://", 7) == 0 ? 7 : strncmp(v, "https://", 8) == 0 ? 8 : 0;
    if (!scheme)
        return bad(why, "expected http://host:port or https://host:port");
    if (strpbrk(v, "?# \t"))
        return bad(why, "expected a base URL, without a query, fragment or white space");
    if (v[strlen(v) - 1] == '/')
        return bad(why, "expected a base URL without a trailing '/'");
    const char *path = strchr(v + scheme, '/');
    size_t hostport = path ? (size_t)(path - v - scheme) : strlen(v + scheme);
    char hp[CLUSTER_HOST_MAX + 8];
    if (hostport == 0 || hostport >= sizeof hp)
        return bad(why, "expected a host after the scheme");
    memcpy(hp, v + scheme, hostport);
    hp[hostport] = '\0';
    return cluster_ep_host_port(hp, host, sizeof host, &port, why);
}

int cluster_ep_host_is_local(const char *host)
{
    unsigned char addr[16];
    if (strcmp(host, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, host, addr) == 1)
        return addr[0] == 127;
    return inet_pton(AF_INET6, host, addr) == 1 &&
           memcmp(addr, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0;
}
