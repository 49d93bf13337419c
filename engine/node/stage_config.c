/* stage_config.c: live config on this stage (PROTOCOL.md "Live config"):
 * whether a set's kv_bits fits the memory guard, converting every cache to
 * it at a step boundary, the new prefill_step, and putting the last set
 * back when the ring undoes it. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "engine/sys/clock.h"
#include "stage.h"
#include "stage_state.h"

static json_t *prefill_json(int prefill_step)
{
    return prefill_step == PROTO_PREFILL_AUTO ? json_string("auto") : json_integer(prefill_step);
}

json_t *stage_set_to_json(const proto_set_args *set)
{
    json_t *o = json_object();
    if (set->has_prefill_step)
        json_object_set_new(o, "prefill_step", prefill_json(set->prefill_step));
    if (set->has_kv_bits)
        json_object_set_new(o, "kv_bits", json_integer(set->kv_bits));
    return o;
}

/* Adds to *grow or *shrink how a cache holding `have` bytes changes to `want`. */
static void tally(size_t have, size_t want, size_t *grow, size_t *shrink)
{
    if (want >= have)
        *grow = want - have > SIZE_MAX - *grow ? SIZE_MAX : *grow + (want - have);
    else
        *shrink += have - want;
}

/* Bytes the caches would grow by at `bits`, each up to the context it is
 * meant to reach (the request's admitted context, a session's length);
 * 0 when they shrink. */
static size_t stage_growth(stage *sg, int bits)
{
    kv_shape shape = fwd_kv_shape(sg->fwd);
    size_t grow = 0, shrink = 0;
    for (int i = 0; i < NODE_SEQS_MAX; i++)
        if (stage_req_follows_set(&sg->reqs[i]))
            tally(kv_bytes(sg->reqs[i].kv), kv_bytes_for(shape, bits, sg->reqs[i].ctx), &grow,
                  &shrink);
    for (int i = 0; i < sess_count(sg->sessions); i++) {
        kv_cache *kv = sess_cache_at(sg->sessions, i);
        tally(kv_bytes(kv), kv_bytes_for(shape, bits, kv_len(kv)), &grow, &shrink);
    }
    return grow > shrink ? grow - shrink : 0;
}

/* The i-th cache this node holds at the live setting: the sessions',
 * then the running requests'. NULL past the last. */
static kv_cache *stage_cache_at(stage *sg, int i)
{
    if (i < sess_count(sg->sessions))
        return sess_cache_at(sg->sessions, i);
    i -= sess_count(sg->sessions);
    for (int k = 0; k < NODE_SEQS_MAX; k++)
        if (stage_req_follows_set(&sg->reqs[k]) && i-- == 0)
            return sg->reqs[k].kv;
    return NULL;
}

/* Converts every cache this node holds to `bits`, the running requests'
 * too (they go on at the new precision from their next step); on a
 * failure converts the ones already done back, so that all caches keep
 * one precision. When that fails too, the caches hold two precisions:
 * err says so, and so does an error event, for the operator to act on. */
static int stage_convert(stage *sg, int bits, char *err, size_t errlen)
{
    kv_cache *kv;
    for (int i = 0; (kv = stage_cache_at(sg, i)) != NULL; i++) {
        if (kv_convert(kv, bits, err, errlen) != 0) {
            char back[256] = "";
            int stuck = 0;
            for (int k = 0; k < i; k++)
                stuck += kv_convert(stage_cache_at(sg, k), sg->kv_bits, back, sizeof back) != 0;
            if (stuck) {
                size_t used = strlen(err);
                snprintf(err + used, errlen - used,
                         "; converting back failed too (%s): %d caches stay at %d bits, the "
                         "others are at %d",
                         back, stuck, bits, sg->kv_bits);
                node_event(sg->nd, PROTO_EV_ERROR, "", proto_code_name(PROTO_E_INTERNAL), NULL,
                           "stage '%s': kv_bits %d -> %d: %s", sg->nd->o.name, sg->kv_bits, bits,
                           err);
            }
            return -1;
        }
    }
    return 0;
}

static void set_entry_identity(const stage *sg, json_t *result)
{
    json_object_set_new(result, "name", json_string(sg->nd->o.name));
    json_object_set_new(result, "first", json_integer(fwd_first(sg->fwd)));
    json_object_set_new(result, "last", json_integer(fwd_last(sg->fwd)));
}

/* 0 when this node's caches would fit its budget at the set's kv_bits,
 * else kv_oom naming the stage. Changes nothing. */
