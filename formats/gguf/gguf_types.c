/* ggml's tensor types (ggml.h enum ggml_type; block sizes from ggml.c's
 * type_traits and ggml-common.h's block structs, which gguf-py's
 * GGML_QUANT_SIZES repeats): id -> name, elements per block, bytes per
 * block. Plain types map to numpy's names; block types keep
 * their stored blocks and are named by the ggml name in lower case. */
#include <stddef.h>

#include "gguf.h"

#define QK_K 256u

static const gguf_type types[] = {
    [0] = { "F32", "float32", 1, 4 },
    [1] = { "F16", "float16", 1, 2 },
    [2] = { "Q4_0", "q4_0", 32, 2 + 16 },
    [3] = { "Q4_1", "q4_1", 32, 2 + 2 + 16 },
    [6] = { "Q5_0", "q5_0", 32, 2 + 4 + 16 },
    [7] = { "Q5_1", "q5_1", 32, 2 + 2 + 4 + 16 },
    [8] = { "Q8_0", "q8_0", 32, 2 + 32 },
    [9] = { "Q8_1", "q8_1", 32, 2 + 2 + 32 },   /* older gguf-py tables said 4 + 4 + 32 */
    [10] = { "Q2_K", "q2_k", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4 },
    [11] = { "Q3_K", "q3_k", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12 },
    [12] = { "Q4_K", "q4_k", QK_K, 2 + 2 + QK_K / 2 + 12 },
    [13] = { "Q5_K", "q5_k", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12 },
    [14] = { "Q6_K", "q6_k", QK_K, 2 + QK_K / 16 + 3 * QK_K / 4 },
    [15] = { "Q8_K", "q8_k", QK_K, 4 + QK_K + QK_K / 8 },
    [16] = { "IQ2_XXS", "iq2_xxs", QK_K, 2 + QK_K / 4 },
    [17] = { "IQ2_XS", "iq2_xs", QK_K, 2 + QK_K / 4 + QK_K / 32 },
    [18] = { "IQ3_XXS", "iq3_xxs", QK_K, 2 + QK_K / 4 + QK_K / 8 },
    [19] = { "IQ1_S", "iq1_s", QK_K, 2 + QK_K / 8 + QK_K / 16 },
    [20] = { "IQ4_NL", "iq4_nl", 32, 2 + 16 },
    [21] = { "IQ3_S", "iq3_s", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4 },
    [22] = { "IQ2_S", "iq2_s", QK_K, 2 + QK_K / 4 + QK_K / 16 },
    [23] = { "IQ4_XS", "iq4_xs", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64 },
    [24] = { "I8", "int8", 1, 1 },
    [25] = { "I16", "int16", 1, 2 },
    [26] = { "I32", "int32", 1, 4 },
    [27] = { "I64", "int64", 1, 8 },
    [28] = { "F64", "float64", 1, 8 },
    [29] = { "IQ1_M", "iq1_m", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32 },
    [30] = { "BF16", "bfloat16", 1, 2 },
    [34] = { "TQ1_0", "tq1_0", QK_K, 2 + 4 * 13 },
    [35] = { "TQ2_0", "tq2_0", QK_K, 2 + QK_K / 4 },
    [39] = { "MXFP4", "mxfp4", 32, 1 + 16 },
    [40] = { "NVFP4", "nvfp4", 64, 4 + 32 },
    [41] = { "Q1_0", "q1_0", 128, 2 + 16 },
};

/* Ids ggml once used and dropped: files with them cannot be read any more. */
static const struct { uint32_t id; const char *name; } removed_types[] = {
    { 4, "Q4_2" },        { 5, "Q4_3" },        { 31, "Q4_0_4_4" },   { 32, "Q4_0_4_8" },
    { 33, "Q4_0_8_8" },   { 36, "IQ4_NL_4_4" }, { 37, "IQ4_NL_4_8" }, { 38, "IQ4_NL_8_8" },
};

const gguf_type *gguf_type_get(uint32_t id, const char **removed)
{
    *removed = NULL;
    if (id < sizeof types / sizeof types[0] && types[id].name != NULL)
        return &types[id];
    for (size_t i = 0; i < sizeof removed_types / sizeof removed_types[0]; i++)
        if (removed_types[i].id == id)
            *removed = removed_types[i].name;
    return NULL;
}
