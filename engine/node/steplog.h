/* steplog.h: the node's log file (--log): one line per step in the field
 * notes' style, plus lifecycle lines, each stamped with local time:
 *
 *   2025-01-31 12:00:00.123 [STEP 12] req=r1 phase=decode tokens=1 pos=57
 *       model=7.1ms eval=0.4ms wait=0.3ms step=7.5ms kv=1.2MiB
 *       kv_bits=16 act_max=3.2 nonfinite=0          (one line in the file)
 *   2025-01-31 12:00:00.200 [REQ r1] end ok ttft=12.0ms ...
 *
 * A NULL log (no --log) takes every call and writes nothing.
 */
#ifndef STEPLOG_H
#define STEPLOG_H

#include <stddef.h>

#include "engine/proto/protocol.h"

typedef struct steplog steplog;

/* Opens path for appending. */
int steplog_open(steplog **out, const char *path, char *err, size_t errlen);
void steplog_close(steplog *l);

void steplog_step(steplog *l, const proto_step *s);

/* A lifecycle line: "[TAG] message". */
void steplog_line(steplog *l, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
