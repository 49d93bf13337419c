/* plan.h: the layer planner. Where each layer of a model goes so that a
 * target context fits every node's memory. The CLI (`infertop plan`) and
 * the console's Plan view both call plan_compute on inputs built by
 * plan_fill_nodes (plan_gather.h): one objective, one proposal rule.
 *
 * A layout gives each node of the ring, in ring order, a contiguous range
 * of layers (at least one each). Node i holding [first, last) needs
 *
 *   weights   its layers, plus the embedding table on the first node and
 *             the final norm and classifier on the last (model.h)
 *   KV        kv_bytes_for() of its layers at the target context and bits,
 *             the engine's own formula (engine/compute/kvcache.h)
 *   scratch   one prefill chunk's activations and attention tiles
 *             (plan_scratch_bytes)
 *   reserve   what the engine's memory guard keeps free: max(32 MiB,
 *             budget / 16) (engine/node/guard.h)
 *   runtime   the process's own memory besides all that: measured on a
 *             running node as used - weights - KV (used: RSS and the
 *             weights not paged in yet; it counts the scratch
 *             it already holds twice, on the safe side), else
 *             PLAN_RUNTIME_DEFAULT
 *
 * and the layout fits when that sum is within every node's budget.
 * Among the layouts that fit, the planner takes the one whose busiest
 * stage holds the fewest layers (balanced layers: measured speeds change
 * with load and batch, and the CLI has none to measure, so they are not
 * weighed), and among those the one leaving the most bytes free on its
 * tightest node; a remaining tie goes to the layout found first, which
 * gives later nodes the larger ranges.
 *
 * A restart costs the ring its sessions, so a new layout is proposed only
 * when the current one is unknown or does not fit the target, or when the
 * new one raises the largest context at the target kv_bits by margin_pct
 * percent or more (OPT_PLAN_MARGIN); otherwise the plan is the current
 * layout and `change` is 0.
 *
 * When no layout fits, the result says which node falls short by how much
 * in the layout where the shortfall is smallest, and the largest context
 * any layout fits at each kv_bits. Pure computation: the callers gather
 * budgets (plan_gather.h) and apply layouts (plan_apply.h).
 */
#ifndef PLAN_H
#define PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model/model.h"
#include "engine/proto/opt.h"      /* OPT_PLAN_CTX_MAX */
#include "engine/proto/protocol.h" /* PROTO_LAYERS_MAX, proto_status */

#define PLAN_NODES_MAX 64
#define PLAN_LAYERS_MAX PROTO_LAYERS_MAX
#define PLAN_NAME_MAX 64
/* An idle `inferd serve` holds about 13 MiB besides its weights (the
 * binary, OpenBLAS, ZeroMQ), measured on x86-64 Debian 12. */
#define PLAN_RUNTIME_DEFAULT ((uint64_t)16 << 20)
/* The prefill chunk a node runs when its own is not known. */
#define PLAN_PREFILL_DEFAULT 512

/* The kv_bits the max-context figures are given for, in this order. */
#define PLAN_N_BITS 3
extern const int plan_bits[PLAN_N_BITS];

/* A model's shape and weight bytes, read without its weights. */
typedef struct plan_model {
    char spec[1024];
    model_config cfg;
    size_t embed_bytes, out_bytes;
    size_t layer_bytes[PLAN_LAYERS_MAX];
} plan_model;

/* Probes `spec` (a model file on this machine, "embedded" or synth:...)
 * with the engine's reader. -1 with err. */
int plan_model_probe(const char *spec, plan_model *m, char *err, size_t errlen);

/* The same from a running node's status (model.shape): no file needed.
 * -1 with err when the node does not report its shape (an older node). */
int plan_model_from_status(const proto_status *s, plan_model *m, char *err, size_t errlen);

/* The weights bytes of a stage holding [first, last): equal to the
 * engine's model_stage_bytes for the loaded model. */
size_t plan_stage_weights(const plan_model *m, int first, int last);

/* The KV bytes of n_layers layers at ctx positions and bits: the
 * engine's kv_bytes_for. */
size_t plan_stage_kv(const plan_model *m, int n_layers, int bits, int ctx);

/* Scratch of the stage ending at layer `last` for prefill chunks of
 * prefill_step positions on `threads` threads: the forward pass's
 * fwd_scratch_bytes_of (engine/compute/forward.h) and the tail's logits
 * (vocab floats for each of PLAN_SEQS requests). */
#define PLAN_SEQS 16 /* inferd serve's default --max-seqs */
size_t plan_scratch_bytes(const plan_model *m, int last, int prefill_step, int threads);

/* The engine's memory guard reserve for a budget. */
uint64_t plan_reserve(uint64_t budget);

typedef struct plan_node {
    char name[PLAN_NAME_MAX];
    uint64_t budget;  /* bytes, > 0 */
    uint64_t runtime; /* bytes, see the top of this file */
    int prefill_step; /* for the scratch */
    int threads;
    int cur_first, cur_last; /* the current range; -1 when unknown */
    int host_nodes;          /* nodes sharing its host's memory (plan_gather.h), 1: alone */
} plan_node;

typedef struct plan_input {
    const plan_model *model;
    int n_nodes;
    plan_node nodes[PLAN_NODES_MAX];
    int ctx;        /* the target context, 1..OPT_PLAN_CTX_MAX */
    int kv_bits;    /* 32, 16, 8 or 4 */
    int margin_pct; /* OPT_PLAN_MARGIN */
} plan_input;

/* One node's figures in a layout. */
typedef struct plan_stage {
    int first, last;
    uint64_t weights, kv, scratch, reserve, runtime;
    uint64_t need;            /* the sum of the five */
    int64_t headroom;         /* budget - need: negative when it does not fit */
    int max_ctx[PLAN_N_BITS]; /* the largest context that fits, at plan_bits; 0: none */
} plan_stage;

typedef struct plan_layout {
    int known; /* the ranges are known (a current layout may not be) */
    int fits;  /* every node fits at the target */
    plan_stage st[PLAN_NODES_MAX];
    int max_ctx[PLAN_N_BITS]; /* the least over the nodes: what the layout supports */
    int ctx_at_bits;          /* the same at the input's kv_bits */
    int short_node;           /* the node with the least headroom */
} plan_layout;

typedef struct plan_result {
    int feasible;
    /* The plan; when infeasible, the layout whose largest shortfall is
     * smallest: st[short_node].headroom says by how much. */
    plan_layout planned;
    plan_layout current;       /* .known = 0 when a node's range is unknown */
    int best_ctx[PLAN_N_BITS]; /* the largest context any layout fits */
    int change;                /* 1: planned differs from current and is worth a restart */
    char why[160];             /* why the plan changes the layout or keeps it */
} plan_result;

/* Plans. -1 with err only for input that cannot be planned at all (fewer
 * layers than nodes, a budget of 0, a shape the KV cache cannot hold). */
int plan_compute(const plan_input *in, plan_result *out, char *err, size_t errlen);

#endif
