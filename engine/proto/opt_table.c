/* opt_table.c: every setting and flag of inferd and infertop, once (see
 * opt.h). A row's help is a phrase; its range or choices and its default
 * are appended from the row's fields wherever the help is shown, so they
 * are never typed twice. */
#include "opt.h"

#include <float.h>
#include <stdint.h>

#include "engine/sys/kvbits.h"
#include "protocol.h"

#define ALL_INFERD                                                                                 \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE) |  \
     OPT_VB(OPT_V_QUANTIZE) | OPT_VB(OPT_V_KEYGEN) | OPT_VB(OPT_V_QUALITY))
#define LOCAL_MODEL                                                                                \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_TOKENIZE) |  \
     OPT_VB(OPT_V_QUANTIZE) | OPT_VB(OPT_V_QUALITY))
#define COMPUTE                                                                                    \
    (OPT_VB(OPT_V_GENERATE) | OPT_VB(OPT_V_SERVE) | OPT_VB(OPT_V_EVAL) | OPT_VB(OPT_V_QUANTIZE) |  \
     OPT_VB(OPT_V_QUALITY))

/* infertop's verbs; a verb with modes takes the flags of every mode
 * (opt.h), so that they parse before the mode is known. */
#define NODES_OPS                                                                                  \
    (OPT_VB(OPT_V_NODES_START) | OPT_VB(OPT_V_NODES_STOP) | OPT_VB(OPT_V_NODES_RESTART) |          \
     OPT_VB(OPT_V_NODES_STATUS) | OPT_VB(OPT_V_NODES_LOGS) | OPT_VB(OPT_V_NODES_FACTS) |           \
     OPT_VB(OPT_V_NODES_EXEC))
#define NODES_SSH (OPT_VB(OPT_V_NODES) | NODES_OPS)
#define NODES_ALL (NODES_SSH | OPT_VB(OPT_V_NODES_COMMAND))
#define GROWTH (OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_GROWTH) | OPT_VB(OPT_V_STRESS_SWEEP))
#define FIXED (OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_FIXED) | OPT_VB(OPT_V_STRESS_SWEEP))
#define ARRIVALS (FIXED | OPT_VB(OPT_V_STRESS_SOAK))
#define STRESS_ALL (GROWTH | ARRIVALS)
#define HISTORY_ALL                                                                                \
    (OPT_VB(OPT_V_HISTORY) | OPT_VB(OPT_V_HISTORY_LIST) | OPT_VB(OPT_V_HISTORY_SHOW) |             \
     OPT_VB(OPT_V_HISTORY_COMPARE) | OPT_VB(OPT_V_HISTORY_BEST) | OPT_VB(OPT_V_HISTORY_EXPORT) |   \
     OPT_VB(OPT_V_HISTORY_PRUNE))
#define DASHBOARD (OPT_VB(OPT_V_CONSOLE) | OPT_VB(OPT_V_DEMO))
#define ALL_INFERTOP                                                                               \
    (DASHBOARD | OPT_VB(OPT_V_STATUS) | OPT_VB(OPT_V_SET) | NODES_ALL | STRESS_RUN | HISTORY_ALL | \
     OPT_VB(OPT_V_METRICS) | OPT_VB(OPT_V_PLAN))
#define HISTORY_MODE(v) (OPT_VB(OPT_V_HISTORY) | OPT_VB(v))
#define SWEEP (OPT_VB(OPT_V_STRESS) | OPT_VB(OPT_V_STRESS_SWEEP))
#define QUALITY OPT_VB(OPT_V_STRESS_QUALITY)
/* Every mode that drives a ring: the speed modes and quality. */
#define STRESS_RUN (STRESS_ALL | QUALITY)
/* Seconds of the longest timeouts: a day. */
#define DAY_S 86400.0

/* A constant's value as typed, for a row's default. */
#define TYPED(c) TYPED_(c)
#define TYPED_(c) #c

/* Request ids, session names, cancel targets and sources. */
#define ID_TEXT .type = OPT_T_TEXT, .lo = 1, .hi = PROTO_ID_MAX, .no_ctl = 1

const opt_def opt_defs[OPT_COUNT] = {
/* The rows by concern, each file a slice of this initializer. */
// clang-format off
#include "opt_rows_inferd.h"
#include "opt_rows_wire.h"
#include "opt_rows_infertop.h"
    // clang-format on
};
