/* eng_knob.c: the knobs' table per engine (eng_knob.h). */
#include "eng_knob.h"

#include <stdio.h>
#include <string.h>

/* llama-server's flags as of llama.cpp c392e5094 (Feb 2025, the build the
 * fixtures come from): -fa takes no value there; builds from Aug 2025 on
 * take `-fa on|off|auto`, whose `on` knobline.c keeps or sets when the
 * line already has it. */
static const struct eng_knobs table[ENG_COUNT] = {
    /* inferd takes its knobs live; its start line carries them too, for
     * the restarts of an inferd node driven over HTTP (stress quality's
     * top-k estimate applies its settings by restart on every engine). */
    [ENG_INFERD] = {.mode = ENG_KNOB_LIVE,
                    .kv = {{0, {"--kv-bits"}}},
                    .kv_choices = {{32, "32", 0}, {16, "16", 0}, {8, "8", 0}, {4, "4", 0}},
                    .step = {0, {"--prefill-step"}}},
    [ENG_LLAMACPP] = {.mode = ENG_KNOB_RESTART,
                      .kv = {{0, {"--cache-type-k", "-ctk"}}, {0, {"--cache-type-v", "-ctv"}}},
                      .kv_choices = {{16, "f16", 0}, {8, "q8_0", 1}, {4, "q4_0", 1}},
                      .fa = {0, {"-fa", "--flash-attn"}},
                      .step = {0, {"--ubatch-size", "-ub"}}},
    /* vLLM's parser also takes the underscore spellings. */
    [ENG_VLLM] = {.mode = ENG_KNOB_RESTART,
                  .kv = {{0, {"--kv-cache-dtype", "--kv_cache_dtype"}}},
                  .kv_choices = {{16, "auto", 0}, {8, "fp8", 1}},
                  .step = {0, {"--max-num-batched-tokens", "--max_num_batched_tokens"}}},
    /* Ollama reads its server settings from the environment only, and
     * quantizes the cache only with flash attention on. */
    [ENG_OLLAMA] = {.mode = ENG_KNOB_RESTART,
                    .kv = {{1, {"OLLAMA_KV_CACHE_TYPE"}}},
                    .kv_choices = {{16, "f16", 0}, {8, "q8_0", 1}, {4, "q4_0", 1}},
                    .fa = {1, {"OLLAMA_FLASH_ATTENTION"}},
                    .fa_on = "1"},
    [ENG_OPENAI] = {.mode = ENG_KNOB_NONE},
};

eng_knob_mode eng_knob_mode_of(eng_kind k)
{
    return table[k].mode;
}

const char *eng_knob_mode_name(eng_knob_mode m)
{
    return m == ENG_KNOB_LIVE ? "live" : m == ENG_KNOB_RESTART ? "restart" : "none";
}

const struct eng_knobs *eng_knobs_of(eng_kind k)
{
    return &table[k];
}

int eng_knob_ref_bits(eng_kind k)
{
    int best = 0;
    for (int i = 0; i < ENG_KV_CHOICES && table[k].kv_choices[i].text; i++)
        if (table[k].kv_choices[i].bits > best)
            best = table[k].kv_choices[i].bits;
    return best;
}

const struct eng_kv_choice *eng_knob_kv_choice(eng_kind k, int bits)
{
    for (int i = 0; i < ENG_KV_CHOICES && table[k].kv_choices[i].text; i++)
        if (table[k].kv_choices[i].bits == bits)
            return &table[k].kv_choices[i];
    return NULL;
}

/* "16 (f16), 8 (q8_0) or 4 (q4_0)" */
static void kv_supported(eng_kind k, char *buf, size_t len)
{
    const struct eng_kv_choice *c = table[k].kv_choices;
    int n = 0;
    while (n < ENG_KV_CHOICES && c[n].text)
        n++;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t at = strlen(buf);
        snprintf(buf + at, len - at, "%s%d (%s)",
                 i == 0       ? ""
                 : i == n - 1 ? " or "
                              : ", ",
                 c[i].bits, c[i].text);
    }
}

int eng_knob_check(eng_kind k, const proto_set_args *want, char *err, size_t errlen)
{
    const struct eng_knobs *t = &table[k];
    char kv[128];
    if (t->mode == ENG_KNOB_LIVE)
        return 0;
    if (t->mode == ENG_KNOB_NONE && (want->has_kv_bits || want->has_prefill_step)) {
        snprintf(err, errlen,
                 "%s: an %s node's start line is not known to infertop: set it in its start line",
                 want->has_kv_bits ? "kv_bits" : "prefill_step", eng_name(k));
        return -1;
    }
    kv_supported(k, kv, sizeof kv);
    if (want->has_kv_bits && !eng_knob_kv_choice(k, want->kv_bits)) {
        snprintf(err, errlen, "kv_bits %d: %s supports kv_bits %s", want->kv_bits, eng_name(k), kv);
        return -1;
    }
    if (want->has_prefill_step && !t->step.names[0]) {
        snprintf(err, errlen, "prefill_step: %s has no setting for it; it supports kv_bits %s",
                 eng_name(k), kv);
        return -1;
    }
    return 0;
}

void eng_knob_describe(const proto_set_args *want, char *buf, size_t len)
{
    char step[16];
    if (want->prefill_step == PROTO_PREFILL_AUTO)
        snprintf(step, sizeof step, "auto");
    else
        snprintf(step, sizeof step, "%d", want->prefill_step);
    if (want->has_kv_bits && want->has_prefill_step)
        snprintf(buf, len, "kv_bits %d, prefill_step %s", want->kv_bits, step);
    else if (want->has_kv_bits)
        snprintf(buf, len, "kv_bits %d", want->kv_bits);
    else if (want->has_prefill_step)
        snprintf(buf, len, "prefill_step %s", step);
    else
        snprintf(buf, len, "nothing");
}
