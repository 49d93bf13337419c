/* test_vec8.c: the vector exp and silu of the hot loops stay within a
 * few ulp of a double-precision reference over their whole range; the
 * fp16 rounding is the C conversion's. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>

#include "engine/compute/vec8.h"

/* Eight consecutive floats from x up, so every lane is checked. */
static f32x8 lanes_from(float x, float step)
{
    f32x8 v;
    for (int t = 0; t < 8; t++)
        v[t] = x + (float)t * step;
    return v;
}

Test(vec8, exp_within_two_ulp)
{
    const float step = 1.0f / 4096;
    for (float x = -87.0f; x <= 0.0f; x += 8 * step) {
        f32x8 v = lanes_from(x, step), e = vec8_exp(v);
        for (int t = 0; t < 8 && v[t] <= 0.0f; t++) {
            double ref = exp((double)v[t]);
            cr_assert(fabs(e[t] - ref) <= 2 * FLT_EPSILON * ref, "exp(%.9g) = %.9g, expected %.9g",
                      v[t], e[t], ref);
        }
    }
}

/* Past the ends of the silu's range the results are what the formula
 * gives in float anyway: x above, and magnitudes below 1e-35 under -87. */
Test(vec8, silu_within_three_ulp)
{
    const float step = 1.0f / 2048;
    for (float x = -87.0f; x <= 90.0f; x += 8 * step) {
        f32x8 v = lanes_from(x, step), y = vec8_silu(v);
        for (int t = 0; t < 8; t++) {
            double ref = v[t] / (1.0 + exp(-(double)v[t]));
            cr_assert(fabs(y[t] - ref) <= 3 * FLT_EPSILON * fabs(ref),
                      "silu(%.9g) = %.9g, expected %.9g", v[t], y[t], ref);
        }
    }
    f32x8 ends = {-1000.0f, -88.0f, 100.0f, 1000.0f, 0.0f, -0.0f, NAN, -NAN};
    f32x8 y = vec8_silu(ends);
    for (int t = 0; t < 4; t++)
        cr_assert(fabs(y[t] - ends[t] / (1.0 + exp(-(double)ends[t]))) <=
                      1e-35 + 1e-6 * fabs(ends[t]),
                  "silu(%g) = %g", ends[t], y[t]);
    cr_assert(y[4] == 0.0f && y[5] == 0.0f, "silu(+-0) = %g, %g", y[4], y[5]);
    cr_assert(isnan(y[6]) && isnan(y[7]), "silu(NaN) = %g, %g", y[6], y[7]);
}

static void check_round_f16(f32x8 v)
{
    f32x8 r = vec8_round_f16(v);
    for (int t = 0; t < 8; t++)
        cr_assert(r[t] == (float)(_Float16)v[t], "round_f16(%.9g) = %.9g, expected %.9g", v[t],
                  r[t], (float)(_Float16)v[t]);
}

/* Ties go to even, overflow to infinity, tiny values to fp16 subnormals:
 * every lane as the scalar conversion rounds it. */
Test(vec8, round_f16_as_the_conversion)
{
    for (float x = -70000.0f; x <= 70000.0f; x += 8 * 0.37f)
        check_round_f16(lanes_from(x, 0.37f));
    check_round_f16((f32x8){1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -2049.0f, 65519.0f, 65520.0f,
                            0x1p-25f, 3 * 0x1p-26f, -1e-9f});
}

/* The integer lanes (vec8.h without F16C) against the C conversions, bit
 * for bit: every fp16 value loaded, and floats of every exponent
 * rounded, NaNs and subnormals included. */
Test(vec8, f16_bits_as_the_conversion)
{
    for (uint32_t h = 0; h < 65536; h += 8) {
        _Float16 in[8];
        for (int t = 0; t < 8; t++) {
            uint16_t bits = (uint16_t)(h + t);
            memcpy(&in[t], &bits, sizeof bits);
        }
        f32x8 v = vec8_load_f16(in);
        for (int t = 0; t < 8; t++) {
            float ref = (float)in[t];
            cr_assert(memcmp(&v[t], &ref, sizeof ref) == 0, "load_f16(0x%04x) = %a, expected %a",
                      h + t, v[t], ref);
        }
    }
    for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4093 * 8) {
        uint32_t bits[8];
        f32x8 v;
        for (int t = 0; t < 8; t++)
            bits[t] = (uint32_t)(u + (uint64_t)t * 509);
        memcpy(&v, bits, sizeof v);
        f32x8 r = vec8_round_f16(v);
        for (int t = 0; t < 8; t++) {
            float ref = (float)(_Float16)v[t];
            cr_assert(memcmp(&r[t], &ref, sizeof ref) == 0, "round_f16(0x%08x) = %a, expected %a",
                      bits[t], r[t], ref);
        }
    }
}
