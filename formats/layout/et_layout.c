#include "et_layout.h"

#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "span.h"

/* executorch_flatbuffer.ScalarType (c10 numbering): the schema's enum names
 * (8-10 and 18-21 are commented out there but keep their numbers) and the
 * numpy-style dtype names of dtype.c. */
static const struct { const char *et, *np; } scalar_types[] = {
    { "BYTE", "uint8" },           { "CHAR", "int8" },
    { "SHORT", "int16" },          { "INT", "int32" },
    { "LONG", "int64" },           { "HALF", "float16" },
    { "FLOAT", "float32" },        { "DOUBLE", "float64" },
    { "COMPLEXHALF", "complex32" }, { "COMPLEXFLOAT", "complex64" },
    { "COMPLEXDOUBLE", "complex128" }, { "BOOL", "bool" },
    { "QINT8", "qint8" },          { "QUINT8", "quint8" },
    { "QINT32", "qint32" },        { "BFLOAT16", "bfloat16" },
    { "QUINT4X2", "quint4x2" },    { "QUINT2X4", "quint2x4" },
    { "BITS1x8", "bits1x8" },      { "BITS2x4", "bits2x4" },
    { "BITS4x2", "bits4x2" },      { "BITS8", "bits8" },
    { "BITS16", "bits16" },        { "FLOAT8E5M2", "float8_e5m2" },
    { "FLOAT8E4M3FN", "float8_e4m3fn" }, { "FLOAT8E5M2FNUZ", "float8_e5m2fnuz" },
    { "FLOAT8E4M3FNUZ", "float8_e4m3fnuz" }, { "UINT16", "uint16" },
    { "UINT32", "uint32" },        { "UINT64", "uint64" },
};
#define SCALAR_TYPE_COUNT (sizeof scalar_types / sizeof scalar_types[0])

const char *mfs_et_scalar_name(int type)
{
    return type >= 0 && (size_t)type < SCALAR_TYPE_COUNT ? scalar_types[type].et : NULL;
}

const char *mfs_et_scalar_dtype(int type)
{
    return type >= 0 && (size_t)type < SCALAR_TYPE_COUNT ? scalar_types[type].np : NULL;
}

void mfs_et_check(int scalar_type, const mfs_fbv *sizes, const mfs_fbv *dim_order, mfs_et_view *v)
{
    const char *dt = mfs_et_scalar_dtype(scalar_type);
    v->dtype = NULL;
    if (dt == NULL) {
        snprintf(v->problem, sizeof v->problem, "unknown scalar type %d", scalar_type);
        return;
    }
    if (sizes->count > MFS_ET_MAX_DIMS) {
        snprintf(v->problem, sizeof v->problem, "%u dimensions (modelfs reads at most %d)",
                 sizes->count, MFS_ET_MAX_DIMS);
        return;
    }
    uint64_t n = 1;
    for (uint32_t i = 0; i < sizes->count; i++) {
        int32_t d = 0;
        mfs_fbv_i32(sizes, i, &d);
        if (d < 0) {
            snprintf(v->problem, sizeof v->problem, "size %d of dimension %u is negative", d, i);
            return;
        }
        v->shape[i] = (uint64_t)d;
        if (!mfs_mul_u64(n, (uint64_t)d, &n)) {
            snprintf(v->problem, sizeof v->problem, "the element count overflows");
            return;
        }
    }
    if (!mfs_mul_u64(n, mfs_dtype_size(dt), &v->nbytes)) {
        snprintf(v->problem, sizeof v->problem, "the byte size overflows");
        return;
    }
    if (dim_order->count != sizes->count) {
        snprintf(v->problem, sizeof v->problem, "dim_order has %u entries for %u dimensions",
                 dim_order->count, sizes->count);
        return;
    }
    uint64_t seen = 0;          /* at most 64 dimensions */
    for (uint32_t i = 0; i < dim_order->count; i++) {
        uint8_t d = 0;
        mfs_fbv_u8(dim_order, i, &d);
        if (d >= dim_order->count || (seen >> d & 1)) {
            snprintf(v->problem, sizeof v->problem, "dim_order is not a permutation of 0..%u",
                     dim_order->count - 1);
            return;
        }
        seen |= 1ull << d;
    }
    v->dtype = dt;
    v->ndim = sizes->count;
}

bool mfs_et_dim_order_identity(const mfs_fbv *dim_order)
{
    for (uint32_t i = 0; i < dim_order->count; i++) {
        uint8_t d = 0;
        mfs_fbv_u8(dim_order, i, &d);
        if (d != i)
            return false;
    }
    return true;
}
