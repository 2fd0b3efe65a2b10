#include "dtype.h"

#include <string.h>

/* npy: the descr np.load gives. numpy has no bfloat16, float8, complex32,
 * quantized or bits types: those are unsigned integers of the same width
 * (qint8 and qint32 the signed ones, as their bytes are), so the bytes
 * load untouched and the table's dtype says how to read them. */
static const struct { const char *name; size_t size; const char *npy; } dtypes[] = {
    { "bool", 1, "|b1" },       { "int8", 1, "|i1" },       { "uint8", 1, "|u1" },
    { "int16", 2, "<i2" },      { "uint16", 2, "<u2" },     { "int32", 4, "<i4" },
    { "uint32", 4, "<u4" },     { "int64", 8, "<i8" },      { "uint64", 8, "<u8" },
    { "float16", 2, "<f2" },    { "bfloat16", 2, "<u2" },   { "float32", 4, "<f4" },
    { "float64", 8, "<f8" },    { "complex64", 8, "<c8" },  { "complex128", 16, "<c16" },
    /* numpy's long double and its complex (12 and 24 bytes on 32-bit x86). */
    { "float128", 16, "<f16" }, { "complex256", 32, "<c32" },
    { "float96", 12, "<f12" },  { "complex192", 24, "<c24" },
    { "float8_e4m3fn", 1, "|u1" }, { "float8_e4m3fnuz", 1, "|u1" }, { "float8_e5m2", 1, "|u1" },
    { "float8_e5m2fnuz", 1, "|u1" }, { "complex32", 4, "<u4" },
    { "qint8", 1, "|i1" },      { "quint8", 1, "|u1" },     { "qint32", 4, "<i4" },
    { "quint4x2", 1, "|u1" },   { "quint2x4", 1, "|u1" },   { "bits8", 1, "|u1" },
    { "bits16", 2, "<u2" },     { "bits1x8", 1, "|u1" },    { "bits2x4", 1, "|u1" },
    { "bits4x2", 1, "|u1" },
    { "float8_e8m0fnu", 1, "|u1" }, { "float4_e2m1fn_x2", 1, "|u1" },
    /* torch's sub-byte integers: a byte per element in a storage. */
    { "int1", 1, "|i1" },  { "int2", 1, "|i1" },  { "int3", 1, "|i1" },  { "int4", 1, "|i1" },
    { "int5", 1, "|i1" },  { "int6", 1, "|i1" },  { "int7", 1, "|i1" },
    { "uint1", 1, "|u1" }, { "uint2", 1, "|u1" }, { "uint3", 1, "|u1" }, { "uint4", 1, "|u1" },
    { "uint5", 1, "|u1" }, { "uint6", 1, "|u1" }, { "uint7", 1, "|u1" },
    /* Packed sub-byte floats (safetensors F4, F6_*): the row is per stored
     * byte, for the twin of their bytes (the driver gives stored_shape
     * [nbytes]); the element size is the driver's to know. */
    { "float4_e2m1fn", 1, "|u1" }, { "float6_e2m3fn", 1, "|u1" }, { "float6_e3m2fn", 1, "|u1" },
    /* GGUF block types: size 1 as the twin is their bytes, |u1 in the
     * shape the driver gives as stored_shape (rows x bytes per row). */
    { "q4_0", 1, "|u1" },    { "q4_1", 1, "|u1" },    { "q5_0", 1, "|u1" },    { "q5_1", 1, "|u1" },
    { "q8_0", 1, "|u1" },    { "q8_1", 1, "|u1" },    { "q2_k", 1, "|u1" },    { "q3_k", 1, "|u1" },
    { "q4_k", 1, "|u1" },    { "q5_k", 1, "|u1" },    { "q6_k", 1, "|u1" },    { "q8_k", 1, "|u1" },
    { "iq2_xxs", 1, "|u1" }, { "iq2_xs", 1, "|u1" },  { "iq3_xxs", 1, "|u1" }, { "iq1_s", 1, "|u1" },
    { "iq4_nl", 1, "|u1" },  { "iq3_s", 1, "|u1" },   { "iq2_s", 1, "|u1" },   { "iq4_xs", 1, "|u1" },
    { "iq1_m", 1, "|u1" },   { "tq1_0", 1, "|u1" },   { "tq2_0", 1, "|u1" },   { "mxfp4", 1, "|u1" },
    { "nvfp4", 1, "|u1" },   { "q1_0", 1, "|u1" },
};

size_t mfs_dtype_size(const char *name)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return dtypes[i].size;
    return 0;
}

const char *mfs_dtype_npy(const char *name)
{
    if (strcmp(name, "bytes") == 0)
        return "|u1";
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return dtypes[i].npy;
    return NULL;
}

/* numpy's own name for a descr, to tell when it differs from the dtype. */
const char *mfs_npy_name(const char *descr)
{
    static const struct { const char *descr, *name; } names[] = {
        { "|b1", "bool" },   { "|i1", "int8" },   { "|u1", "uint8" },  { "<i2", "int16" },
        { "<u2", "uint16" }, { "<i4", "int32" },  { "<u4", "uint32" }, { "<i8", "int64" },
        { "<u8", "uint64" }, { "<f2", "float16" }, { "<f4", "float32" }, { "<f8", "float64" },
        { "<c8", "complex64" }, { "<c16", "complex128" }, { "<f16", "float128" },
        { "<c32", "complex256" }, { "<f12", "float96" }, { "<c24", "complex192" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].descr, descr) == 0)
            return names[i].name;
    return descr;
}
