/* kvbits.h: the KV cache precisions (bits per value) a node runs, the
 * one list of them. The cache (engine/compute), the protocol's and the
 * ring's validators and the console's editors all check against it, and
 * engine/sys is the part every one of them may include. */
#ifndef KVBITS_H
#define KVBITS_H

#include <stddef.h>

/* Most bits first: the order the console steps through them. */
#define KV_BITS_N 4
extern const int kv_bits_all[KV_BITS_N];

/* 1 if bits is one of kv_bits_all. */
int kv_bits_valid(long long bits);

/* The choices for a message, joined by sep and by last before the final
 * one: (", ", " or ") gives "32, 16, 8 or 4". Returns buf, which
 * KV_BITS_CHOICES_MAX bytes hold for separators of up to 4 characters. */
#define KV_BITS_CHOICES_MAX 32
const char *kv_bits_choices(char *buf, size_t len, const char *sep, const char *last);

#endif
