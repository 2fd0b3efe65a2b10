/* One Flax array: the payload of ext 1 (ndarray) or 3 (npscalar), a
 * msgpack array of (shape, dtype name, bytes), and its tensor. */
#include "flax.h"

#include <stdio.h>
#include <string.h>

#include "dtype.h"

typedef unsigned long long ull;

/* The element types numpy and jax (ml_dtypes) give arrays that Flax
 * writes by dtype.name: only those are read as such; others are kept as
 * bytes with a problem. */
static const char *const known[] = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "int4", "uint4",
};

static bool is_known(const char *name)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i], name) == 0)
            return true;
    return false;
}

int flax_array_parse(mfs_span body, flax_array *a, mfs_err *e)
{
    memset(a, 0, sizeof *a);
    const char *why = NULL;
    mfs_mp_item it;
    if (mfs_mp_read(body, 0, &it, &why) != 0)
        return MFS_CORRUPT(e, body.base, "a Flax array: %s", why);
    if (it.kind != MFS_MP_ARRAY || it.len != 3)
        return MFS_CORRUPT(e, body.base, "a Flax array is not a msgpack array of (shape, dtype, "
                                         "bytes)");
    uint64_t pos = it.head;
    if (mfs_mp_read(body, pos, &it, &why) != 0)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array's shape: %s", why);
    if (it.kind != MFS_MP_ARRAY)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array's shape is not a msgpack array");
    if (it.len > FLAX_MAX_DIMS)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array of %llu dimensions (modelfs reads at "
                                               "most %u)", (ull)it.len, FLAX_MAX_DIMS);
    a->ndim = (size_t)it.len;
    pos += it.head;
    uint64_t elems = 1;
    for (size_t d = 0; d < a->ndim; d++) {
        if (mfs_mp_read(body, pos, &it, &why) != 0)
            return MFS_CORRUPT(e, body.base + pos, "a Flax array's shape: %s", why);
        if (it.kind == MFS_MP_INT && it.i >= 0)
            it.u = (uint64_t)it.i;
        else if (it.kind != MFS_MP_UINT)
            return MFS_CORRUPT(e, body.base + pos, "a Flax array's dimension is not a count");
        a->shape[d] = it.u;
        if (!mfs_mul_u64(elems, it.u, &elems))
            return MFS_CORRUPT(e, body.base + pos, "a Flax array's shape has more than 2^64 "
                                                   "elements");
        pos += it.head;
    }
    if (mfs_mp_read(body, pos, &it, &why) != 0)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array's dtype: %s", why);
    /* str as Flax writes it (use_bin_type); bin as old msgpack did. */
    if ((it.kind != MFS_MP_STR && it.kind != MFS_MP_BIN) || it.len == 0 ||
        it.len >= sizeof a->dtype || memchr(it.body.p, '\0', (size_t)it.len) != NULL)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array's dtype is not a dtype name");
    memcpy(a->dtype, it.body.p, (size_t)it.len);
    pos += it.head + it.len;
    if (mfs_mp_read(body, pos, &it, &why) != 0)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array's bytes: %s", why);
    if (it.kind != MFS_MP_BIN && it.kind != MFS_MP_STR)
        return MFS_CORRUPT(e, body.base + pos, "a Flax array's bytes are not a msgpack bin");
    a->offset = it.body.base;
    a->nbytes = it.len;
    pos += it.head + it.len;
    if (pos != body.len)
        return MFS_CORRUPT(e, body.base + pos, "%llu bytes after a Flax array inside its ext",
                           (ull)(body.len - pos));
    a->known = is_known(a->dtype);
    uint64_t want;
    if (a->known && (!mfs_mul_u64(elems, mfs_dtype_size(a->dtype), &want) || want != a->nbytes))
        return MFS_CORRUPT(e, a->offset, "a Flax array of %llu %s elements (its shape) holds %llu "
                                         "bytes", (ull)elems, a->dtype, (ull)a->nbytes);
    return 0;
}

static mfs_val *dims(const uint64_t *shape, size_t n)
{
    mfs_val *v = mfs_arr();
    for (size_t i = 0; i < n; i++)
        mfs_arr_push(v, mfs_u64(shape[i]));
    return v;
}

uint32_t flax_add_tensor(mfs_model *m, const flax_array *a, const char *name, size_t name_len,
                         bool stored, const char *storage, mfs_val *extra)
{
    if (extra == NULL)
        extra = mfs_obj();
    uint64_t blob[1] = { a->nbytes };
    if (!a->known) {
        /* Served as its bytes, and said so. */
        char why[96];
        snprintf(why, sizeof why, "dtype '%s' is not one modelfs reads", a->dtype);
        mfs_obj_set(extra, "problem", mfs_str(why));
        mfs_obj_set(extra, "declared_dtype", mfs_str(a->dtype));
        mfs_obj_set(extra, "declared_shape", dims(a->shape, a->ndim));
    }
    mfs_tensor t = {
        .name = name, .name_len = name_len, .dtype = a->known ? a->dtype : "bytes",
        .shape = a->known ? a->shape : blob, .ndim = a->known ? a->ndim : 1,
        .stored = stored, .nbytes = a->nbytes, .offset = a->offset,
        .storage = storage, .extra = extra,
    };
    return mfs_model_add_tensor(m, m->tensors_dir, &t);
}
