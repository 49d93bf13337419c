/* quality.h: a quality measurement's figures (engine/compute/kldiv.h) as
 * the `quality` object of PROTOCOL.md "quality", for the op's final reply
 * and for `inferd quality --json`. */
#ifndef QUALITY_H
#define QUALITY_H

#include <jansson.h>
#include <stddef.h>

#include "engine/compute/kldiv.h"

/* The object of a run of plan p at kv_bits against 32, its positions in
 * a; NULL with a message when out of memory. */
json_t *quality_json(const kld_plan *p, const kld_acc *a, int kv_bits, char *err, size_t errlen);

#endif
