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

/* Runs op on nodes[0..n) of the pool's cluster at once and waits for
 * every result (res[k] for nodes[k]). */
void plan_ssh_run(nodepool *p, nodectl_op op, const int *nodes, int n, nodectl_result *res);

#endif
