/* test_quality.c: the stress runner's quality parts that need no ring:
 * the option checks of a quality run and of a sweep --quality, its legs,
 * the built-in text (the bytes of contrib/quality/text-en.txt, whose
 * sha256 its README gives), --text refusals, and the reply's `quality`
 * object read into a store row. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/stress/stress_int.h"

static void expect_error(const stress_opts *o, const char *needle)
{
    char err[256] = "";
    cr_assert_neq(stress_opts_check(o, err, sizeof err), 0, "expected an error with '%s'", needle);
    cr_expect(strstr(err, needle), "'%s' not in '%s'", needle, err);
}

static stress_opts quality(void)
{
    stress_opts o;
    stress_opts_init(&o);
    o.mode = STORE_MODE_QUALITY;
    o.n_kv_bits = 3;
    o.kv_bits[0] = 32;
    o.kv_bits[1] = 8;
    o.kv_bits[2] = 4;
    o.text = "Once upon a time";
    return o;
}

Test(stress_quality, a_run_checks_its_settings_and_text)
{
    stress_opts o = quality();
    char err[256];
    cr_assert_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
    cr_expect_eq(stress_leg_count(&o), 3);
    store_leg_info leg;
    stress_leg_at(&o, 2, &leg);
    cr_expect_eq(leg.kv_bits, 4, "a leg per setting, in order");
    cr_expect_eq(leg.concurrency, 1);

    o.kv_bits[1] = 5;
    expect_error(&o, "--kv-bits: 5 is not one of 32, 16, 8, 4");
    o = quality();
    o.n_kv_bits = 0;
    expect_error(&o, "quality needs --kv-bits");
    o = quality();
    o.text = "";
    expect_error(&o, "empty");
    o = quality();
    o.ctx = 1;
    expect_error(&o, "--ctx 1");
    o = quality();
    o.bucket = -2;
    expect_error(&o, "--bucket -2");
    o = quality();
    o.ctx = 64;
    o.score_from = 63;
    expect_error(&o, "--score-from 63");
}

Test(stress_quality, a_sweep_measures_quality_only_with_a_text)
{
    stress_opts o;
    stress_opts_init(&o);
    o.mode = STORE_MODE_SWEEP;
    o.to = 256;
    o.n_kv_bits = o.n_prefill_step = 1;
    o.kv_bits[0] = 16;
    o.prefill_step[0] = 64;
    char err[256];
    cr_assert_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
    o.quality = 1;
    expect_error(&o, "the text to score is empty");
    o.text = "text";
    cr_expect_eq(stress_opts_check(&o, err, sizeof err), 0, "%s", err);
}

Test(stress_quality, the_built_in_text_is_the_shipped_one)
{
    char err[256];
    char *t = stress_text_load(NULL, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    cr_expect_eq(strlen(t), 53691, "contrib/quality/README.md's size");
    char sha[STORE_SHA256_HEX];
    st_text_sha256(t, sha);
    cr_expect_str_eq(sha, "711bd8ba835a3ea6da4224f35d1c021246d15f1c0a565fb1c833a1360ccf8e46");
    cr_expect_str_eq(stress_text_builtin_name, "text-en.txt");

    char path[] = "/tmp/infertop-text-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(t, f);
    fclose(f);
    char *again = stress_text_load(path, err, sizeof err);
    cr_assert_not_null(again, "%s", err);
    cr_expect_str_eq(again, t, "a file reads back whole");
    free(again);
    free(t);

    f = fopen(path, "w");
    fclose(f);
    cr_expect_null(stress_text_load(path, err, sizeof err));
    cr_expect(strstr(err, path) && strstr(err, "is empty"), "%s", err);
    f = fopen(path, "w");
    fwrite("ab\0cd", 1, 5, f);
    fclose(f);
    cr_expect_null(stress_text_load(path, err, sizeof err));
    cr_expect(strstr(err, "NUL byte at offset 2"), "%s", err);
    remove(path);
    cr_expect_null(stress_text_load(path, err, sizeof err));
    cr_expect(strstr(err, path) && strstr(err, "No such file"), "%s", err);
}

Test(stress_quality, the_reply_reads_into_a_row)
{
    json_error_t je;
    json_t *rep = json_loads(
        "{\"v\":1,\"id\":\"q1\",\"done\":true,\"ok\":true,\"quality\":{\"kv_bits\":4,"
        "\"ref_kv_bits\":32,\"ctx\":512,\"score_from\":256,\"windows\":3,\"positions\":765,"
        "\"kl_mean\":0.0012,\"kl_p99\":0.011,\"kl_max\":0.05,\"top1\":0.985,\"ppl_ref\":11.23,"
        "\"ppl_test\":11.3,\"ppl_ref_err\":0.12,\"buckets\":[{\"from\":0,\"to\":256,"
        "\"positions\":0},{\"from\":256,\"to\":512,\"positions\":765,\"kl_mean\":0.0012,"
        "\"kl_p99\":0.011,\"kl_max\":0.05,\"top1\":0.985,\"ppl_ref\":11.23,\"ppl_test\":11.3}]}}",
        0, &je);
    cr_assert_not_null(rep, "%s", je.text);
    store_quality q = {0};
    char err[256];
    cr_assert_eq(st_quality_read(rep, &q, err, sizeof err), 0, "%s", err);
    cr_expect_eq(q.kv_bits, 4);
    cr_expect_eq(q.ref_kv_bits, 32);
    cr_expect_eq(q.windows, 3);
    cr_expect_eq(q.positions, 765);
    cr_expect_eq(q.kl_p99, 0.011);
    cr_expect_eq(q.top1, 0.985);
    cr_expect_eq(q.ppl_ref_err, 0.12);
    cr_assert_eq(q.n_buckets, 2);
    cr_expect(isnan(q.buckets[0].kl_mean), "a bucket without positions has no figures");
    cr_expect_eq(q.buckets[1].to, 512);
    cr_expect_eq(q.buckets[1].ppl_test, 11.3);

    stress_quality_leg row;
    stress_quality_leg_of(&q, NAN, &row);
    cr_expect_eq(row.kv_bits, 4);
    cr_expect_eq(row.n_buckets, 2);
    cr_expect(isnan(row.bucket_kl[0]));
    cr_expect_eq(row.bucket_kl[1], 0.0012);
    free(q.buckets);

    json_object_del(json_object_get(rep, "quality"), "windows");
    cr_expect_eq(st_quality_read(rep, &q, err, sizeof err), -1);
    cr_expect(strstr(err, "`windows`"), "%s", err);
    json_object_del(rep, "quality");
    cr_expect_eq(st_quality_read(rep, &q, err, sizeof err), -1);
    cr_expect(strstr(err, "no `quality` object"), "%s", err);
    json_decref(rep);
}
