/* wtype.c: the table behind wtype.h. */
#include "wtype.h"

#include <stddef.h>

/* ggml's names by id, for error messages about types we do not run. */
static const char *const names[] = {
    [0] = "F32",     [1] = "F16",      [2] = "Q4_0",   [3] = "Q4_1",    [6] = "Q5_0",
    [7] = "Q5_1",    [8] = "Q8_0",     [9] = "Q8_1",   [10] = "Q2_K",   [11] = "Q3_K",
    [12] = "Q4_K",   [13] = "Q5_K",    [14] = "Q6_K",  [15] = "Q8_K",   [16] = "IQ2_XXS",
    [17] = "IQ2_XS", [18] = "IQ3_XXS", [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S",
    [22] = "IQ2_S",  [23] = "IQ4_XS",  [24] = "I8",    [25] = "I16",    [26] = "I32",
    [27] = "I64",    [28] = "F64",     [29] = "IQ1_M", [30] = "BF16",   [34] = "TQ1_0",
    [35] = "TQ2_0",
};

/* Block sizes and bytes: K-quants pack 256 values in super-blocks of 8 or
 * 16 sub-blocks with their own scales (ggml-common.h). */
static const wtype_info infos[] = {
    [WT_F32] = {"F32", 1, 4},
    [WT_F16] = {"F16", 1, 2},
    [WT_Q4_0] = {"Q4_0", 32, 2 + 16},
    [WT_Q8_0] = {"Q8_0", 32, 2 + 32},
    [WT_Q4_K] = {"Q4_K", 256, 2 + 2 + 12 + 128},
    [WT_Q5_K] = {"Q5_K", 256, 2 + 2 + 12 + 32 + 128},
    [WT_Q6_K] = {"Q6_K", 256, 128 + 64 + 16 + 2},
    [WT_BF16] = {"BF16", 1, 2},
};

const wtype_info *wtype_get(uint32_t id)
{
    if (id >= sizeof infos / sizeof infos[0] || infos[id].name == NULL)
        return NULL;
    return &infos[id];
}

const char *wtype_name(uint32_t id)
{
    if (id >= sizeof names / sizeof names[0] || names[id] == NULL)
        return "unknown";
    return names[id];
}

size_t wtype_row_bytes(uint32_t id, uint64_t n)
{
    const wtype_info *t = wtype_get(id);
    if (t == NULL || n % (uint64_t)t->block != 0)
        return 0;
    return (size_t)(n / (uint64_t)t->block) * (size_t)t->block_bytes;
}
