/* test_promtext.c: the Prometheus text reader against llama-server's own
 * /metrics and hand-made expositions of what the format allows. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engfix.h"
#include "tui/engine/promtext.h"

static prom_doc *parse(const char *text)
{
    prom_doc *d = prom_parse(text, strlen(text));
    cr_assert_not_null(d);
    return d;
}

static double get(const prom_doc *d, const char *name)
{
    return prom_sum(d, name, NULL, NULL, NULL);
}

Test(promtext, llamacpp_metrics_fixtures_read_whole)
{
    static const struct {
        const char *file;
        double prompt_tokens, kv_ratio, processing, busy_per_decode;
    } want[] = {
        {"metrics-idle.txt", 0, 0, 0, 0},
        {"metrics-busy.txt", 192, 0.137695, 4, 3.91667},
        {"metrics-after.txt", 196, 0.672363, 0, 3.76905},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct engfix f = engfix_load(want[i].file);
        prom_doc *d = prom_parse(f.body, f.len);
        cr_assert_not_null(d);
        cr_assert_eq(prom_bad_lines(d), 0, "%s: %s", want[i].file, prom_problem(d));
        cr_assert_str_empty(prom_problem(d));
        cr_assert_eq(get(d, "llamacpp:prompt_tokens_total"), want[i].prompt_tokens, "%s",
                     want[i].file);
        cr_assert_eq(get(d, "llamacpp:kv_cache_usage_ratio"), want[i].kv_ratio);
        cr_assert_eq(get(d, "llamacpp:requests_processing"), want[i].processing);
        cr_assert_eq(get(d, "llamacpp:n_busy_slots_per_decode"), want[i].busy_per_decode);
        /* A name that is only in HELP text or absent is not a sample. */
        cr_assert(isnan(get(d, "llamacpp:prompt_tokens")));
        prom_free(d);
        engfix_free(&f);
    }
}

Test(promtext, labels_escapes_specials_timestamps)
{
    prom_doc *d = parse("# HELP vllm:x Help with \\ and \"quotes\".\n"
                        "# TYPE vllm:x gauge\n"
                        "vllm:x{model_name=\"a\\\"b\\\\c\\nd\",engine=\"0\"} 1.5\n"
                        "vllm:x{ engine = \"1\" , model_name=\"m\", } 2.5 1700000000000\r\n"
                        "  vllm:x 4\n"
                        "nan_one NaN\n"
                        "up_inf +Inf\n"
                        "down_inf -Inf\n"
                        "exp 1.5e3 -12\n"
                        "# a free comment\n"
                        "\n"
                        "last_no_newline 7");
    cr_assert_eq(prom_bad_lines(d), 0, "%s", prom_problem(d));
    int n;
    cr_assert_eq(prom_sum(d, "vllm:x", NULL, NULL, &n), 8.0);
    cr_assert_eq(n, 3);
    /* The escapes come back as the characters they stand for. */
    cr_assert_eq(prom_sum(d, "vllm:x", "model_name", "a\"b\\c\nd", &n), 1.5);
    cr_assert_eq(n, 1);
    cr_assert_eq(prom_sum(d, "vllm:x", "engine", "1", NULL), 2.5);
    cr_assert(isnan(prom_sum(d, "vllm:x", "engine", "2", &n)));
    cr_assert_eq(n, 0);
    cr_assert(isnan(get(d, "nan_one")));
    cr_assert(isinf(get(d, "up_inf")) && get(d, "up_inf") > 0);
    cr_assert(isinf(get(d, "down_inf")) && get(d, "down_inf") < 0);
    cr_assert_eq(get(d, "exp"), 1500.0);
    cr_assert_eq(get(d, "last_no_newline"), 7.0);
    prom_free(d);
}

Test(promtext, malformed_lines_skipped_counted_first_named)
{
    prom_doc *d = parse("good_a 1\n"
                        "bad{le=\"1\" 2\n"          /* line 2: label set not closed */
                        "good_b 2\n"                /* the lines around still count */
                        "{le=\"1\"} 3\n"            /* no name */
                        "bad_value abc\n"           /* not a number */
                        "bad_escape{a=\"\\t\"} 1\n" /* only \\ \" \n are escapes */
                        "bad_ts 1 12x\n"            /* timestamp not an integer */
                        "bad_tail 1 2 3\n"          /* text after the timestamp */
                        "# TYPE good_a sometype\n"  /* not a metric type */
                        "bad_quote{a=b} 1\n"        /* value not quoted */
                        "nospace{a=\"b\"}1\n"       /* no blank before the value */
                        "good_c{a=\"x\"} 3\n");
    cr_assert_eq(prom_bad_lines(d), 9, "%d: %s", prom_bad_lines(d), prom_problem(d));
    cr_assert(strncmp(prom_problem(d), "line 2: ", 8) == 0, "%s", prom_problem(d));
    cr_assert_eq(get(d, "good_a") + get(d, "good_b") + get(d, "good_c"), 6.0);
    /* A rolled-back line leaves nothing behind: not its name, not its
     * labels. */
    cr_assert(isnan(get(d, "bad")));
    cr_assert(isnan(get(d, "bad_ts")));
    cr_assert_eq(prom_sum(d, "good_c", "a", "x", NULL), 3.0);
    prom_free(d);

    /* A NUL byte inside is a bad line, not the end of the text. */
    static const char nul[] = "a 1\nb\0 2\nc 3\n";
    d = prom_parse(nul, sizeof nul - 1);
    cr_assert_eq(prom_bad_lines(d), 1);
    cr_assert_eq(get(d, "c"), 3.0);
    prom_free(d);
}

