/* serve.h: runs an `inferd serve` node (serve.c) until SIGTERM or SIGINT. */
#ifndef SERVE_H
#define SERVE_H

#include "options.h"

/* Loads the model, binds the sockets and serves. Returns 0 after a clean
 * stop, 1 when the node could not start or its loop failed; the reason is
 * on stderr and in the log. */
int serve_run(const serve_opts *o);

#endif
