/* eng_knob.h: what the console's two knobs, kv_bits and prefill_step
 * (proto_set_args), mean on each engine, and the start line that carries
 * them (the rewrite itself is tui/core/knobline.h).
 *
 * inferd takes both live (`set` over its control socket); its start line
 * carries them as --kv-bits and --prefill-step for a restart of an inferd
 * node driven over HTTP (stress quality's top-k estimate). The HTTP engines
 * read them from their command line only, so they are applied by
 * rewriting the node's `start` line and restarting it:
 *
 *   engine     kv_bits 16 / 8 / 4                       prefill_step N
 *   llama.cpp  --cache-type-k X --cache-type-v X,        --ubatch-size N
 *              X = f16 / q8_0 / q4_0, with -fa when X
 *              is quantized (a quantized V cache needs
 *              flash attention)
 *   vllm       --kv-cache-dtype auto / fp8 (16 / 8)      --max-num-batched-tokens N
 *   ollama     OLLAMA_KV_CACHE_TYPE=f16 / q8_0 / q4_0    none: refused
 *              before the command, with
 *              OLLAMA_FLASH_ATTENTION=1 when quantized
 *   openai     refused: its start line is not known to infertop
 *
 * prefill_step=auto removes the flag, so that the engine takes its own
 * default. A value an engine cannot express is refused, and the message
 * says what the engine supports.
 */
#ifndef ENG_KNOB_H
#define ENG_KNOB_H

#include <stddef.h>

#include "engine.h"
#include "engine/proto/protocol.h"

typedef enum eng_knob_mode {
    ENG_KNOB_LIVE,    /* inferd: a set request, nothing restarts */
    ENG_KNOB_RESTART, /* the start line is rewritten and the node restarted */
    ENG_KNOB_NONE     /* the engine's knobs are not known (openai) */
} eng_knob_mode;

eng_knob_mode eng_knob_mode_of(eng_kind k);
/* "live", "restart", "none": how the console and `set` say it. */
const char *eng_knob_mode_name(eng_knob_mode m);

/* 0 when engine k can take every knob want has, else -1 with err naming
 * the knob and what k supports ("kv_bits 32: llama.cpp supports kv_bits
 * 16 (f16), 8 (q8_0) or 4 (q4_0)"). */
int eng_knob_check(eng_kind k, const proto_set_args *want, char *err, size_t errlen);

/* Where a knob's value goes in a start line: a flag (its spellings, the
 * one added first; NULL ends) or an environment variable assigned before
 * the command. names[0] NULL: the engine has no such place. */
#define ENG_KNOB_SPELLINGS 3
struct eng_knob_slot {
    int env;
    const char *names[ENG_KNOB_SPELLINGS];
};

/* How one kv_bits value is written; quantized values need `fa` on. */
struct eng_kv_choice {
    int bits;
    const char *text;
    int quantized;
};

#define ENG_KV_CHOICES 4

/* One engine's table. tui/core/knobline.h rewrites start lines with it. */
struct eng_knobs {
    eng_knob_mode mode;
    struct eng_knob_slot kv[2]; /* every slot gets kv_bits' text (llama.cpp: K and V) */
    struct eng_kv_choice kv_choices[ENG_KV_CHOICES];
    /* What a quantized cache needs turned on, and the value that turns it
     * on (NULL: a flag that takes none). */
    struct eng_knob_slot fa;
    const char *fa_on;
    struct eng_knob_slot step; /* prefill_step's number; auto removes it */
};

const struct eng_knobs *eng_knobs_of(eng_kind k);

/* The most precise kv_bits engine k takes (inferd 32, llama.cpp 16 =
 * f16): the reference of a top-k quality estimate. 0: none known. */
int eng_knob_ref_bits(eng_kind k);

/* The text kv_bits `bits` is written as on engine k, and whether it is
 * quantized; NULL when eng_knob_check refuses it. */
const struct eng_kv_choice *eng_knob_kv_choice(eng_kind k, int bits);

/* "kv_bits 8", "prefill_step auto", "kv_bits 8, prefill_step 512": the
 * knobs want sets, for messages. */
void eng_knob_describe(const proto_set_args *want, char *buf, size_t len);

#endif
