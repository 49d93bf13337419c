/* test_knobline.c: the knobs' tables (tui/engine/eng_knob.h) and the start
 * line's rewrite (tui/core/knobline.h), over start lines as operators
 * write them: short and long flags, `=` forms, quoted arguments, lines
 * joined from continuation lines, environment prefixes. */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/core/knobline.h"
#include "tui/engine/eng_knob.h"

static const proto_set_args KV8 = {.has_kv_bits = 1, .kv_bits = 8};
static const proto_set_args KV16 = {.has_kv_bits = 1, .kv_bits = 16};
static const proto_set_args KV4 = {.has_kv_bits = 1, .kv_bits = 4};
static const proto_set_args STEP256 = {.has_prefill_step = 1, .prefill_step = 256};
static const proto_set_args STEP_AUTO = {.has_prefill_step = 1, .prefill_step = PROTO_PREFILL_AUTO};
static const proto_set_args BOTH = {
    .has_kv_bits = 1, .kv_bits = 4, .has_prefill_step = 1, .prefill_step = 1024};

/* The rewrite of `start` must succeed and give `want`. */
static void rewrites(eng_kind k, const char *start, const proto_set_args *a, const char *want)
{
    char out[4096], err[256] = "";
    int rc = knobline_rewrite(k, start, a, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s: %s", start, err);
    cr_assert_str_eq(out, want, "from: %s", start);
}

/* The rewrite must be refused with a message holding each of the texts. */
static void refused(eng_kind k, const char *start, const proto_set_args *a, const char *has1,
                    const char *has2)
{
    char out[4096], err[256] = "";
    cr_assert_eq(knobline_rewrite(k, start, a, out, sizeof out, err, sizeof err), -1);
    cr_assert(strstr(err, has1), "\"%s\" not in: %s", has1, err);
    cr_assert(!has2 || strstr(err, has2), "\"%s\" not in: %s", has2, err);
}

Test(eng_knob, modes)
{
    cr_assert_eq(eng_knob_mode_of(ENG_INFERD), ENG_KNOB_LIVE);
    cr_assert_eq(eng_knob_mode_of(ENG_LLAMACPP), ENG_KNOB_RESTART);
    cr_assert_eq(eng_knob_mode_of(ENG_VLLM), ENG_KNOB_RESTART);
    cr_assert_eq(eng_knob_mode_of(ENG_OLLAMA), ENG_KNOB_RESTART);
    cr_assert_eq(eng_knob_mode_of(ENG_OPENAI), ENG_KNOB_NONE);
    cr_assert_str_eq(eng_knob_mode_name(ENG_KNOB_LIVE), "live");
    cr_assert_str_eq(eng_knob_mode_name(ENG_KNOB_RESTART), "restart");
}

Test(eng_knob, check_names_what_each_engine_supports)
{
    char err[256];
    proto_set_args kv32 = {.has_kv_bits = 1, .kv_bits = 32};
    cr_assert_eq(eng_knob_check(ENG_INFERD, &kv32, err, sizeof err), 0);
    cr_assert_eq(eng_knob_check(ENG_LLAMACPP, &kv32, err, sizeof err), -1);
    cr_assert_str_eq(err, "kv_bits 32: llama.cpp supports kv_bits 16 (f16), 8 (q8_0) or 4 (q4_0)");
    cr_assert_eq(eng_knob_check(ENG_VLLM, &KV4, err, sizeof err), -1);
    cr_assert_str_eq(err, "kv_bits 4: vllm supports kv_bits 16 (auto) or 8 (fp8)");
    cr_assert_eq(eng_knob_check(ENG_VLLM, &KV8, err, sizeof err), 0);
    cr_assert_eq(eng_knob_check(ENG_OLLAMA, &STEP256, err, sizeof err), -1);
    cr_assert_str_eq(err, "prefill_step: ollama has no setting for it; it supports kv_bits "
                          "16 (f16), 8 (q8_0) or 4 (q4_0)");
    cr_assert_eq(eng_knob_check(ENG_OPENAI, &KV8, err, sizeof err), -1);
    cr_assert_str_eq(err, "kv_bits: an openai node's start line is not known to infertop: set it "
                          "in its start line");
    cr_assert_eq(eng_knob_check(ENG_OPENAI, &STEP256, err, sizeof err), -1);
    cr_assert(strstr(err, "prefill_step: "));
}

Test(eng_knob, describe)
{
    char buf[64];
    eng_knob_describe(&KV8, buf, sizeof buf);
    cr_assert_str_eq(buf, "kv_bits 8");
    eng_knob_describe(&STEP_AUTO, buf, sizeof buf);
    cr_assert_str_eq(buf, "prefill_step auto");
    eng_knob_describe(&BOTH, buf, sizeof buf);
    cr_assert_str_eq(buf, "kv_bits 4, prefill_step 1024");
}

Test(knobline, llamacpp_adds_missing_flags_at_the_end)
{
    rewrites(ENG_LLAMACPP, "llama-server -m /m/7b.gguf --port 8080", &KV8,
             "llama-server -m /m/7b.gguf --port 8080 --cache-type-k q8_0 --cache-type-v q8_0 -fa");
    /* f16 needs no flash attention */
    rewrites(ENG_LLAMACPP, "llama-server -m x", &KV16,
             "llama-server -m x --cache-type-k f16 --cache-type-v f16");
    rewrites(ENG_LLAMACPP, "llama-server -m x", &STEP256, "llama-server -m x --ubatch-size 256");
}

Test(knobline, llamacpp_replaces_long_short_and_equals_forms)
{
    rewrites(ENG_LLAMACPP, "llama-server -ctk q8_0 -ctv q8_0 -fa -m x", &KV4,
             "llama-server -ctk q4_0 -ctv q4_0 -fa -m x");
    rewrites(ENG_LLAMACPP, "llama-server --cache-type-k=f16 --cache-type-v f16 --flash-attn -m x",
             &KV8, "llama-server --cache-type-k=q8_0 --cache-type-v q8_0 --flash-attn -m x");
    rewrites(ENG_LLAMACPP, "llama-server -ub 512 -m x --ubatch-size=64", &STEP256,
             "llama-server -ub 256 -m x --ubatch-size=256");
    /* a longer flag that starts like one of the knobs' is another flag */
    rewrites(ENG_LLAMACPP, "llama-server --cache-type-k-draft q8_0 -m x", &KV16,
             "llama-server --cache-type-k-draft q8_0 -m x --cache-type-k f16 --cache-type-v f16");
}

Test(knobline, llamacpp_going_back_to_f16_keeps_flash_attention)
{
    rewrites(ENG_LLAMACPP, "llama-server -m x -ctk q4_0 -ctv q4_0 -fa", &KV16,
             "llama-server -m x -ctk f16 -ctv f16 -fa");
}

Test(knobline, llamacpp_newer_flash_attn_values)
{
    rewrites(ENG_LLAMACPP, "llama-server -fa off -m x", &KV8,
             "llama-server -fa on -m x --cache-type-k q8_0 --cache-type-v q8_0");
    rewrites(ENG_LLAMACPP, "llama-server --flash-attn=auto -m x", &KV8,
             "llama-server --flash-attn=on -m x --cache-type-k q8_0 --cache-type-v q8_0");
    rewrites(ENG_LLAMACPP, "llama-server --flash-attn on -m x", &KV8,
             "llama-server --flash-attn on -m x --cache-type-k q8_0 --cache-type-v q8_0");
}

Test(knobline, prefill_auto_removes_the_flag)
{
    rewrites(ENG_LLAMACPP, "llama-server -ub 512 -m x", &STEP_AUTO, "llama-server -m x");
    rewrites(ENG_LLAMACPP, "llama-server -m x --ubatch-size=64", &STEP_AUTO, "llama-server -m x");
    rewrites(ENG_VLLM, "vllm serve m --max-num-batched-tokens 2048 --port 8000", &STEP_AUTO,
             "vllm serve m --port 8000");
    /* nothing to remove: the line stays */
    rewrites(ENG_LLAMACPP, "llama-server -m x", &STEP_AUTO, "llama-server -m x");
}

Test(knobline, quoting_and_spacing_of_other_words_stay)
{
    rewrites(ENG_LLAMACPP,
             "'/opt/llama cpp/llama-server'  -m \"/models/my model.gguf\"\t--alias 'a b' -ub 64",
             &BOTH,
             "'/opt/llama cpp/llama-server'  -m \"/models/my model.gguf\"\t--alias 'a b' -ub 1024 "
             "--cache-type-k q4_0 --cache-type-v q4_0 -fa");
    /* a quoted value of a knob is replaced */
    rewrites(ENG_LLAMACPP, "llama-server --cache-type-k 'q8_0' -m x", &KV4,
             "llama-server --cache-type-k q4_0 -m x --cache-type-v q4_0 -fa");
    /* trailing spaces stay after the added flags */
    rewrites(ENG_VLLM, "vllm serve m  ", &KV8, "vllm serve m --kv-cache-dtype fp8  ");
}

Test(knobline, continuation_joined_lines)
{
    /* cluster.c joins a `start` continued on indented lines with a space */
    rewrites(ENG_VLLM,
             "vllm serve meta-llama/Llama-3.1-8B --port 8000 --kv-cache-dtype auto "
             "--max-num-batched-tokens 8192 --gpu-memory-utilization 0.9",
             &KV8,
             "vllm serve meta-llama/Llama-3.1-8B --port 8000 --kv-cache-dtype fp8 "
             "--max-num-batched-tokens 8192 --gpu-memory-utilization 0.9");
    rewrites(ENG_VLLM,
             "python -m vllm.entrypoints.openai.api_server --model m --kv_cache_dtype=fp8", &KV16,
             "python -m vllm.entrypoints.openai.api_server --model m --kv_cache_dtype=auto");
    rewrites(ENG_VLLM, "vllm serve m --max-num-batched-tokens 8192", &STEP256,
             "vllm serve m --max-num-batched-tokens 256");
}

Test(knobline, ollama_environment_in_front)
{
    rewrites(ENG_OLLAMA, "ollama serve", &KV8,
             "OLLAMA_KV_CACHE_TYPE=q8_0 OLLAMA_FLASH_ATTENTION=1 ollama serve");
    rewrites(ENG_OLLAMA, "OLLAMA_HOST=0.0.0.0:11434 OLLAMA_KV_CACHE_TYPE=q8_0 ollama serve", &KV16,
             "OLLAMA_HOST=0.0.0.0:11434 OLLAMA_KV_CACHE_TYPE=f16 ollama serve");
    /* a switch already on stays as written; one off is turned on */
    rewrites(ENG_OLLAMA, "OLLAMA_FLASH_ATTENTION=true OLLAMA_KV_CACHE_TYPE=f16 ollama serve", &KV4,
             "OLLAMA_FLASH_ATTENTION=true OLLAMA_KV_CACHE_TYPE=q4_0 ollama serve");
    rewrites(ENG_OLLAMA, "env OLLAMA_FLASH_ATTENTION=0 /usr/bin/ollama serve", &KV4,
             "OLLAMA_KV_CACHE_TYPE=q4_0 env OLLAMA_FLASH_ATTENTION=1 /usr/bin/ollama serve");
    /* an assignment after the command is an argument, not the environment */
    rewrites(ENG_OLLAMA, "ollama serve OLLAMA_KV_CACHE_TYPE=q8_0", &KV16,
             "OLLAMA_KV_CACHE_TYPE=f16 ollama serve OLLAMA_KV_CACHE_TYPE=q8_0");
}

/* An inferd node driven over HTTP is restarted with its own flags (a top-k
 * quality estimate's settings); its `set` stays live. */
Test(knobline, inferd_start_line)
{
    rewrites(ENG_INFERD, "inferd serve --http 127.0.0.1:8080", &KV8,
             "inferd serve --http 127.0.0.1:8080 --kv-bits 8");
    rewrites(ENG_INFERD, "inferd serve --kv-bits=16 --prefill-step 64", &STEP256,
             "inferd serve --kv-bits=16 --prefill-step 256");
    cr_assert_eq(eng_knob_ref_bits(ENG_INFERD), 32);
    cr_assert_eq(eng_knob_ref_bits(ENG_LLAMACPP), 16);
    cr_assert_eq(eng_knob_ref_bits(ENG_VLLM), 16);
    cr_assert_eq(eng_knob_ref_bits(ENG_OPENAI), 0);
}

Test(knobline, refusals)
{
    refused(ENG_OLLAMA, "ollama serve", &STEP256, "prefill_step", "kv_bits 16 (f16)");
    refused(ENG_VLLM, "vllm serve m", &KV4, "kv_bits 4", "16 (auto) or 8 (fp8)");
    refused(ENG_OPENAI, "my-server", &KV8, "not known to infertop", "start line");
    refused(ENG_LLAMACPP, "llama-server -m 'x", &KV8, "quote", NULL);
    refused(ENG_LLAMACPP, "  ", &KV8, "empty", NULL);
    char out[40], err[256];
    cr_assert_eq(knobline_rewrite(ENG_LLAMACPP, "llama-server -m /models/x.gguf", &KV8, out,
                                  sizeof out, err, sizeof err),
                 -1);
    cr_assert(strstr(err, "longer than 39 bytes"), "%s", err);
}
