/* bench_tokenizer.c: tokenizing a 64 KiB prompt must not hold a node up.
 *
 * Texts of TEXT_BYTES: English-like prose (words, punctuation and line
 * breaks drawn from a fixed seed) and one pathological text, a single
 * letter repeated, which is one long word for every pre-tokenizer and the
 * worst case of a quadratic merge loop. Each is tokenized RUNS times with
 * the embedded llama2.c vocabulary (SentencePiece merges by score) and with
 * GPT-2's (byte-level BPE, regex pre-tokenizer); the figure is the median
 * time. Bar: under 50 ms each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "engine/model/tokenizer.h"

#define TEXT_BYTES (64 * 1024)
#define RUNS 7
#define BAR_MS 50.0
#define GPT2_VOCAB "tests/fixtures/vocab/ggml-vocab-gpt-2.gguf"

static const char *const words[] = {
    "the", "little", "girl",   "was",  "happy",   "and",   "she",     "saw", "a",
    "big", "red",    "ball",   "in",   "park",    "Tim",   "said",    "to",  "his",
    "mom", "They",   "played", "with", "friends", "every", "day",     "but", "it",
    "too", "high",   "for",    "them", "One",     "sunny", "morning", "dog", "ran",
};

static void prose(char *buf, size_t len)
{
    unsigned x = 12345;
    size_t n = 0;
    while (n < len) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) % (sizeof words / sizeof words[0])];
        const char *sep = (x >> 8) % 11 == 0 ? ". " : (x >> 8) % 7 == 0 ? ", " : " ";
        if ((x >> 4) % 61 == 0)
            sep = ".\n\n";
        n += (size_t)snprintf(buf + n, len + 1 - n, "%s%s", w, sep);
    }
    buf[len] = '\0';
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of RUNS tokenizations; -1 on failure. */
static double time_ms(const tokenizer *t, const char *text, int *n_ids)
{
    double ms[RUNS];
    char err[256];
    for (int r = 0; r < RUNS; r++) {
        int *ids;
        double t0 = bench_now();
        int n = tok_tokenize(t, text, strlen(text), 0, &ids, err, sizeof err);
        ms[r] = (bench_now() - t0) * 1e3;
        if (n < 0) {
            fprintf(stderr, "bench_tokenizer: %s\n", err);
            return -1;
        }
        free(ids);
        *n_ids = n;
    }
    qsort(ms, RUNS, sizeof ms[0], by_value);
    return ms[RUNS / 2];
}

static void run(bench *b, const tokenizer *t, const char *vocab, const char *kind, const char *text)
{
    char name[128], target[32];
    int n = 0;
    double ms = time_ms(t, text, &n);
    snprintf(name, sizeof name, "tokenize 64 KiB %s, %s (%d ids)", kind, vocab, n);
    snprintf(target, sizeof target, "< %.0f", BAR_MS);
    bench_add(b, name, ms, "ms", target, ms >= 0 && ms < BAR_MS);
}

int main(void)
{
    static char text[TEXT_BYTES + 1], same[TEXT_BYTES + 1];
    prose(text, TEXT_BYTES);
    memset(same, 'a', TEXT_BYTES);
    char err[256];
    tokenizer *llama2c, *gpt2;
    if (tok_load(&llama2c, NULL, err, sizeof err) != 0 ||
        tok_load(&gpt2, GPT2_VOCAB, err, sizeof err) != 0) {
        fprintf(stderr, "bench_tokenizer: %s\n", err);
        return 1;
    }
    bench *b = bench_open("tokenizer");
    run(b, llama2c, "llama2.c vocab", "prose", text);
    run(b, llama2c, "llama2.c vocab", "of one letter", same);
    run(b, gpt2, "GPT-2 vocab", "prose", text);
    run(b, gpt2, "GPT-2 vocab", "of one letter", same);
    tok_free(llama2c);
    tok_free(gpt2);
    return bench_close(b) == 0 ? 0 : 1;
}