static int stage_set_fits(stage *sg, const proto_set_args *set, proto_error *e)
{
    if (!set->has_kv_bits || set->kv_bits == sg->kv_bits)
        return 0;
    size_t growth = stage_growth(sg, set->kv_bits);
    char msg[PROTO_MESSAGE_MAX];
    size_t evict;
    if (growth == 0 ||
        guard_admit(node_mem(sg->nd, 1), growth, 0, &evict, msg, sizeof msg) == GUARD_FITS)
        return 0;
    char who[PROTO_TEXT_MAX + 64];
    stage_name_layers(sg, who, sizeof who);
    return proto_fail(e, PROTO_E_KV_OOM, "kv_bits", "%s: kv_bits %d -> %d: %s", who, sg->kv_bits,
                      set->kv_bits, msg);
}

/* A refusal goes into the stage's entry too, so that the round carries it. */
static int set_verdict(json_t *result, int rc, const proto_error *e)
{
    json_object_set_new(result, "ok", json_boolean(rc == 0));
    if (rc != 0) {
        json_object_set_new(result, "code", json_string(proto_code_name(e->code)));
        json_object_set_new(result, "message", json_string(e->message));
    }
    return rc;
}

int stage_check_set(stage *sg, const proto_set_args *set, json_t *result, proto_error *e)
{
    set_entry_identity(sg, result);
    return set_verdict(result, stage_set_fits(sg, set, e), e);
}

/* Applies a set that fits: converts the caches, then the knobs. */
static int set_apply(stage *sg, const proto_set_args *set, json_t *result, proto_error *e)
{
    set_entry_identity(sg, result);
    if (stage_set_fits(sg, set, e) != 0)
        return -1;
    if (set->has_kv_bits && set->kv_bits != sg->kv_bits) {
        size_t before = stage_kv_bytes(sg);
        double t0 = clock_ms();
        char err[PROTO_MESSAGE_MAX];
        if (stage_convert(sg, set->kv_bits, err, sizeof err) != 0)
            return proto_fail(e, PROTO_E_INTERNAL, "kv_bits", "stage '%s': converting KV: %s",
                              sg->nd->o.name, err);
        double ms = clock_ms() - t0;
        size_t after = stage_kv_bytes(sg);
        malloc_trim(0);
        json_t *d =
            json_pack("{si si sf sI sI}", "from_bits", sg->kv_bits, "to_bits", set->kv_bits, "ms",
                      ms, "bytes_before", (json_int_t)before, "bytes_after", (json_int_t)after);
        node_event(sg->nd, PROTO_EV_KV_CONVERTED, "", "", d,
                   "KV cache converted from %d to %d bits in %.1f ms: %zu -> %zu bytes",
                   sg->kv_bits, set->kv_bits, ms, before, after);
        json_object_set_new(result, "kv", d);
        sg->kv_bits = set->kv_bits;
    }
    if (set->has_prefill_step)
        sg->prefill_step = set->prefill_step;
    json_t *d = json_pack("{so si}", "prefill_step", prefill_json(sg->prefill_step), "kv_bits",
                          sg->kv_bits);
    char step_text[16];
    if (sg->prefill_step == PROTO_PREFILL_AUTO)
        snprintf(step_text, sizeof step_text, "auto");
    else
        snprintf(step_text, sizeof step_text, "%d", sg->prefill_step);
    node_event(sg->nd, PROTO_EV_CONFIG_APPLIED, "", "", d,
               "config applied on stage '%s': kv_bits %d, prefill_step %s", sg->nd->o.name,
               sg->kv_bits, step_text);
    json_object_update(result, d);
    json_decref(d);
    return 0;
}

int stage_apply_set(stage *sg, uint64_t op, const proto_set_args *set, json_t *result,
                    proto_error *e)
{
    set_undo before = {.op = op, .kv_bits = sg->kv_bits, .prefill_step = sg->prefill_step};
    if (set_verdict(result, set_apply(sg, set, result, e), e) != 0)
        return -1;
    sg->undo = before;
    return 0;
}

int stage_undo_set(stage *sg, uint64_t op, json_t *result, proto_error *e)
{
    if (sg->undo.op != op) {
        /* This stage never applied it: nothing to put back. */
        set_entry_identity(sg, result);
        json_object_set_new(result, "prefill_step", prefill_json(sg->prefill_step));
        json_object_set_new(result, "kv_bits", json_integer(sg->kv_bits));
        return set_verdict(result, 0, e);
    }
    proto_set_args back = {.has_kv_bits = 1,
                           .kv_bits = sg->undo.kv_bits,
                           .has_prefill_step = 1,
                           .prefill_step = sg->undo.prefill_step};
    sg->undo.op = 0;
    return set_verdict(result, set_apply(sg, &back, result, e), e);
}
