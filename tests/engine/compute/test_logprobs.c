/* test_logprobs.c: sampler_logprobs, the log-softmax a request's logprobs
 * report, against sampler_top1 (eval's) and the softmax itself. */
#include <criterion/criterion.h>
#include <math.h>

#include "engine/compute/sampler.h"

#define V 1000

Test(sampler_logprobs, the_top_is_evals_top1_and_sorted)
{
    float logits[V];
    for (int i = 0; i < V; i++)
        logits[i] = (float)sin(i * 0.37) * 4.0f;
    logits[17] = logits[400] = 9.0f; /* a tie at the top: the lower id first */
    int top[20], top1;
    double lp[20], chosen, lp1;
    cr_assert_eq(sampler_logprobs(logits, V, 400, 20, top, lp, &chosen), 20);
    sampler_top1(logits, V, &top1, &lp1);
    cr_expect_eq(top[0], top1);
    cr_expect_eq(top[0], 17);
    cr_expect_eq(top[1], 400);
    cr_expect_eq(lp[0], lp1, "the same digits as eval's");
    cr_expect_eq(chosen, lp[1], "the chosen token's is its entry's");
    double sum = 0.0, all = 0.0;
    for (int i = 0; i < 20; i++) {
        cr_expect(lp[i] <= 0.0);
        if (i)
            cr_expect(lp[i] <= lp[i - 1], "sorted at %d", i);
        sum += exp(lp[i]);
    }
    cr_expect(sum <= 1.0);
    /* Every token's, summed: the distribution's whole mass. */
    for (int v = 0; v < V; v++) {
        int t;
        double x, c;
        sampler_logprobs(logits, V, v, 0, &t, &x, &c);
        all += exp(c);
    }
    cr_expect_float_eq(all, 1.0, 1e-9);
    /* Nothing larger was left out. */
    for (int v = 0; v < V; v++) {
        int in = 0;
        for (int i = 0; i < 20; i++)
            in |= top[i] == v;
        if (!in)
            cr_expect(logits[v] <= logits[top[19]], "token %d belongs in the top", v);
    }
}

Test(sampler_logprobs, k_past_the_vocabulary)
{
    float logits[3] = {1.0f, 3.0f, 2.0f};
    int top[20];
    double lp[20], chosen;
    cr_assert_eq(sampler_logprobs(logits, 3, 0, 20, top, lp, &chosen), 3);
    cr_expect_eq(top[0], 1);
    cr_expect_eq(top[1], 2);
    cr_expect_eq(top[2], 0);
    cr_expect_eq(chosen, lp[2]);
    double z = log(exp(1.0) + exp(3.0) + exp(2.0));
    cr_expect_float_eq(chosen, 1.0 - z, 1e-12);
}
