#include "dtype.h"

#include <string.h>

static const struct { const char *name; size_t size; } dtypes[] = {
    { "bool", 1 },     { "int8", 1 },      { "uint8", 1 },    { "int16", 2 },
    { "uint16", 2 },   { "int32", 4 },     { "uint32", 4 },   { "int64", 8 },
    { "uint64", 8 },   { "float16", 2 },   { "bfloat16", 2 }, { "float32", 4 },
    { "float64", 8 },  { "complex64", 8 }, { "complex128", 16 },
    { "float8_e4m3fn", 1 }, { "float8_e4m3fnuz", 1 }, { "float8_e5m2", 1 },
    { "float8_e5m2fnuz", 1 }, { "complex32", 4 },
    { "qint8", 1 },    { "quint8", 1 },    { "qint32", 4 },   { "quint4x2", 1 },
    { "quint2x4", 1 }, { "bits8", 1 },     { "bits16", 2 },
    { "bits1x8", 1 },  { "bits2x4", 1 },   { "bits4x2", 1 },
};

size_t mfs_dtype_size(const char *name)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return dtypes[i].size;
    return 0;
}
