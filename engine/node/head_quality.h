/* head_quality.h: a quality request on the head (head_quality.c): the
 * windows of its text, its steps in pairs (the reference chunk at kv_bits
 * 32, then the test chunk at the request's bits, the same positions) and
 * the KL of each pair as the test chunk's logits come. head_step.c runs
 * the steps as an eval's, asking here what each is and handing here what
 * comes back. */
#ifndef HEAD_QUALITY_H
#define HEAD_QUALITY_H

#include "head_state.h"

/* Once the text is tokens (n of them): the windows, and j->n_ids set to
 * the positions both passes run. -1 with e when no position would be
 * scored or out of memory. */
int head_quality_prepare(head *hd, job *j, int n, proto_error *e);
void head_quality_free(head_quality *q);
/* The length of a window: the context each of the two caches reaches. */
int head_quality_ctx(const job *j);
/* The next step's position in its window, and positions left in it. */
int head_quality_pos(const job *j);
int head_quality_left(const job *j);
/* Begins the next step of up to *n positions: selects c's cache for it
 * and returns its ring flags (RING_F_REF, RING_F_RESET); the test pass
 * takes the reference's chunk, so *n may change. */
unsigned head_quality_begin(job *j, stage_req *c, int *n);
/* Token i of the step begun. */
int head_quality_id(const job *j, int i);
/* Where a reference chunk of n positions goes on a single node (the
 * buffer the pair's KL reads); NULL with e when out of memory. */
float *head_quality_ref(head *hd, job *j, int n, proto_error *e);
/* A step's logits [n][vocab] from position pos: a reference chunk is
 * kept, a test chunk is compared with it and its frame goes to the
 * client. -1 with e (the job is to fail). */
int head_quality_take(head *hd, job *j, unsigned flags, int pos, int n, const float *logits,
                      proto_error *e);
/* The final reply's `quality` object; NULL with e when out of memory. */
json_t *head_quality_result(const job *j, proto_error *e);

#endif
