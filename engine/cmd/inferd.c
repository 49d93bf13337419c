/* inferd: the inference node. main() only dispatches to a verb. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "engine/compute/blas.h"
#include "engine/proto/version.h"

typedef struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} verb;

static const verb verbs[] = {
    {"eval", cmd_eval, "teacher-forced logits of a prompt, locally"},
    {"generate", cmd_generate, "generate text from a prompt, locally"},
    {"keygen", cmd_keygen, "write a CURVE key pair (PREFIX.key, PREFIX.pub)"},
    {"quantize", cmd_quantize, "write a model as a GGUF file of a llama.cpp file type"},
    {"serve", cmd_serve, "run a node: requests, pipeline stage, telemetry, live config"},
    {"tokenize", cmd_tokenize, "the token ids of a text"},
};

#define N_VERBS (sizeof verbs / sizeof *verbs)

static void usage(FILE *out)
{
    fprintf(out, "usage: inferd VERB [OPTIONS]   (inferd VERB --help for its options)\n\n"
                 "verbs:\n");
    for (size_t i = 0; i < N_VERBS; i++)
        fprintf(out, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\n  --help     this text\n  --version  print the version\n");
}

int main(int argc, char **argv)
{
    blas_select_core(argv);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("inferd %s\n", INFERD_VERSION);
        return 0;
    }
    for (size_t i = 0; i < N_VERBS; i++)
        if (strcmp(argv[1], verbs[i].name) == 0)
            return verbs[i].run(argc - 1, argv + 1);
    fprintf(stderr, "inferd: unknown verb '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
