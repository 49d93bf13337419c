/* test_fuzz_corpus.c: the fuzzers' seed corpora as regular tests, so
 * `make test` (and `make asan`) run every seed through its decoder: the
 * control requests' (tests/fuzz/corpus/request) and the stage frames'
 * (tests/fuzz/corpus/stage).
 *
 * Seed names carry their expectation: ok-* must decode, err-* must be
 * refused (err-CODE-* with CODE, for requests). Other files (inputs the
 * fuzzer found) must just not crash and, when refused, get a message. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/node/ring.h"
#include "engine/proto/protocol.h"

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

static void check_request(const char *name, const char *buf, size_t len)
{
    proto_request req;
    proto_error err;
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
}

static void check_stage(const char *name, const char *buf, size_t len)
{
    ring_frame f;
    char err[512] = "";
    int rc = ring_frame_decode(buf, len, &f, err, sizeof err);
    if (!strncmp(name, "ok-", 3))
        cr_expect_eq(rc, 0, "%s refused: %s", name, err);
    else if (!strncmp(name, "err-", 4))
        cr_expect_eq(rc, -1, "%s accepted", name);
    if (rc == 0)
        ring_frame_free(&f);
    else
        cr_expect_neq(err[0], '\0', "%s: no message", name);
}

/* Runs every seed of tests/fuzz/corpus/<corpus> through check; returns
 * how many there were. */
static int replay(const char *corpus, void (*check)(const char *, const char *, size_t))
{
    const char *root = getenv("INFERTOP_ROOT");
    char dir[4096], path[4096 + 256];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", root ? root : ".", corpus);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s (set INFERTOP_ROOT)", dir);
    int seeds = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *buf = read_file(path, &len);
        check(e->d_name, buf, len);
        free(buf);
        seeds++;
    }
    closedir(d);
    return seeds;
}

Test(fuzz_corpus, request_seeds)
{
    int seeds = replay("request", check_request);
    cr_assert_geq(seeds, 25, "only %d request seeds", seeds);
}

Test(fuzz_corpus, stage_seeds)
{
    int seeds = replay("stage", check_stage);
    cr_assert_geq(seeds, 20, "only %d stage seeds", seeds);
}
