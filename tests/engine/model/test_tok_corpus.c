/* test_tok_corpus.c: the tokenizer fuzzer's seed corpus as a regular
 * test, so `make test` and `make asan` check every seed the way the fuzzer
 * does (encode, bounds, round trip, streaming UTF-8): the target's own
 * checks abort on a failure, which Criterion reports as a crash. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz/fuzz_tokenizer.c"

Test(tok_corpus, every_seed_passes_the_fuzz_checks)
{
    const char *dir = "tests/fuzz/corpus/tokenizer";
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int seeds = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096 + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "%s", path);
        static uint8_t buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        cr_assert_eq(LLVMFuzzerTestOneInput(buf, n), 0, "%s", path);
        seeds++;
    }
    closedir(d);
    cr_assert_geq(seeds, 4, "the corpus holds %d seeds", seeds);
}
