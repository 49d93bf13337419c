/* test_chat.c: chat template recognition over real templates, and the
 * prompt each family's format gives for one conversation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/chat.h"

#define DIR "tests/fixtures/chat_templates/"

static chat_format recognise_file(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, DIR "%s.jinja", name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cr_assert_gt(n, 0, "%s is empty", path);
    return chat_recognise(buf, n);
}

Test(chat, recognises_real_templates)
{
    static const struct {
        const char *file;
        chat_format want;
    } cases[] = {
        {"llama2-chat", CHAT_LLAMA2},
        {"llama3-instruct", CHAT_LLAMA3},
        {"llama3.2-instruct", CHAT_LLAMA3},
        {"chatml-openhermes", CHAT_CHATML},
        {"qwen2.5-instruct", CHAT_CHATML},
        {"mistral-7b-instruct-v0.2", CHAT_MISTRAL},
        {"mistral-nemo-instruct-2407", CHAT_MISTRAL},
        {"zephyr-7b-beta", CHAT_ZEPHYR},
        {"gemma-7b-it", CHAT_GEMMA},
        {"phi-3-mini", CHAT_PLAIN},
        {"command-r-plus", CHAT_PLAIN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        chat_format got = recognise_file(cases[i].file);
        cr_expect_eq(got, cases[i].want, "%s: got %s, want %s", cases[i].file,
                     chat_format_name(got), chat_format_name(cases[i].want));
    }
}

Test(chat, no_template_is_plain)
{
    cr_expect_eq(chat_recognise(NULL, 0), CHAT_PLAIN);
    cr_expect_eq(chat_recognise("", 0), CHAT_PLAIN);
    cr_expect_eq(chat_recognise("{{ messages }}", 14), CHAT_PLAIN);
    /* A marker past the given length does not count. */
    cr_expect_eq(chat_recognise("xx<|im_start|>", 2), CHAT_PLAIN);
}

Test(chat, names_round_trip)
{
    for (int f = 0; f < CHAT_FORMAT_COUNT; f++) {
        chat_format back;
        cr_assert_eq(chat_format_parse(chat_format_name((chat_format)f), &back), 0);
        cr_expect_eq(back, f);
    }
    chat_format x;
    cr_expect_eq(chat_format_parse("jinja", &x), -1);
    cr_expect_str_eq(chat_format_name(CHAT_FORMAT_COUNT), "plain");
}

/* The conversation llama.cpp's template tests use. */
static const chat_msg conv[] = {
    {CHAT_SYSTEM, "You are a helpful assistant"},
    {CHAT_USER, "Hello"},
    {CHAT_ASSISTANT, "Hi there"},
    {CHAT_USER, "Who are you"},
    {CHAT_ASSISTANT, "   I am an assistant   "},
    {CHAT_USER, "Another question"},
};
#define N_CONV ((int)(sizeof conv / sizeof *conv))

static void expect_render(chat_format f, const char *want)
{
    char out[2048];
    size_t n = chat_render(f, conv, N_CONV, out, sizeof out);
    cr_expect_eq(n, strlen(want), "%s: length %zu, want %zu", chat_format_name(f), n, strlen(want));
    cr_expect_str_eq(out, want, "%s", chat_format_name(f));
}

Test(chat, renders_plain)
{
    expect_render(CHAT_PLAIN, "System: You are a helpful assistant\nUser: Hello\nAssistant: Hi "
                              "there\nUser: Who are you\nAssistant:    I am an assistant   \nUser: "
                              "Another question\nAssistant:");
}

Test(chat, renders_llama2)
{
    /* Meta's template with the first <s> left to the tokenizer. */
    expect_render(CHAT_LLAMA2, "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello "
                               "[/INST] Hi there </s><s>[INST] Who are you [/INST] I am an "
                               "assistant </s><s>[INST] Another question [/INST]");
}

Test(chat, renders_llama3)
{
    expect_render(CHAT_LLAMA3,
                  "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
                  "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

Test(chat, renders_chatml)
{
    expect_render(CHAT_CHATML,
                  "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\n"
                  "Hello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\n"
                  "Who are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
                  "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n"
                  "<|im_start|>assistant\n");
}

Test(chat, renders_mistral)
{
    expect_render(CHAT_MISTRAL, "[INST] You are a helpful assistant\n\nHello [/INST]Hi "
                                "there</s>[INST] Who are you [/INST]   I am an assistant   "
                                "</s>[INST] Another question [/INST]");
}

Test(chat, renders_zephyr)
{
    expect_render(CHAT_ZEPHYR,
                  "<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n"
                  "<|assistant|>\nHi there</s>\n<|user|>\nWho are you</s>\n<|assistant|>\n"
                  "   I am an assistant   </s>\n<|user|>\nAnother question</s>\n<|assistant|>\n");
}

Test(chat, renders_gemma)
{
    expect_render(CHAT_GEMMA,
                  "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
                  "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are "
                  "you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n"
                  "<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n");
}

Test(chat, system_alone_becomes_the_user_turn)
{
    chat_msg m[] = {{CHAT_SYSTEM, "Be brief"}};
    char out[256];
    chat_render(CHAT_MISTRAL, m, 1, out, sizeof out);
    cr_expect_str_eq(out, "[INST] Be brief\n\n [/INST]");
    chat_render(CHAT_CHATML, m, 1, out, sizeof out);
    cr_expect_str_eq(out, "<|im_start|>system\nBe brief<|im_end|>\n<|im_start|>assistant\n");
}

Test(chat, sizes_like_snprintf)
{
    chat_msg m[] = {{CHAT_USER, "Once upon a time"}};
    size_t n = chat_render(CHAT_PLAIN, m, 1, NULL, 0);
    cr_assert_eq(n, strlen("User: Once upon a time\nAssistant:"));
    char small[8];
    cr_expect_eq(chat_render(CHAT_PLAIN, m, 1, small, sizeof small), n);
    cr_expect_str_eq(small, "User: O");
    char *buf = malloc(n + 1);
    chat_render(CHAT_PLAIN, m, 1, buf, n + 1);
    cr_expect_str_eq(buf, "User: Once upon a time\nAssistant:");
    free(buf);
}
