/* test_fuzz_corpus.c: the request fuzzer's seed corpus as a regular test,
 * so `make test` (and `make asan`) run every seed through the decoder.
 *
 * Seed names carry their expectation: ok-* must decode, err-CODE-* must
 * fail with CODE. Other files (inputs the fuzzer found) must just not
 * crash and, when refused, get a message. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void check_seed(const char *dir, const char *name)
{
    char path[4096 + 256];
    size_t len;
    proto_request req;
    proto_error err;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *buf = read_file(path, &len);
    int rc = proto_request_decode(buf, len, &req, &err);
    if (!strncmp(name, "ok-", 3)) {
        cr_expect_eq(rc, 0, "%s refused: %s %s", name, proto_code_name(err.code), err.message);
    } else if (!strncmp(name, "err-", 4)) {
        char code[PROTO_CODE_MAX] = "";
        sscanf(name + 4, "%31[a-z_]", code);
        cr_expect_eq(rc, -1, "%s accepted", name);
        cr_expect_str_eq(proto_code_name(err.code), code, "%s: %s", name, err.message);
    }
    if (rc == 0)
        proto_request_free(&req);
    else
        cr_expect_neq(err.message[0], '\0', "%s: no message", name);
    free(buf);
}

Test(fuzz_corpus, request_seeds)
{
    const char *root = getenv("INFERTOP_ROOT");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/request", root ? root : ".");
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s (set INFERTOP_ROOT)", dir);
    int seeds = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        check_seed(dir, e->d_name);
        seeds++;
    }
    closedir(d);
    cr_assert_geq(seeds, 25, "only %d seeds in %s", seeds, dir);
}
