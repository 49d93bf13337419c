/* ports.h: the kernel's ephemeral port range, and free ports outside it.
 *
 * A TCP connect without a bound source takes its source port from
 * ip_local_port_range. A node listening on a port of that range can find
 * it taken by someone's outgoing connection, and a client reconnecting to
 * a dead node on this host can connect to itself (source port = the
 * node's port: TCP's simultaneous open), which then holds the port for as
 * long as the client runs. So node ports stay out of the range: the
 * cluster file and `inferd serve` refuse them, and the demo and the tests
 * pick theirs below it. */
#ifndef PORTS_H
#define PORTS_H

#include <stddef.h>

/* /proc/sys/net/ipv4/ip_local_port_range, read each call (an operator
 * may change it); Linux's default 32768..60999 when it cannot be read. */
void ports_ephemeral(int *lo, int *hi);

/* 1 when port lies in the ephemeral range; then `why` (when not NULL)
 * says so with the range: "port 40000 is in the ephemeral range
 * 32768..60999 (ip_local_port_range)". */
int ports_is_ephemeral(int port, char *why, size_t whylen);

/* The first of n consecutive ports free on 127.0.0.1 (each bound and
 * released), outside the ephemeral range and above 1023, picked at random
 * so that runs at once rarely meet. -1 with err when none is found. */
int ports_free_run(int n, int *first, char *err, size_t errlen);

#endif