/* Cumulative buckets of 10 observations: 2 <= 0.1, 4 in (0.1, 0.5], 2 in
 * (0.5, 1], 2 above. Written as two label sets (vLLM's engines) whose
 * buckets add up, with "1" and "1.0" the same bound. */
static const char hist_text[] = "# TYPE h histogram\n"
                                "h_bucket{le=\"0.1\",engine=\"0\"} 1\n"
                                "h_bucket{le=\"0.5\",engine=\"0\"} 3\n"
                                "h_bucket{le=\"1.0\",engine=\"0\"} 4\n"
                                "h_bucket{le=\"+Inf\",engine=\"0\"} 5\n"
                                "h_sum{engine=\"0\"} 2.5\n"
                                "h_count{engine=\"0\"} 5\n"
                                "h_bucket{engine=\"1\",le=\"0.1\"} 1\n"
                                "h_bucket{engine=\"1\",le=\"0.5\"} 3\n"
                                "h_bucket{engine=\"1\",le=\"1\"} 4\n"
                                "h_bucket{engine=\"1\",le=\"+Inf\"} 5\n"
                                "h_sum{engine=\"1\"} 2.5\n"
                                "h_count{engine=\"1\"} 5\n";

Test(promtext, histogram_buckets_and_quantiles)
{
    prom_doc *d = parse(hist_text);
    struct prom_hist h;
    cr_assert_eq(prom_hist(d, "h", &h), 0);
    cr_assert_eq(h.n, 4);
    double le[] = {0.1, 0.5, 1.0, INFINITY}, count[] = {2, 6, 8, 10};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(h.le[i], le[i], "bound %d", i);
        cr_assert_eq(h.count[i], count[i], "bucket %d", i);
    }
    cr_assert_eq(h.sum, 5.0);
    cr_assert_eq(h.total, 10.0);
    /* p50: rank 5 falls in (0.1, 0.5], 3 of its 4: 0.1 + 0.4 * 3/4. */
    cr_assert_float_eq(prom_quantile(0.5, &h), 0.4, 1e-12);
    /* p20: rank 2, the whole first bucket from 0: 0.1. */
    cr_assert_float_eq(prom_quantile(0.2, &h), 0.1, 1e-12);
    /* p70: rank 7 in (0.5, 1], 1 of 2: 0.75. */
    cr_assert_float_eq(prom_quantile(0.7, &h), 0.75, 1e-12);
    /* p95: rank 9.5 falls in +Inf: the highest finite bound. */
    cr_assert_eq(prom_quantile(0.95, &h), 1.0);
    cr_assert_eq(prom_hist(d, "nothing", &h), -1);
    prom_free(d);
}

Test(promtext, quantile_of_nothing_is_unknown)
{
    struct prom_hist h = {.n = 3, .le = {0.1, 1, INFINITY}, .count = {0, 0, 0}};
    cr_assert(isnan(prom_quantile(0.5, &h)), "no observation");
    h.count[0] = h.count[1] = h.count[2] = 4;
    cr_assert_float_eq(prom_quantile(0.5, &h), 0.05, 1e-12);
    h.le[2] = 5; /* no +Inf bucket */
    cr_assert(isnan(prom_quantile(0.5, &h)));
    h.le[2] = INFINITY;
    cr_assert(isnan(prom_quantile(1.5, &h)), "q out of 0..1");
    /* A bucket read lower than the one before (scrapes are not atomic)
     * counts as the one before: 4, 4, 8 gives p50 = 0.1, not a negative
     * count's nonsense. */
    h.count[0] = 4, h.count[1] = 3, h.count[2] = 8;
    cr_assert_float_eq(prom_quantile(0.5, &h), 0.1, 1e-12);
}

Test(promtext, too_many_bounds_refused)
{
    char text[8192];
    size_t n = 0;
    for (int i = 0; i <= PROM_BUCKETS_MAX; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "h_bucket{le=\"%d\"} %d\n", i, i);
    prom_doc *d = prom_parse(text, n);
    struct prom_hist h;
    cr_assert_eq(prom_hist(d, "h", &h), -1);
    prom_free(d);
}
