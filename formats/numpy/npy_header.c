#include "npy_header.h"

#include <stdio.h>
#include <string.h>

#include "npy_literal.h"

typedef unsigned long long ull;

int npy_header_len(mfs_span s, uint64_t *len, mfs_err *e)
{
    if (!mfs_span_has(s, 0, 8) || memcmp(s.p, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return MFS_CORRUPT(e, s.base, "not an .npy array (no \\x93NUMPY magic and version)");
    uint8_t major = s.p[6], minor = s.p[7];
    if (major < 1 || major > 3 || minor != 0)
        return MFS_CORRUPT(e, s.base + 6, "unsupported .npy version %u.%u (modelfs reads 1.0, 2.0 "
                                          "and 3.0)", major, minor);
    uint64_t dict;
    if (major == 1) {
        uint16_t n;
        if (!mfs_rd_u16(s, 8, &n))
            return MFS_CORRUPT(e, s.base + 8, "the .npy header length is cut off");
        dict = n;
        *len = 10 + dict;
    } else {
        uint32_t n;
        if (!mfs_rd_u32(s, 8, &n))
            return MFS_CORRUPT(e, s.base + 8, "the .npy header length is cut off");
        dict = n;
        *len = 12 + dict;
    }
    if (dict > NPY_HEADER_MAX)
        return MFS_CORRUPT(e, s.base + 8, "the .npy header is %llu bytes (modelfs reads at most %u)",
                           (ull)dict, NPY_HEADER_MAX);
    return 0;
}

mfs_budget npy_budget(uint64_t size)
{
    uint64_t left = size > (4ull << 30) / 64 ? (4ull << 30) : (64ull << 20) + 64 * size;
    mfs_budget b = { left > (4ull << 30) ? (4ull << 30) : left, false };
    return b;
}

int npy_header_parse(mfs_span s, uint64_t total, const char *where, mfs_budget *budget,
                     npy_header *h, mfs_err *e)
{
    memset(h, 0, sizeof *h);
    uint64_t len;
    if (npy_header_len(s, &len, e) != 0)
        return -1;
    if (len > total || !mfs_span_has(s, 0, len))
        return MFS_CORRUPT(e, s.base + 8, "%sthe .npy header (%llu bytes) runs past the end (%llu bytes)",
                           where, (ull)len, (ull)total);
    h->major = s.p[6];
    h->minor = s.p[7];
    h->data_offset = len;
    uint64_t pre = h->major == 1 ? 10 : 12;
    const char *text = (const char *)s.p + pre;
    size_t tlen = (size_t)(len - pre), err_at = 0;
    char msg[160];
    size_t values = 0;
    mfs_val *d = npy_literal_parse(text, tlen, h->major < 3, &values, &err_at, msg, sizeof msg);
    if (d == NULL)
        return MFS_CORRUPT(e, s.base + pre + err_at, "%sthe .npy header is not a dict literal: %s",
                           where, msg);
    /* The descr is kept twice in the table (descr, declared_dtype) and
     * written into model.json and model.toml. */
    if (!mfs_budget_take(budget, 4 * ((uint64_t)values * MFS_VAL_COST + tlen))) {
        mfs_val_free(d);
        return MFS_CORRUPT(e, s.base + pre, "%sthe .npy headers need more memory than modelfs allows "
                                            "for a file of this size", where);
    }
    const mfs_val *descr = mfs_obj_get(d, "descr"), *fo = mfs_obj_get(d, "fortran_order"),
                  *shape = mfs_obj_get(d, "shape");
    int r = 0;
    if (d->type != MFS_V_OBJ || d->u.obj.n != 3 || descr == NULL || fo == NULL || shape == NULL)
        r = MFS_CORRUPT(e, s.base + pre, "%sthe .npy header must be a dict of exactly 'descr', "
                                         "'fortran_order' and 'shape'", where);
    else if (fo->type != MFS_V_BOOL)
        r = MFS_CORRUPT(e, s.base + pre, "%s'fortran_order' is not True or False", where);
    else if (descr->type != MFS_V_STR && descr->type != MFS_V_ARR)
        r = MFS_CORRUPT(e, s.base + pre, "%s'descr' is neither a dtype string nor a list of fields",
                        where);
    else if (!mfs_val_uint_list(shape, h->shape, NPY_MAX_DIMS, &h->ndim))
        r = MFS_CORRUPT(e, s.base + pre, "%s'shape' is not a tuple of at most %d non-negative integers",
                        where, NPY_MAX_DIMS);
    if (r != 0) {
        mfs_val_free(d);
        return -1;
    }
    h->fortran = fo->u.b;
    h->descr = mfs_val_clone(descr);
    mfs_val_free(d);
    uint64_t numel = 1, avail = total - len;
    npy_dtype_read(h->descr, &h->dt);
    bool raw = h->dt.problem[0] != '\0';
    h->dtype = raw ? NULL : h->dt.name;
    h->big_endian = h->dt.big_endian;
    for (size_t i = 0; i < h->ndim; i++)
        if (!mfs_mul_u64(numel, h->shape[i], &numel))
            return MFS_CORRUPT(e, s.base + pre, "%sthe element count of shape overflows", where);
    uint64_t want;
    if (!raw && !mfs_mul_u64(numel, h->dt.itemsize, &want))
        return MFS_CORRUPT(e, s.base + pre, "%sthe array's byte size overflows", where);
    if (raw) {
        h->nbytes = avail;  /* what follows the header, as it is */
        return 0;
    }
    if (want > avail)
        return MFS_CORRUPT(e, s.base + len, "%sthe header describes %llu bytes of array, %llu follow "
                                            "it (truncated?)", where, (ull)want, (ull)avail);
    h->nbytes = want;
    return 0;
}

void npy_header_free(npy_header *h)
{
    mfs_val_free(h->descr);
    h->descr = NULL;
    npy_dtype_free(&h->dt);
}

static mfs_val *uint_list(const uint64_t *v, size_t n, bool reverse)
{
    mfs_val *a = mfs_arr();
    for (size_t i = 0; i < n; i++)
        mfs_arr_push(a, mfs_u64(v[reverse ? n - 1 - i : i]));
    return a;
}

uint32_t npy_add_tensor(mfs_model *m, const npy_header *h, const char *name, size_t len,
                        bool stored, uint64_t offset, const char *storage, mfs_val *more)
{
    mfs_val *x = mfs_obj();
    mfs_obj_set(x, "descr", mfs_val_clone(h->descr));
    mfs_obj_set(x, "fortran_order", mfs_bool(h->fortran));
    mfs_obj_set(x, "data_offset", mfs_u64(h->data_offset));
    mfs_val *v = mfs_obj_set(x, "npy_version", mfs_arr());
    mfs_arr_push(v, mfs_int(h->major));
    mfs_arr_push(v, mfs_int(h->minor));
    bool raw = h->dtype == NULL;
    if (!raw && h->big_endian)
        mfs_obj_set(x, "byte_order", mfs_str("big"));
    if (!raw && h->fortran && h->ndim > 1) {
        /* Fortran order is C order of the reversed shape (stored_shape,
         * dim_order); the .npy twin says fortran_order as the file does. */
        mfs_obj_set(x, "memory_order", mfs_str("fortran"));
        mfs_obj_set(x, "stored_shape", uint_list(h->shape, h->ndim, true));
        uint64_t order[NPY_MAX_DIMS];
        for (size_t i = 0; i < h->ndim; i++)
            order[i] = i;
        mfs_obj_set(x, "dim_order", uint_list(order, h->ndim, true));
    }
    if (raw) {
        mfs_obj_set(x, "problem", mfs_str(h->dt.problem));
        mfs_obj_set(x, "declared_dtype", mfs_val_clone(h->descr));
        mfs_obj_set(x, "declared_shape", uint_list(h->shape, h->ndim, false));
    }
    for (size_t i = 0; more && i < more->u.obj.n; i++) {
        mfs_obj_setn(x, more->u.obj.keys[i], more->u.obj.klens[i], more->u.obj.vals[i]);
        more->u.obj.vals[i] = NULL;
    }
    mfs_val_free(more);
    uint64_t blob[1] = { h->nbytes };
    mfs_tensor t = {
        .name = name, .name_len = len, .dtype = raw ? "bytes" : h->dtype,
        .shape = raw ? blob : h->shape, .ndim = raw ? 1 : h->ndim,
        .stored = stored, .nbytes = h->nbytes, .offset = offset,
        .storage = storage, .extra = x,
        .npy_descr = raw ? NULL : h->dt.literal, .npy_itemsize = h->dt.itemsize,
    };
    return mfs_model_add_tensor(m, m->tensors_dir, &t);
}
