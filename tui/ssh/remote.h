/* remote.h: the console's hands on the nodes of a cluster file, over SSH.
 *
 * It turns what the operator asks in the console into nodepool jobs and
 * their results into what the console shows:
 *   - start, stop, restart: the request and its outcome go to the events
 *     pane; a node being started shows `starting`, a stopped one `down`;
 *   - while the node view shows a node, its log is followed (`logs -f`)
 *     into a ring of lines, and its facts are fetched once per opening;
 *     the follow is cancelled when the view closes or moves to another
 *     node. Failures (unreachable, host key, authentication) show in the
 *     log pane and the events pane.
 *
 * Nothing here blocks: every SSH exchange runs on the pool's threads, and
 * no connection is made before the operator asks for something that needs
 * one (opening the dashboard connects nowhere). The app sees this through
 * its hooks (tui/core/hooks.h), the node view through the read-only queries below.
 * One thread (the app's loop) calls everything here.
 */
#ifndef REMOTE_H
#define REMOTE_H

#include <stddef.h>

#include "nodectl.h"
#include "nodelog.h"
#include "tui/core/state.h"

struct app_hooks;
struct cluster;

typedef struct remote remote;

/* The cluster (borrowed: it must outlive the remote) and the state that
 * outcomes are written to. The SSH connect timeout is the cluster file's
 * connect_timeout, else the pool's default. -1 with err filled. */
int remote_new(const struct cluster *c, state *st, remote **out, char *err, size_t errlen);

/* Cancels what runs and waits for the pool's threads: one still
 * connecting ends at the connect timeout. NULL is fine. */
void remote_free(remote *r);

/* The cluster's nodes changed in place (the same nodes, with other layers
 * and command lines): node actions from now on use them. -1 when the
 * nodes are not the same. */
int remote_update(remote *r);

/* Fills the hooks of the app's loop with this remote's: its results'
 * descriptor, draining them, node actions, and the node view's focus. */
void remote_hooks(remote *r, struct app_hooks *h);

/* ---- for the node view ---- */

/* The lines of the node's log seen since the view opened (notes of the
 * console's own included). */
const nodelog *remote_log(const remote *r, int node);

/* Where the log comes from, e.g. "ssh: ops@gpu1:~/.infertop/a.log". */
void remote_log_source(const remote *r, int node, char *buf, size_t len);

/* The node's facts when they came, else NULL with *why saying why not:
 * "asking over SSH", or the error (then *failed is 1), or "" when never
 * asked. */
const nodectl_facts *remote_facts(const remote *r, int node, const char **why, int *failed);

#endif
