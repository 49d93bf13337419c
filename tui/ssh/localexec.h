/* localexec.h: a node operation's script run on this machine, for a local
 * node (the cluster file's `local`, or a loopback `host`): the same POSIX
 * sh script nodectl sends over SSH, run by /bin/sh with the console's own
 * environment, its output streamed and its wait bounded the same way. */
#ifndef LOCALEXEC_H
#define LOCALEXEC_H

#include <stddef.h>

#include "sshconn.h"

/* sshconn_exec's contract without a connection: 0 with *exit_status (128
 * + the signal when one ended it), SSHCONN_STOPPED when io stopped it, -1
 * with err when it could not run or deadline_ms (0: none) passed. The
 * script runs in a process group of its own, which a stop or a missed
 * deadline kills whole. */
int localexec_run(const char *script, int deadline_ms, const sshconn_io *io, int *exit_status,
                  char *err, size_t errlen);

#endif
