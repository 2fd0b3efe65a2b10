/* A NumPy .npy file: one array (npy_header.h), served from the file as
 * stored: big-endian bytes stay big-endian (table key byte_order: "big";
 * the .npy twin says '>'), Fortran-ordered bytes stay in Fortran order
 * (stored_shape and dim_order; the twin says fortran_order, so np.load
 * of it equals np.load of the file). Its tensor is named after the
 * file, without ".npy". Both .npy and .npz are format "numpy". */
#include <stdbool.h>
#include <string.h>

#include "npy_header.h"
#include "format.h"

/* npz.c's: the zip container, which reads its own ranges. */
int mfs_npz_probe(mfs_src *src);
int mfs_npz_load(mfs_model *m, mfs_src *src, mfs_err *e);

static bool has_magic(mfs_span f)
{
    return mfs_span_has(f, 0, NPY_MAGIC_LEN) && memcmp(f.p, NPY_MAGIC, NPY_MAGIC_LEN) == 0;
}

/* One driver for both containers: the registry asks one probe, which bids
 * on either. The 6-byte magic; an unknown version is still ours, to be
 * refused as such. */
static int probe(mfs_src *src)
{
    mfs_span f;
    if (mfs_src_get_head(src, NPY_MAGIC_LEN, &f, NULL) != 0)
        return 0;
    bool npy = has_magic(f);
    mfs_src_release(src, f);
    return npy ? 48 : mfs_npz_probe(src);
}

/* Two gets: the prelude, which says how long the header is, then the
 * header; the array after it is a stored range, read when served. */
static int load(mfs_model *m, mfs_src *src, mfs_err *e)
{
    mfs_span f;
    if (mfs_src_get_head(src, NPY_PRELUDE_MAX, &f, e) != 0)
        return -1;
    if (!has_magic(f)) {
        mfs_src_release(src, f);
        return mfs_npz_load(m, src, e);
    }
    uint64_t len;
    int r = npy_header_len(f, &len, e);
    mfs_src_release(src, f);
    /* No more than the file holds: npy_header_parse says a header that
     * runs past the end does. */
    if (r != 0 || mfs_src_get_head(src, len, &f, e) != 0)
        return -1;
    npy_header h;
    mfs_budget budget = npy_budget(src->size);
    r = npy_header_parse(f, src->size, "", &budget, &h, e);
    mfs_src_release(src, f);
    if (r == 0) {
        mfs_model_set_format(m, "numpy", h.major);
        mfs_obj_set(m->metadata, "container", mfs_str("npy"));
        size_t nlen = strlen(m->file_name);
        if (nlen > 4 && memcmp(m->file_name + nlen - 4, ".npy", 4) == 0)
            nlen -= 4;
        npy_add_tensor(m, &h, m->file_name, nlen, true, h.data_offset, NULL, NULL);
    }
    npy_header_free(&h);
    return r;
}

const mfs_format mfs_format_numpy = {
    .name = "numpy",
    .probe = probe,
    .load = load,
};
