/* test_reference.c: THE acceptance test. Greedy decoding of the embedded
 * stories260K must reproduce llama2.c's reference continuation exactly
 * (engine/model/embedded/README.md), whatever the prefill chunking. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/model/tokenizer.h"
#include "fwd_harness.h"

#define N_REF 32

static const int prompt_ids[] = {1, 403, 407, 261, 378};
#define N_PROMPT (int)(sizeof prompt_ids / sizeof *prompt_ids)

static const int reference[N_REF] = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426,
                                     338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
                                     265, 282, 295, 433, 426, 385, 328, 432, 358, 394};

static const char reference_text[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.";

static const int prefill_steps[] = {1, 3, 7, 64, 512};

static void check_continuation(int kv_bits, int chunk)
{
    harness h;
    harness_open(&h, NULL, kv_bits);
    harness_prefill(&h, prompt_ids, N_PROMPT, chunk);
    int out[N_REF];
    harness_greedy(&h, out, N_REF);
    for (int i = 0; i < N_REF; i++)
        cr_assert_eq(out[i], reference[i],
                     "kv_bits %d, prefill_step %d: token %d is %d, reference %d", kv_bits, chunk, i,
                     out[i], reference[i]);
    harness_close(&h);
}

static void check_all_steps(int kv_bits)
{
    for (size_t i = 0; i < sizeof prefill_steps / sizeof *prefill_steps; i++)
        check_continuation(kv_bits, prefill_steps[i]);
}

Test(reference, prompt_encodes_like_llama2c)
{
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, NULL, err, sizeof err), 0, "%s", err);
    int ids[64];
    int n = tok_encode(t, "Once upon a time", 1, ids);
    cr_assert_eq(n, N_PROMPT);
    for (int i = 0; i < n; i++)
        cr_assert_eq(ids[i], prompt_ids[i], "prompt id %d is %d, expected %d", i, ids[i],
                     prompt_ids[i]);
    tok_free(t);
}

Test(reference, kv32_every_prefill_step)
{
    check_all_steps(32);
}

Test(reference, kv16_every_prefill_step)
{
    check_all_steps(16);
}

Test(reference, kv8_first_tokens)
{
    check_continuation(8, 1);
    check_continuation(8, 512);
}

/* The decoded text, as `inferd generate` prints it, starts like the
 * reference text up to where 32 tokens reach. */
Test(reference, text)
{
    char err[256];
    tokenizer *t;
    cr_assert_eq(tok_load(&t, NULL, err, sizeof err), 0, "%s", err);
    char text[1024] = "";
    char buf[TOK_DECODE_BUF];
    int prev = prompt_ids[0];
    for (int i = 1; i < N_PROMPT + N_REF; i++) {
        int id = i < N_PROMPT ? prompt_ids[i] : reference[i - N_PROMPT];
        strcat(text, tok_decode(t, prev, id, buf));
        prev = id;
    }
    cr_assert(strlen(text) > 100, "decoded only '%s'", text);
    cr_assert_eq(strncmp(text, reference_text, strlen(text)), 0, "decoded '%s'", text);
    tok_free(t);
}
