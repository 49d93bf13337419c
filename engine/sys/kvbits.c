/* kvbits.c: the KV cache precisions (see kvbits.h). */
#include "kvbits.h"

#include <stdio.h>

const int kv_bits_all[KV_BITS_N] = {32, 16, 8, 4};

int kv_bits_valid(long long bits)
{
    for (int i = 0; i < KV_BITS_N; i++)
        if (kv_bits_all[i] == bits)
            return 1;
    return 0;
}

const char *kv_bits_choices(char *buf, size_t len, const char *sep, const char *last)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < KV_BITS_N && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d",
                                 i == 0               ? ""
                                 : i == KV_BITS_N - 1 ? last
                                                      : sep,
                                 kv_bits_all[i]);
    return buf;
}
