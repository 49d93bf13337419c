/* quant.h: conversions between fp32 and the KV cache's storage formats.
 *
 * fp16 is IEEE binary16 (_Float16). The affine formats code a group of
 * values as x ~= q * scale + bias with q in [0, 2^bits - 1], scale and bias
 * in fp16; 8-bit codes take a byte each, 4-bit codes two per byte, low
 * nibble first.
 */
#ifndef QUANT_H
#define QUANT_H

#include <stdint.h>

/* Largest group quant_group_encode takes. */
#define QUANT_GROUP_MAX 32

void quant_f32_to_f16(_Float16 *restrict dst, const float *restrict src, int n);
void quant_f16_to_f32(float *restrict dst, const _Float16 *restrict src, int n);

/* Codes (one per byte, unpacked), scale and bias of a group of n <=
 * QUANT_GROUP_MAX values (a multiple of 8), from the group's min and max.
 * bits is 8 or 4. */
void quant_group_encode(const float *x, int n, int bits, uint8_t *codes, _Float16 *scale,
                        _Float16 *bias);

/* dst[i] = code(i) * scale + bias for i < n, codes packed at `bits`.
 * n is a multiple of 8. */
void quant_decode_row(float *restrict dst, const uint8_t *restrict packed, int bits, float scale,
                      float bias, int n);

/* dst[i] = code(i) * scale[i] + bias[i] for i < n: one scale and bias per
 * element. n is a multiple of 8. */
void quant_decode_cols(float *restrict dst, const uint8_t *restrict packed, int bits,
                       const float *restrict scale, const float *restrict bias, int n);

#endif
