/* knobline.h: a node's `start` line rewritten to carry the knobs of a set
 * (kv_bits, prefill_step), for the engines that take them by restart
 * (tui/engine/eng_knob.h says where each engine wants them).
 *
 * Each occurrence of a knob's flag, in any spelling it has, as `--flag V`
 * or `--flag=V`, gets the new value; a flag not in the line is added at its
 * end; an environment setting (Ollama's) is an assignment before the
 * command (after a leading `env`), replaced in place or added in front;
 * prefill_step=auto removes the flag, leaving the engine's default. Every
 * other word stays as written, its quoting and the spaces around it too.
 */
#ifndef KNOBLINE_H
#define KNOBLINE_H

#include <stddef.h>

#include "engine/proto/protocol.h"
#include "tui/engine/engine.h"

/* Writes to out the start line of an engine-k node with want's knobs in
 * it. -1 with err when k refuses a knob (eng_knob_check: the message names
 * it and what k supports), when k's knobs are live or unknown, when a
 * quote in start is not closed, or when out is too short. */
int knobline_rewrite(eng_kind k, const char *start, const proto_set_args *want, char *out,
                     size_t outlen, char *err, size_t errlen);

#endif
