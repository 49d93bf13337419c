/* qblock_kq.c: weight quantization to Q4_K, Q5_K and Q6_K, as ggml's
 * reference quantizers (quantize_row_q{4,5,6}_K_ref) do it, which is what
 * llama-quantize runs without an importance matrix. The float operations
 * are theirs in their order, so the bytes come out the same; that needs
 * each product rounded before it is added, which the project's -std=c11
 * ensures (it turns off GCC's fusing of a * b + c).
 *
 * Q4_K and Q5_K fit each sub-block of 32 with a scale and a min by a
 * weighted least-squares search over a few candidate scales; Q6_K fits
 * each group of 16 with a signed scale the same way. The sub-block scales
 * are then quantized to 6 or 8 bits against one half-float super-scale,
 * and the values re-quantized against the scales as stored.
 */
#include <math.h>

#include "qblock_int.h"

#define GROUP_MAX_EPS 1e-15f

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Fits x[n] (n <= 32) as scale * L - min with L in 0..nmax, minimizing
 * the weighted squared error: first the plain min/max fit, then nstep + 1
 * candidate scales (nmax + rmin + rdelta * is over the range), each with
 * its own least-squares scale and min. ggml's make_qkx2_quants. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                           float *the_min, float rmin, float rdelta, int nstep)
{
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0;
    }
    float iscale = nmax / (max - min), scale = 1 / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(qb_nearest(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        best_error += w[i] * (diff * diff);
    }
    uint8_t Laux[32];
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(qb_nearest(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D <= 0)
            continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * Laux[i] + this_min - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best_error) {
            memcpy(L, Laux, (size_t)n);
            best_error = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *the_min = -min;
    return scale;
}

/* Fits x[n] as scale * (L - nmax) with L in 0..2 nmax - 1, weights x^2,
 * trying 19 scales around nmax / max. ggml's make_qx_quants with
 * rmse_type 1 and no importance weights. */
static float fit_scale(int n, int nmax, const float *x, uint8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0;
    }
    /* Candidate 0 is the plain scale nmax / max, kept whatever its error;
     * candidates 1..19 move nmax by 0.1 steps from -0.9 to +0.9 (10 is the
     * plain one again, skipped) and are kept when they fit better. */
    float scale = 0, best = 0;
    for (int is = 0; is <= 19; is++) {
        if (is == 10)
            continue;
        float iscale = is == 0 ? -nmax / max : -(nmax + 0.1f * (is - 10)) / max;
        float sumlx = 0, suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(qb_nearest(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (is == 0)
            scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
        else if (suml2 > 0 && sumlx * sumlx > best * suml2)
            scale = sumlx / suml2;
        else
            continue;
        best = scale * sumlx;
        for (int i = 0; i < n; i++)
            L[i] = (uint8_t)(nmax + clampi(qb_nearest(iscale * x[i]), -nmax, nmax - 1));
    }
    return scale;
}

/* Stores sub-block j's 6-bit scale and min as k_scale_min reads them. */
static void k_pack_scale_min(uint8_t *s, int j, uint8_t ls, uint8_t lm)
{
    if (j < 4) {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
        s[j - 4] |= (uint8_t)((ls >> 4) << 6);
        s[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

/* One Q4_K or Q5_K block (nmax 15 or 31) of x[256]: fills d, dmin,
 * scales and L (0..nmax per value). rmin, nstep: the search of
 * fit_scale_min, as ggml tunes it per type. */
static void k_quantize_block(const float *x, int nmax, float rmin, int nstep, uint16_t *d,
                             uint16_t *dmin, uint8_t *scales, uint8_t *L)
{
    float sc[8], mins[8], w[32], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xj = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++)
            sum_x2 += xj[l] * xj[l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++)
            w[l] = av_x + fabsf(xj[l]);
        sc[j] = fit_scale_min(32, nmax, xj, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep);
        if (sc[j] > max_scale)
            max_scale = sc[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(scales, 0, 12);
    for (int j = 0; j < 8; j++) {
        /* ggml stores the rounded value in a byte before clamping. */
        uint8_t ls = (uint8_t)qb_nearest(inv_scale * sc[j]);
        uint8_t lm = (uint8_t)qb_nearest(inv_min * mins[j]);
        k_pack_scale_min(scales, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
    }
    *d = qb_f2h(max_scale / 63.f);
    *dmin = qb_f2h(max_min / 63.f);
    /* Re-quantize against the scales as stored; a zero scale keeps the
     * fit's values, as ggml does. */
    for (int j = 0; j < 8; j++) {
        uint8_t s, m;
        k_scale_min(j, scales, &s, &m);
        float dj = qb_h2f(*d) * s;
        if (dj == 0)
            continue;
        float dm = qb_h2f(*dmin) * m;
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)clampi(qb_nearest((x[32 * j + l] + dm) / dj), 0, nmax);
    }
}

/* Values 64i + l and 64i + 32 + l share byte qs[32i + l], low and high
 * nibble. */
static void k_pack_nibbles(const uint8_t *L, uint8_t *qs)
{
    for (int i = 0; i < 4; i++)
        for (int l = 0; l < 32; l++)
            qs[32 * i + l] = (uint8_t)((L[64 * i + l] & 0xF) | (L[64 * i + 32 + l] & 0xF) << 4);
}

void qb_quantize_q4_K(const float *x, void *out, int64_t n)
{
    blk_q4_K *y = out;
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        k_quantize_block(x, 15, -1.f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
        k_pack_nibbles(L, y[b].qs);
    }
}

void qb_quantize_q5_K(const float *x, void *out, int64_t n)
{
    blk_q5_K *y = out;
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        k_quantize_block(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
        k_pack_nibbles(L, y[b].qs);
        memset(y[b].qh, 0, sizeof y[b].qh);
        for (int v = 0; v < QK_K; v++)
            y[b].qh[v % 32] |= (uint8_t)((L[v] >> 4) << (v / 32));
    }
}

void qb_quantize_q6_K(const float *x, void *out, int64_t n)
{
    blk_q6_K *y = out;
    uint8_t L[QK_K];
    float sc[QK_K / 16];
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        float max_scale = 0, max_abs = 0;
        for (int g = 0; g < QK_K / 16; g++) {
            sc[g] = fit_scale(16, 32, x + 16 * g, L + 16 * g);
            if (fabsf(sc[g]) > max_abs) {
                max_abs = fabsf(sc[g]);
                max_scale = sc[g];
            }
        }
        memset(&y[b], 0, sizeof y[b]);
        if (max_abs < GROUP_MAX_EPS)
            continue;
        float iscale = -128.f / max_scale;
        y[b].d = qb_f2h(1 / iscale);
        for (int g = 0; g < QK_K / 16; g++) {
            int s = qb_nearest(iscale * sc[g]);
            y[b].scales[g] = (int8_t)(s < 127 ? s : 127);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            float d = qb_h2f(y[b].d) * y[b].scales[g];
            if (d == 0)
                continue;
            for (int l = 0; l < 16; l++)
                L[16 * g + l] = (uint8_t)(32 + clampi(qb_nearest(x[16 * g + l] / d), -32, 31));
        }
        /* Chunk c = 4h + i of 32 values: low nibbles in ql (chunks 0, 1
         * low, 2, 3 high of each half), high bit pairs in qh. */
        for (int v = 0; v < QK_K; v++) {
            int h = v / 128, c = v % 128 / 32, l = v % 32;
            y[b].ql[64 * h + 32 * (c % 2) + l] |= (uint8_t)((L[v] & 0xF) << 4 * (c / 2));
            y[b].qh[32 * h + l] |= (uint8_t)((L[v] >> 4) << 2 * c);
        }
    }
}
