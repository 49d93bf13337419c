/* plan_int.h: what plan.c takes from plan_model.c, beside plan.h. */
#ifndef PLAN_INT_H
#define PLAN_INT_H

#include "plan.h"
#include "tui/ssh/nodepool.h"

/* A stage's weights given the bytes of its layers: adds the embedding on
 * the first stage and the norm and classifier on the last. */
size_t plan_weights_from(const plan_model *m, size_t layers, int first, int last);

/* 0 when the engine's KV cache can hold this shape at these bits, else -1
 * with its message. */
int plan_kv_check(const plan_model *m, int bits, char *err, size_t errlen);

/* Runs reqs[k] on nodes[k] of the pool's cluster, all at once, and waits
 * for every result (res[k] for nodes[k]); n <= PLAN_NODES_MAX. */
void plan_ssh_each(nodepool *p, const nodectl_req *reqs, const int *nodes, int n,
                   nodectl_result *res);
/* The same with one op for every node. */
void plan_ssh_run(nodepool *p, nodectl_op op, const int *nodes, int n, nodectl_result *res);

/* The next value of `--FLAG` in a command line from *p, read as a shell
 * reads it: 1 with the text that holds it in [*from, *to) (the value's
 * word, or the whole --FLAG=V) and the value in value; 2 for the
 * --FLAG=V form; 0 when there is no more (or the line's quoting is
 * broken: the rest stays as it is). plan_file.c. */
int plan_flag_next(const char **p, const char *flag, const char **from, const char **to,
                   char *value, size_t len);

#endif
