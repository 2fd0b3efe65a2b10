/* The element types a Const layer's data may have, by their IR names.
 * Sub-byte types are packed as stored: i4 and u4 two to a byte, first
 * element in the low nibble (shown as int4/uint4, which have an f32/
 * view); u1 eight to a byte, first element in the high bit, and nf4,
 * f4e2m1, u2, u3, u6, whose bit layouts have no dtype here, are shown as
 * their bytes. */
#include "openvino.h"

#include <string.h>

static const ov_type types[] = {
    { "f64", 64, "float64", false },        { "f32", 32, "float32", false },
    { "f16", 16, "float16", false },        { "bf16", 16, "bfloat16", false },
    { "i64", 64, "int64", false },          { "i32", 32, "int32", false },
    { "i16", 16, "int16", false },          { "i8", 8, "int8", false },
    { "u64", 64, "uint64", false },         { "u32", 32, "uint32", false },
    { "u16", 16, "uint16", false },         { "u8", 8, "uint8", false },
    { "boolean", 8, "bool", false },        { "f8e4m3", 8, "float8_e4m3fn", false },
    { "f8e5m2", 8, "float8_e5m2", false },  { "f8e8m0", 8, "float8_e8m0fnu", false },
    { "i4", 4, "int4", true },              { "u4", 4, "uint4", true },
    { "u1", 1, "bytes", true },             { "u2", 2, "bytes", true },
    { "u3", 3, "bytes", true },             { "u6", 6, "bytes", true },
    { "nf4", 4, "bytes", true },            { "f4e2m1", 4, "bytes", true },
};

const ov_type *ov_type_find(const char *name)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].name, name) == 0)
            return &types[i];
    return NULL;
}
