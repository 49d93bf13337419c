/* logitcmp: how far one file of logits is from a reference, as the GGUF
 * acceptance measures it.
 *
 *   logitcmp VOCAB GOT REF
 *
 * Both files are float32 little endian [n_tokens][VOCAB]. Prints
 * "nrmse X top1 A/N": the RMS of the difference over the RMS of the
 * reference, and at how many positions the largest logit is the same
 * token. Exit 1 when the files cannot be read or differ in size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    float *v = malloc(cap * sizeof *v);
    for (size_t got; v && (got = fread(v + len, sizeof *v, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            float *bigger = realloc(v, (cap *= 2) * sizeof *v);
            if (!bigger)
                free(v);
            v = bigger;
        }
    }
    fclose(f);
    *n = len;
    return v;
}

static size_t argmax(const float *v, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: logitcmp VOCAB GOT REF\n");
        return 2;
    }
    size_t vocab = (size_t)atol(argv[1]), na, nb;
    float *a = read_all(argv[2], &na), *b = read_all(argv[3], &nb);
    if (!a || !b || vocab == 0 || na != nb || na % vocab != 0) {
        fprintf(stderr, "logitcmp: %s and %s are not two logit files of the same size\n", argv[2],
                argv[3]);
        return 1;
    }
    double diff = 0, ref = 0;
    for (size_t i = 0; i < na; i++) {
        diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ref += (double)b[i] * b[i];
    }
    size_t rows = na / vocab, agree = 0;
    for (size_t r = 0; r < rows; r++)
        agree += argmax(a + r * vocab, vocab) == argmax(b + r * vocab, vocab);
    printf("nrmse %.5f top1 %zu/%zu\n", sqrt(diff / ref), agree, rows);
    free(a);
    free(b);
    return 0;
}
