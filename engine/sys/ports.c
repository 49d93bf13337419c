/* ports.c: the ephemeral range and free ports outside it (ports.h). */
#include "ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RANGE_FILE "/proc/sys/net/ipv4/ip_local_port_range"
#define PORT_MIN 1024 /* below: privileged */
#define PORT_MAX 65535
#define TRIES 200

void ports_ephemeral(int *lo, int *hi)
{
    *lo = 32768;
    *hi = 60999;
    FILE *f = fopen(RANGE_FILE, "r");
    if (!f)
        return;
    int a, b;
    if (fscanf(f, "%d %d", &a, &b) == 2 && a >= 1 && a <= b && b <= PORT_MAX) {
        *lo = a;
        *hi = b;
    }
    fclose(f);
}

int ports_is_ephemeral(int port, char *why, size_t whylen)
{
    int lo, hi;
    ports_ephemeral(&lo, &hi);
    if (port < lo || port > hi)
        return 0;
    if (why)
        snprintf(why, whylen,
                 "port %d is in the ephemeral range %d..%d (" RANGE_FILE
                 "), where outgoing connections take their source ports: a node there can be "
                 "locked out of it; pick a port below %d or above %d",
                 port, lo, hi, lo, hi);
    return 1;
}

/* Binds 127.0.0.1:port; the socket, or -1. */
static int bind_loopback(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Ports [p, p + n) all free at once. */
static int run_free(int p, int n)
{
    int fds[n], got;
    for (got = 0; got < n; got++)
        if ((fds[got] = bind_loopback(p + got)) < 0)
            break;
    for (int i = 0; i < got; i++)
        close(fds[i]);
    return got == n;
}

int ports_free_run(int n, int *first, char *err, size_t errlen)
{
    int lo, hi;
    ports_ephemeral(&lo, &hi);
    /* The starts outside the range: [PORT_MIN, lo - n] and [hi + 1, PORT_MAX - n + 1]. */
    int below = lo - n - PORT_MIN + 1, above = PORT_MAX - n - hi + 1;
    below = below > 0 ? below : 0;
    above = above > 0 ? above : 0;
    if (n < 1 || n > 256 || below + above == 0) {
        snprintf(err, errlen, "no run of %d ports outside the ephemeral range %d..%d", n, lo, hi);
        return -1;
    }
    unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ (unsigned)clock();
    for (int t = 0; t < TRIES; t++) {
        int k = (int)(rand_r(&seed) % (unsigned)(below + above));
        int p = k < below ? PORT_MIN + k : hi + 1 + (k - below);
        if (run_free(p, n)) {
            *first = p;
            return 0;
        }
    }
    snprintf(err, errlen, "no run of %d free ports on 127.0.0.1 outside %d..%d after %d tries: %s",
             n, lo, hi, TRIES, strerror(errno));
    return -1;
}
