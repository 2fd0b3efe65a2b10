#include "st_dtype.h"

#include <string.h>

/* numpy names where numpy (or ml_dtypes, for the float8/6/4 types numpy
 * lacks) has one. */
static const mfs_st_dtype dtypes[] = {
    { "BOOL", "bool", 8, true },          { "U8", "uint8", 8, true },
    { "I8", "int8", 8, true },            { "U16", "uint16", 16, true },
    { "I16", "int16", 16, true },         { "U32", "uint32", 32, true },
    { "I32", "int32", 32, true },         { "U64", "uint64", 64, true },
    { "I64", "int64", 64, true },         { "F16", "float16", 16, true },
    { "BF16", "bfloat16", 16, true },     { "F32", "float32", 32, true },
    { "F64", "float64", 64, true },       { "C64", "complex64", 64, true },
    { "F8_E4M3", "float8_e4m3fn", 8, true },       { "F8_E5M2", "float8_e5m2", 8, true },
    { "F8_E8M0", "float8_e8m0fnu", 8, true },      { "F4", "float4_e2m1fn", 4, true },
    { "F6_E2M3", "float6_e2m3fn", 6, true },       { "F6_E3M2", "float6_e3m2fn", 6, true },
    /* Read, not written: not in the current spec's Dtype. */
    { "F8_E4M3FNUZ", "float8_e4m3fnuz", 8, false }, { "F8_E5M2FNUZ", "float8_e5m2fnuz", 8, false },
};

const mfs_st_dtype *mfs_st_dtype_of_st(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strlen(dtypes[i].st) == n && memcmp(dtypes[i].st, s, n) == 0)
            return &dtypes[i];
    return NULL;
}

const mfs_st_dtype *mfs_st_dtype_to_write(const char *np)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].writable && strcmp(dtypes[i].np, np) == 0)
            return &dtypes[i];
    return NULL;
}
